/* Tests a host started with standard descriptors closed: the ring file never takes descriptor 0, 1 or 2, so the host's printf cannot overwrite it and its next open() still gets the lowest descriptor. */
#include <dirent.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "testlib.h"

#define NEED_TRACING()                                                   \
  do {                                                                   \
    if (er_tracing_off()) ER_SKIP("a build without tracing");            \
  } while (0)

/* The descriptor of this process open on `path`, or -1. */
static int fd_of(const char *path) {
  DIR *d = opendir("/proc/self/fd");
  ck_assert_ptr_nonnull(d);
  int found = -1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char link[300], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0) continue;
    target[n] = '\0';
    if (strcmp(target, path) == 0) found = atoi(e->d_name);
  }
  closedir(d);
  return found;
}

/* The program of the issue: started with stdout and stderr closed, it
 * printf's after tracing started from the environment.  Before the fix
 * the ring file was descriptor 1 and the printf overwrote its header. */
START_TEST(test_printf_with_stdout_stderr_closed) {
  NEED_TRACING();
  ER_NEED_TOOL();
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/envstart", progs);
  const char *dir = er_tmpdir();
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(STDOUT_FILENO);
    close(STDERR_FILENO);
    setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
    setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
    execl(prog, prog, (char *)NULL);
    _exit(127);
  }
  int status = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "envstart: status 0x%x", status);
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, pid);
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(rf_count(&f, -1, 1, EVENTRING_TYPE_INT, -1), 10);
  rf_close(&f);
  /* And the command reads it whole. */
  const char *args[] = {"dump", "--time=raw", path, NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_int_eq(er_exit_code(&r, "eventring dump"), 0);
  ck_assert_ptr_nonnull(strstr(r.out, "envstart.val"));
  er_run_free(&r);
  er_rmdir(dir);
}
END_TEST

/* With 0, 1 and 2 all closed, the file takes none of them, and they stay
 * the host's: its next open() gets 0, as POSIX promises it. */
START_TEST(test_start_with_all_std_fds_closed) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  int saved[3];
  for (int i = 0; i < 3; i++) {
    saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 10);
    ck_assert_int_ge(saved[i], 10);
    close(i);
  }
  int r = eventring_start();
  const char *path = eventring_path();
  char copy[PATH_MAX] = "";
  if (path) snprintf(copy, sizeof copy, "%s", path);
  int ring_fd = path ? fd_of(copy) : -1;
  int next = open("/dev/null", O_RDONLY);
  for (int i = 0; i < 3; i++) {
    dup2(saved[i], i);
    close(saved[i]);
  }
  if (next > 2) close(next);
  ck_assert_int_eq(r, 0);
  ck_assert_int_ge(ring_fd, 3);
  ck_assert_int_eq(next, 0);
  eventring_begin(EVENTRING_PHASE_MAJOR);
  eventring_end(EVENTRING_PHASE_MAJOR);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_closed(void) {
  TCase *tc = er_tcase("closed");
  tcase_add_test(tc, test_printf_with_stdout_stderr_closed);
  tcase_add_test(tc, test_start_with_all_std_fds_closed);
  return tc;
}

ER_TEST_MAIN("closed_fds", tc_closed)
