/* Tests `eventring diff`: a clear slowdown of a span in crafted files is marked and fails --fail-if while the phases beside it are not; a shuffled, slightly perturbed copy of a sample (the noise test) is not marked; saved stats --json outputs, with and without buckets; two runs of a program at two speeds; bad inputs and usage errors; the filters of the other subcommands on ring-file inputs. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "difftest.h"
#include "cases.h"
#include "harness.h"
#include "lat_craft.h"

#define SPAN_ID 3
#define N 300

static uint64_t state;
static uint64_t rnd(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

/* The sample of the crafted runs: span durations around 1 ms with a
 * tail (every 50th 3 ms longer), minor pauses around 12 us. */
static uint64_t span_base[N], pause_base[N];

static void make_base(void) {
  state = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < N; i++) {
    span_base[i] = 800000 + rnd() % 400000 + (i % 50 == 49 ? 3000000 : 0);
    pause_base[i] = 10000 + rnd() % 5000;
  }
}

/* Writes a run of n spans "req" (durations spans[]) each followed by a
 * minor pause (durations pauses[], NULL: none) on domain 0, to `path`. */
static void write_run_n(const char *path, const uint64_t *spans,
                        const uint64_t *pauses, const char *span_name,
                        int n) {
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, SPAN_ID, span_name);
  uint64_t t = 1000000;
  for (int i = 0; i < n; i++) {
    craft_event(&c, 0, 1, ER_UEV_SPAN_BEGIN, SPAN_ID, t, NULL, 0);
    t += spans[i];
    craft_event(&c, 0, 1, ER_UEV_SPAN_END, SPAN_ID, t, NULL, 0);
    t += 1000;
    if (pauses) t = craft_pause(&c, 0, t, pauses[i]) + 1000;
  }
  craft_write(&c, path);
  craft_free(&c);
}

static void write_run(const char *path, const uint64_t *spans,
                      const uint64_t *pauses, const char *span_name) {
  write_run_n(path, spans, pauses, span_name, N);
}

/* A: the base sample.  B: the same values shuffled, each moved by up to
 * +-0.5 %, pauses too (noise).  C: spans 30 % longer, pauses as A's. */
static char path_a[PATH_MAX], path_b[PATH_MAX], path_c[PATH_MAX];

static void make_runs(const char *dir) {
  make_base();
  uint64_t spans[N], pauses[N];
  snprintf(path_a, sizeof path_a, "%s/a.events", dir);
  snprintf(path_b, sizeof path_b, "%s/b.events", dir);
  snprintf(path_c, sizeof path_c, "%s/c.events", dir);
  write_run(path_a, span_base, pause_base, "req");
  int perm[N];
  for (int i = 0; i < N; i++) perm[i] = i;
  for (int i = N - 1; i > 0; i--) {
    int j = (int)(rnd() % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int i = 0; i < N; i++) {
    uint64_t s = span_base[perm[i]], p = pause_base[perm[i]];
    spans[i] = s - s / 200 + rnd() % (s / 100 + 1);
    pauses[i] = p - p / 200 + rnd() % (p / 100 + 1);
  }
  write_run(path_b, spans, pauses, "req");
  for (int i = 0; i < N; i++) spans[i] = span_base[i] * 13 / 10;
  write_run(path_c, spans, pause_base, "req");
}

static int significant(const char *row) {
  const char *t = json_at(row, "test");
  ck_assert_msg(strncmp(t, "null", 4) != 0, "no test in row %s", row);
  /* The rank test's, which comes before the quantile tests'. */
  const char *v = json_at(t, "significant");
  if (!strncmp(v, "true", 4)) return 1;
  ck_assert_msg(!strncmp(v, "false", 5), "%s", row);
  return 0;
}

/* The slowdown of C's spans is marked, slower, +30 % at p50; the pauses
 * beside them, unchanged, are not marked. */
START_TEST(test_slowdown_marked) {
  ER_NEED_TOOL();
  make_runs(er_tmpdir());
  struct lat_run r = diff(path_a, path_c, "--json", NULL);
  lat_assert_ok(&r);
  char *span = json_row(r.out, "span", "req");
  ck_assert(significant(span));
  ck_assert_msg(strstr(span, "\"direction\": \"slower\""), "%s", span);
  ck_assert_uint_eq(json_u64(json_at(span, "a"), "count"), N);
  ck_assert_uint_eq(json_u64(json_at(span, "b"), "count"), N);
  double p50 = json_double(json_at(span, "change_pct"), "p50");
  ck_assert_msg(p50 > 29.8 && p50 < 30.2, "p50 change %f", p50);
  ck_assert(json_double(json_at(span, "test"), "p_value") < 1e-10);
  char *minor = json_row(r.out, "phase", "minor");
  ck_assert(!significant(minor));
  ck_assert(json_double(json_at(minor, "change_pct"), "p99") == 0);
  free(span);
  free(minor);
  lat_run_free(&r);

  /* The table marks the span's row and says why. */
  r = diff(path_a, path_c, NULL, NULL);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "\n* span req "), "%s", r.out);
  ck_assert_msg(strstr(r.out, "\n  phase minor "), "%s", r.out);
  ck_assert_msg(strstr(r.out, "tests against a change of 10%: mean p "),
                "%s", r.out);
  ck_assert_msg(strstr(r.out, "(rank test, normal approximation): B's tend "
                              "to be longer"),
                "%s", r.out);
  lat_run_free(&r);

  /* The crafted files have too few phases to tell their numbering:
   * --ocaml53 says it for both, and the warning goes. */
  r = diff(path_a, path_c, NULL, NULL);
  ck_assert_msg(strstr(r.err, "cannot tell OCaml 5.0-5.2"), "%s", r.err);
  lat_run_free(&r);
  r = diff(path_a, path_c, "--ocaml53", NULL);
  lat_assert_ok(&r);
  ck_assert_msg(!strstr(r.err, "cannot tell"), "%s", r.err);
  lat_run_free(&r);
}
END_TEST

/* The noise test: B, A's sample shuffled and perturbed, is marked
 * nowhere and fails no --fail-if of 5 %. */
START_TEST(test_noise_not_marked) {
  ER_NEED_TOOL();
  make_runs(er_tmpdir());
  struct lat_run r = diff(path_a, path_b, "--json", NULL);
  lat_assert_ok(&r);
  char *span = json_row(r.out, "span", "req");
  char *minor = json_row(r.out, "phase", "minor");
  ck_assert(!significant(span));
  ck_assert(!significant(minor));
  ck_assert(json_double(json_at(span, "test"), "p_value") > 0.1);
  free(span);
  free(minor);
  lat_run_free(&r);
  r = diff(path_a, path_b, "--fail-if", "p99>+5%");
  lat_assert_ok(&r);
  ck_assert_msg(!strstr(r.out, "\n* "), "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* --fail-if: the span's p50 and mean (+30 %) fail; its p99, +30 % too,
 * does not: of 300 durations, 3 are above p99, and the 6 above the
 * pooled p99 all in C has a chance of 2^-5 (the tail's own test, not the
 * rank test of the whole sample, answers for p99); restricted to the
 * phase, or with a threshold above the change, nothing fails; several
 * conditions, any one failing; a name that no row has is an error. */
/* diff --fail-if COND, A to C or C to A: the exit status, and what stderr
 * says. */
static const struct fail_if_case {
  int c_to_a;
  const char *cond;
  int status;
  const char *says; /* or NULL */
} fail_if_cases[] = {
    {0, "p99>+10%", 0, NULL},
    {0, "span:req:p50>+10%", 1, "span req: p50 +30.0%"},
    {0, "mean>+10%", 1, NULL},
    {0, "span:r*:mean>+35%", 0, NULL},
    {0, "phase:minor:p99>+10%", 0, NULL},
    /* C to A: p50 -23.1 %, beyond noise against -10 %, not against -20 %
     * (A's durations divided by 0.8 are 4 % below C's: too little for the
     * median test of 300 durations). */
    {1, "p50<-10%", 1, NULL},
    {1, "p50<-20%", 0, NULL},
    {1, "p50>+10%", 0, NULL},
    {1, "count>+0%", 0, NULL},
    {0, "span:nosuch:p99>+10%", 1, "no span named nosuch"},
};

START_TEST(test_fail_if) {
  ER_NEED_TOOL();
  make_runs(er_tmpdir());
  for (size_t i = 0; i < sizeof fail_if_cases / sizeof fail_if_cases[0];
       i++) {
    const struct fail_if_case *k = &fail_if_cases[i];
    diff_expect(k->c_to_a ? path_c : path_a, k->c_to_a ? path_a : path_c,
                "--fail-if", k->cond, k->status, k->says);
  }
  /* Several conditions, any one failing. */
  const char *args[] = {"diff",    "--fail-if", "count>+1%",
                        "--fail-if", "total>+20%", path_a, path_c, NULL};
  struct lat_run r = lat_run_tool(args);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.err, "span req: total +"), "%s", r.err);
  lat_run_free(&r);
}
END_TEST

static void save(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

/* Saved stats --json outputs: every figure compares as the files do (no
 * change against the file itself), and the test on their buckets gives
 * the p-value of the ring files to the last digit, for phases and spans;
 * an output without buckets says the test needs the files, and one
 * without p99 makes a condition on p99 an error rather than a pass. */
START_TEST(test_stats_json) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  make_runs(dir);
  char ja[PATH_MAX], jc[PATH_MAX];
  snprintf(ja, sizeof ja, "%s/a.json", dir);
  snprintf(jc, sizeof jc, "%s/c.json", dir);
  const char *sa[] = {"stats", "--json", "-o", ja, path_a, NULL};
  const char *sc[] = {"stats", "--json", "-o", jc, path_c, NULL};
  struct lat_run r = lat_run_tool(sa);
  lat_assert_ok(&r);
  lat_run_free(&r);
  r = lat_run_tool(sc);
  lat_assert_ok(&r);
  lat_run_free(&r);

  r = diff(ja, path_a, "--json", NULL);
  lat_assert_ok(&r);
  char *minor = json_row(r.out, "phase", "minor");
  const char *ch = json_at(minor, "change_pct");
  static const char *const metrics[] = {"count", "total", "mean",
                                        "p50",   "p99",   "max"};
  for (size_t i = 0; i < 6; i++)
    ck_assert_msg(json_double(ch, metrics[i]) == 0, "%s: %s", metrics[i],
                  minor);
  ck_assert_uint_eq(json_u64(json_at(minor, "a"), "count"), N);
  ck_assert_msg(json_double(json_at(minor, "test"), "p_value") == 1, "%s",
                minor);
  ck_assert_msg(strstr(r.out, "\"type\": \"stats-json\""), "%s", r.out);
  free(minor);
  lat_run_free(&r);

  /* The same tests, to the last digit, as on the ring files. */
  r = diff(ja, jc, NULL, NULL);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "\n* span req "), "%s", r.out);
  ck_assert_msg(!strstr(r.out, "no noise test"), "%s", r.out);
  lat_run_free(&r);
  struct lat_run from_json = diff(ja, jc, "--json", NULL);
  struct lat_run from_files = diff(path_a, path_c, "--json", NULL);
  lat_assert_ok(&from_json);
  lat_assert_ok(&from_files);
  static const char *const rows[][2] = {{"span", "req"}, {"phase", "minor"}};
  for (size_t i = 0; i < 2; i++) {
    char *rj = json_row(from_json.out, rows[i][0], rows[i][1]);
    char *rf = json_row(from_files.out, rows[i][0], rows[i][1]);
    ck_assert_int_eq(significant(rj), i == 0);
    double pj = json_double(json_at(rj, "test"), "p_value");
    double pf = json_double(json_at(rf, "test"), "p_value");
    ck_assert_msg(pj == pf, "%s: p %.17g from the files, %.17g from stats",
                  rows[i][1], pf, pj);
    ck_assert_uint_eq(json_u64(json_at(rj, "b"), "p99_ns"),
                      json_u64(json_at(rf, "b"), "p99_ns"));
    free(rj);
    free(rf);
  }
  lat_run_free(&from_json);
  lat_run_free(&from_files);

  /* An output of an earlier stats: no buckets, no percentiles. */
  char old[PATH_MAX];
  snprintf(old, sizeof old, "%s/old.json", dir);
  save(old, "{\"phases\": [{\"name\": \"minor\", \"count\": 300, "
            "\"completed\": 300, \"total_ns\": 3750000, \"mean_ns\": "
            "12500, \"max_ns\": 15000}]}\n");
  r = diff(old, jc, NULL, NULL);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "no noise test: A has no durations"), "%s",
                r.out);
  lat_run_free(&r);
  diff_expect(old, jc, "--fail-if", "phase:minor:p99>+10%", 1, "p99 is missing");
  diff_expect(ja, jc, "--fail-if", "phase:minor:max>+10%", 0, NULL);
}
END_TEST

/* A stats --json whose entries carry their buckets gets the test:
 * 10..50 ns against 60..100 ns, 5 and 5 values without ties: U = 0,
 * exact p = 2 / C(10, 5) = 2/252. */
START_TEST(test_json_buckets) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char a[PATH_MAX], b[PATH_MAX], bad[PATH_MAX];
  snprintf(a, sizeof a, "%s/a.json", dir);
  snprintf(b, sizeof b, "%s/b.json", dir);
  snprintf(bad, sizeof bad, "%s/bad.json", dir);
  save(a, "{\"phases\": [], \"spans\": [{\"name\": \"q\", \"count\": 5, "
          "\"total_ns\": 150, \"mean_ns\": 30, \"p50_ns\": 30, \"p99_ns\": "
          "50, \"max_ns\": 50, \"buckets\": [[10, 1], [20, 1], [30, 1], "
          "[40, 1], [50, 1]]}]}\n");
  save(b, "{\"phases\": [], \"spans\": [{\"name\": \"q\", \"count\": 5, "
          "\"total_ns\": 400, \"mean_ns\": 80, \"p50_ns\": 80, \"p99_ns\": "
          "100, \"max_ns\": 100, \"buckets\": [[60, 1], [70, 1], [80, 1], "
          "[90, 1], [100, 1]]}]}\n");
  struct lat_run r = diff(a, b, "--json", NULL);
  lat_assert_ok(&r);
  char *row = json_row(r.out, "span", "q");
  const char *t = json_at(row, "test");
  ck_assert_msg(strstr(t, "\"exact\": true"), "%s", row);
  double p = json_double(t, "p_value");
  ck_assert_msg(p > 2.0 / 252 * (1 - 1e-9) && p < 2.0 / 252 * (1 + 1e-9),
                "p = %.17g", p);
  ck_assert(significant(row));
  ck_assert(json_double(json_at(row, "change_pct"), "p50") > 166.6);
  free(row);
  lat_run_free(&r);
  /* The p50 moved +167 %: against +10 % its quantile test gives the same
   * 2/252 (the 5 values above the pooled median all B's), marked at the
   * default --alpha, not at 0.005; 5 durations are too few for the
   * mean's test. */
  r = diff(a, b, NULL, NULL);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "\n* span q "), "%s", r.out);
  ck_assert_msg(strstr(r.out, "against a change of 10%: p50 p = 0.0079, "),
                "%s", r.out);
  lat_run_free(&r);
  r = diff(a, b, "--alpha", "0.005");
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "\n  span q "), "%s", r.out);
  ck_assert_msg(strstr(r.out, "no shift beyond noise"), "%s", r.out);
  lat_run_free(&r);

  save(bad, "{\"phases\": [], \"spans\": [{\"name\": \"q\", \"count\": 2, "
            "\"buckets\": [[20, 1], [10, 1]]}]}\n");
  r = diff(a, bad, NULL, NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.err, "\"buckets\""), "%s", r.err);
  lat_run_free(&r);
}
END_TEST

/* Two runs of one program, its spans sleeping 100 us and then 3 ms: both
 * are read whole, and B's durations are at least the sleep (which never
 * ends early; nothing here depends on how late it ends). */
START_TEST(test_program_runs) {
  ER_NEED_TOOL();
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  char prog[PATH_MAX], pa[PATH_MAX], pb[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/span_sleep", progs);
  const char *sleeps[2] = {"100", "3000"};
  char *paths[2] = {pa, pb};
  for (int k = 0; k < 2; k++) {
    char *argv[] = {prog, (char *)sleeps[k], NULL};
    FILE *out, *err;
    pid_t pid = lat_start(argv, &out, &err);
    struct lat_run p = lat_finish(pid, out, err);
    ck_assert_msg(p.status == 0, "span_sleep: %d %s", p.status, p.err);
    lat_run_free(&p);
    er_ring_path_for(paths[k], PATH_MAX, dir, pid);
  }
  struct lat_run r = diff(pa, pb, "--json", NULL);
  lat_assert_ok(&r);
  char *row = json_row(r.out, "span", "diff.req");
  ck_assert_uint_eq(json_u64(json_at(row, "a"), "count"), 20);
  ck_assert_uint_eq(json_u64(json_at(row, "b"), "count"), 20);
  ck_assert_uint_ge(json_u64(json_at(row, "a"), "p50_ns"), 100000);
  ck_assert_uint_ge(json_u64(json_at(row, "b"), "p50_ns"), 3000000);
  ck_assert_msg(strncmp(json_at(row, "test"), "null", 4) != 0, "%s", row);
  free(row);
  lat_run_free(&r);
}
END_TEST

/* Bad inputs: a file that is neither a ring file nor JSON, JSON that is
 * not a stats output or not JSON at all, a missing file, two runs with
 * nothing in common; usage errors. */
START_TEST(test_bad_inputs) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  make_runs(dir);
  char txt[PATH_MAX], notstats[PATH_MAX], broken[PATH_MAX], other[PATH_MAX];
  snprintf(txt, sizeof txt, "%s/t.txt", dir);
  snprintf(notstats, sizeof notstats, "%s/n.json", dir);
  snprintf(broken, sizeof broken, "%s/b.json", dir);
  snprintf(other, sizeof other, "%s/other.events", dir);
  save(txt, "hello\n");
  save(notstats, "{\"traceEvents\": []}\n");
  save(broken, "{\"phases\": [\n");
  uint64_t d[N];
  for (int i = 0; i < N; i++) d[i] = 1000;
  write_run(other, d, NULL, "elsewhere");

  struct lat_run r = diff(path_a, txt, NULL, NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.err, "not a ring file"), "%s", r.err);
  lat_run_free(&r);
  r = diff(notstats, path_a, NULL, NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.err, "not the output of 'eventring stats --json'"),
                "%s", r.err);
  lat_run_free(&r);
  diff_expect(path_a, broken, NULL, NULL, 1, "not valid JSON: line 2");
  diff_expect(path_a, "/nonexistent/x.events", NULL, NULL, 1, NULL);
  diff_expect(path_a, other, NULL, NULL, 1, "no phase or span in common");

  static const char *const usage[][6] = {
      {"diff", "x", NULL},
      {"diff", "x", "y", "z", NULL},
      {"diff", "--fail-if", "p98>+10%", "x", "y", NULL},
      {"diff", "--fail-if", "p99>+10", "x", "y", NULL},
      {"diff", "--fail-if", "p99=+10%", "x", "y", NULL},
      {"diff", "--fail-if", "span::p99>+1%", "x", "y", NULL},
      {"diff", "--alpha", "1", "x", "y", NULL},
      {"diff", "--bogus", "x", "y", NULL},
      {"diff", "--ocaml50", "--ocaml53", "x", "y", NULL},
  };
  for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
    r = lat_run_tool(usage[i]);
    ck_assert_msg(r.status == 2, "case %zu: status %d", i, r.status);
    ck_assert_msg(strstr(r.err, "eventring diff --help"), "%s", r.err);
    lat_run_free(&r);
  }
}
END_TEST

/* A tail that moves alone: 61 of 2000 spans (every 33rd) become 8 ms.
 * The rank test sees no shift of the bulk; the quantile test at p99
 * does, and marks the row and its p99; --fail-if on p99 holds, one on
 * p50 (which moved a little, within noise for both of its tests) does
 * not. */
START_TEST(test_tail_change) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  enum { M = 2000 };
  static uint64_t base[M], tail[M];
  state = 0x2545f4914f6cdd1du;
  for (int i = 0; i < M; i++) {
    base[i] = 800000 + rnd() % 400000 + (i % 50 == 49 ? 3000000 : 0);
    tail[i] = i % 33 == 0 ? 8000000 : base[i];
  }
  char a[PATH_MAX], t[PATH_MAX];
  snprintf(a, sizeof a, "%s/a.events", dir);
  snprintf(t, sizeof t, "%s/t.events", dir);
  write_run_n(a, base, NULL, "req", M);
  write_run_n(t, tail, NULL, "req", M);
  struct lat_run r = diff(a, t, "--json", NULL);
  lat_assert_ok(&r);
  char *row = json_row(r.out, "span", "req");
  ck_assert_msg(!significant(row), "%s", row);
  const char *q = json_at(json_at(row, "quantiles"), "p99");
  ck_assert_msg(!strncmp(json_at(q, "significant"), "true", 4), "%s", row);
  ck_assert_msg(strstr(q, "\"direction\": \"slower\""), "%s", row);
  q = json_at(json_at(row, "quantiles"), "p50");
  ck_assert_msg(!strncmp(json_at(q, "significant"), "false", 5), "%s", row);
  double p50 = json_double(json_at(row, "change_pct"), "p50");
  ck_assert_msg(p50 > 0.1, "p50 change %f", p50);
  free(row);
  lat_run_free(&r);
  r = diff(a, t, NULL, NULL);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "\n* span req "), "%s", r.out);
  ck_assert_msg(strstr(r.out, "% *\n"), "%s", r.out);
  lat_run_free(&r);
  diff_expect(a, t, "--fail-if", "span:req:p99>+50%", 1, NULL);
  diff_expect(a, t, "--fail-if", "span:req:p50>+0.1%", 0, NULL);
}
END_TEST

/* Lost events are reported per input, named by its path (the two
 * files' lines would otherwise read alike); the spans they cut are left
 * out, the others compared. */
START_TEST(test_lost_named) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  make_runs(dir);
  char wrapped[PATH_MAX];
  snprintf(wrapped, sizeof wrapped, "%s/wrapped.events", dir);
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, SPAN_ID, "req");
  craft_skip(&c, 0, 1000); /* the oldest 1000 words were overwritten */
  uint64_t t = 1000000;
  /* An end whose begin was lost, then 10 whole spans of 1 ms. */
  craft_event(&c, 0, 1, ER_UEV_SPAN_END, SPAN_ID, t, NULL, 0);
  for (int i = 0; i < 10; i++) {
    t += 1000;
    craft_event(&c, 0, 1, ER_UEV_SPAN_BEGIN, SPAN_ID, t, NULL, 0);
    t += 1000000;
    craft_event(&c, 0, 1, ER_UEV_SPAN_END, SPAN_ID, t, NULL, 0);
  }
  craft_write(&c, wrapped);
  craft_free(&c);
  struct lat_run r = diff(path_a, wrapped, "--json", NULL);
  lat_assert_ok(&r);
  char want[PATH_MAX + 64];
  snprintf(want, sizeof want, "eventring: %s: 1000 ring words of events lost",
           wrapped);
  ck_assert_msg(strstr(r.err, want), "%s", r.err);
  char *row = json_row(r.out, "span", "req");
  ck_assert_uint_eq(json_u64(json_at(row, "b"), "count"), 10);
  ck_assert_uint_eq(json_u64(json_at(row, "b"), "max_ns"), 1000000);
  free(row);
  lat_run_free(&r);
}
END_TEST

/* Checks that every change in diff --json output `out` is 0 (or null)
 * and that no row is marked. */
static void assert_unchanged(const char *what, const char *out) {
  static const char *const metrics[] = {"count", "total", "mean",
                                        "p50",   "p99",   "max"};
  ck_assert_msg(!strstr(out, "\"significant\": true"), "%s: %s", what, out);
  int rows = 0;
  for (const char *p = strstr(out, "\"change_pct\": {"); p;
       p = strstr(p + 1, "\"change_pct\": {"), rows++)
    for (size_t m = 0; m < 6; m++) {
      const char *v = json_at(p, metrics[m]);
      if (!strncmp(v, "null", 4)) continue;
      ck_assert_msg(strtod(v, NULL) == 0, "%s: %s changed: %.200s", what,
                    metrics[m], p);
    }
  /* The wrapped vector kept no whole phase and no span: nothing to
   * compare, which is no error. */
  if (!strstr(what, "wrapped"))
    ck_assert_msg(rows > 0, "%s: no rows in %s", what, out);
}

/* The OCaml 5 vectors (5.2 and 5.4): each against itself and against
 * its own stats --json is unchanged everywhere and marked nowhere, with
 * the test run on every row both sides have durations for. */
START_TEST(test_ocaml5_vectors) {
  const char *name = er_vectors[_i];
  ER_NEED_TOOL();
  if (!er_env_dir("EVENTRING_TEST_DATA"))
    ER_SKIP("EVENTRING_TEST_DATA is not set");
  const char *dir = er_tmpdir();
  char file[PATH_MAX], json[PATH_MAX + 8];
  ck_assert(er_unpack_vector(dir, name, file));
  snprintf(json, sizeof json, "%s.json", file);
  const char *opt = er_vector_ocaml50(name) ? "--ocaml50"
                                                     : "--ocaml53";
  const char *st[] = {"stats", "--json", opt, "-o", json, file, NULL};
  struct lat_run r = lat_run_tool(st);
  lat_assert_ok(&r);
  lat_run_free(&r);
  r = diff(file, file, "--json", opt);
  lat_assert_ok(&r);
  assert_unchanged(name, r.out);
  if (!strstr(name, "wrapped"))
    ck_assert_msg(strstr(r.out, "\"p_value\": 1"), "%s", r.out);
  lat_run_free(&r);
  r = diff(json, file, "--json", opt);
  lat_assert_ok(&r);
  assert_unchanged(name, r.out);
  ck_assert_msg(!strstr(r.out, "\"test\": null") ||
                    strstr(r.out, "\"count\": 0"),
                "a row without its test: %s", r.out);
  lat_run_free(&r);
  unlink(file);
  unlink(json);
}
END_TEST

/* The filters of the other reading subcommands apply to ring-file
 * inputs, each from its own first event: --kind user_span leaves the
 * phases out, --until 100ms the spans after it; a saved stats --json,
 * filtered when saved, refuses them; a bad filter is a usage error. */
START_TEST(test_filters) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  make_runs(dir);
  struct lat_run r = diff(path_a, path_c, "--json", "--kind=user_span");
  lat_assert_ok(&r);
  ck_assert_msg(!strstr(r.out, "\"kind\": \"phase\""), "%s", r.out);
  char *span = json_row(r.out, "span", "req");
  ck_assert_uint_eq(json_u64(json_at(span, "a"), "count"), N);
  free(span);
  lat_run_free(&r);

  r = diff(path_a, path_c, "--json", "--until=100ms");
  lat_assert_ok(&r);
  span = json_row(r.out, "span", "req");
  uint64_t na = json_u64(json_at(span, "a"), "count");
  uint64_t nc = json_u64(json_at(span, "b"), "count");
  /* Spans of 0.8 to 4.2 ms (C's 30 % longer) and pauses of 15 us. */
  ck_assert_msg(na >= 20 && na < 125, "A: %" PRIu64 " spans", na);
  ck_assert_msg(nc >= 15 && nc < na, "C: %" PRIu64 " spans", nc);
  free(span);
  lat_run_free(&r);

  char ja[PATH_MAX];
  snprintf(ja, sizeof ja, "%s/a.json", dir);
  const char *sa[] = {"stats", "--json", "-o", ja, path_a, NULL};
  r = lat_run_tool(sa);
  lat_assert_ok(&r);
  lat_run_free(&r);
  r = diff(ja, path_c, "--since=10ms", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "a saved stats --json") &&
                    strstr(r.err, "eventring diff --help"),
                "%s", r.err);
  lat_run_free(&r);
  diff_expect(path_a, path_c, "--kind=bogus", NULL, 2, "--kind: unknown kind 'bogus'");
  diff_expect(path_a, path_c, "--last=1s", "--since=1s", 2, NULL);
}
END_TEST

static TCase *tc_diff(void) {
  TCase *tc = er_tcase("diff");
  tcase_add_test(tc, test_slowdown_marked);
  tcase_add_test(tc, test_noise_not_marked);
  tcase_add_test(tc, test_fail_if);
  tcase_add_test(tc, test_stats_json);
  tcase_add_test(tc, test_json_buckets);
  tcase_add_test(tc, test_program_runs);
  tcase_add_test(tc, test_bad_inputs);
  tcase_add_test(tc, test_lost_named);
  tcase_add_test(tc, test_tail_change);
  er_add_cases(tc, test_ocaml5_vectors, er_vectors, ER_NVECTORS,
               sizeof er_vectors[0]);
  tcase_add_test(tc, test_filters);
  return tc;
}

ER_TEST_MAIN("diff", tc_diff)
