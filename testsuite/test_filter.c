/* Tests the filters every reading subcommand takes (tools/input/filter.c:
 * --domain, --event, --kind, --since, --until, --last, in relative and
 * wall-clock time) and `dump --merge`: on crafted files whose timestamps
 * are known, a file written here (for the wall clock), and the OCaml 5
 * vectors. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"
#include "lat_craft.h"

#define MS UINT64_C(1000000)
#define T0 (UINT64_C(5000) * MS)

static struct lat_run run(const char *const *args) {
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  return r;
}

/* Lines of `out` that hold `what` (all event lines when NULL). */
static int count_lines(const char *out, const char *what) {
  int n = 0;
  for (const char *p = out; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    char line[1024];
    if (len >= sizeof line) len = sizeof line - 1;
    memcpy(line, p, len);
    line[len] = '\0';
    if (strncmp(line, "SUMMARY", 7) && (!what || strstr(line, what))) n++;
    p = nl ? nl + 1 : NULL;
  }
  return n;
}

/* Every event line's ts= (raw) lies in [lo, hi). */
static void all_within(const char *out, uint64_t lo, uint64_t hi) {
  for (const char *p = strstr(out, " ts="); p; p = strstr(p + 1, " ts=")) {
    uint64_t ts = strtoull(p + 4, NULL, 10);
    ck_assert_msg(ts >= lo && ts < hi, "ts %" PRIu64 " not in [%" PRIu64
                  ", %" PRIu64 ")", ts, lo, hi);
  }
}

/* Domain 0: an int "v" every ms for 100 ms from T0 (value i); domain 1:
 * a pause every 10 ms from T0 + 5 ms, of (i + 1) * 10 us, and a unit
 * "u" after each. */
static void craft_file(char *path, size_t size) {
  snprintf(path, size, "%s/filter.events", er_tmpdir());
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, 0, "v");
  craft_user_name(&c, 1, "u");
  for (int i = 0; i < 100; i++) craft_user_int(&c, 0, T0 + (uint64_t)i * MS, 0, i);
  for (int i = 0; i < 10; i++) {
    uint64_t at = T0 + 5 * MS + (uint64_t)i * 10 * MS;
    uint64_t end = craft_pause(&c, 1, at, (uint64_t)(i + 1) * 10000);
    craft_user_unit(&c, 1, end + 1, 1);
  }
  craft_write(&c, path);
  craft_free(&c);
}

START_TEST(test_domain_event_kind) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  craft_file(path, sizeof path);
  const char *a1[] = {"dump", "--time=raw", "--domain", "1", path, NULL};
  struct lat_run r = run(a1);
  ck_assert_int_eq(count_lines(r.out, "domain=0 "), 0);
  /* 10 pauses of 4 events (minor_local_roots nested) and 10 units. */
  ck_assert_int_eq(count_lines(r.out, NULL), 50);
  lat_run_free(&r);
  const char *a2[] = {"dump", "--time=raw", "--event", "minor*", path, NULL};
  r = run(a2);
  ck_assert_int_eq(count_lines(r.out, NULL), 40);
  ck_assert_int_eq(count_lines(r.out, "name=minor"), 40);
  lat_run_free(&r);
  const char *a3[] = {"dump",   "--time=raw", "--kind",
                      "user_unit,runtime_end", path, NULL};
  r = run(a3);
  ck_assert_int_eq(count_lines(r.out, NULL), 30);
  ck_assert_int_eq(count_lines(r.out, "kind=user_unit"), 10);
  ck_assert_int_eq(count_lines(r.out, "kind=runtime_end"), 20);
  lat_run_free(&r);
  /* stats of one domain: the other's events are not read. */
  const char *a4[] = {"stats", "--json", "--domain", "0", path, NULL};
  r = run(a4);
  ck_assert_uint_eq(json_u64(json_at(r.out, "gc"), "pauses"), 0);
  ck_assert_uint_eq(json_u64(json_named(r.out, "user_ints", "v"), "count"),
                    100);
  lat_run_free(&r);
  /* Usage errors. */
  const char *bad[][6] = {{"dump", "--kind", "nosuch", path, NULL},
                          {"dump", "--domain", "x", path, NULL},
                          {"dump", "--since", "12:9x", path, NULL},
                          {"stats", "--until", "3", path, NULL},
                          {"dump", "--last", "1s", "--since", "1s", path}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *args[8] = {0};
    for (int k = 0; k < 6 && bad[i][k]; k++) args[k] = bad[i][k];
    struct lat_run b = lat_run_tool(args);
    ck_assert_msg(b.status == 2, "%s %s: status %d", bad[i][1], bad[i][2],
                  b.status);
    lat_run_free(&b);
  }
}
END_TEST

START_TEST(test_time_window) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  craft_file(path, sizeof path);
  /* [10 ms, 20 ms) from the first event (T0): ints 10 .. 19, one pause
   * (at 15 ms). */
  const char *a1[] = {"dump",  "--time=raw", "--since", "10ms",
                      "--until", "20ms",     path,      NULL};
  struct lat_run r = run(a1);
  ck_assert_int_eq(count_lines(r.out, "kind=user_int"), 10);
  ck_assert_int_eq(count_lines(r.out, "kind=runtime_begin name=minor "), 1);
  all_within(r.out, T0 + 10 * MS, T0 + 20 * MS);
  lat_run_free(&r);
  /* Relative times count from the source's first event, as --since. */
  const char *a1r[] = {"dump", "--since", "10ms", "--kind", "user_int", path,
                       NULL};
  r = run(a1r);
  ck_assert_msg(!strncmp(r.out, "domain=0 ts=0.010000000 kind=user_int", 37),
                "%.200s", r.out);
  lat_run_free(&r);
  /* latency of an interval: the pauses at 25, 35, 45 ms, of 30, 40 and
   * 50 us. */
  const char *a2[] = {"latency", "--json", "--since", "20ms",
                      "--until", "50ms",   path,      NULL};
  r = run(a2);
  json_counts(r.out, "pauses=3 min_ns=30000 max_ns=50000");
  lat_run_free(&r);
  /* --last: the last event is the int at 99 ms; 10 ms before it: ints
   * 89 .. 99, the last pause (at 95 ms). */
  const char *a3[] = {"latency", "--json", "--last", "10ms", path, NULL};
  r = run(a3);
  ck_assert_uint_eq(json_u64(r.out, "pauses"), 1);
  ck_assert_uint_eq(json_u64(r.out, "max_ns"), 100000);
  lat_run_free(&r);
  const char *a4[] = {"stats", "--json", "--last", "10ms", path, NULL};
  r = run(a4);
  ck_assert_uint_eq(json_u64(json_named(r.out, "user_ints", "v"), "count"),
                    11);
  ck_assert_uint_eq(json_u64(json_named(r.out, "user_ints", "v"), "min"), 89);
  lat_run_free(&r);
  /* A time of day needs a wall clock, which OCaml 5's files lack. */
  const char *a5[] = {"dump", "--since", "10:00", path, NULL};
  r = lat_run_tool(a5);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.err, "wall clock"), "%s", r.err);
  lat_run_free(&r);
}
END_TEST

/* Times of day, on a file written here (eventring's files record the
 * wall clock): --since the wall time `dump --time=wall` gives the 4th
 * event keeps it and what follows. */
START_TEST(test_wall_clock) {
  ER_NEED_TOOL();
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  int id = eventring_register("w", EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);
  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  for (int i = 0; i < 10; i++) {
    eventring_write_int(id, i);
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  ck_assert_int_eq(eventring_stop(), 0);
  const char *a1[] = {"dump", "--time=wall", "--kind", "user_int", path, NULL};
  struct lat_run r = run(a1);
  /* The 4th line's time. */
  const char *line = r.out;
  for (int i = 0; i < 3; i++) line = strchr(line, '\n') + 1;
  char when[64];
  ck_assert_int_eq(sscanf(strstr(line, "ts=") + 3, "%63s", when), 1);
  lat_run_free(&r);
  const char *a2[] = {"dump", "--kind", "user_int", "--since", when, path,
                      NULL};
  r = run(a2);
  ck_assert_int_eq(count_lines(r.out, "kind=user_int"), 7);
  ck_assert_msg(strstr(r.out, "value=3\n"), "%s", r.out);
  lat_run_free(&r);
  /* The time of day alone, and --until it. */
  const char *tod = strchr(when, 'T') + 1;
  const char *a3[] = {"dump", "--kind", "user_int", "--until", tod, path,
                      NULL};
  r = run(a3);
  ck_assert_int_eq(count_lines(r.out, "kind=user_int"), 3);
  lat_run_free(&r);
  unlink(path);
  free(path);
}
END_TEST

/* dump --merge: one list in time order, a loss before its domain's next
 * event, every event once. */
START_TEST(test_merge) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/merge.events", er_tmpdir());
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, 0, "m");
  craft_skip(&c, 1, 64); /* domain 1's oldest events were overwritten */
  for (int i = 0; i < 50; i++)
    craft_user_int(&c, i % 2, T0 + (uint64_t)(50 - i) * 1000 * (i % 2 ? 1 : 3),
                   0, i);
  craft_write(&c, path);
  craft_free(&c);
  const char *a1[] = {"dump", "--time=raw", "--merge", path, NULL};
  struct lat_run r = run(a1);
  ck_assert_int_eq(count_lines(r.out, "kind=user_int"), 50);
  uint64_t prev = 0;
  for (const char *p = strstr(r.out, " ts="); p; p = strstr(p + 1, " ts=")) {
    uint64_t ts = strtoull(p + 4, NULL, 10);
    ck_assert_msg(ts >= prev, "%" PRIu64 " after %" PRIu64, ts, prev);
    prev = ts;
  }
  /* The loss comes right before domain 1's first event. */
  const char *lost = strstr(r.out, "domain=1 kind=lost_events value=");
  ck_assert_msg(lost != NULL, "%s", r.out);
  const char *next = strchr(lost, '\n') + 1;
  ck_assert_msg(!strncmp(next, "domain=1 ts=", 12), "%.200s", lost);
  ck_assert_msg(strstr(r.out, "SUMMARY total=50 "), "%s", r.out);
  lat_run_free(&r);
  /* Relative times count from the earliest event: the first line is 0. */
  const char *a2[] = {"dump", "--merge", path, NULL};
  r = run(a2);
  ck_assert_msg(strstr(r.out, " ts=0.000000000 "), "%.300s", r.out);
  ck_assert_msg(!strstr(r.out, " ts=-"), "%.300s", r.out);
  lat_run_free(&r);
}
END_TEST

/* a at even microseconds, b at odd ones. */
static void fill_interleaved(struct craft *c, int f) {
  craft_user_name(c, 0, f ? "b" : "a");
  for (int i = 0; i < 20; i++)
    craft_user_int(c, i % 2, T0 + (uint64_t)(2 * i + f) * 1000, 0, i);
}

/* dump --merge of two files: one list in time order across processes,
 * each line tagged with its process; a filter applies to both. */
START_TEST(test_merge_processes) {
  ER_NEED_TOOL();
  char a[PATH_MAX], b[PATH_MAX];
  craft_pair(a, b, fill_interleaved);
  const char *a1[] = {"dump", "--time=raw", "--merge", a, b, NULL};
  struct lat_run r = run(a1);
  ck_assert_int_eq(count_lines(r.out, " ts="), 40);
  uint64_t prev = 0;
  int k = 0;
  for (const char *p = strstr(r.out, " ts="); p; p = strstr(p + 1, " ts="), k++) {
    uint64_t ts = strtoull(p + 4, NULL, 10);
    ck_assert_uint_eq(ts, T0 + (uint64_t)k * 1000);
    ck_assert_uint_ge(ts, prev);
    prev = ts;
  }
  /* Alternating names: a, b, a, b ... each with its pid= tag. */
  ck_assert_msg(strstr(r.out, "name=a value=0\npid=0 domain=0 ts="), "%s",
                r.out);
  lat_run_free(&r);
  const char *a2[] = {"dump", "--time=raw", "--merge", "--event", "b",
                      "--domain", "1", a, b, NULL};
  r = run(a2);
  ck_assert_int_eq(count_lines(r.out, " ts="), 10);
  ck_assert_int_eq(count_lines(r.out, "domain=1 "), 10);
  ck_assert_int_eq(count_lines(r.out, "name=b "), 10);
  lat_run_free(&r);
}
END_TEST

/* The OCaml 5 vectors: filtered dumps are the unfiltered dump's lines
 * that pass; --merge is sorted; latency --span of their user spans. */
START_TEST(test_vectors) {
  const char *name = er_vectors[_i];
  ER_NEED_TOOL();
  const char *data = er_env_dir("EVENTRING_TEST_DATA");
  if (!data) ER_SKIP("EVENTRING_TEST_DATA is not set");
  const char *dir = er_tmpdir();
  char file[PATH_MAX];
  ck_assert(er_unpack_vector(dir, name, file));
  const char *opt = er_vector_ocaml50(name) ? "--ocaml50" : "--time=raw";
  const char *a0[] = {"dump", "--time=raw", opt, file, NULL};
  struct lat_run all = run(a0);
  const char *a1[] = {"dump", "--time=raw", opt, "--domain", "0",
                      "--kind", "user_int", file, NULL};
  struct lat_run r = run(a1);
  int want = 0;
  for (const char *p = all.out; (p = strstr(p, "domain=0 ts=")); p++) {
    const char *nl = strchr(p, '\n');
    const char *k = strstr(p, " kind=user_int ");
    if (k && (!nl || k < nl)) want++;
  }
  /* Event lines (losses are kept too). */
  ck_assert_int_eq(count_lines(r.out, " ts="), want);
  ck_assert_int_eq(count_lines(r.out, "kind=user_int"), want);
  lat_run_free(&r);
  const char *a2[] = {"dump", "--time=raw", opt, "--merge", file, NULL};
  r = run(a2);
  ck_assert_int_eq(count_lines(r.out, " ts="), count_lines(all.out, " ts="));
  uint64_t prev = 0;
  for (const char *p = strstr(r.out, " ts="); p; p = strstr(p + 1, " ts=")) {
    uint64_t ts = strtoull(p + 4, NULL, 10);
    ck_assert_uint_ge(ts, prev);
    prev = ts;
  }
  lat_run_free(&r);
  /* Their t.span spans: every begin is a span, cut or unfinished. */
  int begins = count_lines(all.out, "name=t.span value=begin");
  const char *a3[] = {"latency", "--json",
                      er_vector_ocaml50(name) ? "--ocaml50"
                                                       : "--json",
                      "--span",  "t.span", file, NULL};
  r = run(a3);
  if (begins) {
    const char *s = json_named(r.out, "spans", "t.span");
    ck_assert_msg(s != NULL, "%s: %s", name, r.out);
    ck_assert_uint_ge(json_u64(s, "count") + json_u64(s, "unfinished") +
                          json_u64(s, "cut"),
                      (uint64_t)begins);
    if (!strstr(name, "wrapped"))
      ck_assert_uint_eq(json_u64(s, "count"), (uint64_t)begins);
  }
  lat_run_free(&r);
  lat_run_free(&all);
  unlink(file);
}
END_TEST

/* --last is refused where the end is not known yet. */
START_TEST(test_last_live) {
  ER_NEED_TOOL();
  const char *a[] = {"stats", "--last", "1s", "--", "/bin/true", NULL};
  struct lat_run r = lat_run_tool(a);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "--last"), "%s", r.err);
  lat_run_free(&r);
}
END_TEST

static TCase *tc_filter(void) {
  TCase *tc = er_tcase("filter");
  tcase_add_test(tc, test_domain_event_kind);
  tcase_add_test(tc, test_time_window);
  tcase_add_test(tc, test_wall_clock);
  tcase_add_test(tc, test_merge);
  tcase_add_test(tc, test_merge_processes);
  er_add_cases(tc, test_vectors, er_vectors, ER_NVECTORS,
               sizeof er_vectors[0]);
  tcase_add_test(tc, test_last_live);
  return tc;
}

ER_TEST_MAIN("filter", tc_filter)
