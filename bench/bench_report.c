/* bench_report.c -- what `eventring report` costs: the time to build the
 * page of a run of a million events, and the page's size for ten million.
 *
 * Issue 16 sets both limits: the page builds in under 2 s for a million
 * events, and stays under 2 MB for a ten-million-event run (it holds
 * aggregates, not events).
 *
 * Method.  A writer process (this program re-executed with `--write DIR
 * N E`) traces into DIR with rings of 2^E words, large enough that
 * nothing wraps, writes at least N events in the mix a runtime produces
 * (as bench_reader's: nested phases, counters, a user span around a user
 * int, a unit), stops and keeps the file.  Two files are made: 1,000,000
 * events and 10,000,000 events.  Then the eventring command (beside this
 * program: ../tools/eventring, or EVENTRING_BENCH_TOOL) runs `report -o
 * PAGE FILE` on the small file RUNS times, interleaved with `stats
 * --json FILE` on the same file as a same-run reference (the report does
 * stats' reading plus the pages's aggregates), timed from spawn to exit;
 * and once on the large file, whose page size is the figure.
 *
 * Output: a table on stdout, and the figures as one JSON document written
 * to the file named by EVENTRING_BENCH_OUT when it is set.  The exit
 * status reports errors only, never slowness or size.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchlib.h"
#include "eventring.h"

#define SMALL_EVENTS 1000000
#define SMALL_LOG2 "e=22" /* 4 Mi words: 1 M events at ~2.25 words */
#define LARGE_EVENTS 10000000
#define LARGE_LOG2 "e=25" /* 32 Mi words */
#define TIME_LIMIT_S 2.0
#define SIZE_LIMIT_BYTES (2.0 * 1024 * 1024)

static int id_int, id_span, id_unit;

/* One slice (bench/slice.c): the reader benchmark's mix without its
 * custom events. */
static unsigned emit_slice(uint64_t i) {
  return bl_emit_slice(i, id_span, id_int, id_unit);
}

/* Writes the file and prints its path. */
static int run_write(const char *dir, const char *events, const char *e) {
  alarm(60);
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAMLRUNPARAM", e, 1);
  id_int = eventring_register("bench.int", EVENTRING_TYPE_INT);
  id_span = eventring_register("bench.request", EVENTRING_TYPE_SPAN);
  id_unit = eventring_register("bench.unit", EVENTRING_TYPE_UNIT);
  if (id_int < 0 || id_span < 0 || id_unit < 0) {
    fprintf(stderr, "bench_report: eventring_register failed\n");
    return 2;
  }
  int rc = eventring_start();
  if (rc == EVENTRING_E_DISABLED) return BL_EXIT_DISABLED;
  if (rc != 0) {
    fprintf(stderr, "bench_report: eventring_start: %s\n",
            eventring_strerror(rc));
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s", eventring_path());
  uint64_t want = strtoull(events, NULL, 10), n = 0;
  for (uint64_t i = 0; n < want; i++) n += emit_slice(i);
  eventring_stop();
  printf("%s\n", path);
  return 0;
}

/* Runs the tool with args (NULL-terminated), stdout to /dev/null; returns
 * the seconds from spawn to exit, or -1 when it failed. */
static double timed_tool(const char *tool, char *const args[]) {
  char *argv[16];
  int n = 0;
  argv[n++] = (char *)tool;
  for (; args[n - 1] && n < 15; n++) argv[n] = args[n - 1];
  argv[n] = NULL;
  uint64_t t0 = bl_now_ns();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) dup2(fd, 1);
    execv(tool, argv);
    _exit(127);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid) return -1;
  double s = (double)(bl_now_ns() - t0) / 1e9;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "bench_report: %s %s failed (status %d)\n", tool,
            args[0], st);
    return -1;
  }
  return s;
}

static int make_file(const char *self, const char *dir, const char *events,
                     const char *e, char *path, size_t len) {
  int st = bl_spawn(self, (char *[]){"--write", (char *)dir, (char *)events,
                                     (char *)e, NULL},
                    path, len);
  if (st != 0) return st == BL_EXIT_DISABLED ? st : 2;
  path[strcspn(path, "\n")] = 0;
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--write"))
    return run_write(argv[2], argv[3], argv[4]);
  char self[4096], tool[4096];
  bl_self(argv[0], self, sizeof self);
  if (bl_tool(argv[0], "bench_report", tool, sizeof tool) != 0) return 2;
  char dir[] = "/tmp/bench_report.XXXXXX";
  if (!mkdtemp(dir)) {
    perror("bench_report: mkdtemp");
    return 2;
  }
  int rc = 0;
  char small[4096], large[4096], page[4200];
  snprintf(page, sizeof page, "%s/page.html", dir);
  small[0] = large[0] = 0;
  rc = make_file(self, dir, "1000000", SMALL_LOG2, small, sizeof small);
  if (!rc) rc = make_file(self, dir, "10000000", LARGE_LOG2, large,
                          sizeof large);
  if (rc == BL_EXIT_DISABLED) {
    printf("bench_report: tracing is disabled in this build\n");
    rc = 0;
    goto out;
  }
  if (rc) goto out;

  int runs = bl_runs();
  struct bl_stat rep = {0}, stats = {0};
  for (int i = 0; i < runs && !rc; i++) {
    double a = timed_tool(tool, (char *[]){"report", "-o", page, small, NULL});
    double b = timed_tool(tool, (char *[]){"stats", "--json", small, NULL});
    if (a < 0 || b < 0) rc = 2;
    bl_add(&rep, a);
    bl_add(&stats, b);
  }
  if (rc) goto out;
  bl_summarize(&rep);
  bl_summarize(&stats);
  struct stat sb;
  double small_bytes = stat(page, &sb) == 0 ? (double)sb.st_size : -1;
  double large_s =
      timed_tool(tool, (char *[]){"report", "-o", page, large, NULL});
  double large_bytes = stat(page, &sb) == 0 ? (double)sb.st_size : -1;
  if (large_s < 0 || large_bytes < 0) {
    rc = 2;
    goto out;
  }

  printf("eventring report, %d runs (median, min .. max):\n", runs);
  printf("  1 M events:  report %.3f s (%.3f .. %.3f), limit %.1f s; "
         "stats --json %.3f s; ratio %.2f\n",
         rep.median, rep.min, rep.max, TIME_LIMIT_S, stats.median,
         stats.median > 0 ? rep.median / stats.median : 0);
  printf("               page %.0f bytes\n", small_bytes);
  printf("  10 M events: report %.3f s, page %.0f bytes, limit %.0f bytes\n",
         large_s, large_bytes, SIZE_LIMIT_BYTES);

  FILE *out;
  if (bl_json_open("bench_report", &out) < 0) {
    rc = 2;
    goto out;
  }
  if (out) {
    fprintf(out, "{\"runs\": %d, \"report_1m_s\": {", runs);
    bl_json_stat(out, &rep);
    fprintf(out, "}, \"stats_1m_s\": {");
    bl_json_stat(out, &stats);
    fprintf(out, "}, \"page_1m_bytes\": %.0f, \"report_10m_s\": %.4f, "
                 "\"page_10m_bytes\": %.0f, \"time_limit_s\": %.1f, "
                 "\"size_limit_bytes\": %.0f}\n",
            small_bytes, large_s, large_bytes, TIME_LIMIT_S,
            SIZE_LIMIT_BYTES);
    if (bl_json_close("bench_report", out) < 0) rc = 2;
  }
out:
  if (small[0]) unlink(small);
  if (large[0]) unlink(large);
  unlink(page);
  rmdir(dir);
  return rc;
}
