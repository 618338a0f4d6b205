/* lat_phases -- writes a ring file with known phases for test_latency
 * and test_stats, and keeps it (the tests set OCAML_RUNTIME_EVENTS_DIR
 * and OCAML_RUNTIME_EVENTS_PRESERVE).
 *
 * Domain 0 (the main thread): 300 minor phases, each with
 * minor_local_roots nested in it and followed by the counter
 * minor_promoted = i (i = 0 .. 299); after every 15th minor, a major
 * slice with major_mark nested in it (20 of them); the user int
 * "lat.ticks" 300 times (i) and the user unit "lat.unit" 5 times.  So
 * 320 pauses, minor_promoted's last value 299.  With an argument N, one
 * thread bound to slot 1 then writes N more minor phases there.
 * Exit status: 0, or the step that failed. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "eventring.h"

static void *thread_main(void *arg) {
  int n = (int)(intptr_t)arg;
  if (eventring_domain_bind(1) != 0) return (void *)1;
  for (int i = 0; i < n; i++) {
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_end(EVENTRING_PHASE_MINOR);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int ticks = eventring_register("lat.ticks", EVENTRING_TYPE_INT);
  int unit = eventring_register("lat.unit", EVENTRING_TYPE_UNIT);
  if (ticks < 0 || unit < 0) return 2;
  if (eventring_start() != 0) return 3;
  if (eventring_domain_bind(0) != 0) return 4;
  for (int i = 0; i < 300; i++) {
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_begin(EVENTRING_PHASE_MINOR_LOCAL_ROOTS);
    eventring_end(EVENTRING_PHASE_MINOR_LOCAL_ROOTS);
    eventring_end(EVENTRING_PHASE_MINOR);
    eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, (uint64_t)i);
    eventring_write_int(ticks, i);
    if (i % 60 == 0) eventring_write_unit(unit);
    if (i % 15 == 14) {
      eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
      eventring_begin(EVENTRING_PHASE_MAJOR_MARK);
      eventring_end(EVENTRING_PHASE_MAJOR_MARK);
      eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
    }
  }
  if (argc > 1) {
    pthread_t t;
    void *r;
    if (pthread_create(&t, NULL, thread_main,
                       (void *)(intptr_t)atoi(argv[1])) != 0)
      return 5;
    pthread_join(t, &r);
    if (r) return 6;
  }
  return eventring_stop() == 0 ? 0 : 7;
}
