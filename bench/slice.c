/* slice.c -- the event mix of the reader and report benchmarks: one
 * slice of a runtime's life.  A file of its own in the helper archive, so
 * that only the programs that write events link it (bench_rss's program
 * without the library must not). */
#include "benchlib.h"
#include "eventring.h"

unsigned bl_emit_slice(uint64_t i, int id_span, int id_int, int id_unit) {
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_begin(EVENTRING_PHASE_MINOR_LOCAL_ROOTS);
  eventring_end(EVENTRING_PHASE_MINOR_LOCAL_ROOTS);
  eventring_begin(EVENTRING_PHASE_MINOR_REMEMBERED_SET);
  eventring_end(EVENTRING_PHASE_MINOR_REMEMBERED_SET);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, i & 1023);
  eventring_counter(EVENTRING_COUNTER_MINOR_ALLOCATED, 262144);
  eventring_end(EVENTRING_PHASE_MINOR);
  eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
  eventring_begin(EVENTRING_PHASE_MAJOR_MARK);
  eventring_end(EVENTRING_PHASE_MAJOR_MARK);
  eventring_counter(EVENTRING_COUNTER_MAJOR_WORK_COUNTER, i);
  eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
  eventring_write_span(id_span, 0);
  eventring_write_int(id_int, (int64_t)i);
  eventring_write_span(id_span, 1);
  eventring_write_unit(id_unit);
  return 17;
}
