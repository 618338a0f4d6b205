/* remote_client.c -- the controller's side of remote control:
 * eventring_remote_pause(), _resume(), _hold(), _unhold() and _state(),
 * called by another process (`eventring pause`, a reader following a
 * process) on a traced process's ring file (protocol in remote.h).
 *
 * The file is another process's, and its owner may cut it short at any
 * moment (truncate -s 0).  A load or store through a mapping of a page
 * past the new end raises SIGBUS, which would kill the controller
 * (readers never fault: doc/GUARANTEES.md).  So the controller never
 * dereferences the file's memory.  It maps the first page only to name the control
 * words to futex(2), which keys a shared mapping by file and offset;
 * every access goes through a system call, which fails with EFAULT, or
 * reads short, where a load would fault:
 *
 *   - loads: pread(2) of the word, then FUTEX_CMP_REQUEUE waking and
 *     requeueing nobody, which compares the word with the value read in
 *     the kernel, as one 32-bit load.  pread copies bytes, so a word
 *     being stored to may read torn; the comparison proves that the word
 *     held the value at that instant, or we read again (load_word);
 *   - atomic updates of REQ: FUTEX_WAKE_OP, which applies an and-not or
 *     an add to the word in the kernel, atomically, and wakes its
 *     waiters (kernel_op);
 *   - waits: FUTEX_WAIT, which reads the word in the kernel;
 *   - lease words: pread and pwrite of 8 bytes, made safe by their
 *     format (remote.h) and by the controllers' lock below.
 *
 * Controllers take turns: each holds flock(2) on its own descriptor of
 * the file for the whole of a request, from its post to its answer or
 * withdrawal, so that the watcher is the only other party changing REQ
 * and the lease words meanwhile (remote.h says why that is all the
 * protocol needs).  The lock goes with the descriptor, so a controller
 * that dies lets go.  A controller waits a second at most, for the lock
 * and the answer together, then withdraws its request if the watcher has
 * not taken it yet, so that a command that failed changes nothing.
 * A file cut while we use it gives EVENTRING_E_TRUNCATED; whether the
 * request took effect is then unknown (the traced process regrows its
 * file or maps memory over it, sigbus.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fsize.h"
#include "remote.h"

/* The control words lie in the file's first page. */
#define CONTROL_BYTES 4096

/* How long a request may take, lock and answer together. */
#define ANSWER_NS 1000000000L

/* A traced process's file, open for a request. */
struct ctl {
  int fd;
  /* Its first page, mapped for the addresses futex(2) takes: never read
   * or written through. */
  uint64_t *map;
  /* The header and the extension block's fixed part, as read at open. */
  uint64_t head[ER_META_WORDS + ER_EXT_WORDS];
  struct timespec t0; /* when the request began */
};

static void ctl_close(struct ctl *c) {
  if (c->map != MAP_FAILED) munmap(c->map, CONTROL_BYTES);
  if (c->fd >= 0) close(c->fd); /* gives back the lock, if held */
  c->map = MAP_FAILED;
  c->fd = -1;
}

/* Opens `<dir>/<pid>.events` and maps its first page, where the control
 * words are, after checking that it is a ring file of the caller's with
 * eventring's extension block.  Returns 0, or a negative error with
 * nothing left open. */
static int ctl_open(const char *dir, pid_t pid, struct ctl *c) {
  c->fd = -1;
  c->map = MAP_FAILED;
  clock_gettime(CLOCK_MONOTONIC, &c->t0);
  if (pid <= 0) return EVENTRING_E_INVAL;
  char path[PATH_MAX];
  int err = er_file_path(path, sizeof path, dir, pid);
  if (err) return err;
  c->fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (c->fd < 0) return -errno;
  struct stat st;
  memset(c->head, 0, sizeof c->head);
  if (fstat(c->fd, &st) < 0) err = -errno;
  else if (!S_ISREG(st.st_mode)) err = EVENTRING_E_NOTRING;
  else if (st.st_uid != geteuid() && geteuid() != 0) err = -EPERM;
  else if (pread(c->fd, c->head, sizeof c->head, 0) < 0) err = -errno;
  /* The consumer's checks, so that a file that is no ring file, or one
   * of another version, is called what it is.  A good header implies a
   * file far larger than its first page, so the words read above are
   * all there (or the file was cut since, and the checks below fail). */
  else err = er_check_meta(c->head, (uint64_t)st.st_size);
  if (!err) {
    c->map = mmap(NULL, CONTROL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                  c->fd, 0);
    if (c->map == MAP_FAILED) err = -errno;
  }
  /* A good header without eventring's extension block: OCaml 5's runtime
   * wrote the file, and it has neither control words nor a thread that
   * serves them. */
  const uint64_t *ext = c->head + ER_META_WORDS;
  if (!err && (c->head[ER_META_VERSION] != ER_FORMAT_VERSION ||
               ext[ER_EXT_MAGIC_W] != ER_EXT_MAGIC ||
               c->head[ER_META_HEADERS_OFFSET] <
                   8 * (ER_META_WORDS + ER_EXT_WORDS)))
    err = EVENTRING_E_NOCONTROL;
  if (err) ctl_close(c);
  return err;
}

/* The file offset of extension word `index`. */
static off_t ext_offset(int index) {
  return (off_t)8 * (ER_META_WORDS + index);
}

/* The error for a system call on the file that failed with errno. */
static int file_error(void) {
  return errno == EFAULT ? EVENTRING_E_TRUNCATED : -errno;
}

/* Loads control word `index` (its first four bytes) into *out, as one
 * atomic load would.  Returns 0 or a negative error. */
static int load_word(struct ctl *c, int index, int *out) {
  int *word = er_ctl_word(c->map + ER_META_WORDS, index);
  /* Each retry means the word changed between the two reads; the
   * watcher changes it a few times per request, so running out means a
   * hostile writer. */
  for (int i = 0; i < 1000; i++) {
    int v;
    ssize_t n = pread(c->fd, &v, sizeof v, ext_offset(index));
    if (n < 0) return -errno;
    if (n != (ssize_t)sizeof v) return EVENTRING_E_TRUNCATED;
    if (er_futex_op(word, FUTEX_CMP_REQUEUE, 0, 0, word, v) == 0) {
      *out = v;
      return 0;
    }
    if (errno != EAGAIN) return file_error();
  }
  return -EAGAIN;
}

/* Whether extension word `index`, which only ever holds 0 or 1 (the
 * watcher flag, the paused flag), is nonzero: 1, 0 or a negative error.
 * A plain read is enough, since a change touches one byte. */
static int load_flag(struct ctl *c, int index) {
  uint64_t v;
  ssize_t n = pread(c->fd, &v, sizeof v, ext_offset(index));
  if (n < 0) return -errno;
  if (n != (ssize_t)sizeof v) return EVENTRING_E_TRUNCATED;
  return v != 0;
}

/* Applies `op` (FUTEX_OP(...)) to control word `index` in the kernel,
 * atomically, and wakes the word's waiters if `wake`.  Returns 0 or an
 * error. */
static int kernel_op(struct ctl *c, int index, int op, int wake) {
  int *word = er_ctl_word(c->map + ER_META_WORDS, index);
  return er_futex_op(word, FUTEX_WAKE_OP, wake ? INT_MAX : 0, 0, word, op) < 0
             ? file_error()
             : 0;
}

/* The operations on REQ, as FUTEX_WAKE_OP encodes them.  The comparison
 * decides whether one more waiter is woken; it is made to hold only for
 * the word's initial value with a request of readers' leases, rarely, and
 * a waiter woken for nothing finds nothing new. */
#define CLEAR_KIND FUTEX_OP(FUTEX_OP_ANDN, 3, FUTEX_OP_CMP_EQ, 3)
#define ADD_REQUEST(op) FUTEX_OP(FUTEX_OP_ADD, 4 | (op), FUTEX_OP_CMP_EQ, 3)

static long elapsed_ns(const struct ctl *c) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - c->t0.tv_sec) * 1000000000L +
         (now.tv_nsec - c->t0.tv_nsec);
}

/* Takes the controllers' lock, waiting for another controller until the
 * request's second is up.  Returns 0, EVENTRING_E_TIMEDOUT (nothing was
 * asked) or another error. */
static int ctl_lock(struct ctl *c) {
  while (flock(c->fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return -errno;
    if (elapsed_ns(c) > ANSWER_NS) return EVENTRING_E_TIMEDOUT;
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* Opens the file, checks that it has lease words if `leases`, that a
 * watcher serves it, and takes the lock.  Returns 0 or an error, with
 * nothing left open. */
static int ctl_begin(const char *dir, pid_t pid, int leases, struct ctl *c) {
  int err = ctl_open(dir, pid, c);
  if (err) return err;
  const uint64_t *ext = c->head + ER_META_WORDS;
  if (leases && (!(ext[ER_EXT_FLAGS] & ER_EXT_FLAG_LEASES) ||
                 c->head[ER_META_HEADERS_OFFSET] <
                     8 * (ER_META_WORDS + ER_EXT_WORDS + ER_EXT_LEASE_SLOTS)))
    err = EVENTRING_E_NOCONTROL;
  int up = err ? 1 : load_flag(c, ER_EXT_CTL_WATCHER);
  if (!err) err = up < 0 ? up : !up ? EVENTRING_E_NOTSTARTED : ctl_lock(c);
  if (err) ctl_close(c);
  return err;
}

/* Posts a request of kind `op` (ER_CTL_*) and stores its value in *want
 * (remote.h): first a request left by a controller that died is
 * dropped, so that REQ's kind bits are 0 when we read its sequence and
 * add ours.  Under the lock, only the watcher changes REQ meanwhile, and
 * it never changes a word whose kind bits are 0 (a stop of the traced
 * process also posts; then it serves no more requests and the answer
 * never comes). */
static int post(struct ctl *c, int op, int *want) {
  int r = 0;
  int err = kernel_op(c, ER_EXT_CTL_REQ, CLEAR_KIND, 0);
  if (!err) err = load_word(c, ER_EXT_CTL_REQ, &r);
  if (!err) err = kernel_op(c, ER_EXT_CTL_REQ, ADD_REQUEST(op), 1);
  *want = (int)((unsigned)(r & ~3) + 4u) | op;
  ER_REMOTE_POINT(ER_POINT_POSTED);
  return err;
}

/* Whether ACK value `a` answers request `want`: it is a later sequence
 * (remote.h), counted modulo 2^30. */
static int answers(int a, int want) {
  return (int)((unsigned)(a & ~3) - (unsigned)(want & ~3)) > 0;
}

/* Waits for the answer to request `want` until the request's second is
 * up.  Returns 0 when it was applied (or overtaken by a later request);
 * otherwise withdraws it if it can (remote.h) and returns
 * EVENTRING_E_NOTSTARTED when the watcher went away, EVENTRING_E_TIMEDOUT
 * when the request was withdrawn (it will never take effect), or
 * EVENTRING_E_PENDING when the watcher took it and it will take effect
 * when the process runs again. */
static int await_answer(struct ctl *c, int want) {
  int *ack = er_ctl_word(c->map + ER_META_WORDS, ER_EXT_CTL_ACK);
  int a, err;
  for (;;) {
    if ((err = load_word(c, ER_EXT_CTL_ACK, &a))) return err;
    if (answers(a, want)) return 0;
    long left = ANSWER_NS - elapsed_ns(c);
    if (left <= 0) break;
    struct timespec wait = {0, left < 10000000L ? left : 10000000L};
    /* Returns at once if ACK is no longer `a`; EFAULT: the file was cut. */
    if (er_futex(ack, FUTEX_WAIT, a, &wait) < 0 && errno == EFAULT)
      return EVENTRING_E_TRUNCATED;
  }
  /* Clearing the kind bits leaves a request of nothing with our sequence:
   * the watcher, which takes a request only by a compare-and-swap from
   * the value with the kind bits, can no longer take it.  Had it taken it
   * first, REQ holds the next sequence already. */
  int r;
  if ((err = kernel_op(c, ER_EXT_CTL_REQ, CLEAR_KIND, 1)) ||
      (err = load_word(c, ER_EXT_CTL_REQ, &r)))
    return err;
  int up = load_flag(c, ER_EXT_CTL_WATCHER);
  if (up <= 0) return up < 0 ? up : EVENTRING_E_NOTSTARTED;
  if ((r & ~3) == (want & ~3)) return EVENTRING_E_TIMEDOUT;
  /* Taken: answered since the last look, or pending. */
  if ((err = load_word(c, ER_EXT_CTL_ACK, &a))) return err;
  return answers(a, want) ? 0 : EVENTRING_E_PENDING;
}

int eventring_remote_state(const char *dir, pid_t pid) {
  struct ctl c;
  int err = ctl_open(dir, pid, &c);
  if (err) return err;
  int r = load_flag(&c, ER_EXT_CTL_WATCHER);
  if (r == 0) r = EVENTRING_E_NOTSTARTED;
  else if (r > 0) r = load_flag(&c, ER_EXT_PAUSED);
  ctl_close(&c);
  return r;
}

static int remote_request(const char *dir, pid_t pid, int op) {
  struct ctl c;
  int want, err = ctl_begin(dir, pid, 0, &c);
  if (err) return err;
  err = post(&c, op, &want);
  if (!err) err = await_answer(&c, want);
  ctl_close(&c);
  return err;
}

int eventring_remote_pause(const char *dir, pid_t pid) {
  return remote_request(dir, pid, ER_CTL_PAUSE);
}

int eventring_remote_resume(const char *dir, pid_t pid) {
  return remote_request(dir, pid, ER_CTL_RESUME);
}

/* The file offset of lease word `i`. */
static off_t lease_offset(int i) { return ext_offset(ER_EXT_WORDS + i); }

/* Writes lease word `i`, 0 or er_lease_value(pid), with one pwrite(2)
 * (remote.h says why the watcher never misreads it half written), unless
 * the file was cut short of it: writing then would grow another
 * process's file.  Returns 0 or an error. */
static int write_lease(struct ctl *c, int i, uint64_t v) {
  struct stat st;
  if (fstat(c->fd, &st) < 0) return -errno;
  if (st.st_size < lease_offset(i) + 8) return EVENTRING_E_TRUNCATED;
  /* A write past the file size limit would raise SIGXFSZ (fsize.h). */
  if (!er_fsize_allows((uint64_t)lease_offset(i) + 8)) return -EFBIG;
  ssize_t n = pwrite(c->fd, &v, sizeof v, lease_offset(i));
  if (n < 0) return -errno;
  return n == (ssize_t)sizeof v ? 0 : EVENTRING_E_TRUNCATED;
}

/* Reads lease word `i` into *v.  Under the lock the watcher only frees
 * words (to 0) meanwhile, and a word being freed never reads as 0 before
 * it is. */
static int read_lease(struct ctl *c, int i, uint64_t *v) {
  ssize_t n = pread(c->fd, v, sizeof *v, lease_offset(i));
  if (n < 0) return -errno;
  return n == (ssize_t)sizeof *v ? 0 : EVENTRING_E_TRUNCATED;
}

int eventring_remote_hold(const char *dir, pid_t pid) {
  struct ctl c;
  int err = ctl_begin(dir, pid, 1, &c);
  if (err) return err;
  uint64_t w = 1;
  int mine = -1;
  for (int i = 0; i < ER_EXT_LEASE_SLOTS && !err && mine < 0; i++)
    if (!(err = read_lease(&c, i, &w)) && w == 0) mine = i;
  if (!err && mine < 0) err = EVENTRING_E_TOOMANY;
  if (!err) err = write_lease(&c, mine, er_lease_value(getpid()));
  if (!err) {
    int paused = load_flag(&c, ER_EXT_PAUSED), want;
    err = paused < 0 ? paused : post(&c, ER_CTL_LEASES, &want);
    /* A process that records needs no answer: the lease is counted
     * whenever the watcher runs next.  A paused one is resumed first. */
    if (!err && paused) err = await_answer(&c, want);
    /* Not resumed for us: take the lease back.  (Taken but not answered,
     * the watcher counts it, then finds it gone at its next check.) */
    if (err) write_lease(&c, mine, 0);
  }
  ctl_close(&c);
  return err;
}

int eventring_remote_unhold(const char *dir, pid_t pid) {
  struct ctl c;
  int err = ctl_begin(dir, pid, 1, &c);
  if (err) return err == EVENTRING_E_NOTSTARTED ? 0 : err;
  uint64_t me = er_lease_value(getpid()), w;
  int found = -1;
  for (int i = 0; i < ER_EXT_LEASE_SLOTS && !err && found < 0; i++)
    if (!(err = read_lease(&c, i, &w)) && w == me) found = i;
  /* The answer tells that the process was paused again if we were the
   * last; unanswered, the watcher finds the lease gone at its next
   * check of the holders, which it makes while it counts any. */
  if (!err && found >= 0 && !(err = write_lease(&c, found, 0))) {
    int want;
    err = post(&c, ER_CTL_LEASES, &want);
    if (!err) err = await_answer(&c, want);
  }
  ctl_close(&c);
  return err;
}
