/* remote.c -- pausing and resuming tracing from outside the process.
 *
 * The probes' fast path must not pay for this, so they keep testing the
 * process's own flag (eventring__on).  Instead, a traced process runs one
 * small thread, the watcher, that sleeps in futex(FUTEX_WAIT) on a word of
 * its ring file's extension block (ER_EXT_CTL_REQ).  The file is mapped
 * shared, so a futex on it is keyed by the file's page, and another
 * process mapping the same file can wake it:
 *
 *   controller                            watcher (in the traced process)
 *   REQ = (seq + 1) << 2 | op   (CAS)     sleeps while REQ == last seen
 *   FUTEX_WAKE(REQ)              ----->   eventring_pause() / _resume()
 *                                         (records ring_pause / _resume)
 *   sleeps while ACK != REQ      <-----   ACK = REQ; FUTEX_WAKE(ACK)
 *
 * ER_EXT_CTL_WATCHER is 1 while a watcher serves the file, so that a
 * controller knows whether to expect an answer.  Only the file's owner can
 * open it for writing (it is 0600), hence only the owner controls it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* The futex words are the first four bytes of their extension words. */
static int *ctl_word(uint64_t *ext, int index) { return (int *)&ext[index]; }

/* The control words lie in the file's first page. */
#define CONTROL_BYTES 4096

static long futex(int *word, int op, int val, const struct timespec *ts) {
  /* No FUTEX_PRIVATE_FLAG: the word is in a shared file mapping and the
   * other side is another process. */
  return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* The watcher.                                                         */

static pthread_mutex_t watcher_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t watcher;
static int watcher_running; /* under watcher_lock */
static int watcher_quit;    /* atomic: asks the watcher to return */
static int watcher_up;      /* atomic: the watcher is running */
static uint64_t *watched;   /* the extension block it serves */

static void *watch(void *arg) {
  uint64_t *ext = arg;
  int *req = ctl_word(ext, ER_EXT_CTL_REQ);
  int *ack = ctl_word(ext, ER_EXT_CTL_ACK);
  int seen = er_iload_acq(req);
  er_istore_rel(ack, seen);
  er_istore_rel(&watcher_up, 1);
  while (!er_iload_acq(&watcher_quit)) {
    int v = er_iload_acq(req);
    if (v == seen) {
      /* Returns at once if REQ changed since the load above. */
      futex(req, FUTEX_WAIT, v, NULL);
      continue;
    }
    if ((v & 3) == ER_CTL_PAUSE) eventring_pause();
    else if ((v & 3) == ER_CTL_RESUME) eventring_resume();
    seen = v;
    er_istore_rel(ack, v);
    futex(ack, FUTEX_WAKE, INT_MAX, NULL);
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
      er_istore_rel(ctl_word(ext, ER_EXT_CTL_WATCHER), 1);
    } else {
      er_warn("cannot start the control thread: pause and resume from "
              "outside will not work");
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  pthread_mutex_unlock(&watcher_lock);
}

/* Adds a request of kind `op` (ER_CTL_*, or 0 for none) to REQ and wakes
 * the watcher.  Changing the word, not only waking it, is what makes the
 * wake-up impossible to lose: a watcher about to sleep finds REQ no
 * longer the value it is told to sleep on, and returns at once. */
static int post_request(int *req, int op) {
  int old, want;
  do {
    old = er_iload_acq(req);
    want = (int)((((unsigned)old >> 2) + 1) << 2) | op;
  } while (!er_icas(req, old, want));
  futex(req, FUTEX_WAKE, INT_MAX, NULL);
  return want;
}

void er_remote_stop(void) {
  pthread_mutex_lock(&watcher_lock);
  if (watcher_running) {
    er_istore_rel(ctl_word(watched, ER_EXT_CTL_WATCHER), 0);
    er_istore_rel(&watcher_quit, 1);
    post_request(ctl_word(watched, ER_EXT_CTL_REQ), 0);
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

/* ------------------------------------------------------------------ */
/* The controller.                                                      */

/* Opens `<dir>/<pid>.events` and maps its first page, where the control
 * words are.  Returns 0 and the mapping, or a negative error. */
static int map_control(const char *dir, pid_t pid, uint64_t **out) {
  *out = NULL;
  if (pid <= 0) return EVENTRING_E_INVAL;
  char path[PATH_MAX];
  int n = er_file_path(path, sizeof path, dir, pid);
  if (n) return n;
  int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -errno;
  struct stat st;
  uint64_t meta[ER_META_WORDS] = {0};
  int err = 0;
  if (fstat(fd, &st) < 0) err = -errno;
  else if (!S_ISREG(st.st_mode)) err = EVENTRING_E_NOTRING;
  else if (st.st_uid != geteuid() && geteuid() != 0) err = -EPERM;
  else if (pread(fd, meta, sizeof meta, 0) < 0) err = -errno;
  /* The consumer's checks, so that a file that is no ring file, or one
   * of another version, is called what it is.  A good header implies a
   * file far larger than its first page. */
  else err = er_check_meta(meta, (uint64_t)st.st_size);
  uint64_t *map = MAP_FAILED;
  if (!err) {
    map = mmap(NULL, CONTROL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) err = -errno;
  }
  close(fd); /* the mapping stays */
  if (err) return err;
  uint64_t *ext = map + ER_META_WORDS;
  /* A good header without eventring's extension block: OCaml 5's runtime
   * wrote the file, and it has neither control words nor a thread that
   * serves them. */
  if (er_load_acq(&map[ER_META_VERSION]) != ER_FORMAT_VERSION ||
      er_load_acq(&ext[ER_EXT_MAGIC_W]) != ER_EXT_MAGIC ||
      er_load_rlx(&map[ER_META_HEADERS_OFFSET]) <
          8 * (ER_META_WORDS + ER_EXT_WORDS)) {
    munmap(map, CONTROL_BYTES);
    return EVENTRING_E_NOCONTROL;
  }
  *out = map;
  return 0;
}

int eventring_remote_state(const char *dir, pid_t pid) {
  uint64_t *map;
  int err = map_control(dir, pid, &map);
  if (err) return err;
  uint64_t *ext = map + ER_META_WORDS;
  int r = !er_iload_acq(ctl_word(ext, ER_EXT_CTL_WATCHER))
              ? EVENTRING_E_NOTSTARTED
              : er_load_acq(&ext[ER_EXT_PAUSED]) != 0;
  munmap(map, CONTROL_BYTES);
  return r;
}

static int remote_request(const char *dir, pid_t pid, int op) {
  uint64_t *map;
  int err = map_control(dir, pid, &map);
  if (err) return err;
  uint64_t *ext = map + ER_META_WORDS;
  if (!er_iload_acq(ctl_word(ext, ER_EXT_CTL_WATCHER))) {
    err = EVENTRING_E_NOTSTARTED;
    goto out;
  }
  int *ack = ctl_word(ext, ER_EXT_CTL_ACK);
  int want = post_request(ctl_word(ext, ER_EXT_CTL_REQ), op);
  /* Wait for the answer, a second at most. */
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int a = er_iload_acq(ack);
    /* Applied, or overtaken by a later request (applied in order). */
    if (a == want || (int)(((unsigned)a >> 2) - ((unsigned)want >> 2)) > 0)
      break;
    struct timespec now, wait = {0, 10 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) >
        1000000000L) {
      err = EVENTRING_E_TIMEDOUT;
      break;
    }
    futex(ack, FUTEX_WAIT, a, &wait);
  }
out:
  munmap(map, CONTROL_BYTES);
  return err;
}

int eventring_remote_pause(const char *dir, pid_t pid) {
  return remote_request(dir, pid, ER_CTL_PAUSE);
}

int eventring_remote_resume(const char *dir, pid_t pid) {
  return remote_request(dir, pid, ER_CTL_RESUME);
}
