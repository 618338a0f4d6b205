/* With every domain slot taken, a further thread's events are dropped and counted exactly. */
#include <pthread.h>
#include <semaphore.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

#define NWORKERS 3
#define PER_THREAD 50

static int val_id;
static pthread_barrier_t all_alive, all_written;
static sem_t first_done[NWORKERS];

struct worker {
  int index;
  int id; /* slot after the first event */
};

static void *worker(void *arg) {
  struct worker *w = arg;
  eventring_write_int(val_id, (int64_t)w->index * 1000);
  w->id = eventring_domain_id();
  sem_post(&first_done[w->index]);
  /* All three stay alive until all have written, so that no slot frees
   * up for the third thread. */
  pthread_barrier_wait(&all_alive);
  for (int s = 1; s < PER_THREAD; s++)
    eventring_write_int(val_id, (int64_t)w->index * 1000 + s);
  pthread_barrier_wait(&all_written);
  return NULL;
}

START_TEST(test_third_thread_dropped) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "d=2", 1), 0);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  val_id = eventring_register("exhaustion.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(val_id, 0);
  /* The starting thread took a slot for ring_start; give it back so the
   * two slots go to the first two workers. */
  ck_assert_int_eq(eventring_domain_id(), 0);
  eventring_domain_release();
  ck_assert_int_eq(eventring_domain_id(), -1);

  pthread_t th[NWORKERS];
  struct worker w[NWORKERS];
  pthread_barrier_init(&all_alive, NULL, NWORKERS);
  pthread_barrier_init(&all_written, NULL, NWORKERS);
  /* Start the workers one after the other, each after the previous one
   * has its slot, so that the one left without a slot is the third. */
  for (int i = 0; i < NWORKERS; i++) {
    sem_init(&first_done[i], 0, 0);
    w[i] = (struct worker){.index = i, .id = -2};
    ck_assert_int_eq(pthread_create(&th[i], NULL, worker, &w[i]), 0);
    sem_wait(&first_done[i]);
  }
  for (int i = 0; i < NWORKERS; i++) pthread_join(th[i], NULL);
  ck_assert_int_eq(eventring_stop(), 0);

  ck_assert_int_eq(w[0].id, 0);
  ck_assert_int_eq(w[1].id, 1);
  ck_assert_int_eq(w[2].id, -1);

  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.max_domains, 2);
  ck_assert(f.has_ext);
  /* Each of the first two workers has all its events, in order, in its
   * own ring; the third has none anywhere. */
  for (int i = 0; i < 2; i++) {
    const struct rf_ring *r = &f.rings[w[i].id];
    int s = 0;
    for (size_t k = 0; k < r->nevents; k++) {
      const struct rf_event *e = &r->events[k];
      if (!e->is_user) continue;
      ck_assert_uint_eq(e->id, (unsigned)val_id);
      ck_assert_int_eq((int64_t)e->payload[0], (int64_t)i * 1000 + s);
      s++;
    }
    ck_assert_int_eq(s, PER_THREAD);
  }
  ck_assert_uint_eq(rf_count(&f, -1, 1, ER_UEV_INT, val_id), 2 * PER_THREAD);
  ck_assert_uint_eq(f.ext[ER_EXT_DROPPED], PER_THREAD);
  /* Lost for want of a slot is not the per-ring DROPPED (signals). */
  ck_assert_uint_eq(f.rings[0].dropped, 0);
  ck_assert_uint_eq(f.rings[1].dropped, 0);
  rf_close(&f);
  free(path);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_exhaustion(void) {
  TCase *tc = er_tcase("exhaustion");
  tcase_add_test(tc, test_third_thread_dropped);
  return tc;
}

ER_TEST_MAIN("domain_exhaustion", tc_exhaustion)
