/* Tests the hints the command gives a user who gets an empty answer:
 * latency on a trace without GC events points to --span and lists the
 * trace's spans (escaped), --since/--until outside the trace say
 * where its events are, in a form the option takes back, and a command
 * that is not traced is pointed to runtime_events.auto. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lat_craft.h"

#define MS UINT64_C(1000000)
#define T0 (UINT64_C(5000) * MS)

/* A C program's trace: user spans only, one of them named with a
 * terminal escape and a newline. */
static void craft_spans(char *path, size_t size) {
  snprintf(path, size, "%s/spans.events", er_tmpdir());
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, 0, "http.req");
  craft_user_name(&c, 1, "db\033[31m\nq");
  craft_lifecycle(&c, 0, T0, EVENTRING_LIFECYCLE_RING_START, 1);
  for (int i = 0; i < 10; i++) {
    uint64_t at = T0 + (uint64_t)i * 10 * MS;
    craft_event(&c, 0, 1, ER_UEV_SPAN_BEGIN, 0, at, NULL, 0);
    craft_event(&c, 0, 1, ER_UEV_SPAN_BEGIN, 1, at + MS, NULL, 0);
    craft_event(&c, 0, 1, ER_UEV_SPAN_END, 1, at + 2 * MS, NULL, 0);
    craft_event(&c, 0, 1, ER_UEV_SPAN_END, 0, at + 3 * MS, NULL, 0);
  }
  craft_write(&c, path);
  craft_free(&c);
}

START_TEST(test_latency_points_to_span) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  craft_spans(path, sizeof path);
  const char *args[] = {"latency", "--ocaml53", path, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "GC pauses: 0 "), "%s", r.out);
  /* In the report, after it; nothing on stderr. */
  ck_assert_str_eq(r.err, "");
  ck_assert_msg(strstr(r.out, "\nThe trace has no runtime phase events; ") &&
                    strstr(r.out, "use --span NAME.\n"),
                "%s", r.out);
  /* Both names, the second escaped: no ESC, no line break. */
  ck_assert_msg(strstr(r.out, "user spans (http.req, db\\027[31m\\010q)"),
                "%s", r.out);
  ck_assert(!strchr(r.out, '\033'));
  lat_run_free(&r);

  /* Not in the JSON report. */
  const char *aj[] = {"latency", "--ocaml53", "--json", path, NULL};
  r = lat_run_tool(aj);
  lat_assert_ok(&r);
  ck_assert_msg(!strstr(r.out, "--span"), "%s", r.out);
  lat_run_free(&r);

  /* What the hint says works. */
  const char *a2[] = {"latency", "--ocaml53", "--json", "--span", "http.req",
                      path, NULL};
  r = lat_run_tool(a2);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "\"count\": 10"), "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* A trace with GC pauses, or none of GC nor spans: no hint about spans. */
START_TEST(test_latency_no_hint_with_gc) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/gc.events", er_tmpdir());
  struct craft c;
  craft_init(&c);
  craft_user_name(&c, 0, "http.req");
  craft_pause(&c, 0, T0, 100000);
  craft_event(&c, 0, 1, ER_UEV_SPAN_BEGIN, 0, T0 + MS, NULL, 0);
  craft_event(&c, 0, 1, ER_UEV_SPAN_END, 0, T0 + 2 * MS, NULL, 0);
  craft_write(&c, path);
  craft_free(&c);
  const char *args[] = {"latency", "--ocaml53", path, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_str_eq(r.err, "");
  ck_assert_msg(strstr(r.out, "GC pauses: 1 "), "%s", r.out);
  lat_run_free(&r);

  snprintf(path, sizeof path, "%s/nothing.events", er_tmpdir());
  craft_init(&c);
  craft_lifecycle(&c, 0, T0, EVENTRING_LIFECYCLE_RING_START, 1);
  craft_write(&c, path);
  craft_free(&c);
  r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "The trace has no runtime phase events and no "
                              "user spans"),
                "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* The value after `from` in `err` up to the next space ("0.093s"). */
static void word_after(const char *err, const char *from, char *out,
                       size_t size) {
  const char *p = strstr(err, from);
  ck_assert_msg(p != NULL, "no '%s' in: %s", from, err);
  p += strlen(from);
  size_t n = strcspn(p, " \n");
  ck_assert_uint_lt(n, size);
  memcpy(out, p, n);
  out[n] = '\0';
}

/* Event lines of a dump (not its SUMMARY). */
static int events_of(const char *out) {
  int n = 0;
  for (const char *p = out; (p = strstr(p, "domain=")); p++) n++;
  return n;
}

START_TEST(test_since_outside_relative) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  craft_spans(path, sizeof path);
  const char *args[] = {"dump", "--ocaml53", "--since", "10s", path, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_int_eq(events_of(r.out), 0);
  ck_assert_int_eq(er_count_lines(r.err), 1);
  /* The last event is 93 ms after the first. */
  ck_assert_msg(strstr(r.err, "no event within --since: the trace's events "
                              "run from 0s to 0.093s"),
                "%s", r.err);
  char hi[64];
  word_after(r.err, " to ", hi, sizeof hi);
  lat_run_free(&r);
  /* The end it gives is a --since that keeps the last event. */
  const char *a2[] = {"dump", "--ocaml53", "--since", hi, path, NULL};
  r = lat_run_tool(a2);
  lat_assert_ok(&r);
  ck_assert_str_eq(r.err, "");
  ck_assert_int_eq(events_of(r.out), 1);
  lat_run_free(&r);
  /* Within the trace: no note. */
  const char *a3[] = {"dump", "--ocaml53", "--since", "50ms",
                      "--until", "60ms", path, NULL};
  r = lat_run_tool(a3);
  lat_assert_ok(&r);
  ck_assert_str_eq(r.err, "");
  ck_assert_int_eq(events_of(r.out), 4);
  lat_run_free(&r);
  /* --until before the first event, with another subcommand. */
  const char *a4[] = {"stats", "--ocaml53", "--until", "0s", path, NULL};
  r = lat_run_tool(a4);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.err, "no event within --until: the trace's events "
                              "run from 0s to 0.093s"),
                "%s", r.err);
  lat_run_free(&r);
}
END_TEST

/* A file written here has a wall clock: a time of day outside it is
 * answered with the times of day of its events. */
START_TEST(test_since_outside_wall) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/span_sleep", progs);
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  char *argv[] = {prog, "1", "3", NULL};
  FILE *out, *err;
  pid_t pid = lat_start(argv, &out, &err);
  struct lat_run p = lat_finish(pid, out, err);
  ck_assert_msg(p.status == 0, "span_sleep: status %d, %s", p.status, p.err);
  lat_run_free(&p);
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, pid);
  const char *args[] = {"dump", "--since", "2000-01-01T00:00:00Z", "--until",
                        "2000-01-01T00:00:01Z", path, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_int_eq(events_of(r.out), 0);
  ck_assert_msg(strstr(r.err, "no event within --since and --until: the "
                              "trace's events run from 20"),
                "%s", r.err);
  char hi[64];
  word_after(r.err, " to ", hi, sizeof hi);
  ck_assert_msg(hi[strlen(hi) - 1] == 'Z', "%s", hi);
  lat_run_free(&r);
  const char *a2[] = {"dump", "--since", hi, path, NULL};
  r = lat_run_tool(a2);
  lat_assert_ok(&r);
  ck_assert_str_eq(r.err, "");
  ck_assert_int_eq(events_of(r.out), 1);
  lat_run_free(&r);
}
END_TEST

/* A command that makes no ring file: the error names the package an
 * OCaml 4 program links for tracing. */
START_TEST(test_untraced_command) {
  ER_NEED_TOOL();
  const char *args[] = {"stats", "--", "true", NULL};
  struct lat_run r = lat_run_tool(args);
  ck_assert_int_eq(r.status, 1);
  struct er_run e = {r.status, r.out, r.err};
  er_assert_one_error(&e, "made no ring file");
  ck_assert_msg(strstr(r.err, "ocamlfind package runtime_events.auto"), "%s",
                r.err);
  lat_run_free(&r);
}
END_TEST

static TCase *tc_hints(void) {
  TCase *tc = er_tcase("hints");
  tcase_add_test(tc, test_latency_points_to_span);
  tcase_add_test(tc, test_latency_no_hint_with_gc);
  tcase_add_test(tc, test_since_outside_relative);
  tcase_add_test(tc, test_since_outside_wall);
  tcase_add_test(tc, test_untraced_command);
  return tc;
}

ER_TEST_MAIN("hints", tc_hints)
