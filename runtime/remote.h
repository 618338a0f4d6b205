/* remote.h -- pausing and resuming tracing from outside the process: the
 * protocol both sides follow.
 *
 * The probes' fast path must not pay for this, so they keep testing the
 * process's own flag (eventring__on).  Instead, a traced process runs one
 * small thread, the watcher (remote_watcher.c), that sleeps in
 * futex(FUTEX_WAIT) on a word of its ring file's extension block
 * (ER_EXT_CTL_REQ).  The file is mapped shared, so a futex on it is keyed
 * by the file's page, and another process mapping the same file -- the
 * controller, eventring_remote_pause(), _resume(), _hold() and _unhold()
 * (remote_client.c) -- can wake it:
 *
 *   controller (holding its lock)         watcher (in the traced process)
 *   REQ &= ~3, reads REQ, REQ += 4 | op    sleeps while REQ == last seen
 *   (FUTEX_WAKE_OP, wakes REQ)   ----->   takes er_st.lock, then the
 *                                         request: CAS REQ from
 *                                         seq << 2 | op to (seq + 1) << 2,
 *                                         applies it, records ring_pause
 *                                         or ring_resume
 *   sleeps while ACK does not    <-----   ACK = REQ as taken; FUTEX_WAKE
 *   follow its request
 *
 * The controller never loads or stores the file through memory: its
 * owner may cut it short, and the controller would die of SIGBUS
 * (readers never fault: doc/GUARANTEES.md).  It works through system
 * calls that fail instead (remote_client.c): REQ's updates are atomic operations done by the
 * kernel (FUTEX_WAKE_OP: and-not, add), its loads a pread(2) confirmed by
 * a comparison in the kernel.  There is no compare-and-swap among those,
 * hence the protocol's shape:
 *
 * Controllers take turns (flock(2) on the file, held from post to answer),
 * so that while one works only the watcher changes REQ, and the watcher
 * changes it only from a value with kind bits (op) to one without.  The
 * controller clears the kind bits first (dropping a request left by a
 * controller that died: requests are not queued, the latest wins), then
 * reads REQ, whose sequence is now stable, then adds its own: it knows
 * its request's value without a compare-and-swap.
 *
 * Taking a request is a compare-and-swap on REQ to the next sequence,
 * without kind bits, so that a controller that gives up waiting (the
 * process is stopped) can withdraw it by clearing the kind bits alone,
 * and then tell who won by reading REQ: its own sequence, it withdrew
 * the request, which never takes effect (EVENTRING_E_TIMEDOUT); the next
 * one, the watcher took it first, and it will take effect even if the
 * process was stopped before it could answer (EVENTRING_E_PENDING).
 * The answer is ACK = the value the watcher left in REQ (for a request of
 * nothing, REQ as it found it): a request is answered once ACK's sequence
 * is later than its own, which also covers a request overtaken by a
 * later one.  The watcher's stop posts a request of nothing by a
 * compare-and-swap of its own (er_post_request, on its own mapping),
 * after clearing ER_EXT_CTL_WATCHER: a controller that finds its request
 * neither answered nor where it left it looks at that word first.
 *
 * Readers that want a paused process to record while they read it hold a
 * lease rather than resume it (ER_EXT_FLAG_LEASES): each writes its pid
 * into a free lease word and posts ER_CTL_LEASES; the watcher counts the
 * live holders.  A lease word holds 0 or er_lease_value(pid): the pid in
 * its low half, its complement in its high half.  The controller writes
 * it with one pwrite(2), which copies bytes in no promised order; but a
 * word whose halves do not match is being written, and the watcher
 * neither counts nor frees it, and no mix of the old and the new bytes
 * matches unless it equals the old or the new value byte for byte.  The
 * controllers' lock leaves the watcher the only other writer of a lease
 * word, and it only frees the words of dead holders (a compare-and-swap
 * to 0), never a free word and never a live controller's.  When the
 * count leaves 0 a paused process is resumed "for
 * readers"; when it returns to 0 -- the last reader let go, or died: the
 * watcher checks the holders' pids every ER_LEASE_CHECK_MS while any is
 * held -- the process is paused again, unless its state was set
 * explicitly (eventring_pause/_resume, `eventring pause/resume`) since.
 *
 * A futex on a shared file mapping is keyed by the file and the offset,
 * not by the page in memory, so that truncating the file and growing it
 * back (the SIGBUS repair, sigbus.c) leaves the watcher's sleep and its
 * wakers' key the same.  Only when the repair cannot grow the file does
 * it put anonymous memory in the mapping's place: the watcher may then be
 * asleep on the file's key while the stop (er_remote_stop) changes and
 * wakes the anonymous page, which has another key; nothing in the
 * process can reach the old one.  So the watcher never sleeps longer
 * than ER_WATCH_RENEW_MS: its next wait is keyed by the page the stop
 * wakes, whose REQ no longer holds the value it last saw, and the stop
 * ends after that long at worst.  Controllers in other processes cannot
 * reach it any more, as nothing they map is that page.
 *
 * ER_EXT_CTL_WATCHER is 1 while a watcher serves the file, so that a
 * controller knows whether to expect an answer.  Only the file's owner can
 * open it for writing (it is 0600), hence only the owner controls it.
 */
#ifndef EVENTRING_REMOTE_H
#define EVENTRING_REMOTE_H

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* How often the watcher looks for dead lease holders while any is held. */
#define ER_LEASE_CHECK_MS 100

/* The longest the watcher sleeps on REQ at a time (see above: a page
 * replaced under its sleep).  A whole number of seconds. */
#define ER_WATCH_RENEW_MS 1000

/* The futex words are the first four bytes of their extension words. */
static inline int *er_ctl_word(uint64_t *ext, int index) {
  return (int *)&ext[index];
}

/* Lease word `i` (0 <= i < ER_EXT_LEASE_SLOTS): 0 or er_lease_value() of
 * a holder's pid. */
static inline uint64_t *er_lease_word(uint64_t *ext, int i) {
  return &ext[ER_EXT_WORDS + i];
}

/* futex(2) on `word`, a control word of a shared file mapping.  Returns
 * the system call's result: -1 with errno set on failure (EFAULT for a
 * page the file's owner cut, ETIMEDOUT, EAGAIN). */
static inline long er_futex(int *word, int op, int val,
                            const struct timespec *ts) {
  /* No FUTEX_PRIVATE_FLAG: the word is in a shared file mapping and the
   * other side is another process. */
  return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* futex(2) with all its arguments, for the operations that take two
 * words (FUTEX_WAKE_OP, FUTEX_CMP_REQUEUE); `val2` is passed where the
 * timeout would be. */
static inline long er_futex_op(int *word, int op, int val, long val2,
                               int *word2, int val3) {
  return syscall(SYS_futex, word, op, val, (void *)val2, word2, val3);
}

/* A lease word's value for holder `pid`: the pid in the low half, its
 * complement in the high half, so that a word half written is known. */
static inline uint64_t er_lease_value(pid_t pid) {
  uint32_t lo = (uint32_t)pid;
  return (uint64_t)~lo << 32 | lo;
}

/* The sequence number of a REQ or ACK value. */
static inline unsigned er_ctl_seq(int v) { return (unsigned)v >> 2; }

/* The watcher's side (its stop): adds a request of kind `op` (ER_CTL_*,
 * or 0 for none) to REQ, through the process's own mapping, and wakes
 * the watcher; returns the new value of REQ.  Changing the word, not only
 * waking it, is what makes the wake-up impossible to lose: a watcher
 * about to sleep finds REQ no longer the value it is told to sleep on,
 * and returns at once. */
static inline int er_post_request(int *req, int op) {
  int old, want;
  do {
    old = er_iload_acq(req);
    want = (int)((er_ctl_seq(old) + 1) << 2) | op;
  } while (!er_icas(req, old, want));
  er_futex(req, FUTEX_WAKE, INT_MAX, NULL);
  return want;
}

/* lifecycle.c: what the watcher applies, under er_st.lock.  A request
 * from outside sets the state for good.  er_readers_came_locked() (the
 * first lease taken) resumes a paused process, for only as long as a
 * lease is held: er_readers_left_locked() (the last one gone) pauses it
 * again, unless something set the state meanwhile. */
ER_HIDDEN void er_remote_pause_locked(void);
ER_HIDDEN void er_remote_resume_locked(void);
ER_HIDDEN void er_readers_came_locked(void);
ER_HIDDEN void er_readers_left_locked(void);

/* Test hooks (testsuite/test_remote_*.c compile this code with
 * ER_REMOTE_TEST and define er_remote_test_point()); nothing elsewhere. */
enum er_remote_point {
  ER_POINT_STOP_ENTERED, /* eventring_stop(), before it takes the lock */
  ER_POINT_TAKEN,        /* the watcher took a request, not yet applied */
  ER_POINT_POSTED,       /* a controller posted a request, not yet waiting */
  ER_POINT_WATCHER_RUNS  /* the watcher's first instant, before it reads */
};
#ifdef ER_REMOTE_TEST
void er_remote_test_point(enum er_remote_point p);
#define ER_REMOTE_POINT(p) er_remote_test_point(p)
#else
#define ER_REMOTE_POINT(p) ((void)0)
#endif

#endif /* EVENTRING_REMOTE_H */
