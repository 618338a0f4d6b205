/* control.c -- the public control entry points: start, stop, pause,
 * resume, and the file's path.
 *
 * Each takes er_st.lock and puts together what lies below: the trace's
 * life (lifecycle.c), a forked child's pending file (fork.c) and the
 * thread that serves control from outside (remote_watcher.c), which
 * starts after a file exists and stops before it goes.
 */
#include <stdlib.h>

#include "remote.h"
#include "writer.h"

/* Starts tracing and the thread that serves control from outside; in a
 * forked child whose file is pending, makes that file.  Not for a first
 * event, which may run in a signal handler: no thread may be created
 * there, so a traced child has no remote control until it calls
 * eventring_start() or starts tracing anew. */
static int start_with_watcher_locked(void) {
  int was_live = er_iload_rlx(&er_st.live);
  int r = er_fork_pending() ? er_fork_file_locked() : er_start_locked(NULL);
  if (r == 0 && !was_live) {
    er_remote_start(er_st.ext);
    /* Files of processes that ended without a teardown (_exit, a
     * signal) go now; not from a fork handler, where a child must start
     * cheaply. */
    er_leftovers_reap(er_st.path, ER_REAP_DEAD);
  }
  return r;
}

int er_stop_locked(void) {
  if (!er_iload_rlx(&er_st.live)) {
    /* A forked child whose file is not made has nothing to close. */
    if (!er_fork_cancel_locked()) return EVENTRING_E_NOTSTARTED;
    er_st.paused = 0;
    return 0;
  }
  /* The watcher reads this file's extension block: it goes first, under
   * the lock, so that no stop and start in another thread can give it a
   * file that we then unmap under it (remote_watcher.c). */
  er_remote_stop();
  er_end_locked();
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
  ER_REMOTE_POINT(ER_POINT_STOP_ENTERED);
  er_lock();
  int r = er_stop_locked();
  er_unlock();
  return r;
}

void eventring_pause(void) {
  er_lock();
  if (er_fork_pending())
    er_fork_pause_locked();
  else
    er_pause_locked(ER_BY_CALLER);
  er_unlock();
}

void eventring_resume(void) {
  er_lock();
  if (er_fork_pending())
    er_fork_resume_locked();
  else
    er_resume_locked(ER_BY_CALLER);
  er_unlock();
}

int eventring_is_active(void) { return er_iload_rlx(&eventring__on) != 0; }

const char *eventring_path(void) {
  /* A forked child's pending file is made for whoever asks for it, but
   * for a signal handler that interrupted its own thread inside the
   * library's lock (making that very file, say): it cannot take the lock,
   * so it gets NULL and the interrupted thread makes the file. */
  if (er_fork_pending() && !er_tls_locking) {
    er_lock();
    er_fork_file_locked();
    er_unlock();
  }
  return er_iload_acq(&er_st.live) ? er_st.path : NULL;
}
