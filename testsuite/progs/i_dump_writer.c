/* i_dump_writer -- writes a ring file with every kind of event for
 * test_dump, and keeps it (the test sets OCAML_RUNTIME_EVENTS_PRESERVE,
 * OCAML_RUNTIME_EVENTS_DIR and OCAMLRUNPARAM=e=10 for a 1024-word ring).
 *
 * Domain 0 (the main thread): ring_start, then the ints 0..1999 of
 * "w.seq", far more than its ring holds, so that the oldest are
 * overwritten; then, after the threads, 2000, and ring_stop.
 * Domains 1..3: one thread each, bound to its slot, which writes the
 * sequence below with k = its slot; test_dump knows it by heart.
 * Exit status: 0, or the step that failed. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "eventring.h"
#include "threads.h"

static int id_unit, id_int, id_span, id_custom, id_seq;

/* Bytes that exercise every escaping rule of OCaml's %S. */
static const unsigned char custom[] = {'\n', '"', '\\', 0x01, 0xff, '\t',
                                       '\r', '\b', ' ',  '~',  0x7f, 0x80};

static void *thread_main(void *arg) {
  int k = (int)(intptr_t)arg;
  if (eventring_domain_bind(k) != 0) return (void *)1;
  eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED,
                    (UINT64_C(1) << 63) + (uint64_t)k);
  eventring_write_unit(id_unit);
  eventring_write_int(id_int, -1000000000000LL * k);
  eventring_write_span(id_span, 0);
  unsigned char bytes[sizeof custom + 1];
  for (size_t i = 0; i < sizeof custom; i++) bytes[i] = custom[i];
  bytes[sizeof custom] = (unsigned char)('0' + k);
  if (eventring_write_custom(id_custom, bytes, sizeof bytes) != 0)
    return (void *)1;
  if (eventring_write_custom(id_custom, "", 0) != 0) return (void *)1;
  eventring_alloc(1);
  eventring_alloc(5);
  eventring_alloc(15);
  eventring_alloc(250);
  eventring_alloc(250);
  eventring_alloc_flush();
  eventring_write_span(id_span, 1);
  eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
  return NULL;
}

int main(void) {
  id_unit = eventring_register("w.unit", EVENTRING_TYPE_UNIT);
  id_int = eventring_register("w.int", EVENTRING_TYPE_INT);
  id_span = eventring_register("w.span", EVENTRING_TYPE_SPAN);
  id_custom = eventring_register("w.custom", EVENTRING_TYPE_CUSTOM);
  id_seq = eventring_register("w.seq", EVENTRING_TYPE_INT);
  if (id_unit < 0 || id_int < 0 || id_span < 0 || id_custom < 0 || id_seq < 0)
    return 2;
  if (eventring_start() != 0) return 3;
  if (eventring_domain_bind(0) != 0) return 4;
  for (int i = 0; i < 2000; i++) eventring_write_int(id_seq, i);
  int rc = prog_run_threads(3, thread_main);
  if (rc != 0) return rc;
  eventring_write_int(id_seq, 2000);
  return eventring_stop() == 0 ? 0 : 7;
}
