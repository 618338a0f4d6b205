/* enter.c -- a probe's way in when it is not the usual one: the
 * thread's first event, which takes a slot (domain.c), and a forked
 * child's first event, which makes the child's file (fork.c) and so may
 * start tracing.  Above the control layer for that reason; the probe
 * side of the protocol itself is stw.h's.
 */
#include "writer.h"

struct er_domain *er_enter_first(void) {
  /* A forked child's file is made first; the probe then comes back
   * here. */
  if (ER_UNLIKELY(er_iload_rlx(&eventring__on) == ER_ON_PENDING))
    return er_enter_pending();
  struct er_domain *d = er_attach_from_probe();
  if (!d) return NULL;
  return er_enter_domain(d, ER_IF_ON);
}

struct er_domain *er_enter_pending(void) {
  if (!er_lock_from_probe()) {
    er_fork_drop_unfiled();
    return NULL;
  }
  er_fork_file_locked();
  er_unlock_from_probe();
  /* The file is made (the flag open, or 0 when paused), or could not be
   * (0 for good): the probe starts again and never comes back here. */
  return er_iload_rlx(&eventring__on) == ER_ON_PENDING ? NULL
                                                      : er_enter(ER_IF_ON);
}
