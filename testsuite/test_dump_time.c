/* Tests `eventring dump --time`: raw timestamps, seconds relative to the first event (the default), and wall-clock times in ISO 8601 UTC that map back to the file's recorded offset; a process and its forked child, listed together, share one offset; an OCaml 5 file, which has no wall clock, dumps relative and raw but refuses wall with a message. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "lat_craft.h"
#include "rtlib.h"
#include "testlib.h"
#include "tooltest.h"

/* The text after " ts=" in a dump line, up to the next space. */
static void ts_text(const char *line, char *out, size_t size) {
  const char *p = strstr(line, " ts=");
  ck_assert_msg(p != NULL, "no ts in: %s", line);
  p += 4;
  size_t n = strcspn(p, " ");
  ck_assert_uint_lt(n, size);
  memcpy(out, p, n);
  out[n] = 0;
}

/* The event lines of `eventring dump ARGS FILE` (exit status 0, nothing
 * on stderr). */
static struct er_lines dump_lines(const char *dir, const char *time_opt,
                                  const char *path) {
  const char *args[] = {"dump", time_opt ? time_opt : path,
                        time_opt ? path : NULL, NULL};
  /* A directory: every ring file in it. */
  const char *dir_args[] = {"dump", time_opt, "--dir", path, NULL};
  struct stat st;
  int is_dir = time_opt && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
  struct er_run r = er_run_tool(dir, is_dir ? dir_args : args, 0);
  er_assert_status(&r, 0);
  struct er_lines all = er_lines_split(r.out);
  er_run_free(&r);
  /* Event lines (pid=P first with several processes); loss lines have
   * no time. */
  struct er_lines out = {0};
  for (size_t i = 0; i < all.n; i++)
    if ((!strncmp(all.v[i], "domain=", 7) || !strncmp(all.v[i], "pid=", 4)) &&
        strstr(all.v[i], " ts="))
      er_lines_push(&out, all.v[i], strlen(all.v[i]));
  er_lines_free(&all);
  return out;
}

/* The line with its time taken out, to compare the rest. */
static void without_ts(const char *line, char *out, size_t size) {
  const char *p = strstr(line, " ts=");
  const char *q = strchr(p + 1, ' ');
  snprintf(out, size, "%.*s%s", (int)(p - line), line, q);
}

static uint64_t parse_raw(const char *s) {
  char *end;
  uint64_t v = strtoull(s, &end, 10);
  ck_assert_msg(*s && !*end, "not a raw timestamp: %s", s);
  return v;
}

/* A relative time, seconds with 9 decimals, as signed nanoseconds. */
static int64_t parse_relative(const char *s) {
  int neg = *s == '-';
  unsigned long long sec, ns;
  int n = 0;
  ck_assert_msg(sscanf(s + neg, "%llu.%9llu%n", &sec, &ns, &n) == 2 &&
                    s[neg + n] == 0 && strlen(strchr(s, '.') + 1) == 9,
                "not a relative time: %s", s);
  int64_t v = (int64_t)(sec * 1000000000ull + ns);
  return neg ? -v : v;
}

START_TEST(test_time_modes_of_own_file) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char *path = er_start_preserved(NULL);
  int id = eventring_register("time.step", EVENTRING_TYPE_INT);
  for (int i = 0; i < 20; i++) {
    eventring_write_int(id, i);
    er_sleep_ms(1);
  }
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_wallclock w;
  ck_assert_int_eq(er_file_wallclock(path, EVENTRING_WALLCLOCK_START, &w), 0);

  struct er_lines raw = dump_lines(dir, "--time=raw", path);
  struct er_lines rel = dump_lines(dir, "--time=relative", path);
  struct er_lines def = dump_lines(dir, NULL, path);
  struct er_lines wall = dump_lines(dir, "--time=wall", path);
  ck_assert_uint_ge(raw.n, 22);
  ck_assert_uint_eq(rel.n, raw.n);
  ck_assert_uint_eq(def.n, raw.n);
  ck_assert_uint_eq(wall.n, raw.n);
  char t[64], a[512], b[512];
  ts_text(raw.v[0], t, sizeof t);
  uint64_t first = parse_raw(t);
  for (size_t i = 0; i < raw.n; i++) {
    ts_text(raw.v[i], t, sizeof t);
    uint64_t ts = parse_raw(t);
    ts_text(rel.v[i], t, sizeof t);
    ck_assert_int_eq(parse_relative(t), (int64_t)(ts - first));
    ck_assert_str_eq(def.v[i], rel.v[i]);
    ts_text(wall.v[i], t, sizeof t);
    ck_assert_msg(er_parse_wall(t) == w.wall + (int64_t)(ts - w.ts),
                  "line %zu: wall %s for timestamp %" PRIu64
                  " with the pair (%" PRIu64 ", %" PRId64 ")",
                  i, t, ts, w.ts, w.wall);
    /* Only the time differs. */
    without_ts(raw.v[i], a, sizeof a);
    without_ts(wall.v[i], b, sizeof b);
    ck_assert_str_eq(a, b);
  }
  ts_text(rel.v[0], t, sizeof t);
  ck_assert_str_eq(t, "0.000000000");
  er_lines_free(&raw);
  er_lines_free(&rel);
  er_lines_free(&def);
  er_lines_free(&wall);
  free(path);
}
END_TEST

/* A process and its forked child write a file each; listed together
 * with --time=wall, every event of both is its timestamp moved by one
 * offset, so that wall times keep the order of the common clock across
 * the fork and the file boundary. */
START_TEST(test_fork_tree_one_offset) {
  ER_NEED_TOOL();
  const char *prog = er_prog_path("proc_tree");
  if (!prog) ER_SKIP("proc_tree is not built");
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", prog);
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  struct er_run r = er_run(dir, p, (const char *[]){"fork", NULL},
                           "OCAML_RUNTIME_EVENTS_START=1", 0);
  ck_assert_int_eq(er_exit_code(&r, "proc_tree"), 0);
  er_run_free(&r);
  ck_assert_int_eq(er_count_entries(dir, ".events"), 2);

  struct er_lines raw = dump_lines(dir, "--time=raw", dir);
  struct er_lines wall = dump_lines(dir, "--time=wall", dir);
  ck_assert_uint_eq(wall.n, raw.n);
  ck_assert_uint_ge(raw.n, 20);
  char t[64], a[512], b[512];
  int64_t offset = 0;
  long pids[2] = {0, 0};
  for (size_t i = 0; i < raw.n; i++) {
    long pid = strtol(raw.v[i] + 4, NULL, 10);
    if (!pids[0] || pids[0] == pid) pids[0] = pid;
    else pids[1] = pid;
    ts_text(raw.v[i], t, sizeof t);
    uint64_t ts = parse_raw(t);
    ts_text(wall.v[i], t, sizeof t);
    int64_t off = er_parse_wall(t) - (int64_t)ts;
    if (i == 0) offset = off;
    ck_assert_msg(off == offset,
                  "line %zu (%s): wall - timestamp is %" PRId64
                  ", the first line's %" PRId64, i, raw.v[i], off, offset);
    without_ts(raw.v[i], a, sizeof a);
    without_ts(wall.v[i], b, sizeof b);
    ck_assert_str_eq(a, b);
  }
  ck_assert_msg(pids[1] != 0, "the events of one process only");
  er_lines_free(&raw);
  er_lines_free(&wall);
}
END_TEST

START_TEST(test_ocaml5_file_without_wall_clock) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  ER_NEED_VECTOR(dir, "ocaml54-basic", path);
  eventring_wallclock w;
  ck_assert_int_eq(er_file_wallclock(path, EVENTRING_WALLCLOCK_START, &w),
                   EVENTRING_E_NOWALLCLOCK);
  ck_assert_int_eq(er_file_wallclock(path, EVENTRING_WALLCLOCK_LATEST, &w),
                   EVENTRING_E_NOWALLCLOCK);

  struct er_lines raw = dump_lines(dir, "--time=raw", path);
  struct er_lines rel = dump_lines(dir, NULL, path);
  ck_assert_uint_gt(raw.n, 100);
  ck_assert_uint_eq(rel.n, raw.n);
  char t[64];
  ts_text(raw.v[0], t, sizeof t);
  uint64_t first = parse_raw(t);
  ts_text(raw.v[raw.n - 1], t, sizeof t);
  uint64_t last = parse_raw(t);
  ts_text(rel.v[rel.n - 1], t, sizeof t);
  ck_assert_int_eq(parse_relative(t), (int64_t)(last - first));
  er_lines_free(&raw);
  er_lines_free(&rel);

  struct er_run r =
      er_run_tool(dir, (const char *[]){"dump", "--time=wall", path, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  er_assert_one_error(&r, "does not record the wall clock");
  ck_assert_msg(strstr(r.err, "--time=relative") != NULL, "%s", r.err);
  ck_assert_str_eq(r.out, "");
  er_run_free(&r);
}
END_TEST


/* A real program with two domains (lat_phases 3: a thread writes in
 * slot 1 after the main thread's events): with --domain 1, domain 1's
 * first event shows at its time since the source's first event, as in
 * the unfiltered dump, not at 0. */
START_TEST(test_origin_real_domains) {
  ER_NEED_TOOL();
  const char *prog = er_prog_path("lat_phases");
  if (!prog) ER_SKIP("lat_phases is not built");
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", prog);
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  struct er_run r = er_run(dir, p, (const char *[]){"3", NULL}, NULL, 0);
  ck_assert_int_eq(er_exit_code(&r, "lat_phases"), 0);
  er_run_free(&r);
  struct er_lines raw = dump_lines(dir, "--time=raw", dir);
  uint64_t first = 0, first1 = 0;
  char t[64];
  for (size_t i = 0; i < raw.n; i++) {
    ts_text(raw.v[i], t, sizeof t);
    uint64_t ts = parse_raw(t);
    if (!first || ts < first) first = ts;
    if (!first1 && strstr(raw.v[i], "domain=1 ")) first1 = ts;
  }
  er_lines_free(&raw);
  ck_assert_msg(first1 > first, "domain 1 has no later event");
  char want[64];
  snprintf(want, sizeof want, "%" PRIu64 ".%09" PRIu64,
           (first1 - first) / 1000000000u, (first1 - first) % 1000000000u);
  const char *args[] = {"dump", "--domain", "1", "--dir", dir, NULL};
  r = er_run_tool(dir, args, 0);
  er_assert_status(&r, 0);
  const char *line = strstr(r.out, "domain=1 ts=");
  ck_assert_msg(line != NULL, "%s", r.out);
  ts_text(line, t, sizeof t);
  ck_assert_str_eq(t, want);
  er_run_free(&r);
}
END_TEST

/* One origin for a source, whatever is filtered: the earliest event is
 * domain 1's, and domain 0's first event, 50 us later, shows as such with
 * or without --domain 0, merged or not, and with an event filter. */
START_TEST(test_origin_ignores_filters) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  struct craft c;
  const char *dir = craft_new(&c, path, "origin");
  craft_begin(&c, 0, 1000050000, PH_MINOR);
  craft_end(&c, 0, 1000060000, PH_MINOR);
  craft_begin(&c, 1, 1000000000, PH_MINOR);
  craft_end(&c, 1, 1000010000, PH_MINOR);
  craft_begin(&c, 1, 1208000000, PH_MINOR);
  craft_end(&c, 1, 1208000100, PH_MINOR);
  craft_write(&c, path);
  craft_free(&c);
  const char *runs[][7] = {
      {"dump", path, NULL},
      {"dump", "--domain", "0", path, NULL},
      {"dump", "--merge", "--domain", "0", path, NULL},
      {"dump", "--event", "minor", "--domain", "0", path, NULL},
  };
  for (size_t i = 0; i < 4; i++) {
    struct er_run r = er_run_tool(dir, runs[i], 0);
    ck_assert_int_eq(er_exit_code(&r, "dump"), 0);
    ck_assert_msg(strstr(r.out, "domain=0 ts=0.000050000 kind=runtime_begin") !=
                      NULL,
                  "run %zu: %s", i, r.out);
    if (i == 0)
      ck_assert_msg(strstr(r.out, "domain=1 ts=0.000000000 ") != NULL &&
                        strstr(r.out, "domain=1 ts=0.208000000 ") != NULL,
                    "%s", r.out);
    er_run_free(&r);
  }
}
END_TEST

START_TEST(test_bad_time_mode) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  struct er_run r = er_run_tool(
      dir, (const char *[]){"dump", "--time=local", "x.events", NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_assert_one_error(&r, "--time");
  er_run_free(&r);
}
END_TEST

static TCase *tc_dump_time(void) {
  TCase *tc = er_tcase("dump_time");
  tcase_add_test(tc, test_time_modes_of_own_file);
  tcase_add_test(tc, test_fork_tree_one_offset);
  tcase_add_test(tc, test_ocaml5_file_without_wall_clock);
  tcase_add_test(tc, test_bad_time_mode);
  tcase_add_test(tc, test_origin_ignores_filters);
  tcase_add_test(tc, test_origin_real_domains);
  return tc;
}

ER_TEST_MAIN("dump_time", tc_dump_time)
