/* test_operands -- every operand of the tool is an input, the output
 * comes through -o alone, and no output ever replaces a ring file.
 *
 * Run on a real ring file (an OCaml 5 vector of testsuite/data):
 *   - `trace OUT FILE...` and `ctf OUTDIR FILE...`, the forms that took
 *     the output as the first operand, are usage errors that show the
 *     command to type instead, and write nothing (`trace c2.json
 *     other.events`, c2.json being a ring file, used to overwrite it);
 *   - -o naming an existing ring file that is not read is refused by
 *     every subcommand that writes a report there, and the file is left
 *     byte for byte as it was;
 *   - a report that fails leaves the file of -o as it was, and no
 *     temporary file behind.
 */
#include <dirent.h>

#include "harness.h"
#include "testlib.h"

/* Copies the file at `from` to `to` (created). */
static void copy(const char *from, const char *to) {
  size_t len;
  char *bytes = er_slurp(from, &len);
  FILE *f = fopen(to, "wx");
  ck_assert_msg(f != NULL, "%s: %s", to, strerror(errno));
  ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
  free(bytes);
}

/* Fails unless `path` holds exactly `len` bytes `bytes`. */
static void assert_bytes(const char *path, const char *bytes, size_t len) {
  size_t got;
  char *now = er_slurp(path, &got);
  ck_assert_msg(got == len && !memcmp(now, bytes, len),
                "%s changed (%zu bytes, %zu before)", path, got, len);
  free(now);
}

/* Fails when `dir` holds a file whose name starts with '.' (the tool's
 * temporary files, .NAME.XXXXXX). */
static void assert_no_tmp(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    ck_assert_msg(e->d_name[0] != '.' || !strcmp(e->d_name, ".") ||
                      !strcmp(e->d_name, ".."),
                  "a temporary file was left: %s/%s", dir, e->d_name);
  closedir(d);
}

/* Unpacks a vector into `dir` as `ring`, or skips. */
static void need_ring(const char *dir, char *ring) {
  ER_NEED_VECTOR(dir, "ocaml54-basic", ring);
}

START_TEST(test_trace_old_form) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char ring[PATH_MAX], c2[PATH_MAX], other[PATH_MAX], fresh[PATH_MAX];
  need_ring(dir, ring);
  snprintf(c2, sizeof c2, "%s/c2.json", dir);
  snprintf(other, sizeof other, "%s/other.events", dir);
  snprintf(fresh, sizeof fresh, "%s/new.json", dir);
  copy(ring, c2);
  copy(ring, other);
  size_t len;
  char *before = er_slurp(c2, &len);

  /* A ring file first: both operands are read, and no output is given. */
  struct er_run r =
      er_run_tool(dir, (const char *[]){"trace", c2, other, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "trace"), 2);
  er_assert_one_error(&r, "no output file given: write 'eventring trace -o "
                          "OUT.fxt");
  er_run_free(&r);
  assert_bytes(c2, before, len);

  /* A name that cannot be a ring file: the command to type instead. */
  r = er_run_tool(dir, (const char *[]){"trace", fresh, other, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "trace"), 2);
  char want[3 * PATH_MAX];
  snprintf(want, sizeof want, "'eventring trace -o %s %s'", fresh, other);
  er_assert_one_error(&r, want);
  er_run_free(&r);
  ck_assert_int_ne(access(fresh, F_OK), 0);

  /* -o OUT with several operands reads them all. */
  r = er_run_tool(dir, (const char *[]){"trace", "-o", fresh, other, c2, NULL},
                  0);
  er_assert_status(&r, 0);
  er_run_free(&r);
  ck_assert_int_eq(access(fresh, F_OK), 0);
  assert_bytes(c2, before, len);
  assert_no_tmp(dir);
  free(before);
}
END_TEST

START_TEST(test_ring_never_overwritten) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char ring[PATH_MAX], input[PATH_MAX], kept[4][PATH_MAX];
  need_ring(dir, ring);
  snprintf(input, sizeof input, "%s/in.events", dir);
  copy(ring, input);
  /* Ring files under the names each subcommand would write. */
  const char *names[] = {"keep.events", "keep.json", "keep.fxt",
                         "keep.html"};
  for (int i = 0; i < 4; i++) {
    snprintf(kept[i], sizeof kept[i], "%s/%s", dir, names[i]);
    copy(ring, kept[i]);
  }
  size_t len;
  char *before = er_slurp(ring, &len);
  const char *const runs[][8] = {
      {"dump", "-o", kept[0], input},
      {"stats", "--json", "-o", kept[1], input},
      {"latency", "-o", kept[0], input},
      {"trace", "-o", kept[1], input},
      {"trace", "--output", kept[2], input},
      {"trace", "--format", "fuchsia", "-o", kept[0], input},
      {"report", "-o", kept[3], input},
  };
  for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
    struct er_run r = er_run_tool(dir, runs[k], 0);
    ck_assert_msg(er_exit_code(&r, runs[k][0]) == 2, "%s: %s", runs[k][0],
                  r.err);
    er_assert_one_error(&r, "is a ring file: it is read, never overwritten");
    er_run_free(&r);
    for (int i = 0; i < 4; i++) assert_bytes(kept[i], before, len);
  }
  /* A snapshot never overwrites any file. */
  struct er_run r = er_run_tool(
      dir, (const char *[]){"snapshot", "-o", kept[0], input, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "snapshot"), 1);
  er_assert_one_error(&r, "already exists");
  er_run_free(&r);
  assert_bytes(kept[0], before, len);
  assert_no_tmp(dir);
  free(before);
}
END_TEST

START_TEST(test_failed_report_keeps_file) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char out[PATH_MAX], missing[PATH_MAX], ring[PATH_MAX];
  need_ring(dir, ring);
  snprintf(out, sizeof out, "%s/report.txt", dir);
  snprintf(missing, sizeof missing, "%s/none.events", dir);
  er_write_text(out, "the last good report\n", 1);
  const char *const runs[][8] = {
      {"dump", "-o", out, missing},
      {"stats", "-o", out, missing},
  };
  for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
    struct er_run r = er_run_tool(dir, runs[k], 0);
    ck_assert_msg(er_exit_code(&r, runs[k][0]) != 0, "%s: %s", runs[k][0],
                  r.err);
    er_run_free(&r);
    er_assert_content(out, "the last good report\n");
    assert_no_tmp(dir);
  }
  /* A report written whole replaces it. */
  struct er_run r =
      er_run_tool(dir, (const char *[]){"dump", "-o", out, ring, NULL}, 0);
  er_assert_status(&r, 0);
  er_run_free(&r);
  size_t len;
  char *now = er_slurp(out, &len);
  ck_assert_msg(len > 100 && strstr(now, "the last good") == NULL, "%s",
                now);
  free(now);
  assert_no_tmp(dir);
}
END_TEST

static TCase *tc_operands(void) {
  TCase *tc = er_tcase("operands");
  tcase_add_test(tc, test_trace_old_form);
  tcase_add_test(tc, test_ring_never_overwritten);
  tcase_add_test(tc, test_failed_report_keeps_file);
  return tc;
}

ER_TEST_MAIN("operands", tc_operands)
