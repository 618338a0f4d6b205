/* clock.c -- choosing the timestamp source and calibrating the TSC.
 *
 * See clock.h for how probes turn a TSC reading into CLOCK_MONOTONIC
 * nanoseconds.  This file decides whether they may (the kernel keeps
 * CLOCK_MONOTONIC with the TSC, and the TSC runs at a constant rate
 * through sleep states), takes the first sample of the calibration when
 * tracing starts, switches probes to the TSC once a probe finds the
 * calibration window passed, and measures the rate again whenever a
 * probe finds the parameters older than ER_RECAL_CYCLES.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "wallclock.h"

int er_clock_tsc;
int er_clock_pending;
uint64_t er_clock_cur;
uint64_t er_clock_gen;
struct er_clock_params er_clock_p[2];

/* Held (1) by the thread that publishes a set (the first one, or a
 * recalibration); probes that find it held go on without publishing. */
static uint64_t recal_busy;

/* The first sample of the pending calibration, taken by er_clock_init()
 * before er_clock_pending is set with release; read only after an
 * acquire load of er_clock_pending found it set. */
static uint64_t cal_tsc1, cal_ns1;

#ifdef ER_HAVE_TSC

#include <cpuid.h>

/* 1 when the file `path` holds `want` and a newline.  Plain open() and
 * read(): no stdio buffer to allocate on the way to the first event. */
static int file_says(const char *path, const char *want) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[64];
  ssize_t n;
  do n = read(fd, buf, sizeof buf - 1);
  while (n < 0 && errno == EINTR);
  close(fd);
  size_t len = strlen(want);
  return n == (ssize_t)len + 1 && memcmp(buf, want, len) == 0 &&
         buf[len] == '\n';
}

/* 1 when the CPU says its TSC is invariant (CPUID 0x80000007, EDX bit
 * 8): the bit from which the kernel sets both constant_tsc and
 * nonstop_tsc.  Two CPUID instructions, where reading /proc/cpuinfo for
 * those flags took ten times as long. */
static int invariant_tsc(void) {
  unsigned a, b, c, d;
  return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d >> 8 & 1);
}

/* A (tsc, ns) pair taken at one instant: the clock read between two TSC
 * reads, matched to their midpoint. */
static void sample(uint64_t *tsc, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 5; i++) {
    uint64_t a = __rdtsc();
    uint64_t n = er_clock_monotonic();
    uint64_t b = __rdtsc();
    if (b - a < best) {
      best = b - a;
      *tsc = a + (b - a) / 2;
      *ns = n;
    }
  }
}

/* The rate between two samples as a 32.32 fixed-point number of
 * nanoseconds per cycle; 0 when the samples do not make one. */
static uint64_t rate(uint64_t tsc1, uint64_t ns1, uint64_t tsc2,
                     uint64_t ns2) {
  if (tsc2 <= tsc1 || ns2 <= ns1) return 0;
  unsigned __int128 m = ((unsigned __int128)(ns2 - ns1) << 32) / (tsc2 - tsc1);
  /* Below ER_MULT_LIMIT, or no set (clock_gettime() stays): a TSC of
   * under 62.5 MHz, which no clocksource "tsc" runs at. */
  return m < ER_MULT_LIMIT ? (uint64_t)m : 0;
}

/* Publishes a set (clock.h, "Reading a set").  Called with recal_busy
 * held, so publishes never overlap; the slot written is the one the
 * publish before last filled. */
static void publish(uint64_t tsc0, uint64_t ns0, uint64_t mult) {
  uint64_t g = er_load_rlx(&er_clock_gen) + 1;
  struct er_clock_params *p = &er_clock_p[g & 1];
  er_store_rlx(&p->ns0, ns0);
  er_store_rlx(&p->mult, mult);
  /* Last, with release: pairs with the acquire load of tsc0 in er_now()
   * and the slow path, which then see this ns0 and mult. */
  er_store_rel(&p->tsc0, tsc0);
  er_store_rlx(&er_clock_gen, g);
  /* Makes the set current.  Probes load it relaxed: the tsc0 acquire is
   * what orders their reads of the set. */
  er_store_rel(&er_clock_cur, (uint64_t)(uintptr_t)p);
}

/* The current set's tsc0 and ns0, read under recal_busy (no publish can
 * run meanwhile); 0 when there is no set. */
static const struct er_clock_params *current_set(uint64_t *tsc0,
                                                 uint64_t *ns0) {
  const struct er_clock_params *p =
      (const struct er_clock_params *)(uintptr_t)er_load_acq(&er_clock_cur);
  if (p) {
    *tsc0 = er_load_acq(&p->tsc0);
    *ns0 = er_load_rlx(&p->ns0);
  }
  return p;
}

void er_clock_init(void) {
  /* Once per process: a forked child keeps its parent's choice and
   * calibration, pending or done (the same TSC and clock), which matters
   * because the child calls this from its fork handler, where fopen() and
   * malloc() may deadlock. */
  static int decided;
  if (decided) return;
  decided = 1;
  const char *force = secure_getenv("OCAML_RUNTIME_EVENTS_CLOCK");
  int use = !(force && strcmp(force, "monotonic") == 0) &&
            invariant_tsc() &&
            file_says("/sys/devices/system/clock" "source/clocksource0/"
                      "current_clocksource", "tsc");
  if (use) {
    /* The calibration's first sample; the first probe at least
     * ER_CAL_WINDOW_NS later takes the second (er_clock_pending_now). */
    sample(&cal_tsc1, &cal_ns1);
    /* Pairs with the acquire load in er_clock_pending_now(): the sample
     * is there. */
    er_istore_rel(&er_clock_pending, 1);
  }
  er_istore_rlx(&er_clock_tsc, use);
}

void er_clock_after_fork(void) {
  /* The thread that held the publishing, if one did, does not exist in
   * the child: left held, it would keep the child on clock_gettime() for
   * good (a pending calibration) or on the slow path with parameters that
   * age for good (a recalibration).  A slot it was rewriting is the one
   * the child's next publish rewrites whole. */
  er_store_rlx(&recal_busy, 0);
}

static uint64_t er_clock_pending_now(void) {
  uint64_t n = er_clock_monotonic();
  /* Pairs with the release store in er_clock_init(): cal_* are set. */
  if (!er_iload_acq(&er_clock_pending) || n - cal_ns1 < ER_CAL_WINDOW_NS)
    return n;
  if (er_cas(&recal_busy, 0, 1)) {
    /* Another thread may have switched between our load and the CAS. */
    /* With test hooks: holds the switch, skews it, or leaves it to a
     * later probe (clock.h). */
    int hook = er_iload_rlx(&er_clock_pending)
                   ? ER_HOOK(ER_HOOK_CLOCK_SWITCH)
                   : ER_CLOCK_TEST_LATER;
    if (hook != ER_CLOCK_TEST_LATER) {
      uint64_t skew = hook ? ER_CLOCK_TEST_SKEW_NS : 0;
      uint64_t t2, n2;
      sample(&t2, &n2);
      uint64_t mult = rate(cal_tsc1, cal_ns1, t2, n2);
      /* A clock that did not advance makes no rate: stay on
       * clock_gettime() rather than guess. */
      if (mult) publish(t2, n2 - skew, mult);
      er_istore_rlx(&er_clock_pending, 0);
    }
    er_store_rel(&recal_busy, 0);
  }
  /* This event keeps the clock_gettime() reading taken before the
   * switch; the domain's next one, from the TSC, is clamped to it if
   * need be (er_stamp). */
  return n;
}

uint64_t er_now_slow(void) {
  if (!er_load_rlx(&er_clock_cur)) return er_clock_pending_now();
  return er_clock_slow(__rdtsc());
}

uint64_t er_clock_slow(uint64_t t) {
  if (er_cas(&recal_busy, 0, 1)) {
    (void)ER_HOOK(ER_HOOK_RECALIBRATING);
    uint64_t tsc0, ns0;
    /* Only a set older than ER_RECAL_CYCLES is replaced (a probe also
     * comes here with a TSC reading from before the newest set, or after
     * reading a slot being rewritten): this keeps publishes more than
     * ER_RECAL_CYCLES apart, which clock.h's argument needs. */
    if (current_set(&tsc0, &ns0) && __rdtsc() - tsc0 > ER_RECAL_CYCLES) {
      uint64_t t2, n2;
      sample(&t2, &n2);
      /* The rate over the interval just ended: it follows the kernel's
       * own adjustments of CLOCK_MONOTONIC (NTP). */
      uint64_t mult = rate(tsc0, ns0, t2, n2);
      if (mult) {
        publish(t2, n2, mult);
        er_wall_recalibrated();
      }
    }
    er_store_rel(&recal_busy, 0);
  }
  /* Convert `t` with the newest set, wherever it lies relative to it,
   * if the set read is whole: the probe's test (clock.h) with a fresh
   * TSC reading. */
  const struct er_clock_params *p =
      (const struct er_clock_params *)(uintptr_t)er_load_rlx(&er_clock_cur);
  if (p) {
    /* Pairs with the release store of tsc0 in publish(). */
    uint64_t tsc0 = er_load_acq(&p->tsc0);
    uint64_t ns0 = er_load_rlx(&p->ns0), mult = er_load_rlx(&p->mult);
    er_compiler_barrier();
    if (__rdtsc() - tsc0 <= ER_RECAL_CYCLES) {
      if (t >= tsc0)
        return ns0 + (uint64_t)(((unsigned __int128)(t - tsc0) * mult) >> 32);
      return ns0 - (uint64_t)(((unsigned __int128)(tsc0 - t) * mult) >> 32);
    }
  }
  /* Another thread is recalibrating (or no set could be read whole):
   * the clock itself is always right. */
  return er_clock_monotonic();
}

#else /* no TSC: always clock_gettime() */

void er_clock_init(void) { er_istore_rlx(&er_clock_tsc, 0); }

void er_clock_after_fork(void) {}

uint64_t er_now_slow(void) { return er_clock_monotonic(); }

uint64_t er_clock_slow(uint64_t t) {
  (void)t;
  return er_clock_monotonic();
}

#endif
