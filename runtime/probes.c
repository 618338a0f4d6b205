/* probes.c -- the out-of-line entry points of the inlined probes.
 *
 * eventring.h's probes test eventring__on inline and, when it is set, call
 * one of the functions below.  Each one is its own copy of the write path of
 * writer.h, compiled for a constant payload size, so that a probe costs one
 * call, one entry into its domain (stw.h) and the stores of its event:
 * er_emit_fast() inline, and, when it gives up, a tail call to an
 * out-of-line function that runs the whole path (writer.h says why).  The
 * allocation probes of the instrumented variant are in
 * runtime-instrumented/alloc.c.
 */

#include "writer.h"

_Static_assert(EVENTRING__UEV_SPAN_BEGIN == ER_UEV_SPAN_BEGIN &&
                   EVENTRING__UEV_SPAN_END == ER_UEV_SPAN_END,
               "eventring.h's span types are the format's");

/* An event whose type or id the file cannot hold: written, it would be
 * malformed (an id beyond the file's name tables) or would spill into the
 * header's type and user bits (an id of 8192 or more), and every reader
 * would have to skip it.  It is counted in the ring's DROPPED word
 * instead, as an event the writer could not record.  Cold and out of
 * line, so that the checks below cost the probes one compare each. */
static __attribute__((noinline, cold)) void drop_bad_event(void) {
  struct er_domain *d = er_enter(ER_IF_ON);
  if (!d) return;
  er_count_dropped(d);
  er_leave(d);
}

/* The whole paths, out of line (writer.h): reached by a tail call from
 * the entry points below when er_emit_fast() gives up. */
static __attribute__((noinline)) void runtime_slow(unsigned type,
                                                   unsigned id) {
  er_emit(ER_IF_ON, ER_FROM_RUNTIME, type, id, NULL, 0);
}

static __attribute__((noinline)) void runtime1_slow(unsigned type,
                                                    unsigned id,
                                                    uint64_t value) {
  er_emit(ER_IF_ON, ER_FROM_RUNTIME, type, id, &value, 1);
}

static __attribute__((noinline)) void user_slow(unsigned type, unsigned id,
                                                uint64_t value) {
  if (type == ER_UEV_INT)
    er_emit(ER_IF_ON, ER_FROM_USER, ER_UEV_INT, id, &value, 1);
  else
    er_emit(ER_IF_ON, ER_FROM_USER, type, id, NULL, 0);
}

void eventring__runtime(unsigned type, unsigned id) {
  /* A phase's begin or end: the unsigned difference wraps for the types
   * below ER_EV_BEGIN, so one compare checks the type. */
  if (ER_UNLIKELY(type - ER_EV_BEGIN > ER_EV_END - ER_EV_BEGIN ||
                  id >= ER_N_PHASES_53)) {
    drop_bad_event();
    return;
  }
  /* The whole way gets the type and id back from the header word, so
   * that the fast path keeps one register for them across the clock. */
  uint64_t hdr = ER_HDR(2, ER_FROM_RUNTIME, type, id);
  if (ER_LIKELY(er_emit_fast_hdr(hdr, NULL, 0))) return;
  runtime_slow(ER_HDR_TYPE(hdr), ER_HDR_ID(hdr));
}

void eventring__runtime1(unsigned type, unsigned id, uint64_t value) {
  if (ER_UNLIKELY(type == ER_EV_COUNTER ? id >= ER_N_COUNTERS
                  : type != ER_EV_LIFECYCLE || id >= ER_N_LIFECYCLE)) {
    drop_bad_event();
    return;
  }
  uint64_t hdr = ER_HDR(3, ER_FROM_RUNTIME, type, id);
  if (ER_LIKELY(er_emit_fast_hdr(hdr, &value, 1))) return;
  runtime1_slow(ER_HDR_TYPE(hdr), ER_HDR_ID(hdr), value);
}

void eventring__user(unsigned type, int id, int64_t value) {
  /* Unregistered ids are ignored (eventring.h says so); a type that is not
   * one of the payload-less or int kinds is dropped. */
  if (!er_user_id_ok(id)) return;
  if (ER_UNLIKELY(type > ER_UEV_SPAN_END)) {
    drop_bad_event();
    return;
  }
  uint64_t v = (uint64_t)value;
  /* Two copies, each with a constant payload size. */
  if (type == ER_UEV_INT) {
    uint64_t hdr = ER_HDR(3, ER_FROM_USER, ER_UEV_INT, (unsigned)id);
    if (ER_LIKELY(er_emit_fast_hdr(hdr, &v, 1))) return;
    user_slow(ER_UEV_INT, ER_HDR_ID(hdr), v);
  } else {
    /* No value: the whole way does not need it either. */
    uint64_t hdr = ER_HDR(2, ER_FROM_USER, type, (unsigned)id);
    if (ER_LIKELY(er_emit_fast_hdr(hdr, NULL, 0))) return;
    user_slow(ER_HDR_TYPE(hdr), ER_HDR_ID(hdr), 0);
  }
}

/* A custom event: its bytes, padded to whole words, the last byte of the
 * last word counting the padding bytes before it (doc/FORMAT.md). */
static int emit_custom(int id, const void *bytes, size_t len) {
  struct er_domain *d = er_enter(ER_IF_ON);
  if (!d) return 0;
  unsigned words = (unsigned)ER_CUSTOM_WORDS(len);
  unsigned total = 2 + words;
  uint64_t *ev = er_reserve(d, total);
  if (!ev) {
    /* Longer than this file's rings: counted in DROPPED. */
    er_leave(d);
    return EVENTRING_E_TOOBIG;
  }
  er_store_rlx(&ev[0], ER_HDR(total, ER_FROM_USER, ER_UEV_CUSTOM, (unsigned)id));
  er_store_rlx(&ev[1], er_stamp(d));
  for (unsigned w = 0; w < words; w++)
    er_store_rlx(&ev[2 + w], er_padded_word(bytes, len, w));
  er_commit(d, total);
  er_leave(d);
  return 0;
}

int eventring__custom(int id, const void *bytes, size_t len) {
  if (len > EVENTRING_MAX_CUSTOM_BYTES) return EVENTRING_E_TOOBIG;
  if (!er_user_id_ok(id)) return EVENTRING_E_INVAL;
  return emit_custom(id, bytes, len);
}
