/* i_lat_alloc -- an instrumented program for test_stats: it counts
 * allocations of known sizes and flushes them as alloc events, started
 * from the environment (OCAML_RUNTIME_EVENTS_START) and kept with
 * OCAML_RUNTIME_EVENTS_PRESERVE.
 *
 * Three flushes, each after: size 1 x 10, size 9 x 2, size 10 x 3,
 * size 99 x 1, size 100 x 4 and size 5000 x 1; so the bucket totals are
 * [1] = 30, [9] = 6, [10] = 9, [18] = 3, [19] = 15, the others 0. */
#include "eventring.h"

int main(void) {
  if (!eventring_is_active()) return 3;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 10; i++) eventring_alloc(1);
    for (int i = 0; i < 2; i++) eventring_alloc(9);
    for (int i = 0; i < 3; i++) eventring_alloc(10);
    eventring_alloc(99);
    for (int i = 0; i < 4; i++) eventring_alloc(100);
    eventring_alloc(5000);
    eventring_alloc_flush();
  }
  return 0;
}
