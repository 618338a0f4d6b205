/* Tests that the host survives its ring file being truncated by its owner while it runs: no SIGBUS, one stderr line, the program goes on and exits normally; a SIGBUS that is not about the ring file still reaches the host's own handler, or kills it as it would have. */
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "rtlib.h"
#include "testlib.h"
#include "childfile.h"

#define NEED_TRACING()                                                   \
  do {                                                                   \
    if (er_tracing_off()) ER_SKIP("a build without tracing");            \
  } while (0)

#define LOST_LINE "was truncated while the program ran: its events are lost"

/* Waits (bounded) until the ring file at `path` has its version word. */
static void wait_complete(const char *path) {
  int fd = open(path, O_RDONLY);
  ck_assert_int_ge(fd, 0);
  uint64_t version = 0;
  double give_up = er_now() + ER_RUN_TIMEOUT;
  /* Before the writer sizes it, the file is empty and pread() reads 0. */
  while ((pread(fd, &version, 8, 0) != 8 || version != 1) &&
         er_now() < give_up)
    er_sleep_ms(1);
  close(fd);
  ck_assert_uint_eq(version, 1);
}

/* The case of the issue: `truncate -s 0 DIR/PID.events` under a program
 * writing an event every 200 us (mon_loop).  Its probes, the remote
 * watcher's stop and the teardown all store into the cut file after the
 * truncation; before the fix the first of them killed it with SIGBUS. */
START_TEST(test_truncate_under_writer) {
  NEED_TRACING();
  const char *prog = er_prog_path("mon_loop");
  if (!prog) ER_SKIP("mon_loop is not built");
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", prog);
  const char *dir = er_tmpdir();
  char out[PATH_MAX];
  snprintf(out, sizeof out, "%s/out", dir);
  struct er_pipe_proc w = er_pipe_start(
      (char *const[]){p, NULL},
      (char *const[]){"OCAML_RUNTIME_EVENTS_START=1", NULL}, out);
  /* Cut the file once it is complete (its version word is written
   * last): cut any earlier, the writer's own ftruncate() would undo it. */
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, w.pid);
  er_wait_open(w.pid, path);
  wait_complete(path);
  ck_assert_int_eq(truncate(path, 0), 0);
  /* The writer stores into the file at every turn of its loop: let two
   * go by, then let it exit (ring_stop, the watcher's stop and the
   * teardown store into the file too). */
  er_wait_turns(w.pid, 3);
  int status = er_pipe_finish(&w, ER_RUN_TIMEOUT);
  char *o = er_slurp(out, NULL);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "mon_loop: status 0x%x (SIGBUS is %d); output: %s", status,
                SIGBUS, o);
  ck_assert_ptr_nonnull(strstr(o, LOST_LINE));
  /* One line, however many stores hit the cut file. */
  ck_assert_ptr_null(strstr(strstr(o, LOST_LINE) + 1, LOST_LINE));
  free(o);
  er_rmdir(dir);
}
END_TEST

/* The same in this process, with each step forced: a probe after the
 * cut, then stop. */
START_TEST(test_truncate_own_file) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", eventring_path());
  eventring_begin(EVENTRING_PHASE_MAJOR);
  ck_assert_int_eq(truncate(path, 0), 0);
  struct er_capture cap;
  er_stderr_begin(&cap);
  for (int i = 0; i < 100; i++) {
    eventring_end(EVENTRING_PHASE_MAJOR);
    eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, (uint64_t)i);
  }
  int stopped = eventring_stop();
  char *err = er_stderr_end(&cap);
  ck_assert_int_eq(stopped, 0);
  ck_assert_int_eq(er_count_lines(err), 1);
  ck_assert_ptr_nonnull(strstr(err, path));
  ck_assert_ptr_nonnull(strstr(err, LOST_LINE));
  free(err);
  /* Tracing starts again with a new file. */
  ck_assert_int_eq(eventring_start(), 0);
  eventring_begin(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

static sigjmp_buf host_jump;
static void *host_fault_addr;

static void host_handler(int sig, siginfo_t *si, void *ctx) {
  (void)sig;
  (void)ctx;
  host_fault_addr = si->si_addr;
  siglongjmp(host_jump, 1);
}

/* The host's own SIGBUS handler, installed before tracing started, still
 * gets the faults that are not about the ring file. */
START_TEST(test_host_handler_chained) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_sigaction = host_handler;
  act.sa_flags = SA_SIGINFO;
  ck_assert_int_eq(sigaction(SIGBUS, &act, NULL), 0);
  ck_assert_int_eq(eventring_start(), 0);
  volatile char *m = er_cut_mapping(dir);
  if (sigsetjmp(host_jump, 1) == 0) {
    m[0] = 1;
    ck_abort_msg("no SIGBUS from a cut mapping");
  }
  ck_assert_ptr_eq(host_fault_addr, (void *)m);
  eventring_begin(EVENTRING_PHASE_MAJOR);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

/* A process that never traces reads another process's file: the cursor
 * maps it and installs sigbus.c's handler, chained to the host's, which
 * still gets the faults that are not about the file; a cut of the file
 * under the cursor gives EVENTRING_E_TRUNCATED. */
START_TEST(test_reader_keeps_host_handler) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  struct sigaction act, now;
  memset(&act, 0, sizeof act);
  act.sa_sigaction = host_handler;
  act.sa_flags = SA_SIGINFO;
  ck_assert_int_eq(sigaction(SIGBUS, &act, NULL), 0);
  ck_assert_int_eq(unsetenv("EVENTRING_READ_PREAD"), 0);
  pid_t pid = er_child_file(1);
  ck_assert_ptr_null(eventring_path()); /* this process does not trace */
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open(&c, dir, pid), 0);
  /* The cursor put sigbus.c's handler in front of the host's. */
  ck_assert_int_eq(sigaction(SIGBUS, NULL, &now), 0);
  ck_assert_ptr_ne((void *)now.sa_sigaction, (void *)host_handler);
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  ck_assert_int_ge(eventring_cursor_poll(c, cb, NULL, 0), 2);
  volatile char *m = er_cut_mapping(dir);
  host_fault_addr = NULL;
  if (sigsetjmp(host_jump, 1) == 0) {
    m[0] = 1;
    ck_abort_msg("no SIGBUS from a cut mapping");
  }
  ck_assert_ptr_eq(host_fault_addr, (void *)m);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%ld.events", dir, (long)pid);
  ck_assert_int_eq(truncate(path, 0), 0);
  ck_assert_int_eq(eventring_cursor_poll(c, cb, NULL, 0),
                   EVENTRING_E_TRUNCATED);
  eventring_cursor_free(c);
  eventring_callbacks_free(cb);
  er_rmdir(dir);
}
END_TEST

/* In the child: a store to a cut mapping of its own, which must kill it
 * (exit status 4 when it returns). */
static void store_to_cut_mapping(const char *dir) {
  er_store_to_cut_mapping(dir);
  _exit(4);
}

/* The child `pid` dies of SIGBUS; then `dir` is removed. */
static void assert_sigbus_death(pid_t pid, const char *dir) {
  int status = er_wait_for(pid, ER_RUN_TIMEOUT);
  er_assert_sigbus_death(status, "");
  er_rmdir(dir);
}

/* A process that only reads, with no handler of its own: the handler the
 * cursor installed passes a fault that is not about the file on to the
 * default action, which kills it with SIGBUS as it would have. */
START_TEST(test_reader_other_fault_still_kills) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  ck_assert_int_eq(unsetenv("EVENTRING_READ_PREAD"), 0);
  pid_t writer = er_child_file(1);
  fflush(stdout);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    eventring_cursor *c;
    struct sigaction now;
    if (eventring_cursor_open(&c, dir, writer) != 0) _exit(3);
    /* The cursor's handler is in place, not the default action. */
    if (sigaction(SIGBUS, NULL, &now) != 0 || !(now.sa_flags & SA_SIGINFO))
      _exit(5);
    store_to_cut_mapping(dir);
  }
  assert_sigbus_death(pid, dir);
}
END_TEST

/* Without a handler of the host's, such a fault kills it with SIGBUS as
 * it would have without eventring. */
START_TEST(test_other_fault_still_kills) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  fflush(stdout);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (eventring_start() != 0) _exit(3);
    store_to_cut_mapping(dir);
  }
  assert_sigbus_death(pid, dir);
}
END_TEST

static TCase *tc_truncate(void) {
  TCase *tc = er_tcase("truncate");
  tcase_add_test(tc, test_truncate_under_writer);
  tcase_add_test(tc, test_truncate_own_file);
  tcase_add_test(tc, test_host_handler_chained);
  tcase_add_test(tc, test_other_fault_still_kills);
  tcase_add_test(tc, test_reader_keeps_host_handler);
  tcase_add_test(tc, test_reader_other_fault_still_kills);
  return tc;
}

ER_TEST_MAIN("owner_truncates", tc_truncate)
