/* An OCaml thread refused domain slot 0 (d=1, another thread bound it) asks once: its later events neither retry the join nor wait for the control lock, until a slot frees. */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "ocaml_bridge.h"
#include "testlib.h"

/* How long the main thread lets the refused thread try while it holds
 * the control lock: a bound on an answer that takes microseconds, not a
 * timing (a retry would wait for the lock as long as it is held). */
#define ANSWER_BOUND_S 5.0

static sem_t go, asked;
static atomic_int answered;
static int first, second, third, third_id;
static int val_id;

/* An OCaml thread: its first event asks for slot 0; the next ones, with
 * the control lock held by another thread, must not ask again. */
static void *ocaml_thread(void *arg) {
  (void)arg;
  first = eventring__ocaml_join0();
  /* Its event: no slot of its own with d=1, so dropped and counted (and
   * the runtime remembers that too). */
  eventring_write_int(val_id, 0);
  sem_post(&asked);
  sem_wait(&go); /* the main thread holds er_st.lock now */
  second = eventring__ocaml_join0();
  /* A probe of the bindings: join, then the event. */
  (void)eventring__ocaml_join0();
  eventring_write_int(val_id, 1);
  atomic_store(&answered, 1);
  sem_post(&asked);
  sem_wait(&go); /* slot 0 is free now */
  third = eventring__ocaml_join0();
  third_id = eventring_domain_id();
  return NULL;
}

START_TEST(test_failed_join_is_remembered) {
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1), 0);
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "d=1", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  val_id = eventring_register("join.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(val_id, 0);
  /* This thread (not an OCaml thread here) keeps slot 0 for itself. */
  ck_assert_int_eq(eventring_domain_bind(0), 0);
  sem_init(&go, 0, 0);
  sem_init(&asked, 0, 0);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, ocaml_thread, NULL), 0);
  sem_wait(&asked);
  ck_assert_int_eq(first, EVENTRING_E_BUSY);

  pthread_mutex_lock(&er_st.lock);
  sem_post(&go);
  double end = er_now() + ANSWER_BOUND_S;
  while (!atomic_load(&answered) && er_now() < end) er_sleep_ms(1);
  int in_time = atomic_load(&answered);
  pthread_mutex_unlock(&er_st.lock);
  sem_wait(&asked);
  ck_assert_msg(in_time, "the refused thread asked for slot 0 again and "
                         "waited for the control lock");
  ck_assert_int_eq(second, EVENTRING_E_BUSY);

  /* The slot frees: the next ask gets it. */
  eventring_domain_release();
  sem_post(&go);
  pthread_join(th, NULL);
  ck_assert_int_eq(third, 0);
  ck_assert_int_eq(third_id, 0);
  eventring_stop();
}
END_TEST

static TCase *tc_join(void) {
  TCase *tc = er_tcase("join");
  tcase_add_test(tc, test_failed_join_is_remembered);
  return tc;
}

ER_TEST_MAIN("i_ocaml_join", tc_join)
