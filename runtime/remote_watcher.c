/* remote_watcher.c -- the traced process's side of remote control: the
 * watcher thread that applies pause and resume requests and counts the
 * readers' leases (protocol in remote.h).
 *
 * The watcher is started and stopped under er_st.lock: started once a
 * file exists, stopped by er_stop_locked() before the world closes and
 * the file goes away, since it reads the file's extension block.  So a
 * watcher never outlives the file it serves, whatever stops and starts
 * other threads make meanwhile.  That is possible because the watcher
 * never waits for er_st.lock: it tries it, and gives up as soon as it is
 * asked to return.  It records its events in no slot of its own
 * (lifecycle.c), takes the host's signals never, and a forked child has
 * none (its creation is not async-signal-safe) until tracing is started
 * anew.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>

#include "remote.h"

/* Under er_st.lock. */
static pthread_t watcher;
static int watcher_running;
static uint64_t *watched;   /* the extension block it serves */
/* Atomic: asks the watcher to return (stored under er_st.lock). */
static int watcher_quit;
/* Atomic: the watcher is running. */
static int watcher_up;
/* The REQ value the starter answered (er_remote_start); atomic. */
static int watcher_seen;

/* Takes er_st.lock as er_lock() does, counted as a control path, and
 * returns 0 (er_unlock() gives it back); or returns 1 without it once the
 * watcher is asked to quit: the thread that asks holds the lock while it
 * waits for us to return. */
static int lock_or_quit(void) {
  er_tls_locking++;
  er_compiler_barrier();
  er_fetch_add(&er_st.control_busy, 1);
  while (pthread_mutex_trylock(&er_st.lock) != 0) {
    if (er_iload_acq(&watcher_quit)) {
      er_fetch_add(&er_st.control_busy, (uint64_t)-1);
      er_compiler_barrier();
      er_tls_locking--;
      return 1;
    }
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* The number of lease words holding the pid of a live process; the words
 * of dead holders are freed. */
static int count_holders(uint64_t *ext) {
  int n = 0;
  for (int i = 0; i < ER_EXT_LEASE_SLOTS; i++) {
    uint64_t *w = er_lease_word(ext, i);
    uint64_t v = er_load_acq(w);
    uint32_t pid = (uint32_t)v;
    /* Halves that do not match: a controller is writing the word with
     * pwrite(2) (remote.h); it is neither counted nor freed. */
    if (!v || v != er_lease_value((pid_t)pid)) continue;
    /* EPERM: alive, another user's (root reads anyone's file). */
    if (!pid || pid > INT_MAX ||
        (kill((pid_t)pid, 0) != 0 && errno == ESRCH)) {
      /* A compare-and-swap: a new holder may have taken the word since. */
      er_cas(w, v, 0);
      continue;
    }
    n++;
  }
  return n;
}

static void *watch(void *arg) {
  uint64_t *ext = arg;
  int *req = er_ctl_word(ext, ER_EXT_CTL_REQ);
  int *ack = er_ctl_word(ext, ER_EXT_CTL_ACK);
  ER_REMOTE_POINT(ER_POINT_WATCHER_RUNS);
  /* The starter answered every request before ours (er_remote_start):
   * one posted since, before this thread first ran, is served below. */
  int seen = er_iload_acq(&watcher_seen);
  er_istore_rel(&watcher_up, 1);
  /* The first sleep begins without a load from the file, as if the start
   * had waited for this thread: a file its owner cut meanwhile is
   * then touched (and repaired, sigbus.c) no sooner than a sleep begun
   * before the cut would have ended, ER_WATCH_RENEW_MS, rather than by
   * this thread at whatever instant it first runs.  The kernel compares
   * REQ with `seen` itself: a request already posted ends it at once. */
  struct timespec first = {ER_WATCH_RENEW_MS / 1000, 0};
  if (er_futex(req, FUTEX_WAIT, seen, &first) < 0 && errno == EFAULT)
    er_futex(&watcher_quit, FUTEX_WAIT, 0, &first);
  int holders = 0;
  while (!er_iload_acq(&watcher_quit)) {
    int v = er_iload_acq(req);
    int expired = 0;
    if (v == seen) {
      /* Returns at once if REQ changed since the load above.  While
       * leases are held, wake up now and then to look for dead holders;
       * otherwise once a second (ER_WATCH_RENEW_MS), so that a sleep on a
       * page that the SIGBUS repair has since replaced ends (remote.h). */
      struct timespec check = {0, ER_LEASE_CHECK_MS * 1000000L};
      struct timespec renew = {ER_WATCH_RENEW_MS / 1000, 0};
      long r = er_futex(req, FUTEX_WAIT, v, holders ? &check : &renew);
      if (!(r < 0 && errno == ETIMEDOUT) || !holders) continue;
      expired = 1;
    }
    if (lock_or_quit()) break;
    int op = 0;
    if (!expired) {
      v = er_iload_acq(req);
      op = v & 3;
      /* Take the request, unless its controller withdrew it meanwhile
       * (remote.h): then look again.  Taken, REQ moves to the next
       * sequence, which is also the answer. */
      int next = (int)((er_ctl_seq(v) + 1) << 2);
      if (op && !er_icas(req, v, next)) {
        er_unlock();
        continue;
      }
      if (op) v = next;
      if (op) ER_REMOTE_POINT(ER_POINT_TAKEN);
    }
    if (op == ER_CTL_PAUSE) er_remote_pause_locked();
    else if (op == ER_CTL_RESUME) er_remote_resume_locked();
    if (expired || op == ER_CTL_LEASES) {
      int n = count_holders(ext);
      if (n > 0 && holders == 0)
        er_readers_came_locked();
      else if (n == 0 && holders > 0)
        er_readers_left_locked();
      holders = n;
    }
    er_unlock();
    if (!expired) {
      seen = v;
      er_istore_rel(ack, v);
      er_futex(ack, FUTEX_WAKE, INT_MAX, NULL);
    }
  }
  return NULL;
}

void er_remote_start(uint64_t *ext) {
  if (watcher_running) return;
  er_istore_rlx(&watcher_quit, 0);
  /* The watcher must not take the host's signals.  Except SIGBUS: its
   * stores into a file its owner cut short fault, and a fault with SIGBUS
   * blocked kills the process instead of reaching the handler that
   * repairs the mapping (sigbus.c). */
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, SIGBUS);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  er_istore_rlx(&watcher_up, 0);
  /* What the watcher has seen, set here rather than when the thread
   * first runs: the start returns without waiting for it (a wait that
   * cost the caller tens of microseconds, milliseconds on a busy
   * machine), and a controller may post a request as soon as the
   * WATCHER word below says 1; the thread serves it when it runs. */
  int *req = er_ctl_word(ext, ER_EXT_CTL_REQ);
  int seen = er_iload_acq(req);
  er_istore_rel(&watcher_seen, seen);
  er_istore_rel(er_ctl_word(ext, ER_EXT_CTL_ACK), seen);
  if (pthread_create(&watcher, &attr, watch, ext) == 0) {
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

void er_remote_wait_up(void) {
  /* A fork() must not catch the watcher half-created: its creation
   * takes locks (e.g. a sanitizer's allocator's) that the child would
   * inherit held.  It takes no lock of ours on the way to watcher_up. */
  if (!watcher_running) return;
  for (int i = 0; i < 100000 && !er_iload_acq(&watcher_up); i++)
    sched_yield();
}

void er_remote_stop(void) {
  if (!watcher_running) return;
  er_remote_wait_up();
  er_istore_rel(er_ctl_word(watched, ER_EXT_CTL_WATCHER), 0);
  er_istore_rel(&watcher_quit, 1);
  /* Ends the wait of a watcher whose file was cut before it first ran. */
  er_futex(&watcher_quit, FUTEX_WAKE, INT_MAX, NULL);
  /* A request of nothing, so that a watcher about to sleep does not. */
  er_post_request(er_ctl_word(watched, ER_EXT_CTL_REQ), 0);
  pthread_join(watcher, NULL);
  watcher_running = 0;
  watched = NULL;
}

void er_remote_after_fork(void) {
  /* The watcher did not survive the fork. */
  watcher_running = 0;
  watched = NULL;
}
