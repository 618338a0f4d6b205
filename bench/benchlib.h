/* benchlib.h -- what the benchmarks share: running a measurement in a
 * process of its own, starting tracing in a private directory,
 * summarizing repeated runs, and writing JSON.
 *
 * Every benchmark re-executes itself with arguments that name one
 * measurement, reads the figures that child prints on its stdout, and
 * repeats that in rounds (round 1 of every measurement, then round 2, ...)
 * so that a burst of noise on the shared machine spreads over all figures.
 */
#ifndef EVENTRING_BENCHLIB_H
#define EVENTRING_BENCHLIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define BL_RUNS_DEFAULT 7
#define BL_RUNS_MAX 51
/* A run's exit status when the library has tracing compiled out
 * (configure --disable-tracing): no error, but nothing to measure. */
#define BL_EXIT_DISABLED 3

/* A figure measured once per run: its values and their summary. */
struct bl_stat {
  double v[BL_RUNS_MAX];
  int nv;
  double median, min, max;
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bl_now_ns(void);

/* A compiler barrier: it emits no instruction but makes the compiler
 * assume that any memory may have changed.  In the timed loops below the
 * compiler could otherwise load a probe's flag once and hoist the test
 * out of the loop (or delete the loop while tracing is off), which a real
 * call site, with real work between probes, does not allow.  One barrier
 * after each probe keeps every probe's flag load and branch in the loop. */
#define BL_BARRIER() __asm__ volatile("" ::: "memory")

/* Defines `static uint64_t NAME(long n)`: runs the statements that follow
 * NAME n times (`i` the iteration, from 0) and returns the nanoseconds
 * that took.  Each loop is its own non-inlined function so that the
 * compiler treats every measured body alike, whatever the other loops
 * look like. */
#define BL_TIMED_LOOP(name, ...)                             \
  __attribute__((noinline)) static uint64_t name(long n) {   \
    uint64_t t0 = bl_now_ns();                               \
    for (long i = 0; i < n; i++) {                           \
      __VA_ARGS__                                            \
    }                                                        \
    return bl_now_ns() - t0;                                 \
  }

/* The reference of the probe benchmarks, a BL_TIMED_LOOP-like loop of n
 * clock_gettime(CLOCK_MONOTONIC) calls (their results kept alive). */
uint64_t bl_loop_clock(long n);

/* Nanoseconds per iteration of `loop` (above): doubles n until a call
 * takes calib_ns, which also warms the caches and, while tracing, touches
 * every page of the ring, then times one call whose n is scaled to take
 * about target_ns. */
double bl_ns_per_op(uint64_t (*loop)(long n), double target_ns,
                    uint64_t calib_ns);

/* The path of the running program (from /proc/self/exe, else argv0). */
void bl_self(const char *argv0, char *buf, size_t len);

/* The eventring command: EVENTRING_BENCH_TOOL, else tools/eventring
 * beside the bench/ directory this program is in.  Returns 0, or 2 after
 * saying on stderr, as `who`, that there is none. */
int bl_tool(const char *argv0, const char *who, char *buf, size_t len);

/* The number of runs: the program's own variable, EVENTRING_BENCH_X_RUNS
 * for a program named bench_x (upper-cased, other characters than letters
 * and digits as '_'), else EVENTRING_BENCH_RUNS, else BL_RUNS_DEFAULT;
 * clamped to [1, BL_RUNS_MAX].  A benchmark prints the count it used. */
int bl_runs(void);

/* Runs `self args...` (args NULL-terminated, at most 7), its stdout into
 * buf (NUL-terminated), its stderr to ours.  Returns its exit status, or
 * -1 when it could not run or died of a signal (said on stderr). */
int bl_spawn(const char *self, char *const args[], char *buf, size_t len);

/* Adds a value (ignored once BL_RUNS_MAX are held). */
void bl_add(struct bl_stat *s, double v);

/* Sets median, min and max from the values; all 0 when there are none. */
void bl_summarize(struct bl_stat *s);

/* The CPU's model name from /proc/cpuinfo, "unknown" without it. */
/* Puts the calling process at SCHED_FIFO (priority 10) when the system
 * allows it and EVENTRING_BENCH_FIFO is not 0, so that other load on the
 * machine cannot preempt a timed loop.  Returns 1 when it is there. */
int bl_fifo(void);

void bl_cpu_model(char *out, size_t len);

/* Writes `s` as a JSON string (our strings hold no control characters). */
void bl_json_str(FILE *out, const char *s);

/* Writes "median": m, "min": a, "max": b (no braces), with 4 decimals;
 * bl_json_stat_digits with `digits` decimals. */
void bl_json_stat(FILE *out, const struct bl_stat *s);
void bl_json_stat_digits(FILE *out, const struct bl_stat *s, int digits);

/* Writes ,\n  "keys[i]": {stat} for each of the `n` figures `s`, the
 * members of a benchmark's object after its first. */
void bl_json_figures(FILE *out, const char *const *keys,
                     const struct bl_stat *s, int n);

/* Creates a private directory from the template `dir` (mkdtemp), points
 * OCAML_RUNTIME_EVENTS_DIR at it and starts tracing.  Returns 0; or
 * BL_EXIT_DISABLED (tracing compiled out) or 2 (an error, said on stderr
 * after `prog`), with the directory removed again. */
int bl_start_tracing(const char *prog, char *dir);

/* Keeps a driver and the runs it spawns from tracing unless they ask:
 * unsets OCAML_RUNTIME_EVENTS_START and OCAML_RUNTIME_EVENTS_PRESERVE
 * (and, with `params` nonzero, OCAMLRUNPARAM and CAMLRUNPARAM), and stops
 * the tracing that the environment started in this process, if any. */
void bl_untraced(int params);

/* The main() of a benchmark that re-executes itself: `PROG --one` runs
 * one(), `PROG` runs driver(argv[0]); other arguments are a usage error
 * (2). */
int bl_main(int argc, char **argv, int (*one)(void),
            int (*driver)(const char *argv0));

/* bl_main() for a benchmark whose runs name what they measure: `PROG
 * --one OP` runs one(OP). */
int bl_main_op(int argc, char **argv, int (*one)(const char *op),
               int (*driver)(const char *argv0));

/* Forks a writer process that runs writer(go, ready, arg): it must write
 * one byte on `ready` once it is tracing (or _exit(BL_EXIT_DISABLED) when
 * it cannot start), wait for a byte on `go`, and _exit.  Waits for that
 * first byte.  Returns 0 with *pid the writer, *go the end to write to
 * and *ready the end to read from (both close-on-exec); or, with the
 * writer reaped, BL_EXIT_DISABLED or 2. */
int bl_fork_writer(void (*writer)(int go, int ready, int arg), int arg,
                   pid_t *pid, int *go, int *ready);

/* Forks `tool args...` (args[0] its name, NULL-terminated) with its
 * stderr into a pipe whose read end (close-on-exec) goes to *err; *pid
 * is the child, or -1 when fork failed.  When the exec fails the child
 * says so on that stderr after `prog` and exits 127.  Returns 0, or 2
 * when there is no pipe. */
int bl_exec_tool(const char *prog, const char *tool, char *const args[],
                 pid_t *pid, int *err);

/* The user + system CPU seconds of a struct rusage. */
struct rusage;
double bl_cpu_seconds(const struct rusage *ru);

/* Opens the JSON output named by EVENTRING_BENCH_OUT, creating the
 * directories above it.  Returns 0 with *out NULL when the variable is
 * unset or empty, 0 with *out the stream, or -1 after saying why on
 * stderr (after `prog`). */
int bl_json_open(const char *prog, FILE **out);

/* Closes what bl_json_open() opened and says on stdout where the figures
 * went.  Returns 0, or -1 after saying on stderr that writing failed. */
int bl_json_close(const char *prog, FILE *out);

/* slice.c: writes one slice of a runtime's life -- a minor collection
 * with two sub-phases and its counters, a major slice with a mark phase
 * and its work counter, then the program's own span around an int, and a
 * unit, with the given user event ids -- and returns the events written
 * (17). */
unsigned bl_emit_slice(uint64_t i, int id_span, int id_int, int id_unit);

#endif /* EVENTRING_BENCHLIB_H */
