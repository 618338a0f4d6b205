/* Tests a file size limit (RLIMIT_FSIZE, `ulimit -f`) below the ring file's apparent size: starting fails with EFBIG and leaves no file, no SIGXFSZ reaches the host, whose disposition of it is unchanged, and a program started from the environment runs on untraced. */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "testlib.h"

/* `ulimit -f 10000`: 10,000 blocks of 1 KiB.  The default ring file
 * (d=128, e=16) is 64 MiB and more; d=1,e=10 is well under it. */
#define LIMIT_BYTES (10000 * 1024)

#define NEED_TRACING()                                                   \
  do {                                                                   \
    if (er_tracing_off()) ER_SKIP("a build without tracing");            \
  } while (0)

/* Lowers the soft limit only, so that the test may raise it back. */
static void lower_fsize_limit(void) {
  struct rlimit rl;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
  ck_assert_msg(rl.rlim_max == RLIM_INFINITY || rl.rlim_max > LIMIT_BYTES,
                "the hard file size limit is already below the test's");
  rl.rlim_cur = LIMIT_BYTES;
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

START_TEST(test_start_over_limit_fails_cleanly) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  struct sigaction before, after;
  ck_assert_int_eq(sigaction(SIGXFSZ, NULL, &before), 0);
  lower_fsize_limit();
  /* Before the fix, SIGXFSZ from ftruncate() killed this process here. */
  int r = eventring_start();
  ck_assert_int_eq(r, -EFBIG);
  ck_assert_ptr_null(eventring_path());
  ck_assert_int_eq(eventring_is_active(), 0);
  ck_assert_int_eq(er_count_entries(dir, ""), 0);
  ck_assert_int_eq(sigaction(SIGXFSZ, NULL, &after), 0);
  ck_assert_ptr_eq((void *)after.sa_handler, (void *)before.sa_handler);
  ck_assert_int_eq(after.sa_flags, before.sa_flags);
  sigset_t pending;
  sigpending(&pending);
  ck_assert_int_eq(sigismember(&pending, SIGXFSZ), 0);

  /* A file that fits under the limit is made as usual. */
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "d=1,e=10", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_ptr_nonnull(eventring_path());
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

/* What `(ulimit -f 10000; OCAML_RUNTIME_EVENTS_START=1 ./prog)` does. */
START_TEST(test_env_start_over_limit_runs_untraced) {
  NEED_TRACING();
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/envstart", progs);
  const char *dir = er_tmpdir();
  FILE *out = tmpfile(), *err = tmpfile();
  ck_assert_ptr_nonnull(out);
  ck_assert_ptr_nonnull(err);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fileno(out), STDOUT_FILENO);
    dup2(fileno(err), STDERR_FILENO);
    struct rlimit rl = {LIMIT_BYTES, LIMIT_BYTES};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(126);
    setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
    execl(prog, prog, (char *)NULL);
    _exit(127);
  }
  int status = er_wait_for(pid, ER_RUN_TIMEOUT);
  char *o = er_read_stream(out), *e = er_read_stream(err);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "envstart: status 0x%x (SIGXFSZ is %d), stderr: %s", status,
                SIGXFSZ, e);
  ck_assert_str_eq(o, "active=0 path=-\n");
  char path[PATH_MAX], want[PATH_MAX + 128];
  er_ring_path_for(path, sizeof path, dir, pid);
  snprintf(want, sizeof want,
           "eventring: cannot start tracing: %s: File too large; running "
           "untraced\n",
           path);
  ck_assert_str_eq(e, want);
  ck_assert_int_eq(er_count_entries(dir, ""), 0);
  free(o);
  free(e);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_fsize(void) {
  TCase *tc = er_tcase("fsize");
  tcase_add_test(tc, test_start_over_limit_fails_cleanly);
  tcase_add_test(tc, test_env_start_over_limit_runs_untraced);
  return tc;
}

ER_TEST_MAIN("fsize_limit", tc_fsize)
