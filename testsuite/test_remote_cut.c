/* test_remote_cut -- a controller whose target's ring file is cut short while it waits for the answer gets an error, never SIGBUS, and never grows the file back. */
/* Issue 13, item 9 (readers must not fault), as the adversarial soak
 * found it: `eventring pause` died of SIGBUS in await_answer when the
 * victim's file was truncated while the command had its first page
 * mapped.  This file compiles remote_client.c itself with ER_REMOTE_TEST,
 * whose hook runs right after the request is posted and before the wait
 * for the answer: there, the file is cut to 0 bytes.  The traced process
 * (mon_loop) is stopped first, so that nothing answers and nothing grows
 * the file back while the controller waits: every access the controller
 * makes after the hook meets a file with no pages.  Each call must return
 * EVENTRING_E_TRUNCATED, leave the file at 0 bytes (a write that extended
 * it would be the controller repairing another process's file), and the
 * traced process, once continued, must live on and exit normally (its own
 * handler, sigbus.c, repairs its mapping). */
#define ER_REMOTE_TEST 1
#include "../runtime/remote_client.c"

#include <signal.h>
#include <sys/wait.h>

#include "cases.h"
#include "harness.h"
#include "testlib.h"

static const char *cut_path;
static int cuts;

void er_remote_test_point(enum er_remote_point p) {
  if (p != ER_POINT_POSTED || !cut_path) return;
  ck_assert_int_eq(truncate(cut_path, 0), 0);
  cut_path = NULL;
  cuts++;
}

static off_t file_size(const char *path) {
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  return st.st_size;
}

/* Starts `prog` (mon_loop) traced in `dir` (`start`: the value of
 * OCAML_RUNTIME_EVENTS_START), waits for it to be ready and stops it. */
static struct er_pipe_proc stopped_victim(const char *prog, const char *dir,
                                          const char *start, char *file,
                                          size_t size) {
  static char dirvar[PATH_MAX + 32], startvar[64];
  snprintf(dirvar, sizeof dirvar, "OCAML_RUNTIME_EVENTS_DIR=%s", dir);
  snprintf(startvar, sizeof startvar, "OCAML_RUNTIME_EVENTS_START=%s", start);
  char *argv[] = {(char *)prog, NULL};
  char *env[] = {startvar, dirvar, NULL};
  struct er_pipe_proc p = er_pipe_start(argv, env, NULL);
  char line[64];
  er_read_line(p.out, line, sizeof line, 10);
  ck_assert_msg(!strncmp(line, "ready ", 6), "mon_loop: '%s'", line);
  snprintf(file, size, "%s/%ld.events", dir, (long)p.pid);
  /* The watcher serves the file before the process says it is ready. */
  ck_assert_int_ge(eventring_remote_state(dir, p.pid), 0);
  er_stop(p.pid);
  return p;
}

/* Continues the victim and checks that it survives the cut. */
static void victim_lives(struct er_pipe_proc *p) {
  ck_assert_int_eq(kill(p->pid, SIGCONT), 0);
  /* Two turns of its loop, each writing an event into the cut file. */
  er_wait_turns(p->pid, 3);
  int st = er_pipe_finish(p, 10);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "mon_loop status %#x", st);
}

/* The call the controller makes while the file is cut, and what comes
 * before and after it. */
static const struct cut_case {
  const char *name;
  const char *start; /* OCAML_RUNTIME_EVENTS_START of the victim */
  int (*call)(const char *dir, pid_t pid);
  /* Before the cut: the victim's state must be paused (1), or the test
   * takes the lease without an answer (as a recording process does). */
  int check_paused, hold_first;
  /* After: the calls on a file cut before them, which the header's
   * checks see, fail as on no ring file. */
  int then_gone;
} cut_cases[] = {
    {"pause_cut_while_waiting", "1", eventring_remote_pause, 0, 0, 0},
    /* Started paused, so that the lease waits for the resume it asks;
     * giving the lease back must not write it into a file that is gone. */
    {"hold_cut_while_waiting", "paused", eventring_remote_hold, 1, 0, 0},
    {"unhold_cut_while_waiting", "1", eventring_remote_unhold, 0, 1, 1},
};

START_TEST(test_cut_case) {
  const struct cut_case *k = &cut_cases[_i];
  char dir[64], file[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  const char *prog = er_prog_path("mon_loop");
  if (!prog) ER_SKIP("mon_loop not built");
  struct er_pipe_proc p = stopped_victim(prog, dir, k->start, file,
                                         sizeof file);
  if (k->check_paused) ck_assert_int_eq(eventring_remote_state(dir, p.pid), 1);
  if (k->hold_first) ck_assert_int_eq(eventring_remote_hold(dir, p.pid), 0);
  cut_path = file;
  ck_assert_int_eq(k->call(dir, p.pid), EVENTRING_E_TRUNCATED);
  ck_assert_int_eq(cuts, 1);
  ck_assert_int_eq(file_size(file), 0);
  if (k->then_gone) {
    ck_assert_int_eq(eventring_remote_state(dir, p.pid),
                     EVENTRING_E_NOTRINGFILE);
    ck_assert_int_eq(eventring_remote_pause(dir, p.pid),
                     EVENTRING_E_NOTRINGFILE);
  }
  victim_lives(&p);
}
END_TEST

ER_CASES_MAIN("remote control of a file cut short", "cut", test_cut_case, cut_cases)
