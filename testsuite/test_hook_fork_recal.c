/* A fork while another thread recalibrates the clock, or switches it to the TSC, leaves the child able to do it itself (not on the slow clock path, or on clock_gettime(), for good). */
/* The fork is forced into the recalibration or the switch with the test
 * hooks (ER_TEST_HOOKS, Makefile.in): a thread holds it, blocked in the
 * hook, while the main thread forks.  The child then asks for it itself,
 * as its first probe past ER_RECAL_CYCLES (or past the calibration
 * window) would, and must publish a new set of clock parameters. */
#include <pthread.h>
#include <semaphore.h>
#include <sys/wait.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "writer.h"

static sem_t holding, release;
static __thread int hold_here;
static enum er_hook hold_at;
/* Set: the switch to the TSC is the holding thread's alone, however late
 * the other threads' probes come. */
static int others_wait;

static int hook(enum er_hook h) {
  if (h == ER_HOOK_CLOCK_SWITCH && !hold_here &&
      __atomic_load_n(&others_wait, __ATOMIC_SEQ_CST))
    return ER_CLOCK_TEST_LATER;
  if (h == hold_at && hold_here) {
    hold_here = 0;
    sem_post(&holding);
    while (sem_wait(&release) != 0) continue;
  }
  return 0;
}

static void *recalibrate(void *arg) {
  (void)arg;
  hold_here = 1;
  er_clock_slow(__rdtsc());
  return NULL;
}

static void *switch_clock(void *arg) {
  (void)arg;
  hold_here = 1;
  (void)er_now();
  return NULL;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
  while (nanosleep(&ts, &ts) != 0) continue;
}

/* Sleeps past the calibration window, which began before
 * eventring_start() returned. */
static void sleep_past_window(void) {
  sleep_ms((long)(ER_CAL_WINDOW_NS / 1000000) + 1);
}

START_TEST(test_fork_during_recalibration) {
#ifndef ER_HAVE_TSC
  ER_SKIP("no TSC: timestamps never need recalibrating");
#else
  er_tmpdir();
  unsetenv("OCAML_RUNTIME_EVENTS_CLOCK");
  ck_assert_int_eq(eventring_start(), 0);
  if (!er_iload_rlx(&er_clock_tsc))
    ER_SKIP("the kernel does not keep CLOCK_MONOTONIC with an invariant "
            "TSC: timestamps come from clock_gettime()");
  /* The first probe past the calibration window switches to the TSC:
   * there is a set to recalibrate. */
  sleep_past_window();
  (void)er_now();
  ck_assert_uint_ne(er_load_rlx(&er_clock_cur), 0);
  sem_init(&holding, 0, 0);
  sem_init(&release, 0, 0);
  hold_at = ER_HOOK_RECALIBRATING;
  er_test_hook = hook;
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, recalibrate, NULL), 0);
  while (sem_wait(&holding) != 0) continue;

  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    /* Only a set older than ER_RECAL_CYCLES is replaced: wait for that
     * (no time is asserted, the condition is the TSC's). */
    const struct er_clock_params *p =
        (const struct er_clock_params *)(uintptr_t)er_clock_cur;
    while (__rdtsc() - p->tsc0 <= ER_RECAL_CYCLES) sleep_ms(10);
    uint64_t gen = er_load_acq(&er_clock_gen);
    er_clock_slow(__rdtsc());
    _exit(er_load_acq(&er_clock_gen) == gen ? 1 : 0);
  }
  sem_post(&release);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "the child could not recalibrate (status %d): the "
                "parent's recalibration stayed held in it", status);
  ck_assert_int_eq(eventring_stop(), 0);
#endif
}
END_TEST

START_TEST(test_fork_during_switch) {
#ifndef ER_HAVE_TSC
  ER_SKIP("no TSC: timestamps always come from clock_gettime()");
#else
  er_tmpdir();
  unsetenv("OCAML_RUNTIME_EVENTS_CLOCK");
  sem_init(&holding, 0, 0);
  sem_init(&release, 0, 0);
  hold_at = ER_HOOK_CLOCK_SWITCH;
  __atomic_store_n(&others_wait, 1, __ATOMIC_SEQ_CST);
  er_test_hook = hook;
  ck_assert_int_eq(eventring_start(), 0);
  if (!er_iload_rlx(&er_clock_tsc))
    ER_SKIP("the kernel does not keep CLOCK_MONOTONIC with an invariant "
            "TSC: timestamps come from clock_gettime()");
  ck_assert_int_eq(er_iload_rlx(&er_clock_pending), 1);
  sleep_past_window();
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, switch_clock, NULL), 0);
  while (sem_wait(&holding) != 0) continue;

  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    __atomic_store_n(&others_wait, 0, __ATOMIC_SEQ_CST);
    /* The child's first probe is past the window too: it switches, and
     * its timestamps then come from the TSC. */
    uint64_t a = er_clock_monotonic();
    (void)er_now();
    if (er_load_acq(&er_clock_cur) == 0) _exit(1);
    uint64_t x = er_now();
    /* A set anchored at a sample of CLOCK_MONOTONIC, not skewed: the
     * TSC time is past the reading before the switch. */
    _exit(x >= a ? 0 : 2);
  }
  sem_post(&release);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_uint_ne(er_load_rlx(&er_clock_cur), 0);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "the child did not switch to the TSC (status %d): the "
                "parent's switch stayed held in it", status);
  ck_assert_int_eq(eventring_stop(), 0);
#endif
}
END_TEST

static TCase *tc_fork(void) {
  TCase *tc = er_tcase("fork_recal");
  tcase_add_test(tc, test_fork_during_recalibration);
  tcase_add_test(tc, test_fork_during_switch);
  return tc;
}

ER_TEST_MAIN("hook_fork_recal", tc_fork)
