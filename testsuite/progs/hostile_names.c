/* hostile_names -- a traced program whose every name tries to act on a
 * terminal, for test_hostile_names, which starts it with a hostile
 * argv[0] (the program name its file records).  Its user events, the
 * name of its slot and the names of the two threads that share that slot
 * (in the thread-switch markers) hold ESC sequences, BEL, CR and
 * newlines.  Each thread writes COUNT (argv[1], default 3) spans and ints;
 * with a small ring (OCAMLRUNPARAM e=...) and a large COUNT, readers of
 * the file report lost events.  Tracing is started by the environment
 * (OCAML_RUNTIME_EVENTS_START).  Exit status: 0, or the step that
 * failed. */
#include <pthread.h>
#include <stdlib.h>

#include "eventring.h"

#define HOSTILE "\033]0;PWN\a\033[31mRED\r\nfake"

static int span_id, int_id, count = 3;

static void play(void) {
  for (int i = 0; i < count; i++) {
    eventring_write_span(span_id, 0);
    eventring_write_int(int_id, i);
    eventring_write_span(span_id, 1);
  }
}

static void *second(void *arg) {
  (void)arg;
  if (eventring_domain_join(0) != 0) return (void *)1;
  eventring_thread_id(2);
  eventring_thread_name("t2" HOSTILE);
  play();
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) count = atoi(argv[1]);
  span_id = eventring_register("span" HOSTILE, EVENTRING_TYPE_SPAN);
  int_id = eventring_register("int\033[2J\n", EVENTRING_TYPE_INT);
  if (span_id < 0 || int_id < 0) return 2;
  if (eventring_domain_join(0) != 0) return 3;
  eventring_thread_id(1);
  if (eventring_thread_name("t1" HOSTILE) != 0) return 4;
  eventring_domain_name("\033[1mslot\n");
  play();
  pthread_t th;
  void *r;
  if (pthread_create(&th, NULL, second, NULL) != 0) return 5;
  if (pthread_join(th, &r) != 0 || r) return 6;
  play();
  return 0;
}
