/* bench_watch.c -- the event rate one `eventring watch` sustains, and its
 * memory.
 *
 * A watcher keeps the last --before of every domain's events, so it must
 * read as fast as the rings fill and hold no more than its bound.  Issue
 * 12 asks what rate one watcher sustains on one core and how much
 * resident memory it takes.
 *
 * Method.  A run (this program re-executed with `--one full`) forks a writer
 * that starts tracing (default ring size) and, once the watcher is
 * following it, writes a runtime's mix (a begin and end of a phase, a
 * counter and a user int, repeated) as fast as it can for RUN_MS; it then
 * reports how many events it wrote.  The watcher is the real command,
 * `eventring watch --when pause>3600s --pid PID`, which reads every event
 * into its windows and triggers nothing.  On a machine of two or more
 * CPUs the writer has a core of its own and the watcher one too: when the
 * watcher cannot keep up, the writer overwrites what it has not read
 * (counted as lost, which it says on stderr).  Figures: the events the
 * watcher read (written - lost), its CPU time (user + system, from
 * wait4), their ratio (the sustained rate on one core), the share lost,
 * and its peak resident size (ru_maxrss).
 *
 * The eventring command is tools/eventring below the current directory
 * (make bench runs in the build directory), or EVENTRING_BENCH_TOOL.
 *
 * Rules.  Issue 24 asks that watch's rules (aggregates over windows,
 * `for`, and/or) keep the watcher under 5 % of one core on a program of
 * 100 k events/s.  Two more runs per round: the writer paces itself to
 * PACED_RATE events a second (a runtime's slice of 17 events, bench/
 * slice.c, as many as are due each millisecond) for RUN_MS, followed
 * once by the watcher with RULES (percentiles, counts, rates, max,
 * gc_share, for, and/or/not over every kind of source; none fires), once
 * with the one simple condition above.  Figure: the watcher's CPU time
 * over the wall time from the start of writing to the watcher's exit, in
 * per cent of one core.
 *
 * Output: a table on stdout; JSON to the file EVENTRING_BENCH_OUT names.
 * The exit status reports errors only.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "eventring.h"

#define RUN_MS 1500
#define PACED_RATE 100000
/* The rules of the paced run: every kind of aggregate and operator,
 * thresholds no event reaches. */
static const char *const RULES[] = {
    "p99(pause, 10s) > 5s",
    "gc_share(10s) > 90%",
    "count(event:bench.unit, 1s) > 1000000000",
    "p99(span:bench.span, 1s) > 1s for 2s",
    "max(int:bench.value, 5s) > 1000000000000",
    "rate(event:bench.unit, 1s) > 10000000/s and p50(phase:minor, 1s) > 1s",
    "(p999(phase:major_slice, 10s) > 1s or count(lost, 1s) > 0) and not "
    "avg(int:bench.value, 1s) < 0",
    "pause>3600s",
};
#define N_RULES (int)(sizeof RULES / sizeof RULES[0])

static const char *tool_path(void) {
  const char *t = getenv("EVENTRING_BENCH_TOOL");
  return t && *t ? t : "tools/eventring";
}

/* The writer: `go` is the read end of a pipe that says when to start,
 * `out` where the count goes. */
static void writer(int go, int out, int paced) {
  int id = eventring_register("bench.value", EVENTRING_TYPE_INT);
  int span = eventring_register("bench.span", EVENTRING_TYPE_SPAN);
  int unit = eventring_register("bench.unit", EVENTRING_TYPE_UNIT);
  if (id < 0 || span < 0 || unit < 0 || eventring_start() != 0)
    _exit(BL_EXIT_DISABLED);
  char c;
  if (write(out, "r", 1) != 1 || read(go, &c, 1) != 1) _exit(2);
  uint64_t n = 0, start = bl_now_ns();
  uint64_t end = start + (uint64_t)RUN_MS * 1000000u;
  /* Paced: each millisecond, the slices due by its end. */
  for (uint64_t t = start; paced && t < end; t += 1000000u) {
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
    uint64_t due = (uint64_t)PACED_RATE * (t - start + 1000000u) / 1000000000u;
    while (n < due) n += bl_emit_slice(n, span, id, unit);
  }
  while (!paced && bl_now_ns() < end)
    for (int k = 0; k < 256; k++, n += 4) {
      eventring_begin(EVENTRING_PHASE_MINOR);
      eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, n);
      eventring_write_int(id, k);
      eventring_end(EVENTRING_PHASE_MINOR);
    }
  char buf[32];
  int len = snprintf(buf, sizeof buf, "%" PRIu64 "\n", n);
  if (write(out, buf, (size_t)len) != len) _exit(2);
  _exit(0);
}

/* Reads what `fd` gives until `want` is in `buf` or it ends. */
static size_t read_until(int fd, char *buf, size_t len, size_t have,
                         const char *want) {
  while (have + 1 < len) {
    buf[have] = 0;
    if (want && strstr(buf, want)) break;
    ssize_t r = read(fd, buf + have, len - 1 - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    have += (size_t)r;
  }
  buf[have] = 0;
  return have;
}

/* One run: the writer at full speed (mode "full"), or paced with the
 * watcher following rules ("rules") or one condition ("plain").  Prints
 * written, lost, the watcher's CPU seconds, its peak RSS and the wall
 * seconds from the start of writing to the watcher's exit. */
static int run_one(const char *mode) {
  int paced = strcmp(mode, "full") != 0;
  char dir[] = "/tmp/eventring-bench-watch-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  int go, cnt;
  pid_t w;
  int rc = bl_fork_writer(writer, paced, &w, &go, &cnt);
  if (rc != 0) {
    rmdir(dir);
    return rc;
  }
  char buf[8192];
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)w);
  /* After the writer's fork: the writer must not hold the end that
   * tells us the watcher has finished. */
  char *args[8 + 2 * N_RULES] = {"eventring", "watch"};
  int n = 2;
  for (int i = 0; i < N_RULES; i++)
    if (!strcmp(mode, "rules") || !strcmp(RULES[i], "pause>3600s")) {
      args[n++] = "--when";
      args[n++] = (char *)RULES[i];
    }
  char *rest[] = {"--out", dir, "--pid", pid, NULL};
  memcpy(args + n, rest, sizeof rest);
  pid_t t;
  int err;
  if (bl_exec_tool("bench_watch", tool_path(), args, &t, &err)) return 2;
  size_t have = read_until(err, buf, sizeof buf, 0, "watching");
  int ok = t > 0 && strstr(buf, "watching") != NULL;
  uint64_t began = bl_now_ns();
  if (write(go, "g", 1) != 1) ok = 0;
  char count[64];
  size_t cn = read_until(cnt, count, sizeof count, 0, "\n");
  int st;
  waitpid(w, &st, 0);
  have = read_until(err, buf, sizeof buf, have, NULL);
  struct rusage ru;
  int tst = 0;
  if (t > 0) wait4(t, &tst, 0, &ru);
  double wall = (double)(bl_now_ns() - began) / 1e9;
  rmdir(dir);
  if (!ok || !cn || !WIFEXITED(tst) || WEXITSTATUS(tst) != 0) {
    fprintf(stderr, "bench_watch: the watcher failed: %s\n", buf);
    return 2;
  }
  double written = strtod(count, NULL), lost = 0;
  /* "eventring: N events lost (...)" when it could not keep up. */
  const char *l = strstr(buf, "eventring: ");
  for (; l; l = strstr(l + 1, "eventring: ")) {
    char *e;
    double v = strtod(l + 11, &e);
    if (e != l + 11 && !strncmp(e, " events lost", 12)) lost = v;
  }
  double cpu = bl_cpu_seconds(&ru);
  printf("%.0f %.0f %.6f %ld %.6f\n", written, lost, cpu, ru.ru_maxrss, wall);
  return 0;
}

enum { F_READ, F_CPU, F_RATE, F_LOST, F_RSS, F_PACED, F_RULES, F_PLAIN,
       N_F };

/* One run of `mode` (run_one) in a new process: 0 and its figures, 1 on
 * failure, BL_EXIT_DISABLED. */
static int spawn_run(const char *self, const char *mode, double *written,
                     double *lost, double *secs, long *rss, double *wall) {
  char *args[] = {"--one", (char *)mode, NULL}, out[512];
  int st = bl_spawn(self, args, out, sizeof out);
  if (st == BL_EXIT_DISABLED) return st;
  if (st != 0 || sscanf(out, "%lf %lf %lf %ld %lf", written, lost, secs, rss,
                        wall) != 5 ||
      *secs <= 0 || *wall <= 0)
    return 1;
  return 0;
}

static int driver(const char *argv0) {
  char self[4096], cpu[256];
  bl_self(argv0, self, sizeof self);
  if (access(tool_path(), X_OK) != 0) {
    fprintf(stderr, "bench_watch: %s: %s (run it from the build directory "
            "or set EVENTRING_BENCH_TOOL)\n", tool_path(), strerror(errno));
    return 1;
  }
  bl_untraced(1);
  int runs = bl_runs(), errors = 0;
  static struct bl_stat s[N_F];
  for (int round = 0; round < runs; round++) {
    fprintf(stderr, "bench_watch: round %d of %d\n", round + 1, runs);
    double written, lost, secs, wall;
    long rss;
    int st = spawn_run(self, "full", &written, &lost, &secs, &rss, &wall);
    if (st == BL_EXIT_DISABLED) {
      printf("bench_watch: n/a: library built with tracing disabled\n");
      return 0;
    }
    if (st != 0) {
      fprintf(stderr, "bench_watch: run %d failed\n", round + 1);
      errors++;
    } else {
      bl_add(&s[F_READ], (written - lost) / 1e6);
      bl_add(&s[F_CPU], secs);
      bl_add(&s[F_RATE], (written - lost) / secs / 1e6);
      bl_add(&s[F_LOST], written > 0 ? 100 * lost / written : 0);
      bl_add(&s[F_RSS], (double)rss / 1024);
    }
    /* Paced, with and without the rules. */
    static const char *const paced[] = {"rules", "plain"};
    for (int k = 0; k < 2; k++) {
      if (spawn_run(self, paced[k], &written, &lost, &secs, &rss, &wall)) {
        fprintf(stderr, "bench_watch: run %d (%s) failed\n", round + 1,
                paced[k]);
        errors++;
        continue;
      }
      if (k == 0) bl_add(&s[F_PACED], written / ((double)RUN_MS / 1000));
      bl_add(&s[k == 0 ? F_RULES : F_PLAIN], 100 * secs / wall);
    }
  }
  for (int i = 0; i < N_F; i++) bl_summarize(&s[i]);
  static const char *const label[N_F] = {
      "events read (M)", "watcher CPU time (s)", "rate (M events / CPU s)",
      "events lost (%)", "peak RSS (MiB)", "paced rate (events/s)",
      "CPU, rules (% of a core)", "CPU, one condition (%)"};
  static const char *const key[N_F] = {"events_read_m", "cpu_s",
                                       "rate_m_per_cpu_s", "lost_percent",
                                       "peak_rss_mib", "paced_events_per_s",
                                       "rules_cpu_percent",
                                       "plain_cpu_percent"};
  printf("eventring watch: one watcher following a writer at full speed for "
         "%d ms\n(default ring, a phase begin and end, a counter and a user "
         "int per round);\nmedian, min and max of %d runs, each a new "
         "process\n\n",
         RUN_MS, runs);
  printf("%-26s %10s %10s %10s\n", "figure", "median", "min", "max");
  for (int i = 0; i < F_PACED; i++)
    printf("%-26s %10.2f %10.2f %10.2f\n", label[i], s[i].median, s[i].min,
           s[i].max);
  printf("\nrate: events read (written - lost) per second of the watcher's "
         "CPU time; lost:\nwhat the writer overwrote before the watcher read "
         "it (its core was the limit)\n");
  printf("\nThe watcher's rules (issue 24): the writer paced to %d events/s "
         "for %d ms, the\nwatcher following %d rules (aggregates over "
         "windows, for, and/or/not), or the\none condition above; its CPU "
         "time over the run's wall time; target: rules under 5%%\n\n",
         PACED_RATE, RUN_MS, N_RULES);
  printf("%-26s %10s %10s %10s\n", "figure", "median", "min", "max");
  for (int i = F_PACED; i < N_F; i++)
    printf("%-26s %10.*f %10.*f %10.*f\n", label[i], i == F_PACED ? 0 : 2,
           s[i].median, i == F_PACED ? 0 : 2, s[i].min, i == F_PACED ? 0 : 2,
           s[i].max);
  printf("%-26s %10s\n", "rules under 5% of a core",
         s[F_RULES].nv == 0 ? "not measured"
         : s[F_RULES].median < 5 ? "met" : "MISSED");
  bl_cpu_model(cpu, sizeof cpu);
  FILE *o;
  if (bl_json_open("bench_watch", &o) < 0) return 1;
  if (o != NULL) {
    fprintf(o, "{\n  \"runs\": %d,\n  \"run_ms\": %d,\n  \"cpu\": ", runs,
            RUN_MS);
    bl_json_str(o, cpu);
    for (int i = 0; i < N_F; i++) {
      fprintf(o, ",\n  \"%s\": {", key[i]);
      bl_json_stat(o, &s[i]);
      fprintf(o, "}");
    }
    fprintf(o, "\n}\n");
    if (bl_json_close("bench_watch", o) < 0) errors++;
  }
  return errors ? 1 : 0;
}

int main(int argc, char **argv) {
  return bl_main_op(argc, argv, run_one, driver);
}
