/* i_small_ring_writer -- writes every kind of event, the alloc event of the
 * instrumented variant included, ROUNDS times into a ring as small as
 * OCAMLRUNPARAM asks, for test_small_rings, and keeps the file (the test
 * sets OCAML_RUNTIME_EVENTS_PRESERVE and OCAML_RUNTIME_EVENTS_DIR).
 *
 * Each round, in this order (lengths in words, header and timestamp
 * included): begin 2, counter 3, unit 2, int 3, span begin 2, custom of
 * 3 bytes 3, custom of CUSTOM_BIG bytes (2 + CUSTOM_BIG / 8 + 1), alloc 22,
 * span end 2, end 2.  Before them, ring_start 3; after, ring_stop 3.
 * test_small_rings knows this sequence and checks the file against it.
 * Exit status: 0, or the step that failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventring.h"

#define ROUNDS 200

int main(int argc, char **argv) {
  /* The big custom event's payload, in bytes: the test passes a size
   * larger than the ring. */
  size_t big = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 0;
  static unsigned char payload[EVENTRING_MAX_CUSTOM_BYTES];
  if (big > sizeof payload) return 2;
  memset(payload, 'x', big);
  int id_unit = eventring_register("s.unit", EVENTRING_TYPE_UNIT);
  int id_int = eventring_register("s.int", EVENTRING_TYPE_INT);
  int id_span = eventring_register("s.span", EVENTRING_TYPE_SPAN);
  int id_custom = eventring_register("s.custom", EVENTRING_TYPE_CUSTOM);
  if (id_unit < 0 || id_int < 0 || id_span < 0 || id_custom < 0) return 3;
  if (eventring_start() != 0) return 4;
  for (int r = 0; r < ROUNDS; r++) {
    eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
    eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, (uint64_t)r);
    eventring_write_unit(id_unit);
    eventring_write_int(id_int, r);
    eventring_write_span(id_span, 0);
    /* Return values are not checked: a write the ring cannot hold is
     * counted in its DROPPED word, which is what the test reads. */
    (void)eventring_write_custom(id_custom, "abc", 3);
    (void)eventring_write_custom(id_custom, payload, big);
    eventring_alloc((uint64_t)r % 120);
    eventring_alloc_flush();
    eventring_write_span(id_span, 1);
    eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
  }
  return eventring_stop() == 0 ? 0 : 5;
}
