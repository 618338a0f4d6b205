/* rot_spans -- a program whose spans are known exactly, for reading
 * `eventring record`'s rotated files together (test_rotjoin): on each
 * of THREADS threads (default 2, each its own domain), one span
 * "rot.outer" around COUNT (default 60000) spans "rot.inner", each
 * holding a "rot.i" integer event (its number, from 1).  So every
 * domain has 1 + COUNT spans and COUNT integers, and a recording
 * rotated every few hundred thousand events cuts through rot.outer and
 * through some rot.inner spans.  The events are the program's only ones
 * besides the library's lifecycle and thread markers.
 *
 * Usage: rot_spans [COUNT [THREADS]].  Tracing starts from the
 * environment (OCAML_RUNTIME_EVENTS_START, or under `eventring`).
 * Exit status: 0, or the step that failed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "eventring.h"
#include "threads.h"

static long count = 60000;
static int id_outer, id_inner, id_i;

static void *body(void *arg) {
  (void)arg;
  eventring_write_span(id_outer, 0);
  for (long i = 1; i <= count; i++) {
    eventring_write_span(id_inner, 0);
    eventring_write_int(id_i, i);
    eventring_write_span(id_inner, 1);
  }
  eventring_write_span(id_outer, 1);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) count = strtol(argv[1], NULL, 10);
  int threads = argc > 2 ? atoi(argv[2]) : 2;
  if (count < 1 || threads < 1 || threads > 16) return 1;
  id_outer = eventring_register("rot.outer", EVENTRING_TYPE_SPAN);
  id_inner = eventring_register("rot.inner", EVENTRING_TYPE_SPAN);
  id_i = eventring_register("rot.i", EVENTRING_TYPE_INT);
  if (id_outer < 0 || id_inner < 0 || id_i < 0) return 2;
  int rc = prog_run_threads(threads, body);
  if (!rc) printf("spans %ld\n", (count + 1) * threads);
  return rc;
}
