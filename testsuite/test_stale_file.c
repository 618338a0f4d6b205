/* Tests stale ring files and reused pids: a file left by a dead process of the same pid (told by the start time the file records) is replaced by a starting process (kept beside when preserved), a file that may be live is never touched, and the command reports a stale file for a live untraced pid instead of reading it. */
#include <pwd.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"
#include "tooltest.h"

#define NEED_TRACING()                                                   \
  do {                                                                   \
    if (er_tracing_off()) ER_SKIP("a build without tracing");            \
  } while (0)

/* Byte offset of the start-time word of the file at `path` (the extension
 * block's last word), checking that the file records one. */
static off_t start_word_offset(const char *path) {
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert(f.has_ext);
  ck_assert_msg(f.ext[ER_EXT_FLAGS] & ER_EXT_FLAG_START_TIME,
                "%s records no start time", path);
  off_t off = (off_t)(ER_META_WORDS * 8 + f.ext[ER_EXT_SIZE] - 8);
  rf_close(&f);
  return off;
}

static uint64_t read_word(const char *path, off_t off) {
  int fd = open(path, O_RDONLY);
  ck_assert_int_ge(fd, 0);
  uint64_t w = 0;
  ck_assert_int_eq(pread(fd, &w, 8, off), 8);
  close(fd);
  return w;
}

static void write_word(const char *path, off_t off, uint64_t w) {
  int fd = open(path, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pwrite(fd, &w, 8, off), 8);
  close(fd);
}

/* This process's start time, as /proc says it. */
static uint64_t own_start_time(void) {
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  ck_assert_ptr_nonnull(p);
  unsigned long long v = 0;
  /* Fields 3 to 21 are skipped; field 22 is the start time. */
  int got = sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u "
                   "%*u %*d %*d %*d %*d %*d %*d %llu", &v);
  ck_assert_int_eq(got, 1);
  return v;
}

/* Leaves this process's file in `path`, as a killed process would. */
static void leave_own_file(char *path) {
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  ck_assert_int_eq(eventring_start(), 0);
  snprintf(path, PATH_MAX, "%s", eventring_path());
  eventring_begin(EVENTRING_PHASE_MAJOR);
  eventring_end(EVENTRING_PHASE_MAJOR);
  ck_assert_int_eq(eventring_stop(), 0);
}

static ino_t inode_of(const char *path) {
  struct stat st;
  ck_assert_int_eq(lstat(path, &st), 0);
  return st.st_ino;
}

START_TEST(test_file_records_start_time) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  leave_own_file(path);
  off_t off = start_word_offset(path);
  ck_assert_uint_eq(read_word(path, off), own_start_time());
  er_rmdir(dir);
}
END_TEST

/* Clears the PRESERVED flag of the file at `path`, as a writer that was
 * not told to keep its file leaves it. */
static void clear_preserved(const char *path) {
  off_t at = 8 * (ER_META_WORDS + ER_EXT_FLAGS);
  uint64_t flags = read_word(path, at);
  ck_assert(flags & ER_EXT_FLAG_PRESERVED);
  write_word(path, at, flags & ~(uint64_t)ER_EXT_FLAG_PRESERVED);
}

/* A file of our pid whose recorded start time is not ours was written by
 * an earlier process: a start replaces it (before the fix: EEXIST, and
 * the program ran untraced); kept under PID.1.events when its writer
 * asked to preserve it. */
START_TEST(test_stale_file_replaced) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  leave_own_file(path);
  off_t off = start_word_offset(path);
  write_word(path, off, own_start_time() - 1);
  clear_preserved(path);
  ino_t stale = inode_of(path);

  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_str_eq(eventring_path(), path);
  ck_assert_uint_ne(inode_of(path), stale);
  /* The new file is whole, records us, and nothing else is left. */
  ck_assert_uint_eq(read_word(path, start_word_offset(path)),
                    own_start_time());
  ck_assert_int_eq(er_count_entries(dir, ""), 1);
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_end(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), 0);
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_BEGIN, EVENTRING_PHASE_MINOR), 1);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_BEGIN, EVENTRING_PHASE_MAJOR), 0);
  rf_close(&f);

  /* The same, preserved: it is kept beside, whole. */
  unlink(path);
  leave_own_file(path);
  write_word(path, start_word_offset(path), own_start_time() - 1);
  stale = inode_of(path);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_uint_ne(inode_of(path), stale);
  char kept[PATH_MAX + 16];
  snprintf(kept, sizeof kept, "%s/%ld.1.events", dir, (long)getpid());
  ck_assert_uint_eq(inode_of(kept), stale);
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_int_eq(er_count_entries(dir, ""), 2);
  er_open_ring(kept, &f);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_BEGIN, EVENTRING_PHASE_MAJOR), 1);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

/* A file of our pid with our very start time that this program did not
 * create: an earlier image of this process (it exec'd), or an earlier
 * process given our pid within the same clock tick (10 ms), as a fast
 * machine does in a new pid namespace.  Made here by copying our own
 * preserved file to a new inode; a start keeps it as PID.1.events and
 * takes the name (before: EEXIST, and the program ran untraced). */
START_TEST(test_same_tick_file_replaced) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  char path[PATH_MAX], copy[PATH_MAX + 8];
  leave_own_file(path);
  snprintf(copy, sizeof copy, "%s.copy", path);
  int in = open(path, O_RDONLY), out = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0600);
  ck_assert_int_ge(in, 0);
  ck_assert_int_ge(out, 0);
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    ck_assert_int_eq(write(out, buf, (size_t)n), n);
  ck_assert_int_eq(n, 0);
  close(in);
  close(out);
  ck_assert_int_eq(rename(copy, path), 0);
  ck_assert_uint_eq(read_word(path, start_word_offset(path)),
                    own_start_time());
  clear_preserved(path);
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
  ino_t stale = inode_of(path);

  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_str_eq(eventring_path(), path);
  ck_assert_uint_ne(inode_of(path), stale);
  ck_assert_int_eq(er_count_entries(dir, ""), 2);
  ck_assert_int_eq(eventring_stop(), 0);
  /* The stop did not preserve: the earlier image's file (not preserved
   * either) went with the program's own. */
  ck_assert_int_eq(er_count_entries(dir, ""), 0);
  er_rmdir(dir);
}
END_TEST

/* Files that are not provably stale stay as they are, and starting fails
 * with EEXIST as before: no start time recorded (an older writer's),
 * another owner's file.  (This image's own file, kept by a stop with
 * OCAML_RUNTIME_EVENTS_PRESERVE, is kept as PID.1.events by the next
 * start: test_exec_images.) */
START_TEST(test_file_not_provably_stale_kept) {
  NEED_TRACING();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  leave_own_file(path);
  ino_t ino = inode_of(path);

  off_t off = start_word_offset(path);
  uint64_t flags = read_word(path, 8 * (ER_META_WORDS + ER_EXT_FLAGS));
  write_word(path, off, own_start_time() - 1);
  write_word(path, 8 * (ER_META_WORDS + ER_EXT_FLAGS),
             flags & ~(uint64_t)ER_EXT_FLAG_START_TIME);
  ck_assert_int_eq(eventring_start(), -EEXIST);
  ck_assert_uint_eq(inode_of(path), ino);

  if (geteuid() == 0) {
    struct passwd *pw = getpwnam("nobody");
    if (pw) {
      write_word(path, 8 * (ER_META_WORDS + ER_EXT_FLAGS), flags);
      ck_assert_int_eq(chown(path, pw->pw_uid, pw->pw_gid), 0);
      ck_assert_int_eq(eventring_start(), -EEXIST);
      ck_assert_uint_eq(inode_of(path), ino);
    }
  }
  ck_assert_int_eq(er_count_entries(dir, ""), 1);
  er_rmdir(dir);
}
END_TEST

/* `eventring stats --pid P` where P is a live untraced process and
 * P.events a dead earlier P's file: an error naming the stale file, exit
 * 1 (before the fix: the dead process's data and exit 0). */
START_TEST(test_reader_reports_stale_file) {
  NEED_TRACING();
  ER_NEED_TOOL();
  if (!er_prog_path("mon_loop")) ER_SKIP("mon_loop is not built");
  const char *dir = er_tmpdir();
  char own[PATH_MAX];
  leave_own_file(own);
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");

  /* A live process, not traced. */
  struct er_pipe_proc live = er_start_ready("mon_loop");
  char stale[PATH_MAX];
  er_ring_path_for(stale, sizeof stale, dir, live.pid);
  ck_assert_int_eq(rename(own, stale), 0);
  write_word(stale, 8 * (ER_META_WORDS + ER_EXT_PID), (uint64_t)live.pid);
  write_word(stale, start_word_offset(stale), 1);

  char pid_arg[32];
  snprintf(pid_arg, sizeof pid_arg, "%ld", (long)live.pid);
  struct er_run r = er_run_tool(
      dir, (const char *[]){"stats", "--pid", pid_arg, "--dir", dir, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "stats --pid --dir"), 1);
  er_assert_one_error(&r, "is stale: an earlier process");
  ck_assert_ptr_nonnull(strstr(r.err, stale));
  er_run_free(&r);
  /* Found in OCAML_RUNTIME_EVENTS_DIR (er_tmpdir() set it) likewise. */
  r = er_run_tool(dir, (const char *[]){"stats", "--pid", pid_arg, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "stats --pid"), 1);
  er_assert_one_error(&r, "is stale: an earlier process");
  er_run_free(&r);

  /* The file itself is still readable by name: it is a dead process's. */
  r = er_run_tool(dir, (const char *[]){"stats", stale, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "stats FILE"), 0);
  er_run_free(&r);
  ck_assert_int_eq(er_pipe_finish(&live, ER_RUN_TIMEOUT), 0);
  er_rmdir(dir);
}
END_TEST

/* The case of the issue, with a real reused pid: in a new pid namespace
 * (root only), a traced process gets pid 2 and dies of SIGKILL, leaving
 * 2.events; the next process is given pid 2 again (ns_last_pid) and must
 * run traced (before the fix: "File exists", untraced). */
START_TEST(test_pid_reused_in_namespace) {
  NEED_TRACING();
  if (geteuid() != 0) ER_SKIP("needs root for a pid namespace");
  if (access("/usr/bin/unshare", X_OK) != 0 && access("/bin/unshare", X_OK) != 0)
    ER_SKIP("unshare(1) is not installed");
  const char *killer = er_prog_path("self_kill");
  if (!killer) ER_SKIP("self_kill is not built");
  char k[PATH_MAX], e[PATH_MAX];
  snprintf(k, sizeof k, "%s", killer);
  const char *envstart = er_prog_path("envstart");
  if (!envstart) ER_SKIP("envstart is not built");
  snprintf(e, sizeof e, "%s", envstart);
  const char *dir = er_tmpdir();
  /* `; true`: the shell forks for the second program too, rather than
   * exec it in place of itself (pid 1). */
  char script[3 * PATH_MAX];
  snprintf(script, sizeof script,
           "echo 1 > /proc/sys/kernel/ns_last_pid && %s; "
           "echo 1 > /proc/sys/kernel/ns_last_pid && %s; true",
           k, e);
  /* An unshare that cannot make the namespace (a container without the
   * right) exits before running the script: skip then. */
  struct er_run probe = er_run(
      dir, "unshare",
      (const char *[]){"--pid", "--fork", "--mount-proc", "true", NULL},
      NULL, ER_SPAWN_PATH);
  int can = er_exit_code(&probe, "unshare") == 0;
  er_run_free(&probe);
  if (!can) ER_SKIP("unshare --pid --fork --mount-proc is not allowed here");

  struct er_run r = er_run(
      dir, "unshare",
      (const char *[]){"--pid", "--fork", "--mount-proc", "sh", "-c", script,
                       NULL},
      "OCAML_RUNTIME_EVENTS_START=1", ER_SPAWN_PATH);
  ck_assert_msg(er_exit_code(&r, "unshare") == 0, "stdout: %s\nstderr: %s",
                r.out, r.err);
  char first[PATH_MAX + 32], second[2 * PATH_MAX + 64];
  snprintf(first, sizeof first, "active=1 path=%s/2.events\n", dir);
  snprintf(second, sizeof second, "%sactive=1 path=%s/2.events\n", first, dir);
  ck_assert_msg(!strcmp(r.out, second), "stdout: %s\nstderr: %s", r.out,
                r.err);
  ck_assert_msg(!strstr(r.err, "File exists"), "stderr: %s", r.err);
  er_run_free(&r);
  /* The second process removed its file at exit; the first one's went
   * with it. */
  ck_assert_int_eq(er_count_entries(dir, ""), 0);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_stale(void) {
  TCase *tc = er_tcase("stale");
  tcase_add_test(tc, test_file_records_start_time);
  tcase_add_test(tc, test_stale_file_replaced);
  tcase_add_test(tc, test_same_tick_file_replaced);
  tcase_add_test(tc, test_file_not_provably_stale_kept);
  tcase_add_test(tc, test_reader_reports_stale_file);
  tcase_add_test(tc, test_pid_reused_in_namespace);
  return tc;
}

ER_TEST_MAIN("stale_file", tc_stale)
