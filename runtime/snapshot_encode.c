/* snapshot_encode.c -- a cursor's events re-encoded as their writer had
 * them, into a snapshot (snapshot.c) or a caller's sink (snapshot.h).
 *
 * The copy goes through a cursor rather than through the ring words: the
 * cursor already knows which of the words it copied a writer may have
 * overwritten meanwhile (consumer_poll.c), and delivers only whole
 * events from before that point, counting the rest as lost.  Re-encoding
 * what it delivers is the whole of the copy's correctness; there is no
 * second reader protocol here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "snapshot.h"

/* ------------------------------------------------------------------ */
/* Reading a cursor: each delivered event re-encoded as the writer had  */
/* it (ring.c), header, timestamp, payload.                             */

struct reading {
  struct er_snap *s;
  int err;
  long added;
  unsigned max_phase, max_counter; /* 1 + the highest ids seen */
  const struct er_snap_sink *sink; /* NULL: into s */
};

static int add(struct reading *rd, int domain, const uint64_t *ev,
               unsigned len) {
  int e = rd->sink ? rd->sink->event(rd->sink->arg, domain, ev, len)
                   : er_snap_event(rd->s, domain, ev, len);
  if (e) {
    rd->err = e;
    return 0; /* ends the poll */
  }
  rd->added++;
  return 1;
}

static int phase(void *data, int domain, uint64_t ts, int id, unsigned type) {
  struct reading *rd = data;
  if ((unsigned)id >= rd->max_phase) rd->max_phase = (unsigned)id + 1;
  uint64_t ev[2] = {ER_HDR(2, 0, type, (unsigned)id), ts};
  return add(rd, domain, ev, 2);
}

static int on_begin(void *data, int domain, uint64_t ts, int id) {
  return phase(data, domain, ts, id, ER_EV_BEGIN);
}

static int on_end(void *data, int domain, uint64_t ts, int id) {
  return phase(data, domain, ts, id, ER_EV_END);
}

static int on_counter(void *data, int domain, uint64_t ts, int id,
                      uint64_t value) {
  struct reading *rd = data;
  if ((unsigned)id >= rd->max_counter) rd->max_counter = (unsigned)id + 1;
  uint64_t ev[3] = {ER_HDR(3, 0, ER_EV_COUNTER, (unsigned)id), ts, value};
  return add(rd, domain, ev, 3);
}

static int on_alloc(void *data, int domain, uint64_t ts,
                    const uint64_t *buckets) {
  uint64_t ev[2 + EVENTRING_ALLOC_BUCKETS];
  ev[0] = ER_HDR(2 + EVENTRING_ALLOC_BUCKETS, 0, ER_EV_ALLOC, 0);
  ev[1] = ts;
  memcpy(ev + 2, buckets, sizeof(uint64_t) * EVENTRING_ALLOC_BUCKETS);
  return add(data, domain, ev, 2 + EVENTRING_ALLOC_BUCKETS);
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  /* Without data (ring_stop) the event is two words long, as OCaml 5
   * writes it; a reader then reports no data either. */
  unsigned len = has_data ? 3 : 2;
  uint64_t ev[3] = {ER_HDR(len, 0, ER_EV_LIFECYCLE, (unsigned)kind), ts,
                    (uint64_t)value};
  return add(data, domain, ev, len);
}

static int user(struct reading *rd, int domain, const uint64_t *ev,
                unsigned len, int id, const char *name) {
  int e = rd->sink ? rd->sink->user_name(rd->sink->arg, id, name)
                   : er_snap_user_name(rd->s, id, name);
  if (e) {
    rd->err = e;
    return 0;
  }
  return add(rd, domain, ev, len);
}

static int on_user_unit(void *data, int domain, uint64_t ts, int id,
                        const char *name) {
  uint64_t ev[2] = {ER_HDR(2, 1, ER_UEV_UNIT, (unsigned)id), ts};
  return user(data, domain, ev, 2, id, name);
}

static int on_user_int(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t value) {
  uint64_t ev[3] = {ER_HDR(3, 1, ER_UEV_INT, (unsigned)id), ts,
                    (uint64_t)value};
  return user(data, domain, ev, 3, id, name);
}

static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  uint64_t ev[2] = {
      ER_HDR(2, 1, is_end ? ER_UEV_SPAN_END : ER_UEV_SPAN_BEGIN, (unsigned)id),
      ts};
  return user(data, domain, ev, 2, id, name);
}

static int on_user_custom(void *data, int domain, uint64_t ts, int id,
                          const char *name, const void *bytes, size_t len) {
  /* The cursor bounds len by the event it came in, so it fits in one. */
  uint64_t ev[ER_MAX_EVENT_WORDS] = {0};
  unsigned words = (unsigned)ER_CUSTOM_WORDS(len);
  ev[0] = ER_HDR(2 + words, 1, ER_UEV_CUSTOM, (unsigned)id);
  ev[1] = ts;
  for (unsigned w = 0; w < words; w++) ev[2 + w] = er_padded_word(bytes, len, w);
  return user(data, domain, ev, 2 + words, id, name);
}

/* A thread-switch marker is kept: without it a shared slot's events
 * could no longer be told apart by thread. */
static int on_thread(void *data, int domain, uint64_t ts, int64_t thread,
                     uint64_t tid, const char *name, size_t len) {
  uint64_t ev[ER_XEV_THREAD_MIN_WORDS + ER_THREAD_NAME_BYTES / 8] = {0};
  unsigned words = len ? (unsigned)ER_CUSTOM_WORDS(len) : 0;
  ev[0] = ER_HDR(ER_XEV_THREAD_MIN_WORDS + words, 0, ER_EV_FLUSH,
                 ER_XEV_THREAD);
  ev[1] = ts;
  ev[2] = (uint64_t)thread;
  ev[3] = tid;
  for (unsigned w = 0; w < words; w++)
    ev[ER_XEV_THREAD_MIN_WORDS + w] = er_padded_word(name, len, w);
  return add(data, domain, ev, ER_XEV_THREAD_MIN_WORDS + words);
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct reading *rd = data;
  int e = rd->sink ? rd->sink->lost(rd->sink->arg, domain, count)
                   : er_snap_lost(rd->s, domain, count);
  if (e) rd->err = e;
  return !e;
}

static int on_window(void *data, int domain, uint64_t before) {
  struct reading *rd = data;
  int e = !rd->sink ? er_snap_window(rd->s, domain, before)
          : rd->sink->window ? rd->sink->window(rd->sink->arg, domain, before)
                             : rd->sink->lost(rd->sink->arg, domain, before);
  if (e) rd->err = e;
  return !e;
}

/* The callbacks that re-encode what a cursor delivers; their data is a
 * struct reading. */
static eventring_callbacks *encoding_callbacks(void) {
  eventring_callbacks *cb = eventring_callbacks_create();
  if (!cb) return NULL;
  eventring_callbacks_set_runtime_begin(cb, on_begin);
  eventring_callbacks_set_runtime_end(cb, on_end);
  eventring_callbacks_set_runtime_counter(cb, on_counter);
  eventring_callbacks_set_alloc(cb, on_alloc);
  eventring_callbacks_set_lifecycle(cb, on_lifecycle);
  eventring_callbacks_set_user_unit(cb, on_user_unit);
  eventring_callbacks_set_user_int(cb, on_user_int);
  eventring_callbacks_set_user_span(cb, on_user_span);
  eventring_callbacks_set_user_custom(cb, on_user_custom);
  eventring_callbacks_set_lost_events(cb, on_lost);
  eventring_callbacks_set_thread(cb, on_thread);
  eventring_callbacks_set_window(cb, on_window);
  return cb;
}

struct er_snap_encoder {
  struct reading rd;
  eventring_callbacks *cb;
};

struct er_snap_encoder *er_snap_encoder_new(const struct er_snap_sink *sink) {
  struct er_snap_encoder *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  if (!(e->cb = encoding_callbacks())) {
    free(e);
    return NULL;
  }
  e->rd.sink = sink;
  return e;
}

void er_snap_encoder_free(struct er_snap_encoder *e) {
  if (!e) return;
  eventring_callbacks_free(e->cb);
  free(e);
}

const eventring_callbacks *er_snap_encoder_callbacks(
    const struct er_snap_encoder *e) {
  return e->cb;
}

void *er_snap_encoder_data(struct er_snap_encoder *e) { return &e->rd; }

int er_snap_encoder_error(struct er_snap_encoder *e) {
  int err = e->rd.err;
  e->rd.err = 0;
  return err;
}

long er_snap_read_cursor(struct er_snap *s, eventring_cursor *c) {
  eventring_callbacks *cb = encoding_callbacks();
  if (!cb) return -ENOMEM;
  struct reading rd = {s, 0, 0, 0, 0, NULL};
  /* One poll: each ring up to the tail it has when the poll comes to it,
   * which is what the ring holds "now"; a writer faster than the copy
   * cannot make it run on. */
  int r = eventring_cursor_poll(c, cb, &rd, 0);
  eventring_callbacks_free(cb);
  if (rd.err) return rd.err;
  /* The names last: for a file of OCaml 5 the cursor may have settled its
   * phase numbering only now, from the events it read. */
  int e = er_snap_source_from_cursor(s, c, rd.max_phase, rd.max_counter);
  if (e) return e;
  return r < 0 ? r : rd.added;
}
