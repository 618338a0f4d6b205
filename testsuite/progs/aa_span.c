/* aa_span -- a program whose spans last about as long from run to run,
 * for the A/A and A/B experiments of `eventring diff` (test_diff_aa and
 * bench_diff): each run is the same busy work, so two runs differ only by
 * the machine's noise (interrupts, caches, clock speed, other load).
 *
 * Usage: aa_span [SLOWER_PERCENT [COUNT]]: COUNT (default 3000) rounds,
 * each a span "aa.work" around WORK_ITERS rounds of integer arithmetic
 * (about 60 us on the Xeon of the recorded runs) made SLOWER_PERCENT
 * (default 0) longer, then a span "aa.other" around a fifth of that
 * work, never made slower.  Tracing starts from the environment (OCAML_RUNTIME_EVENTS_START,
 * or under `eventring`).  Exit status: 0, or the step that failed. */
#include <stdint.h>
#include <stdlib.h>

#include "eventring.h"

#define WORK_ITERS 40000

static volatile uint64_t sink;

/* `iters` rounds of a xorshift generator: work the compiler cannot drop
 * nor vectorize away (each round needs the last). */
static void work(long iters) {
  uint64_t x = sink | 1;
  for (long i = 0; i < iters; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  sink = x;
}

int main(int argc, char **argv) {
  long slower = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
  long n = argc > 2 ? strtol(argv[2], NULL, 10) : 3000;
  if (slower < 0 || slower > 1000 || n < 1) return 1;
  int id_work = eventring_register("aa.work", EVENTRING_TYPE_SPAN);
  int id_other = eventring_register("aa.other", EVENTRING_TYPE_SPAN);
  if (id_work < 0 || id_other < 0) return 2;
  long iters = WORK_ITERS + WORK_ITERS * slower / 100;
  for (long i = 0; i < n; i++) {
    eventring_write_span(id_work, 0);
    work(iters);
    eventring_write_span(id_work, 1);
    eventring_write_span(id_other, 0);
    work(WORK_ITERS / 5);
    eventring_write_span(id_other, 1);
  }
  return 0;
}
