/* Tests that pause and resume stop and restart recording, each logged exactly once. */
#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

static int is_lifecycle(const struct rf_event *e, unsigned kind) {
  return !e->is_user && e->type == ER_EV_LIFECYCLE && e->id == kind;
}

START_TEST(test_pause_before_start) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1); /* read at start */
  /* Not started: both do nothing, and nothing is carried over. */
  eventring_pause();
  eventring_pause();
  ck_assert_int_eq(eventring_is_active(), 0);
  eventring_resume();
  ck_assert_int_eq(eventring_is_active(), 0);
  eventring_pause();
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_is_active(), 1);
  eventring_begin(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), 0);
  /* After the stop: again nothing, and no crash. */
  eventring_pause();
  eventring_resume();
  ck_assert_int_eq(eventring_is_active(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, 3);
  ck_assert(is_lifecycle(&r->events[0], EVENTRING_LIFECYCLE_RING_START));
  ck_assert_uint_eq(r->events[1].type, ER_EV_BEGIN);
  ck_assert(is_lifecycle(&r->events[2], EVENTRING_LIFECYCLE_RING_STOP));
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_RING_PAUSE), 0);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_paused_events_absent) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1); /* read at start */
  int u = eventring_register("pr.int", EVENTRING_TYPE_INT);
  int c = eventring_register("pr.custom", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_is_active(), 1);
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_write_int(u, 1);

  eventring_pause();
  ck_assert_int_eq(eventring_is_active(), 0);
  eventring_pause();
  eventring_pause();
  ck_assert_int_eq(eventring_is_active(), 0);
  eventring_begin(EVENTRING_PHASE_MAJOR);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 5);
  eventring_lifecycle(EVENTRING_LIFECYCLE_FORK_PARENT, 9);
  eventring_write_int(u, 2);
  eventring_write_unit(u);
  eventring_write_span(u, 0);
  ck_assert_int_eq(eventring_write_custom(c, "paused", 6), 0);
  eventring_end(EVENTRING_PHASE_MAJOR);

  eventring_resume();
  ck_assert_int_eq(eventring_is_active(), 1);
  eventring_resume();
  ck_assert_int_eq(eventring_is_active(), 1);
  eventring_write_int(u, 3);
  eventring_end(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, 8);
  const struct rf_event *e = r->events;
  ck_assert(is_lifecycle(&e[0], EVENTRING_LIFECYCLE_RING_START));
  ck_assert(e[1].type == ER_EV_BEGIN && e[1].id == EVENTRING_PHASE_MINOR);
  ck_assert(e[2].is_user && e[2].payload[0] == 1);
  ck_assert(is_lifecycle(&e[3], EVENTRING_LIFECYCLE_RING_PAUSE));
  ck_assert_uint_eq(e[3].len, 3);
  ck_assert(is_lifecycle(&e[4], EVENTRING_LIFECYCLE_RING_RESUME));
  ck_assert_uint_eq(e[4].len, 3);
  ck_assert(e[5].is_user && e[5].payload[0] == 3);
  ck_assert(e[6].type == ER_EV_END && e[6].id == EVENTRING_PHASE_MINOR);
  ck_assert(is_lifecycle(&e[7], EVENTRING_LIFECYCLE_RING_STOP));
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_BEGIN,
                             EVENTRING_PHASE_MAJOR), 0);
  ck_assert_uint_eq(rf_count(&f, -1, 1, ER_UEV_CUSTOM, -1), 0);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

/* Several pause/resume rounds each log one pair, in order. */
START_TEST(test_rounds) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1); /* read at start */
  ck_assert_int_eq(eventring_start(), 0);
  for (int i = 0; i < 5; i++) {
    eventring_resume(); /* already running: nothing */
    eventring_pause();
    eventring_pause();
    eventring_resume();
  }
  ck_assert_int_eq(eventring_stop(), 0);
  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, 2 + 10);
  for (int i = 0; i < 5; i++) {
    ck_assert(is_lifecycle(&r->events[1 + 2 * i],
                           EVENTRING_LIFECYCLE_RING_PAUSE));
    ck_assert(is_lifecycle(&r->events[2 + 2 * i],
                           EVENTRING_LIFECYCLE_RING_RESUME));
  }
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

/* Stopping while paused still closes the file with ring_stop. */
START_TEST(test_stop_while_paused) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1); /* read at start */
  ck_assert_int_eq(eventring_start(), 0);
  eventring_pause();
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_int_eq(eventring_is_active(), 0);
  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, 3);
  ck_assert(is_lifecycle(&r->events[1], EVENTRING_LIFECYCLE_RING_PAUSE));
  ck_assert(is_lifecycle(&r->events[2], EVENTRING_LIFECYCLE_RING_STOP));
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_pause(void) {
  TCase *tc = er_tcase("pause");
  tcase_add_test(tc, test_pause_before_start);
  tcase_add_test(tc, test_paused_events_absent);
  tcase_add_test(tc, test_rounds);
  tcase_add_test(tc, test_stop_while_paused);
  return tc;
}

ER_TEST_MAIN("pause_resume", tc_pause)
