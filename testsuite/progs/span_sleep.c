/* span_sleep -- writes a ring file of user spans that each last at least
 * a given time, for test_diff's runs of one program at two speeds, and
 * keeps it (the test sets OCAML_RUNTIME_EVENTS_DIR and
 * OCAML_RUNTIME_EVENTS_PRESERVE).
 *
 * Usage: span_sleep MICROSECONDS [COUNT]: COUNT (default 20) spans named
 * "diff.req" on domain 0, each around a sleep of MICROSECONDS, so each
 * lasts at least that long (a sleep never ends early; it may end late).
 * Exit status: 0, or the step that failed. */
#include <stdlib.h>
#include <time.h>

#include "eventring.h"

int main(int argc, char **argv) {
  if (argc < 2) return 1;
  long us = strtol(argv[1], NULL, 10);
  int n = argc > 2 ? atoi(argv[2]) : 20;
  int req = eventring_register("diff.req", EVENTRING_TYPE_SPAN);
  if (req < 0) return 2;
  if (eventring_start() != 0) return 3;
  if (eventring_domain_bind(0) != 0) return 4;
  for (int i = 0; i < n; i++) {
    eventring_write_span(req, 0);
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    eventring_write_span(req, 1);
  }
  return 0;
}
