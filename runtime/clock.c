/* clock.c -- choosing the timestamp source and calibrating the TSC.
 *
 * See clock.h for how probes turn a TSC reading into CLOCK_MONOTONIC
 * nanoseconds.  This file decides whether they may (the kernel keeps
 * CLOCK_MONOTONIC with the TSC, and the TSC runs at a constant rate
 * through sleep states), measures the rate when tracing starts, and
 * measures it again whenever a probe finds the parameters older than
 * ER_RECAL_CYCLES.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "wallclock.h"

int er_clock_tsc;
uint64_t er_clock_gen;
struct er_clock_params er_clock_p[2];

/* Held (1) by the thread that recalibrates; probes that find it held go
 * on with the current parameters. */
static uint64_t recal_busy;

#ifdef ER_HAVE_TSC

/* 1 when the first line of `path` is `want` (without its newline). */
static int file_says(const char *path, const char *want) {
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  char line[64] = "";
  int ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  line[strcspn(line, "\n")] = 0;
  return ok && strcmp(line, want) == 0;
}

/* 1 when the CPU flags of /proc/cpuinfo list both flags. */
static int cpu_has(const char *flag1, const char *flag2) {
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (!f) return 0;
  char line[4096];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5) != 0) continue;
    char a[64], b[64];
    snprintf(a, sizeof a, " %s ", flag1);
    snprintf(b, sizeof b, " %s ", flag2);
    line[strcspn(line, "\n")] = ' ';
    found = strstr(line, a) && strstr(line, b);
    break;
  }
  fclose(f);
  return found;
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

/* Publishes a new set from two samples: the rate between them, anchored
 * at the second. */
static void publish(uint64_t tsc1, uint64_t ns1, uint64_t tsc2, uint64_t ns2) {
  if (tsc2 <= tsc1 || ns2 <= ns1) return;
  uint64_t mult =
      (uint64_t)(((unsigned __int128)(ns2 - ns1) << 32) / (tsc2 - tsc1));
  uint64_t g = er_load_rlx(&er_clock_gen) + 1;
  struct er_clock_params *p = &er_clock_p[g & 1];
  er_store_rlx(&p->tsc0, tsc2);
  er_store_rlx(&p->ns0, ns2);
  er_store_rlx(&p->mult, mult);
  /* Publishes the set; pairs with the probes' acquire load. */
  er_store_rel(&er_clock_gen, g);
}

void er_clock_init(void) {
  /* Once per process: a forked child keeps its parent's calibration (the
   * same TSC and clock), which matters because the child calls this from
   * its fork handler, where fopen() and malloc() may deadlock. */
  static int decided;
  if (decided) return;
  decided = 1;
  const char *force = secure_getenv("OCAML_RUNTIME_EVENTS_CLOCK");
  int use = !(force && strcmp(force, "monotonic") == 0) &&
            file_says("/sys/devices/system/clock" "source/clocksource0/"
                      "current_clocksource", "tsc") &&
            cpu_has("constant_tsc", "nonstop_tsc");
  if (use) {
    /* Two milliseconds give the first rate to a few parts in a million;
     * the first recalibration, a tenth of a second later, refines it. */
    uint64_t t1, n1, t2, n2;
    sample(&t1, &n1);
    do sample(&t2, &n2);
    while (n2 - n1 < 2000000);
    publish(t1, n1, t2, n2);
  }
  er_istore_rel(&er_clock_tsc, use);
}

void er_clock_after_fork(void) {
  /* The thread that held the recalibration, if one did, does not exist
   * in the child: left held, it would keep every later probe on this
   * slow path, converting with parameters that age for good. */
  er_store_rlx(&recal_busy, 0);
}

uint64_t er_clock_slow(uint64_t t) {
  if (er_cas(&recal_busy, 0, 1)) {
    (void)ER_HOOK(ER_HOOK_RECALIBRATING);
    uint64_t g = er_load_acq(&er_clock_gen);
    const struct er_clock_params *p = &er_clock_p[g & 1];
    uint64_t tsc0 = er_load_rlx(&p->tsc0), ns0 = er_load_rlx(&p->ns0);
    uint64_t t2, n2;
    sample(&t2, &n2);
    /* The rate over the interval just ended: it follows the kernel's own
     * adjustments of CLOCK_MONOTONIC (NTP). */
    publish(tsc0, ns0, t2, n2);
    er_wall_recalibrated();
    er_store_rel(&recal_busy, 0);
  }
  /* Convert `t` with the newest set, wherever it lies relative to it. */
  uint64_t g = er_load_acq(&er_clock_gen);
  const struct er_clock_params *p = &er_clock_p[g & 1];
  uint64_t tsc0 = er_load_rlx(&p->tsc0), ns0 = er_load_rlx(&p->ns0);
  uint64_t mult = er_load_rlx(&p->mult);
  if (t >= tsc0)
    return ns0 + (uint64_t)(((unsigned __int128)(t - tsc0) * mult) >> 32);
  return ns0 - (uint64_t)(((unsigned __int128)(tsc0 - t) * mult) >> 32);
}

#else /* no TSC: always clock_gettime() */

void er_clock_init(void) { er_istore_rel(&er_clock_tsc, 0); }

void er_clock_after_fork(void) {}

uint64_t er_clock_slow(uint64_t t) {
  (void)t;
  return er_clock_monotonic();
}

#endif
