/* Tests that `eventring diff` can gate a build: the A/A experiment (11 pairs of runs of one unchanged program, testsuite/data/diff-aa/aa*.json, each pair marks no row and fails no --fail-if on p50, p99 or mean, either way round) and the A/B one (a run whose span "aa.work" is 30 % slower is marked and fails them, its unchanged span is not, a speed-up never fails a slowdown condition, a threshold the change passes but not beyond noise does not hold); the minimum effect is stated and settable; p = 0 is printed as a bound. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "difftest.h"
#include "harness.h"
#include "lat_craft.h"

#define AA_RUNS 22

/* The path of recorded run `name` (aa01.json ... aa22.json, ab30.json),
 * which testsuite/data/README.md describes. */
static const char *data(char *buf, const char *name) {
  const char *dir = er_env_dir("EVENTRING_TEST_DATA");
  ck_assert_msg(dir != NULL, "EVENTRING_TEST_DATA is not set");
  snprintf(buf, PATH_MAX, "%s/diff-aa/%s", dir, name);
  return buf;
}

static const char *aa(char *buf, int i) {
  char name[32];
  snprintf(name, sizeof name, "aa%02d.json", i);
  return data(buf, name);
}

static int marked(const char *row) {
  const char *v = json_at(row, "marked");
  ck_assert_msg(!strncmp(v, "true", 4) || !strncmp(v, "false", 5), "%s",
                row);
  return !strncmp(v, "true", 4);
}

/* The conditions a CI would gate on. */
static const char *const conditions[] = {"p99>+10%", "p50>+10%",
                                         "mean>+10%"};

/* A/A: every pair, in both orders, marks nothing and fails nothing --
 * though the rank test of the whole distribution finds the runs apart
 * (p below --alpha) in most pairs: significance is not importance. */
START_TEST(test_aa_pairs) {
  ER_NEED_TOOL();
  int rank_significant = 0;
  for (int i = 1; i < AA_RUNS; i += 2) {
    char pa[PATH_MAX], pb[PATH_MAX];
    aa(pa, i);
    aa(pb, i + 1);
    for (int order = 0; order < 2; order++) {
      const char *a = order ? pb : pa, *b = order ? pa : pb;
      struct lat_run r = diff(a, b, "--json", NULL);
      lat_assert_ok(&r);
      ck_assert_msg(!strstr(r.out, "\"marked\": true"), "%s %s: %s", a, b,
                    r.out);
      char *row = json_row(r.out, "span", "aa.work");
      if (!strncmp(json_at(json_at(row, "test"), "significant"), "true", 4))
        rank_significant++;
      free(row);
      lat_run_free(&r);
      r = diff(a, b, NULL, NULL);
      lat_assert_ok(&r);
      ck_assert_msg(!strstr(r.out, "\n* "), "%s %s: %s", a, b, r.out);
      ck_assert_msg(!strstr(r.out, " *\n"), "%s %s: %s", a, b, r.out);
      lat_run_free(&r);
      for (size_t c = 0; c < sizeof conditions / sizeof *conditions; c++) {
        r = diff(a, b, "--fail-if", conditions[c]);
        ck_assert_msg(r.status == 0, "%s %s --fail-if '%s': %d %s", a, b,
                      conditions[c], r.status, r.err);
        lat_run_free(&r);
      }
    }
  }
  ck_assert_msg(rank_significant >= 10,
                "the rank test told only %d of 22 A/A orders apart",
                rank_significant);
}
END_TEST

/* Without the minimum effect (--min-effect 0), the same pairs are
 * marked: what keeps them quiet is the effect size, not the tests. */
START_TEST(test_aa_without_min_effect) {
  ER_NEED_TOOL();
  int pairs = 0;
  for (int i = 1; i < AA_RUNS; i += 2) {
    char pa[PATH_MAX], pb[PATH_MAX];
    struct lat_run r = diff(aa(pa, i), aa(pb, i + 1), "--json",
                            "--min-effect=0");
    lat_assert_ok(&r);
    if (strstr(r.out, "\"marked\": true")) pairs++;
    lat_run_free(&r);
  }
  ck_assert_msg(pairs >= 5, "only %d A/A pairs marked at --min-effect 0",
                pairs);
}
END_TEST

/* A/B: aa.work 30 % slower is marked at its mean, p50 and p99 and fails
 * every condition; aa.other, unchanged, is not; the other way round it
 * is a speed-up, which fails no slowdown condition and the matching
 * speed-up one. */
START_TEST(test_ab_caught) {
  ER_NEED_TOOL();
  char pa[PATH_MAX], pb[PATH_MAX];
  aa(pa, 1);
  data(pb, "ab30.json");
  struct lat_run r = diff(pa, pb, "--json", NULL);
  lat_assert_ok(&r);
  char *work = json_row(r.out, "span", "aa.work"), *other = json_row(r.out, "span", "aa.other");
  ck_assert_msg(marked(work), "%s", work);
  ck_assert_msg(!marked(other), "%s", other);
  const char *eff = json_at(work, "effects");
  static const char *const lines[] = {"mean", "p50", "p99"};
  for (size_t k = 0; k < 3; k++)
    ck_assert_msg(!strncmp(json_at(json_at(eff, lines[k]), "marked"), "true",
                           4),
                  "%s: %s", lines[k], work);
  double p50 = json_double(json_at(work, "change_pct"), "p50");
  ck_assert_msg(p50 > 20 && p50 < 40, "p50 change %f", p50);
  ck_assert(json_double(r.out, "min_effect_pct") == 10);
  free(work);
  free(other);
  lat_run_free(&r);

  for (size_t c = 0; c < sizeof conditions / sizeof *conditions; c++) {
    char cond[64];
    snprintf(cond, sizeof cond, "span:aa.work:%s", conditions[c]);
    r = diff(pa, pb, "--fail-if", cond);
    ck_assert_msg(r.status == 1, "--fail-if '%s': %d", cond, r.status);
    ck_assert_msg(strstr(r.err, "span aa.work: "), "%s", r.err);
    lat_run_free(&r);
    snprintf(cond, sizeof cond, "span:aa.other:%s", conditions[c]);
    r = diff(pa, pb, "--fail-if", cond);
    ck_assert_msg(r.status == 0, "--fail-if '%s': %s", cond, r.err);
    lat_run_free(&r);
    /* B to A: 30 % faster. */
    r = diff(pb, pa, "--fail-if", conditions[c]);
    ck_assert_msg(r.status == 0, "reversed --fail-if '%s': %s",
                  conditions[c], r.err);
    lat_run_free(&r);
  }
  diff_expect(pb, pa, "--fail-if", "p50<-10%", 1, NULL);
  /* A threshold beyond the change does not hold, marked or not; nor
   * one that the change passes but not beyond noise: p99 moved +30.6 %,
   * and B's durations divided by 1.25 are within noise of A's at p99
   * (by 1.2 they are not). */
  diff_expect(pa, pb, "--fail-if", "p50>+50%", 0, NULL);
  r = diff(pa, pb, "--json", NULL);
  work = json_row(r.out, "span", "aa.work");
  double p99 = json_double(json_at(work, "change_pct"), "p99");
  ck_assert_msg(p99 > 25, "p99 change %f", p99);
  free(work);
  lat_run_free(&r);
  diff_expect(pa, pb, "--fail-if", "span:aa.work:p99>+25%", 0, NULL);
  diff_expect(pa, pb, "--fail-if", "span:aa.work:p99>+20%", 1, NULL);

  /* The table: the row and its lines starred, the rule and the minimum
   * effect stated, p = 0 as a bound. */
  r = diff(pa, pb, NULL, NULL);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "\n* span aa.work "), "%s", r.out);
  ck_assert_msg(strstr(r.out, "\n  span aa.other "), "%s", r.out);
  ck_assert_msg(strstr(r.out, "at least 10% (--min-effect)"), "%s", r.out);
  ck_assert_msg(strstr(r.out, "p < 1e-300"), "%s", r.out);
  ck_assert_msg(!strstr(r.out, "p = 0 ") && !strstr(r.out, "p = 0,") &&
                    !strstr(r.out, "p = 0\n"),
                "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* --min-effect: above the change, nothing is marked or fails; it is
 * stated; bad values are usage errors. */
START_TEST(test_min_effect_option) {
  ER_NEED_TOOL();
  char pa[PATH_MAX], pb[PATH_MAX];
  aa(pa, 1);
  data(pb, "ab30.json");
  struct lat_run r = diff(pa, pb, "--min-effect", "60%");
  lat_assert_ok(&r);
  ck_assert_msg(!strstr(r.out, "\n* "), "%s", r.out);
  ck_assert_msg(strstr(r.out, "at least 60% (--min-effect)"), "%s", r.out);
  lat_run_free(&r);
  const char *args[] = {"diff", "--min-effect", "60",      "--fail-if",
                        "p50>+10%", pa,          pb,       NULL};
  r = lat_run_tool(args);
  lat_assert_ok(&r);
  lat_run_free(&r);
  static const char *const bad[] = {"100", "-1", "x", "5%%", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    r = diff(pa, pb, "--min-effect", bad[i]);
    ck_assert_msg(r.status == 2, "'%s': %d", bad[i], r.status);
    ck_assert_msg(strstr(r.err, "--min-effect"), "%s", r.err);
    lat_run_free(&r);
  }
}
END_TEST

static TCase *tc_diff_aa(void) {
  TCase *tc = er_tcase("diff_aa");
  tcase_add_test(tc, test_aa_pairs);
  tcase_add_test(tc, test_aa_without_min_effect);
  tcase_add_test(tc, test_ab_caught);
  tcase_add_test(tc, test_min_effect_option);
  return tc;
}

ER_TEST_MAIN("diff_aa", tc_diff_aa)
