/* bench_record.c -- the CPU one `eventring record` takes on a program of
 * 100 k events/s.
 *
 * A recorder runs beside production programs for hours, so what counts
 * is its share of a core at a steady, realistic rate rather than its
 * peak.  Method.  A run (this program re-executed with `--one`) forks a
 * writer that starts tracing (default ring) and, once the recorder is
 * following it, writes RATE_PER_MS user ints every millisecond of
 * CLOCK_MONOTONIC for RUN_MS (100 k events/s); the recorder is the real
 * command, `eventring record -o TMP --rotate 1s --pid PID`, which writes
 * every event to files rotated each second of trace time.  Figures: the
 * recorder's CPU time (user + system, from wait4) as a share of one core
 * over the run, the files and bytes it wrote, the events it lost (the
 * writer's ring turned over unread) and its peak resident size.
 *
 * Output: a table on stdout; JSON to the file EVENTRING_BENCH_OUT names.
 * The exit status reports errors only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "eventring.h"

#define RUN_MS 2000
#define RATE_PER_MS 100

/* The writer: waits for a byte on `go`, writes for RUN_MS, exits. */
static void writer(int go, int ready, int unused) {
  (void)unused;
  int id = eventring_register("bench.n", EVENTRING_TYPE_INT);
  if (id < 0 || eventring_start() != 0) _exit(BL_EXIT_DISABLED);
  char c;
  if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 1) _exit(2);
  uint64_t start = bl_now_ns(), n = 0;
  for (uint64_t ms = 0; ms < RUN_MS; ms++) {
    uint64_t at = start + ms * 1000000u;
    while (bl_now_ns() < at) {
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
    }
    for (int k = 0; k < RATE_PER_MS; k++) eventring_write_int(id, (int64_t)n++);
  }
  _exit(0);
}

/* The files of `dir`: how many, their bytes; removed with it. */
static void sweep(const char *dir, double *files, double *bytes) {
  *files = *bytes = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  char p[4096 + 256];
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(p, &st) == 0) *bytes += (double)st.st_size;
    *files += 1;
    unlink(p);
  }
  if (d) closedir(d);
  rmdir(dir);
}

static int run_one(const char *tool) {
  char dir[] = "/tmp/eventring-bench-record-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char out[sizeof dir + 8];
  snprintf(out, sizeof out, "%s/out", dir);
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  int go, ready;
  pid_t w;
  int rc = bl_fork_writer(writer, 0, &w, &go, &ready);
  if (rc != 0) {
    rmdir(dir);
    return rc;
  }
  char pid[16];
  snprintf(pid, sizeof pid, "%ld", (long)w);
  char *args[] = {"eventring", "record", "-o", out, "--rotate", "1s",
                  "--pid", pid, NULL};
  pid_t t;
  int err;
  if (bl_exec_tool("bench_record", tool, args, &t, &err)) return 2;
  /* Its first line says it follows the writer. */
  char buf[8192];
  size_t have = 0;
  while (have + 1 < sizeof buf) {
    ssize_t r = read(err, buf + have, sizeof buf - 1 - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    have += (size_t)r;
    buf[have] = 0;
    if (strchr(buf, '\n')) break;
  }
  buf[have] = 0;
  int ok = t > 0 && strstr(buf, "recording") != NULL;
  if (write(go, "g", 1) != 1) ok = 0;
  int st;
  waitpid(w, &st, 0);
  for (ssize_t r; have + 1 < sizeof buf &&
                  (r = read(err, buf + have, sizeof buf - 1 - have)) != 0;)
    if (r > 0) have += (size_t)r;
    else if (errno != EINTR) break;
  buf[have] = 0;
  struct rusage ru;
  int tst = 0;
  if (t > 0) wait4(t, &tst, 0, &ru);
  double files, bytes;
  sweep(out, &files, &bytes);
  rmdir(dir);
  if (!ok || !WIFEXITED(tst) || WEXITSTATUS(tst) != 0) {
    fprintf(stderr, "bench_record: the recorder failed: %s\n", buf);
    return 2;
  }
  /* "..., N events, L lost" in its last line. */
  double lost = 0;
  const char *l = strstr(buf, " events, ");
  if (l) lost = strtod(l + 9, NULL);
  double cpu = bl_cpu_seconds(&ru);
  printf("%.6f %.0f %.0f %.0f %ld\n", cpu, files, bytes, lost, ru.ru_maxrss);
  return 0;
}

enum { F_CPU, F_FILES, F_MB, F_LOST, F_RSS, N_F };

static int driver(const char *argv0) {
  char self[4096], out[512], cpu[256], tool[4096];
  if (bl_tool(argv0, "bench_record", tool, sizeof tool) != 0) return 2;
  bl_self(argv0, self, sizeof self);
  bl_untraced(1);
  int runs = bl_runs(), errors = 0;
  static struct bl_stat s[N_F];
  for (int round = 0; round < runs; round++) {
    fprintf(stderr, "bench_record: round %d of %d\n", round + 1, runs);
    char *args[] = {"--one", tool, NULL};
    int st = bl_spawn(self, args, out, sizeof out);
    if (st == BL_EXIT_DISABLED) {
      printf("bench_record: n/a: library built with tracing disabled\n");
      return 0;
    }
    double secs, files, bytes, lost;
    long rss;
    if (st != 0 || sscanf(out, "%lf %lf %lf %lf %ld", &secs, &files, &bytes,
                          &lost, &rss) != 5) {
      fprintf(stderr, "bench_record: run %d failed\n", round + 1);
      errors++;
      continue;
    }
    bl_add(&s[F_CPU], 100 * secs / (RUN_MS / 1e3));
    bl_add(&s[F_FILES], files);
    bl_add(&s[F_MB], bytes / 1e6);
    bl_add(&s[F_LOST], lost);
    bl_add(&s[F_RSS], (double)rss / 1024);
  }
  for (int i = 0; i < N_F; i++) bl_summarize(&s[i]);
  static const char *const label[N_F] = {
      "recorder CPU (% of a core)", "files written", "bytes written (MB)",
      "events lost", "peak RSS (MiB)"};
  static const char *const key[N_F] = {"cpu_percent", "files", "mbytes",
                                       "lost", "peak_rss_mib"};
  printf("eventring record: one recorder following a writer of %d k events/s "
         "for %d ms\n(a user int each, default ring, --rotate 1s);\nmedian, "
         "min and max of %d runs, each a new process\n\n",
         RATE_PER_MS, RUN_MS, runs);
  printf("%-28s %10s %10s %10s\n", "figure", "median", "min", "max");
  for (int i = 0; i < N_F; i++)
    printf("%-28s %10.2f %10.2f %10.2f\n", label[i], s[i].median, s[i].min,
           s[i].max);
  printf("\nCPU: the recorder's user + system time over the run's %d ms\n",
         RUN_MS);
  bl_cpu_model(cpu, sizeof cpu);
  FILE *o;
  if (bl_json_open("bench_record", &o) < 0) return 1;
  if (o != NULL) {
    fprintf(o, "{\n  \"runs\": %d,\n  \"run_ms\": %d,\n  \"rate_per_ms\": %d,"
            "\n  \"cpu\": ", runs, RUN_MS, RATE_PER_MS);
    bl_json_str(o, cpu);
    bl_json_figures(o, key, s, N_F);
    fprintf(o, "\n}\n");
    if (bl_json_close("bench_record", o) < 0) errors++;
  }
  return errors ? 1 : 0;
}

int main(int argc, char **argv) {
  return bl_main_op(argc, argv, run_one, driver);
}
