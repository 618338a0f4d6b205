/* script_writer -- a traced program driven line by line on standard
 * input, for the tests of readers: what it records, and when, is the
 * test's choice, and each command is answered once done, so that the
 * test knows what the file holds before it looks.
 *
 *   start          eventring_start()
 *   stop           eventring_stop() (a later start makes a new file for
 *                  the same pid: a second tracing session)
 *   reg TYPE NAME  eventring_register(NAME, TYPE), TYPE one of unit, int,
 *                  span; answers "ok ID"
 *   unit ID N      N unit events of id ID
 *   int ID V       the int event ID = V
 *   span ID        one span of event ID (a begin, then its end)
 *
 * Each command is answered by one line "ok RC" (RC: what the call
 * returned, 0 for the events, -1 for a line it does not know).  It
 * prints "ready PID" first and exits 0 at the end of its input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eventring.h"

static int type_of(const char *s) {
  if (!strcmp(s, "unit")) return EVENTRING_TYPE_UNIT;
  if (!strcmp(s, "int")) return EVENTRING_TYPE_INT;
  if (!strcmp(s, "span")) return EVENTRING_TYPE_SPAN;
  return -1;
}

int main(void) {
  printf("ready %ld\n", (long)getpid());
  fflush(stdout);
  char line[256], word[16], name[200];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    int rc = 0, id;
    long long v;
    if (!strcmp(line, "start")) {
      rc = eventring_start();
    } else if (!strcmp(line, "stop")) {
      rc = eventring_stop();
    } else if (sscanf(line, "reg %15s %199s", word, name) == 2) {
      rc = type_of(word) < 0 ? -1 : eventring_register(name, type_of(word));
    } else if (sscanf(line, "unit %d %lld", &id, &v) == 2) {
      for (long long i = 0; i < v; i++) eventring_write_unit(id);
    } else if (sscanf(line, "int %d %lld", &id, &v) == 2) {
      eventring_write_int(id, v);
    } else if (sscanf(line, "span %d", &id) == 1) {
      eventring_write_span(id, 0);
      eventring_write_span(id, 1);
    } else {
      rc = -1;
    }
    printf("ok %d\n", rc);
    fflush(stdout);
  }
  return 0;
}
