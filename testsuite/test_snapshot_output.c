/* test_snapshot_output -- where `eventring snapshot` writes, and in what
 * format: the extension of -o says the format as it does for `trace -o`
 * (x.json a JSON trace, x.fxt a Fuchsia trace, x.events a compact ring
 * file; a contradicting --format is a usage error), and default names are
 * unique: snapshots taken one after the other, several within the same
 * second, each get a file of their own.
 */
#include <dirent.h>

#include "harness.h"
#include "testlib.h"

/* The first `n` bytes of `path` (at most 16) into `buf`; returns how many
 * there were. */
static size_t head(const char *path, unsigned char *buf, size_t n) {
  size_t len;
  char *all = er_slurp(path, &len);
  if (len < n) n = len;
  memcpy(buf, all, n);
  free(all);
  return n;
}

START_TEST(test_format_from_extension) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char ring[PATH_MAX], json[PATH_MAX], fxt[PATH_MAX], events[PATH_MAX];
  ER_NEED_VECTOR(dir, "ocaml54-basic", ring);
  snprintf(json, sizeof json, "%s/x.json", dir);
  snprintf(fxt, sizeof fxt, "%s/x.fxt", dir);
  snprintf(events, sizeof events, "%s/x.events", dir);
  unsigned char b[16];

  struct er_run r = er_run_tool(
      dir, (const char *[]){"snapshot", "-o", json, ring, NULL}, 0);
  ck_assert_msg(er_exit_code(&r, "snapshot") == 0, "%s", r.err);
  er_run_free(&r);
  ck_assert_uint_ge(head(json, b, 1), 1);
  ck_assert_msg(b[0] == '{', "x.json does not hold JSON (0x%02x)", b[0]);

  r = er_run_tool(dir, (const char *[]){"snapshot", "-o", fxt, ring, NULL},
                  0);
  ck_assert_msg(er_exit_code(&r, "snapshot") == 0, "%s", r.err);
  er_run_free(&r);
  /* A Fuchsia trace opens with its magic number record. */
  static const unsigned char magic[8] = {0x10, 0x00, 0x04, 0x46,
                                         0x78, 0x54, 0x16, 0x00};
  ck_assert_uint_eq(head(fxt, b, 8), 8);
  ck_assert_msg(!memcmp(b, magic, 8), "x.fxt is not a Fuchsia trace");

  r = er_run_tool(dir, (const char *[]){"snapshot", "-o", events, ring, NULL},
                  0);
  ck_assert_msg(er_exit_code(&r, "snapshot") == 0, "%s", r.err);
  er_run_free(&r);
  r = er_run_tool(dir, (const char *[]){"dump", events, NULL}, 0);
  ck_assert_msg(er_exit_code(&r, "dump") == 0, "x.events: %s", r.err);
  er_run_free(&r);

  /* x.ctf is a CTF trace's directory. */
  char ctf[PATH_MAX], meta[PATH_MAX];
  snprintf(ctf, sizeof ctf, "%s/x.ctf", dir);
  snprintf(meta, sizeof meta, "%s/metadata", ctf);
  r = er_run_tool(dir, (const char *[]){"snapshot", "-o", ctf, ring, NULL},
                  0);
  ck_assert_msg(er_exit_code(&r, "snapshot") == 0, "%s", r.err);
  er_run_free(&r);
  ck_assert_int_eq(access(meta, F_OK), 0);

  /* A --format that contradicts the name: a usage error, no file. */
  char other[PATH_MAX];
  snprintf(other, sizeof other, "%s/y.json", dir);
  const char *const bad[][8] = {
      {"snapshot", "--format", "fxt", "-o", other, ring},
      {"snapshot", "--format", "events", "-o", other, ring},
      {"snapshot", "--format", "ctf", "-o", other, ring},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    r = er_run_tool(dir, bad[k], 0);
    ck_assert_int_eq(er_exit_code(&r, "snapshot"), 2);
    er_assert_one_error(&r, "does not match the extension of");
    er_run_free(&r);
    ck_assert_int_ne(access(other, F_OK), 0);
  }
}
END_TEST

/* Names in `dir` that end in `suffix`, counted. */
static int count(const char *dir, const char *suffix) {
  return er_count_entries(dir, suffix);
}

START_TEST(test_unique_default_names) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char ring[PATH_MAX], out[PATH_MAX];
  ER_NEED_VECTOR(dir, "ocaml54-basic", ring);
  snprintf(out, sizeof out, "%s/out", dir);
  ck_assert_int_eq(mkdir(out, 0777), 0);
  /* Default names go to the current directory, which the tool inherits
   * (this test runs in a process of its own). */
  ck_assert_int_eq(chdir(out), 0);
  /* Taken one after the other, at least two of three share a second
   * unless the three take more than one. */
  enum { N = 3 };
  const char *const fmts[] = {"events", "json"};
  for (int f = 0; f < 2; f++) {
    for (int i = 0; i < N; i++) {
      struct er_run r = er_run_tool(
          dir, (const char *[]){"snapshot", "--format", fmts[f], ring, NULL},
          0);
      ck_assert_msg(er_exit_code(&r, "snapshot") == 0, "snapshot %d: %s", i,
                    r.err);
      ck_assert_msg(strstr(r.err, "eventring: snapshot of ") == r.err,
                    "%s", r.err);
      er_run_free(&r);
    }
    char suffix[16];
    snprintf(suffix, sizeof suffix, ".%s", fmts[f]);
    ck_assert_int_eq(count(out, suffix), N);
  }
  ck_assert_int_eq(chdir(dir), 0);
  er_rmdir(out);
}
END_TEST

static TCase *tc_snapshot_output(void) {
  TCase *tc = er_tcase("snapshot_output");
  tcase_add_test(tc, test_format_from_extension);
  tcase_add_test(tc, test_unique_default_names);
  return tc;
}

ER_TEST_MAIN("snapshot_output", tc_snapshot_output)
