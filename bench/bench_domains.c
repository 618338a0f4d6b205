/* bench_domains.c -- two domains writing at once against one.
 *
 * The write path shares no cache line between domains: each has its own
 * ring, its own 256-byte ring header and its own thread-local state.  If
 * that holds, two threads writing at once on two cores write twice the
 * events per second of one.  Issue 6 asks for at least 1.8 times.
 *
 * Method.  A run (this program re-executed with `--one WHAT THREADS`)
 * starts tracing with the default ring, creates THREADS worker threads
 * (each takes a domain slot of its own on its first event) and releases
 * them together from a barrier; each writes EVENTS events (begin+end
 * pairs) and the run prints the aggregate rate: all the events over the
 * time from the release to the last thread's end.  WHAT is "probes" for
 * eventring's probes or "rdtsc", the same loop shape with the probe pair
 * replaced by two TSC reads and no tracing at all: it measures how well
 * this machine runs two threads at once when they share nothing, the
 * ceiling of the probes' ratio on a shared two-core machine whose other
 * load takes cores away.  Each figure is the median of RUNS runs, each
 * in a new process, interleaved in rounds.
 *
 * Output: a table on stdout; JSON to the file EVENTRING_BENCH_OUT names.
 * EVENTRING_BENCH_RUNS overrides the number of runs.  The exit status
 * reports errors only, never slowness.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define TICK() __rdtsc()
#else
#define TICK() bl_now_ns()
#endif

#include "benchlib.h"
#include "eventring.h"

#define EVENTS 4000000L       /* per thread and run: ~0.1 s at 25 ns */
#define MAX_THREADS 2
#define CHILD_TIMEOUT_S 20

#define BARRIER() __asm__ volatile("" ::: "memory")

static volatile uint64_t sink;

struct worker {
  pthread_t th;
  int rdtsc;            /* the machine reference instead of probes */
  uint64_t end_ns;      /* when this thread finished */
  char pad[64];         /* keeps the workers' fields on lines of their own */
};

static pthread_barrier_t go;

static void *worker_main(void *arg) {
  struct worker *w = arg;
  /* The first event takes the thread's domain slot and writes its
   * domain_spawn: done before the barrier, so not timed. */
  if (!w->rdtsc) eventring_begin(EVENTRING_PHASE_MINOR);
  pthread_barrier_wait(&go);
  if (w->rdtsc) {
    uint64_t acc = 0;
    for (long i = 0; i < EVENTS / 2; i++) {
      acc += TICK();
      BARRIER();
      acc += TICK();
      BARRIER();
    }
    sink = acc;
  } else {
    for (long i = 0; i < EVENTS / 2; i++) {
      eventring_begin(EVENTRING_PHASE_MINOR);
      BARRIER();
      eventring_end(EVENTRING_PHASE_MINOR);
      BARRIER();
    }
  }
  w->end_ns = bl_now_ns();
  return NULL;
}

/* One run: prints the aggregate M events (or TSC reads) per second. */
static int run_one(const char *what, int threads) {
  char dir[] = "/tmp/eventring-bench.XXXXXX";
  int rdtsc = strcmp(what, "rdtsc") == 0;
  if ((!rdtsc && strcmp(what, "probes") != 0) || threads < 1 ||
      threads > MAX_THREADS) {
    fprintf(stderr, "bench_domains: no measurement %s %d\n", what, threads);
    return 2;
  }
  alarm(CHILD_TIMEOUT_S);
  if (!rdtsc) {
    int rc = bl_start_tracing("bench_domains", dir);
    if (rc != 0) return rc;
  }
  struct worker w[MAX_THREADS];
  memset(w, 0, sizeof w);
  pthread_barrier_init(&go, NULL, (unsigned)threads + 1);
  for (int i = 0; i < threads; i++) {
    w[i].rdtsc = rdtsc;
    if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
      fprintf(stderr, "bench_domains: pthread_create failed\n");
      _exit(2);
    }
  }
  pthread_barrier_wait(&go);
  uint64_t t0 = bl_now_ns(), t1 = t0;
  for (int i = 0; i < threads; i++) {
    pthread_join(w[i].th, NULL);
    if (w[i].end_ns > t1) t1 = w[i].end_ns;
  }
  pthread_barrier_destroy(&go);
  printf("%.4f\n", (double)EVENTS * threads * 1e3 / (double)(t1 - t0));
  if (!rdtsc) {
    eventring_stop();
    rmdir(dir);
  }
  return 0;
}

enum { F_P1, F_P2, F_T1, F_T2, N_F };
static const char *const f_what[N_F] = {"probes", "probes", "rdtsc", "rdtsc"};
static char *const f_threads[N_F] = {"1", "2", "1", "2"};
static const char *const f_names[N_F] = {
  "probes_1_domain", "probes_2_domains", "rdtsc_1_thread", "rdtsc_2_threads"};
static const char *const f_labels[N_F] = {
  "probes, 1 domain", "probes, 2 domains at once", "rdtsc loop, 1 thread",
  "rdtsc loop, 2 threads at once"};

static int driver(const char *argv0) {
  char self[4096], out[256], cpu[256];
  bl_self(argv0, self, sizeof self);
  int runs = bl_runs(), errors = 0, disabled = 0;
  bl_untraced(0);

  struct bl_stat f[N_F], ratio[2];
  memset(f, 0, sizeof f);
  memset(ratio, 0, sizeof ratio);
  for (int round = 0; round < runs; round++) {
    fprintf(stderr, "bench_domains: round %d of %d\n", round + 1, runs);
    double v[N_F] = {0};
    for (int i = 0; i < N_F; i++) {
      char *args[] = {"--one", (char *)f_what[i], f_threads[i], NULL};
      int st = bl_spawn(self, args, out, sizeof out);
      if (st == BL_EXIT_DISABLED) {
        disabled = 1;
        continue;
      }
      if (st != 0 || sscanf(out, "%lf", &v[i]) != 1) {
        fprintf(stderr, "bench_domains: run %s failed\n", f_names[i]);
        errors++;
        continue;
      }
      bl_add(&f[i], v[i]);
    }
    /* The ratio of each round, from two runs next to each other in time. */
    if (v[F_P1] > 0 && v[F_P2] > 0) bl_add(&ratio[0], v[F_P2] / v[F_P1]);
    if (v[F_T1] > 0 && v[F_T2] > 0) bl_add(&ratio[1], v[F_T2] / v[F_T1]);
  }
  for (int i = 0; i < N_F; i++) bl_summarize(&f[i]);
  bl_summarize(&ratio[0]);
  bl_summarize(&ratio[1]);

  bl_cpu_model(cpu, sizeof cpu);
  printf("eventring domains: aggregate M events/s of begin+end pairs, "
         "%ld events per thread,\nmedian of %d runs (each a new process), "
         "min and max\ncpu: %s, %ld online CPUs\n\n", EVENTS, runs, cpu,
         sysconf(_SC_NPROCESSORS_ONLN));
  if (disabled) printf("probes: n/a: library built with tracing disabled\n");
  printf("%-34s %9s %9s %9s\n", "measurement", "median", "min", "max");
  for (int i = 0; i < N_F; i++)
    if (f[i].nv > 0)
      printf("%-34s %9.2f %9.2f %9.2f\n", f_labels[i], f[i].median, f[i].min,
             f[i].max);
  printf("%-34s %9.3f %9.3f %9.3f\n", "ratio 2/1, probes (per round)",
         ratio[0].median, ratio[0].min, ratio[0].max);
  printf("%-34s %9.3f %9.3f %9.3f\n", "ratio 2/1, rdtsc loop (per round)",
         ratio[1].median, ratio[1].min, ratio[1].max);
  printf("\nthe rdtsc loop shares nothing between its threads: its ratio is "
         "what this machine\nallowed two threads during the run, the "
         "ceiling for the probes' ratio\n");

  FILE *o;
  if (bl_json_open("bench_domains", &o) < 0) return 1;
  if (o != NULL) {
    fprintf(o, "{\n  \"unit\": \"M events per second, aggregate\",\n"
               "  \"runs\": %d,\n  \"events_per_thread\": %ld,\n  \"cpu\": ",
            runs, EVENTS);
    bl_json_str(o, cpu);
    fprintf(o, ",\n  \"online_cpus\": %ld", sysconf(_SC_NPROCESSORS_ONLN));
    for (int i = 0; i < N_F; i++) {
      fprintf(o, ",\n  \"%s\": {", f_names[i]);
      bl_json_stat(o, &f[i]);
      fputc('}', o);
    }
    fprintf(o, ",\n  \"ratio_probes\": {");
    bl_json_stat(o, &ratio[0]);
    fprintf(o, "},\n  \"ratio_rdtsc\": {");
    bl_json_stat(o, &ratio[1]);
    fprintf(o, "},\n  \"target_ratio\": 1.8\n}\n");
    if (bl_json_close("bench_domains", o) < 0) errors++;
  }
  return errors ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--one") == 0)
    return run_one(argv[2], atoi(argv[3]));
  if (argc != 1) {
    fprintf(stderr, "usage: %s\n", argv[0]);
    return 2;
  }
  return driver(argv[0]);
}
