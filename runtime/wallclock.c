/* wallclock.c -- recording the wall clock against the timestamps.
 *
 * A pair (ts, wall) is CLOCK_MONOTONIC and CLOCK_REALTIME read at one
 * instant, in nanoseconds: the realtime read between two monotonic reads,
 * matched to their midpoint, the tightest of a few tries.  A file gets a
 * start pair when it is made, which never changes, and a latest pair at
 * each recalibration of the clock (clock.c, about every 0.1 s when
 * timestamps come from the TSC; never otherwise), so that a reader sees
 * the wall clock's steps (settimeofday, a leap second) that happened
 * while the file was written.
 *
 * The two clocks are slewed alike by NTP, so their difference, the
 * offset, only moves when the wall clock is stepped.  A new pair whose
 * offset agrees with the process's last one within what the sample can
 * tell apart keeps the last offset exactly: the files of a process and of
 * its forked children, and a file and the next one after a stop and a
 * start, map timestamps to the same wall time, so that events merged
 * from them keep their order in wall time too.
 *
 * The latest pair is published as ring_format.h says: in slot g & 1, then
 * the generation g, so that a reader that finds the generation unchanged
 * around its copy of the slot has a pair from one publication.  There is
 * one publisher at a time: recalibrations exclude one another (clock.c),
 * and a file's first pair is written before the file is published.
 *
 * Everything on the recalibration path is async-signal-safe
 * (clock_gettime() and atomic loads and stores): the probe that
 * recalibrates may run in a signal handler.
 */
#include <time.h>

#include "layout.h"
#include "wallclock.h"

/* How much more than the sample's own uncertainty two offsets may differ
 * and still be taken for the same. */
#define SAME_NS 1000

/* The word index of the wall words in this process's blocks (constant:
 * every block of the process has the same name tables and program name),
 * or 0 before the first file.  Stored under er_st.lock before the world
 * opens, loaded by probes that saw it open (stw.h): relaxed. */
static uint64_t wall_word;

/* The offset (wall - ts, modulo 2^64) of the last pair taken in this
 * process, inherited by forked children; valid once `kept` is 1.  Both
 * are atomic words: the lock holder that makes a file and a probe that
 * recalibrates may take pairs at once (the last store wins, and either
 * value is a good offset). */
static uint64_t kept_offset, kept;

static uint64_t ns_of(const struct timespec *t) {
  return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

/* Takes a pair; returns the width of the window it was taken in. */
static uint64_t sample(uint64_t *ts, uint64_t *wall) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; i++) {
    struct timespec a, r, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t na = ns_of(&a), nb = ns_of(&b);
    if (nb - na < best) {
      best = nb - na;
      *ts = na + (nb - na) / 2;
      *wall = ns_of(&r);
    }
  }
  return best;
}

/* A pair whose offset is the process's last one when the two cannot be
 * told apart. */
static void take(uint64_t *ts, uint64_t *wall) {
  uint64_t window = sample(ts, wall);
  uint64_t off = *wall - *ts;
  /* Pairs with the release store below: kept_offset is the one stored
   * with it, or a later one. */
  if (er_load_acq(&kept)) {
    uint64_t k = er_load_rlx(&kept_offset);
    uint64_t diff = off - k;
    uint64_t tol = window / 2 + SAME_NS;
    if (diff <= tol || -diff <= tol) {
      *wall = *ts + k;
      return;
    }
  }
  er_store_rlx(&kept_offset, off);
  er_store_rel(&kept, 1);
}

void er_wall_start(uint64_t pairs[4]) {
  take(&pairs[0], &pairs[1]);
  pairs[2] = pairs[0];
  pairs[3] = pairs[1];
}

void er_wall_file(uint64_t wall_off) {
  if (wall_off) er_store_rlx(&wall_word, (wall_off - ER_EXT_OFFSET) / 8);
}

void er_wall_recalibrated(void) {
  /* Only from inside a probe of the caller's own slot: its `ext` is the
   * block of the file it writes into, mapped for as long as the probe
   * runs (stw.h), even when that file is no longer the current one (a
   * stuck thread's).  A control path that writes in another slot's ring
   * leaves the pair to the next recalibration. */
  struct er_domain *d = er_tls_self;
  if (!d || !er_iload_rlx(&d->in_probe) || !d->ext) return;
  uint64_t i = er_load_rlx(&wall_word);
  if (!i) return;
  uint64_t *w = d->ext + i;
  uint64_t ts, wall;
  take(&ts, &wall);
  uint64_t g = er_load_rlx(&w[ER_WALL_GEN]) + 1;
  /* Orders the store of generation g - 1 before the slot's words: a
   * reader whose copy of the slot saw one of them sees, after its acquire
   * fence, a generation other than the g - 2 it started from. */
  er_fence_release();
  er_store_rlx(&w[ER_WALL_SLOTS + 2 * (g & 1)], ts);
  er_store_rlx(&w[ER_WALL_SLOTS + 2 * (g & 1) + 1], wall);
  /* Publishes the slot; pairs with the reader's acquire load of the
   * generation before its copy. */
  er_store_rel(&w[ER_WALL_GEN], g);
}
