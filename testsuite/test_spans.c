/* Tests `eventring latency --span/--phase` and the span statistics of
 * `eventring stats`: distributions of crafted spans of known durations
 * (percentiles within the histogram's stated bound), nesting and overlap,
 * spans cut by lost events, unfinished and unmatched, spans paired on
 * their own thread's track in a shared slot; then on a C program's file
 * and the OCaml 5 vectors. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lat_craft.h"

static void span_begin(struct craft *c, int d, uint64_t ts, unsigned id) {
  craft_event(c, d, 1, ER_UEV_SPAN_BEGIN, id, ts, NULL, 0);
}

static void span_end(struct craft *c, int d, uint64_t ts, unsigned id) {
  craft_event(c, d, 1, ER_UEV_SPAN_END, id, ts, NULL, 0);
}

static struct lat_run tool(const char *a0, const char *a1, const char *a2,
                           const char *a3, const char *a4, const char *a5) {
  const char *args[] = {a0, a1, a2, a3, a4, a5, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  return r;
}

/* The JSON object of span `name` in the "spans" array of `json`. */
static const char *span_obj(const char *json, const char *name) {
  const char *p = json_named(json, "spans", name);
  ck_assert_msg(p != NULL, "span %s not in: %s", name, json);
  return p;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The nearest-rank percentile p of sorted v[n] (analysis.h). */
static uint64_t rank(const uint64_t *v, size_t n, double p) {
  double k = ceil(p / 100 * (double)n - 1e-9);
  size_t i = k < 1 ? 0 : (size_t)k - 1;
  return v[i < n ? i : n - 1];
}

/* |reported - true| <= true * relative_error (analysis.h). */
static void near(uint64_t got, uint64_t want, double err, const char *what) {
  double d = fabs((double)got - (double)want);
  ck_assert_msg(d <= (double)want * err + 0.5,
                "%s: %" PRIu64 ", true value %" PRIu64 " (bound %g)", what,
                got, want, err);
}

/* Spans of known durations: 2000 of "req" on two domains, durations in
 * 1 us .. ~30 ms spread unevenly, so that the percentiles fall on values
 * the histogram cannot hold exactly. */
#define N_REQ 2000
static uint64_t req_dur[N_REQ];

static void craft_requests(struct craft *c) {
  craft_user_name(c, 0, "req");
  uint64_t ts[CRAFT_DOMAINS] = {1000000, 1000000};
  for (int i = 0; i < N_REQ; i++) {
    uint64_t d = 1000 + (uint64_t)i * (uint64_t)i * 7 + (uint64_t)(i % 13) * 331;
    req_dur[i] = d;
    int dom = i % CRAFT_DOMAINS;
    span_begin(c, dom, ts[dom], 0);
    span_end(c, dom, ts[dom] + d, 0);
    ts[dom] += d + 500;
  }
}

START_TEST(test_known_durations) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/req.events", er_tmpdir());
  struct craft c;
  craft_init(&c);
  craft_requests(&c);
  craft_write(&c, path);
  craft_free(&c);

  uint64_t sorted[N_REQ], total = 0;
  memcpy(sorted, req_dur, sizeof sorted);
  qsort(sorted, N_REQ, sizeof sorted[0], cmp_u64);
  for (int i = 0; i < N_REQ; i++) total += sorted[i];

  struct lat_run r = tool("latency", "--json", "--span", "req", path, NULL);
  const char *s = span_obj(r.out, "req");
  double err = json_double(s, "relative_error");
  ck_assert_msg(err > 0 && err <= 0.001, "%g", err);
  ck_assert_uint_eq(json_u64(s, "count"), N_REQ);
  ck_assert_uint_eq(json_u64(s, "total_ns"), total);
  ck_assert_uint_eq(json_u64(s, "min_ns"), sorted[0]);
  ck_assert_uint_eq(json_u64(s, "max_ns"), sorted[N_REQ - 1]);
  const char *pc = json_at(s, "percentiles");
  static const struct {
    const char *key;
    double p;
  } rows[] = {{"50", 50}, {"75", 75}, {"90", 90}, {"99", 99}, {"99.9", 99.9}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    near(json_u64(pc, rows[i].key), rank(sorted, N_REQ, rows[i].p), err,
         rows[i].key);
  json_counts(s, "cut=0 unfinished=0 unmatched_ends=0");
  lat_run_free(&r);

  /* A glob, and the text report. */
  r = tool("latency", "--span", "r*", path, NULL, NULL);
  ck_assert_msg(strstr(r.out, "span req: 2000 (user span"), "%s", r.out);
  ck_assert_msg(strstr(r.out, "percentile"), "%s", r.out);
  lat_run_free(&r);
  r = tool("latency", "--span", "nosuch", path, NULL, NULL);
  ck_assert_msg(strstr(r.out, "span nosuch: none in the events read"), "%s",
                r.out);
  lat_run_free(&r);

  /* stats: count, total, mean, p50, p99, max, per domain and in total. */
  r = tool("stats", "--json", path, NULL, NULL, NULL);
  const char *st = json_named(r.out, "spans", "req");
  ck_assert_msg(st != NULL, "%s", r.out);
  ck_assert_uint_eq(json_u64(st, "count"), N_REQ);
  ck_assert_uint_eq(json_u64(st, "total_ns"), total);
  ck_assert_msg(fabs(json_double(st, "mean_ns") - (double)total / N_REQ) < 1,
                "%s", st);
  near(json_u64(st, "p50_ns"), rank(sorted, N_REQ, 50), err, "p50");
  near(json_u64(st, "p99_ns"), rank(sorted, N_REQ, 99), err, "p99");
  ck_assert_uint_eq(json_u64(st, "max_ns"), sorted[N_REQ - 1]);
  /* Domain 1 had the odd ones. */
  const char *d1 = strstr(st, "{\"domain\": 1, ");
  ck_assert_msg(d1 != NULL, "%s", st);
  uint64_t odd = 0, oddmax = 0;
  for (int i = 1; i < N_REQ; i += 2) {
    odd += req_dur[i];
    if (req_dur[i] > oddmax) oddmax = req_dur[i];
  }
  ck_assert_uint_eq(json_u64(d1, "count"), N_REQ / 2);
  ck_assert_uint_eq(json_u64(d1, "total_ns"), odd);
  ck_assert_uint_eq(json_u64(d1, "max_ns"), oddmax);
  lat_run_free(&r);
  /* The text table: the name's row, then one per domain. */
  r = tool("stats", path, NULL, NULL, NULL, NULL);
  const char *row = strstr(r.out, "\nreq ");
  ck_assert_msg(row && strstr(row, "\n  domain 0 ") && strstr(row, "\n  domain 1 "),
                "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* a: 10 spans "req" of 1000 ns; b: 30 of 5000 ns. */
static void fill_req_spans(struct craft *c, int f) {
  craft_user_name(c, 0, "req");
  for (int i = 0; i < (f ? 30 : 10); i++) {
    span_begin(c, 0, 100000 * (uint64_t)(i + 1), 0);
    span_end(c, 0, 100000 * (uint64_t)(i + 1) + (f ? 5000 : 1000), 0);
  }
}

/* Two files: stats and latency --span in total (the histograms added
 * up, no domain rows) and per process. */
START_TEST(test_two_processes) {
  ER_NEED_TOOL();
  char a[PATH_MAX], b[PATH_MAX];
  craft_pair(a, b, fill_req_spans);
  const char *args[] = {"stats", "--json", a, b, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  const char *t = json_named(r.out, "spans", "req");
  ck_assert_msg(t != NULL, "%s", r.out);
  ck_assert_uint_eq(json_u64(t, "count"), 40);
  ck_assert_uint_eq(json_u64(t, "total_ns"), 10 * 1000 + 30 * 5000);
  ck_assert_uint_eq(json_u64(t, "p50_ns"), 5000);
  ck_assert_uint_eq(json_u64(t, "min_ns"), 1000);
  /* The total's object has no domain rows; each process's has. */
  const char *procs = json_at(r.out, "processes");
  const char *eol = strchr(t, '\n'), *dr = strstr(t, "\"domains\"");
  ck_assert_msg(!dr || (eol && dr > eol), "%.400s", t); /* one per line */
  const char *pa = json_named(procs, "spans", "req");
  ck_assert_msg(pa != NULL, "%s", procs);
  ck_assert_uint_eq(json_u64(pa, "count"), 10);
  ck_assert_msg(strstr(pa, "\"domains\": [{\"domain\": 0, "), "%s", pa);
  lat_run_free(&r);
  const char *l[] = {"latency", "--json", "--span", "req", a, b, NULL};
  r = lat_run_tool(l);
  lat_assert_ok(&r);
  t = json_named(r.out, "spans", "req");
  ck_assert_uint_eq(json_u64(t, "count"), 40);
  ck_assert_uint_eq(json_u64(t, "max_ns"), 5000);
  procs = json_at(r.out, "processes");
  ck_assert_uint_eq(json_u64(json_named(procs, "spans", "req"), "count"), 10);
  lat_run_free(&r);
}
END_TEST

/* Nesting and overlap: spans of one name pair by nesting, spans of two
 * names overlap freely. */
START_TEST(test_nested_overlapping) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/nest.events", er_tmpdir());
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, 0, "a");
  craft_user_name(&c, 1, "b");
  span_begin(&c, 0, 1000, 0);  /* a outer: 1000 .. 1400 = 400 */
  span_begin(&c, 0, 1010, 1);  /* b: 1010 .. 1300 = 290 */
  span_begin(&c, 0, 1100, 0);  /* a inner: 1100 .. 1200 = 100 */
  span_end(&c, 0, 1200, 0);
  span_end(&c, 0, 1300, 1);
  span_end(&c, 0, 1400, 0);
  craft_write(&c, path);
  craft_free(&c);
  const char *args[] = {"latency", "--json", "--span", "a", "--span", "b",
                        path, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  const char *a = span_obj(r.out, "a");
  json_counts(a, "count=2 min_ns=100 max_ns=400");
  const char *b = span_obj(r.out, "b");
  ck_assert_uint_eq(json_u64(b, "count"), 1);
  ck_assert_uint_eq(json_u64(b, "max_ns"), 290);
  lat_run_free(&r);
}
END_TEST

/* A span whose begin was lost (a wrapped ring), one open at the end, an
 * end without a begin and no loss before it. */
START_TEST(test_cut_unfinished_unmatched) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/cut.events", er_tmpdir());
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, 0, "x");
  /* Domain 1 starts after 64 overwritten words: its first end is the end
   * of a span cut there. */
  craft_skip(&c, 1, 64);
  span_end(&c, 1, 5000, 0);
  span_begin(&c, 1, 6000, 0);
  span_end(&c, 1, 6700, 0);
  /* Domain 0: an end with no loss before it, a whole span, one left open. */
  span_end(&c, 0, 100, 0);
  span_begin(&c, 0, 200, 0);
  span_end(&c, 0, 500, 0);
  span_begin(&c, 0, 900, 0);
  craft_write(&c, path);
  craft_free(&c);
  struct lat_run r = tool("latency", "--json", "--span", "x", path, NULL);
  const char *x = span_obj(r.out, "x");
  json_counts(x,
              "count=2 min_ns=300 max_ns=700 cut=1 unfinished=1 unmatched_ends=1");
  lat_run_free(&r);
  r = tool("latency", "--span", "x", path, NULL, NULL);
  ck_assert_msg(strstr(r.out, "not included: 1 span cut (by lost events or "
                              "the window's start), 1 "
                              "unfinished, 1 unmatched end"),
                "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* Two threads of a shared slot (as OCaml 4's threads share domain 0),
 * their turns forced by a baton: each span pairs on its own thread's
 * track.  Paired by nesting on the domain alone, the script would give
 * three spans and nothing apart; on the threads' tracks it gives two, one
 * unfinished (main's last begin) and one unmatched end (worker's last). */
static pthread_mutex_t baton_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t baton_cond = PTHREAD_COND_INITIALIZER;
static int turn, span_x;
static const struct {
  int who, is_end;
} script[] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 0}, {1, 1}};
#define NSTEPS ((int)(sizeof script / sizeof script[0]))

static void play(int who) {
  for (int i = 0; i < NSTEPS; i++) {
    if (script[i].who != who) continue;
    pthread_mutex_lock(&baton_lock);
    while (turn != i) pthread_cond_wait(&baton_cond, &baton_lock);
    eventring_write_span(span_x, script[i].is_end);
    turn++;
    pthread_cond_broadcast(&baton_cond);
    pthread_mutex_unlock(&baton_lock);
  }
}

static void *worker(void *arg) {
  (void)arg;
  ck_assert_int_eq(eventring_domain_join(0), 0);
  eventring_thread_id(10);
  play(1);
  return NULL;
}

START_TEST(test_thread_tracks) {
  ER_NEED_TOOL();
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  span_x = eventring_register("x", EVENTRING_TYPE_SPAN);
  ck_assert_int_ge(span_x, 0);
  ck_assert_int_eq(eventring_domain_join(0), 0);
  eventring_thread_id(0);
  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, worker, NULL), 0);
  play(0);
  pthread_join(th, NULL);
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_domain_release();

  struct lat_run r = tool("latency", "--json", "--span", "x", path, NULL);
  const char *t = span_obj(r.out, "x");
  json_counts(t, "count=2 unfinished=1 unmatched_ends=1 cut=0");
  lat_run_free(&r);
  r = tool("stats", "--json", path, NULL, NULL, NULL);
  const char *st = json_named(r.out, "spans", "x");
  ck_assert_msg(st != NULL, "%s", r.out);
  ck_assert_uint_eq(json_u64(st, "count"), 2);
  ck_assert_uint_eq(json_u64(st, "unfinished"), 1);
  lat_run_free(&r);
  /* A filter that keeps only the spans keeps the markers they need. */
  const char *args[] = {"latency", "--json", "--kind", "user_span",
                        "--span",  "x",      path,     NULL};
  r = lat_run_tool(args);
  lat_assert_ok(&r);
  t = span_obj(r.out, "x");
  ck_assert_uint_eq(json_u64(t, "count"), 2);
  ck_assert_uint_eq(json_u64(t, "unmatched_ends"), 1);
  lat_run_free(&r);
  unlink(path);
  free(path);
}
END_TEST

/* --phase: a runtime phase at any depth, nested in another. */
START_TEST(test_phase) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/phase.events", er_tmpdir());
  struct craft c;
  craft_init(&c);
  uint64_t ts = 1000;
  /* craft_pause nests minor_local_roots over [dur/4, dur/2]. */
  for (uint64_t dur = 400; dur <= 4000; dur += 400) ts = craft_pause(&c, 0, ts, dur) + 100;
  craft_write(&c, path);
  craft_free(&c);
  struct lat_run r =
      tool("latency", "--json", "--phase", "minor_local_roots", path, NULL);
  const char *p = span_obj(r.out, "minor_local_roots");
  json_counts(p, "count=10 min_ns=100 max_ns=1000 total_ns=5500");
  ck_assert_msg(strstr(p, "\"kind\": \"phase\""), "%s", p);
  lat_run_free(&r);
  /* --span is not an option of stats. */
  const char *args[] = {"stats", "--span", "x", path, NULL};
  r = lat_run_tool(args);
  ck_assert_int_eq(r.status, 2);
  lat_run_free(&r);
}
END_TEST

/* stats: user ints, units, counters, per domain and in total. */
START_TEST(test_stats_values) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/values.events", er_tmpdir());
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, 2, "depth");
  craft_user_name(&c, 3, "tick");
  /* 1 s from the first event to the last. */
  craft_user_int(&c, 0, 1000000000, 2, 5);
  craft_user_int(&c, 0, 1100000000, 2, -3);
  craft_user_int(&c, 1, 1200000000, 2, 40);
  craft_user_int(&c, 0, 1300000000, 2, 7);
  for (int i = 0; i < 4; i++) craft_user_unit(&c, i % 2, 1400000000 + i, 3);
  craft_counter(&c, 0, 1500000000, CT_MINOR_PROMOTED, 30);
  craft_counter(&c, 1, 1600000000, CT_MINOR_PROMOTED, 10);
  craft_counter(&c, 0, 2000000000, CT_MINOR_PROMOTED, 20);
  craft_write(&c, path);
  craft_free(&c);
  struct lat_run r = tool("stats", "--json", path, NULL, NULL, NULL);
  const char *d = json_named(r.out, "user_ints", "depth");
  ck_assert_msg(d != NULL, "%s", r.out);
  ck_assert_uint_eq(json_u64(d, "count"), 4);
  ck_assert_int_eq((int)json_double(d, "min"), -3);
  ck_assert_int_eq((int)json_double(d, "max"), 40);
  ck_assert_int_eq((int)json_double(d, "last"), 7);
  ck_assert_msg(fabs(json_double(d, "mean") - 12.25) < 1e-9, "%s", d);
  const char *d1 = strstr(d, "{\"domain\": 1, ");
  ck_assert_msg(d1 != NULL, "%s", d);
  ck_assert_int_eq((int)json_double(d1, "last"), 40);
  const char *u = json_named(r.out, "user_units", "tick");
  ck_assert_msg(u != NULL, "%s", r.out);
  ck_assert_uint_eq(json_u64(u, "count"), 4);
  /* 4 over a wall time of 1 s. */
  ck_assert_msg(fabs(json_double(u, "rate_per_s") - 4) < 1e-9, "%s", u);
  const char *ct = json_named(r.out, "counters", "minor_promoted");
  ck_assert_msg(ct != NULL, "%s", r.out);
  json_counts(ct, "last=20 min=10 max=30 samples=3");
  lat_run_free(&r);
  r = tool("stats", path, NULL, NULL, NULL, NULL);
  ck_assert_msg(strstr(r.out, "depth"), "%s", r.out);
  lat_run_free(&r);
}
END_TEST

static TCase *tc_spans(void) {
  TCase *tc = er_tcase("spans");
  tcase_add_test(tc, test_known_durations);
  tcase_add_test(tc, test_two_processes);
  tcase_add_test(tc, test_nested_overlapping);
  tcase_add_test(tc, test_cut_unfinished_unmatched);
  tcase_add_test(tc, test_thread_tracks);
  tcase_add_test(tc, test_phase);
  tcase_add_test(tc, test_stats_values);
  return tc;
}

ER_TEST_MAIN("spans", tc_spans)
