/* envstart -- a program that only emits events and never calls
 * eventring_start(): tracing, if any, comes from OCAML_RUNTIME_EVENTS_START.
 * It prints "active=A path=P" on stdout, so the test can tell whether the
 * library started, and emits ten user ints (1..10), a phase and a counter. */
#include <stdio.h>

#include "eventring.h"

int main(void) {
  int id = eventring_register("envstart.val", EVENTRING_TYPE_INT);
  if (id < 0) return 2;
  const char *path = eventring_path();
  printf("active=%d path=%s\n", eventring_is_active(), path ? path : "-");
  fflush(stdout);
  eventring_begin(EVENTRING_PHASE_MAJOR);
  for (int v = 1; v <= 10; v++) eventring_write_int(id, v);
  eventring_counter(EVENTRING_COUNTER_MINOR_ALLOCATED, 42);
  eventring_end(EVENTRING_PHASE_MAJOR);
  return 0;
}
