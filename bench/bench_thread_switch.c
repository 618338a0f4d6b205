/* bench_thread_switch.c -- what the thread-switch markers of shared slots
 * cost a probe (doc/FORMAT.md, "Thread switches").
 *
 * Three loops of begin+end pairs, each timed with CLOCK_MONOTONIC and
 * divided by its pairs, in one process with tracing active:
 *   bound     the thread holds its slot alone (eventring_domain_bind):
 *             no marker, the probe's ordinary path;
 *   joined    the thread has joined its slot (eventring_domain_join) and
 *             is its only writer: each probe checks the writer and finds
 *             it unchanged;
 *   switching joined, with the writer changing before every pair (the
 *             thread alternates between two ids, which is what a switch
 *             looks like to the writer): a marker of 4 words precedes
 *             every pair.
 * Each loop runs ROUNDS times, interleaved (bound, joined, switching,
 * bound, ...), and the table gives medians and extremes; the ratios are
 * of medians of the same run.  Real switches between OCaml threads cost
 * the runtime lock's hand-over, microseconds, against which the marker is
 * noise; the figure says what a program pays per switch in the ring.
 *
 * Output: a table on stdout; JSON to the file EVENTRING_BENCH_OUT names
 * (EVENTRING_BENCH_THREAD_SWITCH_RUNS or EVENTRING_BENCH_RUNS sets the
 * rounds).  The exit status reports errors
 * only, never slowness.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "benchlib.h"
#include "eventring.h"

#define PAIRS 200000

enum { BOUND, JOINED, SWITCHING, N_LOOPS };
static const char *const names[N_LOOPS] = {"bound", "joined", "switching"};

static double loop(int kind) {
  uint64_t t0 = bl_now_ns();
  for (int i = 0; i < PAIRS; i++) {
    if (kind == SWITCHING) eventring_thread_id(i & 1);
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_end(EVENTRING_PHASE_MINOR);
  }
  return (double)(bl_now_ns() - t0) / PAIRS;
}

int main(void) {
  char dir[] = "/tmp/eventring-bench.XXXXXX";
  int rc = bl_start_tracing("bench_thread_switch", dir);
  if (rc != 0) return rc;
  int rounds = bl_runs();
  static struct bl_stat st[N_LOOPS];
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < N_LOOPS; k++) {
      rc = k == BOUND ? eventring_domain_bind(1) : eventring_domain_join(2);
      if (rc != 0) {
        fprintf(stderr, "bench_thread_switch: cannot take a slot: %s\n",
                eventring_strerror(rc));
        return 1;
      }
      eventring_thread_id(-1);
      bl_add(&st[k], loop(k));
      eventring_domain_release();
    }
  }
  /* The file goes with the stop (no PRESERVE), then its directory. */
  eventring_stop();
  rmdir(dir);
  printf("begin+end pair, ns (median [min, max] of %d rounds of %d pairs)\n",
         rounds, PAIRS);
  for (int k = 0; k < N_LOOPS; k++) {
    bl_summarize(&st[k]);
    printf("  %-10s %7.2f  [%.2f, %.2f]\n", names[k], st[k].median, st[k].min,
           st[k].max);
  }
  printf("  joined / bound     %.3f\n", st[JOINED].median / st[BOUND].median);
  printf("  switching / bound  %.3f (a marker before every pair)\n",
         st[SWITCHING].median / st[BOUND].median);

  FILE *out;
  if (bl_json_open("bench_thread_switch", &out) != 0) return 1;
  if (out) {
    fprintf(out, "{\"unit\":\"ns per begin+end pair\"");
    for (int k = 0; k < N_LOOPS; k++) {
      fprintf(out, ",");
      bl_json_str(out, names[k]);
      fprintf(out, ":{");
      bl_json_stat(out, &st[k]);
      fprintf(out, "}");
    }
    fprintf(out, ",\"joined_over_bound\":%.4f,\"switching_over_bound\":%.4f}",
            st[JOINED].median / st[BOUND].median,
            st[SWITCHING].median / st[BOUND].median);
  }
  return out && bl_json_close("bench_thread_switch", out) != 0;
}
