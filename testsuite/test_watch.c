/* Tests eventring watch: one snapshot per anomaly with its window, marked, for pauses, spans, ints, events, SIGUSR1, --pid, --dir and -- CMD; --every/--max; bounded memory; a writer killed mid-window; bad conditions. */
#include <inttypes.h>
#include <regex.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "testlib.h"
#include "tooltest.h"

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


/* The event lines of a dump (not SUMMARY) that contain `what`. */
static struct er_lines grep(const struct er_lines *all, const char *what) {
  struct er_lines l = {0};
  for (size_t i = 0; i < all->n; i++)
    if (strncmp(all->v[i], "SUMMARY", 7) && strstr(all->v[i], what))
      er_lines_push(&l, all->v[i], strlen(all->v[i]));
  return l;
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

/* ------------------------------------------------------------------ */
/* What watch should have written, worked out from the writer's own      */
/* record of its events (watch_writer --record): on a loaded machine the */
/* writer may be stopped anywhere, so how many events a stretch of its   */
/* life holds, and whether a normal pause grew past a threshold, are     */
/* the machine's doing; the test asserts what follows from the events'   */
/* timestamps.                                                          */

/* The word after " key=" in a line of `eventring dump` (its kind, name
 * or value), or "" when there is none. */
static void field_str(const char *line, const char *key, char *out,
                      size_t size) {
  char k[32];
  snprintf(k, sizeof k, " %s=", key);
  const char *p = strstr(line, k);
  size_t n = 0;
  if (p)
    for (p += strlen(k); p[n] && p[n] != ' ' && n + 1 < size; n++)
      out[n] = p[n];
  out[n] = 0;
}

/* A condition as the test models it (the writer runs one domain, one
 * thread, so its events come in the order of their timestamps). */
enum model_kind { M_PAUSE, M_PHASE, M_SPAN, M_INT, M_EVENT };
struct model_cond {
  enum model_kind kind;
  const char *name; /* phase, span, int or event */
  uint64_t limit;   /* ns, or the int's value */
};

/* A trigger: when, where the anomaly began, and the record's line that
 * fired it. */
struct trig {
  uint64_t at, start;
  const char *line;
};

/* The triggers of `c` among the domain-0 events of `rec`, in order; as
 * many as fit in `max`. */
static size_t model_triggers(const struct er_lines *rec,
                             const struct model_cond *c, struct trig *t,
                             size_t max) {
  size_t n = 0;
  int depth = 0;
  uint64_t outer = 0, begun = 0;
  for (size_t i = 0; i < rec->n && n < max; i++) {
    const char *l = rec->v[i];
    if (strncmp(l, "domain=0 ts=", 12)) continue;
    char kind[32], name[64], value[32];
    uint64_t ts = er_field(l, "ts");
    field_str(l, "kind", kind, sizeof kind);
    field_str(l, "name", name, sizeof name);
    field_str(l, "value", value, sizeof value);
    int is_name = c->name && !strcmp(name, c->name);
    uint64_t from = 0;
    int fired = 0;
    if (!strcmp(kind, "runtime_begin")) {
      if (depth++ == 0) outer = ts;
      if (is_name) begun = ts;
    } else if (!strcmp(kind, "runtime_end")) {
      if (depth > 0 && --depth == 0 && c->kind == M_PAUSE &&
          ts - outer > c->limit)
        fired = 1, from = outer;
      if (c->kind == M_PHASE && is_name && ts - begun > c->limit)
        fired = 1, from = begun;
    } else if (!strcmp(kind, "user_span") && is_name) {
      if (!strcmp(value, "begin")) begun = ts;
      else if (c->kind == M_SPAN && ts - begun > c->limit)
        fired = 1, from = begun;
      if (c->kind == M_EVENT && strcmp(value, "end"))
        fired = 1, from = ts;
    } else if (!strncmp(kind, "user_", 5) && is_name) {
      if (c->kind == M_EVENT) fired = 1, from = ts;
      if (c->kind == M_INT && !strcmp(kind, "user_int") &&
          strtoll(value, NULL, 10) > (long long)c->limit)
        fired = 1, from = ts;
    }
    if (fired) t[n++] = (struct trig){ts, from, l};
  }
  return n;
}

#define MAX_WINDOWS 8
#define MARKS 64
/* A window as watch(1) defines it. */
struct mwin {
  uint64_t start, end, limit;
  size_t nmarks;
  const struct trig *marks[MARKS];
};
struct model {
  struct mwin w[MAX_WINDOWS];
  size_t n;
  uint64_t ignored;
};

/* The windows that triggers `t` open under --before, --after, --every and
 * --max: a trigger within a window extends it (to ten --after past its
 * first) and is marked in it; one past it opens the next unless it comes
 * less than --every after the previous window's first trigger or --max
 * windows were opened, and is then ignored. */
static struct model model_windows(const struct trig *t, size_t n,
                                  uint64_t before, uint64_t after,
                                  uint64_t every, size_t max) {
  struct model m;
  memset(&m, 0, sizeof m);
  for (size_t i = 0; i < n; i++) {
    struct mwin *w = m.n ? &m.w[m.n - 1] : NULL;
    if (w && t[i].at <= w->end) {
      uint64_t end = t[i].at + after;
      if (end > w->limit) end = w->limit;
      if (end > w->end) w->end = end;
      ck_assert_uint_lt(w->nmarks, MARKS);
      w->marks[w->nmarks++] = &t[i];
      continue;
    }
    if (m.n == max || (w && t[i].at < w->marks[0]->at + every)) {
      m.ignored++;
      continue;
    }
    ck_assert_uint_lt(m.n, MAX_WINDOWS);
    w = &m.w[m.n++];
    uint64_t from = t[i].at - before;
    w->start = t[i].start < from ? t[i].start : from;
    w->end = t[i].at + after;
    w->limit = t[i].at + 10 * after;
    w->nmarks = 1;
    w->marks[0] = &t[i];
  }
  return m;
}

/* Fails unless the dump `snap` of a snapshot is window `w` of the record
 * `rec`: the record's domain-0 events from the window's start to its end,
 * in order, none lost, with a mark for each of the window's triggers
 * right after the event that fired it (SIGUSR1: none), naming condition
 * `when`. */
static void check_window(const struct er_lines *snap,
                         const struct er_lines *rec, const struct mwin *w,
                         const char *when) {
  struct er_lines want = {0}, got = {0};
  for (size_t i = 0; i < rec->n; i++) {
    if (strncmp(rec->v[i], "domain=0 ts=", 12)) continue;
    uint64_t ts = er_field(rec->v[i], "ts");
    if (ts >= w->start && ts <= w->end)
      er_lines_push(&want, rec->v[i], strlen(rec->v[i]));
  }
  size_t k = 0;
  char payload[160];
  snprintf(payload, sizeof payload, "value=\"%s%s", when,
           strcmp(when, "SIGUSR1") ? ": " : "\"");
  for (size_t i = 0; i < snap->n; i++) {
    const char *l = snap->v[i];
    if (!strncmp(l, "SUMMARY", 7)) {
      ck_assert_msg(er_field(l, "lost_events_total") == 0, "%s", l);
      continue;
    }
    if (!strstr(l, " name=eventring.trigger ")) {
      er_lines_push(&got, l, strlen(l));
      continue;
    }
    ck_assert_msg(k < w->nmarks, "a mark no trigger explains: %s", l);
    ck_assert_msg(strstr(l, payload), "%s", l);
    ck_assert_uint_eq(er_field(l, "ts"), w->marks[k]->at);
    if (w->marks[k]->line)
      ck_assert_msg(i > 0 && !strcmp(snap->v[i - 1], w->marks[k]->line),
                    "the mark %s follows %s, not %s", l,
                    i > 0 ? snap->v[i - 1] : "nothing", w->marks[k]->line);
    k++;
  }
  ck_assert_msg(k == w->nmarks, "%zu marks, want %zu", k, w->nmarks);
  er_lines_compare("the window's events", &got, &want, 0);
  er_lines_free(&want);
  er_lines_free(&got);
}

/* The lines of `eventring dump` of the record the writer left in `dir`,
 * which must hold everything it wrote. */
static struct er_lines read_record(const char *dir, const char *path) {
  struct er_lines rec = er_dump_raw(dir, path);
  ck_assert_uint_ge(rec.n, 1);
  ck_assert_msg(er_field(rec.v[rec.n - 1], "lost_events_total") == 0,
                "the record is not whole: %s", rec.v[rec.n - 1]);
  return rec;
}

/* The message with which watch ends when it ignored triggers, or "". */
static void ignored_line(uint64_t ignored, size_t written, char *out,
                         size_t size) {
  if (!ignored) {
    snprintf(out, size, "%s", "");
    return;
  }
  snprintf(out, size, "eventring: watch: %" PRIu64 " trigger%s ignored "
           "(--every and --max: %zu snapshot%s written)\n", ignored,
           ignored > 1 ? "s" : "", written, written == 1 ? "" : "s");
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
  struct model_cond model;
};

#define MS20 (20 * MS)
static const struct anomaly anomalies[] = {
    {"pause", "pause>20ms", "pause", "kind=runtime_end name=major_slice",
     {M_PAUSE, NULL, MS20}},
    {"span", "span:app.request>20ms", "span",
     "kind=user_span name=app.request value=end", {M_SPAN, "app.request", MS20}},
    {"event", "event:app.slow", "event", "kind=user_unit name=app.slow",
     {M_EVENT, "app.slow", 0}},
    {"int", "int:app.queue>1000", "int", "name=app.queue value=5000",
     {M_INT, "app.queue", 1000}},
    {"pause", "phase:major_slice>20ms", "phase",
     "kind=runtime_end name=major_slice", {M_PHASE, "major_slice", MS20}},
};

START_TEST(test_one_anomaly) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const struct anomaly *a = &anomalies[_i];
  char dir[64], recdir[64], record[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(recdir, sizeof recdir, "%s", er_tmpdir());
  snprintf(record, sizeof record, "%s/record.events", recdir);
  const char *args[] = {"watch",    "--when",    a->when,  "--before",
                        "500ms",    "--out",     dir,      "--",
                        writer(),   "--lead",    "800",    "--inject",
                        a->inject,  "--tail",    "400",    "--record",
                        record,     NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  /* The program's standard output is its own, untouched. */
  ck_assert_str_eq(r.out, "injected\n");

  /* What the writer did: the injected anomaly fires the condition (and a
   * normal pause or span that a loaded machine stretched past 20 ms may
   * too); with the default --every (10 s, longer than the run), the
   * first trigger's window is the one snapshot, and the others past it
   * are ignored. */
  struct er_lines rec = read_record(recdir, record);
  struct trig trigs[64];
  size_t nt = model_triggers(&rec, &a->model, trigs, 64);
  const struct trig *injected = NULL;
  for (size_t i = 0; i < nt && !injected; i++)
    if (strstr(trigs[i].line, a->event)) injected = &trigs[i];
  ck_assert_msg(injected, "%s: the record holds no trigger for the injected "
                "anomaly", a->when);
  if (injected->start != injected->at)
    ck_assert_uint_ge(injected->at - injected->start, 50 * MS);
  struct model m =
      model_windows(trigs, nt, 500 * MS, 200 * MS, 10000 * MS, 100);
  ck_assert_uint_eq(m.n, 1);

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
  /* One line for it on stderr, naming the file and the condition; and
   * the triggers it ignored. */
  char want[PATH_MAX + 64];
  snprintf(want, sizeof want, "eventring: watch: %s: %s", files.v[0], a->when);
  ck_assert_msg(strstr(r.err, want), "%s", r.err);
  ignored_line(m.ignored, 1, want, sizeof want);
  ck_assert_msg(m.ignored ? strstr(r.err, want) != NULL
                          : strstr(r.err, " ignored (") == NULL,
                "want %" PRIu64 " ignored: %s", m.ignored, r.err);

  /* The window, judged by the events' own timestamps: from --before
   * (500 ms) ahead of the trigger, or the anomaly's start when earlier,
   * to --after (200 ms by default) past it, extended by the triggers in
   * it; every event the writer wrote in it is there, and nothing else,
   * with a mark after each trigger.  So the normal pauses are there, and
   * fired nothing unless they lasted more than 20 ms. */
  struct er_lines all = er_dump_raw(dir, files.v[0]);
  check_window(&all, &rec, &m.w[0], a->when);
  /* The writer ran 800 ms before the injection and 400 ms after it, in
   * the events' time: when the injected anomaly is the window's first
   * trigger, the record holds events on both sides of the window, so the
   * comparison shows where it was cut. */
  if (m.w[0].marks[0] == injected) {
    uint64_t first, last;
    span_of(&rec, &first, &last);
    ck_assert_uint_lt(first, m.w[0].start);
    ck_assert_uint_gt(last, m.w[0].end);
  }
  er_lines_free(&all);
  er_lines_free(&files);
  er_lines_free(&rec);
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

  /* A phase only the injected pause has: a normal pause that a loaded
   * machine stretched past 20 ms cannot take the one snapshot. */
  const char *args[] = {"watch", "--when", "phase:major_slice>20ms",
                        "--format", "json", "--before", "300ms", "--after",
                        "50ms", "--out", dir, "--", writer(), "--lead", "400",
                        "--inject", "pause", "--tail", "100", NULL};
  r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  struct er_lines json = files_in(dir, "-phase.json");
  ck_assert_uint_eq(json.n, 1);
  /* Nothing else is left: the compact file was the trace's input. */
  ck_assert_int_eq(er_count_entries(dir, ".events"), 0);
  ck_assert_int_eq(er_count_entries(dir, ".part"), 0);
  char *text = er_slurp(json.v[0], NULL);
  ck_assert_msg(strstr(text, "\"name\":\"eventring.trigger\""), "no mark");
  ck_assert_msg(strstr(text, "\"payload\":\"phase:major_slice>20ms: "),
                "no payload");
  ck_assert_msg(strstr(text, "\"name\":\"major_slice\""), "no pause");
  free(text);
  er_lines_free(&json);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* --pid: SIGUSR1 triggers by hand; a writer killed mid-window still     */
/* yields its snapshot, complete up to its last event.                  */

/* watch_writer --wait `argv[1..]`, traced into `dir`, once it is
 * ready. */
static struct er_pipe_proc start_writer_argv(const char *dir, char **argv) {
  static char envdir[PATH_MAX];
  snprintf(envdir, sizeof envdir, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  char *env[] = {"OCAML_RUNTIME_EVENTS_START=1", envdir, NULL};
  struct er_pipe_proc p = er_pipe_start(argv, env, NULL);
  char line[64];
  ck_assert_int_eq(er_read_line(p.out, line, sizeof line, 10), 0);
  ck_assert_str_eq(line, "ready");
  return p;
}

/* A writer that injects `inject` 300 ms after "go" and runs on until
 * its stdin ends, then writes its record to `record`. */
static struct er_pipe_proc start_writer(const char *dir, const char *inject,
                                        const char *record) {
  char *argv[] = {(char *)writer(), "--wait", "--lead",         "300",
                  "--inject",       (char *)inject, "--tail", "-1",
                  "--record",       (char *)record, NULL};
  return start_writer_argv(dir, argv);
}

START_TEST(test_sigusr1) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64], recdir[64], record[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(recdir, sizeof recdir, "%s", er_tmpdir());
  snprintf(record, sizeof record, "%s/record.events", recdir);
  struct er_pipe_proc w = start_writer(dir, "none", record);
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
  int st = er_pipe_finish(&w, ER_RUN_TIMEOUT);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer: %d", st);
  struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  struct er_lines files = files_in(dir, "-signal.events");
  ck_assert_uint_eq(files.n, 1);
  ck_assert_int_eq(er_count_entries(dir, "-signal.events"), 1);
  /* The window is the watcher's moment (the mark's time): every event the
   * writer wrote from --before ahead of it to --after past it. */
  struct er_lines all = er_dump_raw(dir, files.v[0]);
  struct er_lines marks = grep(&all, "value=\"SIGUSR1\"");
  ck_assert_uint_eq(marks.n, 1);
  struct trig by_hand = {er_field(marks.v[0], "ts"), 0, NULL};
  struct mwin win = {by_hand.at - 200 * MS, by_hand.at + 50 * MS, 0, 1,
                     {&by_hand}};
  struct er_lines rec = read_record(recdir, record);
  check_window(&all, &rec, &win, "SIGUSR1");
  er_lines_free(&rec);
  er_lines_free(&marks);
  er_lines_free(&all);
  er_lines_free(&files);
  er_run_free(&r);
}
END_TEST

START_TEST(test_killed_mid_window) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64], recdir[64], record[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(recdir, sizeof recdir, "%s", er_tmpdir());
  snprintf(record, sizeof record, "%s/never.events", recdir);
  struct er_pipe_proc w = start_writer(dir, "pause", record);
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
  /* Killed once the watcher has read the injected pause and waits for
   * more: inside the window it opened. */
  er_wait_idle(tool);
  ck_assert_int_eq(kill(w.pid, SIGKILL), 0);
  er_pipe_finish(&w, 10);
  struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  struct er_lines files = files_in(dir, "-pause.events");
  ck_assert_uint_eq(files.n, 1);
  /* Complete up to the last event: the dead writer's file (left behind
   * by SIGKILL) is its record, and the snapshot holds all of it from the
   * window's start -- the injected pause and every pause a loaded machine
   * stretched past 20 ms marked, since the window never ended. */
  struct er_lines left = read_record(dir, ring);
  static const struct model_cond pause = {M_PAUSE, NULL, 20 * MS};
  struct trig trigs[64];
  size_t nt = model_triggers(&left, &pause, trigs, 64);
  struct model m = model_windows(trigs, nt, 2000 * MS, 60000 * MS,
                                 10000 * MS, 100);
  ck_assert_uint_eq(m.n, 1);
  int injected = 0;
  for (size_t i = 0; i < m.w[0].nmarks; i++)
    injected += strstr(m.w[0].marks[i]->line,
                       "kind=runtime_end name=major_slice") != NULL;
  ck_assert_int_eq(injected, 1);
  struct er_lines all = er_dump_raw(dir, files.v[0]);
  check_window(&all, &left, &m.w[0], "pause>20ms");
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
  /* Three processes whose lives overlap, then, once they are gone, one
   * that lives about 100 ms, less than the period of the scans: it is
   * seen because the watcher is told of new files (inotify).  The
   * anomaly is the program's own event, not a pause, so that a normal
   * pause stretched by a loaded machine cannot add a snapshot: what is
   * tested here is following processes that come and go.  (They run at
   * once rather than one after another so that on a loaded machine the
   * test waits for one slow start, not three.) */
  const char *inject[] = {"event", "none", "event", "event"};
  const char *lead[] = {"500", "500", "500", "100"};
  const char *tail[] = {"400", "400", "400", "0"};
  pid_t pids[4];
  char o[4][PATH_MAX], e[4][PATH_MAX];
  for (int i = 0; i < 4; i++) {
    const char *wargs[] = {"--lead", lead[i], "--inject", inject[i], "--tail",
                           tail[i], NULL};
    pids[i] = er_start(dir, writer(), wargs, ER_FD_NULL, envdir, 0, o[i],
                       e[i]);
    if (i < 2) continue;
    for (int k = i == 2 ? 0 : 3; k <= i; k++) {
      struct er_run wr = er_finish(pids[k], o[k], e[k], ER_RUN_TIMEOUT);
      ck_assert_msg(er_exit_code(&wr, "watch_writer") == 0, "writer %d: %s",
                    k, wr.err);
      er_run_free(&wr);
    }
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

/* _i = 0: the watcher reads as the writer writes (-- CMD).  _i = 1: it
 * falls behind: stopped (SIGSTOP) from before the storm until the writer
 * has ended, it then reads every trigger in one go, and must make of
 * them the same windows. */
START_TEST(test_storm) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  char dir[64], recdir[64], record[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(recdir, sizeof recdir, "%s", er_tmpdir());
  snprintf(record, sizeof record, "%s/record.events", recdir);
  /* 130 app.slow events 20 ms apart or more: each window is extended by
   * the triggers in it (up to 10 x --after), the next one waits for
   * --every, and the triggers after the third are ignored. */
  struct er_run r;
  if (_i == 0) {
    const char *args[] = {"watch", "--when", "event:app.slow", "--before",
                          "100ms", "--after", "50ms", "--every", "800ms",
                          "--max", "3", "--out", dir, "--", writer(),
                          "--storm", "130", "--record", record, NULL};
    r = er_run_tool(dir, args, 0);
  } else {
    char *wargv[] = {(char *)writer(), "--wait", "--storm", "130", "--record",
                     record, NULL};
    struct er_pipe_proc w = start_writer_argv(dir, wargv);
    char pid[16], outp[PATH_MAX], errp[PATH_MAX];
    snprintf(pid, sizeof pid, "%ld", (long)w.pid);
    const char *args[] = {"watch", "--when", "event:app.slow", "--before",
                          "100ms", "--after", "50ms", "--every", "800ms",
                          "--max", "3", "--out", dir, "--pid", pid, NULL};
    pid_t tool = er_start_tool(dir, args, 0, outp, errp);
    ck_assert_msg(wait_text(errp, "watching", 1), "the watcher did not start");
    ck_assert_int_eq(kill(tool, SIGSTOP), 0);
    ck_assert_int_eq(write(w.in, "go\n", 3), 3);
    int st = er_pipe_finish(&w, ER_RUN_TIMEOUT);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer: %d", st);
    ck_assert_int_eq(kill(tool, SIGCONT), 0);
    r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
  }
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);

  /* What the watcher should have made of the triggers the writer wrote.
   * They span 129 x 20 ms or more, past 2 x --every: three windows,
   * however the writer was scheduled; which triggers each holds, and how
   * many were ignored, follows from their timestamps. */
  struct er_lines rec = read_record(recdir, record);
  static const struct model_cond slow = {M_EVENT, "app.slow", 0};
  struct trig trigs[200];
  size_t nt = model_triggers(&rec, &slow, trigs, 200);
  ck_assert_uint_eq(nt, 130);
  struct model m = model_windows(trigs, nt, 100 * MS, 50 * MS, 800 * MS, 3);
  ck_assert_uint_eq(m.n, 3);

  struct er_lines files = files_in(dir, ".events");
  ck_assert_msg(files.n == 3, "%zu snapshots: %s", files.n, r.err);
  char want[256];
  ignored_line(m.ignored, 3, want, sizeof want);
  ck_assert_msg(m.ignored ? strstr(r.err, want) != NULL
                          : strstr(r.err, " ignored (") == NULL,
                "want %" PRIu64 " ignored: %s", m.ignored, r.err);
  /* Each file is the window of its first trigger (names taken within one
   * second get -2, -3, which sort before the first: matched by time). */
  int matched[3] = {0};
  for (size_t i = 0; i < files.n; i++) {
    struct er_lines all = er_dump_raw(dir, files.v[i]);
    struct er_lines marks = grep(&all, "name=eventring.trigger");
    ck_assert_uint_ge(marks.n, 1);
    uint64_t ts = er_field(marks.v[0], "ts");
    size_t k = 0;
    while (k < m.n && m.w[k].marks[0]->at != ts) k++;
    ck_assert_msg(k < m.n && !matched[k], "%s: no window opens at %" PRIu64,
                  files.v[i], ts);
    matched[k] = 1;
    check_window(&all, &rec, &m.w[k], "event:app.slow");
    er_lines_free(&marks);
    er_lines_free(&all);
  }
  er_lines_free(&files);
  er_lines_free(&rec);
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
  ck_assert_msg(strstr(r.err, "events lost (domain 0 (watch_writer): "),
                "%s", r.err);
  struct er_lines files = files_in(dir, "-lost.events");
  ck_assert_msg(files.n == 1, "%zu snapshots: %s", files.n, r.err);
  struct er_lines all = er_dump_raw(dir, files.v[0]);
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
      {"--exec", "", "--exec '': no command"},
      {"--exec", "upload 'x", "--exec 'upload 'x': no closing ' quote"},
      {"--exec-timeout", "0s", "--exec-timeout: a timeout above 0"},
      {"--exec-timeout", "soon", "--exec-timeout: duration 'soon'"},
      {"--exec-max", "0", "invalid --exec-max '0'"},
      {"--log-format", "xml", "unknown --log-format 'xml' (text or json)"},
      {"--label", "bad key=1", "--label: 'bad key=1' is not NAME=VALUE"},
      {"--label", "__x=1", "--label: '__x=1' is not NAME=VALUE (NAME: a "
       "letter or _, then letters, digits or _, not starting with __)"},
      {"--label", "host=", "--label: host=: a value is not empty"},
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

/* -o DIR is made when missing (as record's is), not its parents; a file
 * there is refused before the command runs. */
START_TEST(test_output_dir) {
  ER_NEED_TOOL();
  char dir[64], made[PATH_MAX], deep[PATH_MAX], file[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(made, sizeof made, "%s/snaps", dir);
  snprintf(deep, sizeof deep, "%s/no/snaps", dir);
  snprintf(file, sizeof file, "%s/file", dir);
  er_write_text(file, "x\n", 1);
  /* `true` is run once -o is accepted, and writes no ring file. */
  static const struct {
    int which;
    const char *says;
  } rows[] = {
      {0, "true made no ring file"},
      {0, "true made no ring file"}, /* existing now: used as it is */
      {1, "/no/snaps: No such file or directory"},
      {2, "/file: not a directory"},
  };
  const char *out[] = {made, deep, file};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *args[] = {"watch", "--when", "lost", "-o", out[rows[i].which],
                          "--", "true", NULL};
    struct er_run r = er_run_tool(dir, args, ER_SPAWN_PATH);
    ck_assert_msg(er_exit_code(&r, "eventring watch") == 1, "row %zu: %s", i,
                  r.err);
    er_assert_one_error(&r, rows[i].says);
    er_run_free(&r);
  }
  struct stat st;
  ck_assert_int_eq(stat(made, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
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
  tcase_add_loop_test(tc, test_storm, 0, 2);
  tcase_add_test(tc, test_memory_bound);
  tcase_add_test(tc, test_lost);
  tcase_add_test(tc, test_bad_usage);
  tcase_add_test(tc, test_output_dir);
  return tc;
}

ER_TEST_MAIN("watch", tc_anomalies, tc_sources, tc_bounds)
