/* Tests the sources of the `eventring` command as a user runs them: a program spawned with `-- CMD`, a live process by --pid, signals, progress. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "testlib.h"

/* ------------------------------------------------------------------ */
/* Running programs.                                                    */

/* Skips unless the tool and spawn_child are there and tracing is on. */
#define NEED_ALL()                                                         \
  do {                                                                     \
    if (!er_tool_path()) ER_SKIP("EVENTRING_TEST_TOOL is not set");        \
    if (!er_prog_path("spawn_child")) ER_SKIP("no helper programs");       \
    if (er_tracing_off()) ER_SKIP("a build without tracing");              \
  } while (0)

/* Starts the tool with `args` (NULL-terminated, without argv[0]), its
 * output going to files in `dir`, and returns without waiting.  The
 * tool's TMPDIR is `dir`, so that its private directory is made there
 * and can be seen to go away. */
static pid_t start_tool(const char *dir, const char *const *args,
                        char *outp, char *errp) {
  setenv("TMPDIR", dir, 1);
  return er_start_tool(dir, args, ER_SPAWN_PATH, outp, errp);
}

/* Runs the tool to its end (bounded by ER_RUN_TIMEOUT). */
static struct er_run run_tool(const char *dir, const char *const *args) {
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t pid = start_tool(dir, args, outp, errp);
  return er_finish(pid, outp, errp, ER_RUN_TIMEOUT);
}

/* The file `dump -o` writes in `dir`. */
static void listing_path(const char *dir, char *path) {
  snprintf(path, PATH_MAX, "%s/listing.txt", dir);
}

/* Runs `dump -o LISTING -- CMD...` (`cmd` NULL-terminated) to its end:
 * the run's `out` is then the listing, the command's own standard output
 * (which the tests' programs leave empty) having been checked to be
 * empty. */
static struct er_run run_dump(const char *dir, const char *const *cmd) {
  char listing[PATH_MAX];
  listing_path(dir, listing);
  const char *args[16] = {"dump", "--time=raw", "-o", listing, "--"};
  int n = 5;
  for (; *cmd && n < 15; cmd++) args[n++] = *cmd;
  args[n] = NULL;
  struct er_run r = run_tool(dir, args);
  ck_assert_msg(!strcmp(r.out, ""), "the command's standard output got: %.200s",
                r.out);
  free(r.out);
  r.out = access(listing, F_OK) == 0 ? er_slurp(listing, NULL) : strdup("");
  unlink(listing);
  return r;
}

/* No private directory of the tool is left in `dir`. */
static void assert_no_private_dir(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    ck_assert_msg(strncmp(e->d_name, "eventring-", 10) != 0,
                  "%s/%s was left behind", dir, e->d_name);
  closedir(d);
}

/* ------------------------------------------------------------------ */
/* The listing.                                                         */

/* Number of lines of `out` that contain `needle`. */
static int count(const char *out, const char *needle) {
  int n = 0;
  for (const char *p = out; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

/* The value of the user int `name` on domain 0, or LONG_MIN. */
static long user_int(const char *out, const char *name) {
  char pat[128];
  snprintf(pat, sizeof pat, " kind=user_int name=%s value=", name);
  const char *p = strstr(out, pat);
  return p ? strtol(p + strlen(pat), NULL, 10) : LONG_MIN;
}

/* The listing ends with one SUMMARY line whose total is the number of
 * event lines; every line is an event, a loss report or the summary;
 * spawn.seq runs 0, 1, ... without a gap on domain 0 (when `seq0`).
 * Returns the number of spawn.seq events on domain 0. */
static long check_listing(const char *out, int seq0) {
  size_t len = strlen(out);
  ck_assert_msg(len > 0 && out[len - 1] == '\n', "no complete listing: [%s]",
                out);
  const char *last = out + len - 1;
  while (last > out && last[-1] != '\n') last--;
  ck_assert_msg(!strncmp(last, "SUMMARY total=", 14),
                "the last line is not the summary: %s", last);
  ck_assert_int_eq(count(out, "SUMMARY"), 1);
  long total = strtol(last + 14, NULL, 10);
  ck_assert_int_eq(total, count(out, " ts="));
  ck_assert_msg(strstr(last, " lost_events_calls=0 ") != NULL, "%s", last);
  long next = 0;
  const char *p = out;
  while (*p) {
    const char *nl = strchr(p, '\n');
    ck_assert_ptr_nonnull(nl);
    ck_assert_msg(!strncmp(p, "domain=", 7) || !strncmp(p, "SUMMARY ", 8),
                  "stray line: %.*s", (int)(nl - p), p);
    long v;
    if (seq0 && sscanf(p, "domain=0 ts=%*u kind=user_int name=spawn.seq "
                          "value=%ld", &v) == 1) {
      ck_assert_msg(v == next, "spawn.seq %ld after %ld", v, next - 1);
      next++;
    }
    p = nl + 1;
  }
  return next;
}

/* ------------------------------------------------------------------ */
/* Spawning.                                                            */

static void check_exit(int code) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char codes[16];
  snprintf(codes, sizeof codes, "%d", code);
  struct er_run r =
      run_dump(dir, (const char *[]){er_prog_path("spawn_child"),
                                     "exit", codes, NULL});
  er_assert_status(&r, code);
  ck_assert_int_eq(check_listing(r.out, 1), 100);
  /* The child saw the tracing variables and a private directory. */
  ck_assert_int_eq(user_int(r.out, "spawn.start"), 1);
  ck_assert_int_eq(user_int(r.out, "spawn.preserve"), 1);
  ck_assert_int_eq(user_int(r.out, "spawn.dirmode"), 0700);
  ck_assert_msg(!strncmp(r.out, "domain=0 ", 9) &&
                    strstr(r.out, " kind=lifecycle name=ring_start value=") <
                        strstr(r.out, "name=spawn.start"),
                "ring_start does not come first: %.200s", r.out);
  ck_assert_int_eq(count(r.out, "kind=user_span name=spawn.work value=begin"),
                   1);
  ck_assert_int_eq(count(r.out, "kind=user_span name=spawn.work value=end"), 1);
  ck_assert_int_eq(count(r.out, "name=ring_stop"), 1);
  assert_no_private_dir(dir);
  er_run_free(&r);
}

START_TEST(test_exit_0) { check_exit(0); }
END_TEST

START_TEST(test_exit_3) { check_exit(3); }
END_TEST

/* A child killed by SIGKILL writes no ring_stop: the listing is still
 * complete, and the tool's status is the shell's for the signal. */
START_TEST(test_killed) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  struct er_run r =
      run_dump(dir, (const char *[]){er_prog_path("spawn_child"),
                                     "kill", NULL});
  er_assert_status(&r, 128 + SIGKILL);
  ck_assert_int_eq(check_listing(r.out, 1), 100);
  ck_assert_int_eq(count(r.out, "name=ring_stop"), 0);
  ck_assert_int_eq(count(r.out, "kind=user_span name=spawn.work value=end"), 1);
  assert_no_private_dir(dir);
  er_run_free(&r);
}
END_TEST

START_TEST(test_threads) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  struct er_run r =
      run_dump(dir, (const char *[]){er_prog_path("spawn_child"),
                                     "threads", "4", NULL});
  er_assert_status(&r, 0);
  check_listing(r.out, 0);
  ck_assert_int_eq(count(r.out, " name=spawn.seq "), 400);
  ck_assert_int_eq(count(r.out, "name=domain_spawn"),
                   count(r.out, "name=domain_terminate"));
  ck_assert_int_ge(count(r.out, "name=domain_spawn"), 1);
  assert_no_private_dir(dir);
  er_run_free(&r);
}
END_TEST

/* A command that is a wrapper: the traced program is the shell's child,
 * whose file has another pid than the one the tool spawned; the tool's
 * status is the wrapper's. */
START_TEST(test_wrapper) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char script[PATH_MAX + 64];
  snprintf(script, sizeof script, "'%s' exit 5; exit 6",
           er_prog_path("spawn_child"));
  struct er_run r = run_dump(dir, (const char *[]){"/bin/sh", "-c", script, NULL});
  er_assert_status(&r, 6);
  ck_assert_int_eq(check_listing(r.out, 1), 100);
  assert_no_private_dir(dir);
  er_run_free(&r);
}
END_TEST

START_TEST(test_cannot_run) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  struct er_run r = run_dump(dir, (const char *[]){"/nonexistent/prog", "a", NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 127);
  ck_assert_str_eq(r.err, "eventring: cannot run /nonexistent/prog: No such "
                          "file or directory\n");
  ck_assert_str_eq(r.out, "");
  er_run_free(&r);

  /* Found but not executable. */
  r = run_dump(dir, (const char *[]){dir, NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 126);
  er_assert_one_error(&r, "cannot run");
  er_run_free(&r);

  /* A program that is not traced: it ends without a ring file. */
  r = run_dump(dir, (const char *[]){"/bin/sh", "-c", "exit 0",
                                     NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  er_assert_one_error(&r, "made no ring file");
  ck_assert_str_eq(r.out, "");
  er_run_free(&r);

  /* Usage: nothing after "--", or two sources. */
  r = run_dump(dir, (const char *[]){NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_assert_one_error(&r, "--");
  er_run_free(&r);
  r = run_tool(dir, (const char *[]){"dump", "x.events", "--", "true", NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_run_free(&r);
  r = run_tool(dir, (const char *[]){"dump", "--pid", "1", "--", "true", NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_run_free(&r);
  assert_no_private_dir(dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Attaching.                                                           */

/* Starts spawn_child run SECONDS traced into `dir` and waits for its
 * ring file. */
static pid_t start_traced(const char *dir, const char *seconds) {
  setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
  char *argv[] = {(char *)er_prog_path("spawn_child"), "run", (char *)seconds,
                  NULL};
  pid_t pid = er_spawn(argv, -1, -1, -1, NULL, ER_SPAWN_PATH);
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, pid);
  double deadline = er_now() + ER_RUN_TIMEOUT;
  /* The version word is written last: once it reads 1 the header is
   * complete. */
  for (;;) {
    uint64_t version = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (pread(fd, &version, sizeof version, 0) != sizeof version)
        version = 0;
      close(fd);
    }
    if (version == 1) break;
    ck_assert_msg(er_now() < deadline, "%s never appeared", path);
    er_sleep_ms(2);
  }
  return pid;
}

START_TEST(test_pid_live) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  pid_t child = start_traced(dir, "0.5");
  char pids[32];
  snprintf(pids, sizeof pids, "%ld", (long)child);

  /* A snapshot of the live file... */
  struct er_run r = run_tool(
      dir, (const char *[]){"dump", "--time=raw", "--dir", dir, "--pid", pids, NULL});
  er_assert_status(&r, 0);
  check_listing(r.out, 1);
  ck_assert_int_eq(count(r.out, "name=ring_start"), 1);
  er_run_free(&r);

  /* ...and the whole of it, followed until the process has exited (it
   * stays a zombie until we reap it below, which counts as exited). */
  r = run_tool(dir, (const char *[]){"dump", "--time=raw", "--follow", "--pid", pids, NULL});
  er_assert_status(&r, 0);
  ck_assert_int_gt(check_listing(r.out, 1), 10);
  ck_assert_int_eq(count(r.out, "name=ring_stop"), 1);
  er_run_free(&r);
  int st = er_wait_for(child, ER_RUN_TIMEOUT);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "spawn_child: status %d", st);
}
END_TEST

START_TEST(test_pid_missing) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  struct er_run r = run_tool(
      dir, (const char *[]){"dump", "--dir", dir, "--pid", "999999999", NULL});
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  char want[PATH_MAX];
  snprintf(want, sizeof want, "eventring: no ring file for pid 999999999 in %s",
           dir);
  er_assert_one_error(&r, want);
  ck_assert_str_eq(r.out, "");
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Signals.                                                             */

/* Starts `dump -o LISTING -- spawn_child run 10 [extra]` and waits until
 * the listing shows the child's events. */
static pid_t start_long_run(const char *dir, const char *extra, char *outp,
                            char *errp) {
  char listing[PATH_MAX];
  listing_path(dir, listing);
  /* The child would run for an hour: only a signal ends it in time. */
  pid_t tool = start_tool(dir,
                          (const char *[]){"dump", "--time=raw", "-o", listing, "--",
                                           er_prog_path("spawn_child"), "run",
                                           "3600", extra, NULL},
                          outp, errp);
  double deadline = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    char *out = access(listing, F_OK) == 0 ? er_slurp(listing, NULL)
                                           : strdup("");
    int seen = strstr(out, "name=spawn.seq") != NULL;
    free(out);
    if (seen) break;
    ck_assert_msg(er_now() < deadline, "no events from the spawned program");
    er_sleep_ms(10);
  }
  return tool;
}

/* Waits for the tool started by start_long_run(); the run's `out` is the
 * listing. */
static struct er_run finish_long_run(const char *dir, pid_t tool,
                                     const char *outp, const char *errp) {
  struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
  ck_assert_str_eq(r.out, "");
  free(r.out);
  char listing[PATH_MAX];
  listing_path(dir, listing);
  r.out = er_slurp(listing, NULL);
  return r;
}

/* Waits (at most ER_RUN_TIMEOUT) until process `pid` has taken signal
 * `sig`: it is no longer pending for the process or its main thread, so
 * its handler has run or is running (and blocks a second `sig` until it
 * returns, when that one is taken too). */
static void wait_signal_taken(pid_t pid, int sig) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
  double deadline = er_now() + ER_RUN_TIMEOUT;
  for (;;) {
    FILE *f = fopen(path, "re");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    unsigned long long pending = 0;
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "SigPnd:", 7) || !strncmp(line, "ShdPnd:", 7))
        pending |= strtoull(line + 7, NULL, 16);
    fclose(f);
    if (!(pending & (1ULL << (sig - 1)))) return;
    ck_assert_msg(er_now() < deadline, "process %ld never took signal %d",
                  (long)pid, sig);
    er_sleep_ms(1);
  }
}

/* SIGINT to the tool: passed on to the child, which dies of it; the tool
 * reads what it wrote and ends with a complete listing and the child's
 * status.  The child would run for an hour: a tool that did not stop at
 * SIGINT is killed by er_finish's bound, and fails. */
START_TEST(test_sigint) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t tool = start_long_run(dir, NULL, outp, errp);
  ck_assert_int_eq(kill(tool, SIGINT), 0);
  struct er_run r = finish_long_run(dir, tool, outp, errp);
  er_assert_status(&r, 128 + SIGINT);
  ck_assert_int_gt(check_listing(r.out, 1), 0);
  ck_assert_int_eq(count(r.out, "name=ring_stop"), 0);
  assert_no_private_dir(dir);
  er_run_free(&r);
}
END_TEST

/* A child that ignores SIGINT is killed at the second one. */
START_TEST(test_sigint_twice) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char outp[PATH_MAX], errp[PATH_MAX];
  pid_t tool = start_long_run(dir, "ignore-int", outp, errp);
  ck_assert_int_eq(kill(tool, SIGINT), 0);
  /* Two signals, not one that the second merged into. */
  wait_signal_taken(tool, SIGINT);
  ck_assert_int_eq(kill(tool, SIGINT), 0);
  struct er_run r = finish_long_run(dir, tool, outp, errp);
  er_assert_status(&r, 128 + SIGKILL);
  ck_assert_int_gt(check_listing(r.out, 1), 0);
  assert_no_private_dir(dir);
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Progress.                                                            */

/* Runs `dump -o OUT -- spawn_child run 1.2` under script(1), so that its
 * stderr is a terminal, and returns what the terminal got (malloc'd). */
static char *run_under_pty(const char *dir) {
  char cmd[4 * PATH_MAX], outp[PATH_MAX], ttyp[PATH_MAX];
  snprintf(outp, sizeof outp, "%s/pty.out", dir);
  snprintf(ttyp, sizeof ttyp, "%s/pty.tty", dir);
  snprintf(cmd, sizeof cmd, "'%s' dump -o '%s' -- '%s' run 1.2", er_tool_path(),
           outp, er_prog_path("spawn_child"));
  int fd = open(ttyp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ck_assert_int_ge(fd, 0);
  setenv("SHELL", "/bin/sh", 1);
  setenv("TMPDIR", dir, 1);
  char *argv[] = {"script", "-qfec", cmd, "/dev/null", NULL};
  pid_t pid = er_spawn(argv, -1, fd, -1, NULL, ER_SPAWN_PATH);
  close(fd);
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "script: status %d", st);
  char *out = er_slurp(outp, NULL);
  check_listing(out, 1);
  free(out);
  return er_slurp(ttyp, NULL);
}

static int have_script(void) {
  return system("script -qfec true /dev/null >/dev/null 2>&1 </dev/null") == 0;
}

START_TEST(test_progress_tty) {
  NEED_ALL();
  if (!have_script()) ER_SKIP("no working script(1) to make a terminal");
  const char *dir = er_tmpdir();
  char *tty = run_under_pty(dir);
  ck_assert_msg(strstr(tty, "eventring: spawn_child: ") != NULL &&
                    strstr(tty, " events read, 0 lost, ") != NULL,
                "no progress line on the terminal: [%s]", tty);
  /* Erased at the end: the last thing written is the erasure. */
  size_t n = strlen(tty);
  ck_assert_msg(n >= 4 && !strcmp(tty + n - 4, "\r\033[K"),
                "the progress line was not erased: [%s]", tty);
  free(tty);
  assert_no_private_dir(dir);
}
END_TEST

START_TEST(test_progress_piped) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  struct er_run r =
      run_dump(dir, (const char *[]){er_prog_path("spawn_child"),
                                     "run", "1.2", NULL});
  /* assert_status checks that stderr stayed empty. */
  er_assert_status(&r, 0);
  check_listing(r.out, 1);
  er_run_free(&r);
}
END_TEST

static TCase *tc_spawn(void) {
  TCase *tc = er_tcase("spawn");
  tcase_add_test(tc, test_exit_0);
  tcase_add_test(tc, test_exit_3);
  tcase_add_test(tc, test_killed);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_wrapper);
  tcase_add_test(tc, test_cannot_run);
  return tc;
}

static TCase *tc_attach(void) {
  TCase *tc = er_tcase("attach");
  tcase_add_test(tc, test_pid_live);
  tcase_add_test(tc, test_pid_missing);
  return tc;
}

static TCase *tc_signals(void) {
  TCase *tc = er_tcase("signals");
  tcase_add_test(tc, test_sigint);
  tcase_add_test(tc, test_sigint_twice);
  return tc;
}

static TCase *tc_progress(void) {
  TCase *tc = er_tcase("progress");
  tcase_add_test(tc, test_progress_tty);
  tcase_add_test(tc, test_progress_piped);
  return tc;
}

ER_TEST_MAIN("tool spawn", tc_spawn, tc_attach, tc_signals, tc_progress)
