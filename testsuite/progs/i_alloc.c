/* i_alloc -- an instrumented program started from the environment
 * (OCAML_RUNTIME_EVENTS_START): it counts allocations of 1, 15 and 150
 * words (once, twice and three times) and flushes them as one alloc event,
 * so a test can check the shared instrumented library end to end. */
#include "eventring.h"

int main(void) {
  if (!eventring_is_active()) return 3;
  eventring_alloc(1);
  eventring_alloc(15);
  eventring_alloc(15);
  eventring_alloc(150);
  eventring_alloc(150);
  eventring_alloc(150);
  eventring_alloc_flush();
  return 0;
}
