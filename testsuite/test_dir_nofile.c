/* test_dir_nofile -- the readers of a directory (stats, dump, latency,
 * trace, report with --dir DIR) given more ring files than descriptors.
 *
 * The test lowers its own limit on open files, soft and hard, before it
 * runs the tool (which inherits it and may not raise it), and fills a
 * directory with more ring files of finished processes than that limit
 * lets one process hold open: each a real file of drop_threads (program
 * and thread names, a user event's name, events dropped for want of a
 * domain slot).  Read once through, each reader releases a file read to
 * its end and opens the next: its report is the one it gives with the
 * limit left alone (a file that turns out not to be a ring file is
 * named and skipped alike).  Followed (--follow), every file would keep its
 * descriptor: each reader fails with status 1 and a line saying how many
 * files it could not open and why, and writes no report.
 */
#include <sys/resource.h>

#include "harness.h"
#include "testlib.h"

#define NOFILE 32
#define NFILES 72
#define BAD_PID 999999999 /* above any pid_max */

/* Runs drop_threads NFILES times, each leaving its file in `dir`. */
static void fill(const char *dir, const char *prog) {
  setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  for (int i = 0; i < NFILES; i++) {
    pid_t pid = er_spawn((char *[]){(char *)prog, NULL}, ER_FD_NULL,
                         ER_FD_NULL, ER_FD_KEEP, "OCAMLRUNPARAM=d=2,e=12", 0);
    ck_assert_int_gt(pid, 0);
    int st = er_wait_for(pid, 60);
    ck_assert_msg(st == 0, "drop_threads: status %d", st);
  }
  unsetenv("OCAML_RUNTIME_EVENTS_START");
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
  unsetenv("OCAML_RUNTIME_EVENTS_DIR");
  ck_assert_int_eq(er_count_entries(dir, ".events"), NFILES);
}

/* One reader's run: its status, standard output and error, and the
 * content of its output file when it has one. */
struct reading {
  struct er_run r;
  char *file;
};

static struct reading run_reader(const char *tmp, const char *const *args,
                                 const char *out) {
  struct reading g = {er_run_tool(tmp, args, 0), NULL};
  if (out) {
    size_t len;
    g.file = er_slurp(out, &len);
    unlink(out);
  }
  return g;
}

static void reading_free(struct reading *g) {
  er_run_free(&g->r);
  free(g->file);
}

/* The five readers, each with its output file (or NULL). */
#define NREADERS 5
static const char *const *reader_args(int k, const char *d, const char *out,
                                      int follow) {
  static const char *v[12];
  int n = 0;
  static const char *const names[NREADERS] = {"stats", "dump", "latency",
                                              "trace", "report"};
  v[n++] = names[k];
  if (k == 3) v[n++] = "--format", v[n++] = "json";
  if (k >= 3) v[n++] = "-o", v[n++] = out;
  if (follow) v[n++] = "--follow";
  v[n++] = "--dir";
  v[n++] = d;
  v[n] = NULL;
  return v;
}

/* Makes the test's directory, fills its subdirectory "rings" (whose path
 * goes to `d`, PATH_MAX bytes) with drop_threads' files and returns the
 * test's directory. */
static const char *filled_dir(char *d) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", er_prog_path("drop_threads"));
  const char *tmp = er_tmpdir();
  snprintf(d, PATH_MAX, "%s/rings", tmp);
  ck_assert_int_eq(mkdir(d, 0700), 0);
  fill(d, p);
  return tmp;
}

/* A report: the same with the limit lowered as without. */
START_TEST(test_readers_read_all) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("built without tracing");
  if (!er_prog_path("drop_threads")) ER_SKIP("drop_threads is not built");
  char d[PATH_MAX], out[PATH_MAX];
  const char *tmp = filled_dir(d);
  /* Not a ring file, and last in pid order: it waits for a descriptor
   * like the files before it, and is then named and skipped. */
  char bad[PATH_MAX + 32];
  snprintf(bad, sizeof bad, "%s/%d.events", d, BAD_PID);
  er_write_text(bad, "not a ring file\n", 1);

  struct reading want[NREADERS];
  for (int k = 0; k < NREADERS; k++) {
    snprintf(out, sizeof out, "%s/out-%d", tmp, k);
    want[k] = run_reader(tmp, reader_args(k, d, out, 0), k >= 3 ? out : NULL);
    ck_assert_msg(er_exit_code(&want[k].r, "the tool") == 0,
                  "eventring %s --dir: %.600s", reader_args(k, d, out, 0)[0],
                  want[k].r.err);
  }
  char all[64];
  snprintf(all, sizeof all, "== all %d processes ==", NFILES);
  ck_assert_msg(strstr(want[0].r.out, all), "%.600s", want[0].r.out);
  ck_assert_msg(strstr(want[0].r.out, "3000 dropped by the writer"),
                "%.600s", want[0].r.out);
  ck_assert_msg(strstr(want[0].r.err, "not a ring file (skipped)"), "%.600s",
                want[0].r.err);

  struct rlimit rl = {NOFILE, NOFILE};
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
  for (int k = 0; k < NREADERS; k++) {
    const char *name = reader_args(k, d, out, 0)[0];
    snprintf(out, sizeof out, "%s/out-%d", tmp, k);
    struct reading got =
        run_reader(tmp, reader_args(k, d, out, 0), k >= 3 ? out : NULL);
    ck_assert_msg(er_exit_code(&got.r, "the tool") == 0,
                  "eventring %s --dir under ulimit -n %d: status %d:\n%.600s",
                  name, NOFILE, got.r.status, got.r.err);
    ck_assert_msg(!strcmp(got.r.out, want[k].r.out),
                  "eventring %s: another report under ulimit -n %d:\n%.800s\n"
                  "-- instead of --\n%.800s",
                  name, NOFILE, got.r.out, want[k].r.out);
    ck_assert_msg(!strcmp(got.r.err, want[k].r.err),
                  "eventring %s: stderr under ulimit -n %d:\n%.800s\n"
                  "-- instead of --\n%.800s",
                  name, NOFILE, got.r.err, want[k].r.err);
    if (k >= 3)
      ck_assert_msg(got.file && want[k].file && !strcmp(got.file, want[k].file),
                    "eventring %s: another output file under ulimit -n %d",
                    name, NOFILE);
    reading_free(&got);
    reading_free(&want[k]);
  }
}
END_TEST

/* Followed: the files would all stay open, so it is refused. */
START_TEST(test_followers_refuse) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("built without tracing");
  if (!er_prog_path("drop_threads")) ER_SKIP("drop_threads is not built");
  char d[PATH_MAX], out[PATH_MAX];
  const char *tmp = filled_dir(d);

  struct rlimit rl = {NOFILE, NOFILE};
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
  for (int k = 0; k < NREADERS; k++) {
    snprintf(out, sizeof out, "%s/out-%d", tmp, k);
    const char *const *args = reader_args(k, d, out, 1);
    struct er_run r = er_run_tool(tmp, args, 0);
    ck_assert_msg(er_exit_code(&r, "the tool") == 1,
                  "eventring %s --follow --dir: status %d, stderr:\n%.600s",
                  args[0], r.status, r.err);
    char want[64];
    snprintf(want, sizeof want, "of the %d ring files in", NFILES);
    ck_assert_msg(strstr(r.err, want) && strstr(r.err, "no file descriptor"),
                  "eventring %s: stderr does not say what was not read:\n"
                  "%.600s",
                  args[0], r.err);
    ck_assert_msg(!strstr(r.err, "(skipped)"), "%.600s", r.err);
    ck_assert_msg(r.out[0] == '\0', "eventring %s reported:\n%.500s", args[0],
                  r.out);
    if (k >= 3) {
      struct stat st;
      ck_assert_msg(stat(out, &st) != 0 || st.st_size == 0,
                    "eventring %s wrote %s", args[0], out);
    }
    er_run_free(&r);
  }
}
END_TEST

static TCase *tc_nofile(void) {
  TCase *tc = er_tcase("nofile");
  tcase_add_test(tc, test_readers_read_all);
  tcase_add_test(tc, test_followers_refuse);
  return tc;
}

ER_TEST_MAIN("dir_nofile", tc_nofile)
