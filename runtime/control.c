/* control.c -- starting, pausing, resuming and stopping tracing.
 *
 * Every control operation holds er_st.lock, so they are serialised with
 * each other, with slot changes and with fork (fork.c takes it in its
 * prepare handler).  Probes never take it except on a thread's first
 * event.  Opening and closing the world -- when a file may be written
 * into and when it may go -- is stw.c's; what is decided here is the
 * order of the lifecycle events: ring_start first in the starter's ring,
 * ring_pause last before a gap and ring_resume first after it, ring_stop
 * last.
 */
#include <stdlib.h>

#include "writer.h"

/* The flag the inlined probes test (eventring.h).  Stored only under the
 * lock; loaded by probes with no ordering, because it only decides whether
 * to go and look (stw.h). */
int eventring__on;

int er_start_locked(void) {
  if (er_iload_rlx(&er_st.live)) return 0;
  struct er_params params;
  er_params_read(&params);
  er_stw_init();
  er_clock_init();
  int r = er_file_create(params.log2, params.max_domains);
  if (r) return r;
  er_st.preserve = params.preserve;

  er_users_write_names();
  /* Threads that kept their slot from an earlier file get a ring in this
   * one, before the world opens. */
  for (unsigned i = 0; i < er_st.slots_hw; i++) {
    struct er_domain *d = &er_domains[i];
    if (d->threads && !d->retired) er_domain_bind_file(d);
  }
  er_stw_open();
  /* The starter's ring begins with ring_start, as OCaml's domain 0 does,
   * even when the thread took its slot before. */
  struct er_domain *d = er_attach_locked();
  if (d) d->spawn_pending = 0;
  er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_START, (uint64_t)er_st.pid);
  /* Started armed but paused (OCAML_RUNTIME_EVENTS_START=paused, or a
   * forked child of a paused parent): say so in the ring. */
  if (er_st.paused)
    er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_PAUSE, 0);
  else
    er_istore_rel(&eventring__on, 1);
  er_store_rel(&er_st.ext[ER_EXT_PAUSED], er_st.paused);
  return 0;
}

/* Starts tracing and the thread that serves control from outside.  Not
 * for a forked child's handler: no thread may be created there (only
 * async-signal-safe calls are allowed), so a traced child has its own
 * file but no remote control until it starts tracing anew. */
static int start_with_watcher_locked(void) {
  int was_live = er_iload_rlx(&er_st.live);
  int r = er_start_locked();
  if (r == 0 && !was_live) er_remote_start(er_st.ext);
  return r;
}

int er_stop_locked(void) {
  if (!er_iload_rlx(&er_st.live)) return EVENTRING_E_NOTSTARTED;
  er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_STOP, 0);
  unsigned drop = er_st.preserve ? 0 : ER_FILE_UNLINK;
  enum er_world world = er_stw_close();
  if (world == ER_WORLD_STOPPED)
    drop |= ER_FILE_UNMAP;
  else if (world == ER_WORLD_STUCK)
    er_warn("a thread stayed inside a probe; leaving %s mapped", er_st.path);
  else
    er_warn("membarrier(2) failed: a probe may still be inside; leaving %s "
            "mapped", er_st.path);
  er_file_drop(drop);
  er_st.paused = 0;
  return 0;
}

int eventring_start(void) {
#ifdef EVENTRING_DISABLED
  return EVENTRING_E_DISABLED;
#else
  er_lock();
  int r = start_with_watcher_locked();
  er_unlock();
  return r;
#endif
}

int eventring_stop(void) {
  er_remote_stop();
  er_lock();
  int r = er_stop_locked();
  er_unlock();
  return r;
}

void eventring_pause(void) {
  er_lock();
  if (er_iload_rlx(&er_st.live) && !er_st.paused) {
    er_st.paused = 1;
    er_istore_rlx(&eventring__on, 0);
    er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_PAUSE, 0);
    er_store_rel(&er_st.ext[ER_EXT_PAUSED], 1);
  }
  er_unlock();
}

void eventring_resume(void) {
  er_lock();
  if (er_iload_rlx(&er_st.live) && er_st.paused) {
    er_st.paused = 0;
    er_emit_lifecycle(EVENTRING_LIFECYCLE_RING_RESUME, 0);
    er_istore_rel(&eventring__on, 1);
    er_store_rel(&er_st.ext[ER_EXT_PAUSED], 0);
  }
  er_unlock();
}

int eventring_is_active(void) { return er_iload_rlx(&eventring__on) != 0; }

const char *eventring_path(void) {
  return er_iload_acq(&er_st.live) ? er_st.path : NULL;
}
