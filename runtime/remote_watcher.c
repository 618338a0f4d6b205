/* remote_watcher.c -- the traced process's side of remote control: the
 * watcher thread that applies pause and resume requests (protocol in
 * remote.h).
 *
 * The watcher is started under er_st.lock once a file exists, and stopped
 * WITHOUT the lock (it takes the lock to apply requests) before the world
 * closes and the file goes away: it reads the file's extension block.  It
 * takes the host's signals never, and a forked child has none (its
 * creation is not async-signal-safe) until tracing is started anew.
 */
#include <sched.h>
#include <signal.h>

#include "remote.h"

static pthread_mutex_t watcher_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t watcher;
static int watcher_running; /* under watcher_lock */
static int watcher_quit;    /* atomic: asks the watcher to return */
static int watcher_up;      /* atomic: the watcher is running */
static uint64_t *watched;   /* the extension block it serves */

static void *watch(void *arg) {
  uint64_t *ext = arg;
  int *req = er_ctl_word(ext, ER_EXT_CTL_REQ);
  int *ack = er_ctl_word(ext, ER_EXT_CTL_ACK);
  int seen = er_iload_acq(req);
  er_istore_rel(ack, seen);
  er_istore_rel(&watcher_up, 1);
  while (!er_iload_acq(&watcher_quit)) {
    int v = er_iload_acq(req);
    if (v == seen) {
      /* Returns at once if REQ changed since the load above. */
      er_futex(req, FUTEX_WAIT, v, NULL);
      continue;
    }
    if ((v & 3) == ER_CTL_PAUSE) eventring_pause();
    else if ((v & 3) == ER_CTL_RESUME) eventring_resume();
    seen = v;
    er_istore_rel(ack, v);
    er_futex(ack, FUTEX_WAKE, INT_MAX, NULL);
  }
  /* The watcher took a domain slot to record its events: give it back
   * before the world stops. */
  eventring_domain_release();
  return NULL;
}

void er_remote_start(uint64_t *ext) {
  pthread_mutex_lock(&watcher_lock);
  if (!watcher_running) {
    er_istore_rlx(&watcher_quit, 0);
    /* The watcher must not take the host's signals. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    er_istore_rlx(&watcher_up, 0);
    if (pthread_create(&watcher, &attr, watch, ext) == 0) {
      /* Return only once the thread runs: a fork() right after the start
       * must not catch it half-created (its creation takes locks, e.g.
       * a sanitizer's allocator's, that the child would inherit held). */
      for (int i = 0; i < 100000 && !er_iload_acq(&watcher_up); i++)
        sched_yield();
      watcher_running = 1;
      watched = ext;
      er_istore_rel(er_ctl_word(ext, ER_EXT_CTL_WATCHER), 1);
    } else {
      er_warn("cannot start the control thread: pause and resume from "
              "outside will not work");
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  pthread_mutex_unlock(&watcher_lock);
}

void er_remote_stop(void) {
  pthread_mutex_lock(&watcher_lock);
  if (watcher_running) {
    er_istore_rel(er_ctl_word(watched, ER_EXT_CTL_WATCHER), 0);
    er_istore_rel(&watcher_quit, 1);
    er_post_request(er_ctl_word(watched, ER_EXT_CTL_REQ), 0);
    pthread_join(watcher, NULL);
    watcher_running = 0;
    watched = NULL;
  }
  pthread_mutex_unlock(&watcher_lock);
}

void er_remote_after_fork(void) {
  /* The watcher did not survive the fork; its lock may have been held. */
  pthread_mutex_init(&watcher_lock, NULL);
  watcher_running = 0;
  watched = NULL;
}
