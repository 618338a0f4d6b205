/* Tests eventring watch's actions and log: --exec gets each complete snapshot's path intact, its failures and timeouts are logged and counted, at most --exec-max run, the recorder reads on while one runs; --log-format json lines with --label. */
#include <errno.h>
#include <regex.h>
#include <signal.h>
#include <sys/stat.h>

#include "jsonc.h"
#include "testlib.h"
#include "tooltest.h"

/* ------------------------------------------------------------------ */
/* The JSON log, through json-c.                                       */

/* The lines of a JSON log, each parsed (strictly) into an object. */
struct log {
  void *v[64];
  size_t n;
};

static struct log log_read(const char *path) {
  const struct er_jc *jc = er_jc();
  ck_assert_ptr_nonnull(jc);
  struct log l;
  memset(&l, 0, sizeof l);
  struct er_lines lines = er_lines_read(path);
  ck_assert_msg(lines.n > 0 && lines.n <= 64, "%s: %zu lines", path, lines.n);
  for (size_t i = 0; i < lines.n; i++) {
    void *tok = jc->tokener_new();
    jc->tokener_set_flags(tok, ER_JC_STRICT);
    void *o = jc->tokener_parse_ex(tok, lines.v[i], (int)strlen(lines.v[i]));
    ck_assert_msg(o && jc->tokener_get_error(tok) == 0, "not JSON: %s",
                  lines.v[i]);
    ck_assert_msg(jc->object_get_type(o) == ER_JC_OBJECT, "not an object: %s",
                  lines.v[i]);
    jc->tokener_free(tok);
    l.v[l.n++] = o;
  }
  er_lines_free(&lines);
  return l;
}

static void log_free(struct log *l) {
  for (size_t i = 0; i < l->n; i++) er_jc()->object_put(l->v[i]);
  l->n = 0;
}

static void *jget(void *o, const char *key) {
  void *v = NULL;
  return er_jc()->object_object_get_ex(o, key, &v) ? v : NULL;
}

/* Field `key` of `o`, a string (fails when it is not one). */
static const char *jstr(void *o, const char *key) {
  void *v = jget(o, key);
  ck_assert_msg(v && er_jc()->object_get_type(v) == ER_JC_STRING,
                "no string \"%s\"", key);
  return er_jc()->object_get_string(v);
}

/* Field `key` of `o`, an integer (fails when it is not one). */
static int64_t jint(void *o, const char *key) {
  void *v = jget(o, key);
  ck_assert_msg(v && er_jc()->object_get_type(v) == ER_JC_INT,
                "no integer \"%s\"", key);
  return er_jc()->object_get_int64(v);
}

/* The index of the `nth` (from 0) line of event `event`, or -1. */
static long find_event(const struct log *l, const char *event, int nth) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(jstr(l->v[i], "event"), event) && nth-- == 0) return (long)i;
  return -1;
}

/* Every line has an RFC 3339 UTC time and the labels of `labels`
 * ({key, value} pairs, NULL-ended). */
static void check_common(const struct log *l, const char *const *labels) {
  regex_t re;
  ck_assert_int_eq(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:"
                           "[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$", REG_EXTENDED |
                           REG_NOSUB), 0);
  for (size_t i = 0; i < l->n; i++) {
    const char *t = jstr(l->v[i], "time");
    ck_assert_msg(regexec(&re, t, 0, NULL, 0) == 0, "time %s", t);
    void *lab = jget(l->v[i], "labels");
    ck_assert_msg(!labels[0] || lab, "line %zu: no labels", i);
    for (size_t k = 0; labels[k]; k += 2)
      ck_assert_str_eq(jstr(lab, labels[k]), labels[k + 1]);
  }
  regfree(&re);
}

/* ------------------------------------------------------------------ */
/* Running watch.                                                       */

static const char *writer(void) {
  static char buf[PATH_MAX];
  const char *p = er_prog_path("watch_writer");
  ck_assert_ptr_nonnull(p);
  snprintf(buf, sizeof buf, "%s", p);
  return buf;
}

/* The snapshots named by the lines "eventring: watch: --exec for PATH"
 * followed by `says` in `err`, in order; each exists. */
static struct er_lines exec_paths(const char *err, const char *says) {
  static const char head[] = "eventring: watch: --exec for ";
  struct er_lines l = {0};
  for (const char *p = err; (p = strstr(p, head)) != NULL; p++) {
    const char *path = p + strlen(head), *eol = strchr(path, '\n');
    const char *end = strstr(path, says);
    if (!end || (eol && end > eol)) continue;
    er_lines_push(&l, path, (size_t)(end - path));
    ck_assert_msg(access(l.v[l.n - 1], F_OK) == 0, "no snapshot %s",
                  l.v[l.n - 1]);
  }
  return l;
}

/* `eventring watch` with `opts` (NULL-ended), then -- watch_writer with
 * `wargs` (NULL-ended); its stderr and stdout go to files in `dir`. */
static struct er_run run_watch(const char *dir, const char *const *opts,
                               const char *const *wargs) {
  const char *args[64];
  size_t n = 0;
  args[n++] = "watch";
  while (*opts) args[n++] = *opts++;
  args[n++] = "--";
  args[n++] = writer();
  while (*wargs) args[n++] = *wargs++;
  args[n] = NULL;
  return er_run_tool(dir, args, 0);
}

static const char *const one_event[] = {"--lead", "400", "--inject", "event",
                                        "--tail", "200", NULL};

/* The timestamps of the app.slow events in the snapshot `file`, and of
 * every event in *all (at most 4096). */
static size_t slow_events(const char *dir, const char *file, uint64_t *ts,
                          size_t max, uint64_t *all, size_t *nall) {
  struct er_lines l = er_dump_raw(dir, file);
  size_t n = 0;
  *nall = 0;
  for (size_t i = 0; i < l.n; i++) {
    if (strncmp(l.v[i], "domain=", 7)) continue;
    uint64_t t = er_field(l.v[i], "ts");
    if (*nall < 4096) all[(*nall)++] = t;
    if (strstr(l.v[i], "kind=user_unit name=app.slow") && n < max) ts[n++] = t;
  }
  er_lines_free(&l);
  return n;
}

/* ------------------------------------------------------------------ */
/* The command gets the complete file's path, intact.                   */

START_TEST(test_exec_path_and_json) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  if (!er_jc()) ER_SKIP("json-c (libjson-c.so.5) is not installed");
  char dir[64], out[PATH_MAX], args_file[PATH_MAX], copy[PATH_MAX],
      log[PATH_MAX], cmd[3 * PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  /* Spaces, both quotes, a $ and a backslash: what a shell would read. */
  snprintf(out, sizeof out, "%s/out 'q' \"d\" $HOME \\x", dir);
  ck_assert_int_eq(mkdir(out, 0700), 0);
  snprintf(args_file, sizeof args_file, "%s/args", dir);
  snprintf(copy, sizeof copy, "%s/copy", dir);
  snprintf(log, sizeof log, "%s/log.json", dir);
  /* The command says what it was given, and copies the file. */
  snprintf(cmd, sizeof cmd, "sh -c 'printf \"%%s\\n\" \"$#\" \"$1\" >\"$2\"; "
           "cp \"$1\" \"$3\"' sh {} '%s' '%s'", args_file, copy);
  const char *opts[] = {"--when", "event:app.slow", "--before", "300ms",
                        "--after", "50ms", "-o", out, "--exec", cmd,
                        "--log-format", "json", "--log", log, "--label",
                        "host=test-host", "--label", "note=a \"b\" \\ c",
                        NULL};
  struct er_run r = run_watch(dir, opts, one_event);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "injected\n");
  /* The log went to --log: standard error has no JSON. */
  ck_assert_msg(!strchr(r.err, '{'), "JSON on stderr: %s", r.err);

  ck_assert_msg(er_count_entries(out, ".events") == 1, "%s", r.err);
  struct log l = log_read(log);
  long snap = find_event(&l, "snapshot", 0);
  ck_assert_msg(snap >= 0, "no snapshot line");
  const char *path = jstr(l.v[snap], "snapshot");
  /* The path as it is, one argument: $# counts {} and the two after
   * it. */
  char want[2 * PATH_MAX];
  snprintf(want, sizeof want, "3\n%s\n", path);
  er_assert_content(args_file, want);
  /* The file was complete when the command ran: its copy is the same. */
  size_t n1, n2;
  char *a = er_slurp(path, &n1), *b = er_slurp(copy, &n2);
  ck_assert_uint_eq(n1, n2);
  ck_assert_msg(n1 > 0 && !memcmp(a, b, n1), "the copy differs");
  free(a);
  free(b);

  const char *labels[] = {"host", "test-host", "note", "a \"b\" \\ c", NULL};
  check_common(&l, labels);
  long trig = find_event(&l, "trigger", 0), start = find_event(&l, "action_started", 0),
       fin = find_event(&l, "action_finished", 0),
       sum = find_event(&l, "summary", 0);
  ck_assert_msg(trig >= 0 && snap > trig && start > snap && fin > start &&
                    sum == (long)l.n - 1,
                "lines out of order: %ld %ld %ld %ld %ld", trig, snap, start,
                fin, sum);
  ck_assert_str_eq(jstr(l.v[trig], "rule"), "event:app.slow");
  ck_assert_str_eq(jstr(l.v[trig], "outcome"), "opened");
  ck_assert_str_eq(jstr(l.v[snap], "snapshot"), path);
  ck_assert_str_eq(jstr(l.v[snap], "program"), "watch_writer");
  ck_assert_int_gt(jint(l.v[snap], "pid"), 0);
  ck_assert_int_gt(jint(l.v[snap], "events"), 0);
  ck_assert_str_eq(jstr(l.v[start], "snapshot"), path);
  ck_assert_str_eq(jstr(l.v[start], "command"), "sh");
  ck_assert_int_gt(jint(l.v[start], "action_pid"), 0);
  ck_assert_int_eq(jint(l.v[fin], "action_pid"),
                   jint(l.v[start], "action_pid"));
  ck_assert_int_eq(jint(l.v[fin], "exit_status"), 0);
  void *d = jget(l.v[fin], "duration_s");
  ck_assert_msg(d && er_jc()->object_get_type(d) == ER_JC_DOUBLE,
                "no duration");
  ck_assert_int_eq(jint(l.v[sum], "snapshots"), 1);
  ck_assert_int_eq(jint(l.v[sum], "actions_started"), 1);
  ck_assert_int_eq(jint(l.v[sum], "actions_succeeded"), 1);
  ck_assert_int_eq(jint(l.v[sum], "actions_failed"), 0);
  log_free(&l);
  er_rmdir(out);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Failures: logged, counted, and watch goes on.                        */

/* --storm 3: three app.slow 20 ms apart or more, three windows. */
static const char *const storm3[] = {"--storm", "3", NULL};

START_TEST(test_exec_failures) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  static const struct {
    const char *cmd, *says, *summary;
  } cases[] = {
      {"sh -c 'exit 3' sh {}", ": exited with status 3\n",
       "eventring: watch: --exec: 3 run, 3 failed (0 timed out), 0 skipped\n"},
      {"sh -c 'kill -USR2 $$'", ": killed by signal 12 (",
       "eventring: watch: --exec: 3 run, 3 failed (0 timed out), 0 skipped\n"},
      {"no-such-program-of-eventring {}",
       ": cannot run 'no-such-program-of-eventring': No such file",
       "eventring: watch: --exec: 0 run, 3 failed (0 timed out), 0 skipped\n"},
  };
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *opts[] = {"--when", "event:app.slow", "--before", "10ms",
                        "--after", "5ms", "--every", "1ms", "-o", dir,
                        "--exec", cases[_i].cmd, NULL};
  struct er_run r = run_watch(dir, opts, storm3);
  /* Failed commands do not change watch's status. */
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  ck_assert_msg(er_count_entries(dir, ".events") == 3, "%s", r.err);
  /* One line for each, naming it. */
  struct er_lines snaps = exec_paths(r.err, cases[_i].says);
  ck_assert_msg(snaps.n == 3, "%zu lines: %s", snaps.n, r.err);
  ck_assert_msg(strcmp(snaps.v[0], snaps.v[1]) && strcmp(snaps.v[0],
                snaps.v[2]) && strcmp(snaps.v[1], snaps.v[2]), "%s", r.err);
  ck_assert_msg(strstr(r.err, cases[_i].summary), "no summary in:\n%s",
                r.err);
  er_lines_free(&snaps);
  er_run_free(&r);
}
END_TEST

/* A command that hangs is ended at its timeout, with its process group:
 * SIGTERM, or SIGKILL when it ignores SIGTERM. */
START_TEST(test_exec_timeout) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  if (!er_jc()) ER_SKIP("json-c (libjson-c.so.5) is not installed");
  static const struct {
    const char *cmd, *by;
    int sig;
  } cases[] = {
      /* sh waits for sleep: the group's SIGTERM ends both. */
      {"sh -c 'sleep 1000; exit 0'", "ended by SIGTERM", SIGTERM},
      {"sh -c 'trap \"\" TERM; sleep 1000; exit 0'", "ended by SIGKILL",
       SIGKILL},
  };
  char dir[64], log[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(log, sizeof log, "%s/log.json", dir);
  for (int text = 0; text < 2; text++) {
    const char *opts[] = {"--when", "event:app.slow", "-o", dir, "--exec",
                          cases[_i].cmd, "--exec-timeout", "1s",
                          text ? NULL : "--log-format", "json", "--log", log,
                          NULL};
    double t0 = er_now();
    struct er_run r = run_watch(dir, opts, one_event);
    ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
    /* A generous bound: the timeout, the grace before SIGKILL. */
    ck_assert_msg(er_now() - t0 < 45, "watch took %.1f s", er_now() - t0);
    ck_assert_msg(er_count_entries(dir, ".events") == 1, "%s", r.err);
    char path[PATH_MAX];
    if (text) {
      char says[128];
      snprintf(says, sizeof says, ": timed out after 1.000 s "
               "(--exec-timeout), %s\n", cases[_i].by);
      struct er_lines snaps = exec_paths(r.err, says);
      ck_assert_msg(snaps.n == 1, "no line ...%s in:\n%s", says, r.err);
      snprintf(path, sizeof path, "%s", snaps.v[0]);
      er_lines_free(&snaps);
      ck_assert_msg(strstr(r.err, "eventring: watch: --exec: 1 run, 1 failed "
                           "(1 timed out), 0 skipped\n"), "%s", r.err);
    } else {
      struct log l = log_read(log);
      long f = find_event(&l, "action_failed", 0);
      ck_assert_msg(f >= 0, "no action_failed");
      ck_assert_str_eq(jstr(l.v[f], "reason"), "timeout");
      snprintf(path, sizeof path, "%s", jstr(l.v[f], "snapshot"));
      ck_assert_msg(strstr(jstr(l.v[f], "error"), cases[_i].by), "%s",
                    jstr(l.v[f], "error"));
      ck_assert_int_eq(jint(l.v[f], "signal"), cases[_i].sig);
      /* Its whole group is gone, sleep too, once the orphans that its
       * death left are reaped (at most 10 s). */
      pid_t pgid = (pid_t)jint(l.v[f], "action_pid");
      double give_up = er_now() + 10;
      while (kill(-pgid, 0) == 0 && er_now() < give_up) er_sleep_ms(20);
      ck_assert_int_eq(kill(-pgid, 0), -1);
      ck_assert_int_eq(errno, ESRCH);
      long s = find_event(&l, "summary", 0);
      ck_assert_int_eq(jint(l.v[s], "actions_timed_out"), 1);
      ck_assert_int_eq(jint(l.v[s], "actions_failed"), 1);
      log_free(&l);
    }
    ck_assert_int_eq(unlink(path), 0);
    er_run_free(&r);
  }
}
END_TEST

/* The rings are read while a command runs: the first snapshot's command
 * waits (at most 20 s) until the second snapshot exists, which the
 * watcher writes meanwhile, with the events that came after the first
 * trigger. */
START_TEST(test_exec_reads_on) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  if (!er_jc()) ER_SKIP("json-c (libjson-c.so.5) is not installed");
  char dir[64], out[PATH_MAX], log[PATH_MAX], cmd[2 * PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(out, sizeof out, "%s/out", dir);
  ck_assert_int_eq(mkdir(out, 0700), 0);
  snprintf(log, sizeof log, "%s/log.json", dir);
  snprintf(cmd, sizeof cmd, "sh -c 'i=0; while [ $(ls \"$1\" | grep -c "
           "\"[.]events$\") -lt 2 ]; do i=$((i + 1)); [ $i -lt 1000 ] || "
           "exit 9; sleep 0.02; done' sh '%s'", out);
  static const char *const storm2[] = {"--storm", "2", NULL};
  /* --before reaches back past the first trigger however long the
   * writer was kept off the CPU between the two (at least one of its
   * events lies between them); the run is far shorter. */
  const char *opts[] = {"--when", "event:app.slow", "--before", "30s",
                        "--after", "5ms", "--every", "1ms", "-o", out,
                        "--exec", cmd, "--log-format", "json", "--log", log,
                        NULL};
  struct er_run r = run_watch(dir, opts, storm2);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  ck_assert_msg(er_count_entries(out, ".events") == 2, "%s", r.err);
  struct log l = log_read(log);
  long s = find_event(&l, "summary", 0);
  ck_assert_int_eq(jint(l.v[s], "actions_succeeded"), 2);
  ck_assert_int_eq(jint(l.v[s], "actions_failed"), 0);
  /* The second snapshot was written before the first command ended. */
  long second = find_event(&l, "snapshot", 1),
       first_done = find_event(&l, "action_finished", 0);
  ck_assert_msg(second >= 0 && first_done > second, "%ld %ld", second,
                first_done);
  /* The second holds events past the first trigger, up to its own. */
  static uint64_t all[4096];
  uint64_t t1[4], t2[4];
  size_t nall;
  const char *p1 = jstr(l.v[find_event(&l, "snapshot", 0)], "snapshot");
  ck_assert_uint_eq(slow_events(dir, p1, t1, 4, all, &nall), 1);
  /* The second reaches back over the first trigger to its own. */
  ck_assert_uint_eq(slow_events(dir, jstr(l.v[second], "snapshot"), t2, 4,
                                all, &nall), 2);
  ck_assert_uint_eq(t2[0], t1[0]);
  log_free(&l);
  size_t between = 0;
  for (size_t i = 0; i < nall; i++) between += all[i] > t1[0] && all[i] < t2[1];
  ck_assert_msg(between > 0, "no event between the triggers");
  er_rmdir(out);
  er_run_free(&r);
}
END_TEST

/* --exec-max 1: while the first snapshot's command runs (until the third
 * snapshot exists, at most 20 s), the next two get none, and say so. */
START_TEST(test_exec_max) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64], out[PATH_MAX], cmd[2 * PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(out, sizeof out, "%s/out", dir);
  ck_assert_int_eq(mkdir(out, 0700), 0);
  snprintf(cmd, sizeof cmd, "sh -c 'i=0; while [ $(ls \"$1\" | grep -c "
           "\"[.]events$\") -lt 3 ]; do i=$((i + 1)); [ $i -lt 1000 ] || "
           "exit 9; sleep 0.02; done' sh '%s'", out);
  const char *opts[] = {"--when", "event:app.slow", "--before", "10ms",
                        "--after", "5ms", "--every", "1ms", "-o", out,
                        "--exec", cmd, "--exec-max", "1", NULL};
  struct er_run r = run_watch(dir, opts, storm3);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  ck_assert_msg(er_count_entries(out, ".events") == 3, "%s", r.err);
  struct er_lines skipped =
      exec_paths(r.err, ": skipped, --exec-max 1 command still running\n");
  ck_assert_msg(skipped.n == 2, "%zu skipped: %s", skipped.n, r.err);
  ck_assert_msg(strstr(r.err, "eventring: watch: --exec: 1 run, 0 failed "
                       "(0 timed out), 2 skipped\n"), "%s", r.err);
  er_lines_free(&skipped);
  er_rmdir(out);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* A log that cannot be opened.                                          */

START_TEST(test_exec_bad_log) {
  ER_NEED_TOOL();
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  /* A --log that cannot be opened is an input error, before anything
   * runs. */
  const char *args[] = {"watch", "--when", "lost", "--log", "/nonexistent/x",
                        "--", "true", NULL};
  struct er_run r = er_run_tool(dir, args, ER_SPAWN_PATH);
  ck_assert_int_eq(er_exit_code(&r, "eventring watch"), 1);
  er_assert_one_error(&r, "watch: --log /nonexistent/x: No such file");
  er_run_free(&r);
}
END_TEST

static TCase *tc_exec(void) {
  TCase *tc = er_tcase("exec");
  tcase_add_test(tc, test_exec_path_and_json);
  tcase_add_loop_test(tc, test_exec_failures, 0, 3);
  tcase_add_loop_test(tc, test_exec_timeout, 0, 2);
  tcase_add_test(tc, test_exec_reads_on);
  tcase_add_test(tc, test_exec_max);
  tcase_add_test(tc, test_exec_bad_log);
  return tc;
}

ER_TEST_MAIN("watch_exec", tc_exec)
