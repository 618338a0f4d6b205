/* Tests that files of dead processes that did not ask to be preserved do not pile up: forked workers that end with _exit() leave files that the next start in the directory removes, never a live process's (in this pid namespace or another), a preserved one, or one of a live process whose pid a dead writer had. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"
#include "tooltest.h"

#define NEED_TRACING()                                                   \
  do {                                                                   \
    if (er_tracing_off()) ER_SKIP("a build without tracing");            \
  } while (0)

#define WORKERS 20

static int exists(const char *dir, pid_t pid) {
  char p[PATH_MAX];
  er_ring_path_for(p, sizeof p, dir, pid);
  return access(p, F_OK) == 0;
}

/* Runs envstart traced in `dir`: a new start there. */
static void start_elsewhere(const char *dir) {
  const char *e = er_prog_path("envstart");
  ck_assert_ptr_nonnull(e);
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", e);
  struct er_run r =
      er_run(dir, p, (const char *[]){NULL}, "OCAML_RUNTIME_EVENTS_START=1", 0);
  ck_assert_int_eq(er_exit_code(&r, "envstart"), 0);
  ck_assert_ptr_nonnull(strstr(r.out, "active=1"));
  er_run_free(&r);
}

/* Forked workers that _exit: their files stay until the next start in
 * the directory, which removes them; a live worker's, a preserved
 * worker's and the parent's stay (before the fix: every worker's file
 * stayed for good). */
START_TEST(test_exited_workers_reaped) {
  NEED_TRACING();
  if (!er_prog_path("envstart")) ER_SKIP("envstart is not built");
  const char *dir = er_tmpdir();
  ck_assert_int_eq(eventring_start(), 0);
  int id = eventring_register("reap.worker", EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);
  pid_t dead[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    dead[i] = fork();
    ck_assert_int_ge(dead[i], 0);
    if (dead[i] == 0) {
      eventring_write_int(id, i);
      _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(dead[i], &st, 0), dead[i]);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  /* One that asked to be preserved. */
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  pid_t kept = fork();
  ck_assert_int_ge(kept, 0);
  if (kept == 0) {
    eventring_write_int(id, -1); /* a child's file is made at its first */
    _exit(0);
  }
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
  ck_assert_int_eq(waitpid(kept, NULL, 0), kept);
  /* One that lives on until its pipe closes; it says when it has made
   * its file (at its first event). */
  int fds[2], ready[2];
  ck_assert_int_eq(pipe(fds), 0);
  ck_assert_int_eq(pipe(ready), 0);
  pid_t live = fork();
  ck_assert_int_ge(live, 0);
  if (live == 0) {
    close(fds[1]);
    close(ready[0]);
    eventring_write_int(id, -2);
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(2);
    while (read(fds[0], &c, 1) > 0) {
    }
    _exit(0);
  }
  close(fds[0]);
  close(ready[1]);
  char c;
  ck_assert_int_eq(read(ready[0], &c, 1), 1);
  close(ready[0]);
  ck_assert_int_eq(er_count_entries(dir, ".events"), WORKERS + 3);

  start_elsewhere(dir);
  for (int i = 0; i < WORKERS; i++)
    ck_assert_msg(!exists(dir, dead[i]), "worker %ld's file is left",
                  (long)dead[i]);
  ck_assert(exists(dir, kept));
  ck_assert(exists(dir, live));
  ck_assert(exists(dir, getpid()));
  ck_assert_int_eq(er_count_entries(dir, ".events"), 3);

  close(fds[1]);
  ck_assert_int_eq(waitpid(live, NULL, 0), live);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

static off_t start_word_offset(const char *path) {
  struct rf_file f;
  er_open_ring(path, &f);
  off_t off = (off_t)(ER_META_WORDS * 8 + f.ext[ER_EXT_SIZE] - 8);
  rf_close(&f);
  return off;
}

static void write_word(const char *path, off_t off, uint64_t w) {
  int fd = open(path, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pwrite(fd, &w, 8, off), 8);
  close(fd);
}

/* The start time /proc gives process `pid`. */
static uint64_t start_time_of(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  ck_assert_ptr_nonnull(p);
  unsigned long long v = 0;
  ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                          "%*u %*u %*d %*d %*d %*d %*d %*d %llu", &v), 1);
  return v;
}

/* A dead writer's file whose pid a live untraced process has now (pid
 * reuse): removed, the start times differing; the same file recording
 * the live process's own start time (an image of it that exec'd into an
 * untraced program) is kept. */
START_TEST(test_reused_pid) {
  NEED_TRACING();
  if (!er_prog_path("mon_loop")) ER_SKIP("mon_loop is not built");
  const char *dir = er_tmpdir();
  struct er_pipe_proc live = er_start_ready("mon_loop");

  for (int round = 0; round < 2; round++) {
    /* A file of ours, made into one of the live pid's writers, left as
     * a killed process leaves it: preserved, then the flag cleared. */
    setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
    ck_assert_int_eq(eventring_start(), 0);
    unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
    char own[PATH_MAX], other[PATH_MAX];
    snprintf(own, sizeof own, "%s", eventring_path());
    ck_assert_int_eq(eventring_stop(), 0);
    er_ring_path_for(other, sizeof other, dir, live.pid);
    ck_assert_msg(rename(own, other) == 0, "rename %s %s: %s", own, other,
                  strerror(errno));
    off_t flags_at = 8 * (ER_META_WORDS + ER_EXT_FLAGS);
    struct rf_file f;
    er_open_ring(other, &f);
    uint64_t flags = f.ext[ER_EXT_FLAGS];
    rf_close(&f);
    write_word(other, flags_at, flags & ~(uint64_t)ER_EXT_FLAG_PRESERVED);
    write_word(other, 8 * (ER_META_WORDS + ER_EXT_PID), (uint64_t)live.pid);
    uint64_t t = start_time_of(live.pid);
    write_word(other, start_word_offset(other), round == 0 ? t - 1 : t);

    ck_assert_int_eq(eventring_start(), 0);
    ck_assert_int_eq(eventring_stop(), 0);
    if (round == 0) {
      ck_assert_msg(!exists(dir, live.pid), "a dead writer's file is left");
    } else {
      ck_assert_msg(exists(dir, live.pid), "a live process's file is gone");
      unlink(other);
    }
  }
  ck_assert_int_eq(er_pipe_finish(&live, ER_RUN_TIMEOUT), 0);
  er_rmdir(dir);
}
END_TEST

/* A live writer in another pid namespace: its pid means another process
 * here (pid 1 is this namespace's init, with another start time), so
 * only its lock tells it is alive; a start here leaves its file (root
 * only, for the namespace). */
START_TEST(test_other_namespace_kept) {
  NEED_TRACING();
  if (geteuid() != 0) ER_SKIP("needs root for a pid namespace");
  const char *tree = er_prog_path("proc_tree");
  if (!tree) ER_SKIP("no helper programs");
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", tree);
  const char *dir = er_tmpdir();
  struct er_run probe = er_run(
      dir, "unshare",
      (const char *[]){"--pid", "--fork", "--mount-proc", "true", NULL},
      NULL, ER_SPAWN_PATH);
  int can = er_exit_code(&probe, "unshare") == 0;
  er_run_free(&probe);
  if (!can) ER_SKIP("unshare --pid --fork --mount-proc is not allowed here");

  char *unshare = access("/usr/bin/unshare", X_OK) == 0 ? "/usr/bin/unshare"
                                                       : "/bin/unshare";
  char *const env[] = {"OCAML_RUNTIME_EVENTS_START=1", NULL};
  struct er_pipe_proc h = er_pipe_start(
      (char *const[]){unshare, "--pid", "--fork", "--mount-proc", p, "hold",
                      NULL},
      env, NULL);
  char line[64];
  ck_assert_int_eq(er_read_line(h.out, line, sizeof line, ER_RUN_TIMEOUT), 0);
  ck_assert_str_eq(line, "ready");
  ck_assert(exists(dir, 1));
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_msg(exists(dir, 1), "a live writer's file was removed");
  ck_assert_int_eq(er_pipe_finish(&h, ER_RUN_TIMEOUT), 0);
  ck_assert_int_eq(er_count_entries(dir, ""), 0);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_reap(void) {
  TCase *tc = er_tcase("reap");
  tcase_add_test(tc, test_exited_workers_reaped);
  tcase_add_test(tc, test_reused_pid);
  tcase_add_test(tc, test_other_namespace_kept);
  return tc;
}

ER_TEST_MAIN("reap", tc_reap)
