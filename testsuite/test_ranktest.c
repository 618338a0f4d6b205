/* Tests the Mann-Whitney rank test of `eventring diff` (tools/analysis/ranktest.c): the exact distribution against hand counts and the published table's critical value, U and the tie-corrected normal approximation against a hand computation, the normal tail against known quantiles, and samples that do or do not differ; and its quantile test (Fisher's exact test above the pooled quantile) against values counted by hand, on a tail the rank test cannot see; the quantile test against a scaled B and Welch's test of the means, by hand. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "testlib.h"

/* A unit test of the tool's own object: compiled in. */
#include "../tools/analysis/ranktest.c"

static void assert_close(const char *what, double got, double want,
                         double rel) {
  ck_assert_msg(fabs(got - want) <= rel * fabs(want) + 1e-300,
                "%s: %.17g, expected %.17g", what, got, want);
}

/* The exact distribution.  With nA = nB = 3 and no ties, the 20 ways of
 * choosing A's ranks out of 6 give U = 0 once ({1,2,3}), U = 1 once
 * ({1,2,4}), U = 2 twice ({1,2,5}, {1,3,4}): P(U <= 0) = 1/20, P(U <= 1)
 * = 2/20, P(U <= 2) = 4/20.  With 4 and 4, P(U = 0) = 1/70.  The tables
 * of critical values give 23 for nA = nB = 10 at 5 % two-sided: P(U <=
 * 23) <= 0.025 < P(U <= 24); the values themselves (0.021629, 0.026213)
 * and those for 5 and 7 and for 25 and 25 were counted by the recurrence
 * f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u), independently of
 * the product that ranktest.c uses. */
START_TEST(test_exact_distribution) {
  assert_close("3,3,0", rank_exact_cdf(3, 3, 0), 1.0 / 20, 1e-12);
  assert_close("3,3,1", rank_exact_cdf(3, 3, 1), 2.0 / 20, 1e-12);
  assert_close("3,3,2", rank_exact_cdf(3, 3, 2), 4.0 / 20, 1e-12);
  assert_close("3,3,9", rank_exact_cdf(3, 3, 9), 1, 1e-12);
  assert_close("4,4,0", rank_exact_cdf(4, 4, 0), 1.0 / 70, 1e-12);
  ck_assert(rank_exact_cdf(10, 10, 23) <= 0.025);
  ck_assert(rank_exact_cdf(10, 10, 24) > 0.025);
  assert_close("10,10,23", rank_exact_cdf(10, 10, 23), 0.02162852627248912,
               1e-12);
  assert_close("10,10,24", rank_exact_cdf(10, 10, 24), 0.026212951135551756,
               1e-12);
  assert_close("5,7,6", rank_exact_cdf(5, 7, 6), 0.036616161616161616, 1e-12);
  assert_close("25,25,200", rank_exact_cdf(25, 25, 200),
               0.014440635915570113, 1e-9);
  /* Out of range. */
  ck_assert(rank_exact_cdf(30, 30, 10) < 0);
  ck_assert(rank_exact_cdf(0, 3, 0) < 0);
}
END_TEST

/* Known quantiles and tails of the standard normal distribution. */
START_TEST(test_normal_tail) {
  assert_close("Q(0)", rank_normal_tail(0), 0.5, 1e-15);
  assert_close("Q(0.5)", rank_normal_tail(0.5), 0.3085375387259869, 1e-12);
  assert_close("Q(1.96)", rank_normal_tail(1.959963984540054), 0.025, 1e-12);
  assert_close("Q(2.576)", rank_normal_tail(2.5758293035489), 0.005, 1e-11);
  assert_close("Q(3)", rank_normal_tail(3), 0.0013498980316300957, 1e-12);
  assert_close("Q(4)", rank_normal_tail(4), 3.1671241833119965e-05, 1e-12);
  assert_close("Q(5)", rank_normal_tail(5), 2.866515718791946e-07, 1e-12);
  assert_close("Q(8)", rank_normal_tail(8), 6.220960574271819e-16, 1e-12);
  assert_close("Q(12)", rank_normal_tail(12), 1.776482112077702e-33, 1e-11);
  assert_close("Q(-1.96)", rank_normal_tail(-1.959963984540054), 0.975,
               1e-12);
}
END_TEST

static struct rank_result run(const uint64_t *av, const uint64_t *ac,
                              size_t an, const uint64_t *bv,
                              const uint64_t *bc, size_t bn) {
  struct rank_sample a = {av, ac, an}, b = {bv, bc, bn};
  struct rank_result r;
  ck_assert_int_eq(rank_test(&a, &b, &r), 0);
  return r;
}

/* Without ties and few values, p is exact: A = {1, 2, 3, 4} all below
 * B = {5, 6, 7, 8}: U = 0, p = 2/70; reversed, U = 16, same p. */
START_TEST(test_exact_p) {
  uint64_t lo[] = {1, 2, 3, 4}, hi[] = {5, 6, 7, 8}, one[] = {1, 1, 1, 1};
  struct rank_result r = run(lo, one, 4, hi, one, 4);
  ck_assert(r.exact);
  ck_assert_uint_eq(r.na, 4);
  ck_assert_uint_eq(r.nb, 4);
  assert_close("U", r.u + 1, 1, 1e-15);
  assert_close("p", r.p, 2.0 / 70, 1e-12);
  ck_assert(r.shift < 0); /* B larger: slower */
  r = run(hi, one, 4, lo, one, 4);
  assert_close("U reversed", r.u, 16, 1e-15);
  assert_close("p reversed", r.p, 2.0 / 70, 1e-12);
  ck_assert(r.shift > 0);
  /* Interleaved: A = {1, 3, 5, 7}, B = {2, 4, 6, 8}: U = 0+1+2+3 = 6 of
   * 16, p = 2 P(U <= 6) = 2 * 0.3429 (24 of the 70 arrangements). */
  uint64_t odd[] = {1, 3, 5, 7}, even[] = {2, 4, 6, 8};
  r = run(odd, one, 4, even, one, 4);
  assert_close("U interleaved", r.u, 6, 1e-15);
  assert_close("p interleaved", r.p, 2 * 24.0 / 70, 1e-12);
}
END_TEST

/* With ties, by hand: A = {1, 2, 2, 3}, B = {2, 3, 4, 4}.  Merged: 1 (A)
 * rank 1; 2 (A, A, B) ranks 2-4, midrank 3; 3 (A, B) ranks 5-6, 5.5; 4
 * (B, B) ranks 7-8, 7.5.  R_A = 1 + 3 + 3 + 5.5 = 12.5, U = 12.5 - 10 =
 * 2.5; ties sum(t^3 - t) = 24 + 6 + 6 = 36, N = 8, var = 16/12 (9 -
 * 36/56) = 11.142857, z = (2.5 - 8 + 0.5) / 3.338092 = -1.4978617, p =
 * 2 Q(1.4978617) = 0.13416918. */
START_TEST(test_ties_by_hand) {
  uint64_t av[] = {1, 2, 3}, ac[] = {1, 2, 1};
  uint64_t bv[] = {2, 3, 4}, bc[] = {1, 1, 2};
  struct rank_result r = run(av, ac, 3, bv, bc, 3);
  ck_assert(!r.exact);
  assert_close("U", r.u, 2.5, 1e-15);
  assert_close("z", r.z, -1.4978617237881953, 1e-9);
  assert_close("p", r.p, 0.13416918012812581, 1e-9);
}
END_TEST

/* Identical samples: p = 1; constant samples (zero variance): p = 1;
 * empty: an error with p = 1. */
START_TEST(test_degenerate) {
  uint64_t v[] = {10, 20, 30}, c[] = {5, 5, 5};
  struct rank_result r = run(v, c, 3, v, c, 3);
  assert_close("U", r.u, 112.5, 1e-15); /* 15 x 15 / 2 */
  ck_assert(r.p == 1);
  uint64_t k[] = {7}, kc[] = {100};
  r = run(k, kc, 1, k, kc, 1);
  ck_assert(r.p == 1);
  struct rank_sample a = {v, c, 3}, e = {NULL, NULL, 0};
  ck_assert_int_eq(rank_test(&a, &e, &r), -1);
  ck_assert(r.p == 1);
}
END_TEST

/* Large samples from a fixed generator: a copy of a sample with every
 * value moved by up to +-0.5 % (its order shuffled: the test sees only
 * values) is not told apart at 1 %; the same sample 10 % slower is, by
 * far. */
static uint64_t state = 88172645463325252u;
static uint64_t rnd(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* Sorts v[0..n-1] into distinct values and counts; returns how many. */
static size_t squeeze(uint64_t *v, uint64_t *c, size_t n) {
  qsort(v, n, sizeof *v, cmp_u64);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (m && v[m - 1] == v[i]) {
      c[m - 1]++;
    } else {
      v[m] = v[i];
      c[m++] = 1;
    }
  }
  return m;
}

START_TEST(test_noise_and_shift) {
  enum { N = 2000 };
  uint64_t *a = malloc(N * 8), *b = malloc(N * 8), *s = malloc(N * 8);
  uint64_t *ac = malloc(N * 8), *bc = malloc(N * 8), *sc = malloc(N * 8);
  ck_assert(a && b && s && ac && bc && sc);
  for (size_t i = 0; i < N; i++) {
    /* Around 1 ms, with a tail. */
    uint64_t v = 900000 + rnd() % 200000 + (rnd() % 50 == 0 ? 2000000 : 0);
    a[i] = v;
    b[i] = v - v / 200 + rnd() % (v / 100 + 1);
    s[i] = v + v / 10;
  }
  size_t an = squeeze(a, ac, N), bn = squeeze(b, bc, N),
         sn = squeeze(s, sc, N);
  struct rank_result r = run(a, ac, an, b, bc, bn);
  ck_assert_msg(r.p > 0.01, "noise marked: p = %g", r.p);
  r = run(a, ac, an, s, sc, sn);
  ck_assert_msg(r.p < 1e-10, "10%% slower not marked: p = %g", r.p);
  ck_assert(r.shift < 0);
  free(a), free(b), free(s), free(ac), free(bc), free(sc);
}
END_TEST

static struct quantile_result quantile(const uint64_t *av, size_t an,
                                       const uint64_t *bv, size_t bn,
                                       double q) {
  uint64_t *ac = malloc(an * 8), *bc = malloc(bn * 8);
  ck_assert(ac && bc);
  for (size_t i = 0; i < an; i++) ac[i] = 1;
  for (size_t i = 0; i < bn; i++) bc[i] = 1;
  struct rank_sample a = {av, ac, an}, b = {bv, bc, bn};
  struct quantile_result r;
  ck_assert_int_eq(quantile_test(&a, &b, q, &r), 0);
  free(ac);
  free(bc);
  return r;
}

/* The quantile test against Fisher's exact test counted by hand and by
 * binomial coefficients (C(K, t) C(N - K, nB - t) / C(N, nB) summed over
 * the splits no more likely than the one found):
 *   A = 1..5, B = 6..10, q = 1/2: the pooled median is 5, the 5 values
 *     above it all in B: p = 2 / C(10, 5) = 2/252;
 *   A = B = 1..4: the split is the likeliest, p = 1;
 *   A = 1..20, B = 11..30, q = 1/2: median 15, 5 of A's and 15 of B's
 *     above it: p = 0.0038475273083775283;
 *   A = 1..20, B = 6..25, q = 3/4: 18, 2 and 7 above: p =
 *     0.1273861273861274. */
START_TEST(test_quantile_by_hand) {
  uint64_t a5[] = {1, 2, 3, 4, 5}, b5[] = {6, 7, 8, 9, 10};
  struct quantile_result r = quantile(a5, 5, b5, 5, 0.5);
  ck_assert_uint_eq(r.value, 5);
  ck_assert_uint_eq(r.above_a, 0);
  ck_assert_uint_eq(r.above_b, 5);
  assert_close("p 5/5", r.p, 2.0 / 252, 1e-9);
  ck_assert(r.excess > 0);
  uint64_t a4[] = {1, 2, 3, 4};
  r = quantile(a4, 4, a4, 4, 0.5);
  ck_assert_uint_eq(r.value, 2);
  ck_assert(r.p == 1);
  uint64_t a20[20], b20[20], c20[20];
  for (int i = 0; i < 20; i++) {
    a20[i] = (uint64_t)i + 1;
    b20[i] = (uint64_t)i + 11;
    c20[i] = (uint64_t)i + 6;
  }
  r = quantile(a20, 20, b20, 20, 0.5);
  ck_assert_uint_eq(r.value, 15);
  ck_assert_uint_eq(r.above_a, 5);
  ck_assert_uint_eq(r.above_b, 15);
  assert_close("p median", r.p, 0.0038475273083775283, 1e-9);
  /* Ties at the top: A = 1..100, B = 1..90 and ten of 1000.  The
   * pooled p99 is 1000 itself; the ten count as above it (10 is nearer
   * to 1 % of 200 than 0): all in B, p = 2 C(100, 10) / C(200, 10). */
  uint64_t a100[100], b91[91], a100c[100], b91c[91];
  for (int i = 0; i < 100; i++) a100[i] = (uint64_t)i + 1, a100c[i] = 1;
  for (int i = 0; i < 90; i++) b91[i] = (uint64_t)i + 1, b91c[i] = 1;
  b91[90] = 1000;
  b91c[90] = 10;
  struct rank_sample sa = {a100, a100c, 100}, sb = {b91, b91c, 91};
  ck_assert_int_eq(quantile_test(&sa, &sb, 0.99, &r), 0);
  ck_assert_uint_eq(r.value, 1000);
  ck_assert(r.at_included);
  ck_assert_uint_eq(r.above_a, 0);
  ck_assert_uint_eq(r.above_b, 10);
  assert_close("p ties", r.p, 0.0015420521254357006, 1e-9);
  r = quantile(a20, 20, c20, 20, 0.75);
  ck_assert_uint_eq(r.value, 18);
  ck_assert_uint_eq(r.above_a, 2);
  ck_assert_uint_eq(r.above_b, 7);
  assert_close("p q75", r.p, 0.1273861273861274, 1e-9);
}
END_TEST

/* A tail that moves while the bulk stays: A = 1..1000, B = 1..980 and
 * 20 durations of 5000.  The rank test sees nothing (p = 0.988); the
 * test at p99 sees the 20 above A's tail (p = 1.7329e-06, Fisher's exact
 * value), and the one at p50 nothing. */
START_TEST(test_quantile_tail) {
  enum { N = 1000 };
  uint64_t *a = malloc(N * 8), *b = malloc(N * 8), *one = malloc(N * 8);
  ck_assert(a && b && one);
  for (int i = 0; i < N; i++) {
    a[i] = (uint64_t)i + 1;
    b[i] = i < 980 ? (uint64_t)i + 1 : 5000;
    one[i] = 1;
  }
  /* B as distinct values: 1..980, then 5000 twenty times. */
  uint64_t bc[981];
  for (int i = 0; i < 980; i++) bc[i] = 1;
  bc[980] = 20;
  struct rank_sample sa = {a, one, N}, sb = {b, bc, 981};
  struct rank_result rr;
  ck_assert_int_eq(rank_test(&sa, &sb, &rr), 0);
  assert_close("rank p", rr.p, 0.9876736884539169, 1e-6);
  struct quantile_result q;
  ck_assert_int_eq(quantile_test(&sa, &sb, 0.99, &q), 0);
  ck_assert_uint_eq(q.value, 1000);
  ck_assert_uint_eq(q.above_a, 0);
  ck_assert_uint_eq(q.above_b, 20);
  assert_close("p99 p", q.p, 1.732866917218252e-06, 1e-7);
  ck_assert_int_eq(quantile_test(&sa, &sb, 0.5, &q), 0);
  ck_assert(q.p == 1);
  free(a), free(b), free(one);
}
END_TEST

/* The tests against a minimum effect.  The quantile test of A against B
 * divided by `scale`: B = 2 A divided by 2 is A itself (p = 1); the
 * tail example's one-sided p is P(all 20 above in B) = C(1000, 20) /
 * C(2000, 20) = 8.6643e-07, half the two-sided one.  Welch's test by
 * hand: A = {1, 3}, B = {5, 7} (means 2 and 6, variances 2): z = 4 /
 * sqrt(2 / 2 + 2 / 2) = 2.828, p = 0.0046777; against B = 2 A, z = (6 -
 * 4) / sqrt(1 + 4) = 0.894, one-sided p = 0.18555. */
START_TEST(test_scaled) {
  enum { N = 1000 };
  uint64_t *a = malloc(N * 8), *b2 = malloc(N * 8), *one = malloc(N * 8);
  ck_assert(a && b2 && one);
  for (int i = 0; i < N; i++) {
    a[i] = (uint64_t)i + 1;
    b2[i] = 2 * a[i];
    one[i] = 1;
  }
  struct rank_sample sa = {a, one, N}, sb = {b2, one, N};
  struct quantile_result q;
  for (int k = 0; k < 2; k++) {
    double quant = k ? 0.99 : 0.5;
    ck_assert_int_eq(quantile_test_scaled(&sa, &sb, quant, 2, &q), 0);
    ck_assert_msg(q.p == 1 && q.excess == 0, "q %g: p %g excess %g", quant,
                  q.p, q.excess);
    ck_assert_int_eq(quantile_test_scaled(&sa, &sb, quant, 1, &q), 0);
    ck_assert_msg(q.p < 1e-5 && q.excess > 0 && q.p_slower < q.p &&
                      q.p_faster > 0.99,
                  "q %g: p %g", quant, q.p);
    /* Against 2.5 times A, B is faster. */
    ck_assert_int_eq(quantile_test_scaled(&sa, &sb, quant, 2.5, &q), 0);
    ck_assert_msg(q.excess < 0 && q.p_faster < 1e-3, "q %g", quant);
  }
  uint64_t bt[981], bc[981];
  for (int i = 0; i < 980; i++) bt[i] = (uint64_t)i + 1, bc[i] = 1;
  bt[980] = 5000;
  bc[980] = 20;
  struct rank_sample st = {bt, bc, 981};
  ck_assert_int_eq(quantile_test_scaled(&sa, &st, 0.99, 1, &q), 0);
  assert_close("one-sided", q.p_slower, 8.66433458609126e-07, 1e-7);
  /* Divided by 5.1, the 20 of 5000 fall below A's 1000: not slower. */
  ck_assert_int_eq(quantile_test_scaled(&sa, &st, 0.99, 5.1, &q), 0);
  ck_assert_msg(q.excess <= 0 && q.p_slower > 0.5, "p_slower %g",
                q.p_slower);

  uint64_t va[2] = {1, 3}, vb[2] = {5, 7}, c1[2] = {1, 1};
  struct rank_sample ma = {va, c1, 2}, mb = {vb, c1, 2};
  struct mean_result m;
  ck_assert_int_eq(mean_test(&ma, &mb, 1, &m), 0);
  assert_close("z", m.z, 2.8284271247461903, 1e-9);
  assert_close("p", m.p, 0.004677734981047271, 1e-9);
  assert_close("p_slower", m.p_slower, 0.004677734981047271 / 2, 1e-9);
  ck_assert_int_eq(mean_test(&ma, &mb, 2, &m), 0);
  assert_close("excess", m.excess, 2, 1e-12);
  assert_close("p_slower at 2", m.p_slower, 0.18554668476134883, 1e-9);
  uint64_t v1[1] = {5};
  struct rank_sample small = {v1, c1, 1};
  ck_assert_int_eq(mean_test(&ma, &small, 1, &m), -1);
  ck_assert(m.p == 1);
  free(a), free(b2), free(one);
}
END_TEST

static TCase *tc_ranktest(void) {
  TCase *tc = er_tcase("ranktest");
  tcase_add_test(tc, test_exact_distribution);
  tcase_add_test(tc, test_normal_tail);
  tcase_add_test(tc, test_exact_p);
  tcase_add_test(tc, test_ties_by_hand);
  tcase_add_test(tc, test_degenerate);
  tcase_add_test(tc, test_noise_and_shift);
  tcase_add_test(tc, test_quantile_by_hand);
  tcase_add_test(tc, test_quantile_tail);
  tcase_add_test(tc, test_scaled);
  return tc;
}

ER_TEST_MAIN("ranktest", tc_ranktest)
