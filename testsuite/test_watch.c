/* Tests eventring watch: one snapshot per anomaly with its window, marked, for pauses, spans, ints, events, SIGUSR1, --pid, --dir and -- CMD; --every/--max; bounded memory; a writer killed mid-window; bad conditions. */
#include <inttypes.h>
#include <regex.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "testlib.h"

#define MS 1000000ULL

/* ------------------------------------------------------------------ */
/* Reading snapshots back through `eventring dump`.                     */

/* The snapshot files in `dir` ending in `suffix`, sorted by name. */
static struct er_lines files_in(const char *dir, const char *suffix) {
  struct er_lines l = {0};
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  size_t sn = strlen(suffix);
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > sn && !strcmp(e->d_name + n - sn, suffix) &&
        strncmp(e->d_name, "err.", 4) && strncmp(e->d_name, "out.", 4)) {
      char p[PATH_MAX];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      er_lines_push(&l, p, strlen(p));
    }
  }
  closedir(d);
  for (size_t i = 1; i < l.n; i++)
    for (size_t j = i; j > 0 && strcmp(l.v[j - 1], l.v[j]) > 0; j--) {
      char *t = l.v[j];
      l.v[j] = l.v[j - 1];
      l.v[j - 1] = t;
    }
  return l;
}

/* The lines of `eventring dump FILE` (which must succeed). */
static struct er_lines dump(const char *dir, const char *file) {
  const char *args[] = {"dump", file, NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring dump") == 0, "dump %s: %s", file,
                r.err);
  struct er_lines l = er_lines_split(r.out);
  er_run_free(&r);
  return l;
}

/* The event lines of a dump (not SUMMARY) that contain `what`. */
static struct er_lines grep(const struct er_lines *all, const char *what) {
  struct er_lines l = {0};
  for (size_t i = 0; i < all->n; i++)
    if (strncmp(all->v[i], "SUMMARY", 7) && strstr(all->v[i], what))
      er_lines_push(&l, all->v[i], strlen(all->v[i]));
  return l;
}

/* How many event lines of a dump contain `what`. */
static size_t count(const struct er_lines *all, const char *what) {
  struct er_lines l = grep(all, what);
  size_t n = l.n;
  er_lines_free(&l);
  return n;
}

/* The timestamps of the first and last events of domain 0. */
static void span_of(const struct er_lines *all, uint64_t *first,
                    uint64_t *last) {
  *first = UINT64_MAX;
  *last = 0;
  for (size_t i = 0; i < all->n; i++) {
    if (strncmp(all->v[i], "domain=0 ts=", 12)) continue;
    uint64_t ts = er_field(all->v[i], "ts");
    if (ts < *first) *first = ts;
    if (ts > *last) *last = ts;
  }
}

/* Waits (at most 20 s) until the file at `path` contains `text` `n`
 * times. */
static int wait_text(const char *path, const char *text, int n) {
  double give_up = er_now() + 20;
  for (;;) {
    char *s = er_slurp(path, NULL);
    int k = 0;
    for (const char *p = s; (p = strstr(p, text)) != NULL; p++) k++;
    free(s);
    if (k >= n) return 1;
    if (er_now() > give_up) return 0;
    er_sleep_ms(20);
  }
}

static const char *writer(void) {
  const char *p = er_prog_path("watch_writer");
  ck_assert_ptr_nonnull(p);
  static char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", p);
  return buf;
}

/* ------------------------------------------------------------------ */
/* One anomaly, -- CMD: exactly one snapshot, with the anomaly, the      */
/* window around it and the mark.                                       */

struct anomaly {
  const char *inject; /* watch_writer --inject */
  const char *when;   /* the condition */
  const char *reason; /* in the file name */
  const char *event;  /* in the dump line the mark must follow */
};

static const struct anomaly anomalies[] = {
    {"pause", "pause>20ms", "pause", "kind=runtime_end name=major_slice"},
    {"span", "span:app.request>20ms", "span",
     "kind=user_span name=app.request value=end"},
    {"event", "event:app.slow", "event", "kind=user_unit name=app.slow"},
    {"int", "int:app.queue>1000", "int", "name=app.queue value=5000"},
    {"pause", "phase:major_slice>20ms", "phase",
     "kind=runtime_end name=major_slice"},
};

START_TEST(test_one_anomaly) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const struct anomaly *a = &anomalies[_i];
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *args[] = {"watch",    "--when",    a->when,  "--before",
                        "500ms",    "--out",     dir,      "--",
                        writer(),   "--lead",    "800",    "--inject",
                        a->inject,  "--tail",    "400",    NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  /* The program's standard output is its own, untouched. */
  ck_assert_str_eq(r.out, "injected\n");
  struct er_lines files = files_in(dir, ".events");
  ck_assert_msg(files.n == 1, "%s: %zu snapshots (want 1): %s", a->when,
                files.n, r.err);
  /* TIME-PROGRAM-PID-REASON.events */
  char pattern[128];
  snprintf(pattern, sizeof pattern,
           "/[0-9]{8}T[0-9]{6}Z-watch_writer-[0-9]+-%s\\.events$", a->reason);
  regex_t re;
  ck_assert_int_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
  ck_assert_msg(regexec(&re, files.v[0], 0, NULL, 0) == 0, "%s", files.v[0]);
  regfree(&re);
  /* One line for it on stderr, naming the file and the condition. */
  char want[PATH_MAX + 64];
  snprintf(want, sizeof want, "eventring: watch: %s: %s", files.v[0], a->when);
  ck_assert_msg(strstr(r.err, want), "%s", r.err);

  struct er_lines all = dump(dir, files.v[0]);
  struct er_lines marks = grep(&all, "name=eventring.trigger");
  ck_assert_uint_eq(marks.n, 1);
  char payload[160];
  snprintf(payload, sizeof payload, "value=\"%s", a->when);
  ck_assert_msg(strstr(marks.v[0], payload), "%s", marks.v[0]);
  /* The mark follows the event that fired it, at its time. */
  size_t at = 0;
  while (at < all.n && strcmp(all.v[at], marks.v[0])) at++;
  ck_assert(at > 0 && at < all.n);
  ck_assert_msg(strstr(all.v[at - 1], a->event), "%s", all.v[at - 1]);
  uint64_t trig = er_field(marks.v[0], "ts");
  ck_assert_uint_eq(er_field(all.v[at - 1], "ts"), trig);
  if (!strcmp(a->inject, "pause") || !strcmp(a->inject, "span")) {
    /* The whole anomaly is in: its begin 50 ms or more before. */
    const char *begin = !strcmp(a->inject, "pause")
                            ? "kind=runtime_begin name=major_slice"
                            : "kind=user_span name=app.request value=begin";
    struct er_lines b = grep(&all, begin);
    ck_assert_uint_ge(b.n, 1);
    uint64_t bts = er_field(b.v[b.n - 1], "ts");
    ck_assert_uint_ge(trig - bts, 50 * MS);
    er_lines_free(&b);
  }
  /* The window: from --before (500 ms) ahead of the trigger to --after
   * (200 ms by default) past it, judged by the events' own timestamps;
   * the writer has events about every millisecond, so the first and
   * last are near the window's edges (100 ms: a loaded machine). */
  uint64_t first, last;
  span_of(&all, &first, &last);
  ck_assert_uint_ge(first, trig - 500 * MS);
  ck_assert_msg(first <= trig - 400 * MS, "first event %" PRIu64
                " ms before the trigger", (uint64_t)((trig - first) / MS));
  ck_assert_uint_le(last, trig + 200 * MS);
  ck_assert_uint_ge(last, trig + 100 * MS);
  /* The normal pauses are there, and fired nothing. */
  struct er_lines minors = grep(&all, "kind=runtime_end name=minor ");
  ck_assert_uint_ge(minors.n, 50);
  er_lines_free(&minors);
  er_lines_free(&marks);
  er_lines_free(&all);
  er_lines_free(&files);
  er_run_free(&r);
}
END_TEST

/* -- CMD: the command's exit status is the tool's; --format json writes
 * the trace (through eventring trace) with the mark as an instant. */
START_TEST(test_command_status_and_trace) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *bad[] = {"watch", "--when", "pause>20ms", "--out", dir, "--",
                       writer(), "--lead", "10", "--inject", "nonsense", NULL};
  struct er_run r = er_run_tool(dir, bad, 0);
  ck_assert_int_eq(er_exit_code(&r, "eventring watch"), 7);
  er_run_free(&r);

  const char *args[] = {"watch", "--when", "pause>20ms", "--format", "json",
                        "--before", "300ms", "--after", "50ms", "--out", dir,
                        "--", writer(), "--lead", "400", "--inject", "pause",
                        "--tail", "100", NULL};
  r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  struct er_lines json = files_in(dir, "-pause.json");
  ck_assert_uint_eq(json.n, 1);
  /* Nothing else is left: the compact file was the trace's input. */
  ck_assert_int_eq(er_count_entries(dir, ".events"), 0);
  ck_assert_int_eq(er_count_entries(dir, ".part"), 0);
  char *text = er_slurp(json.v[0], NULL);
  ck_assert_msg(strstr(text, "\"name\":\"eventring.trigger\""), "no mark");
  ck_assert_msg(strstr(text, "\"payload\":\"pause>20ms: "), "no payload");
  ck_assert_msg(strstr(text, "\"name\":\"major_slice\""), "no pause");
  free(text);
  er_lines_free(&json);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* --pid: SIGUSR1 triggers by hand; a writer killed mid-window still     */
/* yields its snapshot, complete up to its last event.                  */

static struct er_pipe_proc start_writer(const char *dir, const char *inject) {
  static char envdir[PATH_MAX];
  snprintf(envdir, sizeof envdir, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  char *env[] = {"OCAML_RUNTIME_EVENTS_START=1", envdir, NULL};
  char *argv[] = {(char *)writer(), "--wait",  "--lead", "300", "--inject",
                  (char *)inject,   "--tail",  "-1",     NULL};
  struct er_pipe_proc p = er_pipe_start(argv, env, NULL);
  char line[64];
  ck_assert_int_eq(er_read_line(p.out, line, sizeof line, 10), 0);
  ck_assert_str_eq(line, "ready");
  return p;
}

START_TEST(test_sigusr1) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  struct er_pipe_proc w = start_writer(dir, "none");
  char pid[16], outp[PATH_MAX], errp[PATH_MAX];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  const char *args[] = {"watch", "--when", "pause>1s", "--before", "200ms",
                        "--after", "50ms", "--out", dir, "--pid", pid, NULL};
  pid_t tool = er_start_tool(dir, args, 0, outp, errp);
  ck_assert_msg(wait_text(errp, "watching", 1), "the watcher did not start");
  ck_assert_int_eq(write(w.in, "go\n", 3), 3);
  char line[64];
  ck_assert_int_eq(er_read_line(w.out, line, sizeof line, 10), 0);
  ck_assert_int_eq(kill(tool, SIGUSR1), 0);
  ck_assert_msg(wait_text(errp, "SIGUSR1 in watch_writer", 1),
                "no snapshot after SIGUSR1");
  er_pipe_finish(&w, 10);
  struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  struct er_lines files = files_in(dir, "-signal.events");
  ck_assert_uint_eq(files.n, 1);
  ck_assert_int_eq(er_count_entries(dir, "-signal.events"), 1);
  struct er_lines all = dump(dir, files.v[0]);
  struct er_lines marks = grep(&all, "value=\"SIGUSR1\"");
  ck_assert_uint_eq(marks.n, 1);
  ck_assert_uint_ge(count(&all, "name=minor "), 10);
  er_lines_free(&marks);
  er_lines_free(&all);
  er_lines_free(&files);
  er_run_free(&r);
}
END_TEST

START_TEST(test_killed_mid_window) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  struct er_pipe_proc w = start_writer(dir, "pause");
  char pid[16], outp[PATH_MAX], errp[PATH_MAX], ring[PATH_MAX];
  snprintf(pid, sizeof pid, "%ld", (long)w.pid);
  snprintf(ring, sizeof ring, "%s/%ld.events", dir, (long)w.pid);
  /* A window far longer than the test: only the writer's death ends it. */
  const char *args[] = {"watch", "--when", "pause>20ms", "--after", "60s",
                        "--out", dir, "--pid", pid, NULL};
  pid_t tool = er_start_tool(dir, args, 0, outp, errp);
  ck_assert_msg(wait_text(errp, "watching", 1), "the watcher did not start");
  ck_assert_int_eq(write(w.in, "go\n", 3), 3);
  char line[64];
  ck_assert_int_eq(er_read_line(w.out, line, sizeof line, 10), 0);
  ck_assert_str_eq(line, "injected");
  er_sleep_ms(200);
  ck_assert_int_eq(kill(w.pid, SIGKILL), 0);
  er_pipe_finish(&w, 10);
  struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  struct er_lines files = files_in(dir, "-pause.events");
  ck_assert_uint_eq(files.n, 1);
  struct er_lines all = dump(dir, files.v[0]);
  ck_assert_uint_eq(count(&all, "name=eventring.trigger"), 1);
  ck_assert_uint_ge(count(&all, "kind=runtime_end name=major_slice"), 1);
  /* Complete up to the last event: the dead writer's file (left behind
   * by SIGKILL) ends with the snapshot's last event of domain 0. */
  struct er_lines left = dump(dir, ring);
  ck_assert_uint_ge(left.n, 2);
  const char *last_left = left.v[left.n - 2];
  const char *last_snap = NULL;
  for (size_t i = 0; i < all.n; i++)
    if (!strncmp(all.v[i], "domain=0 ", 9)) last_snap = all.v[i];
  ck_assert_ptr_nonnull(last_snap);
  ck_assert_str_eq(last_snap, last_left);
  er_lines_free(&left);
  er_lines_free(&all);
  er_lines_free(&files);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* --dir: processes come and go; those with an anomaly get one          */
/* snapshot each, the others none.                                      */

START_TEST(test_dir) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64], ev[64], outp[PATH_MAX], errp[PATH_MAX];
  snprintf(ev, sizeof ev, "%s", er_tmpdir());
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *args[] = {"watch", "--when", "event:app.slow", "--before", "300ms",
                        "--after", "100ms", "--out", dir, "--dir", ev, NULL};
  pid_t tool = er_start_tool(dir, args, 0, outp, errp);
  ck_assert_msg(wait_text(errp, "watching", 1), "the watcher did not start");
  setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
  char envdir[PATH_MAX];
  snprintf(envdir, sizeof envdir, "OCAML_RUNTIME_EVENTS_DIR=%s", ev);
  /* The last lives about 150 ms, less than the period of the scans: it
   * is seen because the watcher is told of new files (inotify).  The
   * anomaly is the program's own event, not a pause, so that a normal
   * pause stretched by a loaded machine cannot add a snapshot: what is
   * tested here is following processes that come and go. */
  const char *inject[] = {"event", "none", "event", "event"};
  const char *lead[] = {"500", "500", "500", "100"};
  const char *tail[] = {"400", "400", "400", "0"};
  pid_t pids[4];
  for (int i = 0; i < 4; i++) {
    char o[PATH_MAX], e[PATH_MAX];
    const char *wargs[] = {"--lead", lead[i], "--inject", inject[i], "--tail",
                           tail[i], NULL};
    pids[i] = er_start(dir, writer(), wargs, ER_FD_NULL, envdir, 0, o, e);
    struct er_run wr = er_finish(pids[i], o, e, ER_RUN_TIMEOUT);
    ck_assert_int_eq(er_exit_code(&wr, "watch_writer"), 0);
    er_run_free(&wr);
  }
  ck_assert_msg(wait_text(errp, "event:app.slow: ", 3), "want three snapshots");
  kill(tool, SIGTERM);
  struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
  ck_assert_int_eq(er_exit_code(&r, "eventring watch"), 128 + SIGTERM);
  struct er_lines files = files_in(dir, ".events");
  ck_assert_msg(files.n == 3, "%zu snapshots: %s", files.n, r.err);
  for (int i = 0; i < 4; i++) {
    char name[64];
    snprintf(name, sizeof name, "-watch_writer-%ld-event.events",
             (long)pids[i]);
    int found = 0;
    for (size_t k = 0; k < files.n; k++) found += strstr(files.v[k], name) != 0;
    ck_assert_int_eq(found, i == 1 ? 0 : 1);
  }
  er_lines_free(&files);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* A storm of triggers: --every spaces the snapshots, --max ends them,   */
/* and triggers within a window extend it.                              */

START_TEST(test_storm) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  /* app.slow every 20 ms for 3 s: each window is extended to its
   * limit (10 x --after), the next one waits for --every, and the
   * triggers after the third are ignored. */
  const char *args[] = {"watch", "--when", "event:app.slow", "--before",
                        "100ms", "--after", "50ms", "--every", "800ms",
                        "--max", "3", "--out", dir, "--", writer(),
                        "--storm", "3000", NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  struct er_lines files = files_in(dir, ".events");
  ck_assert_msg(files.n == 3, "%zu snapshots: %s", files.n, r.err);
  ck_assert_msg(strstr(r.err, "triggers ignored"), "%s", r.err);
  uint64_t first[3];
  size_t most = 0;
  for (size_t i = 0; i < files.n; i++) {
    struct er_lines all = dump(dir, files.v[i]);
    struct er_lines marks = grep(&all, "name=eventring.trigger");
    ck_assert_uint_ge(marks.n, 1);
    if (marks.n > most) most = marks.n;
    /* In time order (names taken within one second get -2, -3, which
     * sort before the first). */
    uint64_t ts = er_field(marks.v[0], "ts");
    size_t j = i;
    for (; j > 0 && first[j - 1] > ts; j--) first[j] = first[j - 1];
    first[j] = ts;
    er_lines_free(&marks);
    er_lines_free(&all);
  }
  for (size_t i = 1; i < files.n; i++)
    ck_assert_uint_ge(first[i], first[i - 1] + 800 * MS);
  /* The events 20 ms apart fell in windows of 50 ms and extended them,
   * up to 10 x 50 ms past the first. */
  ck_assert_uint_ge(most, 2);
  ck_assert_uint_le(most, 26);
  er_lines_free(&files);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Memory: a writer at full speed for 3 s; the watcher keeps at most     */
/* --max-memory of events, and its resident size shows it.              */

static long rss_kib(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) kib = atol(line + 6);
  fclose(f);
  return kib;
}

START_TEST(test_memory_bound) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const char *san = getenv("EVENTRING_SANITIZER");
  if (san && *san && strcmp(san, "none"))
    ER_SKIP("a sanitizer's shadow memory and quarantine hide the bound");
  char dir[64], outp[PATH_MAX], errp[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *args[] = {"watch", "--when", "event:never", "--max-memory",
                        "8M", "--out", dir, "--", writer(), "--flood",
                        "3000", NULL};
  pid_t tool = er_start_tool(dir, args, 0, outp, errp);
  long most = 0;
  int st;
  while (waitpid(tool, &st, WNOHANG) == 0) {
    long k = rss_kib(tool);
    if (k > most) most = k;
    er_sleep_ms(20);
  }
  char *err = er_slurp(errp, NULL);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
  free(err);
  /* 8 MiB of events, as much again while a buffer grows, the rings the
   * cursor maps and the program itself: far below the hundreds of MiB
   * that 2 s of this writer's events take. */
  ck_assert_msg(most > 0 && most < 40 * 1024, "watcher RSS %ld KiB", most);
}
END_TEST

/* lost: a writer at full speed overwrites what the watcher has not read
 * yet; the loss fires a snapshot whose mark says how much. */
START_TEST(test_lost) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *args[] = {"watch", "--when", "lost", "--before", "100ms",
                        "--after", "50ms", "--max", "1", "--out", dir, "--",
                        writer(), "--flood", "1000", NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  /* The watcher says what it lost, as every subcommand does. */
  ck_assert_msg(strstr(r.err, "events lost (domain 0: "), "%s", r.err);
  struct er_lines files = files_in(dir, "-lost.events");
  ck_assert_msg(files.n == 1, "%zu snapshots: %s", files.n, r.err);
  struct er_lines all = dump(dir, files.v[0]);
  struct er_lines marks = grep(&all, "value=\"lost: ");
  ck_assert_uint_ge(marks.n, 1);
  ck_assert_msg(strstr(marks.v[0], " events (domain 0)"), "%s", marks.v[0]);
  er_lines_free(&marks);
  er_lines_free(&all);
  er_lines_free(&files);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bad conditions are usage errors that say what is wrong.              */

START_TEST(test_bad_usage) {
  ER_NEED_TOOL();
  static const struct {
    const char *opt, *arg, *says;
  } bad[] = {
      {"--when", "pause>10", "--when 'pause>10': duration '10' needs a unit "
                             "(ns, us, ms, s)"},
      {"--when", "pause>10mins", "unknown unit 'mins'"},
      {"--when", "pause>fast", "duration 'fast' is not a number"},
      {"--when", "phase:major_slcie>5ms", "unknown runtime phase "
                                          "'major_slcie'"},
      {"--when", "span:http.request", "expected span:NAME>DURATION"},
      {"--when", "int:queue>lots", "'lots' is not an integer"},
      {"--when", "event:", "no event name"},
      {"--when", "gc>10ms", "--when 'gc>10ms': unknown condition"},
      {"--before", "2", "--before: duration '2' needs a unit"},
      {"--max", "0", "invalid --max '0'"},
      {"--format", "ctf", "unknown format 'ctf'"},
  };
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *args[] = {"watch", "--when", "lost", bad[i].opt, bad[i].arg,
                          "--", "true", NULL};
    struct er_run r = er_run_tool(dir, args, ER_SPAWN_PATH);
    ck_assert_msg(er_exit_code(&r, "eventring watch") == 2, "%s: %s",
                  bad[i].arg, r.err);
    er_assert_one_error(&r, bad[i].says);
    er_run_free(&r);
  }
  const char *none[] = {"watch", "--", "true", NULL};
  struct er_run r = er_run_tool(dir, none, ER_SPAWN_PATH);
  ck_assert_int_eq(er_exit_code(&r, "eventring watch"), 2);
  er_assert_one_error(&r, "no condition given");
  er_run_free(&r);
  /* Nothing was run, and nothing written. */
  ck_assert_int_eq(er_count_entries(dir, ".events"), 0);
}
END_TEST

static TCase *tc_anomalies(void) {
  TCase *tc = er_tcase("anomalies");
  tcase_add_loop_test(tc, test_one_anomaly, 0,
                      sizeof anomalies / sizeof anomalies[0]);
  tcase_add_test(tc, test_command_status_and_trace);
  return tc;
}

static TCase *tc_sources(void) {
  TCase *tc = er_tcase("sources");
  tcase_add_test(tc, test_sigusr1);
  tcase_add_test(tc, test_killed_mid_window);
  tcase_add_test(tc, test_dir);
  return tc;
}

static TCase *tc_bounds(void) {
  TCase *tc = er_tcase("bounds");
  tcase_add_test(tc, test_storm);
  tcase_add_test(tc, test_memory_bound);
  tcase_add_test(tc, test_lost);
  tcase_add_test(tc, test_bad_usage);
  return tc;
}

ER_TEST_MAIN("watch", tc_anomalies, tc_sources, tc_bounds)
