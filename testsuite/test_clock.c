/* Timestamps from the TSC agree with CLOCK_MONOTONIC within 10 us across the switch to the TSC and recalibrations, OCAML_RUNTIME_EVENTS_CLOCK=monotonic keeps clock_gettime(), and timestamps never go back in a ring. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "ringfile.h"
#include "writer.h"

/* How far a timestamp may lie outside the clock_gettime() readings taken
 * just before and just after it (the bound). */
#define TOLERANCE_NS 10000

static double seconds(void) { return er_clock_monotonic() / 1e9; }

static void start_in_tmpdir(void) {
  er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
}

START_TEST(test_tsc_agrees_with_monotonic) {
  start_in_tmpdir();
  if (!er_clock_tsc) {
    ER_SKIP("timestamps do not come from the TSC on this machine");
    return;
  }
  /* Long enough for a dozen recalibrations (one per 2^28 cycles). */
  double end = seconds() + 2.0;
  uint64_t worst = 0, samples = 0, gen0 = er_clock_gen;
  while (seconds() < end) {
    uint64_t a = er_clock_monotonic();
    uint64_t x = er_now();
    uint64_t b = er_clock_monotonic();
    uint64_t off = x < a ? a - x : x > b ? x - b : 0;
    if (off > worst) worst = off;
    ck_assert_msg(off <= TOLERANCE_NS,
                  "TSC time %llu outside [%llu, %llu] by %llu ns",
                  (unsigned long long)x, (unsigned long long)a,
                  (unsigned long long)b, (unsigned long long)off);
    samples++;
  }
  printf("clock: %llu samples, worst distance %llu ns, %llu recalibrations\n",
         (unsigned long long)samples, (unsigned long long)worst,
         (unsigned long long)(er_clock_gen - gen0));
  /* The first probe past the calibration window switched to the TSC, and
   * later ones recalibrated. */
  ck_assert_uint_ne(er_clock_cur, 0);
  ck_assert_uint_gt(er_clock_gen - gen0, 5);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

START_TEST(test_monotonic_forced) {
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_CLOCK", "monotonic", 1), 0);
  start_in_tmpdir();
  ck_assert_int_eq(er_clock_tsc, 0);
  ck_assert_int_eq(er_clock_pending, 0);
  /* Past the calibration window a TSC clock would have switched by now;
   * this one must not. */
  struct timespec ts = {0, (long)(ER_CAL_WINDOW_NS + 1000000)};
  while (nanosleep(&ts, &ts) != 0) continue;
  for (int i = 0; i < 3; i++) {
    uint64_t a = er_clock_monotonic();
    uint64_t x = er_now();
    uint64_t b = er_clock_monotonic();
    ck_assert(a <= x && x <= b);
  }
  ck_assert_uint_eq(er_clock_cur, 0);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

#define NTHREADS 3
#define PER_THREAD 200000

static int int_id;

static void *writer(void *arg) {
  (void)arg;
  for (int i = 0; i < PER_THREAD; i++) {
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_write_int(int_id, i);
    eventring_end(EVENTRING_PHASE_MINOR);
  }
  return NULL;
}

START_TEST(test_never_backwards_in_a_ring) {
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  /* Rings large enough to keep every event: a full history to check. */
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "e=21,d=4", 1), 0);
  int_id = eventring_register("clock.i", EVENTRING_TYPE_INT);
  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++)
    ck_assert_int_eq(pthread_create(&th[t], NULL, writer, NULL), 0);
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  size_t checked = 0;
  for (uint64_t d = 0; d < f.max_domains; d++) {
    const struct rf_ring *r = &f.rings[d];
    ck_assert_uint_eq(r->evicted, 0);
    for (size_t i = 1; i < r->nevents; i++) {
      ck_assert_msg(r->events[i].ts >= r->events[i - 1].ts,
                    "domain %llu: event %zu at %llu after %llu",
                    (unsigned long long)d, i,
                    (unsigned long long)r->events[i].ts,
                    (unsigned long long)r->events[i - 1].ts);
      checked++;
    }
  }
  ck_assert_uint_ge(checked, (size_t)NTHREADS * PER_THREAD * 3);
  rf_close(&f);
  free(path);
}
END_TEST

static TCase *tc_clock(void) {
  TCase *tc = er_tcase("clock");
  tcase_add_test(tc, test_tsc_agrees_with_monotonic);
  tcase_add_test(tc, test_monotonic_forced);
  tcase_add_test(tc, test_never_backwards_in_a_ring);
  return tc;
}

ER_TEST_MAIN("clock", tc_clock)
