/* When membarrier(2) fails at a stop, nothing proves that no probe is inside: the mapping stays, and a probe that was inside writes without a fault. */
/* The failure is forced with the stopper's test hook (ER_TEST_HOOKS,
 * Makefile.in).  A probe already past its fence check when the barrier
 * failed cannot be shown on x86-64 (its store of in_probe is never
 * late there), so the test stands in for it: it writes, after the stop,
 * through the pointer such a probe holds. */
#include <linux/membarrier.h>
#include <sys/syscall.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "ring_format.h"

static int fail_barrier;

static int hook(enum er_hook h) {
  return h == ER_HOOK_STOP_MEMBARRIER && fail_barrier;
}

START_TEST(test_mapping_stays_when_membarrier_fails) {
  long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds <= 0 || !(cmds & (MEMBARRIER_CMD_PRIVATE_EXPEDITED |
                             MEMBARRIER_CMD_GLOBAL)))
    ER_SKIP("membarrier(2) is not available: stops never use it");
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  er_test_hook = hook;
  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  uint64_t *ext = er_st.ext;

  fail_barrier = 1;
  struct er_capture c;
  er_stderr_begin(&c);
  ck_assert_int_eq(eventring_stop(), 0);
  char *said = er_stderr_end(&c);
  fail_barrier = 0;
  ck_assert_msg(strstr(said, "membarrier") && strstr(said, "mapped"),
                "stop said: %s", said);
  free(said);

  /* What a probe that was inside would do next: count into the file. */
  __atomic_fetch_add(&ext[ER_EXT_DROPPED], 1, __ATOMIC_RELAXED);
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.ext[ER_EXT_DROPPED], 1);
  rf_close(&f);

  /* With the barrier back, a stop is a stop again. */
  er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  er_stderr_begin(&c);
  ck_assert_int_eq(eventring_stop(), 0);
  said = er_stderr_end(&c);
  ck_assert_msg(said[0] == '\0', "stop said: %s", said);
  free(said);
  free(path);
}
END_TEST

static TCase *tc_membarrier(void) {
  TCase *tc = er_tcase("membarrier");
  tcase_add_test(tc, test_mapping_stays_when_membarrier_fails);
  return tc;
}

ER_TEST_MAIN("hook_membarrier_failure", tc_membarrier)
