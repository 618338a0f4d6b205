/* A probe in a signal handler that interrupts its own thread while that thread holds the library's lock without a slot drops and counts its event instead of deadlocking. */
/* The interleavings are forced, not hoped for.  This program defines
 * posix_fallocate() and pthread_setspecific(), which the library (linked
 * statically) calls with its lock held: on a thread that armed it, each
 * raises a signal at itself at that very point, and the handler runs a
 * probe.  posix_fallocate() is where a thread's first event reserves its
 * ring, where eventring_register() reserves a name's page and where
 * eventring_start() reserves the file's headers; pthread_setspecific(...,
 * NULL) is where a thread leaving its slot, at exit or by
 * eventring_domain_release(), is already without one.  Before the fix,
 * each of these hung: the handler's probe waited for the lock its own
 * thread held. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "rtlib.h"

/* The signal to raise at the armed point, on this thread only; 0 when
 * disarmed.  Each arming fires once. */
static __thread int arm_fallocate, arm_release;
static volatile sig_atomic_t handled;

static void handler(int sig) {
  (void)sig;
  handled++;
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 99);
}

int posix_fallocate(int fd, off_t off, off_t len) {
  int sig = arm_fallocate;
  arm_fallocate = 0;
  if (sig) raise(sig);
  /* The real call, without going through libc's symbol we replaced. */
  if (syscall(SYS_fallocate, fd, 0, off, len) == 0) return 0;
  return errno;
}

/* Not instrumented by ThreadSanitizer, whose runtime calls this before
 * the thread it creates is ready to be instrumented. */
__attribute__((no_sanitize_thread))
int pthread_setspecific(pthread_key_t key, const void *value) {
  static int (*real)(pthread_key_t, const void *);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "pthread_setspecific");
  int sig = arm_release;
  if (sig && !value) {
    arm_release = 0;
    raise(sig);
  }
  return real(key, value);
}

static void install(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  ck_assert_int_eq(sigaction(sig, &sa, NULL), 0);
}

/* Runs fn(arg) on a new thread and joins it, or ends the test process
 * when it is still running after ten seconds: it is then deadlocked with
 * the library's lock held, and neither Check's exit nor the library's
 * destructor could finish. */
static void run_or_die(void *(*fn)(void *), void *arg, const char *what) {
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, fn, arg), 0);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  if (pthread_timedjoin_np(th, NULL, &until) != 0) {
    fprintf(stderr, "FAIL: %s: the thread is still blocked after 10 s "
            "(a probe in a signal handler waits for its own thread's "
            "lock)\n", what);
    _exit(3);
  }
}

static char *start_preserved(void) {
  er_tmpdir();
  return er_start_preserved(NULL);
}

/* Stops tracing and returns the file's extension DROPPED word. */
static uint64_t stop_and_dropped(char *path, struct rf_file *f) {
  ck_assert_int_eq(eventring_stop(), 0);
  er_open_ring(path, f);
  ck_assert(f->has_ext);
  return f->ext[ER_EXT_DROPPED];
}

static void *first_event(void *arg) {
  (void)arg;
  arm_fallocate = SIGUSR1;
  /* The thread's first event takes a slot and reserves its ring. */
  eventring_counter(EVENTRING_COUNTER_MINOR_ALLOCATED, 7);
  return NULL;
}

START_TEST(test_signal_during_first_event) {
  install(SIGUSR1);
  char *path = start_preserved();
  run_or_die(first_event, NULL, "signal during a thread's first event");
  ck_assert_int_eq(handled, 1);
  struct rf_file f;
  /* The handler's event could not take a slot without waiting: dropped
   * and counted; the event it interrupted is written in the new slot. */
  ck_assert_uint_eq(stop_and_dropped(path, &f), 1);
  ck_assert_uint_eq(rf_count(&f, 1, 0, ER_EV_COUNTER,
                             EVENTRING_COUNTER_MINOR_ALLOCATED), 1);
  ck_assert_uint_eq(rf_count(&f, 1, 0, ER_EV_COUNTER,
                             EVENTRING_COUNTER_MINOR_PROMOTED), 0);
  rf_close(&f);
  free(path);
}
END_TEST

static void *do_register(void *arg) {
  arm_fallocate = SIGALRM;
  *(int *)arg = eventring_register("slotless.registered", EVENTRING_TYPE_UNIT);
  return NULL;
}

START_TEST(test_signal_during_register) {
  install(SIGALRM);
  char *path = start_preserved();
  int id = -100;
  run_or_die(do_register, &id,
             "signal during eventring_register on a slotless thread");
  ck_assert_int_ge(id, 0);
  ck_assert_int_eq(handled, 1);
  struct rf_file f;
  ck_assert_uint_eq(stop_and_dropped(path, &f), 1);
  ck_assert_str_eq(rf_user_name(&f, (unsigned)id), "slotless.registered");
  rf_close(&f);
  free(path);
}
END_TEST

static void *do_start(void *arg) {
  arm_fallocate = SIGALRM;
  *(int *)arg = eventring_start();
  return NULL;
}

START_TEST(test_signal_during_start) {
  install(SIGALRM);
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  int r = -100;
  run_or_die(do_start, &r,
             "signal during eventring_start on a slotless thread");
  ck_assert_int_eq(r, 0);
  ck_assert_int_eq(handled, 1);
  char *path = strdup(eventring_path());
  struct rf_file f;
  /* The file was not open yet: nothing to write, nothing to count. */
  ck_assert_uint_eq(stop_and_dropped(path, &f), 0);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_COUNTER, -1), 0);
  rf_close(&f);
  free(path);
}
END_TEST

static void *slot_then_exit(void *arg) {
  (void)arg;
  eventring_counter(EVENTRING_COUNTER_MINOR_ALLOCATED, 1);
  ck_assert_int_eq(eventring_domain_id(), 1);
  /* Leaving the slot at thread exit. */
  arm_release = SIGUSR1;
  return NULL;
}

static void *slot_then_release(void *arg) {
  (void)arg;
  eventring_counter(EVENTRING_COUNTER_MINOR_ALLOCATED, 2);
  arm_release = SIGUSR1;
  eventring_domain_release();
  ck_assert_int_eq(eventring_domain_id(), -1);
  return NULL;
}

START_TEST(test_signal_while_leaving_slot) {
  install(SIGUSR1);
  char *path = start_preserved();
  run_or_die(slot_then_exit, NULL,
             "signal while a thread leaves its slot at exit");
  ck_assert_int_eq(handled, 1);
  run_or_die(slot_then_release, NULL, "signal during eventring_domain_release");
  ck_assert_int_eq(handled, 2);
  struct rf_file f;
  ck_assert_uint_eq(stop_and_dropped(path, &f), 2);
  /* Slot 1 was freed by the first thread and taken by the second. */
  ck_assert_uint_eq(rf_count(&f, 1, 0, ER_EV_COUNTER,
                             EVENTRING_COUNTER_MINOR_ALLOCATED), 2);
  rf_close(&f);
  free(path);
}
END_TEST

static TCase *tc_signal(void) {
  TCase *tc = er_tcase("signal_slotless");
  tcase_add_test(tc, test_signal_during_first_event);
  tcase_add_test(tc, test_signal_during_register);
  tcase_add_test(tc, test_signal_during_start);
  tcase_add_test(tc, test_signal_while_leaving_slot);
  return tc;
}

ER_TEST_MAIN("signal_slotless", tc_signal)
