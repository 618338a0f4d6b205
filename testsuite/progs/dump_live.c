/* dump_live -- a live writer for test_dump's --follow tests: starts
 * tracing, prints "ready" on stdout, waits for end of file on stdin (the
 * test closes it once the reader has the ring file open), writes the
 * ints 0, 1, ... of "live.tick" about once a millisecond for half a
 * second, then the int "live.last" with the number of ticks, and exits
 * (the library writes ring_stop, and removes the file unless
 * OCAML_RUNTIME_EVENTS_PRESERVE is set). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void) {
  int tick = eventring_register("live.tick", EVENTRING_TYPE_INT);
  int last = eventring_register("live.last", EVENTRING_TYPE_INT);
  if (tick < 0 || last < 0 || eventring_start() != 0) return 2;
  printf("ready\n");
  fflush(stdout);
  char c;
  while (read(STDIN_FILENO, &c, 1) > 0) {
  }
  double end = now() + 0.5;
  int n = 0;
  while (now() < end) {
    eventring_write_int(tick, n++);
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  eventring_write_int(last, n);
  return 0;
}
