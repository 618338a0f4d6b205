/* Tests a file size limit (RLIMIT_FSIZE, `ulimit -f`): below the ring file's apparent size, starting fails with EFBIG and leaves no file, no SIGXFSZ reaches the host, whose disposition of it is unchanged, and a program started from the environment runs on untraced; lowered after the start, a snapshot fails with EFBIG and leaves no file, a forked child runs untraced, and the program goes on; the tools (snapshot -o, trace -o, watch) run under it report the limit, leave no partial file and exit non-zero, watch going on. */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "testlib.h"
#include "childfile.h"

/* `ulimit -f 10000`: 10,000 blocks of 1 KiB.  The default ring file
 * (d=128, e=16) is 64 MiB and more; d=1,e=10 is well under it. */
#define LIMIT_BYTES (10000 * 1024)

#define NEED_TRACING()                                                   \
  do {                                                                   \
    if (er_tracing_off()) ER_SKIP("a build without tracing");            \
  } while (0)

/* Lowers the soft limit only, so that the test may raise it back. */
static void lower_fsize_limit(void) {
  struct rlimit rl;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
  ck_assert_msg(rl.rlim_max == RLIM_INFINITY || rl.rlim_max > LIMIT_BYTES,
                "the hard file size limit is already below the test's");
  rl.rlim_cur = LIMIT_BYTES;
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

START_TEST(test_start_over_limit_fails_cleanly) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  struct sigaction before, after;
  ck_assert_int_eq(sigaction(SIGXFSZ, NULL, &before), 0);
  lower_fsize_limit();
  /* Before the fix, SIGXFSZ from ftruncate() killed this process here. */
  int r = eventring_start();
  ck_assert_int_eq(r, -EFBIG);
  ck_assert_ptr_null(eventring_path());
  ck_assert_int_eq(eventring_is_active(), 0);
  ck_assert_int_eq(er_count_entries(dir, ""), 0);
  ck_assert_int_eq(sigaction(SIGXFSZ, NULL, &after), 0);
  ck_assert_ptr_eq((void *)after.sa_handler, (void *)before.sa_handler);
  ck_assert_int_eq(after.sa_flags, before.sa_flags);
  sigset_t pending;
  sigpending(&pending);
  ck_assert_int_eq(sigismember(&pending, SIGXFSZ), 0);

  /* A file that fits under the limit is made as usual. */
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "d=1,e=10", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_ptr_nonnull(eventring_path());
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

/* What `(ulimit -f 10000; OCAML_RUNTIME_EVENTS_START=1 ./prog)` does. */
START_TEST(test_env_start_over_limit_runs_untraced) {
  NEED_TRACING();
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/envstart", progs);
  const char *dir = er_tmpdir();
  FILE *out, *err;
  pid_t pid = er_fork_captured(&out, &err);
  if (pid == 0) {
    struct rlimit rl = {LIMIT_BYTES, LIMIT_BYTES};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(126);
    setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
    execl(prog, prog, (char *)NULL);
    _exit(127);
  }
  int status = er_wait_for(pid, ER_RUN_TIMEOUT);
  char *o = er_read_stream(out), *e = er_read_stream(err);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "envstart: status 0x%x (SIGXFSZ is %d), stderr: %s", status,
                SIGXFSZ, e);
  ck_assert_str_eq(o, "active=0 path=-\n");
  char path[PATH_MAX], want[PATH_MAX + 128];
  er_ring_path_for(path, sizeof path, dir, pid);
  snprintf(want, sizeof want,
           "eventring: cannot start tracing: %s: File too large; running "
           "untraced\n",
           path);
  ck_assert_str_eq(e, want);
  ck_assert_int_eq(er_count_entries(dir, ""), 0);
  free(o);
  free(e);
  er_rmdir(dir);
}
END_TEST

/* The soft limit set to `bytes`; returns the previous one. */
static rlim_t set_soft_limit(rlim_t bytes) {
  struct rlimit rl;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
  rlim_t was = rl.rlim_cur;
  ck_assert_msg(rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= bytes,
                "the hard file size limit is already below the test's");
  rl.rlim_cur = bytes;
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
  return was;
}

/* No SIGXFSZ is pending, and its disposition is still the default. */
static void assert_no_sigxfsz(void) {
  sigset_t pending;
  sigpending(&pending);
  ck_assert_int_eq(sigismember(&pending, SIGXFSZ), 0);
  struct sigaction now;
  ck_assert_int_eq(sigaction(SIGXFSZ, NULL, &now), 0);
  ck_assert_ptr_eq((void *)now.sa_handler, (void *)SIG_DFL);
}

/* A limit lowered after the start, below a snapshot's size (a compact
 * file holds 1 MiB of name slots): eventring_snapshot() fails with EFBIG,
 * leaves no file, and tracing goes on; raised again, it succeeds.  (The
 * limit applies to Check's own message file too, which stays far below
 * it.) */
START_TEST(test_snapshot_after_lowering_limit) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  eventring_begin(EVENTRING_PHASE_MAJOR);
  eventring_end(EVENTRING_PHASE_MAJOR);
  char snap[PATH_MAX];
  snprintf(snap, sizeof snap, "%s/snap.events", dir);
  /* Above what Check writes for this test, below the snapshot. */
  rlim_t was = set_soft_limit(512 * 1024);
  /* Before the fix, SIGXFSZ from write() killed this process here. */
  ck_assert_int_eq(eventring_snapshot(snap), -EFBIG);
  ck_assert_int_eq(access(snap, F_OK), -1);
  assert_no_sigxfsz();
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_end(EVENTRING_PHASE_MINOR);
  set_soft_limit(was);
  ck_assert_int_eq(eventring_snapshot(snap), 0);
  ck_assert_int_eq(access(snap, F_OK), 0);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

/* A limit lowered after the start, below the ring file's size: a forked
 * child cannot make a file of its own, says so and runs untraced; the
 * parent goes on tracing. */
START_TEST(test_fork_after_lowering_limit) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  set_soft_limit(LIMIT_BYTES);
  /* The child says so from the fork handler, on the stderr it gets. */
  struct er_capture cap;
  fflush(stdout);
  er_stderr_begin(&cap);
  pid_t pid = fork();
  if (pid == 0) {
    eventring_begin(EVENTRING_PHASE_MAJOR);
    _exit(eventring_is_active() ? 3 : 0);
  }
  int status = pid > 0 ? er_wait_for(pid, ER_RUN_TIMEOUT) : -1;
  char *e = er_stderr_end(&cap);
  ck_assert_int_gt(pid, 0);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "child: status 0x%x (SIGXFSZ is %d), stderr: %s", status,
                SIGXFSZ, e);
  ck_assert_msg(strstr(e, "File too large") != NULL, "stderr: %s", e);
  free(e);
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, pid);
  ck_assert_int_eq(access(path, F_OK), -1);
  eventring_begin(EVENTRING_PHASE_MAJOR);
  ck_assert_int_eq(eventring_is_active(), 1);
  ck_assert_int_eq(eventring_stop(), 0);
  assert_no_sigxfsz();
  er_rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The tools under `ulimit -f`.                                         */

#define TOOL_LIMIT_TEXT "over the file size limit of 65536 bytes (ulimit -f)"

/* Starts the tool with `args` as `(ulimit -f 64; eventring ARGS...)`
 * does: a limit of 64 KiB set in its process before the exec (bash
 * counts -f in KiB), never in this one, whose own files (Check's
 * messages) it must not cut. */
static pid_t start_tool_limited(const char *dir, const char *const *args,
                                char *outp, char *errp) {
  const char *argv[32] = {"-c", "ulimit -S -f 64 && exec \"$0\" \"$@\"",
                          er_tool_path()};
  size_t n = 3;
  for (; *args && n < 31; args++) argv[n++] = *args;
  argv[n] = NULL;
  return er_start(dir, "bash", argv, ER_FD_NULL, NULL, ER_SPAWN_PATH, outp,
                  errp);
}

static struct er_run run_tool_limited(const char *dir, const char *const *args) {
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t pid = start_tool_limited(dir, args, outp, errp);
  return er_finish(pid, outp, errp, ER_RUN_TIMEOUT);
}

/* Fails unless the tool exited 1 with one line naming `path` and the
 * limit. */
static void assert_limit_error(struct er_run *r, const char *path) {
  ck_assert_msg(r->status != -1 && !WIFSIGNALED(r->status),
                "the tool died of signal %d (SIGXFSZ is %d): %s",
                WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0, SIGXFSZ,
                r->err);
  ck_assert_msg(er_exit_code(r, "eventring") == 1, "stderr: %s", r->err);
  ck_assert_msg(strstr(r->err, path) && strstr(r->err, TOOL_LIMIT_TEXT),
                "stderr: %s", r->err);
}

START_TEST(test_tool_snapshot_under_limit) {
  ER_NEED_TOOL();
  NEED_TRACING();
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  pid_t pid = er_child_file(10);
  char ring[PATH_MAX], out[PATH_MAX], json[PATH_MAX];
  er_ring_path_for(ring, sizeof ring, dir, pid);
  snprintf(out, sizeof out, "%s/snap.events", dir);
  const char *args[] = {"snapshot", "-o", out, ring, NULL};
  struct er_run r = run_tool_limited(dir, args);
  assert_limit_error(&r, out);
  er_assert_one_error(&r, NULL);
  ck_assert_int_eq(access(out, F_OK), -1);
  er_run_free(&r);
  /* As a trace: the compact file in between is over the limit too. */
  snprintf(json, sizeof json, "%s/snap.json", dir);
  const char *jargs[] = {"snapshot", "--format", "json", "-o", json, ring,
                         NULL};
  r = run_tool_limited(dir, jargs);
  ck_assert_msg(er_exit_code(&r, "eventring") == 1, "stderr: %s", r.err);
  ck_assert_msg(strstr(r.err, TOOL_LIMIT_TEXT), "stderr: %s", r.err);
  ck_assert_int_eq(access(json, F_OK), -1);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_tool_trace_under_limit) {
  ER_NEED_TOOL();
  NEED_TRACING();
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  /* Some 100 bytes of JSON an event: well over the limit. */
  pid_t pid = er_child_file(5000);
  char ring[PATH_MAX], out[PATH_MAX];
  er_ring_path_for(ring, sizeof ring, dir, pid);
  snprintf(out, sizeof out, "%s/trace.json", dir);
  const char *args[] = {"trace", "-o", out, ring, NULL};
  struct er_run r = run_tool_limited(dir, args);
  assert_limit_error(&r, out);
  er_run_free(&r);
  /* Neither the trace nor the file it was written to before its rename. */
  ck_assert_int_eq(access(out, F_OK), -1);
  ck_assert_int_eq(er_count_entries(dir, ""), 1);
  /* dump -o writes its file directly: removed too. */
  snprintf(out, sizeof out, "%s/dump.txt", dir);
  const char *dargs[] = {"dump", "-o", out, ring, NULL};
  r = run_tool_limited(dir, dargs);
  assert_limit_error(&r, out);
  ck_assert_int_eq(access(out, F_OK), -1);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

/* watch --dir under the limit: each snapshot fails with one line, leaves
 * no file, and the watcher goes on to the next process. */
START_TEST(test_tool_watch_under_limit) {
  ER_NEED_TOOL();
  NEED_TRACING();
  const char *writer = er_prog_path("watch_writer");
  if (!writer) ER_SKIP("watch_writer is not built");
  char w[PATH_MAX];
  snprintf(w, sizeof w, "%s", writer);
  char dir[64], ev[64], outp[PATH_MAX], errp[PATH_MAX];
  snprintf(ev, sizeof ev, "%s", er_tmpdir());
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *args[] = {"watch", "--when", "event:app.slow", "--before",
                        "300ms", "--after", "50ms", "--every", "1ms",
                        "--out", dir, "--dir", ev, NULL};
  pid_t tool = start_tool_limited(dir, args, outp, errp);
  ck_assert_msg(er_wait_text(errp, "watching", 1, ER_RUN_TIMEOUT),
                "the watcher did not start");
  char envdir[PATH_MAX];
  snprintf(envdir, sizeof envdir, "OCAML_RUNTIME_EVENTS_DIR=%s", ev);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_START", "1", 1), 0);
  for (int i = 0; i < 2; i++) {
    char o[PATH_MAX], e[PATH_MAX];
    const char *wargs[] = {"--lead", "300", "--inject", "event", "--tail",
                           "100", NULL};
    pid_t p = er_start(dir, w, wargs, ER_FD_NULL, envdir, 0, o, e);
    struct er_run wr = er_finish(p, o, e, ER_RUN_TIMEOUT);
    ck_assert_msg(er_exit_code(&wr, "watch_writer") == 0, "writer: %s",
                  wr.err);
    er_run_free(&wr);
    /* The watcher is still there, and says why this one failed. */
    ck_assert_msg(er_wait_text(errp, TOOL_LIMIT_TEXT, i + 1, ER_RUN_TIMEOUT),
                  "no failure reported for writer %d", i);
    ck_assert_int_eq(kill(tool, 0), 0);
  }
  kill(tool, SIGTERM);
  struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
  ck_assert_msg(r.status != -1 && !(WIFSIGNALED(r.status) &&
                                    WTERMSIG(r.status) == SIGXFSZ),
                "status 0x%x: %s", r.status, r.err);
  ck_assert_msg(er_exit_code(&r, "eventring watch") != 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "watch: snapshot of watch_writer"), "%s",
                r.err);
  /* Nothing left behind: the snapshots were refused before a byte. */
  ck_assert_int_eq(er_count_entries(dir, ".events"), 0);
  ck_assert_int_eq(er_count_entries(dir, ".part"), 0);
  er_run_free(&r);
}
END_TEST

/* A command run by a tool that ignores SIGXFSZ gets the disposition the
 * tool was given (the default): an ignored signal would stay ignored
 * across its exec. */
START_TEST(test_tool_command_keeps_sigxfsz) {
  ER_NEED_TOOL();
  NEED_TRACING();
  char dir[64], out[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(out, sizeof out, "%s/dump.txt", dir);
  const char *prog = er_prog_path("envstart");
  if (!prog) ER_SKIP("envstart is not built");
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", prog);
  /* The shell shows what it was given, then becomes a traced program. */
  const char *args[] = {"dump", "-o", out, "--", "bash", "-c",
                        "grep SigIgn /proc/$$/status && exec \"$0\"", p,
                        NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring dump") == 0, "%s", r.err);
  const char *ign = strstr(r.out, "SigIgn:");
  ck_assert_msg(ign != NULL, "the command printed: %s", r.out);
  unsigned long long mask = strtoull(ign + 7, NULL, 16);
  ck_assert_msg(!(mask & (1ULL << (SIGXFSZ - 1))),
                "the command ignores SIGXFSZ (SigIgn %llx)", mask);
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_fsize(void) {
  TCase *tc = er_tcase("fsize");
  tcase_add_test(tc, test_start_over_limit_fails_cleanly);
  tcase_add_test(tc, test_env_start_over_limit_runs_untraced);
  tcase_add_test(tc, test_snapshot_after_lowering_limit);
  tcase_add_test(tc, test_fork_after_lowering_limit);
  tcase_add_test(tc, test_tool_snapshot_under_limit);
  tcase_add_test(tc, test_tool_trace_under_limit);
  tcase_add_test(tc, test_tool_watch_under_limit);
  tcase_add_test(tc, test_tool_command_keeps_sigxfsz);
  return tc;
}

ER_TEST_MAIN("fsize_limit", tc_fsize)
