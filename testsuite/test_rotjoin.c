/* Tests reading `eventring record`'s directory: the rotated files of one process are one process for stats, dump, trace, latency, ctf and diff (spans crossing files matched, counts exact); a file missing in the middle (or at the start, as --keep leaves it) is a loss that cuts the spans open over it; a copied file is read once, overlapping snapshots each event once; a reused pid is another process. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "tooltest.h"

/* rot_spans COUNT THREADS: per thread (each its own domain) one
 * rot.outer span around COUNT rot.inner spans. */
#define COUNT 20000
#define THREADS 2
#define OUTER THREADS
#define INNER (COUNT * THREADS)

/* In a test: skips it without the tool, the program or tracing. */
#define NEED()                                                           \
  do {                                                                   \
    ER_NEED_TOOL();                                                      \
    if (!er_prog_path("rot_spans")) ER_SKIP("rot_spans is not built");   \
    if (er_tracing_off()) ER_SKIP("built without tracing");              \
  } while (0)

/* Records `rot_spans COUNT NTHREADS` into `out` (made by record),
 * rotated every 2M: the program's 60000 events a thread make several
 * files, and a 2^22-word ring keeps every event however late the
 * recorder reads.  `wrap` (NULL: none) runs record under another
 * command.  Returns how many files. */
static size_t record(const char *dir, const char *out,
                     const char *const *wrap, int nthreads) {
  const char *args[32];
  int n = 0;
  const char *prog = er_tool_path();
  if (wrap) {
    prog = wrap[0];
    for (wrap++; *wrap; wrap++) args[n++] = *wrap;
    args[n++] = er_tool_path();
  }
  char count[16], threads[16];
  snprintf(count, sizeof count, "%d", COUNT);
  snprintf(threads, sizeof threads, "%d", nthreads);
  const char *tail[] = {"record", "-o", out, "--rotate", "2M", "--",
                        er_prog_path("rot_spans"), count, threads, NULL};
  for (int i = 0; tail[i]; i++) args[n++] = tail[i];
  args[n] = NULL;
  struct er_run r = er_run(dir, prog, args, "OCAMLRUNPARAM=e=22", 0);
  ck_assert_msg(er_exit_code(&r, "record") == 0, "record: %s", r.err);
  ck_assert_msg(strstr(r.err, ", 0 lost"), "record lost events: %s", r.err);
  er_run_free(&r);
  size_t files = (size_t)er_count_entries(out, ".events");
  ck_assert_uint_ge(files, 3);
  return files;
}

/* Runs the tool with `args`, which must succeed; returns the run. */
static struct er_run tool(const char *dir, const char *const *args) {
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, args[0]) == 0, "%s: %s", args[0], r.err);
  return r;
}

/* Runs `eventring CMD -o DIR/NAME IN`, which must succeed; the output's
 * path into `path` (PATH_MAX bytes). */
static void tool_out(const char *dir, const char *cmd, const char *name,
                     const char *in, char *path) {
  snprintf(path, PATH_MAX, "%s/%s", dir, name);
  const char *args[] = {cmd, "-o", path, in, NULL};
  struct er_run r = tool(dir, args);
  er_run_free(&r);
}

/* The count column of the line of `name` in stats' user span table. */
static long span_count(const char *out, const char *name) {
  const char *t = strstr(out, "user span ");
  ck_assert_msg(t != NULL, "no user span table: %s", out);
  const char *l = strstr(t, name);
  ck_assert_msg(l != NULL, "no %s in the table: %s", name, t);
  return strtol(l + strlen(name), NULL, 10);
}

/* The "not included" line after the line of `name` in stats' user span
 * table, into cut, unfinished and unmatched (0 when none). */
static void span_left(const char *out, const char *name, long *cut,
                      long *unfinished, long *unmatched) {
  *cut = *unfinished = *unmatched = 0;
  const char *l = strstr(strstr(out, "user span "), name);
  const char *next = strchr(l, '\n');
  /* The rows of the span's domains, then perhaps its line. */
  while (next && !strncmp(next + 1, "  ", 2)) {
    if (!strncmp(next + 1, "  not included: ", 16)) {
      ck_assert_int_eq(sscanf(next + 17, "%ld cut, %ld unfinished, %ld",
                              cut, unfinished, unmatched), 3);
      return;
    }
    next = strchr(next + 1, '\n');
  }
}

/* Every reading subcommand on the directory: one process, every span
 * matched across the files. */
START_TEST(test_one_process) {
  NEED();
  const char *dir = er_tmpdir();
  char out[PATH_MAX];
  snprintf(out, sizeof out, "%s/rec", dir);
  size_t files = record(dir, out, NULL, THREADS);

  const char *stats[] = {"stats", out, NULL};
  struct er_run r = tool(dir, stats);
  ck_assert_msg(!strstr(r.out, "processes"), "several processes: %s", r.out);
  ck_assert_int_eq(span_count(r.out, "rot.outer"), OUTER);
  ck_assert_int_eq(span_count(r.out, "rot.inner"), INNER);
  ck_assert_msg(!strstr(r.out, "not included"), "spans left out: %s", r.out);
  ck_assert_msg(strstr(r.out, "events: 120010 read, 0 lost"), "%s", r.out);
  ck_assert_str_eq(r.err, "");
  er_run_free(&r);

  const char *dump[] = {"dump", out, NULL};
  r = tool(dir, dump);
  struct er_lines l = er_lines_split(r.out);
  const char *last = l.v[l.n - 1];
  ck_assert_msg(!strncmp(last, "SUMMARY", 7), "%s", last);
  ck_assert_msg(!strstr(last, "processes="), "several processes: %s", last);
  ck_assert_msg(!strstr(r.out, "pid="), "pid tags: one process only");
  ck_assert_uint_eq(er_field(last, "user_span"), 2 * (OUTER + INNER));
  ck_assert_uint_eq(er_field(last, "user_int"), INNER);
  ck_assert_uint_eq(er_field(last, "lost_events_calls"), 0);
  /* Each domain's rot.i values in order, every one once: a thread's
   * 1 to COUNT (a thread that ended may leave its slot to the other). */
  uint64_t next[8] = {0}, runs = 0;
  for (size_t i = 0; i < l.n; i++) {
    if (!strstr(l.v[i], "kind=user_int name=rot.i ")) continue;
    uint64_t d = strtoull(l.v[i] + strlen("domain="), NULL, 10);
    ck_assert_uint_lt(d, 8);
    uint64_t v = er_field(l.v[i], "value");
    if (next[d] == COUNT) next[d] = 0;
    ck_assert_uint_eq(v, ++next[d]);
    runs += v == COUNT;
  }
  ck_assert_uint_eq(runs, THREADS);
  er_lines_free(&l);
  er_run_free(&r);

  /* One process in the trace: its name once, each span's begin and end
   * on one track. */
  char json[PATH_MAX];
  tool_out(dir, "trace", "t.json", out, json);
  char *t = er_slurp(json, NULL);
  ck_assert_int_eq(er_count_text(t, "\"process_name\""), 1);
  ck_assert_int_eq(er_count_text(t, "\"name\":\"rot.outer\""), 2 * OUTER);
  ck_assert_int_eq(er_count_text(t, "\"ph\":\"X\""), 0);
  free(t);

  const char *lat[] = {"latency", "--span", "rot.outer", out, NULL};
  r = tool(dir, lat);
  ck_assert_msg(strstr(r.out, "span rot.outer: 2 (user span"), "%s", r.out);
  ck_assert_msg(!strstr(r.out, "processes"), "%s", r.out);
  ck_assert_msg(!strstr(r.out, "not included"), "%s", r.out);
  er_run_free(&r);

  /* ctf: one trace, for the one process; diff: the directory as A. */
  char ctf[PATH_MAX];
  tool_out(dir, "ctf", "ctf", out, ctf);
  ck_assert_int_eq(er_count_entries(ctf, ""), 1);
  const char *diff[] = {"diff", out, out, NULL};
  r = tool(dir, diff);
  ck_assert_msg(strstr(r.out, "span rot.outer"), "%s", r.out);
  er_run_free(&r);
  (void)files;
  er_rmdir(dir);
}
END_TEST

/* Links every file of `from` into `to` but those whose names hold
 * `skip` (NULL: none); returns how many. */
static size_t copy_dir(const char *from, const char *to, const char *skip) {
  ck_assert_int_eq(mkdir(to, 0777), 0);
  struct er_lines l = er_entries(from, ".events");
  size_t n = 0;
  for (size_t i = 0; i < l.n; i++) {
    if (skip && strstr(l.v[i], skip)) continue;
    char dst[PATH_MAX];
    snprintf(dst, sizeof dst, "%s/%s", to, strrchr(l.v[i], '/') + 1);
    ck_assert_int_eq(link(l.v[i], dst), 0);
    n++;
  }
  er_lines_free(&l);
  return n;
}

/* A file removed from the middle: the spans open over it are cut, never
 * matched across, and the summary says files are missing; a copy of a
 * file is read once. */
START_TEST(test_gap_and_copy) {
  NEED();
  const char *dir = er_tmpdir();
  char out[PATH_MAX], gap[PATH_MAX], dup[PATH_MAX];
  snprintf(out, sizeof out, "%s/rec", dir);
  snprintf(gap, sizeof gap, "%s/gap", dir);
  snprintf(dup, sizeof dup, "%s/dup", dir);
  size_t files = record(dir, out, NULL, THREADS);
  /* The second file: the first and third stay.  The thread that wrote
   * first began its rot.outer in the first file and ends it files later
   * (its 60000 events fill several): open over the gap.  The other
   * thread may have begun after it. */
  ck_assert_uint_eq(copy_dir(out, gap, "-000002-"), files - 1);

  const char *stats[] = {"stats", gap, NULL};
  struct er_run r = er_run_tool(dir, stats, 0);
  ck_assert_msg(er_exit_code(&r, "stats") == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "missing between") &&
                    strstr(r.err, "-000001-") && strstr(r.err, "-000003-"),
                "%s", r.err);
  long cut, unfinished, unmatched;
  long outer = span_count(r.out, "rot.outer");
  span_left(r.out, "rot.outer", &cut, &unfinished, &unmatched);
  ck_assert_int_ge(cut, 1);
  ck_assert_int_eq(outer + cut, OUTER);
  ck_assert_int_eq(unfinished, 0);
  ck_assert_int_eq(unmatched, 0);
  long inner = span_count(r.out, "rot.inner");
  ck_assert_int_lt(inner, INNER);
  span_left(r.out, "rot.inner", &cut, &unfinished, &unmatched);
  ck_assert_int_le(cut, THREADS);
  ck_assert_int_eq(unfinished, 0);
  ck_assert_int_eq(unmatched, 0);
  er_run_free(&r);

  /* dump: a loss of unknown size in each domain, at the gap. */
  const char *dump[] = {"dump", gap, NULL};
  r = er_run_tool(dir, dump, 0);
  ck_assert_msg(er_exit_code(&r, "dump") == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "missing between"), "%s", r.err);
  ck_assert_int_ge(er_count_text(r.out, "kind=lost_events value=0\n"),
                   THREADS);
  er_run_free(&r);

  /* The first file gone, as --keep removes the oldest: the spans whose
   * begin it held end cut, not unmatched. */
  char head[PATH_MAX];
  snprintf(head, sizeof head, "%s/head", dir);
  ck_assert_uint_eq(copy_dir(out, head, "-000001-"), files - 1);
  const char *stats1[] = {"stats", head, NULL};
  r = er_run_tool(dir, stats1, 0);
  ck_assert_msg(er_exit_code(&r, "stats") == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "missing before") && strstr(r.err, "-000002-"),
                "%s", r.err);
  outer = span_count(r.out, "rot.outer");
  span_left(r.out, "rot.outer", &cut, &unfinished, &unmatched);
  ck_assert_int_ge(cut, 1);
  ck_assert_int_eq(outer + cut, OUTER);
  ck_assert_int_eq(unfinished, 0);
  ck_assert_int_eq(unmatched, 0);
  span_left(r.out, "rot.inner", &cut, &unfinished, &unmatched);
  ck_assert_int_eq(unmatched, 0);
  er_run_free(&r);

  /* A copy of the third file under another name. */
  ck_assert_uint_eq(copy_dir(out, dup, NULL), files);
  char src[PATH_MAX], cpy[PATH_MAX + 16];
  struct er_lines all = er_entries(out, ".events");
  snprintf(src, sizeof src, "%s", all.v[2]);
  er_lines_free(&all);
  snprintf(cpy, sizeof cpy, "%s/again.events", dup);
  ck_assert_int_eq(link(src, cpy), 0);
  const char *stats2[] = {"stats", dup, NULL};
  r = er_run_tool(dir, stats2, 0);
  ck_assert_msg(er_exit_code(&r, "stats") == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "again.events holds the same events"), "%s",
                r.err);
  ck_assert_int_eq(span_count(r.out, "rot.outer"), OUTER);
  ck_assert_int_eq(span_count(r.out, "rot.inner"), INNER);
  ck_assert_msg(!strstr(r.out, "not included"), "%s", r.out);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

/* Two runs given the same pid (each the first child of record in a pid
 * namespace of its own), recorded into one directory: two processes,
 * each whole. */
START_TEST(test_reused_pid) {
  NEED();
  const char *dir = er_tmpdir();
  const char *unshare = access("/usr/bin/unshare", X_OK) == 0
                            ? "/usr/bin/unshare"
                            : "/bin/unshare";
  const char *wrap[] = {unshare, "--user", "--map-root-user", "--pid",
                        "--fork",  "--mount-proc", NULL};
  const char *probe[] = {"--user", "--map-root-user", "--pid", "--fork",
                         "--mount-proc", "true", NULL};
  struct er_run u = er_run(dir, unshare, probe, NULL, 0);
  int works = u.status != -1 && WIFEXITED(u.status) &&
              WEXITSTATUS(u.status) == 0;
  er_run_free(&u);
  if (!works) ER_SKIP("unshare --user --pid does not work here");
  char a[PATH_MAX], b[PATH_MAX], both[PATH_MAX];
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(b, sizeof b, "%s/b", dir);
  snprintf(both, sizeof both, "%s/both", dir);
  size_t na = record(dir, a, wrap, THREADS),
         nb = record(dir, b, wrap, THREADS);
  /* One directory, the names kept apart as a user would (the runs may
   * have begun in one millisecond). */
  ck_assert_int_eq(mkdir(both, 0777), 0);
  struct er_lines la = er_entries(a, ".events"), lb = er_entries(b, ".events");
  pid_t pid = 0;
  for (int k = 0; k < 2; k++) {
    struct er_lines *l = k ? &lb : &la;
    for (size_t i = 0; i < l->n; i++) {
      char dst[2 * PATH_MAX];
      const char *name = strrchr(l->v[i], '/') + 1;
      snprintf(dst, sizeof dst, "%s/%c%s", both, k ? 'b' : 'a', name);
      ck_assert_int_eq(link(l->v[i], dst), 0);
      /* rot_spans-PID-...: the same pid in both runs. */
      pid_t p = (pid_t)atol(strchr(name, '-') + 1);
      if (!pid) pid = p;
      ck_assert_int_eq(p, pid);
    }
  }
  er_lines_free(&la);
  er_lines_free(&lb);
  const char *stats[] = {"stats", both, NULL};
  struct er_run r = tool(dir, stats);
  ck_assert_msg(strstr(r.out, "== all 2 processes =="), "%s", r.out);
  /* Each whole: its outer spans and inner ones, all matched. */
  ck_assert_int_eq(span_count(r.out, "rot.outer"), 2 * OUTER);
  ck_assert_int_eq(er_count_text(r.out, "== pid "), 2);
  for (const char *p = strstr(r.out, "== pid "); p; p = strstr(p + 1, "== pid ")) {
    ck_assert_int_eq(span_count(p, "rot.outer"), OUTER);
    ck_assert_int_eq(span_count(p, "rot.inner"), INNER);
  }
  ck_assert_msg(!strstr(r.out, "not included"), "%s", r.out);
  ck_assert_str_eq(r.err, "");
  er_run_free(&r);
  const char *dump[] = {"dump", both, NULL};
  r = tool(dir, dump);
  struct er_lines l = er_lines_split(r.out);
  ck_assert_uint_eq(er_field(l.v[l.n - 1], "processes"), 2);
  ck_assert_uint_eq(er_field(l.v[l.n - 1], "user_span"),
                    2 * 2 * (OUTER + INNER));
  er_lines_free(&l);
  er_run_free(&r);
  (void)na, (void)nb;
  er_rmdir(dir);
}
END_TEST

/* watch over a recording of one thread: its rot.outer, open from the
 * first file to the last, triggers `span:rot.outer>1ns` once; with the
 * second file removed it is cut there and never triggers. */
START_TEST(test_watch_gap) {
  NEED();
  const char *dir = er_tmpdir();
  char out[PATH_MAX], gap[PATH_MAX], snaps[2][PATH_MAX];
  snprintf(out, sizeof out, "%s/rec", dir);
  snprintf(gap, sizeof gap, "%s/gap", dir);
  size_t files = record(dir, out, NULL, 1);
  ck_assert_uint_eq(copy_dir(out, gap, "-000002-"), files - 1);
  const char *in[2] = {out, gap};
  for (int k = 0; k < 2; k++) {
    snprintf(snaps[k], sizeof snaps[k], "%s/snaps%d", dir, k);
    ck_assert_int_eq(mkdir(snaps[k], 0777), 0);
    const char *args[] = {"watch", "--when", "span:rot.outer>1ns", "-o",
                          snaps[k], in[k], NULL};
    struct er_run r = tool(dir, args);
    ck_assert_int_eq(er_count_entries(snaps[k], ".events"), (k ? 0 : 1));
    if (k)
      ck_assert_msg(strstr(r.err, "missing between"), "%s", r.err);
    er_run_free(&r);
  }
  er_rmdir(dir);
}
END_TEST

/* Sends `cmd` to snap_writer and reads its answer, which starts with
 * `expect`. */
static void ask(struct er_pipe_proc *w, const char *cmd, const char *expect) {
  char line[PATH_MAX + 32];
  size_t n = strlen(cmd);
  ck_assert_int_eq(write(w->in, cmd, n), (ssize_t)n);
  ck_assert_int_eq(er_read_line(w->out, line, sizeof line, ER_RUN_TIMEOUT), 0);
  ck_assert_msg(!strncmp(line, expect, strlen(expect)), "%s: %s", cmd, line);
}

/* Two snapshots of one process, the second holding the first's events
 * and more (a.events: iterations 1-N; b.events: 1-2N, or its window
 * from a point after N): read together, each event once; the loss is
 * what lies between what the first holds and the second's window. */
START_TEST(test_overlap) {
  ER_NEED_TOOL();
  const char *prog = er_prog_path("snap_writer");
  if (!prog) ER_SKIP("snap_writer is not built");
  if (er_tracing_off()) ER_SKIP("built without tracing");
  const char *dir = er_tmpdir();
  /* 512 words per ring: 20 iterations (of 4 events) fit, 200 do not. */
  static const struct {
    int first, then;
    long lost; /* -1: some */
  } cases[] = {{20, 20, 0}, {20, 200, -1}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char sub[PATH_MAX], envdir[PATH_MAX + 32], cmd[PATH_MAX + 32];
    snprintf(sub, sizeof sub, "%s/%zu", dir, i);
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    snprintf(envdir, sizeof envdir, "OCAML_RUNTIME_EVENTS_DIR=%s", sub);
    char *env[] = {envdir, "OCAMLRUNPARAM=e=9", NULL};
    char *argv[] = {(char *)prog, NULL};
    struct er_pipe_proc w = er_pipe_start(argv, env, NULL);
    char line[PATH_MAX + 16];
    ck_assert_int_eq(er_read_line(w.out, line, sizeof line, ER_RUN_TIMEOUT),
                     0);
    snprintf(cmd, sizeof cmd, "w %d\n", cases[i].first);
    ask(&w, cmd, "ok");
    snprintf(cmd, sizeof cmd, "s %s/a.events\n", sub);
    ask(&w, cmd, "snap 0");
    snprintf(cmd, sizeof cmd, "w %d\n", cases[i].then);
    ask(&w, cmd, "ok");
    snprintf(cmd, sizeof cmd, "s %s/b.events\n", sub);
    ask(&w, cmd, "snap 0");
    ck_assert_int_eq(er_pipe_finish(&w, ER_RUN_TIMEOUT), 0);

    char a[PATH_MAX + 16], b[PATH_MAX + 16];
    snprintf(a, sizeof a, "%s/a.events", sub);
    snprintf(b, sizeof b, "%s/b.events", sub);
    const char *dump[] = {"dump", a, b, NULL};
    struct er_run r = er_run_tool(dir, dump, 0);
    ck_assert_msg(er_exit_code(&r, "dump") == 0, "%s", r.err);
    struct er_lines l = er_lines_split(r.out);
    const char *last = l.v[l.n - 1];
    ck_assert_uint_eq(er_field(last, "processes"), 1);
    /* The snap.seq values: each once, in order, from where the files
     * begin; those missing are the loss. */
    uint64_t prev = 0, n = 0, first = 0;
    for (size_t k = 0; k < l.n; k++) {
      if (!strstr(l.v[k], "name=snap.seq ")) continue;
      uint64_t v = er_field(l.v[k], "value");
      if (n) ck_assert_uint_gt(v, prev);
      else first = v;
      if (n && v != prev + 1) {
        /* The one jump: over what neither file holds. */
        ck_assert_int_eq(cases[i].lost, -1);
        ck_assert_uint_eq(prev + 1, (uint64_t)cases[i].first);
      }
      prev = v;
      n++;
    }
    ck_assert_uint_eq(first, 0);
    ck_assert_uint_eq(prev, (uint64_t)(cases[i].first + cases[i].then - 1));
    /* Four events an iteration; the loss counts those missing exactly. */
    uint64_t missing = 4 * ((uint64_t)(cases[i].first + cases[i].then) - n);
    ck_assert_uint_eq(er_field(last, "lost_events_total"), missing);
    if (cases[i].lost == 0) ck_assert_uint_eq(missing, 0);
    else ck_assert_uint_gt(missing, 0);
    /* The second file repeats the first: said on stderr. */
    if (cases[i].lost == 0)
      ck_assert_msg(strstr(r.err, "read once"), "%s", r.err);
    er_lines_free(&l);
    er_run_free(&r);
  }
  er_rmdir(dir);
}
END_TEST

static TCase *tc_rotjoin(void) {
  TCase *tc = er_tcase("rotjoin");
  tcase_add_test(tc, test_one_process);
  tcase_add_test(tc, test_gap_and_copy);
  tcase_add_test(tc, test_reused_pid);
  tcase_add_test(tc, test_overlap);
  tcase_add_test(tc, test_watch_gap);
  return tc;
}

ER_TEST_MAIN("rotjoin", tc_rotjoin)
