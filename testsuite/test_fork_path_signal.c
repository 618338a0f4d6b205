/* eventring_path() from a signal handler, in a forked child whose file is
 * not made yet: the handler interrupted its own thread while that thread
 * held the library's lock to make the file.  The path must not wait for
 * the lock (it would wait for ever) and must not make the file; the
 * interrupted first event makes it.  The signal is raised at a chosen
 * point: from the pthread_sigmask() call with which the file's maker
 * blocks signals, after it took the lock, before signals are blocked. */
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "testlib.h"

/* 1 in the child until the first pthread_sigmask() call, which raises
 * SIGUSR1 before doing its work. */
static volatile sig_atomic_t armed;
static volatile sig_atomic_t handler_ran;
static volatile sig_atomic_t handler_saw_path;

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  static int (*real)(int, const sigset_t *, sigset_t *);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "pthread_sigmask");
  if (armed) {
    armed = 0;
    raise(SIGUSR1);
  }
  return real(how, set, old);
}

static void on_usr1(int sig) {
  (void)sig;
  handler_saw_path = eventring_path() != NULL;
  handler_ran = 1;
}

START_TEST(test_path_in_handler_while_making_file) {
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  const char *dir = er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  fflush(stdout);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0) _exit(2);
    /* Only a first event makes the file, so this one takes the lock. */
    armed = 1;
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_end(EVENTRING_PHASE_MINOR);
    if (!handler_ran) _exit(3);
    /* The handler came before the file was made. */
    if (handler_saw_path) _exit(4);
    const char *path = eventring_path();
    if (!path || access(path, F_OK) != 0) _exit(5);
    _exit(eventring_stop() == 0 ? 0 : 6);
  }
  int status = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "child status 0x%x (killed: it waited for its own lock)",
                status);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_path(void) {
  TCase *tc = er_tcase("path");
  tcase_add_test(tc, test_path_in_handler_while_making_file);
  return tc;
}

ER_TEST_MAIN("fork_path_signal", tc_path)
