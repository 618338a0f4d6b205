/* test_remote_leases -- readers of a process started paused keep it recording while any of them reads, and one killed with SIGKILL lets go. */
/* Issue 13, item 12.  mon_loop (OCAML_RUNTIME_EVENTS_START=paused) is
 * followed by `eventring dump --follow --pid`: reader A resumes it, B
 * joins, A exits: the process must go on recording for B.  Then B is
 * killed with SIGKILL: the process must pause again by itself.  An
 * explicit `eventring pause` still pauses a process that readers hold. */
#include <signal.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

/* The number of lease words of `path` that hold a pid. */
static int leases_held(const char *path) {
  uint64_t w[ER_META_WORDS + ER_EXT_WORDS + ER_EXT_LEASE_SLOTS];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pread(fd, w, sizeof w, 0), (ssize_t)sizeof w);
  close(fd);
  int n = 0;
  for (int i = 0; i < ER_EXT_LEASE_SLOTS; i++)
    n += w[ER_META_WORDS + ER_EXT_WORDS + i] != 0;
  return n;
}

/* Waits (10 s at most) until the process's state is `want` (1 paused, 0
 * recording); returns the last state seen. */
static int await_state(const char *dir, pid_t pid, int want) {
  int s = -1;
  for (int i = 0; i < 1000; i++) {
    s = eventring_remote_state(dir, pid);
    if (s == want) break;
    er_sleep_ms(10);
  }
  return s;
}

static int await_leases(const char *path, int want) {
  int n = -1;
  for (int i = 0; i < 1000; i++) {
    if ((n = leases_held(path)) == want) break;
    er_sleep_ms(10);
  }
  return n;
}

struct reader {
  pid_t pid;
  char out[PATH_MAX], err[PATH_MAX];
};

static void reader_start(struct reader *r, const char *dir, const char *pid) {
  const char *args[] = {"dump", "--time=raw", "--follow", "--pid", pid, "--dir", dir, NULL};
  r->pid = er_start_tool(dir, args, 0, r->out, r->err);
  ck_assert_int_gt(r->pid, 0);
}

START_TEST(test_readers_add_up) {
  ER_NEED_TOOL();
  const char *prog = er_prog_path("mon_loop");
  if (!prog) ER_SKIP("mon_loop not built");
  char dir[64], file[PATH_MAX], pid[16], startvar[64], dirvar[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(startvar, sizeof startvar, "OCAML_RUNTIME_EVENTS_START=paused");
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  char *argv[] = {(char *)prog, NULL};
  char *env[] = {startvar, dirvar, NULL};
  struct er_pipe_proc p = er_pipe_start(argv, env, NULL);
  char line[64];
  er_read_line(p.out, line, sizeof line, 10);
  ck_assert_msg(!strncmp(line, "ready ", 6), "mon_loop: '%s'", line);
  snprintf(pid, sizeof pid, "%ld", (long)p.pid);
  snprintf(file, sizeof file, "%s/%ld.events", dir, (long)p.pid);
  ck_assert_int_eq(eventring_remote_state(dir, p.pid), 1);

  /* A resumes it; B joins. */
  struct reader a, b, c;
  reader_start(&a, dir, pid);
  ck_assert_int_eq(await_state(dir, p.pid, 0), 0);
  reader_start(&b, dir, pid);
  ck_assert_int_eq(await_leases(file, 2), 2);

  /* A leaves: B still reads a recording process. */
  kill(a.pid, SIGINT);
  struct er_run ra = er_finish(a.pid, a.out, a.err, 10);
  ck_assert_int_eq(er_exit_code(&ra, "reader A"), 130); /* interrupted */
  er_run_free(&ra);
  ck_assert_int_eq(leases_held(file), 1);
  ck_assert_int_eq(eventring_remote_state(dir, p.pid), 0);

  /* B is killed: its lease expires and the process pauses again. */
  kill(b.pid, SIGKILL);
  struct er_run rb = er_finish(b.pid, b.out, b.err, 10);
  er_run_free(&rb);
  ck_assert_int_eq(await_state(dir, p.pid, 1), 1);
  ck_assert_int_eq(await_leases(file, 0), 0);

  /* An explicit pause wins over a reader's lease, and the reader leaving
   * then changes nothing. */
  reader_start(&c, dir, pid);
  ck_assert_int_eq(await_state(dir, p.pid, 0), 0);
  const char *pause_args[] = {"pause", pid, "--dir", dir, NULL};
  struct er_run rp = er_run_tool(dir, pause_args, 0);
  ck_assert_int_eq(er_exit_code(&rp, "eventring pause"), 0);
  er_run_free(&rp);
  ck_assert_int_eq(eventring_remote_state(dir, p.pid), 1);
  const char *resume_args[] = {"resume", pid, "--dir", dir, NULL};
  struct er_run rr = er_run_tool(dir, resume_args, 0);
  ck_assert_int_eq(er_exit_code(&rr, "eventring resume"), 0);
  er_run_free(&rr);
  kill(c.pid, SIGINT);
  struct er_run rc = er_finish(c.pid, c.out, c.err, 10);
  ck_assert_int_eq(er_exit_code(&rc, "reader C"), 130);
  er_run_free(&rc);
  ck_assert_int_eq(eventring_remote_state(dir, p.pid), 0);

  int st = er_pipe_finish(&p, 10);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "mon_loop status %d", st);
}
END_TEST

static TCase *tc_leases(void) {
  TCase *tc = er_tcase("leases");
  tcase_add_test(tc, test_readers_add_up);
  return tc;
}

ER_TEST_MAIN("remote leases", tc_leases)
