/* A fork while another thread recalibrates the clock leaves the child able to recalibrate (not on the slow clock path for good). */
/* The fork is forced into the recalibration with the test hook
 * (ER_TEST_HOOKS, Makefile.in): a thread holds the recalibration, blocked
 * in the hook, while the main thread forks.  The child then asks for a
 * recalibration itself, as its first probe past ER_RECAL_CYCLES would,
 * and must publish a new set of clock parameters. */
#include <pthread.h>
#include <semaphore.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "writer.h"

static sem_t holding, release;
static __thread int hold_here;

static int hook(enum er_hook h) {
  if (h == ER_HOOK_RECALIBRATING && hold_here) {
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
  sem_init(&holding, 0, 0);
  sem_init(&release, 0, 0);
  er_test_hook = hook;
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, recalibrate, NULL), 0);
  while (sem_wait(&holding) != 0) continue;

  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
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

static TCase *tc_fork(void) {
  TCase *tc = er_tcase("fork_recal");
  tcase_add_test(tc, test_fork_during_recalibration);
  return tc;
}

ER_TEST_MAIN("hook_fork_recal", tc_fork)
