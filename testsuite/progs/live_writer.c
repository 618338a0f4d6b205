/* live_writer -- a traced program for test_consumer_live: it starts
 * tracing, prints "started PATH" on stdout, waits for a line on stdin,
 * then writes the ints 1..N (argv[1]) as the user event "live.seq",
 * pausing a little every 100 of them so that it writes "for a while", and
 * exits.  The exit teardown writes ring_stop and removes the file (unless
 * OCAML_RUNTIME_EVENTS_PRESERVE is set). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "eventring.h"

int main(int argc, char **argv) {
  long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
  int rc = eventring_start();
  if (rc != 0) {
    fprintf(stderr, "live_writer: start: %s\n", eventring_strerror(rc));
    return 2;
  }
  int id = eventring_register("live.seq", EVENTRING_TYPE_INT);
  if (id < 0) return 2;
  printf("started %s\n", eventring_path());
  fflush(stdout);
  char line[64];
  if (!fgets(line, sizeof line, stdin)) return 3;
  const struct timespec pause = {0, 200000}; /* 0.2 ms */
  for (long v = 1; v <= n; v++) {
    eventring_write_int(id, v);
    if (v % 100 == 0) nanosleep(&pause, NULL);
  }
  return 0;
}
