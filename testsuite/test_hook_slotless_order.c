/* What a slotless thread writes while it is counted in slotless_in happens before the stopper, which saw the count fall to 0, touches the mapping. */
/* The orders involved cannot be seen on x86-64, where every locked
 * read-modify-write is a full barrier; ThreadSanitizer can see the one
 * between the thread's count in the extension block and its leaving
 * (a release, paired with the stopper's acquire load of slotless_in),
 * so this test is meant for the TSan build: the stopper reads the word
 * the thread counted into with a plain load, as munmap() would take it
 * away, and TSan reports a race unless the leaving is a release.  The
 * thread is held inside its count by the test hook (ER_TEST_HOOKS) with
 * relaxed flags only, which order nothing, so that the only order TSan
 * sees between the two threads is the protocol's. */
#include <pthread.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "ring_format.h"
#include "stw.h"

static __thread int hold_here;
static int inside, go; /* relaxed: no order between the threads */

static int hook(enum er_hook h) {
  if (h == ER_HOOK_INSIDE_SLOTLESS && hold_here) {
    hold_here = 0;
    __atomic_store_n(&inside, 1, __ATOMIC_RELAXED);
    while (!__atomic_load_n(&go, __ATOMIC_RELAXED)) continue;
  }
  return 0;
}

static void *slotless(void *arg) {
  (void)arg;
  hold_here = 1;
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 1);
  return NULL;
}

static void *let_go(void *arg) {
  (void)arg;
  __atomic_store_n(&go, 1, __ATOMIC_RELAXED);
  return NULL;
}

START_TEST(test_slotless_count_before_stop) {
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "d=1", 1), 0);
  er_test_hook = hook;
  ck_assert_int_eq(eventring_start(), 0); /* the only slot is ours */
  pthread_t th, helper;
  ck_assert_int_eq(pthread_create(&th, NULL, slotless, NULL), 0);
  while (!__atomic_load_n(&inside, __ATOMIC_RELAXED)) continue;
  ck_assert_int_eq(pthread_create(&helper, NULL, let_go, NULL), 0);

  /* eventring_stop() up to the unmapping: close the world, then read
   * what the thread wrote. */
  er_lock();
  ck_assert_int_eq(er_stw_close(), ER_WORLD_STOPPED);
  uint64_t dropped;
  memcpy(&dropped, &er_st.ext[ER_EXT_DROPPED], sizeof dropped);
  ck_assert_uint_eq(dropped, 1);
  er_stw_open();
  er_unlock();
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(pthread_join(helper, NULL), 0);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

static TCase *tc_order(void) {
  TCase *tc = er_tcase("slotless_order");
  tcase_add_test(tc, test_slotless_count_before_stop);
  return tc;
}

ER_TEST_MAIN("hook_slotless_order", tc_order)
