/* alloc.c -- allocation-size buckets, a hot-path probe of the instrumented
 * variant only (libeventring_i).
 *
 * A host runtime calls eventring_alloc(words) on every allocation; the
 * counts accumulate in the calling domain's buckets, and
 * eventring_alloc_flush() (at a minor collection, say) writes them as one
 * alloc event and starts again from zero.  Buckets (FORMAT.md): sizes 1..9
 * have one each, 10..99 are grouped by tens into 10..18, and 100 words or
 * more go to 19.
 */
#include "writer.h"

#ifndef EVENTRING_INSTRUMENTED
#error "alloc.c belongs to the instrumented variant only"
#endif

static unsigned bucket(uint64_t words) {
  if (words < 10) return (unsigned)words;
  if (words < 100) return (unsigned)(words / 10 + 9);
  return 19;
}

/* The whole path, out of line: a thread's first event, a nested probe,
 * domain_spawn to write, a fence (writer.h says why it is apart). */
static __attribute__((noinline)) void alloc_slow(uint64_t words) {
  /* Entering the probe gives this thread its slot, and keeps the count
   * out of a ring that is being torn down. */
  struct er_domain *d = er_enter(ER_IF_ON);
  if (!d) return;
  d->alloc[bucket(words)]++;
  er_leave(d);
}

void eventring__alloc(uint64_t words) {
  struct er_domain *d = er_tls_self;
  if (ER_LIKELY(d != NULL) && ER_LIKELY(er_enter_fast(d))) {
    d->alloc[bucket(words)]++;
    er_leave(d);
    return;
  }
  alloc_slow(words);
}

void eventring__alloc_flush(void) {
  struct er_domain *d = er_enter(ER_IF_ON);
  if (!d) return;
  unsigned len = 2 + EVENTRING_ALLOC_BUCKETS;
  uint64_t *ev = er_reserve(d, len);
  if (!ev) {
    /* A ring of fewer than 22 words: the event is counted in DROPPED,
     * and its counts go with it, so the next event starts from zero. */
    for (unsigned i = 0; i < EVENTRING_ALLOC_BUCKETS; i++) d->alloc[i] = 0;
    er_leave(d);
    return;
  }
  er_store_rlx(&ev[0], ER_HDR(len, 0, ER_EV_ALLOC, 0));
  er_store_rlx(&ev[1], er_stamp(d));
  for (unsigned i = 0; i < EVENTRING_ALLOC_BUCKETS; i++) {
    er_store_rlx(&ev[2 + i], d->alloc[i]);
    d->alloc[i] = 0;
  }
  er_commit(d, len);
  er_leave(d);
}
