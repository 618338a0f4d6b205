/* test_dir_nofile -- the readers of a directory (stats, dump, latency,
 * trace, report with --dir DIR) given more ring files than descriptors:
 * none reports on a subset as if it were every process.
 *
 * The test lowers its own limit on open files, soft and hard, before it
 * runs the tool (which inherits it and may not raise it), and fills a
 * directory with more small ring files of dead processes than that
 * limit lets one process hold open.  Each reader must fail with status 1
 * and a line saying how many files it could not open and why, and write
 * no report; with the limit left alone, the same directory is read
 * whole (the files are fine).
 */
#include <sys/resource.h>

#include "craft_small.h"
#include "harness.h"
#include "testlib.h"

#define NOFILE 32
#define NFILES 64
#define FIRST_PID 5000000 /* above any pid_max: never a live process */

static void fill(const char *dir) {
  char path[PATH_MAX + 32];
  for (int i = 0; i < NFILES; i++) {
    snprintf(path, sizeof path, "%s/%d.events", dir, FIRST_PID + i);
    er_craft_small(path, 1, 2);
  }
}

/* Runs one reader of `dir` (its arguments, with the output file if it
 * has one in `out`) and checks that it refused the directory. */
static void check_refused(const char *dir, const char *const *args,
                          const char *out) {
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "the tool") == 1,
                "eventring %s --dir: status %d, stderr:\n%.600s", args[0],
                r.status, r.err);
  char want[64];
  snprintf(want, sizeof want, "of the %d ring files in", NFILES);
  ck_assert_msg(strstr(r.err, want) && strstr(r.err, "no file descriptor"),
                "eventring %s: stderr does not say what was not read:\n%.600s",
                args[0], r.err);
  ck_assert_msg(!strstr(r.err, "(skipped)"), "%.600s", r.err);
  ck_assert_msg(r.out[0] == '\0', "eventring %s reported:\n%.500s", args[0],
                r.out);
  if (out) {
    struct stat st;
    ck_assert_msg(stat(out, &st) != 0 || st.st_size == 0,
                  "eventring %s wrote %s", args[0], out);
  }
  er_run_free(&r);
}

START_TEST(test_readers_refuse) {
  if (!getenv("EVENTRING_TEST_TOOL")) ER_SKIP("EVENTRING_TEST_TOOL unset");
  const char *dir = er_tmpdir();
  char d[PATH_MAX], trace_out[PATH_MAX], report_out[PATH_MAX];
  snprintf(d, sizeof d, "%s/rings", dir);
  ck_assert_int_eq(mkdir(d, 0700), 0);
  fill(d);
  snprintf(trace_out, sizeof trace_out, "%s/out.json", dir);
  snprintf(report_out, sizeof report_out, "%s/out.html", dir);

  /* The directory is fine: with descriptors enough, it is read whole. */
  struct er_run r =
      er_run_tool(dir, (const char *[]){"stats", "--dir", d, NULL}, 0);
  ck_assert_msg(er_exit_code(&r, "the tool") == 0, "stats: %.600s", r.err);
  char want[64];
  snprintf(want, sizeof want, "pid %d", FIRST_PID + NFILES - 1);
  ck_assert_msg(strstr(r.out, want), "stats did not read them all:\n%.600s",
                r.out);
  er_run_free(&r);

  struct rlimit rl = {NOFILE, NOFILE};
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
  check_refused(dir, (const char *[]){"stats", "--dir", d, NULL}, NULL);
  check_refused(dir, (const char *[]){"dump", "--dir", d, NULL}, NULL);
  check_refused(dir, (const char *[]){"latency", "--dir", d, NULL}, NULL);
  check_refused(dir,
                (const char *[]){"trace", "--format", "json", "-o", trace_out,
                                 "--dir", d, NULL},
                trace_out);
  check_refused(dir,
                (const char *[]){"report", "-o", report_out, "--dir", d, NULL},
                report_out);
}
END_TEST

static TCase *tc_nofile(void) {
  TCase *tc = er_tcase("nofile");
  tcase_add_test(tc, test_readers_refuse);
  return tc;
}

ER_TEST_MAIN("dir_nofile", tc_nofile)
