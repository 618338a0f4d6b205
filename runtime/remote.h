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
 *   controller                            watcher (in the traced process)
 *   REQ = (seq + 1) << 2 | op   (CAS)     sleeps while REQ == last seen
 *   FUTEX_WAKE(REQ)              ----->   takes er_st.lock, then the
 *                                         request: CAS REQ to seq << 2
 *                                         applies it, records ring_pause
 *                                         or ring_resume
 *   sleeps while ACK != REQ      <-----   ACK = the request; FUTEX_WAKE(ACK)
 *
 * Taking a request is a compare-and-swap on REQ so that a controller that
 * gives up waiting (the process is stopped) can withdraw it with a
 * compare-and-swap of its own, from its request to (seq + 1) << 2, a
 * request of nothing: exactly one of the two succeeds.  Withdrawn, the
 * request never takes effect (EVENTRING_E_TIMEDOUT); taken, it will, even
 * if the process was stopped before it could answer (EVENTRING_E_PENDING).
 * Requests are not queued: the watcher applies the latest, and an earlier
 * one overtaken by it counts as answered.
 *
 * Readers that want a paused process to record while they read it hold a
 * lease rather than resume it (ER_EXT_FLAG_LEASES): each writes its pid
 * into a free lease word and posts ER_CTL_LEASES; the watcher counts the
 * live holders.  When the count leaves 0 a paused process is resumed "for
 * readers"; when it returns to 0 -- the last reader let go, or died: the
 * watcher checks the holders' pids every ER_LEASE_CHECK_MS while any is
 * held -- the process is paused again, unless its state was set
 * explicitly (eventring_pause/_resume, `eventring pause/resume`) since.
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

/* The futex words are the first four bytes of their extension words. */
static inline int *er_ctl_word(uint64_t *ext, int index) {
  return (int *)&ext[index];
}

/* Lease word `i` (0 <= i < ER_EXT_LEASE_SLOTS): a holder's pid, or 0. */
static inline uint64_t *er_lease_word(uint64_t *ext, int i) {
  return &ext[ER_EXT_WORDS + i];
}

static inline long er_futex(int *word, int op, int val,
                            const struct timespec *ts) {
  /* No FUTEX_PRIVATE_FLAG: the word is in a shared file mapping and the
   * other side is another process. */
  return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* The sequence number of a REQ or ACK value. */
static inline unsigned er_ctl_seq(int v) { return (unsigned)v >> 2; }

/* Adds a request of kind `op` (ER_CTL_*, or 0 for none) to REQ and wakes
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

/* control.c: what the watcher applies, under er_st.lock.  A request from
 * outside sets the state for good; readers' leases resume a paused
 * process only for as long as one is held, and only if nothing set the
 * state meanwhile. */
ER_HIDDEN void er_remote_pause_locked(void);
ER_HIDDEN void er_remote_resume_locked(void);
ER_HIDDEN void er_readers_hold_locked(int held);

/* Test hooks (testsuite/test_remote_*.c compile this code with
 * ER_REMOTE_TEST and define er_remote_test_point()); nothing elsewhere. */
enum er_remote_point {
  ER_POINT_STOP_ENTERED, /* eventring_stop(), before it takes the lock */
  ER_POINT_TAKEN         /* the watcher took a request, not yet applied */
};
#ifdef ER_REMOTE_TEST
void er_remote_test_point(enum er_remote_point p);
#define ER_REMOTE_POINT(p) er_remote_test_point(p)
#else
#define ER_REMOTE_POINT(p) ((void)0)
#endif

#endif /* EVENTRING_REMOTE_H */
