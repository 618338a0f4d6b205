/* Tests the rules of `watch --when` (tools/analysis/rules.c): good rules parse and bad ones are refused with the column and what was expected; the evaluator, fed synthetic events in trace time, fires where the windows, percentiles, gc_share, `for` and and/or/not say it must, and names the rules whose events never came. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testlib.h"

#include "analysis/analysis.h"

#define MS 1000000ULL
#define S 1000000000ULL

/* ------------------------------------------------------------------ */
/* Parsing.                                                             */

static const char *const good[] = {
    "pause>5ms",
    "phase:major_slice>20ms",
    "span:http.request>1s",
    "int:queue_depth>1000",
    "int:delta>-5",
    "event:app.retry",
    "lost",
    "event:int\033[2J\n",
    "p99(pause, 10s) > 5ms",
    "p50(pause,10s)>5ms",
    "p999(phase:minor, 1s) >= 1ms",
    "gc_share(10s) > 30%",
    "gc_share(500ms) <= 2.5%",
    "count(event:app.retry, 1s) > 100",
    "count(lost, 1s) > 0",
    "rate(event:app.retry, 10s) > 50/s",
    "rate(span:db, 10s) > 50",
    "p99(span:http.request, 30s) > 20ms",
    "max(int:queue_depth, 5s) > 1000",
    "min(int:queue_depth, 5s) < -3",
    "avg(span:db, 1s) > 2ms",
    "p99(pause, 10s) > 5ms for 30s",
    "p99(pause, 10s) > 5ms and count(event:app.retry, 1s) > 100",
    "p99(pause, 10s) > 5ms or lost",
    "not count(event:heartbeat, 5s) > 0",
    "(p99(pause, 10s) > 5ms or gc_share(10s) > 30%) for 60s",
    "event:app.slow and not (gc_share(1s) > 50% or lost)",
    "  ( ( lost ) )  ",
};

START_TEST(test_parse_good) {
  struct rules *rs = rules_new();
  ck_assert_ptr_nonnull(rs);
  char err[512];
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    err[0] = 0;
    ck_assert_msg(rules_add(rs, good[i], err, sizeof err) == 0, "%s: %s",
                  good[i], err);
    ck_assert_str_eq(rules_text(rs, (int)i), good[i]);
  }
  ck_assert_int_eq(rules_count(rs), (int)(sizeof good / sizeof good[0]));
  rules_free(rs);
}
END_TEST

/* What names a rule's snapshots. */
START_TEST(test_reason) {
  static const struct {
    const char *rule, *reason;
  } t[] = {{"pause>5ms", "pause"},
           {"phase:minor>1ms", "phase"},
           {"span:a>1ms", "span"},
           {"int:q>1", "int"},
           {"event:x", "event"},
           {"lost", "lost"},
           {"p99(pause, 1s) > 1ms", "p99"},
           {"count(event:x, 1s) > 1 for 2s", "count"},
           {"gc_share(1s) > 1%", "gc_share"},
           {"lost or event:x", "rule"},
           {"not lost", "rule"}};
  struct rules *rs = rules_new();
  char err[512];
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    ck_assert_msg(rules_add(rs, t[i].rule, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(rules_reason(rs, (int)i), t[i].reason);
  }
  rules_free(rs);
}
END_TEST

/* A bad rule, the column of the error and what the message says. */
static const struct {
  const char *rule;
  int column;
  const char *says;
} bad[] = {
    {"", 1, "expected a condition"},
    {"fast", 1, "unknown condition 'fast'"},
    {"pause>10", 7, "duration '10' needs a unit (ns, us, ms, s)"},
    {"pause>fast", 7, "duration 'fast' is not a number"},
    {"pause", 6, "expected pause>DURATION, not the end of the rule"},
    {"pause<5ms", 6, "expected pause>DURATION"},
    {"phase:nope>1ms", 7, "unknown runtime phase 'nope'"},
    {"span:>1ms", 6, "no name after 'span:'"},
    {"event:", 7, "no event name"},
    {"int:q>x", 7, "'x' is not an integer"},
    {"int:q", 6, "expected int:NAME>VALUE"},
    {"p99(pause, 10s) > 5x", 19, "unknown unit 'x'"},
    {"p99(pause 10s) > 5ms", 11, "expected ',' and the window"},
    {"p99(pause, 10s > 5ms", 16, "expected ')'"},
    {"p99(pause, 10s) 5ms", 17, "expected a comparison"},
    {"p99(pause, 10s) >", 18, "expected the limit"},
    {"p99(queue, 10s) > 5ms", 5, "expected what p99() is over"},
    {"p99(event:x, 1s) > 5ms", 5, "p99() needs durations or values"},
    {"max(lost, 1s) > 1", 5, "max() needs durations or values"},
    {"p98(pause, 1s) > 1ms", 1, "unknown function 'p98'"},
    {"count(event:x, 1s) > many", 22, "expected a number"},
    {"count(event:x, 1s) > 5%", 22, "expected a number"},
    {"gc_share(10s) > 30", 17, "expected a percentage (e.g. 30%)"},
    {"gc_share(pause, 10s) > 30%", 10, "duration 'pause' is not a number"},
    {"count(event:x, 10ns) > 1", 16, "window too short"},
    {"lost for 10s", 6, "'for' needs a condition that lasts"},
    {"(lost or count(event:x, 1s) > 1) for 1s", 34, "'for' needs"},
    {"p99(pause, 1s) > 1ms for", 25, "expected how long it must hold"},
    {"p99(pause, 1s) > 1ms for ever", 26, "duration 'ever' is not a number"},
    {"lost and", 9, "expected a condition"},
    {"lost or or lost", 9, "expected a condition"},
    {"(lost", 6, "expected ')', 'and' or 'or'"},
    {"lost)", 5, "expected 'and', 'or' or the end of the rule, not ')'"},
    {"lost lost", 6, "expected 'and', 'or' or the end of the rule"},
    {"not", 4, "expected a condition"},
    {"event:x = 1", 9, "expected 'and', 'or'"},
};

START_TEST(test_parse_bad) {
  struct rules *rs = rules_new();
  char err[512], want[32];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    ck_assert_msg(rules_add(rs, bad[i].rule, err, sizeof err) < 0,
                  "'%s' was taken", bad[i].rule);
    snprintf(want, sizeof want, ", at column %d", bad[i].column);
    size_t n = strlen(err), w = strlen(want);
    ck_assert_msg(n > w && !strcmp(err + n - w, want), "'%s': %s (want %s)",
                  bad[i].rule, err, want);
    ck_assert_msg(strstr(err, bad[i].says) != NULL, "'%s': %s (want %s)",
                  bad[i].rule, err, bad[i].says);
  }
  ck_assert_int_eq(rules_count(rs), 0);
  rules_free(rs);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Evaluation.                                                          */

#define MAX_FIRES 64
struct fire {
  int rule, domain;
  uint64_t at, start;
  char measured[256];
};
static struct fire fires[MAX_FIRES];
static int nfires;

static void on_fire(void *arg, int rule, int domain, uint64_t at,
                    uint64_t start, const char *measured) {
  (void)arg;
  ck_assert_int_lt(nfires, MAX_FIRES);
  struct fire *f = &fires[nfires++];
  f->rule = rule;
  f->domain = domain;
  f->at = at;
  f->start = start;
  snprintf(f->measured, sizeof f->measured, "%s", measured);
}

/* An evaluator of `n` rules over 4 domains, the fires cleared. */
static struct rules_eval *setup(struct rules **rs, const char *const *rule,
                                int n) {
  *rs = rules_new();
  char err[512];
  for (int i = 0; i < n; i++)
    ck_assert_msg(rules_add(*rs, rule[i], err, sizeof err) == 0, "%s: %s",
                  rule[i], err);
  nfires = 0;
  struct rules_eval *e = rules_eval_new(*rs, 4, "events", on_fire, NULL);
  ck_assert_ptr_nonnull(e);
  return e;
}

static void unit(struct rules_eval *e, uint64_t ts, const char *name) {
  rules_user(e, 0, ts, RULES_UNIT, name, 0);
}

static void span(struct rules_eval *e, uint64_t ts, uint64_t dur,
                 const char *name) {
  rules_user(e, 0, ts, RULES_SPAN_BEGIN, name, 0);
  rules_user(e, 0, ts + dur, RULES_SPAN_END, name, 0);
}

/* The fires of rule `r`, their times in `at`. */
static int fired(int r, uint64_t *at, int max) {
  int n = 0;
  for (int i = 0; i < nfires; i++)
    if (fires[i].rule == r) {
      if (n < max) at[n] = fires[i].at;
      n++;
    }
  return n;
}

/* A count over a window fires at the boundary after it is exceeded,
 * once while it stays so, and again only after the window has slid past
 * the first burst. */
START_TEST(test_window_slides) {
  struct rules *rs;
  const char *r[] = {"count(event:r, 1s) > 3"};
  struct rules_eval *e = setup(&rs, r, 1);
  /* Slices of 50 ms.  Four at 10 s: the boundary at 10.05 s fires. */
  for (int i = 0; i < 4; i++) unit(e, 10 * S + (uint64_t)i * MS, "r");
  ck_assert_int_eq(nfires, 0);
  rules_time(e, 1, 10 * S + 49 * MS);
  ck_assert_int_eq(nfires, 0);
  rules_time(e, 1, 10 * S + 50 * MS);
  ck_assert_int_eq(nfires, 1);
  ck_assert_uint_eq(fires[0].at, 10 * S + 50 * MS);
  ck_assert_str_eq(fires[0].measured, "4");
  ck_assert_int_eq(fires[0].domain, 1);
  /* Still above, no new fire; three more at 10.5 s. */
  for (int i = 0; i < 3; i++) unit(e, 10 * S + 500 * MS, "r");
  rules_time(e, 0, 11 * S);
  ck_assert_int_eq(nfires, 1);
  /* At 11.05 s the first four leave: 3, not above. */
  rules_time(e, 0, 11 * S + 50 * MS);
  ck_assert_int_eq(nfires, 1);
  /* One more: 4 again, a new edge, at the next boundary. */
  unit(e, 11 * S + 60 * MS, "r");
  rules_time(e, 0, 11 * S + 120 * MS);
  ck_assert_int_eq(nfires, 2);
  ck_assert_uint_eq(fires[1].at, 11 * S + 100 * MS);
  ck_assert_str_eq(fires[1].measured, "4");
  /* A long gap: everything leaves; a burst an hour on fires at its
   * first boundary. */
  for (int i = 0; i < 5; i++) unit(e, 3600 * S + 7 * MS, "r");
  rules_time(e, 0, 3600 * S + 60 * MS);
  ck_assert_int_eq(nfires, 3);
  ck_assert_uint_eq(fires[2].at, 3600 * S + 50 * MS);
  ck_assert_str_eq(fires[2].measured, "5");
  rules_eval_free(e);
  rules_free(rs);
}
END_TEST

/* The end of a process's events: its last slices are evaluated at the
 * end of the slices then current (the largest window's, here 5 s), and
 * no later: a `for` that would need trace time past it does not fire. */
START_TEST(test_finish) {
  struct rules *rs;
  const char *r[] = {"count(event:r, 100s) > 3",
                     "count(event:r, 1s) > 3 for 2s",
                     "count(event:q, 100ms) > 0"};
  struct rules_eval *e = setup(&rs, r, 3);
  for (int i = 0; i < 4; i++) unit(e, 10 * S + (uint64_t)i * MS, "r");
  ck_assert_int_eq(nfires, 0);
  rules_finish(e);
  uint64_t at[4];
  ck_assert_int_eq(nfires, 1);
  ck_assert_int_eq(fired(0, at, 4), 1);
  ck_assert_uint_eq(at[0], 15 * S);
  ck_assert_str_eq(fires[0].measured, "4");
  /* Once is all: the end is not moved again. */
  rules_finish(e);
  ck_assert_int_eq(nfires, 1);
  rules_eval_free(e);
  rules_free(rs);
  /* Before any event, nothing to evaluate. */
  e = setup(&rs, r, 3);
  rules_finish(e);
  ck_assert_int_eq(nfires, 0);
  rules_eval_free(e);
  rules_free(rs);
}
END_TEST

/* Late events (another domain read later) go into their own slice. */
START_TEST(test_late_event) {
  struct rules *rs;
  const char *r[] = {"count(event:r, 100ms) >= 3"};
  struct rules_eval *e = setup(&rs, r, 1);
  unit(e, 1 * S, "r");
  unit(e, 1 * S + 30 * MS, "r");
  /* Slices of 5 ms: trace time is at 1.030 s; one at 1.010 s comes late,
   * and one at 0.5 s, out of every window, is dropped. */
  rules_user(e, 2, 1 * S + 10 * MS, RULES_UNIT, "r", 0);
  rules_user(e, 2, S / 2, RULES_UNIT, "r", 0);
  ck_assert_int_eq(nfires, 0);
  rules_time(e, 0, 1 * S + 35 * MS);
  ck_assert_int_eq(nfires, 1);
  ck_assert_str_eq(fires[0].measured, "3");
  rules_eval_free(e);
  rules_free(rs);
}
END_TEST

/* `for`: held at every boundary for the duration; a break restarts it. */
START_TEST(test_for_holds_and_breaks) {
  struct rules *rs;
  const char *r[] = {"count(event:tick, 100ms) >= 90 for 300ms"};
  struct rules_eval *e = setup(&rs, r, 1);
  /* A tick every millisecond from 10 s to 11 s, none until 11.05 s, then
   * again until 12 s.  Slices of 5 ms; the window [B - 100ms, B) holds 90
   * ticks first at B = 10.090 s, so the rule fires at 10.390 s.  After
   * the last tick at 11.000 s the count falls under 90 at 11.015 s; from
   * 11.050 s on it is 90 again at 11.140 s: the rule fires at 11.440 s. */
  for (uint64_t t = 10 * S; t <= 11 * S; t += MS) unit(e, t, "tick");
  ck_assert_int_eq(nfires, 1);
  ck_assert_uint_eq(fires[0].at, 10 * S + 390 * MS);
  ck_assert_str_eq(fires[0].measured, "100");
  for (uint64_t t = 11 * S + 50 * MS; t <= 12 * S; t += MS) unit(e, t, "tick");
  uint64_t at[4];
  ck_assert_int_eq(fired(0, at, 4), 2);
  ck_assert_uint_eq(at[1], 11 * S + 440 * MS);
  rules_eval_free(e);
  rules_free(rs);
}
END_TEST

/* and, or, not over two counts. */
START_TEST(test_and_or_not) {
  struct rules *rs;
  const char *r[] = {
      "count(event:a, 100ms) > 5 and count(event:b, 100ms) > 5",
      "count(event:a, 100ms) > 5 or count(event:b, 100ms) > 5",
      "not count(event:a, 100ms) > 5 and count(event:b, 100ms) > 5",
      "(count(event:a, 100ms) > 5 or count(event:b, 100ms) > 5) and not "
      "(count(event:a, 100ms) > 5 and count(event:b, 100ms) > 5)"};
  struct rules_eval *e = setup(&rs, r, 4);
  /* Ten a at 1 s, ten b at 2 s, ten of each at 3 s, a tick to 4 s. */
  for (int i = 0; i < 10; i++) unit(e, 1 * S, "a");
  for (int i = 0; i < 10; i++) unit(e, 2 * S, "b");
  for (int i = 0; i < 10; i++) unit(e, 3 * S, "a"), unit(e, 3 * S, "b");
  rules_time(e, 0, 4 * S);
  uint64_t at[4];
  ck_assert_int_eq(fired(0, at, 4), 1);
  ck_assert_uint_eq(at[0], 3 * S + 5 * MS);
  ck_assert_int_eq(fired(1, at, 4), 3);
  ck_assert_uint_eq(at[0], 1 * S + 5 * MS);
  ck_assert_uint_eq(at[1], 2 * S + 5 * MS);
  ck_assert_uint_eq(at[2], 3 * S + 5 * MS);
  ck_assert_int_eq(fired(2, at, 4), 1);
  ck_assert_uint_eq(at[0], 2 * S + 5 * MS);
  ck_assert_int_eq(fired(3, at, 4), 2);
  ck_assert_uint_eq(at[0], 1 * S + 5 * MS);
  ck_assert_uint_eq(at[1], 2 * S + 5 * MS);
  /* A compound rule says what each aggregate measured. */
  ck_assert_str_eq(fires[nfires - 1].measured,
                   "count(event:a, 100ms) = 10, count(event:b, 100ms) = 10");
  rules_eval_free(e);
  rules_free(rs);
}
END_TEST

/* The measured "9.961 ms" as nanoseconds. */
static double ms_of(const char *m) {
  char *end;
  double v = strtod(m, &end);
  ck_assert_msg(!strcmp(end, " ms"), "'%s' is not in ms", m);
  return v * 1e6;
}

/* A percentile over a window of spans: the slow ones must make the rank. */
START_TEST(test_percentile) {
  struct rules *rs;
  const char *r[] = {"p99(span:q, 1s) > 5ms", "p50(span:q, 1s) > 5ms",
                     "max(span:q, 1s) > 5ms"};
  struct rules_eval *e = setup(&rs, r, 3);
  uint64_t t = 10 * S;
  /* 100 spans of 1 ms, one of 10 ms: p99 is rank 100 of 101, 1 ms. */
  for (int i = 0; i < 100; i++, t += 2 * MS) span(e, t, MS, "q");
  span(e, t, 10 * MS, "q");
  t += 60 * MS;
  rules_time(e, 0, t);
  ck_assert_int_eq(nfires, 1);
  ck_assert_int_eq(fires[0].rule, 2);
  ck_assert_str_eq(fires[0].measured, "10.00 ms");
  /* Another: rank 101 of 102 is a slow one.  Within the window's
   * 1/64. */
  span(e, t, 10 * MS, "q");
  t += 60 * MS;
  rules_time(e, 0, t);
  ck_assert_int_eq(nfires, 2);
  ck_assert_int_eq(fires[1].rule, 0);
  double v = ms_of(fires[1].measured);
  ck_assert_msg(v >= 10e6 * (1 - 1.0 / 64) && v <= 10e6, "%s",
                fires[1].measured);
  /* The fast ones leave the window at 11.2 s: p50 is a slow one's. */
  t += 2 * S;
  rules_time(e, 0, t);
  uint64_t at[4];
  ck_assert_int_eq(fired(1, at, 4), 1);
  ck_assert_uint_eq(at[0], 11 * S + 200 * MS);
  ck_assert_str_eq(fires[2].measured, "10.00 ms");
  /* Then the window is empty: no percentile, false; a slow span alone
   * fires the three again. */
  span(e, t, 8 * MS, "q");
  rules_time(e, 0, t + 100 * MS);
  ck_assert_int_eq(fired(0, at, 4), 2);
  ck_assert_int_eq(fired(1, at, 4), 2);
  ck_assert_int_eq(fired(2, at, 4), 2);
  ck_assert_int_eq(nfires, 6);
  ck_assert_str_eq(fires[5].measured, "8.000 ms");
  rules_eval_free(e);
  rules_free(rs);
}
END_TEST

/* gc_share: the busiest domain's time in pauses over the window. */
START_TEST(test_gc_share) {
  struct rules *rs;
  const char *r[] = {"gc_share(1s) > 30%", "gc_share(1s) > 45%"};
  struct rules_eval *e = setup(&rs, r, 2);
  /* Domain 1: 40 ms of every 100 ms from 10 s; domain 0: 5 ms.  The
   * 8th pause of domain 1 ends at 10.740 s: 320 ms at the boundary of
   * 10.750 s. */
  for (uint64_t k = 0; k < 30; k++) {
    uint64_t t = 10 * S + k * 100 * MS;
    rules_pause(e, 0, t + 5 * MS, 5 * MS);
    rules_pause(e, 1, t + 40 * MS, 40 * MS);
  }
  ck_assert_int_eq(nfires, 1);
  ck_assert_int_eq(fires[0].rule, 0);
  ck_assert_uint_eq(fires[0].at, 10 * S + 750 * MS);
  ck_assert_str_eq(fires[0].measured, "32.0%");
  /* A pause across slices counts in each: 600 ms from 20 s. */
  rules_pause(e, 2, 20 * S + 600 * MS, 600 * MS);
  rules_time(e, 0, 20 * S + 650 * MS);
  ck_assert_int_eq(nfires, 3);
  ck_assert_int_eq(fires[2].rule, 1);
  ck_assert_str_eq(fires[2].measured, "60.0%");
  rules_eval_free(e);
  rules_free(rs);
}
END_TEST

/* Ints: extremes and mean of the values, negative ones too. */
START_TEST(test_int_values) {
  struct rules *rs;
  const char *r[] = {"max(int:q, 1s) > 1000", "min(int:q, 1s) < -3",
                     "avg(int:q, 1s) >= 10", "int:q>1000"};
  struct rules_eval *e = setup(&rs, r, 4);
  rules_user(e, 0, 10 * S, RULES_INT, "q", 5);
  rules_user(e, 0, 10 * S + MS, RULES_INT, "q", -4);
  rules_user(e, 0, 10 * S + 2 * MS, RULES_INT, "q", 1001);
  ck_assert_int_eq(nfires, 1); /* int:q>1000 at once */
  ck_assert_str_eq(fires[0].measured, "1001 (domain 0)");
  ck_assert_uint_eq(fires[0].at, 10 * S + 2 * MS);
  rules_time(e, 0, 10 * S + 60 * MS);
  ck_assert_int_eq(nfires, 4);
  ck_assert_str_eq(fires[1].measured, "1001");
  ck_assert_str_eq(fires[2].measured, "-4");
  ck_assert_str_eq(fires[3].measured, "334.0");
  rules_eval_free(e);
  rules_free(rs);
}
END_TEST

/* Simple conditions fire at each event, as --when always did; mixed
 * with an aggregate, only while it holds. */
START_TEST(test_instants) {
  struct rules *rs;
  const char *r[] = {"pause>10ms", "event:x",
                     "event:x and count(event:y, 100ms) > 2",
                     "span:s>5ms", "lost"};
  struct rules_eval *e = setup(&rs, r, 5);
  rules_pause(e, 1, 10 * S, 20 * MS);
  rules_pause(e, 1, 10 * S + MS, 5 * MS);
  ck_assert_int_eq(nfires, 1);
  ck_assert_str_eq(fires[0].measured, "20.00 ms (domain 1)");
  ck_assert_uint_eq(fires[0].start, 10 * S - 20 * MS);
  unit(e, 10 * S + 2 * MS, "x");
  unit(e, 10 * S + 2 * MS, "x");
  ck_assert_int_eq(nfires, 3);
  for (int i = 0; i < 3; i++) unit(e, 10 * S + 3 * MS, "y");
  rules_time(e, 0, 10 * S + 10 * MS);
  rules_user(e, 3, 10 * S + 11 * MS, RULES_UNIT, "x", 0);
  ck_assert_int_eq(nfires, 5);
  ck_assert_int_eq(fires[4].rule, 2);
  ck_assert_int_eq(fires[4].domain, 3);
  ck_assert_str_eq(fires[4].measured,
                   "domain 3, count(event:y, 100ms) = 3");
  span(e, 10 * S + 20 * MS, 6 * MS, "s");
  span(e, 10 * S + 30 * MS, 4 * MS, "s");
  ck_assert_int_eq(nfires, 6);
  ck_assert_uint_eq(fires[5].start, 10 * S + 20 * MS);
  /* A cut span is not measured. */
  rules_user(e, 0, 10 * S + 40 * MS, RULES_SPAN_BEGIN, "s", 0);
  rules_cut(e, 0);
  rules_user(e, 0, 10 * S + 50 * MS, RULES_SPAN_END, "s", 0);
  ck_assert_int_eq(nfires, 6);
  rules_lost(e, 2, 10 * S + 60 * MS, 7);
  ck_assert_int_eq(nfires, 7);
  ck_assert_str_eq(fires[6].measured, "7 events (domain 2)");
  rules_eval_free(e);
  rules_free(rs);
}
END_TEST

/* The sources that never came are named; lost and gc_share are not. */
START_TEST(test_unseen) {
  struct rules *rs;
  const char *r[] = {"count(event:nope, 1s) > 1 or event:nope or pause>1s",
                     "lost or gc_share(1s) > 1%", "event:x"};
  struct rules_eval *e = setup(&rs, r, 3);
  char buf[256];
  ck_assert_int_eq(rules_unseen(rs, 0, buf, sizeof buf), 2);
  ck_assert_str_eq(buf, "event:nope, GC pause");
  ck_assert_int_eq(rules_unseen(rs, 1, buf, sizeof buf), 0);
  ck_assert_int_eq(rules_unseen(rs, 2, buf, sizeof buf), 1);
  unit(e, S, "nope");
  unit(e, S, "x");
  ck_assert_int_eq(rules_unseen(rs, 0, buf, sizeof buf), 1);
  ck_assert_str_eq(buf, "GC pause");
  ck_assert_int_eq(rules_unseen(rs, 2, buf, sizeof buf), 0);
  rules_eval_free(e);
  rules_free(rs);
}
END_TEST

static TCase *tc_parse(void) {
  TCase *tc = er_tcase("parse");
  tcase_add_test(tc, test_parse_good);
  tcase_add_test(tc, test_reason);
  tcase_add_test(tc, test_parse_bad);
  return tc;
}

static TCase *tc_eval(void) {
  TCase *tc = er_tcase("eval");
  tcase_add_test(tc, test_window_slides);
  tcase_add_test(tc, test_late_event);
  tcase_add_test(tc, test_finish);
  tcase_add_test(tc, test_for_holds_and_breaks);
  tcase_add_test(tc, test_and_or_not);
  tcase_add_test(tc, test_percentile);
  tcase_add_test(tc, test_gc_share);
  tcase_add_test(tc, test_int_values);
  tcase_add_test(tc, test_instants);
  tcase_add_test(tc, test_unseen);
  return tc;
}

ER_TEST_MAIN("rules", tc_parse, tc_eval)
