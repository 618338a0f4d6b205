/* fork.c -- what becomes of tracing across fork().
 *
 * The parent goes on as before.  The child must not write into its
 * parent's rings (they are shared mappings) nor remove its parent's file:
 * it drops the mapping and, if tracing was on, starts a file of its own,
 * with a fork_child event naming its parent.  The handlers are installed
 * once, at program start (init.c).  er_st.lock is held across the fork,
 * so the child inherits a consistent state and a lock it can release.
 */
#include <unistd.h>

#include "writer.h"

pid_t eventring_fork(void) {
  pid_t pid = fork();
  if (pid > 0) eventring_lifecycle(EVENTRING_LIFECYCLE_FORK_PARENT, pid);
  return pid;
}

static void fork_prepare(void) { er_lock(); }

static void fork_parent(void) { er_unlock(); }

/* Only async-signal-safe calls are made on this path when tracing was
 * off. */
static void fork_child(void) {
  /* The lock taken in fork_prepare() is held by this thread, the only one
   * of the child; it is released once the child's state is its own. */
  er_domains_after_fork();
  er_stw_after_fork();
  er_clock_after_fork();
  er_remote_after_fork();
  if (!er_iload_rlx(&er_st.live)) {
    er_unlock();
    return;
  }
  uint64_t parent = (uint64_t)er_st.pid;
  er_stw_close_forked();
  /* The file stays, and stays the parent's. */
  er_file_drop(ER_FILE_UNMAP);
  int r = er_start_locked();
  if (r == 0)
    er_emit_lifecycle(EVENTRING_LIFECYCLE_FORK_CHILD, parent);
  else
    er_warn("cannot trace forked child %ld: %s: %s", (long)getpid(),
            er_st.path, eventring_strerror(r));
  er_unlock();
}

void er_fork_install(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}
