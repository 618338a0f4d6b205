/* Tests that a cursor on this process's own ring file (eventring_cursor_open(NULL, 0), which maps the file) survives the owner cutting the file while it reads: the poll reports EVENTRING_E_TRUNCATED, and the program goes on, traced or not. */
/* The cut is forced (ER_TEST_HOOKS, Makefile.in) where a poll has found
 * the file whole and is about to read it: the one window in which reading
 * through the mapping faults. */
#include <signal.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "testlib.h"
#include "childfile.h"

static int cut_fd = -1;
static off_t whole; /* the file's size before the cut */
static volatile sig_atomic_t cut_armed, cut_done;

static int hook(enum er_hook h) {
  if (h == ER_HOOK_POLL_SIZED && cut_armed) {
    cut_armed = 0;
    if (ftruncate(cut_fd, 0) == 0) cut_done = 1;
  }
  return 0;
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  (void)domain;
  (void)ts;
  (void)phase;
  (*(int *)data)++;
  return 0;
}

/* Starts tracing, opens a cursor on the file, writes a few events and
 * reads them through it; returns the cursor. */
static eventring_cursor *open_own(eventring_callbacks **cb) {
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open(&c, NULL, 0), 0);
  for (int i = 0; i < 10; i++) {
    eventring_begin(EVENTRING_PHASE_MAJOR);
    eventring_end(EVENTRING_PHASE_MAJOR);
  }
  *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(*cb);
  eventring_callbacks_set_runtime_begin(*cb, on_begin);
  int begins = 0;
  int n = eventring_cursor_poll(c, *cb, &begins, 0);
  ck_assert_msg(n > 0 && begins > 0, "poll: %d, %d begins", n, begins);
  cut_fd = open(eventring_path(), O_RDWR);
  ck_assert_int_ge(cut_fd, 0);
  struct stat st;
  ck_assert_int_eq(fstat(cut_fd, &st), 0);
  whole = st.st_size;
  return c;
}

/* Polls with the file cut after the poll's size check: before the fix
 * the read through the cursor's mapping killed the program with SIGBUS
 * (the handler knew only the writer's mapping). */
static void poll_across_the_cut(eventring_cursor *c,
                                const eventring_callbacks *cb) {
  er_test_hook = hook;
  cut_armed = 1;
  int begins = 0;
  eventring_begin(EVENTRING_PHASE_MINOR);
  int n = eventring_cursor_poll(c, cb, &begins, 0);
  ck_assert_msg(cut_done, "the file was not cut inside the poll");
  ck_assert_msg(n == EVENTRING_E_TRUNCATED, "poll: %d (%s)", n,
                eventring_strerror(n));
  /* Nothing read from the cut file is passed on as an event. */
  ck_assert_int_eq(begins, 0);
  /* And it stays so, even once the file has its size again. */
  ck_assert_int_eq(ftruncate(cut_fd, whole), 0);
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &begins, 0),
                   EVENTRING_E_TRUNCATED);
}

START_TEST(test_cut_while_traced) {
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  eventring_callbacks *cb;
  eventring_cursor *c = open_own(&cb);
  struct er_capture cap;
  er_stderr_begin(&cap);
  poll_across_the_cut(c, cb);
  eventring_cursor_free(c);
  /* The writer's own stores into the cut file are repaired as before. */
  eventring_end(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), 0);
  free(er_stderr_end(&cap));
  eventring_callbacks_free(cb);
  close(cut_fd);
}
END_TEST

/* The cursor outlives tracing (its file preserved): the writer's mapping
 * and its guard are gone, the cursor's mapping is not. */
START_TEST(test_cut_after_stop) {
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  eventring_callbacks *cb;
  eventring_cursor *c = open_own(&cb);
  ck_assert_int_eq(eventring_stop(), 0);
  poll_across_the_cut(c, cb);
  eventring_cursor_free(c);
  eventring_callbacks_free(cb);
  close(cut_fd);
}
END_TEST

/* A cursor on another process's file, in a process that never traces:
 * it maps the file too (installing the handler of sigbus.c), and a cut
 * inside its poll is EVENTRING_E_TRUNCATED, not SIGBUS. */
START_TEST(test_cut_other_process_file) {
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  const char *dir = er_tmpdir();
  ck_assert_int_eq(unsetenv("EVENTRING_READ_PREAD"), 0);
  pid_t pid = er_child_file(10);
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open(&c, dir, pid), 0);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%ld.events", dir, (long)pid);
  cut_fd = open(path, O_RDWR);
  ck_assert_int_ge(cut_fd, 0);
  struct stat st;
  ck_assert_int_eq(fstat(cut_fd, &st), 0);
  whole = st.st_size;
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  eventring_callbacks_set_runtime_begin(cb, on_begin);
  poll_across_the_cut(c, cb);
  eventring_cursor_free(c);
  eventring_callbacks_free(cb);
  close(cut_fd);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_cut_cursor(void) {
  TCase *tc = er_tcase("cut_cursor");
  tcase_add_test(tc, test_cut_while_traced);
  tcase_add_test(tc, test_cut_after_stop);
  tcase_add_test(tc, test_cut_other_process_file);
  return tc;
}

ER_TEST_MAIN("hook_cut_cursor", tc_cut_cursor)
