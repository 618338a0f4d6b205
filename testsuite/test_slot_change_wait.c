/* A thread's first event waits for another thread's slot change (a thread leaving its slot) instead of being dropped. */
/* The interleaving is forced: this program defines pthread_setspecific(),
 * which the library (linked statically) calls with its lock held while a
 * thread leaves its slot.  On the thread that armed it, the call stops
 * there until the test lets it go; meanwhile a new thread makes its first
 * event, which needs the lock to take a slot.  A slot's change waits for
 * nothing, so the newcomer must wait for it; before the fix it was
 * treated as a control path and the newcomer's event was dropped (a
 * program whose threads come and go lost whole bursts of a new thread's
 * events). */
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

static __thread int arm_hold;
static volatile int holding, let_go;

/* Not instrumented by ThreadSanitizer, whose runtime calls this before
 * the thread it creates is ready to be instrumented. */
__attribute__((no_sanitize_thread))
int pthread_setspecific(pthread_key_t key, const void *value) {
  static int (*real)(pthread_key_t, const void *);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "pthread_setspecific");
  if (arm_hold && !value) {
    arm_hold = 0;
    __atomic_store_n(&holding, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 10000 && !__atomic_load_n(&let_go, __ATOMIC_SEQ_CST);
         i++)
      er_sleep_ms(1);
  }
  return real(key, value);
}

static void *leaver(void *arg) {
  (void)arg;
  eventring_counter(EVENTRING_COUNTER_MINOR_ALLOCATED, 1);
  arm_hold = 1;
  eventring_domain_release();
  return NULL;
}

static __thread int is_newcomer;
static int newcomer_waits, newcomer_done;

/* A probe that finds the lock taken yields while it waits for it
 * (domain.c, lock_from_probe): on the newcomer, a yield says it waits
 * rather than dropping its event. */
__attribute__((no_sanitize_thread))
int sched_yield(void) {
  static int (*real)(void);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "sched_yield");
  if (is_newcomer) __atomic_store_n(&newcomer_waits, 1, __ATOMIC_SEQ_CST);
  return real();
}

static void *newcomer(void *arg) {
  (void)arg;
  is_newcomer = 1;
  /* The thread's first event: it takes a slot under the lock. */
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 2);
  __atomic_store_n(&newcomer_done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

/* Waits (bounded) until the newcomer either waits for the lock the
 * leaver holds, or has finished its event without waiting (the checks
 * below then fail). */
static void wait_newcomer(void) {
  double give_up = er_now() + ER_RUN_TIMEOUT;
  while (!__atomic_load_n(&newcomer_waits, __ATOMIC_SEQ_CST) &&
         !__atomic_load_n(&newcomer_done, __ATOMIC_SEQ_CST)) {
    ck_assert_msg(er_now() < give_up, "the newcomer neither ran nor waited");
    er_sleep_ms(1);
  }
}

START_TEST(test_first_event_waits_for_slot_change) {
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  pthread_t a, b;
  ck_assert_int_eq(pthread_create(&a, NULL, leaver, NULL), 0);
  while (!__atomic_load_n(&holding, __ATOMIC_SEQ_CST)) er_sleep_ms(1);
  /* The leaver holds the lock inside its slot change. */
  ck_assert_int_eq(pthread_create(&b, NULL, newcomer, NULL), 0);
  wait_newcomer();
  __atomic_store_n(&let_go, 1, __ATOMIC_SEQ_CST);
  ck_assert_int_eq(pthread_join(a, NULL), 0);
  ck_assert_int_eq(pthread_join(b, NULL), 0);
  ck_assert_int_eq(eventring_stop(), 0);
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert(f.has_ext);
  ck_assert_uint_eq(f.ext[ER_EXT_DROPPED], 0);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_COUNTER,
                             EVENTRING_COUNTER_MINOR_PROMOTED), 1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_COUNTER,
                             EVENTRING_COUNTER_MINOR_ALLOCATED), 1);
  rf_close(&f);
  free(path);
}
END_TEST

static TCase *tc_wait(void) {
  TCase *tc = er_tcase("wait");
  tcase_add_test(tc, test_first_event_waits_for_slot_change);
  return tc;
}

ER_TEST_MAIN("slot_change_wait", tc_wait)
