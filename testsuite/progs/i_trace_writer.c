/* i_trace_writer -- writes a ring file with every kind of event and every
 * way a span can be cut, for test_trace (the instrumented variant, for
 * alloc events).  The test runs it with OCAMLRUNPARAM=e=10 (1024-word
 * rings) so that domain 0's ring wraps.
 *
 *   i_trace_writer post   runs through (the test keeps the file with
 *                         OCAML_RUNTIME_EVENTS_PRESERVE and reads it
 *                         afterwards);
 *   i_trace_writer live   after the first part, prints "ready" and waits
 *                         for a line on stdin before going on, so that a
 *                         reader can take the first part before the ring
 *                         wraps over it;
 *   i_trace_writer hold   prints "ready" after the first part and waits
 *                         for stdin to close, then ends without going on.
 *
 * Domain 0: ring_start; major_slice and the span "t.span" begin; (the
 * pause); 2000 values of "t.seq", far more than the ring holds, so both
 * begins are overwritten (or, read live, lost in a gap); their ends; the
 * span "t.open" begins and is never ended.
 * Domains 1..3, one thread each, bound to slot k, before the wrap: minor
 * begins; a counter, a unit, an int, a custom payload with bytes of every
 * escaping class, an alloc event; then "t.span" begins, major_slice
 * begins, "t.span" ends before major_slice does (out of order); minor
 * ends.
 * Thread names: domain 0 is the main thread, named after the program;
 * the thread of domain k is named "t.worker-k" before it binds, except
 * that domain 1's renames itself "t.late-1" after its events (the file
 * learns it when the thread exits), domain 2's renames itself
 * "t.renamed-2" after it binds and calls eventring_domain_name(NULL), and
 * domain 3's names its slot "t.explicit-3" with eventring_domain_name().  Slot 4 is held by two
 * threads one after the other, "t.first-4" then "t.second-4", each
 * writing one t.unit (the file records the second as the holder).
 * Exit status: 0, or the step that failed. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "eventring.h"
#include "threads.h"

static int id_unit, id_int, id_span, id_open, id_custom, id_seq;

static const unsigned char custom[] = {'"', '\\', '\n', 0x01, 0xff, ' ',
                                       '<', '/', 0x7f, 0xc3, 0xa9};

static void *thread_main(void *arg) {
  int k = (int)(intptr_t)arg;
  char name[16];
  snprintf(name, sizeof name, "t.worker-%d", k);
  pthread_setname_np(pthread_self(), name);
  if (eventring_domain_bind(k) != 0) return (void *)1;
  if (k == 2) {
    pthread_setname_np(pthread_self(), "t.renamed-2");
    eventring_domain_name(NULL);
  } else if (k == 3) {
    eventring_domain_name("t.explicit-3");
  }
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 1000u + (unsigned)k);
  eventring_write_unit(id_unit);
  eventring_write_int(id_int, -7 * k);
  unsigned char bytes[sizeof custom + 1];
  memcpy(bytes, custom, sizeof custom);
  bytes[sizeof custom] = (unsigned char)('0' + k);
  if (eventring_write_custom(id_custom, bytes, sizeof bytes) != 0)
    return (void *)1;
  eventring_alloc(3);
  eventring_alloc(42);
  eventring_alloc(1000);
  eventring_alloc_flush();
  eventring_write_span(id_span, 0);
  eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
  eventring_write_span(id_span, 1);
  eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
  eventring_end(EVENTRING_PHASE_MINOR);
  if (k == 1) pthread_setname_np(pthread_self(), "t.late-1");
  return NULL;
}

/* One holder of slot 4 (arg: its name). */
static void *slot4_main(void *arg) {
  pthread_setname_np(pthread_self(), arg);
  if (eventring_domain_bind(4) != 0) return (void *)1;
  eventring_write_unit(id_unit);
  return NULL;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "post";
  id_unit = eventring_register("t.unit", EVENTRING_TYPE_UNIT);
  id_int = eventring_register("t.int", EVENTRING_TYPE_INT);
  id_span = eventring_register("t.span", EVENTRING_TYPE_SPAN);
  id_open = eventring_register("t.open", EVENTRING_TYPE_SPAN);
  id_custom = eventring_register("t.custom", EVENTRING_TYPE_CUSTOM);
  id_seq = eventring_register("t.seq", EVENTRING_TYPE_INT);
  if (id_unit < 0 || id_int < 0 || id_span < 0 || id_open < 0 ||
      id_custom < 0 || id_seq < 0)
    return 2;
  if (eventring_start() != 0) return 3;
  if (eventring_domain_bind(0) != 0) return 4;
  eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
  eventring_write_span(id_span, 0);

  int rc = prog_run_threads(3, thread_main);
  if (rc != 0) return rc;
  static char *const holders[] = {"t.first-4", "t.second-4"};
  for (int i = 0; i < 2; i++) {
    pthread_t t;
    void *r;
    if (pthread_create(&t, NULL, slot4_main, holders[i])) return 5;
    pthread_join(t, &r);
    if (r) return 6;
  }

  if (strcmp(mode, "post") != 0) {
    printf("ready\n");
    fflush(stdout);
    char line[64];
    if (!strcmp(mode, "hold")) {
      while (fgets(line, sizeof line, stdin)) {
      }
      return 0;
    }
    if (!fgets(line, sizeof line, stdin)) return 8;
  }
  for (int i = 0; i < 2000; i++) eventring_write_int(id_seq, i);
  eventring_write_span(id_span, 1);
  eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
  eventring_write_span(id_open, 0);
  return eventring_stop() == 0 ? 0 : 7;
}
