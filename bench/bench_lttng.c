/* bench_lttng.c -- LTTng-UST tracepoints against eventring's probes, with
 * the same loop shapes, in the same run.
 *
 * Built and run by `make bench-lttng` only (it needs liblttng-ust), inside
 * the LTTng session that bench/bench_lttng.sh creates: a user-space
 * channel in overwrite mode (a flight recorder, like eventring's rings)
 * with the "eventring_bench:on_*" tracepoints enabled and the "off_*"
 * ones not.  Each figure is the median of RUNS runs, each in a new
 * process (`--one OP`), interleaved in rounds as in bench_probes.c; a loop
 * is calibrated to run for about 70 ms.
 *
 * Output: a table on stdout; JSON to the file EVENTRING_BENCH_OUT names.
 * Each run is at SCHED_FIFO where allowed, as bench_probes.c's (benchlib's
 * bl_fifo()).  The exit status reports errors only, never slowness.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "bench_lttng_tp.h"

#include <errno.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "eventring.h"

#define TARGET_NS 70000000.0
#define CALIB_NS 8000000ull
#define CHILD_TIMEOUT_S 20

BL_TIMED_LOOP(loop_lt_event,
              lttng_ust_tracepoint(eventring_bench, on_begin, 1);
              BL_BARRIER();)

BL_TIMED_LOOP(loop_lt_pair,
              lttng_ust_tracepoint(eventring_bench, on_begin, 1);
              BL_BARRIER();
              lttng_ust_tracepoint(eventring_bench, on_end, 1);
              BL_BARRIER();)

BL_TIMED_LOOP(loop_lt_off,
              lttng_ust_tracepoint(eventring_bench, off_begin, 1);
              BL_BARRIER();)

BL_TIMED_LOOP(loop_er_event,
              eventring_begin(EVENTRING_PHASE_MINOR);
              BL_BARRIER();)

BL_TIMED_LOOP(loop_er_pair,
              eventring_begin(EVENTRING_PHASE_MINOR);
              BL_BARRIER();
              eventring_end(EVENTRING_PHASE_MINOR);
              BL_BARRIER();)

struct op {
  const char *name, *label;
  int start; /* eventring started for it */
  uint64_t (*loop)(long n);
};

static const struct op ops[] = {
  {"clock_gettime", "clock_gettime(MONOTONIC)", 0, bl_loop_clock},
  {"lttng_event", "LTTng-UST event, enabled", 0, loop_lt_event},
  {"lttng_pair", "LTTng-UST begin+end, enabled", 0, loop_lt_pair},
  {"lttng_disabled", "LTTng-UST event, disabled", 0, loop_lt_off},
  {"eventring_event", "eventring begin, active", 1, loop_er_event},
  {"eventring_pair", "eventring begin+end, active", 1, loop_er_pair},
  {"eventring_never", "eventring begin, never started", 0, loop_er_event},
};
#define N_OPS (int)(sizeof ops / sizeof ops[0])

static int run_one(const char *name) {
  const struct op *op = NULL;
  char dir[] = "/tmp/eventring-bench.XXXXXX";
  for (int i = 0; i < N_OPS; i++)
    if (strcmp(ops[i].name, name) == 0) op = &ops[i];
  if (op == NULL) return 2;
  (void)bl_fifo(); /* as bench_probes.c's runs, for the same comparison */
  alarm(CHILD_TIMEOUT_S);
  if (op->start) {
    if (mkdtemp(dir) == NULL) return 2;
    setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
    int rc = eventring_start();
    if (rc != 0) {
      fprintf(stderr, "bench_lttng: eventring_start: %s\n",
              eventring_strerror(rc));
      rmdir(dir);
      return 2;
    }
  }
  printf("%.4f\n", bl_ns_per_op(op->loop, TARGET_NS, CALIB_NS));
  fflush(stdout);
  if (op->start) {
    eventring_stop();
    rmdir(dir);
  }
  return 0;
}

static int driver(const char *argv0) {
  char self[4096], out[256], cpu[256];
  bl_self(argv0, self, sizeof self);
  int runs = bl_runs(), errors = 0;
  bl_untraced(0);
  static struct bl_stat s[N_OPS];
  for (int round = 0; round < runs; round++) {
    fprintf(stderr, "bench_lttng: round %d of %d\n", round + 1, runs);
    for (int i = 0; i < N_OPS; i++) {
      char *args[] = {"--one", (char *)ops[i].name, NULL};
      double v;
      if (bl_spawn(self, args, out, sizeof out) == 0 &&
          sscanf(out, "%lf", &v) == 1)
        bl_add(&s[i], v);
      else {
        fprintf(stderr, "bench_lttng: run %s failed\n", ops[i].name);
        errors++;
      }
    }
  }
  for (int i = 0; i < N_OPS; i++) bl_summarize(&s[i]);
  bl_cpu_model(cpu, sizeof cpu);
  const char *sched = "normal (other load may preempt the runs)";
  if (bl_fifo()) {
    struct sched_param sp0 = {.sched_priority = 0};
    sched = "SCHED_FIFO (other load cannot preempt the runs)";
    sched_setscheduler(0, SCHED_OTHER, &sp0);
  }
  printf("LTTng-UST against eventring: ns per operation, median of %d runs "
         "(each a new\nprocess), min and max; LTTng channel in overwrite "
         "mode\ncpu: %s\nscheduling: %s\n\n", runs, cpu, sched);
  printf("%-34s %9s %9s %9s %9s\n", "operation", "median", "min", "max",
         "x clock");
  for (int i = 0; i < N_OPS; i++)
    if (s[i].nv > 0)
      printf("%-34s %9.2f %9.2f %9.2f %9.3f\n", ops[i].label, s[i].median,
             s[i].min, s[i].max,
             s[0].median > 0 ? s[i].median / s[0].median : 0);
  if (s[2].nv > 0 && s[5].nv > 0 && s[5].median > 0)
    printf("\nLTTng begin+end pair / eventring pair: %.2f\n",
           s[2].median / s[5].median);

  FILE *o;
  if (bl_json_open("bench_lttng", &o) < 0) return 1;
  if (o != NULL) {
    fprintf(o, "{\n  \"unit\": \"ns per operation\",\n  \"runs\": %d,\n"
               "  \"cpu\": ", runs);
    bl_json_str(o, cpu);
    fprintf(o, ",\n  \"results\": [");
    for (int i = 0; i < N_OPS; i++) {
      fprintf(o, "%s\n    {\"op\": \"%s\", ", i ? "," : "", ops[i].name);
      bl_json_stat(o, &s[i]);
      fputc('}', o);
    }
    fprintf(o, "\n  ]\n}\n");
    if (bl_json_close("bench_lttng", o) < 0) errors++;
  }
  return errors ? 1 : 0;
}

int main(int argc, char **argv) {
  return bl_main_op(argc, argv, run_one, driver);
}
