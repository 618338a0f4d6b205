/* bench_fork.c -- what tracing adds to fork() + waitpid().
 *
 * Issue 19 sets the target: a traced fork+wait costs at most 100 us more
 * than an untraced one, the child exiting at once (a forked child that
 * writes no event pays almost nothing: its ring file is made at its first
 * event, runtime/fork.c).  A child that writes one event is measured too:
 * it makes its file, and that is what it costs.
 *
 * Method.  A run (this program re-executed with `--one MODE CHILD`) does
 * FORKS forks, each timed with clock_gettime(CLOCK_MONOTONIC) from before
 * fork() to after waitpid() returns, and prints their median in
 * microseconds.  MODE is `untraced` (the library linked, tracing never
 * started) or `traced` (tracing started in a private directory, one event
 * written before the forks); CHILD is `exit` (the child calls _exit(0) at
 * once) or `event` (it writes one user int first).  The files the
 * children leave are removed after the last fork, outside the timed
 * region (removing a file with disk blocks keeps the file system's
 * journal busy under the next forks).  The four runs of a round follow one another,
 * and rounds repeat (at least MIN_ROUNDS), so that a burst of load on the
 * machine falls on all four; the traced-minus-untraced difference and
 * ratio are taken per round, untraced and traced of the same child side
 * by side, and their medians reported.
 *
 * Output: a table on stdout; JSON to the file EVENTRING_BENCH_OUT names:
 * per child kind the untraced and traced medians (us), the difference
 * (`added_us`) and the ratio.  The exit status reports errors only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchlib.h"
#include "eventring.h"

#define CHILD_TIMEOUT_S 60
#define FORKS 41
#define MIN_ROUNDS 7
#define TARGET_US 100

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One run: FORKS timed forks; prints their median in us. */
static int run_one(const char *mode, const char *child) {
  alarm(CHILD_TIMEOUT_S);
  int traced = strcmp(mode, "traced") == 0;
  int event = strcmp(child, "event") == 0;
  char dir[] = "/tmp/eventring-bench-fork.XXXXXX";
  int id = eventring_register("bench.fork", EVENTRING_TYPE_INT);
  if (id < 0) {
    fprintf(stderr, "bench_fork: register: %s\n", eventring_strerror(id));
    return 2;
  }
  if (traced) {
    int rc = bl_start_tracing("bench_fork", dir);
    if (rc != 0) return rc;
    eventring_write_int(id, 0);
  }
  double t[FORKS];
  pid_t kids[FORKS];
  int errors = 0, nkids = 0;
  for (int i = 0; i < FORKS; i++) {
    uint64_t t0 = bl_now_ns();
    pid_t pid = fork();
    if (pid == 0) {
      if (event) eventring_write_int(id, 1);
      _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
      perror("bench_fork: fork/waitpid");
      errors++;
      break;
    }
    t[i] = (double)(bl_now_ns() - t0) / 1e3;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) errors++;
    kids[nkids++] = pid;
  }
  if (traced) {
    /* Removed after the loop: removing a file with blocks makes the file
     * system's journal and discard busy under the next forks. */
    for (int i = 0; i < nkids; i++) {
      char path[128];
      snprintf(path, sizeof path, "%s/%ld.events", dir, (long)kids[i]);
      if (unlink(path) != 0 && event) {
        fprintf(stderr, "bench_fork: the child wrote no file %s\n", path);
        errors++;
      }
    }
    eventring_stop();
    char path[128];
    snprintf(path, sizeof path, "%s/%ld.events", dir, (long)getpid());
    unlink(path);
    rmdir(dir);
  }
  if (errors) return 2;
  qsort(t, FORKS, sizeof t[0], cmp_double);
  printf("%.3f\n", t[FORKS / 2]);
  return 0;
}

/* The median of `n` values (sorted in place). */
static double median(double *v, int n) {
  if (n == 0) return 0;
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct kind {
  const char *child, *label;
  struct bl_stat untraced, traced;
  double added[BL_RUNS_MAX], ratio[BL_RUNS_MAX];
  int npaired;
  double added_median, ratio_median;
};

static void json_kind(FILE *o, const struct kind *k) {
  fprintf(o, "  \"%s\": {\n    \"untraced_us\": {", k->child);
  bl_json_stat_digits(o, &k->untraced, 1);
  fprintf(o, "},\n    \"traced_us\": {");
  bl_json_stat_digits(o, &k->traced, 1);
  fprintf(o, "},\n    \"added_us\": %.1f,\n    \"ratio\": %.3f,\n"
             "    \"rounds\": %d\n  }",
          k->added_median, k->ratio_median, k->npaired);
}

static int driver(const char *argv0) {
  char self[4096], out[256], cpu[256];
  bl_self(argv0, self, sizeof self);
  int rounds = bl_runs(), errors = 0;
  if (rounds < MIN_ROUNDS) rounds = MIN_ROUNDS;
  bl_untraced(1);

  static struct kind kinds[2] = {
      {.child = "exit", .label = "child _exit(0) at once"},
      {.child = "event", .label = "child writes one event"}};
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < 2; k++) {
      double v[2];
      int ok = 1;
      for (int m = 0; m < 2; m++) {
        char *args[] = {"--one", m ? "traced" : "untraced",
                        (char *)kinds[k].child, NULL};
        int st = bl_spawn(self, args, out, sizeof out);
        if (st == BL_EXIT_DISABLED) {
          printf("bench_fork: n/a: library built with tracing disabled\n");
          return 0;
        }
        if (st != 0 || sscanf(out, "%lf", &v[m]) != 1) {
          fprintf(stderr, "bench_fork: run %d (%s, %s) failed\n", r + 1,
                  args[1], args[2]);
          errors++;
          ok = 0;
        }
      }
      if (!ok) continue;
      struct kind *kd = &kinds[k];
      bl_add(&kd->untraced, v[0]);
      bl_add(&kd->traced, v[1]);
      if (kd->npaired < BL_RUNS_MAX) {
        kd->added[kd->npaired] = v[1] - v[0];
        kd->ratio[kd->npaired] = v[1] / v[0];
        kd->npaired++;
      }
    }
  for (int k = 0; k < 2; k++) {
    struct kind *kd = &kinds[k];
    bl_summarize(&kd->untraced);
    bl_summarize(&kd->traced);
    kd->added_median = median(kd->added, kd->npaired);
    kd->ratio_median = median(kd->ratio, kd->npaired);
  }

  bl_cpu_model(cpu, sizeof cpu);
  printf("fork() + waitpid(), us, median of %d forks per run, %d rounds "
         "(each run a new process)\ncpu: %s\n\n",
         FORKS, kinds[0].npaired, cpu);
  printf("%-26s %10s %10s %10s %8s\n", "child", "untraced", "traced",
         "added", "ratio");
  for (int k = 0; k < 2; k++)
    printf("%-26s %10.1f %10.1f %10.1f %8.2f\n", kinds[k].label,
           kinds[k].untraced.median, kinds[k].traced.median,
           kinds[k].added_median, kinds[k].ratio_median);
  printf("\n(added and ratio: the median over rounds of traced minus, and "
         "over, untraced)\nthe target: a child that exits at once adds <= "
         "%d us\n",
         TARGET_US);

  FILE *o;
  if (bl_json_open("bench_fork", &o) < 0) return 1;
  if (o != NULL) {
    fprintf(o, "{\n  \"unit\": \"us\",\n  \"forks_per_run\": %d,\n  \"cpu\": ",
            FORKS);
    bl_json_str(o, cpu);
    fprintf(o, ",\n");
    json_kind(o, &kinds[0]);
    fprintf(o, ",\n");
    json_kind(o, &kinds[1]);
    fprintf(o, ",\n  \"target_added_us\": %d\n}\n", TARGET_US);
    if (bl_json_close("bench_fork", o) < 0) errors++;
  }
  return errors ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--one") == 0 &&
      (!strcmp(argv[2], "untraced") || !strcmp(argv[2], "traced")) &&
      (!strcmp(argv[3], "exit") || !strcmp(argv[3], "event")))
    return run_one(argv[2], argv[3]);
  if (argc != 1) {
    fprintf(stderr, "usage: %s\n", argv[0]);
    return 2;
  }
  return driver(argv[0]);
}
