/* The wall clock in ring files: the start pair lies between clock readings taken around the start, the latest pair follows a recalibration (and a step of the wall clock, faked), a torn pair is never read, forked children and snapshots keep the offset (test_dump_time.c: the tools). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"
#include "layout.h"
#include "ring_format.h"
#include "wallclock.h"
#include "writer.h"

/* ------------------------------------------------------------------ */
/* A wall clock the test can step: every clock_gettime() of this
 * program, the library's included (it is linked statically), comes
 * here.  The kernel's clocks are read with the system call itself. */

static int64_t realtime_step; /* added to CLOCK_REALTIME (atomic word) */

int clock_gettime(clockid_t id, struct timespec *ts) {
  long r = syscall(SYS_clock_gettime, id, ts);
  int64_t step = __atomic_load_n(&realtime_step, __ATOMIC_RELAXED);
  if (r == 0 && id == CLOCK_REALTIME && step) {
    int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + step;
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
  }
  return (int)r;
}

static uint64_t ns_now(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int64_t offset_of(const eventring_wallclock *w) {
  return w->wall - (int64_t)w->ts;
}

static eventring_cursor *open_file(const char *path) {
  eventring_cursor *c;
  int r = eventring_cursor_open_file(&c, path);
  ck_assert_msg(r == 0, "open %s: %s", path, eventring_strerror(r));
  return c;
}

static eventring_wallclock pair(const eventring_cursor *c, int which) {
  eventring_wallclock w;
  int r = eventring_cursor_wallclock(c, which, &w);
  ck_assert_msg(r == 0, "eventring_cursor_wallclock(%d): %s", which,
                eventring_strerror(r));
  return w;
}

/* ------------------------------------------------------------------ */
/* The writer.                                                          */

START_TEST(test_start_pair_between_readings) {
  const char *dir = er_tmpdir();
  uint64_t m0 = ns_now(CLOCK_MONOTONIC), r0 = ns_now(CLOCK_REALTIME);
  ck_assert_int_eq(eventring_start(), 0);
  uint64_t r1 = ns_now(CLOCK_REALTIME), m1 = ns_now(CLOCK_MONOTONIC);
  char path[PATH_MAX];
  eventring_cursor *c = open_file(er_ring_path(path, sizeof path, dir));
  eventring_wallclock s = pair(c, EVENTRING_WALLCLOCK_START);
  ck_assert_msg(s.ts >= m0 && s.ts <= m1,
                "start ts %" PRIu64 " outside [%" PRIu64 ", %" PRIu64 "]",
                s.ts, m0, m1);
  ck_assert_msg((uint64_t)s.wall >= r0 && (uint64_t)s.wall <= r1,
                "start wall %" PRId64 " outside [%" PRIu64 ", %" PRIu64 "]",
                s.wall, r0, r1);
  /* Until a recalibration the latest pair is the start pair. */
  eventring_wallclock l = pair(c, EVENTRING_WALLCLOCK_LATEST);
  ck_assert_uint_ge(l.ts, s.ts);
  ck_assert_int_eq(offset_of(&l), offset_of(&s));
  ck_assert_int_eq(eventring_cursor_wallclock(c, 2, &l), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_cursor_wallclock(c, 0, NULL), EVENTRING_E_INVAL);
  eventring_cursor_free(c);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

/* Waits until the next probe must recalibrate the clock: the TSC has
 * gone ER_RECAL_CYCLES past the current parameters' anchor. */
static void await_recalibration(void) {
  struct timespec ms = {0, 10000000};
  /* The first parameters are taken by the first probe past the
   * calibration window (clock.h): only then is there a set to age. */
  if (!er_load_acq(&er_clock_cur)) {
    nanosleep(&ms, NULL);
    (void)er_now();
    ck_assert_uint_ne(er_load_acq(&er_clock_cur), 0);
  }
  uint64_t g = er_load_acq(&er_clock_gen);
  uint64_t tsc0 = er_load_rlx(&er_clock_p[g & 1].tsc0);
  while (__rdtsc() - tsc0 <= ER_RECAL_CYCLES) nanosleep(&ms, NULL);
}

START_TEST(test_recalibration_publishes_pair) {
#ifndef ER_HAVE_TSC
  ER_SKIP("no TSC: timestamps never need recalibrating");
#else
  const char *dir = er_tmpdir();
  unsetenv("OCAML_RUNTIME_EVENTS_CLOCK");
  ck_assert_int_eq(eventring_start(), 0);
  if (!er_iload_rlx(&er_clock_tsc))
    ER_SKIP("timestamps come from clock_gettime() on this machine: the "
            "clock is never recalibrated");
  int id = eventring_register("wall.tick", EVENTRING_TYPE_UNIT);
  ck_assert_int_ge(id, 0);
  char path[PATH_MAX];
  eventring_cursor *c = open_file(er_ring_path(path, sizeof path, dir));
  eventring_wallclock s = pair(c, EVENTRING_WALLCLOCK_START);
  eventring_wallclock l0 = pair(c, EVENTRING_WALLCLOCK_LATEST);

  /* A recalibration with the wall clock as it was: a new pair, the same
   * offset exactly. */
  await_recalibration();
  uint64_t before = ns_now(CLOCK_MONOTONIC);
  eventring_write_unit(id);
  eventring_wallclock l1 = pair(c, EVENTRING_WALLCLOCK_LATEST);
  ck_assert_msg(l1.ts >= before, "no new pair at the recalibration: "
                "latest ts %" PRIu64 ", recalibrated after %" PRIu64,
                l1.ts, before);
  ck_assert_int_eq(offset_of(&l1), offset_of(&l0));

  /* The wall clock steps 5 s ahead: the next recalibration records it;
   * the start pair stays. */
  const int64_t step = INT64_C(5000000000);
  __atomic_store_n(&realtime_step, step, __ATOMIC_RELAXED);
  await_recalibration();
  before = ns_now(CLOCK_MONOTONIC);
  eventring_write_unit(id);
  eventring_wallclock l2 = pair(c, EVENTRING_WALLCLOCK_LATEST);
  __atomic_store_n(&realtime_step, 0, __ATOMIC_RELAXED);
  ck_assert_uint_ge(l2.ts, before);
  int64_t moved = offset_of(&l2) - offset_of(&l1);
  ck_assert_msg(moved > step - 1000000 && moved < step + 1000000,
                "the offset moved by %" PRId64 " ns, not by the 5 s step",
                moved);
  eventring_wallclock s2 = pair(c, EVENTRING_WALLCLOCK_START);
  ck_assert_uint_eq(s2.ts, s.ts);
  ck_assert_int_eq(s2.wall, s.wall);
  eventring_cursor_free(c);
  ck_assert_int_eq(eventring_stop(), 0);
#endif
}
END_TEST

/* A writer stopped between its stores of a slot and of GEN leaves the
 * published pair to readers: they read the slot GEN names, never the one
 * being written. */
START_TEST(test_half_written_slot_unread) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX];
  eventring_cursor *c = open_file(er_ring_path(path, sizeof path, dir));
  eventring_wallclock l = pair(c, EVENTRING_WALLCLOCK_LATEST);
  struct er_layout lay;
  ck_assert_int_eq(
      er_layout_read(&lay, er_st.meta, er_st.ext, er_st.map_bytes), 0);
  uint64_t at = lay.wall_off;
  ck_assert_uint_ne(at, 0);
  uint64_t *w = (uint64_t *)(er_st.map + at);
  uint64_t g = er_load_acq(&w[ER_WALL_GEN]);
  ck_assert_uint_ge(g, 1);
  /* The next slot's timestamp only, as a writer would store it first. */
  er_store_rlx(&w[ER_WALL_SLOTS + 2 * ((g + 1) & 1)], UINT64_C(12345));
  eventring_wallclock m = pair(c, EVENTRING_WALLCLOCK_LATEST);
  ck_assert_uint_eq(m.ts, l.ts);
  ck_assert_int_eq(m.wall, l.wall);
  /* Published: now it is read. */
  er_store_rlx(&w[ER_WALL_SLOTS + 2 * ((g + 1) & 1) + 1], UINT64_C(67890));
  er_store_rel(&w[ER_WALL_GEN], g + 1);
  m = pair(c, EVENTRING_WALLCLOCK_LATEST);
  ck_assert_uint_eq(m.ts, 12345);
  ck_assert_int_eq(m.wall, 67890);
  eventring_cursor_free(c);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

START_TEST(test_fork_child_keeps_offset) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  char ppath[PATH_MAX];
  er_ring_path(ppath, sizeof ppath, dir);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    /* The child has a file of its own, made when it is asked for (or at
     * the child's first event). */
    char cpath[PATH_MAX];
    er_ring_path(cpath, sizeof cpath, dir);
    if (eventring_path() == NULL) _exit(3);
    eventring_cursor *pc, *cc;
    eventring_wallclock p, k;
    if (eventring_cursor_open_file(&pc, ppath) ||
        eventring_cursor_open_file(&cc, cpath) ||
        eventring_cursor_wallclock(pc, EVENTRING_WALLCLOCK_START, &p) ||
        eventring_cursor_wallclock(cc, EVENTRING_WALLCLOCK_START, &k))
      _exit(2);
    /* Its own pair, taken at its start, with the parent's offset. */
    _exit(k.ts > p.ts && offset_of(&k) == offset_of(&p) ? 0 : 1);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "the child's file does not map timestamps to the parent's "
                "wall time (status %d)", status);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

START_TEST(test_snapshot_keeps_pairs) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  int id = eventring_register("wall.snap", EVENTRING_TYPE_INT);
  eventring_write_int(id, 1);
  char path[PATH_MAX], snap[PATH_MAX];
  snprintf(snap, sizeof snap, "%s/snap.events", dir);
  ck_assert_int_eq(eventring_snapshot(snap), 0);
  eventring_cursor *c = open_file(er_ring_path(path, sizeof path, dir));
  eventring_cursor *sc = open_file(snap);
  for (int which = 0; which < 2; which++) {
    eventring_wallclock a = pair(c, which), b = pair(sc, which);
    ck_assert_uint_eq(a.ts, b.ts);
    ck_assert_int_eq(a.wall, b.wall);
  }
  eventring_cursor_free(sc);
  eventring_cursor_free(c);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

static TCase *tc_writer(void) {
  TCase *tc = er_tcase("writer");
  tcase_add_test(tc, test_start_pair_between_readings);
  tcase_add_test(tc, test_recalibration_publishes_pair);
  tcase_add_test(tc, test_half_written_slot_unread);
  tcase_add_test(tc, test_fork_child_keeps_offset);
  tcase_add_test(tc, test_snapshot_keeps_pairs);
  return tc;
}

ER_TEST_MAIN("wallclock", tc_writer)
