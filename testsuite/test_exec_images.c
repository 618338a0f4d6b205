/* Tests that a process that execs another traced image loses none of its events: the earlier image's file is kept as PID.N.events, read by the tools in order before the later image's, removed with the process's own file unless preserved; and that a stop and a start with OCAML_RUNTIME_EVENTS_PRESERVE keep both sessions. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

#define NEED_ALL()                                                         \
  do {                                                                     \
    if (er_tracing_off()) ER_SKIP("a build without tracing");              \
    if (!er_tool_path()) ER_SKIP("EVENTRING_TEST_TOOL is not set");        \
    if (!er_prog_path("proc_tree")) ER_SKIP("no helper programs");         \
  } while (0)

static char *prog(void) { return strdup(er_prog_path("proc_tree")); }

/* The pid whose files `dir` holds: exactly `n` entries, <pid>.events and
 * <pid>.1.events .. <pid>.<n-1>.events. */
static long files_of_one_pid(const char *dir, int n) {
  ck_assert_int_eq(er_count_entries(dir, ""), n);
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  long pid = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    long p;
    char rest[32];
    if (sscanf(e->d_name, "%ld.%31s", &p, rest) == 2 && !strcmp(rest, "events"))
      pid = p;
  }
  closedir(d);
  ck_assert_int_gt(pid, 0);
  for (int i = 1; i < n; i++) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%ld.%d.events", dir, pid, i);
    ck_assert_msg(access(p, F_OK) == 0, "%s is missing", p);
  }
  return pid;
}

/* Occurrences of `needle` in `text`. */
static int occurrences(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

/* In a dump listing (stderr of `dump --time=raw`), every line of the
 * first `first` tree.seq events comes before the second ring_start, and
 * no timestamp after it is below one before it. */
static void check_images_in_order(const char *listing) {
  const char *second = strstr(listing, "name=ring_start");
  ck_assert_ptr_nonnull(second);
  second = strstr(second + 1, "name=ring_start");
  ck_assert_ptr_nonnull(second);
  uint64_t old_max = 0, new_min = UINT64_MAX;
  for (const char *p = listing; (p = strstr(p, " ts=")) != NULL; p++) {
    uint64_t ts = strtoull(p + 4, NULL, 10);
    if (p < second && ts > old_max) old_max = ts;
    if (p > second && ts < new_min) new_min = ts;
  }
  ck_assert_msg(old_max <= new_min,
                "the later image starts at %" PRIu64
                ", before the earlier image's last event at %" PRIu64,
                new_min, old_max);
  /* The earlier image's ten tree.seq come before the later one's. */
  int before = 0;
  for (const char *p = listing; (p = strstr(p, "name=tree.seq")) && p < second;
       p++)
    before++;
  ck_assert_int_eq(before, 10);
}

/* With PRESERVE: both images' files stay, each with its own events, and
 * `dump --dir` reads the earlier first (before the fix: one file, the
 * earlier image's events gone). */
START_TEST(test_exec_preserved) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char *p = prog();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  struct er_run r = er_run(dir, p, (const char *[]){"exec-now", p, "leaf", NULL},
                           "OCAML_RUNTIME_EVENTS_START=1", 0);
  ck_assert_int_eq(er_exit_code(&r, "proc_tree"), 0);
  er_run_free(&r);
  long pid = files_of_one_pid(dir, 2);
  char older[PATH_MAX + 64], newer[PATH_MAX + 64];
  snprintf(older, sizeof older, "%s/%ld.1.events", dir, pid);
  snprintf(newer, sizeof newer, "%s/%ld.events", dir, pid);
  const char *files[] = {older, newer};
  for (int i = 0; i < 2; i++) {
    r = er_run_tool(dir, (const char *[]){"dump", files[i], NULL}, 0);
    ck_assert_int_eq(er_exit_code(&r, "dump"), 0);
    ck_assert_int_eq(occurrences(r.out, "name=tree.seq"), 10);
    ck_assert_int_eq(occurrences(r.out, "name=ring_start"), 1);
    er_run_free(&r);
  }
  r = er_run_tool(dir, (const char *[]){"dump", "--time=raw", "--dir", dir, NULL},
                  0);
  ck_assert_int_eq(er_exit_code(&r, "dump --dir"), 0);
  ck_assert_int_eq(occurrences(r.out, "name=tree.seq"), 20);
  check_images_in_order(r.out);
  er_run_free(&r);
  free(p);
  er_rmdir(dir);
}
END_TEST

/* `dump -- CMD`: the image that execs at once is read whole, first
 * (before the fix: its events were missing in most runs, no loss said). */
START_TEST(test_exec_under_dump) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char *p = prog();
  for (int round = 0; round < 3; round++) {
    struct er_run r = er_run_tool(
        dir, (const char *[]){"dump", "--time=raw", "--", p, "exec-now", p,
                              "exec-now", p, "leaf", NULL},
        0);
    ck_assert_int_eq(er_exit_code(&r, "dump --"), 0);
    /* The listing is on stderr: the command keeps stdout. */
    ck_assert_int_eq(occurrences(r.err, "name=tree.seq"), 30);
    ck_assert_int_eq(occurrences(r.err, "name=ring_start"), 3);
    ck_assert_int_eq(occurrences(r.err, "lost_events_total=0"),
                     occurrences(r.err, "lost_events_total="));
    check_images_in_order(r.err);
    er_run_free(&r);
  }
  free(p);
  er_rmdir(dir);
}
END_TEST

/* Without PRESERVE: both files while the later image runs (a reader can
 * read them), none once it has ended (before the fix: the earlier file
 * was removed at the exec). */
START_TEST(test_exec_not_preserved) {
  NEED_ALL();
  const char *dir = er_tmpdir();
  char *p = prog();
  char *const env[] = {"OCAML_RUNTIME_EVENTS_START=1", NULL};
  struct er_pipe_proc h = er_pipe_start(
      (char *const[]){p, "exec-now", p, "hold", NULL}, env, NULL);
  char line[64];
  ck_assert_int_eq(er_read_line(h.out, line, sizeof line, ER_RUN_TIMEOUT), 0);
  ck_assert_str_eq(line, "ready");
  long pid = files_of_one_pid(dir, 2);
  ck_assert_int_eq(pid, h.pid);
  ck_assert_int_eq(er_pipe_finish(&h, ER_RUN_TIMEOUT), 0);
  ck_assert_int_eq(er_count_entries(dir, ""), 0);
  free(p);
  er_rmdir(dir);
}
END_TEST

/* A stop with PRESERVE, then a start: the first session's file is kept
 * as PID.1.events and tracing runs (before the fix: EEXIST, untraced). */
START_TEST(test_restart_preserved) {
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  ck_assert_int_eq(eventring_start(), 0);
  eventring_begin(EVENTRING_PHASE_MAJOR);
  eventring_end(EVENTRING_PHASE_MAJOR);
  ck_assert_int_eq(eventring_stop(), 0);
  ck_assert_int_eq(eventring_start(), 0);
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_end(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), 0);
  files_of_one_pid(dir, 2);
  char older[PATH_MAX + 64], newer[PATH_MAX + 64];
  snprintf(older, sizeof older, "%s/%ld.1.events", dir, (long)getpid());
  snprintf(newer, sizeof newer, "%s/%ld.events", dir, (long)getpid());
  struct rf_file f;
  er_open_ring(older, &f);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_BEGIN, EVENTRING_PHASE_MAJOR), 1);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_BEGIN, EVENTRING_PHASE_MINOR), 0);
  rf_close(&f);
  er_open_ring(newer, &f);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_BEGIN, EVENTRING_PHASE_MINOR), 1);
  ck_assert_uint_eq(rf_count(&f, 0, 0, ER_EV_BEGIN, EVENTRING_PHASE_MAJOR), 0);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_exec(void) {
  TCase *tc = er_tcase("exec");
  tcase_add_test(tc, test_exec_preserved);
  tcase_add_test(tc, test_exec_under_dump);
  tcase_add_test(tc, test_exec_not_preserved);
  tcase_add_test(tc, test_restart_preserved);
  return tc;
}

ER_TEST_MAIN("exec_images", tc_exec)
