/* test_watch_tree -- `eventring watch -- CMD` follows every process of the
 * command's tree, as `stats -- CMD` reads it: `sh -c 'W & W; wait'`, two
 * traced programs under an untraced shell, gives one snapshot for each
 * program's trigger, each named after the program that wrote it
 * (watch_writer), never after the shell; a process that execs another
 * program is followed into it, the snapshot of the new image's trigger
 * named after that image; and `-o DIR` is where they go.
 */
#include <dirent.h>

#include "harness.h"
#include "testlib.h"

/* How many names in `dir` contain `part` and end in ".events", the pids
 * they name after `part` into `pids` (at most `max`). */
static int snapshots(const char *dir, const char *part, long *pids, int max) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    const char *at = strstr(e->d_name, part);
    if (!at || len < 7 || strcmp(e->d_name + len - 7, ".events")) continue;
    if (n < max) pids[n] = strtol(at + strlen(part), NULL, 10);
    n++;
  }
  closedir(d);
  return n;
}

START_TEST(test_tree) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  const char *writer = er_prog_path("watch_writer");
  if (!writer) ER_SKIP("watch_writer is not built");
  char dir[64], out[PATH_MAX], script[2 * PATH_MAX + 128];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(out, sizeof out, "%s/snaps", dir);
  ck_assert_int_eq(mkdir(out, 0777), 0);
  /* Two traced children of an untraced shell, which outlives them. */
  snprintf(script, sizeof script,
           "'%s' --inject event --lead 100 --tail 100 & "
           "'%s' --inject event --lead 100 --tail 100; wait; true",
           writer, writer);
  const char *args[] = {"watch", "--when", "event:app.slow", "-o", out,
                        "--",    "sh",     "-c",             script, NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "injected\ninjected\n");

  long pids[4];
  int n = snapshots(out, "-watch_writer-", pids, 4);
  ck_assert_msg(n == 2, "%d snapshots of watch_writer (want 2); stderr: %s",
                n, r.err);
  ck_assert_msg(pids[0] > 0 && pids[1] > 0 && pids[0] != pids[1],
                "pids %ld and %ld", pids[0], pids[1]);
  ck_assert_int_eq(snapshots(out, "-sh-", pids, 4), 0);
  ck_assert_msg(strstr(r.err, "in watch_writer (pid ") != NULL, "%s", r.err);
  er_run_free(&r);
}
END_TEST

/* proc_tree execs watch_writer (the same pid) once the watcher has its
 * file open: the trigger is the new image's, and so is the name. */
START_TEST(test_exec) {
  ER_NEED_TOOL();
  if (er_tracing_off()) ER_SKIP("tracing is compiled out");
  /* er_prog_path's answer lives until its next call: copied. */
  char writer[PATH_MAX], tree[PATH_MAX];
  if (!er_prog_path("watch_writer") || !er_prog_path("proc_tree"))
    ER_SKIP("watch_writer or proc_tree is not built");
  snprintf(writer, sizeof writer, "%s", er_prog_path("watch_writer"));
  snprintf(tree, sizeof tree, "%s", er_prog_path("proc_tree"));
  char dir[64], out[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  snprintf(out, sizeof out, "%s/snaps", dir);
  ck_assert_int_eq(mkdir(out, 0777), 0);
  const char *args[] = {"watch",  "--when",   "event:app.slow", "-o",
                        out,      "--",       tree,             "exec",
                        writer,   "--inject", "event",          "--lead",
                        "100",    "--tail",   "100",            NULL};
  struct er_run r = er_run_tool(dir, args, 0);
  ck_assert_msg(er_exit_code(&r, "eventring watch") == 0, "%s", r.err);
  long pids[4];
  int n = snapshots(out, "-watch_writer-", pids, 4);
  ck_assert_msg(n == 1, "%d snapshots of watch_writer (want 1); stderr: %s",
                n, r.err);
  ck_assert_int_eq(snapshots(out, "-proc_tree-", pids + 1, 3), 0);
  er_run_free(&r);
}
END_TEST

static TCase *tc_watch_tree(void) {
  TCase *tc = er_tcase("watch_tree");
  tcase_add_test(tc, test_tree);
  tcase_add_test(tc, test_exec);
  return tc;
}

ER_TEST_MAIN("watch_tree", tc_watch_tree)
