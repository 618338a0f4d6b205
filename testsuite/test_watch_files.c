/* Tests eventring watch --when RULE FILE...: rules evaluated over recorded files (eventring record's rotated files, a directory of them, a snapshot), with the answers computed from the recording's own events -- the trigger's time and measured value for a count over a window, a `for` held across rotated files, and/or, a window spanning rotated files -- and the same triggers as the live run of the same events. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testlib.h"
#include "tooltest.h"

#define MS 1000000ULL
/* The rules' slices (analysis/rules.c): an aggregate over a window is
 * evaluated at the multiples of its twentieth in trace time. */
#define SLICE(window) ((window) / 20)

/* The path of progs/rule_writer, into `buf` (PATH_MAX bytes). */
static const char *rule_writer(char *buf) {
  const char *p = er_prog_path("rule_writer");
  ck_assert_ptr_nonnull(p);
  snprintf(buf, PATH_MAX, "%s", p);
  return buf;
}

/* `eventring record -o DIR/rec --rotate 100ms -- rule_writer STEPS...`
 * into `rec` (PATH_MAX bytes); returns the number of files written. */
static int record(const char *dir, const char *const *steps, char *rec) {
  char prog[PATH_MAX];
  snprintf(rec, PATH_MAX, "%s/rec", dir);
  const char *args[32] = {"record", "-o", rec, "--rotate", "100ms", "--",
                          rule_writer(prog)};
  size_t n = 7;
  for (size_t i = 0; steps[i]; i++) args[n++] = steps[i];
  args[n] = NULL;
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring record") == 0, "%s", r.err);
  er_run_free(&r);
  return er_count_entries(rec, ".events");
}

/* The timestamps of the events of kind `kind` named `name` that
 * `eventring dump --time=raw PATH` lists, into `ts` (at most `max`);
 * returns how many there are. */
static size_t dumped(const char *dir, const char *path, const char *kind,
                     const char *name, uint64_t *ts, size_t max) {
  struct er_lines l = er_dump_raw(dir, path);
  char k[64], nm[160];
  snprintf(k, sizeof k, " kind=%s ", kind);
  snprintf(nm, sizeof nm, " name=%s ", name);
  size_t n = 0;
  for (size_t i = 0; i < l.n; i++) {
    if (!strstr(l.v[i], k) || !strstr(l.v[i], nm)) continue;
    if (n < max) ts[n] = er_field(l.v[i], "ts");
    n++;
  }
  er_lines_free(&l);
  return n;
}

/* A trigger as watch's JSON log gives it. */
struct trig {
  uint64_t ts, wall; /* wall: wall_time_ns, 0 when absent */
  char measured[160];
  char outcome[16];
};

/* The string value of "key" in JSON line `line` into `buf`. */
static void json_str(const char *line, const char *key, char *buf,
                     size_t size) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":\"", key);
  const char *p = strstr(line, k);
  ck_assert_msg(p, "no %s in %s", key, line);
  p += strlen(k);
  snprintf(buf, size, "%.*s", (int)strcspn(p, "\""), p);
}

/* What a run of watch logged: its triggers, their JSON lines from
 * "rule" on (what the live run and a recording of it must share), and
 * its standard error. */
struct watched {
  struct trig t[16];
  size_t n;
  struct er_lines lines;
  char *err;
};

static void watched_free(struct watched *w) {
  er_lines_free(&w->lines);
  free(w->err);
}

/* `watch --log-format json -o OUT OPTS... OPERANDS...` (OPTS: the --when
 * and the rest; OPERANDS: files, or -- and a command), which must exit
 * 0. */
static struct watched watch_ops(const char *dir, const char *out,
                                const char *const *opts,
                                const char *const *operands) {
  const char *args[64] = {"watch", "--log-format", "json", "-o", out};
  size_t n = 5;
  for (size_t i = 0; opts[i]; i++) args[n++] = opts[i];
  for (size_t i = 0; operands[i] && n < 63; i++) args[n++] = operands[i];
  args[n] = NULL;
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  struct watched w;
  memset(&w, 0, sizeof w);
  struct er_lines l = er_lines_split(r.err);
  for (size_t i = 0; i < l.n; i++) {
    if (!strstr(l.v[i], "\"event\":\"trigger\"")) continue;
    ck_assert_uint_lt(w.n, 16);
    const char *rule = strstr(l.v[i], "\"rule\"");
    ck_assert_ptr_nonnull(rule);
    er_lines_push(&w.lines, rule, strlen(rule));
    struct trig *t = &w.t[w.n++];
    const char *p = strstr(l.v[i], "\"ts\":");
    ck_assert_ptr_nonnull(p);
    t->ts = strtoull(p + 5, NULL, 10);
    p = strstr(l.v[i], "\"wall_time_ns\":");
    t->wall = p ? strtoull(p + 15, NULL, 10) : 0;
    json_str(l.v[i], "measured", t->measured, sizeof t->measured);
    json_str(l.v[i], "outcome", t->outcome, sizeof t->outcome);
  }
  er_lines_free(&l);
  w.err = r.err;
  r.err = NULL;
  er_run_free(&r);
  return w;
}

/* watch_ops() on one operand: its triggers into `t` (at most `max`),
 * their number returned; its stderr into *err (to free) when `err`. */
static size_t watch(const char *dir, const char *out,
                    const char *const *opts, const char *operand,
                    struct trig *t, size_t max, char **err) {
  const char *operands[] = {operand, NULL};
  struct watched w = watch_ops(dir, out, opts, operands);
  ck_assert_msg(w.n <= max, "%zu triggers: %s", w.n, w.err);
  memcpy(t, w.t, w.n * sizeof *t);
  if (err) {
    *err = w.err;
    w.err = NULL;
  }
  watched_free(&w);
  return w.n;
}

/* How many of `ts` (n of them) are in [lo, hi). */
static size_t count_in(const uint64_t *ts, size_t n, uint64_t lo,
                       uint64_t hi) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += ts[i] >= lo && ts[i] < hi;
  return c;
}

/* Two bursts of retries in a recording rotated every 100 ms: `count >
 * 100` over 100 ms fires once, at the first slice boundary where the
 * retries of the 100 ms before it pass 100 -- computed here from the
 * recording's own timestamps -- with that count as the value; and its
 * snapshot (--before 1s) holds exactly the recording's ticks of its
 * window, which spans every rotated file. */
START_TEST(test_count_directory) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64], rec[PATH_MAX], out[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *steps[] = {"tick", "50",  "retry", "50",  "tick", "300",
                         "retry", "150", "tick", "300", NULL};
  int files = record(dir, steps, rec);
  ck_assert_int_ge(files, 4);
  static uint64_t retry[256], tick[4096];
  size_t nr = dumped(dir, rec, "user_unit", "app.retry", retry, 256);
  size_t nt = dumped(dir, rec, "user_int", "app.tick", tick, 4096);
  ck_assert_uint_eq(nr, 200);
  ck_assert_uint_lt(nt, 4096);
  /* The known answer: the first boundary whose 100 ms hold > 100. */
  uint64_t want = 0;
  size_t want_n = 0;
  const uint64_t slice = SLICE(100 * MS);
  for (uint64_t b = retry[0] / slice * slice + slice;
       b <= retry[nr - 1] + 100 * MS + slice; b += slice) {
    size_t c = count_in(retry, nr, b - 100 * MS, b);
    if (c > 100) {
      want = b, want_n = c;
      break;
    }
  }
  ck_assert_uint_ne(want, 0);

  snprintf(out, sizeof out, "%s/out", dir);
  ck_assert_int_eq(mkdir(out, 0700), 0);
  const char *opts[] = {"--when", "count(event:app.retry, 100ms) > 100",
                        "--before", "1s", "--after", "50ms", "--every",
                        "1ns", NULL};
  struct trig t[8];
  char *err;
  size_t k = watch(dir, out, opts, rec, t, 8, &err);
  ck_assert_msg(k == 1, "%zu triggers: %s", k, err);
  ck_assert_uint_eq(t[0].ts, want);
  char m[32];
  snprintf(m, sizeof m, "%zu", want_n);
  ck_assert_str_eq(t[0].measured, m);
  ck_assert_str_eq(t[0].outcome, "opened");
  /* The trigger's wall time is its snapshot's (the recording's clock,
   * not when the line was logged). */
  ck_assert_uint_ne(t[0].wall, 0);
  char wall[64];
  snprintf(wall, sizeof wall, "\"wall_time_ns\":%" PRIu64 ",", t[0].wall);
  const char *snap = strstr(err, "\"event\":\"snapshot\"");
  ck_assert_msg(snap && strstr(snap, wall), "%s not in %s", wall, err);
  free(err);

  /* The snapshot: the ticks of [want - 1s, want + 50ms], from every
   * file (the recording began less than a second before). */
  struct er_lines snaps = er_entries(out, "-count.events");
  ck_assert_uint_eq(snaps.n, 1);
  static uint64_t sticks[4096];
  size_t ns = dumped(dir, snaps.v[0], "user_int", "app.tick", sticks, 4096);
  ck_assert_uint_lt(tick[0], want - 300 * MS);
  ck_assert_uint_eq(ns, count_in(tick, nt, want - 1000 * MS,
                                 want + 50 * MS + 1));
  ck_assert_uint_eq(sticks[0], tick[0]);
  er_lines_free(&snaps);
}
END_TEST

/* No retry for 200 ms, held: the recording is rotated every 100 ms, so
 * only a `for` carried from file to file can hold that long.  It fires
 * once, in the last quiet stretch, at the first boundary that ends
 * 200 ms of boundaries without a retry in their 50 ms -- as computed
 * from the recording -- whether the files are named one by one or by
 * their directory. */
START_TEST(test_for_across_files) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64], rec[PATH_MAX], out[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *steps[] = {"retry", "1",   "tick", "100", "retry", "1",
                         "tick",  "100", "retry", "1",  "tick",  "400",
                         NULL};
  ck_assert_int_ge(record(dir, steps, rec), 5);
  uint64_t retry[8], tick[1024];
  size_t nr = dumped(dir, rec, "user_unit", "app.retry", retry, 8);
  size_t nt = dumped(dir, rec, "user_int", "app.tick", tick, 1024);
  ck_assert_uint_eq(nr, 3);
  ck_assert_uint_lt(nt, 1024);
  /* Quiet at b: no retry in [b - 50ms, b).  Held since the first
   * boundary of a quiet run; fires at the first boundary 200 ms past
   * it. */
  uint64_t want = 0, since = 0;
  int quiet_before = 0;
  const uint64_t slice = SLICE(50 * MS);
  for (uint64_t b = retry[0] / slice * slice + slice; b <= tick[nt - 1];
       b += slice) {
    int quiet = count_in(retry, nr, b - 50 * MS, b) == 0;
    if (quiet && !quiet_before) since = b;
    quiet_before = quiet;
    if (quiet && b >= since + 200 * MS) {
      want = b;
      break;
    }
  }
  ck_assert_uint_ne(want, 0);
  ck_assert_uint_gt(want, retry[2] + 250 * MS - slice);

  const char *opts[] = {"--when", "count(event:app.retry, 50ms) < 1 for 200ms",
                        "--before", "300ms", "--every", "1ns", NULL};
  snprintf(out, sizeof out, "%s/out", dir);
  ck_assert_int_eq(mkdir(out, 0700), 0);
  struct trig t[8];
  size_t k = watch(dir, out, opts, rec, t, 8, NULL);
  ck_assert_uint_eq(k, 1);
  ck_assert_uint_eq(t[0].ts, want);
  ck_assert_str_eq(t[0].measured, "0");

  /* The files named one by one, in order: the same. */
  struct er_lines files = er_entries(rec, ".events");
  const char *named[32];
  ck_assert_uint_lt(files.n, 32);
  for (size_t i = 0; i <= files.n; i++)
    named[i] = i < files.n ? files.v[i] : NULL;
  struct watched one = watch_ops(dir, out, opts, named);
  ck_assert_uint_eq(one.n, 1);
  ck_assert_uint_eq(one.t[0].ts, want);
  watched_free(&one);
  er_lines_free(&files);
  /* Each file alone is too short for the rule. */
  files = er_entries(rec, ".events");
  for (size_t i = 0; i < files.n; i++) {
    struct trig u[2];
    ck_assert_uint_eq(watch(dir, out, opts, files.v[i], u, 2, NULL), 0);
  }
  er_lines_free(&files);
}
END_TEST

/* and / or over a recording, with the values of each aggregate; the and
 * whose span never came fires nothing and says so at the end. */
START_TEST(test_and_or_file) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64], rec[PATH_MAX], out[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *steps[] = {"tick", "20", "retry", "150", "tick", "50", NULL};
  ck_assert_int_ge(record(dir, steps, rec), 1);
  uint64_t retry[256];
  ck_assert_uint_eq(dumped(dir, rec, "user_unit", "app.retry", retry, 256),
                    150);
  uint64_t want = 0;
  size_t want_n = 0;
  const uint64_t slice = SLICE(100 * MS);
  for (uint64_t b = retry[0] / slice * slice + slice; !want; b += slice)
    if ((want_n = count_in(retry, 150, b - 100 * MS, b)) > 100) want = b;
  snprintf(out, sizeof out, "%s/out", dir);
  ck_assert_int_eq(mkdir(out, 0700), 0);
  const char *or_opts[] = {"--when",
                           "count(event:app.retry, 100ms) > 100 or "
                           "p99(span:http.request, 200ms) > 2ms",
                           NULL};
  struct trig t[4];
  ck_assert_uint_eq(watch(dir, out, or_opts, rec, t, 4, NULL), 1);
  ck_assert_uint_eq(t[0].ts, want);
  char m[160];
  snprintf(m, sizeof m, "count(event:app.retry, 100ms) = %zu, "
           "p99(span:http.request, 200ms) = none", want_n);
  ck_assert_str_eq(t[0].measured, m);
  ck_assert_int_eq(er_count_entries(out, "-rule.events"), 1);

  const char *and_opts[] = {"--when",
                            "count(event:app.retry, 100ms) > 100 and "
                            "p99(span:http.request, 200ms) > 2ms",
                            NULL};
  char *err;
  ck_assert_uint_eq(watch(dir, out, and_opts, rec, t, 4, &err), 0);
  ck_assert_msg(strstr(err, "\"event\":\"rule_never_evaluated\""), "%s", err);
  ck_assert_msg(strstr(err, "\"snapshots\":0,"), "%s", err);
  free(err);
}
END_TEST

/* The live run and its recording give the same triggers: watch follows
 * rule_writer live and keeps the whole run in one snapshot (--before
 * longer than the run, every trigger extending the window to its end);
 * watch on that snapshot then reports the same triggers, at the same
 * times, with the same values and outcomes. */
START_TEST(test_live_equals_file) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64], live[PATH_MAX], again[PATH_MAX], prog[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(live, sizeof live, "%s/live", dir);
  snprintf(again, sizeof again, "%s/again", dir);
  ck_assert_int_eq(mkdir(live, 0700), 0);
  ck_assert_int_eq(mkdir(again, 0700), 0);
  const char *opts[] = {"--when", "count(event:app.retry, 100ms) > 100",
                        "--when", "pause>10ms",
                        "--when", "p99(span:http.request, 100ms) > 2ms",
                        "--before", "20s", "--every", "1ns", NULL};
  const char *cmd[] = {"--", rule_writer(prog), "retry", "150", "tick",
                       "150", "gc", "2", "12", "30", "span", "3", "3000",
                       "tick", "50", NULL};
  struct watched lw = watch_ops(dir, live, opts, cmd);
  /* One for the retries, two pauses, the spans: at least four. */
  ck_assert_msg(lw.n >= 4, "%s", lw.err);
  struct er_lines snaps = er_entries(live, ".events");
  ck_assert_uint_eq(snaps.n, 1);
  const char *file[] = {snaps.v[0], NULL};
  struct watched fw = watch_ops(dir, again, opts, file);
  er_lines_compare("triggers of the recording vs live", &fw.lines,
                   &lw.lines, 0);
  watched_free(&lw);
  watched_free(&fw);
  er_lines_free(&snaps);
}
END_TEST

/* Over recorded files, the text log ends by saying what came of the
 * rules, even when none held (a silent run is not a result). */
START_TEST(test_files_summary) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64], rec[PATH_MAX], out[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *steps[] = {"retry", "50", "tick", "50", NULL};
  ck_assert_int_ge(record(dir, steps, rec), 1);
  snprintf(out, sizeof out, "%s/out", dir);
  ck_assert_int_eq(mkdir(out, 0700), 0);
  static const struct {
    const char *rule, *last;
  } rows[] = {
      {"count(event:app.retry, 100s) > 50",
       "eventring: watch: 0 snapshots written (no rule held)\n"},
      {"count(event:app.retry, 100s) > 49",
       "eventring: watch: 1 snapshot written\n"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *args[] = {"watch", "--when", rows[i].rule, "-o", out, rec,
                          NULL};
    struct er_run r = er_run_tool(dir, args, 0);
    ck_assert_int_eq(er_exit_code(&r, "eventring watch"), 0);
    size_t n = strlen(r.err), k = strlen(rows[i].last);
    ck_assert_msg(n >= k && !strcmp(r.err + n - k, rows[i].last),
                  "%s: %s", rows[i].rule, r.err);
    er_run_free(&r);
  }
}
END_TEST

/* An operand that is no ring file is an input error (1); FILE and
 * --pid together a usage error (2). */
START_TEST(test_bad_input) {
  ER_NEED_TOOL();
  char dir[64], path[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(path, sizeof path, "%s/not.events", dir);
  er_write_text(path, "not a ring file\n", 1);
  const char *args[] = {"watch", "--when", "pause>1ms", "-o", dir, path,
                        NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_int_eq(er_exit_code(&r, "eventring watch"), 1);
  ck_assert_msg(strstr(r.err, path), "%s", r.err);
  er_run_free(&r);
  const char *empty[] = {"watch", "--when", "pause>1ms", "-o", dir, dir,
                         NULL};
  r = er_run_tool(dir, empty, 0);
  /* The directory's one *.events file is not a ring file either. */
  ck_assert_int_eq(er_exit_code(&r, "eventring watch"), 1);
  er_run_free(&r);
  const char *both[] = {"watch", "--when", "pause>1ms", "-o", dir,
                        "--pid", "1", path, NULL};
  r = er_run_tool(dir, both, 0);
  ck_assert_int_eq(er_exit_code(&r, "eventring watch"), 2);
  er_run_free(&r);
}
END_TEST

static TCase *tc_files(void) {
  TCase *tc = er_tcase("files");
  tcase_add_test(tc, test_count_directory);
  tcase_add_test(tc, test_for_across_files);
  tcase_add_test(tc, test_and_or_file);
  tcase_add_test(tc, test_live_equals_file);
  tcase_add_test(tc, test_files_summary);
  tcase_add_test(tc, test_bad_input);
  return tc;
}

ER_TEST_MAIN("watch_files", tc_files)
