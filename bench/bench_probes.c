/* bench_probes.c -- what a probe costs, measured against the clock it reads.
 *
 * Every figure is the cost of one operation in nanoseconds: a loop of n
 * operations is timed with CLOCK_MONOTONIC and the elapsed time divided by
 * n, where n is calibrated so that the loop runs for about TARGET_NS.  Each
 * figure is measured RUNS times, every time in a new process (this program
 * re-executes itself with `--one OP STATE`), so that no run inherits warm
 * rings, a taken domain slot or a started tracer from another; the table
 * gives the median and the extremes.  The runs are interleaved in rounds
 * (round 1 of every figure, then round 2, ...) so that a burst of noise on
 * the shared machine spreads over all figures instead of ruining one.
 *
 * States: "never started" (eventring_start() never called), "paused"
 * (started, then eventring_pause()), "active" (started in a temporary
 * directory named by OCAML_RUNTIME_EVENTS_DIR) and "active + reader"
 * (active, with a second thread of the same process polling a cursor on the
 * process's own file as fast as it can, so that the writer's ring header
 * and data lines are read from another core while the probes write them;
 * the reader cannot keep up and mostly reports losses, which is the worst
 * case for the writer's cache lines), and "active + 1ms rdr" (the same
 * reader, sleeping 1 ms between polls, as a monitoring tool would: what an
 * ordinary reader costs the writer).  While active the loop writes far more
 * events than one ring holds, so the flight recorder wraps and overwrites;
 * that is the steady state of a long-running program and is what we want to
 * measure.
 *
 * Scheduling: each run asks for SCHED_FIFO (priority 10) and, where the
 * system allows it, runs there, so that other load on the machine cannot
 * preempt a timed loop (the reader thread of the reader states inherits
 * it); EVENTRING_BENCH_FIFO=0 keeps the normal policy.  The table and the
 * JSON say which policy the runs had.
 *
 * Output: a table on stdout, and the same figures as one JSON document
 * written to the file named by EVENTRING_BENCH_OUT when it is set (`make
 * bench` gives each benchmark a file of its own and joins them); a
 * figure's JSON row also holds its value in each round ("rounds", null
 * where the run failed), which bench/report pairs across states.
 * EVENTRING_BENCH_RUNS overrides the number of runs.  `--count OP N` runs N
 * operations untimed, for instruction counts under callgrind.  The exit
 * status reports errors only (a run that failed to start tracing, say),
 * never slowness.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_RDTSC 1
#else
#define HAVE_RDTSC 0
#endif

#include "benchlib.h"
#include "eventring.h"

#define TARGET_NS 70000000.0   /* one timed loop: about 70 ms */
#define CALIB_NS 8000000ull    /* calibration stops once a loop takes 8 ms */
#define CHILD_TIMEOUT_S 10     /* a run that hangs is killed, not waited on */

/* OCaml 5.2's runtime-events begin+end pair, measured earlier on this kind
 * of machine with OCaml's own probes; it is a fixed reference point, not
 * something this program measures. */
#define OCAML52_PAIR_NS 54.7

static volatile uint64_t sink; /* keeps the rdtsc loop's result alive */
static int id_int, id_span, id_custom;
static unsigned char payload32[32];

/* Each loop is its own non-inlined function (benchlib.h's BL_TIMED_LOOP,
 * and BL_BARRIER after each probe) and returns the elapsed nanoseconds of
 * n iterations. */

#if HAVE_RDTSC
__attribute__((noinline)) static uint64_t loop_rdtsc(long n) {
  uint64_t acc = 0, t0 = bl_now_ns();
  for (long i = 0; i < n; i++) {
    acc += __rdtsc();
    BL_BARRIER();
  }
  uint64_t t1 = bl_now_ns();
  sink = acc;
  return t1 - t0;
}
#endif

/* The barrier between begin and end stands for the work a real span
 * encloses, which keeps the two flag loads separate. */
BL_TIMED_LOOP(loop_pair,
              eventring_begin(EVENTRING_PHASE_MINOR);
              BL_BARRIER();
              eventring_end(EVENTRING_PHASE_MINOR);
              BL_BARRIER();)

BL_TIMED_LOOP(loop_begin,
              eventring_begin(EVENTRING_PHASE_MINOR); BL_BARRIER();)

BL_TIMED_LOOP(loop_counter,
              eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, (uint64_t)i);
              BL_BARRIER();)

BL_TIMED_LOOP(loop_user_int,
              eventring_write_int(id_int, (int64_t)i);
              BL_BARRIER();)

BL_TIMED_LOOP(loop_user_span,
              eventring_write_span(id_span, 0);
              BL_BARRIER();
              eventring_write_span(id_span, 1);
              BL_BARRIER();)

BL_TIMED_LOOP(loop_custom32,
              (void)eventring_write_custom(id_custom, payload32,
                                           sizeof payload32);
              BL_BARRIER();)

struct op {
  const char *name;  /* as given on the command line and in the JSON */
  const char *label; /* as printed in the table */
  int probe;         /* measured in every tracing state */
  uint64_t (*loop)(long n);
};

static const struct op ops[] = {
  {"clock_gettime", "clock_gettime(MONOTONIC)", 0, bl_loop_clock},
#if HAVE_RDTSC
  {"rdtsc", "rdtsc", 0, loop_rdtsc},
#endif
  {"pair", "begin+end pair", 1, loop_pair},
  {"begin", "begin", 1, loop_begin},
  {"counter", "counter", 1, loop_counter},
  {"user_int", "user int", 1, loop_user_int},
  {"user_span", "user span pair", 1, loop_user_span},
  {"custom32", "custom, 32 bytes", 1, loop_custom32},
};
#define N_OPS (sizeof ops / sizeof ops[0])

enum state {
  ST_NONE, ST_NEVER, ST_PAUSED, ST_ACTIVE, ST_READER, ST_READER_1MS, N_STATES
};
static const char *const state_names[N_STATES] = {
  "-", "never_started", "paused", "active", "active_reader",
  "active_reader_1ms"};
static const char *const state_labels[N_STATES] = {
  "-", "never started", "paused", "active", "active + reader",
  "active + 1ms rdr"};

static const struct op *find_op(const char *name) {
  for (size_t i = 0; i < N_OPS; i++)
    if (strcmp(ops[i].name, name) == 0) return &ops[i];
  return NULL;
}

static int find_state(const char *name) {
  for (int s = 0; s < N_STATES; s++)
    if (strcmp(state_names[s], name) == 0) return s;
  return -1;
}

/* ---------------------------------------------------------------- */
/* The concurrent reader of the "active + reader" state.              */

struct reader {
  eventring_cursor *cursor;
  eventring_callbacks *cb;
  int stop;                  /* set by the measuring thread (release) */
  long period_ns;            /* sleep between polls; 0: poll flat out */
  uint64_t events, lost, polls, errors;
};

static int r_phase(void *d, int dom, uint64_t ts, int phase) {
  (void)dom, (void)ts, (void)phase;
  ((struct reader *)d)->events++;
  return 1;
}
static int r_counter(void *d, int dom, uint64_t ts, int id, uint64_t v) {
  (void)dom, (void)ts, (void)id, (void)v;
  ((struct reader *)d)->events++;
  return 1;
}
static int r_life(void *d, int dom, uint64_t ts, int k, int64_t v, int has) {
  (void)dom, (void)ts, (void)k, (void)v, (void)has;
  ((struct reader *)d)->events++;
  return 1;
}
static int r_int(void *d, int dom, uint64_t ts, int id, const char *nm,
                 int64_t v) {
  (void)dom, (void)ts, (void)id, (void)nm, (void)v;
  ((struct reader *)d)->events++;
  return 1;
}
static int r_span(void *d, int dom, uint64_t ts, int id, const char *nm,
                  int is_end) {
  (void)dom, (void)ts, (void)id, (void)nm, (void)is_end;
  ((struct reader *)d)->events++;
  return 1;
}
static int r_custom(void *d, int dom, uint64_t ts, int id, const char *nm,
                    const void *b, size_t len) {
  (void)dom, (void)ts, (void)id, (void)nm, (void)b, (void)len;
  ((struct reader *)d)->events++;
  return 1;
}
static int r_lost(void *d, int dom, uint64_t count) {
  (void)dom;
  ((struct reader *)d)->lost += count;
  return 1;
}

/* Polls until told to stop, flat out or once per period (a reader such
 * as `eventring watch`, which sleeps between polls).  A poll error (the
 * writer lapped the cursor while it copied an event) is counted, not
 * fatal: the reader is load here, not the object of the measurement. */
static void *reader_main(void *arg) {
  struct reader *r = arg;
  while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
    int n = eventring_cursor_poll(r->cursor, r->cb, r, 0);
    r->polls++;
    if (n < 0) r->errors++;
    if (r->period_ns > 0) {
      struct timespec ts = {0, r->period_ns};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

static int reader_start(struct reader *r, pthread_t *th, long period_ns) {
  memset(r, 0, sizeof *r);
  r->period_ns = period_ns;
  int rc = eventring_cursor_open(&r->cursor, NULL, 0);
  if (rc != 0) {
    fprintf(stderr, "bench_probes: eventring_cursor_open: %s\n",
            eventring_strerror(rc));
    return -1;
  }
  r->cb = eventring_callbacks_create();
  if (r->cb == NULL) {
    eventring_cursor_free(r->cursor);
    return -1;
  }
  eventring_callbacks_set_runtime_begin(r->cb, r_phase);
  eventring_callbacks_set_runtime_end(r->cb, r_phase);
  eventring_callbacks_set_runtime_counter(r->cb, r_counter);
  eventring_callbacks_set_lifecycle(r->cb, r_life);
  eventring_callbacks_set_user_int(r->cb, r_int);
  eventring_callbacks_set_user_span(r->cb, r_span);
  eventring_callbacks_set_user_custom(r->cb, r_custom);
  eventring_callbacks_set_lost_events(r->cb, r_lost);
  if (pthread_create(th, NULL, reader_main, r) != 0) {
    fprintf(stderr, "bench_probes: pthread_create failed\n");
    eventring_callbacks_free(r->cb);
    eventring_cursor_free(r->cursor);
    return -1;
  }
  return 0;
}

static void reader_stop(struct reader *r, pthread_t th) {
  __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
  pthread_join(th, NULL);
  eventring_callbacks_free(r->cb);
  eventring_cursor_free(r->cursor);
}

/* ---------------------------------------------------------------- */
/* One run, in its own process: prints the ns per operation.         */

static int run_one(const char *opname, const char *statename) {
  const struct op *op = find_op(opname);
  int st = find_state(statename);
  char dir[] = "/tmp/eventring-bench.XXXXXX";
  int started = 0, reading = 0;
  struct reader rd;
  pthread_t rth;

  if (op == NULL || st < 0 || (op->probe != (st != ST_NONE))) {
    fprintf(stderr, "bench_probes: no measurement %s/%s\n", opname,
            statename);
    return 2;
  }
  /* A hung run must not hang `make bench`. */
  alarm(CHILD_TIMEOUT_S);
  (void)bl_fifo();

  /* The user events are registered in every state, as a program would at
   * start-up, so that the active state writes to valid ids. */
  id_int = eventring_register("bench.int", EVENTRING_TYPE_INT);
  id_span = eventring_register("bench.span", EVENTRING_TYPE_SPAN);
  id_custom = eventring_register("bench.custom", EVENTRING_TYPE_CUSTOM);
  if (id_int < 0 || id_span < 0 || id_custom < 0) {
    fprintf(stderr, "bench_probes: eventring_register: %s\n",
            eventring_strerror(id_int < 0    ? id_int
                               : id_span < 0 ? id_span
                                             : id_custom));
    return 2;
  }
  for (size_t i = 0; i < sizeof payload32; i++)
    payload32[i] = (unsigned char)i;

  if (st == ST_PAUSED || st == ST_ACTIVE || st == ST_READER ||
      st == ST_READER_1MS) {
    int rc = bl_start_tracing("bench_probes", dir);
    if (rc != 0) return rc;
    started = 1;
    if (st == ST_PAUSED) eventring_pause();
    if (st == ST_READER || st == ST_READER_1MS) {
      if (reader_start(&rd, &rth, st == ST_READER_1MS ? 1000000L : 0) != 0) {
        eventring_stop();
        rmdir(dir);
        return 2;
      }
      reading = 1;
    }
  }

  /* Calibrate by doubling until a loop is long enough to time well; this
   * also warms the caches and, while active, touches every page of the
   * ring before the timed loop. */
  printf("%.4f\n", bl_ns_per_op(op->loop, TARGET_NS, CALIB_NS));
  fflush(stdout);

  if (reading) reader_stop(&rd, rth);
  if (started) {
    eventring_stop();
    rmdir(dir);
  }
  return 0;
}

/* ---------------------------------------------------------------- */
/* The driver: runs every measurement RUNS times and reports.        */

struct figure {
  const struct op *op;
  int state;
  int disabled; /* the library was built with tracing disabled */
  struct bl_stat s;
  /* Each round's figure, -1 where its run failed: the report pairs a
   * probe with and without a reader round by round (adjacent runs), so
   * that a change of the machine's load between rounds cancels out. */
  double by_round[BL_RUNS_MAX];
};

/* Runs `self --one OP STATE` and reads its figure.  Returns -1 when the
 * run failed, its stderr going straight to ours, and -2 when the library
 * has tracing compiled out (configure --disable-tracing), which is no
 * error but leaves nothing to measure. */
static double spawn_one(const char *self, const struct figure *f) {
  char *const args[] = {"--one", (char *)f->op->name,
                        (char *)state_names[f->state], NULL};
  char buf[64];
  int st = bl_spawn(self, args, buf, sizeof buf);
  if (st == BL_EXIT_DISABLED) return -2;
  if (st != 0) {
    /* bl_spawn() has said it when the run died of a signal. */
    if (st > 0)
      fprintf(stderr, "bench_probes: run %s/%s failed (exit status %d)\n",
              f->op->name, state_names[f->state], st);
    return -1;
  }
  char *end;
  double v = strtod(buf, &end);
  if (end == buf || v < 0) {
    fprintf(stderr, "bench_probes: run %s/%s printed no figure\n",
            f->op->name, state_names[f->state]);
    return -1;
  }
  return v;
}

static const struct figure *lookup(const struct figure *fs, size_t n,
                                   const char *op, int state) {
  for (size_t i = 0; i < n; i++)
    if (fs[i].s.nv > 0 && strcmp(fs[i].op->name, op) == 0 &&
        fs[i].state == state)
      return &fs[i];
  return NULL;
}

static int write_json(FILE *out, const struct figure *fs, size_t n,
                      int runs, const char *cpu, const char *sched,
                      double clock_ns) {
  fprintf(out, "{\n  \"unit\": \"ns per operation\",\n  \"runs\": %d,\n",
          runs);
  fprintf(out, "  \"cpu\": ");
  bl_json_str(out, cpu);
  fprintf(out, ",\n  \"scheduling\": ");
  bl_json_str(out, strncmp(sched, "SCHED_FIFO", 10) == 0 ? "fifo" : "normal");
  fprintf(out, ",\n  \"ocaml52_pair_anchor_ns\": %.1f,\n", OCAML52_PAIR_NS);
  fprintf(out, "  \"results\": [\n");
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    const struct figure *f = &fs[i];
    if (f->s.nv == 0) continue;
    fprintf(out, "%s    {\"op\": ", first ? "" : ",\n");
    bl_json_str(out, f->op->name);
    fprintf(out, ", \"state\": ");
    bl_json_str(out, state_names[f->state]);
    fprintf(out,
            ", \"median\": %.3f, \"min\": %.3f, \"max\": %.3f, "
            "\"ratio_to_clock_gettime\": %.4f, \"rounds\": [",
            f->s.median, f->s.min, f->s.max,
            clock_ns > 0 ? f->s.median / clock_ns : 0.0);
    for (int r = 0; r < runs; r++) {
      if (r > 0) fputs(", ", out);
      if (f->by_round[r] < 0)
        fputs("null", out);
      else
        fprintf(out, "%.3f", f->by_round[r]);
    }
    fputs("]}", out);
    first = 0;
  }
  fprintf(out, "\n  ]\n}\n");
  return bl_json_close("bench_probes", out);
}

static int driver(const char *argv0) {
  char self[4096];
  bl_self(argv0, self, sizeof self);
  int runs = bl_runs();

  /* The runs must start from the states we name: tracing that the
   * environment started for this process (and would start in every run)
   * is stopped and kept out of the children, and a preserved ring file
   * would be left behind by each active run. */
  bl_untraced(0);

  struct figure fs[N_OPS * N_STATES];
  size_t nf = 0;
  for (size_t i = 0; i < N_OPS; i++)
    for (int s = 0; s < N_STATES; s++)
      if (ops[i].probe == (s != ST_NONE)) {
        memset(&fs[nf], 0, sizeof fs[nf]);
        fs[nf].op = &ops[i];
        fs[nf].state = s;
        for (int r = 0; r < BL_RUNS_MAX; r++) fs[nf].by_round[r] = -1;
        nf++;
      }

  int errors = 0;
  for (int round = 0; round < runs; round++) {
    fprintf(stderr, "bench_probes: round %d of %d\n", round + 1, runs);
    for (size_t i = 0; i < nf; i++) {
      if (fs[i].disabled) continue;
      double v = spawn_one(self, &fs[i]);
      if (v == -2)
        fs[i].disabled = 1;
      else if (v < 0)
        errors++;
      else {
        bl_add(&fs[i].s, v);
        fs[i].by_round[round] = v;
      }
    }
  }
  for (size_t i = 0; i < nf; i++)
    if (fs[i].s.nv > 0) bl_summarize(&fs[i].s);

  char cpu[256];
  bl_cpu_model(cpu, sizeof cpu);
  const char *sched = "normal (other load may preempt the runs)";
  struct sched_param sp0 = {.sched_priority = 0};
  if (bl_fifo()) {
    sched = "SCHED_FIFO (other load cannot preempt the runs)";
    sched_setscheduler(0, SCHED_OTHER, &sp0);
  }
  const struct figure *clk = lookup(fs, nf, "clock_gettime", ST_NONE);
  double clock_ns = clk ? clk->s.median : 0;

  printf("eventring probe cost: ns per operation, median of %d runs "
         "(each a new process), min and max\n", runs);
  printf("cpu: %s\n", cpu);
  printf("scheduling: %s\n", sched);
  const char *orp = getenv("OCAMLRUNPARAM");
  const char *orp_name = "OCAMLRUNPARAM";
  if (orp == NULL) {
    orp = getenv("CAMLRUNPARAM");
    orp_name = "CAMLRUNPARAM";
  }
  if (orp != NULL)
    printf("ring: %s=%s\n\n", orp_name, orp);
  else
    printf("ring: defaults (OCAMLRUNPARAM unset)\n\n");
  printf("%-26s %-14s %9s %9s %9s %9s\n", "operation", "state", "median",
         "min", "max", "x clock");
  for (size_t i = 0; i < nf; i++) {
    const struct figure *f = &fs[i];
    if (f->s.nv == 0) {
      printf("%-26s %-14s %s\n", f->op->label, state_labels[f->state],
             f->disabled ? "n/a: library built with tracing disabled"
                         : "failed");
      continue;
    }
    printf("%-26s %-14s %9.2f %9.2f %9.2f %9.3f\n", f->op->label,
           state_labels[f->state], f->s.median, f->s.min, f->s.max,
           clock_ns > 0 ? f->s.median / clock_ns : 0.0);
  }

  /* The figures an engineer compares: the active pair against OCaml's
   * own, and what an idle probe costs. */
  printf("\n");
  const struct figure *pa = lookup(fs, nf, "pair", ST_ACTIVE);
  if (pa != NULL)
    printf("active begin+end pair: %.2f ns = %.2f x OCaml 5.2's %.1f ns "
           "(an anchor measured earlier\n  on this kind of machine, not "
           "in this run)\n",
           pa->s.median, pa->s.median / OCAML52_PAIR_NS, OCAML52_PAIR_NS);
  const struct figure *ab = lookup(fs, nf, "begin", ST_ACTIVE);
  const struct figure *rb = lookup(fs, nf, "begin", ST_READER);
  const struct figure *rp = lookup(fs, nf, "pair", ST_READER);
  if (ab != NULL && rb != NULL && pa != NULL && rp != NULL)
    printf("a concurrent reader adds %+.1f%% to an active begin, %+.1f%% to "
           "an active pair\n", 100.0 * (rb->s.median / ab->s.median - 1),
           100.0 * (rp->s.median / pa->s.median - 1));
  const struct figure *sb = lookup(fs, nf, "begin", ST_READER_1MS);
  const struct figure *sp = lookup(fs, nf, "pair", ST_READER_1MS);
  if (ab != NULL && sb != NULL && pa != NULL && sp != NULL)
    printf("a reader polling every 1 ms adds %+.1f%% to an active begin, "
           "%+.1f%% to an active pair\n",
           100.0 * (sb->s.median / ab->s.median - 1),
           100.0 * (sp->s.median / pa->s.median - 1));
  for (int s = ST_NEVER; s <= ST_PAUSED; s++) {
    const struct figure *b = lookup(fs, nf, "begin", s);
    const struct figure *p = lookup(fs, nf, "pair", s);
    if (b != NULL && p != NULL)
      printf("%s: %.2f ns per probe (single begin), %.2f ns per probe "
             "in a pair\n",
             state_labels[s], b->s.median, p->s.median / 2);
  }

  FILE *out;
  if (bl_json_open("bench_probes", &out) < 0 ||
      (out != NULL && write_json(out, fs, nf, runs, cpu, sched, clock_ns) < 0))
    errors++;
  return errors ? 1 : 0;
}

/* `--count OP N`: runs N operations once, active, untimed: the
 * instruction count of one probe, under valgrind --tool=callgrind
 * --toggle-collect=loop_OP (doc/BENCHMARKS.md), with the same loop
 * bodies as the timed figures. */
static int count_one(const char *opname, const char *count) {
  const struct op *op = find_op(opname);
  long n = atol(count);
  char dir[] = "/tmp/eventring-bench.XXXXXX";
  if (op == NULL || n < 1) {
    fprintf(stderr, "bench_probes: no count %s %s\n", opname, count);
    return 2;
  }
  id_int = eventring_register("bench.int", EVENTRING_TYPE_INT);
  id_span = eventring_register("bench.span", EVENTRING_TYPE_SPAN);
  id_custom = eventring_register("bench.custom", EVENTRING_TYPE_CUSTOM);
  int rc = bl_start_tracing("bench_probes", dir);
  if (rc != 0) return rc;
  op->loop(n);
  eventring_stop();
  rmdir(dir);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--one") == 0)
    return run_one(argv[2], argv[3]);
  if (argc == 4 && strcmp(argv[1], "--count") == 0)
    return count_one(argv[2], argv[3]);
  if (argc != 1) {
    fprintf(stderr, "usage: %s\n", argv[0]);
    return 2;
  }
  return driver(argv[0]);
}
