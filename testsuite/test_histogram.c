/* Tests the latency histogram (tools/analysis/histogram.c): exact count, min, max, mean and stddev; percentiles of known distributions within the documented relative error. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "testlib.h"

/* A unit test of the tool's own object: compiled in. */
#include "../tools/analysis/histogram.c"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The nearest-rank percentile of sorted values v[0..n-1]: rank
 * ceil(p / 100 * n), computed with integers for the p used here. */
static uint64_t exact_percentile(const uint64_t *v, size_t n, double p) {
  /* p * 10000 is an integer for every p of the report (99.99 included). */
  uint64_t p4 = (uint64_t)(p * 10000 + 0.5);
  uint64_t k = (p4 * n + 1000000 - 1) / 1000000;
  if (k < 1) k = 1;
  if (k > n) k = n;
  return v[k - 1];
}

static const double ps[] = {0.01, 1,  10,   25,    50,    75, 90,
                            99,   99.9, 99.99, 99.999, 100};

/* Records v[0..n-1] (in the given order) and checks every statistic. */
static void check_distribution(const char *what, uint64_t *v, size_t n) {
  struct histogram *h = hist_create();
  ck_assert_ptr_nonnull(h);
  long double sum = 0;
  for (size_t i = 0; i < n; i++) {
    hist_record(h, v[i]);
    sum += v[i];
  }
  qsort(v, n, sizeof *v, cmp_u64);
  ck_assert_uint_eq(hist_count(h), n);
  ck_assert_uint_eq(hist_min(h), v[0]);
  ck_assert_uint_eq(hist_max(h), v[n - 1]);
  long double mean = sum / n, var = 0;
  for (size_t i = 0; i < n; i++) var += (v[i] - mean) * (v[i] - mean);
  var /= n;
  /* The square root without libm: Newton's iteration from above. */
  long double r = var > 1 ? var : 1;
  for (;;) {
    long double next = 0.5L * (r + var / r);
    if (!(next < r)) break;
    r = next;
  }
  double sd = var > 0 ? (double)r : 0;
  ck_assert_msg(fabsl(hist_mean(h) - mean) <= 1e-9L * mean + 1e-9L,
                "%s: mean %.6f, expected %.6Lf", what, hist_mean(h), mean);
  ck_assert_msg(fabsl(hist_stddev(h) - (long double)sd) <= 1e-6L * sd + 1e-6L,
                "%s: stddev %.6f, expected %.6f", what, hist_stddev(h), sd);
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    uint64_t want = exact_percentile(v, n, ps[i]);
    uint64_t got = hist_percentile(h, ps[i]);
    double err = got > want ? (double)(got - want) : (double)(want - got);
    ck_assert_msg(err <= HIST_RELATIVE_ERROR * (double)want,
                  "%s: p%g = %" PRIu64 ", exact %" PRIu64
                  " (relative error %.3g > %.3g)",
                  what, ps[i], got, want, err / (double)want,
                  HIST_RELATIVE_ERROR);
    if (want < 2048) ck_assert_uint_eq(got, want); /* exact there */
  }
  ck_assert_uint_eq(hist_percentile(h, 100), v[n - 1]);
  hist_free(h);
}

/* A small xorshift generator: the same numbers on every run. */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
  return er_xorshift(&rng_state);
}

START_TEST(test_empty) {
  struct histogram *h = hist_create();
  ck_assert_ptr_nonnull(h);
  ck_assert_uint_eq(hist_count(h), 0);
  ck_assert_uint_eq(hist_min(h), 0);
  ck_assert_uint_eq(hist_max(h), 0);
  ck_assert_uint_eq(hist_percentile(h, 50), 0);
  ck_assert(hist_mean(h) == 0 && hist_stddev(h) == 0);
  hist_free(h);
}
END_TEST

START_TEST(test_single_and_constant) {
  uint64_t one[1] = {123456789};
  check_distribution("single", one, 1);
  uint64_t *v = malloc(1000 * sizeof *v);
  for (int i = 0; i < 1000; i++) v[i] = 777;
  check_distribution("constant", v, 1000);
  free(v);
}
END_TEST

/* 1 .. 10000 us (in ns), shuffled, plus outliers of hours. */
START_TEST(test_uniform_with_outliers) {
  size_t n = 10000 + 3;
  uint64_t *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < 10000; i++) v[i] = (i + 1) * 1000;
  er_shuffle(v, 10000, &rng_state);
  v[10000] = 1;                        /* 1 ns */
  v[10001] = UINT64_C(3600000000000);  /* an hour */
  v[10002] = UINT64_C(36000000000000); /* ten hours */
  check_distribution("uniform+outliers", v, n);
  free(v);
}
END_TEST

/* Every value below 2^20 once: the exact range and many bucket edges. */
START_TEST(test_dense_small) {
  size_t n = 1 << 20;
  uint64_t *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = i;
  check_distribution("dense", v, n);
  free(v);
}
END_TEST

/* Log-uniform over 1 ns .. 2^62 ns: every power of two is used. */
START_TEST(test_log_uniform) {
  size_t n = 200000;
  uint64_t *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) {
    unsigned e = (unsigned)(rnd() % 62);
    v[i] = (UINT64_C(1) << e) + rnd() % (UINT64_C(1) << e);
  }
  check_distribution("log-uniform", v, n);
  free(v);
}
END_TEST

/* Values at the edges of buckets and of the type. */
START_TEST(test_edges) {
  uint64_t v[] = {0,
                  2047,
                  2048,
                  2049,
                  4095,
                  4096,
                  UINT64_C(1) << 40,
                  (UINT64_C(1) << 40) - 1,
                  (UINT64_C(1) << 40) + 1,
                  UINT64_MAX,
                  UINT64_MAX - 1,
                  UINT64_C(1) << 63};
  check_distribution("edges", v, sizeof v / sizeof v[0]);
}
END_TEST

/* hist_add: two halves added up answer as one histogram of every value
 * does (the same buckets; mean and deviation combined exactly). */
START_TEST(test_add) {
  struct histogram *all = hist_create(), *a = hist_create(),
                   *b = hist_create(), *none = hist_create();
  ck_assert(all && a && b && none);
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 20000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    uint64_t v = x % 5000000 + (i % 3 ? 0 : 90000000);
    hist_record(all, v);
    hist_record(i % 4 ? a : b, v);
  }
  hist_add(a, none);
  hist_add(none, b);
  hist_add(a, b);
  ck_assert_uint_eq(hist_count(a), hist_count(all));
  ck_assert_uint_eq(hist_min(a), hist_min(all));
  ck_assert_uint_eq(hist_max(a), hist_max(all));
  ck_assert_uint_eq(hist_count(none), hist_count(b));
  ck_assert_uint_eq(hist_percentile(none, 50), hist_percentile(b, 50));
  ck_assert(fabs(hist_mean(a) - hist_mean(all)) < 1e-6 * hist_mean(all));
  ck_assert(fabs(hist_stddev(a) - hist_stddev(all)) <
            1e-6 * hist_stddev(all));
  static const double ps[] = {1, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
    ck_assert_uint_eq(hist_percentile(a, ps[i]), hist_percentile(all, ps[i]));
  hist_free(all);
  hist_free(a);
  hist_free(b);
  hist_free(none);
}
END_TEST

/* hist_count_below is exact at powers of two and below 2048 (the bins
 * of the bar charts), whatever the values around the bound. */
START_TEST(test_count_below) {
  struct histogram *h = hist_create();
  ck_assert_ptr_nonnull(h);
  ck_assert_uint_eq(hist_count_below(h, 1000), 0);
  uint64_t rng = 12345, *v = malloc(20000 * sizeof *v);
  ck_assert_ptr_nonnull(v);
  for (int i = 0; i < 20000; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    /* Values within a few units of powers of two, and anywhere. */
    unsigned e = (unsigned)(rng >> 58) % 40;
    uint64_t base = UINT64_C(1) << e;
    int64_t off = (int64_t)((rng >> 20) % 7) - 3;
    if (base < 4) off = 0;
    v[i] = i % 2 ? base + (uint64_t)off : (rng >> 24);
    hist_record(h, v[i]);
  }
  for (unsigned e = 0; e < 63; e++) {
    uint64_t bound = UINT64_C(1) << e, want = 0;
    for (int i = 0; i < 20000; i++) want += v[i] < bound;
    ck_assert_msg(hist_count_below(h, bound) == want,
                  "below 2^%u: %" PRIu64 ", exact %" PRIu64, e,
                  hist_count_below(h, bound), want);
  }
  for (uint64_t b = 0; b < 2048; b += 97) {
    uint64_t want = 0;
    for (int i = 0; i < 20000; i++) want += v[i] < b;
    ck_assert_uint_eq(hist_count_below(h, b), want);
  }
  /* Above the maximum: every value. */
  ck_assert_uint_eq(hist_count_below(h, UINT64_C(1) << 62), 20000);
  free(v);
  hist_free(h);
}
END_TEST

static TCase *tc_histogram(void) {
  TCase *tc = er_tcase("histogram");
  tcase_add_test(tc, test_empty);
  tcase_add_test(tc, test_single_and_constant);
  tcase_add_test(tc, test_uniform_with_outliers);
  tcase_add_test(tc, test_dense_small);
  tcase_add_test(tc, test_log_uniform);
  tcase_add_test(tc, test_edges);
  tcase_add_test(tc, test_add);
  tcase_add_test(tc, test_count_below);
  return tc;
}

ER_TEST_MAIN("histogram", tc_histogram)
