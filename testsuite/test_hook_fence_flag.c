/* After membarrier(2) fails while probes are held off, the probes let in again fence themselves: the flag word says so, and their events are written. */
/* eventring__on is the probes' one flag word (stw.h, THE FLAG WORD):
 * ER_ON_OPEN alone lets a probe in on its fast path, with no fence;
 * ER_ON_FENCE beside it sends every probe the whole way, which fences
 * and loads the word again.  The failure is forced with the stopper's
 * test hook while remote control holds probes off for a pause; the
 * resume that follows must let probes in with ER_ON_FENCE, and a begin
 * and an end written then must reach the ring. */
#include <linux/membarrier.h>
#include <sys/syscall.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "remote.h"
#include "ring_format.h"
#include "stw.h"

static int fail_barrier;

static int hook(enum er_hook h) {
  return h == ER_HOOK_STOP_MEMBARRIER && fail_barrier;
}

START_TEST(test_probes_fence_after_a_failed_barrier) {
  long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds <= 0 || !(cmds & (MEMBARRIER_CMD_PRIVATE_EXPEDITED |
                             MEMBARRIER_CMD_GLOBAL)))
    ER_SKIP("membarrier(2) is not available: probes always fence");
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  er_test_hook = hook;
  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  ck_assert_int_eq(__atomic_load_n(&eventring__on, __ATOMIC_RELAXED),
                   ER_ON_OPEN);
  eventring_begin(EVENTRING_PHASE_MINOR);

  /* A pause by remote control holds probes off with the stopper's
   * barrier, which fails; the resume's own barrier works. */
  fail_barrier = 1;
  er_lock();
  er_remote_pause_locked();
  er_unlock();
  fail_barrier = 0;
  ck_assert_int_eq(__atomic_load_n(&eventring__on, __ATOMIC_RELAXED), 0);
  er_lock();
  er_remote_resume_locked();
  er_unlock();
  ck_assert_int_eq(__atomic_load_n(&eventring__on, __ATOMIC_RELAXED),
                   ER_ON_OPEN | ER_ON_FENCE);
  ck_assert_int_eq(eventring_is_active(), 1);

  eventring_begin(EVENTRING_PHASE_MAJOR);
  eventring_end(EVENTRING_PHASE_MAJOR);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 7);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_BEGIN, EVENTRING_PHASE_MINOR),
                    1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_BEGIN, EVENTRING_PHASE_MAJOR),
                    1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_END, EVENTRING_PHASE_MAJOR), 1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_COUNTER,
                             EVENTRING_COUNTER_MINOR_PROMOTED),
                    1);
  rf_close(&f);
  free(path);
}
END_TEST

static TCase *tc_fence_flag(void) {
  TCase *tc = er_tcase("fence_flag");
  tcase_add_test(tc, test_probes_fence_after_a_failed_barrier);
  return tc;
}

ER_TEST_MAIN("hook_fence_flag", tc_fence_flag)
