/* Tests `eventring latency` on ring files with known pause durations: exact count, min, max, mean; percentiles within the histogram's bound; nesting, a cut ring start, a loss gap, pauses left open; C programs and the OCaml 5 vectors. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cases.h"
#include "harness.h"
#include "lat_craft.h"
#include "tooltest.h"

/* The bound of the percentiles' relative error that man/eventring.1
 * documents ("within 1/2048"), which --json reports as relative_error. */
#define DOC_RELATIVE_ERROR (1.0 / 2048)

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Runs `eventring latency --json` on `path` (plus `extra`, or NULL). */
/* latency --json --per-phase: each outermost phase a pause, as the
 * crafted files count them (test_merged tests the default). */
static struct lat_run latency_json(const char *path, const char *extra) {
  const char *args[] = {"latency", "--json", "--per-phase", path, extra, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  return r;
}

/* Checks the tool's report against the durations v[0..n-1]. */
static void check_report(const char *json, uint64_t *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_u64);
  ck_assert_uint_eq(json_u64(json, "pauses"), n);
  ck_assert_uint_eq(json_u64(json, "min_ns"), v[0]);
  ck_assert_uint_eq(json_u64(json, "max_ns"), v[n - 1]);
  long double sum = 0;
  for (size_t i = 0; i < n; i++) sum += v[i];
  long double mean = sum / n;
  double got = json_double(json, "mean_ns");
  ck_assert_msg(got >= mean * (1 - 1e-9L) && got <= mean * (1 + 1e-9L),
                "mean %.3f, expected %.3Lf", got, mean);
  ck_assert(json_double(json, "relative_error") == DOC_RELATIVE_ERROR);
  static const struct {
    const char *key;
    uint64_t per_million; /* the percentile, times 10^4 */
  } rows[] = {{"50", 500000}, {"75", 750000},   {"90", 900000},
              {"99", 990000}, {"99.9", 999000}, {"99.99", 999900},
              {"100", 1000000}};
  const char *pct = json_at(json, "percentiles");
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    /* Nearest rank: ceil(p / 100 * n). */
    uint64_t k = (rows[i].per_million * n + 999999) / 1000000;
    if (k < 1) k = 1;
    uint64_t want = v[k - 1], have = json_u64(pct, rows[i].key);
    double err = have > want ? (double)(have - want) : (double)(want - have);
    ck_assert_msg(err <= DOC_RELATIVE_ERROR * (double)want,
                  "p%s: %" PRIu64 ", exact %" PRIu64, rows[i].key, have,
                  want);
  }
  ck_assert_uint_eq(json_u64(pct, "100"), v[n - 1]);
}

/* The shuffle's generator state: the same order on every run. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* 10,000 pauses of 1 .. 10,000 us in random order on domain 0, each with
 * a phase nested in it, and outliers on domain 1 (1 ns, 1 s, an hour). */
START_TEST(test_known_distribution) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  struct craft c;
  craft_new(&c, path, "known");
  size_t n = 10000 + 3;
  uint64_t *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < 10000; i++) v[i] = (i + 1) * 1000;
  er_shuffle(v, 10000, &rng);
  uint64_t ts = 1000000000;
  craft_lifecycle(&c, 0, ts, EVENTRING_LIFECYCLE_RING_START, 42);
  for (size_t i = 0; i < 10000; i++) {
    ts = craft_pause(&c, 0, ts + 500, v[i]);
    if (i % 100 == 0) craft_counter(&c, 0, ts + 1, CT_MINOR_PROMOTED, i);
  }
  v[10000] = 1;
  v[10001] = UINT64_C(1000000000);
  v[10002] = UINT64_C(3600000000000);
  ts = 2000000000;
  craft_lifecycle(&c, 1, ts, EVENTRING_LIFECYCLE_DOMAIN_SPAWN, 42);
  for (size_t i = 10000; i < n; i++) ts = craft_pause(&c, 1, ts + 10, v[i]);
  craft_write(&c, path);
  craft_free(&c);

  struct lat_run r = latency_json(path, NULL);
  check_report(r.out, v, n);
  json_counts(r.out, "cut=0 unfinished=0 unmatched_ends=0 lost=0");
  lat_run_free(&r);

  /* The text report has the same numbers, in readable units. */
  const char *args[] = {"latency", "--per-phase", path, NULL};
  r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "GC pauses: 10003 (each outermost runtime "
                              "phase, all domains)\n") != NULL,
                "%s", r.out);
  ck_assert_msg(strstr(r.out, "1 ns") && strstr(r.out, "3600 s") &&
                    strstr(r.out, "99.99"),
                "%s", r.out);
  lat_run_free(&r);
  free(v);
}
END_TEST

/* Only outermost phases are pauses, however deep the nesting. */
START_TEST(test_nested) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  struct craft c;
  craft_new(&c, path, "nested");
  uint64_t ts = 5000;
  /* major_slice (100 us) > major_mark > minor > minor_local_roots. */
  craft_begin(&c, 0, ts, PH_MAJOR_SLICE);
  craft_begin(&c, 0, ts + 10, PH_MAJOR_MARK);
  craft_pause(&c, 0, ts + 20, 50000);
  craft_end(&c, 0, ts + 60000, PH_MAJOR_MARK);
  craft_pause(&c, 0, ts + 70000, 1000);
  craft_end(&c, 0, ts + 100000, PH_MAJOR_SLICE);
  /* Then two minors on their own, 3 us and 200 us. */
  ts = craft_pause(&c, 0, ts + 200000, 3000);
  craft_pause(&c, 0, ts + 100, 200000);
  craft_write(&c, path);
  craft_free(&c);

  struct lat_run r = latency_json(path, NULL);
  uint64_t v[] = {100000, 3000, 200000};
  check_report(r.out, v, 3);
  ck_assert_uint_eq(json_u64(r.out, "unmatched_ends"), 0);
  lat_run_free(&r);
}
END_TEST

/* Domain 0's ring lost its start (head above 0) in the middle of a
 * pause: the ends without begins, and the phase nested in that pause
 * before them, are no pauses; the pause counts as cut.  Domain 1 read
 * from its start has an end without begin (unmatched) and a pause left
 * open at the end (unfinished). */
START_TEST(test_start_cut) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  struct craft c;
  craft_new(&c, path, "cut");
  craft_skip(&c, 0, 1000);
  uint64_t ts = 10000;
  craft_begin(&c, 0, ts, PH_MINOR_LOCAL_ROOTS);
  craft_end(&c, 0, ts + 500, PH_MINOR_LOCAL_ROOTS);
  craft_end(&c, 0, ts + 600, PH_MINOR);
  craft_end(&c, 0, ts + 700, PH_MAJOR_SLICE);
  ts = craft_pause(&c, 0, ts + 1000, 10000);
  ts = craft_pause(&c, 0, ts + 1000, 20000);
  ts = craft_pause(&c, 0, ts + 1000, 30000);
  ts = 10000;
  craft_end(&c, 1, ts, PH_MINOR);
  ts = craft_pause(&c, 1, ts + 10, 40000);
  craft_begin(&c, 1, ts + 10, PH_MAJOR_SLICE);
  craft_write(&c, path);
  craft_free(&c);

  struct lat_run r = latency_json(path, NULL);
  uint64_t v[] = {10000, 20000, 30000, 40000};
  check_report(r.out, v, 4);
  json_counts(r.out, "cut=1 unmatched_ends=1 unfinished=1");
  /* Overwritten before the file was read: the window's start. */
  ck_assert_uint_eq(json_u64(r.out, "lost"), 0);
  ck_assert_uint_eq(json_u64(r.out, "before_window"), 1000);
  ck_assert_msg(strstr(r.out, "\"lost_unit\": \"words\""), "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* Writes, from `ts` on domain 0, the markers of OCaml 4.13's GC hooks
 * around pauses of known durations, with phase ids `cycle`, `change` and
 * `finish` (major_gc_cycle_domains, major_gc_phase_change and
 * major_finish_cycle in the file's numbering).  Pauses: a minor of 2 us
 * with markers nested in it; a major_finish_cycle of 70 us with a phase
 * nested in it (real work, as OCaml 5 writes it); a minor of 300 ns with
 * nothing nested (an empty span of another phase is a pause); and
 * major_slice phases of 5 us.  Markers: 7 empty outermost spans of 10 to
 * 30 ns, which are no pauses.  Returns the durations in v[0..4]. */
static void craft_markers(struct craft *c, uint64_t ts, unsigned cycle,
                          unsigned change, unsigned finish, unsigned slice,
                          uint64_t v[5]) {
  size_t n = 0;
  /* As Gc.full_major on the normal runtime: a cycle starts and marking
   * ends outside any slice. */
  craft_begin(c, 0, ts, cycle);
  craft_end(c, 0, ts + 10, cycle);
  craft_begin(c, 0, ts + 20, change);
  craft_end(c, 0, ts + 40, change);
  craft_begin(c, 0, ts + 100, PH_MINOR);
  craft_begin(c, 0, ts + 200, cycle);
  craft_end(c, 0, ts + 210, cycle);
  craft_end(c, 0, ts + 2100, PH_MINOR);
  v[n++] = 2000;
  ts += 10000;
  craft_begin(c, 0, ts, finish);
  craft_begin(c, 0, ts + 1000, PH_MAJOR_MARK);
  craft_end(c, 0, ts + 60000, PH_MAJOR_MARK);
  craft_end(c, 0, ts + 70000, finish);
  v[n++] = 70000;
  ts += 100000;
  craft_begin(c, 0, ts, finish);
  craft_end(c, 0, ts + 30, finish);
  craft_begin(c, 0, ts + 100, PH_MINOR);
  craft_end(c, 0, ts + 400, PH_MINOR);
  v[n++] = 300;
  ts += 1000;
  for (int i = 0; i < 2; i++) {
    craft_begin(c, 0, ts, slice);
    craft_end(c, 0, ts + 5000, slice);
    v[n++] = 5000;
    craft_begin(c, 0, ts + 6000, change);
    craft_end(c, 0, ts + 6010, change);
    craft_counter(c, 0, ts + 6020, CT_MINOR_PROMOTED, 1);
    craft_begin(c, 0, ts + 7000, cycle);
    craft_end(c, 0, ts + 7020, cycle);
    ts += 10000;
  }
}

/* Empty outermost spans of the marker phases are not pauses: the count,
 * min and percentiles are those of the real pauses, in `eventring
 * latency` and in `eventring stats`'s GC time; the markers are counted
 * apart.  A file from OCaml 5.0-5.2 read with --ocaml50 names the same
 * phases with other ids, and the ids that are markers in 5.3's numbering
 * are then ordinary phases. */
START_TEST(test_markers) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX], path50[PATH_MAX];
  snprintf(path, sizeof path, "%s/markers.events", dir);
  snprintf(path50, sizeof path50, "%s/markers50.events", dir);
  uint64_t v[5];
  struct craft c;
  craft_init(&c);
  craft_markers(&c, 100000, PH_MAJOR_GC_CYCLE_DOMAINS,
                PH_MAJOR_GC_PHASE_CHANGE, PH_MAJOR_FINISH_CYCLE,
                PH_MAJOR_SLICE, v);
  craft_write(&c, path);
  craft_free(&c);
  /* OCaml 5.0-5.2: 20 major_gc_cycle_domains, 21 major_gc_phase_change,
   * 25 major_finish_cycle, 24 major_slice. */
  craft_init(&c);
  craft_markers(&c, 100000, 20, 21, 25, 24, v);
  craft_write(&c, path50);
  craft_free(&c);

  struct lat_run r = latency_json(path, NULL);
  check_report(r.out, v, 5);
  json_counts(r.out, "markers=7 unmatched_ends=0 unfinished=0");
  lat_run_free(&r);

  r = latency_json(path50, "--ocaml50");
  check_report(r.out, v, 5);
  ck_assert_uint_eq(json_u64(r.out, "markers"), 7);
  lat_run_free(&r);

  /* Read with 5.3's numbering, 20, 21 and 25 are major_ephe_mark,
   * major_ephe_sweep and major_gc_stw, whose empty spans are pauses (the
   * shortest 10 ns), and 24, the major slices, reads as
   * major_gc_phase_change: markers are told by name. */
  r = latency_json(path50, NULL);
  json_counts(r.out, "pauses=10 markers=2 min_ns=10");
  lat_run_free(&r);

  const char *text[] = {"latency", "--per-phase", path, NULL};
  r = lat_run_tool(text);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "GC pauses: 5 ") != NULL, "%s", r.out);
  const char *min = strstr(r.out, "\n  min ");
  char num[32] = "", unit[8] = "";
  ck_assert_msg(min && sscanf(min, " min %31s %7s", num, unit) == 2 &&
                    !strcmp(num, "300") && !strcmp(unit, "ns"),
                "%s", r.out);
  lat_run_free(&r);

  const char *stats[] = {"stats", "--json", path, NULL};
  r = lat_run_tool(stats);
  lat_assert_ok(&r);
  const char *gc = json_at(r.out, "gc");
  ck_assert_uint_eq(json_u64(gc, "pauses"), 5);
  ck_assert_uint_eq(json_u64(gc, "total_ns"), 2000 + 70000 + 300 + 2 * 5000);
  ck_assert_uint_eq(json_u64(gc, "markers"), 7);
  /* The markers are still phases, counted as such. */
  const char *ph = json_named(r.out, "phases", "major_gc_phase_change");
  ck_assert_msg(ph != NULL, "%s", r.out);
  ck_assert_uint_eq(json_u64(ph, "count"), 3);
  ck_assert_uint_eq(json_u64(ph, "completed"), 3);
  lat_run_free(&r);
}
END_TEST

/* A loss in the middle of a pause, as a live reader meets it: the tool
 * follows a file whose writer (a child that only sleeps) lives; once it
 * has read the first events and waits for more (it sleeps in nanosleep),
 * the test publishes a head beyond them, as a writer overwriting events
 * the reader had not reached, and then new events. */
START_TEST(test_gap) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  pid_t writer = fork();
  ck_assert_int_ge(writer, 0);
  if (writer == 0) {
    for (;;) pause();
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%ld.events", dir, (long)writer);
  struct craft c;
  craft_init(&c);
  uint64_t ts = 10000;
  craft_lifecycle(&c, 0, ts, EVENTRING_LIFECYCLE_RING_START, writer);
  ts = craft_pause(&c, 0, ts + 100, 5000);
  craft_begin(&c, 0, ts + 100, PH_MINOR); /* cut by the gap */
  craft_begin(&c, 0, ts + 200, PH_MINOR_LOCAL_ROOTS);
  craft_write(&c, path);

  char *argv[] = {
      (char *)er_tool_path(), "latency", "--json", "--follow", path, NULL};
  FILE *out, *err;
  pid_t tool = lat_start(argv, &out, &err);
  /* Once it sleeps it has read all there is (it sleeps only after a poll
   * that found nothing). */
  er_wait_idle(tool);
  /* 64 words lost, then the end of the cut pause's phases and a pause. */
  craft_skip(&c, 0, c.tail[0] + 64);
  ts += 100000;
  craft_end(&c, 0, ts, PH_MINOR_LOCAL_ROOTS);
  craft_end(&c, 0, ts + 100, PH_MINOR);
  craft_pause(&c, 0, ts + 1000, 7000);
  craft_update(&c, path, 0);
  craft_free(&c);
  kill(writer, SIGKILL);
  waitpid(writer, NULL, 0);

  struct lat_run r = lat_finish(tool, out, err);
  lat_assert_ok(&r);
  uint64_t v[] = {5000, 7000};
  check_report(r.out, v, 2);
  json_counts(r.out, "cut=1 unmatched_ends=0 unfinished=0 lost=64");
  lat_run_free(&r);
}
END_TEST

/* A file with no pause at all. */
START_TEST(test_empty) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  struct craft c;
  craft_new(&c, path, "empty");
  craft_lifecycle(&c, 0, 100, EVENTRING_LIFECYCLE_RING_START, 1);
  craft_write(&c, path);
  craft_free(&c);
  struct lat_run r = latency_json(path, NULL);
  ck_assert_uint_eq(json_u64(r.out, "pauses"), 0);
  ck_assert_msg(strstr(r.out, "\"percentiles\": null"), "%s", r.out);
  lat_run_free(&r);
  const char *args[] = {"latency", path, NULL};
  r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "GC pauses: 0 "), "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* The OCaml 5.2 vectors: the pauses of each are known from its .expected
 * (OCaml's own reading): outermost phases per domain, counted here with a
 * stack per domain over the expected lines. */
static void expected_pauses(const char *expected, uint64_t *count,
                            uint64_t *open) {
  FILE *f = fopen(expected, "r");
  ck_assert_msg(f != NULL, "%s: %s", expected, strerror(errno));
  int depth[16] = {0};
  char line[512];
  *count = 0;
  while (fgets(line, sizeof line, f)) {
    int d;
    if (sscanf(line, "domain=%d ", &d) != 1 || d < 0 || d >= 16) continue;
    if (strstr(line, " kind=runtime_begin ")) depth[d]++;
    if (strstr(line, " kind=runtime_end ") && depth[d] > 0)
      if (--depth[d] == 0) ++*count;
  }
  fclose(f);
  *open = 0;
  for (int d = 0; d < 16; d++) *open += depth[d] > 0;
}

/* One run per OCaml 5 vector, named after it. */
START_TEST(test_ocaml5_vector) {
  const char *name = er_vectors[_i];
  ER_NEED_TOOL();
  const char *data = er_env_dir("EVENTRING_TEST_DATA");
  if (!data) ER_SKIP("EVENTRING_TEST_DATA is not set");
  char file[PATH_MAX], exp[PATH_MAX];
  ck_assert(er_unpack_vector(er_tmpdir(), name, file));
  snprintf(exp, sizeof exp, "%s/%s.expected", data, name);
  uint64_t count, open;
  expected_pauses(exp, &count, &open);
  int is52 = er_vector_ocaml50(name);
  struct lat_run r = latency_json(file, is52 ? "--ocaml50" : NULL);
  ck_assert_msg(json_u64(r.out, "pauses") == count,
                "%s: %" PRIu64 " pauses, OCaml's reading has %" PRIu64,
                name, json_u64(r.out, "pauses"), count);
  ck_assert_uint_eq(json_u64(r.out, "unfinished"), open);
  if (count) {
    uint64_t lo = json_u64(r.out, "min_ns"), hi = json_u64(r.out, "max_ns");
    ck_assert(lo > 0 && lo <= hi);
  }
  lat_run_free(&r);
  unlink(file);
}
END_TEST

/* A C program through the public API: lat_phases writes 300 minor
 * pauses, each with a nested phase, and 20 major slices. */
START_TEST(test_c_program) {
  ER_NEED_TOOL();
  if (!er_prog_path("lat_phases")) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char path[PATH_MAX];
  er_trace_prog(er_tmpdir(), "lat_phases", NULL, NULL, path);
  struct lat_run r = latency_json(path, NULL);
  ck_assert_uint_eq(json_u64(r.out, "pauses"), 320);
  ck_assert_msg(strstr(r.out, "\"view\": \"phase\", \"merged\": 0,"), "%s",
                r.out);
  lat_run_free(&r);
  /* As the program saw them: the phases that lat_phases wrote back to
   * back are one pause; every phase is in one. */
  const char *args[] = {"latency", "--json", path, NULL};
  r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "\"view\": \"program\""), "%s", r.out);
  ck_assert_uint_eq(json_u64(r.out, "pauses") + json_u64(r.out, "merged"),
                    320);
  json_counts(r.out, "cut=0 unfinished=0 lost=0");
  ck_assert_msg(strstr(r.out, "\"lost_unit\": \"events\""), "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* A real program's file, read from a time inside its first pause
 * (found in its dump): that pause is cut by the window's start, and no
 * end is unmatched. */
START_TEST(test_since_real) {
  ER_NEED_TOOL();
  if (!er_prog_path("lat_phases")) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char path[PATH_MAX];
  er_trace_prog(er_tmpdir(), "lat_phases", NULL, NULL, path);
  const char *dump[] = {"dump", "--time=raw", path, NULL};
  struct lat_run d = lat_run_tool(dump);
  lat_assert_ok(&d);
  /* The first event, and the first minor's begin and end. */
  uint64_t first = 0, begin = 0, end = 0;
  for (char *l = d.out; l && *l;) {
    char *nl = strchr(l, '\n');
    if (nl) *nl = '\0';
    unsigned long long ts;
    if (sscanf(l, "domain=0 ts=%llu ", &ts) == 1) {
      if (!first) first = ts;
      if (!begin && strstr(l, " kind=runtime_begin name=minor "))
        begin = ts;
      else if (begin && !end && strstr(l, " kind=runtime_end name=minor "))
        end = ts;
    }
    l = nl ? nl + 1 : NULL;
  }
  lat_run_free(&d);
  ck_assert_msg(first && begin && end > begin, "no minor in the dump");
  ck_assert_uint_gt(end - begin, 1);
  char since[64];
  snprintf(since, sizeof since, "%" PRIu64 "ns", begin + 1 - first);
  const char *args[] = {"latency", "--json", "--per-phase", "--since", since,
                        path,      NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  json_counts(r.out, "cut=1 unmatched_ends=0 pauses=319");
  lat_run_free(&r);
}
END_TEST

/* Bad usage is one line and status 2. */
START_TEST(test_usage) {
  ER_NEED_TOOL();
  const char *a1[] = {"latency", NULL};
  struct lat_run r = lat_run_tool(a1);
  ck_assert_int_eq(r.status, 2);
  ck_assert_int_eq(er_count_lines(r.err), 1);
  ck_assert(!strncmp(r.err, "eventring: ", 11));
  lat_run_free(&r);
  const char *a2[] = {"latency", "--bogus", "x.events", NULL};
  r = lat_run_tool(a2);
  ck_assert_int_eq(r.status, 2);
  lat_run_free(&r);
  const char *a3[] = {"latency", "/nonexistent/1.events", NULL};
  r = lat_run_tool(a3);
  ck_assert_int_eq(r.status, 1);
  ck_assert_int_eq(er_count_lines(r.err), 1);
  lat_run_free(&r);
  const char *a4[] = {"latency", "--help", NULL};
  r = lat_run_tool(a4);
  ck_assert_int_eq(r.status, 0);
  ck_assert(strstr(r.out, "--json") != NULL);
  lat_run_free(&r);
}
END_TEST

/* A time window that starts inside a pause cuts it, as the start of a
 * wrapped ring does: its end is no unmatched end (an instrumentation
 * bug), and the pauses after it are counted whole. */
START_TEST(test_since_cuts) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  struct craft c;
  craft_new(&c, path, "since");
  /* 0 .. 1 ms: a pause of 1 ms with a nested phase; --since 500us lands
   * inside both. */
  craft_begin(&c, 0, 1000000, PH_MINOR);
  craft_begin(&c, 0, 1200000, PH_MINOR_LOCAL_ROOTS);
  craft_end(&c, 0, 1600000, PH_MINOR_LOCAL_ROOTS);
  craft_end(&c, 0, 2000000, PH_MINOR);
  uint64_t ts = craft_pause(&c, 0, 3000000, 10000);
  ts = craft_pause(&c, 0, ts + 1000, 20000);
  craft_write(&c, path);
  craft_free(&c);

  const char *args[] = {"latency", "--json", "--since", "500us", path, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  uint64_t v[] = {10000, 20000};
  check_report(r.out, v, 2);
  json_counts(r.out, "cut=1 unmatched_ends=0 lost=0");
  lat_run_free(&r);

  const char *phase[] = {"latency", "--json", "--since", "500us", "--phase",
                         "minor",   path,     NULL};
  r = lat_run_tool(phase);
  lat_assert_ok(&r);
  const char *m = strstr(r.out, "\"name\": \"minor\"");
  ck_assert_msg(m != NULL, "%s", r.out);
  json_counts(m, "count=2 cut=1 unmatched_ends=0");
  lat_run_free(&r);

  const char *stats[] = {"stats", "--json", "--since", "500us", path, NULL};
  r = lat_run_tool(stats);
  lat_assert_ok(&r);
  const char *gc = json_at(r.out, "gc");
  json_counts(gc, "pauses=2 cut=1 unmatched_ends=0");
  lat_run_free(&r);
}
END_TEST

/* OCaml 4.13's normal runtime: a minor collection and the major slice
 * that starts 87 ns after it are one pause as the program sees it; a
 * slice that begins 1 us or more later, or after an event of the
 * program, is another; --per-phase counts each phase. */
START_TEST(test_merged) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  struct craft c;
  craft_new(&c, path, "merged");
  craft_user_name(&c, 0, "app.tick");
  /* 1: minor 100 us, major_slice 87 ns later for 50 us: one pause of
   * 150.087 us. */
  craft_begin(&c, 0, 1000000, PH_MINOR);
  craft_end(&c, 0, 1100000, PH_MINOR);
  craft_begin(&c, 0, 1100087, PH_MAJOR_SLICE);
  craft_end(&c, 0, 1150087, PH_MAJOR_SLICE);
  /* 2, 3: a slice 1 us after a minor of 10 us: two pauses. */
  craft_begin(&c, 0, 2000000, PH_MINOR);
  craft_end(&c, 0, 2010000, PH_MINOR);
  craft_begin(&c, 0, 2011000, PH_MAJOR_SLICE);
  craft_end(&c, 0, 2031000, PH_MAJOR_SLICE);
  /* 4, 5: 50 ns apart, but the program wrote an event between. */
  craft_begin(&c, 0, 3000000, PH_MINOR);
  craft_end(&c, 0, 3040000, PH_MINOR);
  craft_user_unit(&c, 0, 3040020, 0);
  craft_begin(&c, 0, 3040050, PH_MAJOR_SLICE);
  craft_end(&c, 0, 3070050, PH_MAJOR_SLICE);
  /* 6: three phases back to back, and a marker between two of them
   * (the GC's, not the program's). */
  craft_begin(&c, 0, 4000000, PH_MINOR);
  craft_end(&c, 0, 4001000, PH_MINOR);
  craft_begin(&c, 0, 4001100, PH_MAJOR_SLICE);
  craft_end(&c, 0, 4002000, PH_MAJOR_SLICE);
  craft_begin(&c, 0, 4002100, PH_MAJOR_GC_PHASE_CHANGE);
  craft_end(&c, 0, 4002110, PH_MAJOR_GC_PHASE_CHANGE);
  craft_begin(&c, 0, 4002200, PH_MINOR);
  craft_end(&c, 0, 4003000, PH_MINOR);
  /* Domain 1: a pause 50 ns after domain 0's ended is its own. */
  craft_begin(&c, 1, 4003050, PH_MINOR);
  craft_end(&c, 1, 4004050, PH_MINOR);
  craft_write(&c, path);
  craft_free(&c);

  const char *json[] = {"latency", "--json", path, NULL};
  struct lat_run r = lat_run_tool(json);
  lat_assert_ok(&r);
  uint64_t v[] = {150087, 10000, 20000, 40000, 30000, 3000, 1000};
  check_report(r.out, v, 7);
  ck_assert_msg(strstr(r.out, "\"view\": \"program\", \"merged\": 3,"),
                "%s", r.out);
  ck_assert_uint_eq(json_u64(r.out, "markers"), 1);
  lat_run_free(&r);

  const char *phase[] = {"latency", "--json", "--per-phase", path, NULL};
  r = lat_run_tool(phase);
  lat_assert_ok(&r);
  uint64_t w[] = {100000, 50000, 10000, 20000, 40000,
                  30000,  1000,  900,   800,   1000};
  check_report(r.out, w, 10);
  ck_assert_msg(strstr(r.out, "\"view\": \"phase\", \"merged\": 0,"),
                "%s", r.out);
  lat_run_free(&r);

  const char *text[] = {"latency", path, NULL};
  r = lat_run_tool(text);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "GC pauses: 7 (as the program saw them, all "
                              "domains; 3 back-to-back phases joined)\n"),
                "%s", r.out);
  lat_run_free(&r);

  const char *bad[] = {"stats", "--per-phase", path, NULL};
  r = lat_run_tool(bad);
  ck_assert_int_eq(r.status, 2);
  lat_run_free(&r);
}
END_TEST

static TCase *tc_crafted(void) {
  TCase *tc = er_tcase("crafted");
  tcase_add_test(tc, test_known_distribution);
  tcase_add_test(tc, test_nested);
  tcase_add_test(tc, test_start_cut);
  tcase_add_test(tc, test_since_cuts);
  tcase_add_test(tc, test_gap);
  tcase_add_test(tc, test_empty);
  tcase_add_test(tc, test_markers);
  tcase_add_test(tc, test_merged);
  return tc;
}

static TCase *tc_real(void) {
  TCase *tc = er_tcase("real");
  er_add_cases(tc, test_ocaml5_vector, er_vectors, ER_NVECTORS,
               sizeof er_vectors[0]);
  tcase_add_test(tc, test_c_program);
  tcase_add_test(tc, test_since_real);
  tcase_add_test(tc, test_usage);
  return tc;
}

ER_TEST_MAIN("latency", tc_crafted, tc_real)
