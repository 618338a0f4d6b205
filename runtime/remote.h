/* remote.h -- pausing and resuming tracing from outside the process: the
 * protocol both sides follow.
 *
 * The probes' fast path must not pay for this, so they keep testing the
 * process's own flag (eventring__on).  Instead, a traced process runs one
 * small thread, the watcher (remote_watcher.c), that sleeps in
 * futex(FUTEX_WAIT) on a word of its ring file's extension block
 * (ER_EXT_CTL_REQ).  The file is mapped shared, so a futex on it is keyed
 * by the file's page, and another process mapping the same file -- the
 * controller, eventring_remote_pause() and _resume() (remote_client.c) --
 * can wake it:
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
#ifndef EVENTRING_REMOTE_H
#define EVENTRING_REMOTE_H

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* The futex words are the first four bytes of their extension words. */
static inline int *er_ctl_word(uint64_t *ext, int index) {
  return (int *)&ext[index];
}

static inline long er_futex(int *word, int op, int val,
                            const struct timespec *ts) {
  /* No FUTEX_PRIVATE_FLAG: the word is in a shared file mapping and the
   * other side is another process. */
  return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* Adds a request of kind `op` (ER_CTL_*, or 0 for none) to REQ and wakes
 * the watcher; returns the new value of REQ.  Changing the word, not only
 * waking it, is what makes the wake-up impossible to lose: a watcher
 * about to sleep finds REQ no longer the value it is told to sleep on,
 * and returns at once. */
static inline int er_post_request(int *req, int op) {
  int old, want;
  do {
    old = er_iload_acq(req);
    want = (int)((((unsigned)old >> 2) + 1) << 2) | op;
  } while (!er_icas(req, old, want));
  er_futex(req, FUTEX_WAKE, INT_MAX, NULL);
  return want;
}

#endif /* EVENTRING_REMOTE_H */
