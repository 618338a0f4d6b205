/* test_remote_stopped -- `eventring pause` on a stopped process either withdraws its request (nothing happens after SIGCONT) or says it is pending (it happens after SIGCONT). */
/* Issue 13, item 13.  Withdrawn: mon_loop is stopped with SIGSTOP before
 * the request, so its watcher cannot take it.  Pending: the traced
 * process is a child of this test whose watcher is this file's copy of
 * remote_watcher.c, compiled with ER_REMOTE_TEST, so that the child stops
 * itself exactly after taking the request and before applying it. */
#define ER_REMOTE_TEST 1
#include "../runtime/remote_watcher.c"

#include <sys/prctl.h>
#include <sys/wait.h>

#include "harness.h"
#include "testlib.h"

/* In the traced child: stop at the first request taken. */
static int stop_when_taken;

void er_remote_test_point(enum er_remote_point p) {
  if (p == ER_POINT_TAKEN && stop_when_taken) {
    stop_when_taken = 0;
    raise(SIGSTOP);
  }
}

/* The control words of the ring file at `path`. */
static void ctl_words(const char *path, int *req, int *ack) {
  uint64_t w[ER_META_WORDS + ER_EXT_WORDS];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pread(fd, w, sizeof w, 0), (ssize_t)sizeof w);
  close(fd);
  memcpy(req, &w[ER_META_WORDS + ER_EXT_CTL_REQ], sizeof *req);
  memcpy(ack, &w[ER_META_WORDS + ER_EXT_CTL_ACK], sizeof *ack);
}

/* Waits until the watcher has answered every request made so far. */
static void await_answered(const char *path) {
  int req = 0, ack = -1;
  for (int i = 0; i < 1000; i++) {
    ctl_words(path, &req, &ack);
    if ((req & ~3) == (ack & ~3)) break;
    er_sleep_ms(10);
  }
  ck_assert_msg((req & ~3) == (ack & ~3), "REQ %#x, ACK %#x", req, ack);
}

static void check_one_error(const struct er_run *r, const char *word) {
  ck_assert_msg(!strncmp(r->err, "eventring: ", 11), "stderr: %s", r->err);
  ck_assert_int_eq(er_count_lines(r->err), 1);
  ck_assert_msg(strstr(r->err, word) != NULL, "'%s' not in: %s", word,
                r->err);
}

START_TEST(test_withdrawn) {
  ER_NEED_TOOL();
  const char *prog = er_prog_path("mon_loop");
  if (!prog) ER_SKIP("mon_loop not built");
  char dir[64], file[PATH_MAX], pid[16], dirvar[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  char *argv[] = {(char *)prog, NULL};
  char *env[] = {"OCAML_RUNTIME_EVENTS_START=1", dirvar, NULL};
  struct er_pipe_proc p = er_pipe_start(argv, env, NULL);
  char line[64];
  er_read_line(p.out, line, sizeof line, 10);
  ck_assert_msg(!strncmp(line, "ready ", 6), "mon_loop: '%s'", line);
  snprintf(pid, sizeof pid, "%ld", (long)p.pid);
  snprintf(file, sizeof file, "%s/%ld.events", dir, (long)p.pid);

  er_stop(p.pid);
  const char *args[] = {"pause", pid, "--dir", dir, NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_int_eq(er_exit_code(&r, "eventring pause"), 1);
  check_one_error(&r, "withdrawn, nothing changed");
  er_run_free(&r);
  kill(p.pid, SIGCONT);
  /* Once the watcher has seen everything, the process still records. */
  await_answered(file);
  ck_assert_int_eq(eventring_remote_state(dir, p.pid), 0);
  int st = er_pipe_finish(&p, 10);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "mon_loop status %d", st);
}
END_TEST

START_TEST(test_pending) {
  ER_NEED_TOOL();
  char dir[64], pid[16];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  int go[2];
  ck_assert_int_eq(pipe(go), 0);
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(go[0]);
    setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
    stop_when_taken = 1;
    if (eventring_start() != 0) _exit(3);
    if (write(go[1], "s", 1) != 1) _exit(4);
    for (int i = 0; i < 3000; i++) {
      eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, (uint64_t)i);
      er_sleep_ms(5);
    }
    _exit(0);
  }
  close(go[1]);
  char c;
  ck_assert_int_eq(read(go[0], &c, 1), 1);
  close(go[0]);
  snprintf(pid, sizeof pid, "%ld", (long)child);

  const char *args[] = {"pause", pid, "--dir", dir, NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_int_eq(er_exit_code(&r, "eventring pause"), 1);
  check_one_error(&r, "it will be paused when it runs again");
  er_run_free(&r);
  /* It was stopped with the request taken, and applies it on SIGCONT. */
  int st;
  ck_assert_int_eq(waitpid(child, &st, WUNTRACED), child);
  ck_assert(WIFSTOPPED(st));
  ck_assert_int_eq(eventring_remote_state(dir, child), 0);
  kill(child, SIGCONT);
  int s = -1;
  for (int i = 0; i < 1000 && (s = eventring_remote_state(dir, child)) != 1; i++)
    er_sleep_ms(10);
  ck_assert_int_eq(s, 1);
  kill(child, SIGKILL);
  waitpid(child, &st, 0);
}
END_TEST

static TCase *tc_stopped(void) {
  TCase *tc = er_tcase("stopped");
  tcase_add_test(tc, test_withdrawn);
  tcase_add_test(tc, test_pending);
  return tc;
}

ER_TEST_MAIN("remote control of a stopped process", tc_stopped)
