/* Timestamps never go backwards in a ring across the switch from clock_gettime() to the TSC, even a switch far out of step, and stamps before it are CLOCK_MONOTONIC's own. */
/* The switch is forced between two events of the main thread with the
 * test hook (ER_TEST_HOOKS, Makefile.in): once the calibration window has
 * passed, a second thread enters the switch and is held in the hook
 * (ER_HOOK_CLOCK_SWITCH) with the switch's lock taken, so the main
 * thread's events meanwhile come from clock_gettime() whatever the time;
 * released, the thread publishes a first set that the hook asked to put
 * ER_CLOCK_TEST_SKEW_NS behind CLOCK_MONOTONIC.  The main thread's next
 * events then get TSC times far before its last stamp: the domain's
 * clamp (er_stamp) must hold them at that stamp. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "ringfile.h"
#include "writer.h"

#define BEFORE 4 /* events bracketed by clock_gettime() before the switch */
#define AFTER 3  /* events after it */

static sem_t holding, release;
static __thread int hold_here;

static int hook(enum er_hook h) {
  if (h != ER_HOOK_CLOCK_SWITCH) return 0;
  /* Only the switcher switches, however late the others' probes come
   * (the remote-control thread's, the main thread's). */
  if (!hold_here) return ER_CLOCK_TEST_LATER;
  hold_here = 0;
  sem_post(&holding);
  while (sem_wait(&release) != 0) continue;
  return 1; /* skew the first set */
}

static void *switcher(void *arg) {
  (void)arg;
  hold_here = 1;
  (void)er_now();
  return NULL;
}

/* Sleeps past the calibration window, which began before
 * eventring_start() returned. */
static void sleep_past_window(void) {
  struct timespec ts = {0, (long)(ER_CAL_WINDOW_NS + 1000000)};
  while (nanosleep(&ts, &ts) != 0) continue;
}

START_TEST(test_switch_never_backwards) {
#ifndef ER_HAVE_TSC
  ER_SKIP("no TSC: timestamps always come from clock_gettime()");
#else
  er_tmpdir();
  unsetenv("OCAML_RUNTIME_EVENTS_CLOCK");
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  int id = eventring_register("clock.switch", EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);
  sem_init(&holding, 0, 0);
  sem_init(&release, 0, 0);
  er_test_hook = hook;
  ck_assert_int_eq(eventring_start(), 0);
  if (!er_clock_tsc)
    ER_SKIP("the kernel does not keep CLOCK_MONOTONIC with an invariant "
            "TSC: timestamps come from clock_gettime()");
  /* eventring_start() did not calibrate: it only began to. */
  ck_assert_int_eq(er_iload_rlx(&er_clock_pending), 1);
  ck_assert_uint_eq(er_load_rlx(&er_clock_cur), 0);
  char *path = strdup(eventring_path());

  sleep_past_window();
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, switcher, NULL), 0);
  while (sem_wait(&holding) != 0) continue;

  /* The switch is held: these events are stamped by clock_gettime(), so
   * each lies within the readings around it, exactly. */
  ck_assert_uint_eq(er_load_rlx(&er_clock_cur), 0);
  uint64_t a[BEFORE], b[BEFORE];
  for (int i = 0; i < BEFORE; i++) {
    a[i] = er_clock_monotonic();
    eventring_write_int(id, i);
    b[i] = er_clock_monotonic();
  }

  sem_post(&release);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_uint_ne(er_load_rlx(&er_clock_cur), 0);
  ck_assert_int_eq(er_iload_rlx(&er_clock_pending), 0);
  /* The skew took: the TSC now reads far behind the last stamp, so the
   * events below need the clamp. */
  uint64_t raw = er_now();
  ck_assert_msg(raw < a[BEFORE - 1], "TSC time %llu not behind %llu",
                (unsigned long long)raw, (unsigned long long)a[BEFORE - 1]);
  for (int i = 0; i < AFTER; i++) eventring_write_int(id, BEFORE + i);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  int seen = 0;
  uint64_t last_before = 0;
  for (uint64_t d = 0; d < f.max_domains; d++) {
    const struct rf_ring *r = &f.rings[d];
    for (size_t i = 0; i < r->nevents; i++) {
      const struct rf_event *ev = &r->events[i];
      if (i > 0)
        ck_assert_msg(ev->ts >= r->events[i - 1].ts,
                      "domain %llu: event %zu at %llu after %llu",
                      (unsigned long long)d, i, (unsigned long long)ev->ts,
                      (unsigned long long)r->events[i - 1].ts);
      if (!ev->is_user || ev->id != (unsigned)id) continue;
      int k = (int)ev->payload[0];
      ck_assert_int_eq(k, seen);
      if (k < BEFORE) {
        ck_assert_msg(a[k] <= ev->ts && ev->ts <= b[k],
                      "event %d before the switch at %llu, outside "
                      "clock_gettime()'s [%llu, %llu]", k,
                      (unsigned long long)ev->ts, (unsigned long long)a[k],
                      (unsigned long long)b[k]);
        last_before = ev->ts;
      } else {
        /* Held at the last stamp before the switch. */
        ck_assert_uint_eq(ev->ts, last_before);
      }
      seen++;
    }
  }
  ck_assert_int_eq(seen, BEFORE + AFTER);
  rf_close(&f);
  free(path);
#endif
}
END_TEST

static TCase *tc_switch(void) {
  TCase *tc = er_tcase("clock_switch");
  tcase_add_test(tc, test_switch_never_backwards);
  return tc;
}

ER_TEST_MAIN("hook_clock_switch", tc_switch)
