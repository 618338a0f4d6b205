/* mon_loop -- a traced program for test_remote_control (tracing comes
 * from OCAML_RUNTIME_EVENTS_START).  It prints "ready PID" on stdout,
 * then writes the user int "mon.seq" = 1, 2, 3, ... every 200 us until
 * standard input closes, and exits.  It never pauses or resumes itself:
 * every ring_pause and ring_resume in its file came from outside. */
#include <poll.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"

int main(void) {
  int id = eventring_register("mon.seq", EVENTRING_TYPE_INT);
  if (id < 0) return 2;
  printf("ready %ld\n", (long)getpid());
  fflush(stdout);
  struct pollfd p = {.fd = 0, .events = POLLIN};
  for (int64_t v = 1;; v++) {
    eventring_write_int(id, v);
    if (poll(&p, 1, 0) > 0) break;
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  return 0;
}
