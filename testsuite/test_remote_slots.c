/* test_remote_slots -- `eventring pause` and `resume` take no domain slot from the traced process: d=1 records them, d=2 leaves slot 1 to its threads. */
/* Issue 13, item 7.  This test is the traced process: it starts tracing
 * with OCAMLRUNPARAM=d=N, runs the real `eventring pause` and `eventring
 * resume` on itself, and reads its own file. */
#include <pthread.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "testlib.h"

struct seen {
  int pauses, resumes, ints;
};

static int on_life(void *data, int domain, uint64_t ts, int kind,
                   int64_t value, int has_data) {
  (void)domain, (void)ts, (void)value, (void)has_data;
  struct seen *s = data;
  s->pauses += kind == EVENTRING_LIFECYCLE_RING_PAUSE;
  s->resumes += kind == EVENTRING_LIFECYCLE_RING_RESUME;
  return 1;
}

static int on_int(void *data, int domain, uint64_t ts, int id,
                  const char *name, int64_t value) {
  (void)domain, (void)ts, (void)id, (void)name, (void)value;
  ((struct seen *)data)->ints++;
  return 1;
}

/* Runs `eventring CMD <this pid> --dir DIR`; it must succeed. */
static void control(const char *dir, const char *cmd) {
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  const char *args[] = {cmd, pid, "--dir", dir, NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, cmd) == 0, "eventring %s: %s", cmd, r.err);
  er_run_free(&r);
}

static struct seen read_own(const char *dir, uint64_t *dropped) {
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open(&c, dir, getpid()), 0);
  eventring_callbacks *cb = eventring_callbacks_create();
  eventring_callbacks_set_lifecycle(cb, on_life);
  eventring_callbacks_set_user_int(cb, on_int);
  struct seen s = {0, 0, 0};
  while (eventring_cursor_poll(c, cb, &s, 0) > 0) {
  }
  ck_assert_int_eq(eventring_cursor_dropped(c, EVENTRING_NO_DOMAIN, dropped), 0);
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
  return s;
}

static void *worker(void *arg) {
  int id = *(int *)arg;
  for (int i = 0; i < 100; i++) eventring_write_int(id, i);
  return NULL;
}

/* Registers the int event slots.n and starts tracing with OCAMLRUNPARAM
 * `params`, in a directory of the test's own whose name goes to `dir`
 * (64 bytes).  Returns the event's id. */
static int start_with(char *dir, const char *params) {
  snprintf(dir, 64, "%s", er_tmpdir());
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  setenv("OCAMLRUNPARAM", params, 1);
  int id = eventring_register("slots.n", EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);
  ck_assert_int_eq(eventring_start(), 0);
  return id;
}

/* The file in `dir` holds one pause, one resume and `ints` ints, and
 * nothing was dropped. */
static void check_own(const char *dir, int ints) {
  uint64_t dropped = 1;
  struct seen s = read_own(dir, &dropped);
  ck_assert_int_eq(s.pauses, 1);
  ck_assert_int_eq(s.resumes, 1);
  ck_assert_int_eq(s.ints, ints);
  ck_assert_uint_eq(dropped, 0);
}

/* d=2: the main thread holds slot 0; slot 1 stays free for a thread, and
 * for eventring_domain_bind(1). */
START_TEST(test_two_slots) {
  ER_NEED_TOOL();
  char dir[64];
  int id = start_with(dir, "d=2");
  control(dir, "pause");
  control(dir, "resume");
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, worker, &id), 0);
  pthread_join(t, NULL);
  check_own(dir, 100);
  /* The thread gave its slot back at exit; none other holds it. */
  ck_assert_int_eq(eventring_domain_bind(1), 0);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

/* d=1: the one slot is the main thread's, and the pause is recorded. */
START_TEST(test_one_slot) {
  ER_NEED_TOOL();
  char dir[64];
  int id = start_with(dir, "d=1");
  eventring_write_int(id, 1);
  control(dir, "pause");
  eventring_write_int(id, 2); /* paused: not recorded */
  control(dir, "resume");
  eventring_write_int(id, 3);
  check_own(dir, 2);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

static TCase *tc_slots(void) {
  TCase *tc = er_tcase("slots");
  tcase_add_test(tc, test_two_slots);
  tcase_add_test(tc, test_one_slot);
  return tc;
}

ER_TEST_MAIN("remote control and domain slots", tc_slots)
