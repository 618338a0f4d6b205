/* Tests that the reader's two-pass decode delivers every event once, in order, wherever a poll stops it: a callback's stop, a poll's limit, a user name not read yet, a bad header inside a run. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

/* The file: SLICES slices of runtime phases and counters (runs the first
 * pass checks and the second delivers), user ints, spans and units
 * (also in runs, once their names are read), and a custom event and a
 * lifecycle-free gap now and then (decoded one at a time). */
#define SLICES 300
#define MAX_EVENTS 4096

struct ev {
  char kind;    /* b e c u i s S x l: begin, end, counter, unit, int,
                   span begin, span end, custom, lifecycle */
  int id;
  uint64_t ts;
  int64_t v;
};

struct rec {
  struct ev ev[MAX_EVENTS];
  size_t n;
  long calls;      /* callbacks so far */
  long stop_every; /* a callback returns 0 on every this-th call; 0: never */
  uint64_t lost;
};

static int put(struct rec *r, char kind, int id, uint64_t ts, int64_t v) {
  ck_assert_uint_lt(r->n, MAX_EVENTS);
  r->ev[r->n++] = (struct ev){kind, id, ts, v};
  r->calls++;
  return !(r->stop_every && r->calls % r->stop_every == 0);
}

static int on_begin(void *d, int dom, uint64_t ts, int id) {
  (void)dom;
  return put(d, 'b', id, ts, 0);
}
static int on_end(void *d, int dom, uint64_t ts, int id) {
  (void)dom;
  return put(d, 'e', id, ts, 0);
}
static int on_counter(void *d, int dom, uint64_t ts, int id, uint64_t v) {
  (void)dom;
  return put(d, 'c', id, ts, (int64_t)v);
}
static int on_unit(void *d, int dom, uint64_t ts, int id, const char *nm) {
  (void)dom;
  ck_assert_str_eq(nm, "runs.unit");
  return put(d, 'u', id, ts, 0);
}
static int on_int(void *d, int dom, uint64_t ts, int id, const char *nm,
                  int64_t v) {
  (void)dom;
  ck_assert_str_eq(nm, "runs.int");
  return put(d, 'i', id, ts, v);
}
static int on_span(void *d, int dom, uint64_t ts, int id, const char *nm,
                   int is_end) {
  (void)dom;
  ck_assert_str_eq(nm, "runs.span");
  return put(d, is_end ? 'S' : 's', id, ts, 0);
}
static int on_custom(void *d, int dom, uint64_t ts, int id, const char *nm,
                     const void *b, size_t len) {
  (void)dom, (void)nm, (void)b;
  return put(d, 'x', id, ts, (int64_t)len);
}
static int on_life(void *d, int dom, uint64_t ts, int k, int64_t v, int has) {
  (void)dom, (void)v, (void)has;
  return put(d, 'l', k, ts, 0);
}
static int on_lost(void *d, int dom, uint64_t n) {
  (void)dom;
  ((struct rec *)d)->lost += n;
  return 1;
}

static eventring_callbacks *callbacks(void) {
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  eventring_callbacks_set_runtime_begin(cb, on_begin);
  eventring_callbacks_set_runtime_end(cb, on_end);
  eventring_callbacks_set_runtime_counter(cb, on_counter);
  eventring_callbacks_set_user_unit(cb, on_unit);
  eventring_callbacks_set_user_int(cb, on_int);
  eventring_callbacks_set_user_span(cb, on_span);
  eventring_callbacks_set_user_custom(cb, on_custom);
  eventring_callbacks_set_lifecycle(cb, on_life);
  eventring_callbacks_set_lost_events(cb, on_lost);
  return cb;
}

/* Writes the file into a new directory; its path into `path`. */
static void write_file(char *path, size_t cap) {
  const char *dir = er_tmpdir();
  er_ring_path(path, cap, dir);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  int unit = eventring_register("runs.unit", EVENTRING_TYPE_UNIT);
  int in = eventring_register("runs.int", EVENTRING_TYPE_INT);
  int span = eventring_register("runs.span", EVENTRING_TYPE_SPAN);
  int custom = eventring_register("runs.custom", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_ge(unit, 0);
  ck_assert_int_ge(in, 0);
  ck_assert_int_ge(span, 0);
  ck_assert_int_ge(custom, 0);
  ck_assert_int_eq(eventring_start(), 0);
  for (int i = 0; i < SLICES; i++) {
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, (uint64_t)i);
    eventring_end(EVENTRING_PHASE_MINOR);
    eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
    eventring_write_span(span, 0);
    eventring_write_int(in, i);
    eventring_write_span(span, 1);
    eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
    eventring_write_unit(unit);
    if (i % 7 == 3)
      ck_assert_int_eq(eventring_write_custom(custom, "abc", 3), 0);
  }
  ck_assert_int_eq(eventring_stop(), 0);
}

/* Reads the whole file with polls of at most `max` events, callbacks
 * stopping as `r` says, until a poll delivers nothing.  Returns the last
 * poll's result. */
static int read_all(const char *path, struct rec *r, size_t max) {
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  eventring_callbacks *cb = callbacks();
  size_t total = 0;
  int got;
  for (int polls = 0;; polls++) {
    ck_assert_int_lt(polls, 100000);
    got = eventring_cursor_poll(c, cb, r, max);
    if (got <= 0) break;
    if (max) ck_assert_int_le(got, (int)max);
    total += (size_t)got;
  }
  if (got == 0) ck_assert_uint_eq(total, r->n);
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
  return got;
}

static void same(const struct rec *want, const struct rec *got) {
  ck_assert_uint_eq(got->n, want->n);
  for (size_t i = 0; i < want->n; i++) {
    ck_assert_msg(memcmp(&want->ev[i], &got->ev[i], sizeof want->ev[i]) == 0,
                  "event %zu: %c %d %llu, want %c %d %llu", i, got->ev[i].kind,
                  got->ev[i].id, (unsigned long long)got->ev[i].ts,
                  want->ev[i].kind, want->ev[i].id,
                  (unsigned long long)want->ev[i].ts);
  }
  ck_assert_uint_eq(got->lost, 0);
}

static struct rec ref, got;

/* The first event of the reference at or after `from` of kind `kind`. */
static size_t find(size_t from, char kind) {
  for (size_t i = from; i < ref.n; i++)
    if (ref.ev[i].kind == kind) return i;
  ck_abort_msg("no event %c after %zu", kind, from);
  return 0;
}

/* The reference: one poll, no stop.  Checked against the writer's own
 * sequence, so that the cases below compare with something known. */
static void reference(const char *path) {
  memset(&ref, 0, sizeof ref);
  ck_assert_int_eq(read_all(path, &ref, 0), 0);
  /* ring_start, the slices, ring_stop. */
  size_t customs = 0;
  for (int i = 0; i < SLICES; i++) customs += i % 7 == 3;
  ck_assert_uint_eq(ref.n, 2 + 9 * (size_t)SLICES + customs);
  ck_assert_int_eq(ref.ev[0].kind, 'l');
  ck_assert_int_eq(ref.ev[1].kind, 'b');
  ck_assert_int_eq(ref.ev[2].kind, 'c');
  ck_assert_int_eq(ref.ev[2].v, 0);
  ck_assert_int_eq(ref.ev[6].kind, 'i');
  for (size_t i = 1; i < ref.n; i++)
    ck_assert_uint_le(ref.ev[i - 1].ts, ref.ev[i].ts);
}

/* A callback that stops the poll, on every k-th event: the next poll
 * goes on right after it, in a run or not. */
START_TEST(test_stop_anywhere) {
  char path[PATH_MAX];
  write_file(path, sizeof path);
  reference(path);
  static const long every[] = {1, 2, 3, 5, 8, 13};
  for (size_t k = 0; k < sizeof every / sizeof every[0]; k++) {
    memset(&got, 0, sizeof got);
    got.stop_every = every[k];
    ck_assert_int_eq(read_all(path, &got, 0), 0);
    same(&ref, &got);
  }
}
END_TEST

/* Polls of at most 1..17 events: a run is cut by the limit and the next
 * poll goes on with the rest. */
START_TEST(test_limit_anywhere) {
  char path[PATH_MAX];
  write_file(path, sizeof path);
  reference(path);
  for (size_t max = 1; max <= 17; max++) {
    memset(&got, 0, sizeof got);
    ck_assert_int_eq(read_all(path, &got, max), 0);
    same(&ref, &got);
  }
}
END_TEST

/* The file offset of the header of event `i` of the reference. */
static off_t event_offset(const char *path, size_t i) {
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.rings[0].nevents, ref.n);
  uint64_t pos = f.rings[0].events[i].pos;
  off_t off = (off_t)(f.meta[ER_META_DATA_OFFSET] +
                      8 * (pos & (f.ring_words - 1)));
  rf_close(&f);
  return off;
}

static uint64_t rd(int fd, off_t off) {
  uint64_t w;
  ck_assert_int_eq(pread(fd, &w, 8, off), 8);
  return w;
}
static void wr(int fd, off_t off, uint64_t w) {
  ck_assert_int_eq(pwrite(fd, &w, 8, off), 8);
}

/* A header with a stray low bit in the middle of a run of phases and
 * counters: everything before it is delivered, then the ring is
 * reported corrupt; the run is cut exactly there. */
START_TEST(test_stray_bit_in_run) {
  char path[PATH_MAX];
  write_file(path, sizeof path);
  reference(path);
  const size_t bad = find(360, 'e');
  off_t off = event_offset(path, bad);
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  wr(fd, off, rd(fd, off) | 1);
  close(fd);
  for (int limit = 0; limit <= 1; limit++) {
    memset(&got, 0, sizeof got);
    ck_assert_int_eq(read_all(path, &got, limit ? 5 : 0),
                     EVENTRING_E_CORRUPT);
    ck_assert_uint_eq(got.n, bad);
    ck_assert_int_eq(memcmp(got.ev, ref.ev, bad * sizeof ref.ev[0]), 0);
  }
}
END_TEST

/* A phase id past the file's table, and a counter of the wrong length,
 * inside runs: each is one malformed event, skipped, and every other
 * event is delivered. */
START_TEST(test_malformed_in_run) {
  char path[PATH_MAX];
  write_file(path, sizeof path);
  reference(path);
  const size_t bad_id = find(450, 'b'), bad_len = find(540, 'c');
  off_t o1 = event_offset(path, bad_id), o2 = event_offset(path, bad_len);
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  uint64_t h = rd(fd, o1);
  wr(fd, o1, ER_HDR(ER_HDR_LEN(h), 0, ER_EV_BEGIN, 8191));
  /* A counter claiming two words: its third word (the count) is then
   * read as the next header, so it is made a word of padding. */
  h = rd(fd, o2);
  wr(fd, o2, ER_HDR(2, 0, ER_EV_COUNTER, ER_HDR_ID(h)));
  wr(fd, o2 + 16, ER_HDR(1, 0, ER_EV_INTERNAL, 0)); /* padding */
  close(fd);
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  eventring_callbacks *cb = callbacks();
  memset(&got, 0, sizeof got);
  int r = eventring_cursor_poll(c, cb, &got, 0);
  ck_assert_int_eq(r, (int)ref.n - 2);
  uint64_t malformed = 0;
  ck_assert_int_eq(eventring_cursor_malformed(c, 0, &malformed), 0);
  ck_assert_uint_eq(malformed, 2);
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
  size_t j = 0;
  for (size_t i = 0; i < ref.n; i++) {
    if (i == bad_id || i == bad_len) continue;
    ck_assert_int_eq(memcmp(&got.ev[j], &ref.ev[i], sizeof ref.ev[i]), 0);
    j++;
  }
  ck_assert_uint_eq(j, got.n);
}
END_TEST

/* A poll with some callbacks unset: the events without one are read
 * and counted, never delivered, and the others are delivered in order,
 * in polls of any size. */
START_TEST(test_some_callbacks) {
  char path[PATH_MAX];
  write_file(path, sizeof path);
  reference(path);
  struct rec want;
  memset(&want, 0, sizeof want);
  for (size_t i = 0; i < ref.n; i++)
    if (ref.ev[i].kind == 'c' || ref.ev[i].kind == 'e' ||
        ref.ev[i].kind == 'i')
      want.ev[want.n++] = ref.ev[i];
  ck_assert_uint_eq(want.n, 4 * (size_t)SLICES);
  static const size_t maxes[] = {0, 1, 2, 7, 100};
  for (size_t k = 0; k < sizeof maxes / sizeof maxes[0]; k++) {
    eventring_cursor *c;
    ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
    eventring_callbacks *cb = eventring_callbacks_create();
    ck_assert_ptr_nonnull(cb);
    eventring_callbacks_set_runtime_end(cb, on_end);
    eventring_callbacks_set_runtime_counter(cb, on_counter);
    eventring_callbacks_set_user_int(cb, on_int);
    memset(&got, 0, sizeof got);
    size_t total = 0;
    int r;
    for (int polls = 0; (r = eventring_cursor_poll(c, cb, &got, maxes[k])) > 0;
         polls++) {
      ck_assert_int_lt(polls, 100000);
      if (maxes[k]) ck_assert_int_le(r, (int)maxes[k]);
      /* No limit and no callback that stops: one poll reads it all. */
      else ck_assert_int_eq(r, (int)ref.n);
      total += (size_t)r;
    }
    ck_assert_int_eq(r, 0);
    ck_assert_uint_eq(total, ref.n);
    same(&want, &got);
    eventring_callbacks_free(cb);
    eventring_cursor_free(c);
  }
}
END_TEST

static TCase *tc_runs(void) {
  TCase *tc = er_tcase("runs");
  tcase_add_test(tc, test_stop_anywhere);
  tcase_add_test(tc, test_limit_anywhere);
  tcase_add_test(tc, test_stray_bit_in_run);
  tcase_add_test(tc, test_malformed_in_run);
  tcase_add_test(tc, test_some_callbacks);
  return tc;
}

ER_TEST_MAIN("reader_runs", tc_runs)
