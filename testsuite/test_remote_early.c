/* test_remote_early -- a pause asked from outside right after eventring_start() returns, before the control thread has run, is applied. */
/* Issue 22: eventring_start() no longer waits for the watcher thread to
 * run.  The file says a watcher serves it (ER_EXT_CTL_WATCHER) as soon as
 * the start returns, so a controller may post at once; the watcher must
 * then serve that request when it first runs, not take it for one it has
 * already answered.  This file compiles remote_watcher.c itself with
 * ER_REMOTE_TEST, whose hook holds the watcher at its first instant until
 * the request is in the file (a bounded wait: the test fails if it never
 * comes). */
#define ER_REMOTE_TEST 1
#include "../runtime/remote_watcher.c"

#include "harness.h"

/* 1 while the next watcher is to be held; 1 in posted_first once it saw
 * a request posted before it read anything. */
static int hold_watcher, posted_first;

void er_remote_test_point(enum er_remote_point p) {
  if (p != ER_POINT_WATCHER_RUNS || !er_iload_acq(&hold_watcher)) return;
  er_istore_rlx(&hold_watcher, 0);
  /* The start made the file and stored its extension block before it
   * created this thread. */
  int *req = er_ctl_word(er_st.ext, ER_EXT_CTL_REQ);
  for (int i = 0; i < 10000; i++) {
    if (er_iload_acq(req) & 3) {
      er_istore_rel(&posted_first, 1);
      return;
    }
    struct timespec ms = {0, 1000 * 1000};
    nanosleep(&ms, NULL);
  }
}

START_TEST(test_pause_before_watcher_runs) {
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  er_istore_rel(&hold_watcher, 1);
  ck_assert_int_eq(eventring_start(), 0);
  /* Served, as far as the file says, from the start's return. */
  ck_assert_int_eq(eventring_remote_state(dir, getpid()), 0);
  ck_assert_int_eq(eventring_remote_pause(dir, getpid()), 0);
  ck_assert_int_eq(er_iload_acq(&posted_first), 1);
  ck_assert_int_eq(eventring_remote_state(dir, getpid()), 1);
  ck_assert_int_eq(eventring_is_active(), 0);
  /* And the requests after it, as ever. */
  ck_assert_int_eq(eventring_remote_resume(dir, getpid()), 0);
  ck_assert_int_eq(eventring_remote_state(dir, getpid()), 0);
  ck_assert_int_eq(eventring_is_active(), 1);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

/* A stop that comes before the watcher ever ran waits for it, and a
 * later start has a watcher that answers. */
START_TEST(test_stop_before_watcher_runs) {
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_int_eq(eventring_remote_state(dir, getpid()), -ENOENT);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_remote_pause(dir, getpid()), 0);
  ck_assert_int_eq(eventring_remote_state(dir, getpid()), 1);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

static TCase *tc_early(void) {
  TCase *tc = er_tcase("early");
  tcase_add_test(tc, test_pause_before_watcher_runs);
  tcase_add_test(tc, test_stop_before_watcher_runs);
  return tc;
}

ER_TEST_MAIN("remote control right after the start", tc_early)
