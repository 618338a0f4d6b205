/* clock.h -- the timestamps of events, inlined into every probe.
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
#ifndef EVENTRING_CLOCK_H
#define EVENTRING_CLOCK_H

#include <time.h>

#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define ER_HAVE_TSC 1
#endif

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

#endif /* EVENTRING_CLOCK_H */
