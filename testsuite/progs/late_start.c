/* late_start -- a program that starts tracing only when told, for
 * test_find_ring: it prints "waiting PID", starts tracing (eventring_start)
 * once a line arrives on stdin, writes the user int "late.seq" = 1, 2, 3,
 * prints "started PATH" and waits for another line.  With the argument
 * "stop" it then stops tracing (the file stays with
 * OCAML_RUNTIME_EVENTS_PRESERVE) and prints "stopped", and either way
 * exits when stdin closes.  A test thus decides exactly when the file
 * appears, and when the process stops mapping it. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "eventring.h"

int main(int argc, char **argv) {
  int stop = argc > 1 && !strcmp(argv[1], "stop");
  char line[64];
  printf("waiting %ld\n", (long)getpid());
  fflush(stdout);
  if (!fgets(line, sizeof line, stdin)) return 0;
  int rc = eventring_start();
  if (rc != 0) {
    fprintf(stderr, "late_start: start: %s\n", eventring_strerror(rc));
    return 2;
  }
  int id = eventring_register("late.seq", EVENTRING_TYPE_INT);
  if (id < 0) return 2;
  for (int v = 1; v <= 3; v++) eventring_write_int(id, v);
  printf("started %s\n", eventring_path());
  fflush(stdout);
  if (!fgets(line, sizeof line, stdin)) return 0;
  if (stop) {
    eventring_stop();
    printf("stopped\n");
    fflush(stdout);
  }
  while (fgets(line, sizeof line, stdin)) {
  }
  return 0;
}
