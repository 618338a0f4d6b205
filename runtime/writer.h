/* writer.h -- the write path of a probe, inlined into each entry point.
 *
 * A probe that passed the inlined flag test of eventring.h ends up in one
 * function (er_emit, the custom event's in probes.c, the alloc probes)
 * into which all of this is inlined: enter the domain (stw.h), take a
 * timestamp, reserve words,
 * store them, publish the tail, leave.  What is rare -- a thread's first
 * event, a signal handler's nested probe, domain_spawn, evicting old
 * events, recalibrating the clock -- stays out of line.
 *
 * Timestamps are nanoseconds of CLOCK_MONOTONIC (the format's contract).
 * Where the kernel itself keeps that clock with the TSC (clocksource
 * "tsc", invariant TSC), they are computed from the TSC instead:
 *
 *   ns = ns0 + ((tsc - tsc0) * mult) >> 32
 *
 * with (tsc0, ns0, mult) taken against clock_gettime() when tracing
 * starts and again every ER_RECAL_CYCLES (~0.1 s), the rate measured over
 * the last interval, so the error stays the drift of a tenth of a second.
 * Two parameter sets alternate, the current one named by er_clock_gen: a
 * reader that finds the generation changed under it reads again.  Each
 * domain also never lets its timestamps go backwards (a recalibration may
 * step the mapping back by a few nanoseconds).
 * OCAML_RUNTIME_EVENTS_CLOCK=monotonic, read when tracing first starts in
 * the process, forces clock_gettime().
 */
#ifndef EVENTRING_WRITER_H
#define EVENTRING_WRITER_H

#include <time.h>

#include "internal.h"
#include "stw.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define ER_HAVE_TSC 1
#endif

/* ------------------------------------------------------------------ */
/* The clock.                                                           */

/* About a tenth of a second at 3 GHz: the longest a set of parameters is
 * used before it is measured again. */
#define ER_RECAL_CYCLES (UINT64_C(1) << 28)

struct er_clock_params {
  uint64_t tsc0, ns0, mult; /* atomic words: read by probes, written by
                               the recalibrating thread */
};

extern ER_HIDDEN int er_clock_tsc;            /* 1: TSC timestamps */
extern ER_HIDDEN uint64_t er_clock_gen;       /* current set: gen & 1 */
extern ER_HIDDEN struct er_clock_params er_clock_p[2];

ER_HIDDEN void er_clock_init(void);           /* under the lock, at start */
ER_HIDDEN void er_clock_after_fork(void);     /* in a forked child */
ER_HIDDEN uint64_t er_clock_slow(uint64_t tsc);

static inline uint64_t er_clock_monotonic(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t er_now(void) {
#ifdef ER_HAVE_TSC
  if (ER_LIKELY(er_iload_rlx(&er_clock_tsc))) {
    uint64_t t = __rdtsc();
    for (;;) {
      /* Pairs with the release store of er_clock_gen that published the
       * set: its words are complete. */
      uint64_t g = er_load_acq(&er_clock_gen);
      const struct er_clock_params *p = &er_clock_p[g & 1];
      uint64_t tsc0 = er_load_rlx(&p->tsc0), ns0 = er_load_rlx(&p->ns0);
      uint64_t mult = er_load_rlx(&p->mult);
      /* The set was not rewritten while we read it (that takes two
       * recalibrations). */
      er_compiler_barrier();
      if (ER_UNLIKELY(er_load_rlx(&er_clock_gen) != g)) continue;
      if (ER_UNLIKELY(t - tsc0 > ER_RECAL_CYCLES)) return er_clock_slow(t);
      return ns0 + (uint64_t)(((unsigned __int128)(t - tsc0) * mult) >> 32);
    }
  }
#endif
  return er_clock_monotonic();
}

/* Entering and leaving a probe are the stop-the-world protocol's: stw.h. */

/* A timestamp for the domain's next event: never before its last one. */
static inline uint64_t er_stamp(struct er_domain *d) {
  uint64_t t = er_now();
  if (ER_UNLIKELY(t < d->last_ts)) t = d->last_ts;
  d->last_ts = t;
  return t;
}

/* ------------------------------------------------------------------ */
/* Reserving and publishing words (see ring.c for the overwrite policy). */

ER_HIDDEN int er_evict(struct er_domain *d, uint64_t end, uint64_t pad);

/* Counts an event the domain could not write in its ring's DROPPED word.
 * Called inside a probe that saw `live`, on a domain with a ring, so the
 * header is mapped. */
static inline void er_count_dropped(struct er_domain *d) {
  d->dropped++;
  er_store_rlx(&d->hdr[ER_RING_DROPPED], d->dropped);
}

/* Returns room for `len` contiguous words at the tail, after padding to
 * the ring's end and evicting old events as needed; or NULL, the event
 * dropped and counted, when it is longer than the whole ring (rings go
 * down to 2 words, OCAMLRUNPARAM e=1, and a custom event up to 1023).
 * Writing it would mean evicting past the tail and wrapping the event
 * onto itself; OCaml 5 has no answer for that case either, so it is
 * settled here, once, for every kind of event. */
static inline uint64_t *er_reserve(struct er_domain *d, unsigned len) {
  uint64_t size = d->mask + 1;
  if (ER_UNLIKELY(len > size)) {
    er_count_dropped(d);
    return NULL;
  }
  uint64_t tail = d->tail;
  uint64_t idx = tail & d->mask;
  uint64_t pad = idx + len > size ? size - idx : 0;
  uint64_t end = tail + pad + len;
  int skip_pad = 0;
  if (ER_UNLIKELY(end - d->head > size)) skip_pad = er_evict(d, end, pad);
  if (ER_UNLIKELY(pad)) {
    if (!skip_pad) er_store_rlx(&d->ring[idx], ER_HDR(pad, 0, 0, 0));
    d->tail = tail + pad;
    idx = 0;
  }
  return &d->ring[idx];
}

/* The room evicted beyond what an event needs (ring.c, er_evict()). */
#define ER_EVICT_SLACK(size) ((size) / 64 < 256 ? (size) / 64 : 256)

/* Publishes the `len` words written at the tail as one event. */
static inline void er_commit(struct er_domain *d, unsigned len) {
  d->tail += len;
  d->written++;
  /* WRITTEN before TAIL: a reader that loads TAIL (acquire) then WRITTEN
   * gets a count that covers every event up to that tail. */
  er_store_rlx(&d->hdr[ER_RING_WRITTEN], d->written);
  /* Publishes the event's words; pairs with the reader's acquire load of
   * ring_tail. */
  er_store_rel(&d->hdr[ER_RING_TAIL], d->tail);
}

/* The header's user bit: whose numbering `id` is in. */
enum er_origin {
  ER_FROM_RUNTIME = 0, /* phases, counters, lifecycle kinds */
  ER_FROM_USER = 1     /* registered user events (eventring_register()) */
};

/* Writes one event of `n` payload words in the calling thread's ring,
 * when `when` says so (internal.h).  Inlined so that each entry point is
 * compiled for its own payload size. */
static inline __attribute__((always_inline)) void
er_emit(enum er_when when, enum er_origin origin, unsigned type, unsigned id,
        const uint64_t *payload, unsigned n) {
  struct er_domain *d = er_enter(when);
  if (!d) return;
  unsigned len = 2 + n;
  uint64_t *ev = er_reserve(d, len);
  if (ER_UNLIKELY(!ev)) {
    er_leave(d);
    return;
  }
  er_store_rlx(&ev[0], ER_HDR(len, origin, type, id));
  er_store_rlx(&ev[1], er_stamp(d));
  for (unsigned i = 0; i < n; i++) er_store_rlx(&ev[2 + i], payload[i]);
  er_commit(d, len);
  er_leave(d);
}

/* A lifecycle event of a control operation, whose caller holds
 * er_st.lock: written even while paused. */
static inline void er_emit_lifecycle(int kind, uint64_t data) {
  er_emit(ER_EVEN_PAUSED, ER_FROM_RUNTIME, ER_EV_LIFECYCLE, (unsigned)kind,
          &data, 1);
}

#endif /* EVENTRING_WRITER_H */
