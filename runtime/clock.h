/* clock.h -- the timestamps of events, inlined into every probe.
 *
 * Timestamps are nanoseconds of CLOCK_MONOTONIC (the format's contract).
 * Where the kernel itself keeps that clock with the TSC (clocksource
 * "tsc", invariant TSC), they are computed from the TSC once it is
 * calibrated:
 *
 *   ns = ns0 + ((tsc - tsc0) * mult) >> 32
 *
 * with (tsc0, ns0, mult) a "set" of parameters measured against
 * clock_gettime().  OCAML_RUNTIME_EVENTS_CLOCK=monotonic, read when
 * tracing first starts in the process, forces clock_gettime() for good.
 *
 * Starting without waiting.  er_clock_init() (eventring_start()) only
 * chooses the source (CPUID and one sysfs file: tens of microseconds,
 * most of it a VM's exits), takes one (tsc, ns) sample and sets
 * er_clock_pending.  Meanwhile timestamps are clock_gettime()'s.  The
 * first probe that finds ER_CAL_WINDOW_NS (2 ms) passed since that sample
 * takes a second one, publishes the first set (the rate between the two
 * samples, anchored at the second) and clears er_clock_pending; from
 * then on probes use the TSC.  No thread is involved: a process that
 * stops probing within 2 ms of starting stays on clock_gettime().
 *
 * Recalibrating.  A set is used for ER_RECAL_CYCLES (~0.1 s); the first
 * probe that finds it older takes a new sample and publishes a set with
 * the rate over the interval just ended, so the timestamps follow the
 * kernel's adjustments of CLOCK_MONOTONIC (NTP) and the error stays the
 * drift of a tenth of a second.  Publishing is serialized (recal_busy,
 * clock.c), and a recalibration publishes only after checking, with a
 * fresh TSC reading, that the current set is more than ER_RECAL_CYCLES
 * old; a sample is taken after that check, so each set's tsc0 exceeds the
 * previous set's by more than R = ER_RECAL_CYCLES.
 *
 * Reading a set with one acquire and no re-check.  The sets alternate
 * between two slots, er_clock_p[]; er_clock_cur holds the address of the
 * newest (0: no set, use clock_gettime()), which is the probe's one test
 * of "use the TSC".  A publish writes its slot's ns0 and mult, then tsc0
 * with release, then er_clock_cur.  The probe loads er_clock_cur, then
 * the slot's tsc0 with acquire, then ns0 and mult, then reads the TSC as
 * t, and converts only when t - tsc0 <= R (unsigned: t >= tsc0 too);
 * otherwise it takes the slow path, er_clock_slow().  A slot's words are
 * rewritten only by the publish after next, so at a TSC time W greater
 * than (old tsc0) + 2R.  Whatever mix of words a probe reads:
 *   - all from one set: the set is whole (old ones go to the slow path);
 *   - tsc0 from the new set: its acquire, pairing with the release store
 *     of tsc0, makes ns0 and mult at least as new (newer again would be
 *     from a later rewrite: the next case, with that tsc0);
 *   - tsc0 from the old set and ns0 or mult from the new: that load ran
 *     after W, and t is read after it (program order, kept by a compiler
 *     barrier; the CPU may issue rdtsc early only within its instruction
 *     window, nanoseconds against R's tenth of a second, and an interrupt
 *     or signal handler between them only makes t later), so t - tsc0 >
 *     2R - (nanoseconds) > R: the slow path, never a torn conversion.
 * Loading er_clock_cur itself needs no acquire: a stale or early address
 * lands in one of the cases above.  The TSC is one clock on all CPUs (the
 * kernel would not keep CLOCK_MONOTONIC with it otherwise), so the
 * argument holds across threads.  The slow path uses the same test, and
 * falls back to clock_gettime() when it cannot find a whole set.
 *
 * Never backwards.  Each domain clamps its own timestamps (er_stamp in
 * writer.h: an event's stamp is the larger of er_now() and the domain's
 * previous stamp), so within a ring they never decrease, whatever the
 * sources say.  The sources differ only slightly: a recalibration may
 * step the mapping by a few nanoseconds, and at the switch from
 * clock_gettime() to the TSC the first set is anchored at a sample of
 * CLOCK_MONOTONIC, so the first TSC stamps differ from clock_gettime()
 * by the sample's error (tens of nanoseconds), which the clamp absorbs.
 * testsuite/test_hook_clock_switch.c forces a switch ten seconds out of
 * step between two events of one domain.
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

/* Sets have mult below this (clock.c, rate()), so that er_now_fast()
 * multiplies d <= ER_RECAL_CYCLES by it in 64 bits. */
#define ER_MULT_LIMIT (UINT64_C(1) << 36)
_Static_assert(ER_RECAL_CYCLES <= UINT64_C(1) << 28,
               "d * mult must fit in 64 bits");

/* How long the first calibration measures the rate: two milliseconds
 * give it to a few parts in a million; the first recalibration, a tenth
 * of a second later, refines it. */
#define ER_CAL_WINDOW_NS UINT64_C(2000000)

/* With test hooks: how far behind CLOCK_MONOTONIC the first set is put
 * when ER_HOOK_CLOCK_SWITCH asks for a skewed calibration; far more than
 * a test thread can be held up between two of its lines, so the skew
 * shows for certain. */
#define ER_CLOCK_TEST_SKEW_NS UINT64_C(10000000000)

/* With test hooks: ER_HOOK_CLOCK_SWITCH's answer that leaves the switch
 * pending, for a later probe, so that a test decides which thread makes
 * it whatever the time. */
#define ER_CLOCK_TEST_LATER 2

struct er_clock_params {
  uint64_t tsc0, ns0, mult; /* atomic words: read by probes, written by
                               the publishing thread (see above) */
};

/* 1 when the TSC was chosen (timestamps come from it once calibrated);
 * for tests and benchmarks, probes do not read it. */
extern ER_HIDDEN int er_clock_tsc;
extern ER_HIDDEN int er_clock_pending;        /* 1: first set not yet taken */
extern ER_HIDDEN uint64_t er_clock_cur;       /* &er_clock_p[i], or 0 */
extern ER_HIDDEN uint64_t er_clock_gen;       /* sets published so far */
extern ER_HIDDEN struct er_clock_params er_clock_p[2];

/* Chooses the clock (the TSC when it is invariant and the kernel's
 * clocksource, else clock_gettime()) and takes the calibration's first
 * sample, once per process (a forked child keeps its parent's); called
 * at every start, under er_st.lock, before the world opens. */
ER_HIDDEN void er_clock_init(void);
/* In a forked child's fork handler: gives up a recalibration the parent's
 * other threads were making.  Async-signal-safe. */
ER_HIDDEN void er_clock_after_fork(void);
/* Returns `tsc` in nanoseconds, converted with the newest published
 * set, which it first replaces when it is older than ER_RECAL_CYCLES
 * and no other thread is recalibrating.  No lock. */
ER_HIDDEN uint64_t er_clock_slow(uint64_t tsc);
/* What er_now() does when er_now_fast() gives up: clock_gettime() while
 * no set is published (which takes the
 * calibration's second sample when due), else a fresh TSC reading
 * converted by er_clock_slow(), which recalibrates an old set. */
ER_HIDDEN uint64_t er_now_slow(void);

/* CLOCK_MONOTONIC in nanoseconds; async-signal-safe. */
static inline uint64_t er_clock_monotonic(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The usual case of er_now(), with no call: stores the timestamp in *out
 * and returns 1, or returns 0 when er_now() must be called instead (no
 * set yet, the TSC not used, or the set is older than ER_RECAL_CYCLES).
 * A probe's fast path uses it so that it makes no call at all and needs
 * no register saved (writer.h, er_emit_fast()). */
static inline __attribute__((always_inline)) int er_now_fast(uint64_t *out) {
#ifdef ER_HAVE_TSC
  /* No ordering needed on this load: see "Reading a set" above. */
  const struct er_clock_params *p =
      (const struct er_clock_params *)(uintptr_t)er_load_rlx(&er_clock_cur);
  if (ER_UNLIKELY(p == NULL)) return 0;
  /* Pairs with the release store of tsc0 in clock.c's publish(): a new
   * tsc0 comes with its ns0 and mult. */
  uint64_t tsc0 = er_load_acq(&p->tsc0);
  uint64_t ns0 = er_load_rlx(&p->ns0), mult = er_load_rlx(&p->mult);
  /* The TSC is read after the words, which the argument above needs. */
  er_compiler_barrier();
  uint64_t d = __rdtsc() - tsc0;
  if (ER_UNLIKELY(d > ER_RECAL_CYCLES)) return 0;
  /* d <= 2^28 and mult < 2^36 (ER_MULT_LIMIT): the product fits in 64
   * bits, one multiply and one shift, not a 128-bit product. */
  *out = ns0 + ((d * mult) >> 32);
  return 1;
#else
  (void)out;
  return 0;
#endif
}

/* A timestamp: er_now_fast()'s, or, when it gives up, er_now_slow()'s,
 * out of line so that its calls cost the probe no stack frame. */
static inline uint64_t er_now(void) {
  uint64_t t;
  if (ER_LIKELY(er_now_fast(&t))) return t;
  return er_now_slow();
}

#endif /* EVENTRING_CLOCK_H */
