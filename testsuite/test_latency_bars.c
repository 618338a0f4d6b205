/* Tests the bar chart of `eventring latency`: on a terminal (a
 * pseudo-terminal here) the report ends with one bar per power-of-two
 * bin, whose counts are the pauses in that bin; piped, the report is the
 * table alone. */
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lat_craft.h"

/* Pauses of known durations: 5 in [2048, 4096) ns, none in the next five
 * bins, 20 in [131072, 262144) and 1 in [1048576, 2097152). */
static void make_file(const char *path) {
  struct craft c;
  craft_init(&c);
  uint64_t ts = 1000000;
  craft_lifecycle(&c, 0, ts, EVENTRING_LIFECYCLE_RING_START, 42);
  for (int i = 0; i < 5; i++) ts = craft_pause(&c, 0, ts + 100, 2048 + i * 400);
  for (int i = 0; i < 20; i++)
    ts = craft_pause(&c, 0, ts + 100, 131072 + i * 6000);
  ts = craft_pause(&c, 0, ts + 100, 2000000);
  craft_write(&c, path);
  craft_free(&c);
}

/* Runs `eventring latency [span] path` (span: "--span NAME" as two
 * words, or NULL) with stdout on a pseudo-terminal and returns what it
 * wrote there (without the terminal's carriage returns), or NULL when
 * there is no pseudo-terminal. */
static char *run_on_terminal(const char *path, const char *span) {
  int master, slave;
  if (openpty(&master, &slave, NULL, NULL, NULL) < 0) return NULL;
  fcntl(master, F_SETFD, FD_CLOEXEC);
  fcntl(slave, F_SETFD, FD_CLOEXEC);
  char *argv[] = {(char *)er_tool_path(), "latency", "--per-phase",
                  (char *)path, NULL, NULL};
  if (span) {
    argv[2] = "--span";
    argv[3] = (char *)span;
    argv[4] = (char *)path;
  }
  pid_t pid = er_spawn(argv, ER_FD_NULL, slave, ER_FD_NULL, NULL, 0);
  close(slave);
  size_t len = 0, cap = 1 << 16;
  char *out = malloc(cap);
  ck_assert_ptr_nonnull(out);
  int st = -1, done = 0;
  double deadline = er_now() + ER_RUN_TIMEOUT;
  /* Drain the master until the tool has ended and nothing is left. */
  for (;;) {
    struct pollfd pfd = {master, POLLIN, 0};
    int ready = poll(&pfd, 1, 50) == 1;
    ssize_t m = ready ? read(master, out + len, cap - 1 - len) : 0;
    if (m > 0) {
      len += (size_t)m;
      ck_assert_uint_lt(len, cap - 1);
      continue;
    }
    if (done) break;
    if (waitpid(pid, &st, WNOHANG) == pid) done = 1;
    ck_assert_msg(er_now() < deadline, "latency on a terminal did not end");
  }
  close(master);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
  out[len] = 0;
  char *w = out;
  for (char *r = out; *r; r++)
    if (*r != '\r') *w++ = *r;
  *w = 0;
  return out;
}

/* The count ending the bar line of the bin that starts at `lo` (as the
 * tool writes durations), and the length of its bar in *bar. */
static long bin_count(const char *out, const char *lo, int *bar) {
  char pat[64];
  snprintf(pat, sizeof pat, "%s .. ", lo);
  const char *p = strstr(out, pat);
  ck_assert_msg(p != NULL, "no bin from %s in:\n%s", lo, out);
  const char *eol = strchr(p, '\n');
  ck_assert_ptr_nonnull(eol);
  const char *q = eol;
  while (q > p && q[-1] != ' ') q--;
  *bar = 0;
  for (const char *s = p; s < eol; s++) *bar += *s == '#';
  return strtol(q, NULL, 10);
}

START_TEST(test_terminal_chart) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/bars.events", dir);
  make_file(path);
  char *out = run_on_terminal(path, NULL);
  if (!out) ER_SKIP("no pseudo-terminal (openpty)");
  /* The table comes first, the chart after it. */
  const char *table = strstr(out, "percentile"), *chart = strstr(out, " .. ");
  ck_assert_msg(table && chart && table < chart, "%s", out);
  int bar;
  ck_assert_int_eq(bin_count(out, "2.048 us", &bar), 5);
  ck_assert_int_eq(bar, 10); /* 5 / 20 of 40 */
  ck_assert_int_eq(bin_count(out, "4.096 us", &bar), 0);
  ck_assert_int_eq(bar, 0);
  ck_assert_int_eq(bin_count(out, "65.54 us", &bar), 0);
  ck_assert_int_eq(bin_count(out, "131.1 us", &bar), 20);
  ck_assert_int_eq(bar, 40);
  ck_assert_int_eq(bin_count(out, "1.049 ms", &bar), 1);
  ck_assert_int_eq(bar, 2);
  /* Nothing below the smallest pause's bin, nothing above the largest. */
  ck_assert_ptr_null(strstr(out, "1.024 us .. "));
  ck_assert_ptr_null(strstr(out, "2.097 ms .. "));
  free(out);
}
END_TEST

START_TEST(test_piped_table_only) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/bars.events", dir);
  make_file(path);
  const char *args[] = {"latency", path, NULL};
  struct lat_run r = lat_run_tool(args);
  lat_assert_ok(&r);
  ck_assert_msg(strstr(r.out, "percentile") != NULL, "%s", r.out);
  ck_assert_msg(strstr(r.out, " .. ") == NULL && strchr(r.out, '#') == NULL,
                "%s", r.out);
  lat_run_free(&r);
}
END_TEST

/* latency --span: the spans' distribution gets its chart too. */
START_TEST(test_span_chart) {
  ER_NEED_TOOL();
  char path[PATH_MAX];
  struct craft c;
  craft_new(&c, path, "spans");
  craft_user_name(&c, 0, "req");
  uint64_t ts = 1000000;
  craft_lifecycle(&c, 0, ts, EVENTRING_LIFECYCLE_RING_START, 42);
  /* 3 spans in [4096, 8192) ns and 6 in [65536, 131072). */
  for (int i = 0; i < 9; i++) {
    craft_event(&c, 0, 1, ER_UEV_SPAN_BEGIN, 0, ts, NULL, 0);
    ts += i < 3 ? 5000 : 70000;
    craft_event(&c, 0, 1, ER_UEV_SPAN_END, 0, ts, NULL, 0);
    ts += 100;
  }
  craft_write(&c, path);
  craft_free(&c);
  char *out = run_on_terminal(path, "req");
  if (!out) ER_SKIP("no pseudo-terminal (openpty)");
  int bar;
  ck_assert_int_eq(bin_count(out, "4.096 us", &bar), 3);
  ck_assert_int_eq(bar, 20);
  ck_assert_int_eq(bin_count(out, "65.54 us", &bar), 6);
  ck_assert_int_eq(bar, 40);
  free(out);
}
END_TEST

static TCase *tc_bars(void) {
  TCase *tc = er_tcase("bars");
  tcase_add_test(tc, test_terminal_chart);
  tcase_add_test(tc, test_piped_table_only);
  tcase_add_test(tc, test_span_chart);
  return tc;
}

ER_TEST_MAIN("latency_bars", tc_bars)
