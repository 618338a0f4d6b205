/* Tests that ring files, snapshots and reports record the program name and not its arguments (which may hold secrets) unless EVENTRING_RECORD_CMDLINE or eventring_record_cmdline() asks for the full command line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"
#include "testlib.h"

#define SECRET "--password=hunter2-SECRET"

/* Whether the file at `path` holds `needle` anywhere. */
static int file_has(const char *path, const char *needle) {
  size_t len;
  char *text = er_slurp(path, &len);
  int has = memmem(text, len, needle, strlen(needle)) != NULL;
  free(text);
  return has;
}

/* The command line the file at `path` records (malloc'd). */
static char *recorded(const char *path) {
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  const char *line = eventring_cursor_cmdline(c);
  ck_assert_ptr_nonnull(line);
  char *copy = strdup(line);
  eventring_cursor_free(c);
  return copy;
}

/* Runs envstart SECRET traced and preserved in `dir`, then a snapshot of
 * its file and a report of it run under `eventring report -- ...`; checks
 * that each holds the secret exactly when `want` says. */
static void run_and_check(const char *dir, int want) {
  const char *prog = er_prog_path("envstart");
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", prog);
  setenv("OCAMLRUNPARAM", "e=10,d=2", 1); /* a small file to search */
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  struct er_run r = er_run(dir, p, (const char *[]){SECRET, NULL},
                           "OCAML_RUNTIME_EVENTS_START=1", 0);
  ck_assert_int_eq(er_exit_code(&r, "envstart"), 0);
  char path[PATH_MAX];
  ck_assert_int_eq(sscanf(r.out, "active=1 path=%4095s", path), 1);
  er_run_free(&r);

  char *line = recorded(path);
  if (want) {
    ck_assert_msg(strstr(line, SECRET) && strstr(line, "envstart"),
                  "recorded: '%s'", line);
  } else {
    ck_assert_str_eq(line, "envstart");
  }
  free(line);
  ck_assert_int_eq(file_has(path, SECRET), want);

  char snap[PATH_MAX + 16];
  snprintf(snap, sizeof snap, "%s/snap.out", dir);
  r = er_run_tool(dir, (const char *[]){"snapshot", "-o", snap, path, NULL}, 0);
  ck_assert_int_eq(er_exit_code(&r, "snapshot"), 0);
  er_run_free(&r);
  ck_assert_int_eq(file_has(snap, SECRET), want);

  char html[PATH_MAX + 16];
  snprintf(html, sizeof html, "%s/report.html", dir);
  r = er_run_tool(dir, (const char *[]){"report", "-o", html, "--", p, SECRET,
                                        NULL},
                  0);
  ck_assert_int_eq(er_exit_code(&r, "report"), 0);
  er_run_free(&r);
  ck_assert_int_eq(file_has(html, SECRET), want);
  ck_assert(file_has(html, "envstart"));
  unlink(snap);
  unlink(html);
  unlink(path);
}

/* By default: the name only, in the file, the snapshot and the report
 * (before the fix: all three held the secret). */
START_TEST(test_name_only_by_default) {
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  ER_NEED_TOOL();
  if (!er_prog_path("envstart")) ER_SKIP("envstart is not built");
  const char *dir = er_tmpdir();
  run_and_check(dir, 0);
  /* An empty value or 0 does not ask. */
  setenv("EVENTRING_RECORD_CMDLINE", "0", 1);
  run_and_check(dir, 0);
  setenv("EVENTRING_RECORD_CMDLINE", "", 1);
  run_and_check(dir, 0);
  er_rmdir(dir);
}
END_TEST

/* EVENTRING_RECORD_CMDLINE=1: the whole line, everywhere. */
START_TEST(test_env_opt_in) {
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  ER_NEED_TOOL();
  if (!er_prog_path("envstart")) ER_SKIP("envstart is not built");
  const char *dir = er_tmpdir();
  setenv("EVENTRING_RECORD_CMDLINE", "1", 1);
  run_and_check(dir, 1);
  er_rmdir(dir);
}
END_TEST

/* /proc/self/cmdline joined by spaces, as the library records it. */
static void own_cmdline(char *buf, size_t size) {
  FILE *f = fopen("/proc/self/cmdline", "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, size - 1, f);
  fclose(f);
  while (n > 0 && buf[n - 1] == '\0') n--;
  for (size_t i = 0; i < n; i++)
    if (buf[i] == '\0') buf[i] = ' ';
  buf[n] = '\0';
}

/* The program's own choice: it applies to the live file at once, to the
 * next file, and wins over the environment. */
START_TEST(test_api_choice) {
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  er_tmpdir();
  char full[256];
  own_cmdline(full, sizeof full);
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", eventring_path());
  char *line = recorded(path);
  ck_assert_str_eq(line, program_invocation_short_name);
  free(line);
  eventring_record_cmdline(1);
  line = recorded(path);
  ck_assert_str_eq(line, full);
  free(line);
  ck_assert_int_eq(eventring_stop(), 0);

  /* The environment asks, the program said no: the name. */
  setenv("EVENTRING_RECORD_CMDLINE", "1", 1);
  eventring_record_cmdline(0);
  ck_assert_int_eq(eventring_start(), 0);
  line = recorded(eventring_path());
  ck_assert_str_eq(line, program_invocation_short_name);
  free(line);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

static TCase *tc_privacy(void) {
  TCase *tc = er_tcase("privacy");
  tcase_add_test(tc, test_name_only_by_default);
  tcase_add_test(tc, test_env_opt_in);
  tcase_add_test(tc, test_api_choice);
  return tc;
}

ER_TEST_MAIN("cmdline_privacy", tc_privacy)
