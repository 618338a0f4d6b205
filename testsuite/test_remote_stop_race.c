/* test_remote_stop_race -- a stop racing with another thread's stop and start leaves no remote-control watcher serving an unmapped file. */
/* Issue 13, item 15.  This file compiles control.c itself with
 * ER_REMOTE_TEST, whose hook runs at the start of eventring_stop(),
 * before it takes the lock: there, another thread stops tracing and
 * starts it again (a new file, a new watcher).  The first stop then goes
 * on.  The watcher must not be left serving the file that stop unmaps:
 * the next start must have a watcher that answers, and the stops must
 * not touch the unmapped file. */
#define ER_REMOTE_TEST 1
#include "../runtime/control.c"

#include "harness.h"

static int race_armed;

static void *stop_and_start(void *arg) {
  (void)arg;
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_int_eq(eventring_start(), 0);
  return NULL;
}

void er_remote_test_point(enum er_remote_point p) {
  if (p != ER_POINT_STOP_ENTERED || !race_armed) return;
  race_armed = 0;
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, stop_and_start, NULL), 0);
  pthread_join(t, NULL);
}

START_TEST(test_stop_start_race) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_remote_state(dir, getpid()), 0);
  race_armed = 1;
  /* Stops the file the other thread started. */
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_int_eq(race_armed, 0);
  ck_assert_int_eq(eventring_remote_state(dir, getpid()), -ENOENT);

  /* A new start has a watcher of its own, which answers. */
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_remote_state(dir, getpid()), 0);
  ck_assert_int_eq(eventring_remote_pause(dir, getpid()), 0);
  ck_assert_int_eq(eventring_remote_state(dir, getpid()), 1);
  ck_assert_int_eq(eventring_remote_resume(dir, getpid()), 0);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

static TCase *tc_race(void) {
  TCase *tc = er_tcase("race");
  tcase_add_test(tc, test_stop_start_race);
  return tc;
}

ER_TEST_MAIN("remote stop race", tc_race)
