/* Events emitted from signal handlers that interrupt probes are either written whole or counted as dropped. */
#include <signal.h>
#include <sys/time.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

#define MAX_MAIN_EVENTS 200000 /* 600k words: with the handler's, < 2^20 */

static int alarm_id, usr_id, main_id;
/* Set only while tracing is started, so that every invocation counted is
 * one whose event the ring had to take or count as dropped. */
static volatile sig_atomic_t counting;
static unsigned long invocations; /* updated atomically from handlers */

static void handler(int sig) {
  if (!counting) return;
  unsigned long n = __atomic_add_fetch(&invocations, 1, __ATOMIC_RELAXED);
  if (sig == SIGALRM)
    eventring_write_int(alarm_id, (int64_t)n);
  else
    eventring_write_unit(usr_id);
}

static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

START_TEST(test_handler_events_accounted) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  /* A ring large enough that nothing is overwritten, so every event the
   * handler managed to write is still there to count. */
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "e=20", 1), 0);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  alarm_id = eventring_register("signal.alarm", EVENTRING_TYPE_INT);
  usr_id = eventring_register("signal.usr1", EVENTRING_TYPE_UNIT);
  main_id = eventring_register("signal.main", EVENTRING_TYPE_INT);
  ck_assert_int_ge(alarm_id, 0);
  ck_assert_int_ge(usr_id, 0);
  ck_assert_int_ge(main_id, 0);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
  ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);

  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  counting = 1;
  struct itimerval it = {{0, 50}, {0, 50}}; /* as fast as the kernel goes */
  ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);

  /* The main thread writes paced events for about a second, so signals
   * land inside probes as well as between them; every 64th iteration it
   * also raises SIGUSR1 at itself from inside its loop. */
  unsigned long main_events = 0;
  double t0 = seconds_now(), now = t0;
  while (now - t0 < 1.0 && main_events < MAX_MAIN_EVENTS - 2) {
    eventring_write_int(main_id, (int64_t)main_events);
    main_events++;
    if (main_events % 64 == 0) raise(SIGUSR1);
    if (main_events % 16 == 0) {
      eventring_begin(EVENTRING_PHASE_MINOR);
      eventring_end(EVENTRING_PHASE_MINOR);
      main_events += 2;
    }
    /* Pace to about 5 us per event, or the cap comes long before the
     * second is up. */
    do
      now = seconds_now();
    while (now - t0 < main_events * 5e-6 && now - t0 < 1.0);
  }

  struct itimerval off = {{0, 0}, {0, 0}};
  ck_assert_int_eq(setitimer(ITIMER_REAL, &off, NULL), 0);
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGALRM);
  sigaddset(&block, SIGUSR1);
  sigprocmask(SIG_BLOCK, &block, NULL);
  counting = 0;
  unsigned long handled = __atomic_load_n(&invocations, __ATOMIC_RELAXED);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->evicted, 0);
  ck_assert_uint_eq(r->head, 0);
  size_t in_ring = rf_count(&f, 0, 1, ER_UEV_INT, alarm_id) +
                   rf_count(&f, 0, 1, ER_UEV_UNIT, usr_id);
  printf("signal_probe: %lu handler calls, %zu written, %llu dropped, "
         "%lu main events\n", handled, in_ring,
         (unsigned long long)r->dropped, main_events);
  ck_assert_uint_gt(handled, 0);
  ck_assert_uint_eq(r->dropped + in_ring, handled);
  /* Every event the main thread wrote is there: a handler's event may be
   * dropped, never the one it interrupted. */
  ck_assert_uint_eq(rf_count(&f, 0, 1, ER_UEV_INT, main_id) +
                        rf_count(&f, 0, 0, ER_EV_BEGIN, -1) +
                        rf_count(&f, 0, 0, ER_EV_END, -1),
                    main_events);
  /* ring_start, the main thread's, the handlers', ring_stop. */
  ck_assert_uint_eq(r->written, 1 + main_events + in_ring + 1);
  ck_assert_uint_eq(r->written, r->nevents);
  /* The main thread's ints are all there, in order, and the alarm's
   * values (its invocation numbers) only grow. */
  int64_t next_main = 0, last_alarm = 0;
  for (size_t i = 0; i < r->nevents; i++) {
    const struct rf_event *e = &r->events[i];
    if (!e->is_user || e->type != ER_UEV_INT) continue;
    if (e->id == (unsigned)main_id) {
      ck_assert_int_ge((int64_t)e->payload[0], next_main);
      next_main = (int64_t)e->payload[0] + 1;
    } else {
      ck_assert_int_gt((int64_t)e->payload[0], last_alarm);
      last_alarm = (int64_t)e->payload[0];
    }
  }
  for (uint64_t d = 1; d < f.max_domains; d++)
    ck_assert_uint_eq(f.rings[d].nevents, 0);
  rf_close(&f);
  free(path);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_signal(void) {
  TCase *tc = er_tcase("signal");
  tcase_add_test(tc, test_handler_events_accounted);
  return tc;
}

ER_TEST_MAIN("signal_probe", tc_signal)
