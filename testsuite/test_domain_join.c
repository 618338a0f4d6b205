/* Threads joined to one slot (eventring_domain_join) share its ring under the host's lock. */
#include <pthread.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "ringfile.h"
#include "rtlib.h"

#define NTHREADS 4
#define PER_THREAD 500

/* Stands for the host runtime's lock (OCaml 4's master lock): joined
 * threads only emit while they hold it. */
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static int seq_id;

static void *joined_writer(void *arg) {
  long t = (long)arg;
  ck_assert_int_eq(eventring_domain_join(0), 0);
  ck_assert_int_eq(eventring_domain_id(), 0);
  for (int i = 0; i < PER_THREAD; i++) {
    pthread_mutex_lock(&host_lock);
    eventring_write_int(seq_id, t * 100000 + i);
    pthread_mutex_unlock(&host_lock);
  }
  /* Leaving happens under the lock too, as a host would. */
  pthread_mutex_lock(&host_lock);
  eventring_domain_release();
  pthread_mutex_unlock(&host_lock);
  return NULL;
}

static char *start_preserved(void) {
  er_tmpdir();
  seq_id = eventring_register("join.seq", EVENTRING_TYPE_INT);
  ck_assert_int_ge(seq_id, 0);
  /* As an OCaml 4 host does: the main thread joins slot 0 before tracing
   * starts, and the other threads join it later. */
  ck_assert_int_eq(eventring_domain_join(0), 0);
  return er_start_preserved(NULL);
}

START_TEST(test_joined_threads_share_ring) {
  char *path = start_preserved();
  pthread_t th[NTHREADS];
  for (long t = 0; t < NTHREADS; t++)
    ck_assert_int_eq(pthread_create(&th[t], NULL, joined_writer, (void *)t), 0);
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  /* The main thread still holds the slot: ring_stop goes there too. */
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_domain_release();
  ck_assert_int_eq(eventring_domain_id(), -1);

  struct rf_file f;
  er_open_ring(path, &f);
  /* Every joined thread's events are in ring 0, each thread's in order. */
  ck_assert_uint_eq(rf_count(&f, 0, 1, ER_UEV_INT, seq_id),
                    NTHREADS * PER_THREAD);
  ck_assert_uint_eq(rf_count(&f, -1, 1, ER_UEV_INT, seq_id),
                    NTHREADS * PER_THREAD);
  long last[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) last[t] = -1;
  const struct rf_ring *r = &f.rings[0];
  for (size_t i = 0; i < r->nevents; i++) {
    const struct rf_event *e = &r->events[i];
    if (!e->is_user) continue;
    long v = (long)e->payload[0];
    long t = v / 100000, n = v % 100000;
    ck_assert(t >= 0 && t < NTHREADS);
    ck_assert_int_eq(n, last[t] + 1);
    last[t] = n;
  }
  /* Threads leaving a slot that others still hold write no
   * domain_terminate; the ring begins with ring_start (the starter's ring
   * has no domain_spawn) and ends with ring_stop. */
  ck_assert(!r->events[0].is_user && r->events[0].type == ER_EV_LIFECYCLE &&
            r->events[0].id == EVENTRING_LIFECYCLE_RING_START);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_DOMAIN_SPAWN), 0);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_DOMAIN_TERMINATE), 0);
  const struct rf_event *last_ev = &r->events[r->nevents - 1];
  ck_assert(!last_ev->is_user && last_ev->type == ER_EV_LIFECYCLE &&
            last_ev->id == EVENTRING_LIFECYCLE_RING_STOP);
  ck_assert_uint_eq(r->written - r->evicted, r->nevents);
  rf_close(&f);
  free(path);
}
END_TEST

static void *try_bind0(void *arg) {
  *(int *)arg = eventring_domain_bind(0);
  return NULL;
}

static void *try_join0(void *arg) {
  *(int *)arg = eventring_domain_join(0);
  return NULL;
}

static void *try_join1(void *arg) {
  *(int *)arg = eventring_domain_join(1);
  return NULL;
}

START_TEST(test_sole_holder_opens_its_slot) {
  char *path = start_preserved();
  eventring_domain_release();
  /* As after a start from the environment: the main thread holds slot 0
   * alone, then joins it, and other threads can join too. */
  ck_assert_int_eq(eventring_domain_bind(0), 0);
  ck_assert_int_eq(eventring_domain_join(0), 0);
  ck_assert_int_eq(eventring_domain_id(), 0);
  int rc = 1;
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, try_join0, &rc), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(eventring_stop(), 0);
  /* No domain_terminate / domain_spawn pair came from opening the slot. */
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_DOMAIN_SPAWN), 1);
  rf_close(&f);
  free(path);
}
END_TEST

START_TEST(test_join_and_bind_exclude_each_other) {
  char *path = start_preserved();
  eventring_domain_release();
  ck_assert_int_eq(eventring_domain_bind(1), 0);
  /* Slot 1 is bound (exclusively) by this thread: joining it is refused. */
  int rc = 1;
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, try_join1, &rc), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(rc, EVENTRING_E_BUSY);

  /* Slot 0 joined by this thread: binding it from another is refused. */
  ck_assert_int_eq(eventring_domain_join(0), 0);
  ck_assert_int_eq(eventring_domain_id(), 0);
  rc = 1;
  ck_assert_int_eq(pthread_create(&th, NULL, try_bind0, &rc), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(rc, EVENTRING_E_BUSY);
  /* Joining again is a no-op; binding the slot one has joined is not
   * allowed to turn it exclusive. */
  ck_assert_int_eq(eventring_domain_join(0), 0);
  ck_assert_int_eq(eventring_domain_bind(0), EVENTRING_E_BUSY);
  ck_assert_int_eq(eventring_domain_join(-1), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_domain_join(1 << 20), EVENTRING_E_INVAL);
  eventring_domain_release();
  ck_assert_int_eq(eventring_domain_id(), -1);
  ck_assert_int_eq(eventring_stop(), 0);
  /* Slot 0 was left twice by its last (only) holder: once after start,
   * once after the join above; each wrote domain_terminate there. */
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_DOMAIN_TERMINATE), 2);
  rf_close(&f);
  free(path);
}
END_TEST

static TCase *tc_join(void) {
  TCase *tc = er_tcase("join");
  tcase_add_test(tc, test_joined_threads_share_ring);
  tcase_add_test(tc, test_sole_holder_opens_its_slot);
  tcase_add_test(tc, test_join_and_bind_exclude_each_other);
  return tc;
}

ER_TEST_MAIN("domain_join", tc_join)
