/* Tests that eventring_stop() returns after the owner cut the ring file under the remote-control watcher asleep on it: grown back before the SIGBUS handler looked, the file stays mapped as the file; when the handler must put anonymous memory in its place, the watcher's sleep still ends. */
/* Each interleaving is forced (ER_TEST_HOOKS, Makefile.in): the watcher is
 * seen asleep in futex(2) on its request word (/proc/self/task/T/syscall)
 * before the cut, and the file is grown back from inside the handler,
 * between the fault and its look at the file, as a second faulting thread
 * or the owner would. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "ring_format.h"
#include "testlib.h"

/* Written before the hook is armed, read in the signal handler. */
static int regrow_fd = -1;
static off_t regrow_size;
static volatile sig_atomic_t regrow_armed, hook_ran;

static int hook(enum er_hook h) {
  if (h == ER_HOOK_SIGBUS_REPAIR && regrow_armed) {
    regrow_armed = 0;
    /* ftruncate(2) is async-signal-safe. */
    if (ftruncate(regrow_fd, regrow_size) == 0) hook_ran = 1;
  }
  return 0;
}

/* Waits (bounded) until some thread of this process sleeps in futex(2) on
 * `word`: the watcher, in the wait that a replaced page would strand. */
static void wait_asleep_on(const int *word) {
  char want[64];
  snprintf(want, sizeof want, "%ld 0x%lx ", (long)SYS_futex,
           (unsigned long)(uintptr_t)word);
  double give_up = er_now() + ER_RUN_TIMEOUT;
  while (er_now() < give_up) {
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      char p[PATH_MAX], buf[256] = "";
      snprintf(p, sizeof p, "/proc/self/task/%s/syscall", e->d_name);
      int fd = open(p, O_RDONLY);
      if (fd < 0) continue;
      ssize_t n = read(fd, buf, sizeof buf - 1);
      close(fd);
      if (n > 0 && strncmp(buf, want, strlen(want)) == 0) found = 1;
    }
    closedir(d);
    if (found) return;
    er_sleep_ms(1);
  }
  ck_abort_msg("the control thread never slept on its request word");
}

static volatile int stop_result = 1;
static volatile int stop_done;

static void *stopper(void *arg) {
  (void)arg;
  stop_result = eventring_stop();
  __atomic_store_n(&stop_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* eventring_stop() in another thread, waited for at most ER_RUN_TIMEOUT:
 * a stop that never returns fails the test instead of hanging it. */
static void stop_bounded(void) {
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, stopper, NULL), 0);
  double give_up = er_now() + ER_RUN_TIMEOUT;
  while (!__atomic_load_n(&stop_done, __ATOMIC_ACQUIRE) && er_now() < give_up)
    er_sleep_ms(5);
  ck_assert_msg(__atomic_load_n(&stop_done, __ATOMIC_ACQUIRE),
                "eventring_stop() did not return: the control thread missed "
                "its wake-up");
  pthread_join(th, NULL);
  ck_assert_int_eq(stop_result, 0);
}

/* Starts tracing and waits for the watcher to sleep on the file's
 * request word; returns the file's path (static) and size. */
static const char *start_watched(off_t *size) {
  static char path[PATH_MAX];
  if (er_tracing_off()) return NULL;
  er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  snprintf(path, sizeof path, "%s", eventring_path());
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  *size = st.st_size;
  wait_asleep_on((int *)&er_st.ext[ER_EXT_CTL_REQ]);
  return path;
}

/* The soak's hang: the file is whole again when the handler looks (the
 * owner grew it back, or another thread's fault did), so retrying the
 * store is enough.  Before the fix the handler put anonymous memory over
 * the mapping: the watcher slept on the file's page while the stop woke
 * the anonymous one, and the stop never returned. */
START_TEST(test_regrown_before_the_handler_looks) {
  er_test_hook = hook;
  off_t size;
  const char *path = start_watched(&size);
  if (!path) ER_SKIP("a build without tracing");
  regrow_fd = open(path, O_RDWR);
  ck_assert_int_ge(regrow_fd, 0);
  regrow_size = size;
  ck_assert_int_eq(truncate(path, 0), 0);
  struct er_capture cap;
  er_stderr_begin(&cap);
  regrow_armed = 1;
  eventring_begin(EVENTRING_PHASE_MAJOR);
  char *err = er_stderr_end(&cap);
  ck_assert_msg(hook_ran, "no fault reached the handler");
  ck_assert_ptr_nonnull(strstr(err, "was truncated while the program ran"));
  free(err);
  /* The mapping is still the file's: a store into it is in the file. */
  uint64_t *word = &er_st.ext[ER_EXT_DROPPED];
  __atomic_store_n(word, UINT64_C(0x5eed), __ATOMIC_RELAXED);
  uint64_t seen = 0;
  off_t off = (off_t)((unsigned char *)word - er_st.map);
  ck_assert_int_eq(pread(regrow_fd, &seen, 8, off), 8);
  ck_assert_msg(seen == 0x5eed,
                "the mapping no longer shows the file (read %#llx)",
                (unsigned long long)seen);
  stop_bounded();
  close(regrow_fd);
}
END_TEST

/* When the file cannot be grown back (here RLIMIT_FSIZE, lowered below its
 * size after it was made), the handler must replace the mapping, the page
 * the watcher sleeps on included; the stop must still end its sleep. */
START_TEST(test_replaced_under_the_sleeping_watcher) {
  off_t size;
  const char *path = start_watched(&size);
  if (!path) ER_SKIP("a build without tracing");
  /* Any write past the limit would raise SIGXFSZ; this test makes none,
   * and ignoring the signal turns a mistake into an error, not a death. */
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit fsize;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &fsize), 0);
  fsize.rlim_cur = (rlim_t)size / 2;
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &fsize), 0);
  ck_assert_int_eq(truncate(path, 0), 0);
  struct er_capture cap;
  er_stderr_begin(&cap);
  eventring_begin(EVENTRING_PHASE_MAJOR);
  char *err = er_stderr_end(&cap);
  ck_assert_ptr_nonnull(strstr(err, "was truncated while the program ran"));
  free(err);
  /* The store went to anonymous memory: the file did not grow. */
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(st.st_size, 0);
  stop_bounded();
}
END_TEST

static TCase *tc_cut_stop(void) {
  TCase *tc = er_tcase("cut_stop");
  tcase_add_test(tc, test_regrown_before_the_handler_looks);
  tcase_add_test(tc, test_replaced_under_the_sleeping_watcher);
  return tc;
}

ER_TEST_MAIN("hook_cut_stop", tc_cut_stop)
