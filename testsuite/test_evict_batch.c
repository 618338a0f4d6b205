/* A full ring evicts in batches: head moves to the first event (or
 * padding) that starts in a chunk of 1/32 of the ring, and the counts
 * readers see stay exact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

#define RING 1024u           /* OCAMLRUNPARAM e=10 */
#define CHUNK (RING / 32u)   /* eviction's unit (internal.h, ER_CHUNKS) */

static char *start_ring(void) {
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "e=10,d=1", 1), 0);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  return strdup(eventring_path());
}

/* The ring as the file holds it now (the writer is this thread, idle). */
static void ring_now(const char *path, struct rf_file *f) {
  er_open_ring(path, f);
  ck_assert_uint_eq(f->ring_words, RING);
}

struct reading {
  uint64_t lost, ints;
  int64_t first_int, last_int;
};

static int on_int(void *data, int d, uint64_t ts, int id, const char *name,
                  int64_t v) {
  struct reading *r = data;
  (void)d, (void)ts, (void)id, (void)name;
  if (r->ints++ == 0) r->first_int = v;
  r->last_int = v;
  return 1;
}

static int on_lost(void *data, int d, uint64_t n) {
  (void)d;
  ((struct reading *)data)->lost += n;
  return 1;
}

/* A poll from scratch into *rd returns n events, of which `lost` were
 * lost and the first int read is `first`. */
static void poll_expect(eventring_cursor *c, eventring_callbacks *cb,
                        struct reading *rd, int n, uint64_t lost,
                        int64_t first) {
  memset(rd, 0, sizeof *rd);
  rd->first_int = -1;
  ck_assert_int_eq(eventring_cursor_poll(c, cb, rd, 0), n);
  ck_assert_uint_eq(rd->lost, lost);
  ck_assert_int_eq(rd->first_int, first);
}

/* ring_start (3 words, at 0) then ints 1, 2, ... (3 words each): int k
 * starts at 3k until the ring's end.  Int 341 does not fit in the word
 * left at 1023: one word of padding, and the int at 1024, which needs
 * head >= 3.  The chunks start at 0, 32, 64, ...; the first events to
 * start in them are ring_start (0), int 11 (33), int 22 (66), int 32
 * (96): head goes to 33, evicting ring_start and ints 1 to 10.  A
 * reader that had read 5 events (up to 15) loses 6.  The next eviction
 * is due when an event ends past 33 + 1024: int 352, at 1057, needs
 * head >= 36, and head goes to 66 (11 more evicted). */
START_TEST(test_batches_exact) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  char *path = start_ring();
  int id = eventring_register("batch.int", EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);

  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  eventring_callbacks_set_user_int(cb, on_int);
  eventring_callbacks_set_lost_events(cb, on_lost);

  for (int i = 1; i <= 340; i++) eventring_write_int(id, i);
  struct rf_file f;
  ring_now(path, &f);
  ck_assert_uint_eq(f.rings[0].head, 0);
  ck_assert_uint_eq(f.rings[0].tail, 1023);
  ck_assert_uint_eq(f.rings[0].seq, 0);
  rf_close(&f);

  /* A reader mid-batch: ring_start and ints 1 to 4 read, at 15. */
  struct reading rd = {0, 0, -1, -1};
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &rd, 5), 5);
  ck_assert_int_eq(rd.last_int, 4);

  eventring_write_int(id, 341);
  ring_now(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->head, 33);
  ck_assert_uint_eq(r->pair_head, 33);
  ck_assert_uint_eq(r->evicted, 11);
  ck_assert_uint_eq(r->seq, 1);
  ck_assert_uint_eq(r->written, 342);
  ck_assert_uint_eq(r->tail, 1027);
  ck_assert_uint_eq(r->nevents, 342 - 11);
  ck_assert_uint_eq(r->events[0].pos, 33);
  ck_assert_int_eq((int64_t)r->events[0].payload[0], 11);
  /* The padding at the ring's end: one word, a runtime event of type 0. */
  uint64_t pad;
  memcpy(&pad, f.bytes + f.meta[ER_META_DATA_OFFSET] + 1023 * 8, 8);
  ck_assert_uint_eq(pad, ER_HDR(1, 0, 0, 0));
  ck_assert_uint_eq(r->events[r->nevents - 1].pos, 1024);
  rf_close(&f);

  /* The reader lost ints 5 to 10 and goes on from 11. */
  poll_expect(c, cb, &rd, 331, 6, 11);
  ck_assert_int_eq(rd.last_int, 341);

  /* No eviction until an event ends past 33 + 1024. */
  for (int i = 342; i <= 351; i++) eventring_write_int(id, i);
  ring_now(path, &f);
  ck_assert_uint_eq(f.rings[0].head, 33);
  ck_assert_uint_eq(f.rings[0].seq, 1);
  ck_assert_uint_eq(f.rings[0].tail, 1057);
  rf_close(&f);
  eventring_write_int(id, 352);
  ring_now(path, &f);
  ck_assert_uint_eq(f.rings[0].head, 66);
  ck_assert_uint_eq(f.rings[0].evicted, 22);
  ck_assert_uint_eq(f.rings[0].seq, 2);
  rf_close(&f);

  poll_expect(c, cb, &rd, 11, 0, 342);

  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
  ck_assert_int_eq(eventring_stop(), 0);
  free(path);
  er_rmdir(dir);
}
END_TEST

/* Events of many sizes, padding included: after every event, head is
 * where the rule puts it, computed here from the positions alone.  The
 * "marks" are the items (events and paddings) that are the first to
 * start at or after a multiple of CHUNK; an eviction moves head to the
 * first mark at or after the new event's end minus RING; head is always
 * a mark, and evicted counts the events before it. */
#define NEV 1500
static uint64_t item_pos[2 * NEV + 8];
static uint64_t item_before[2 * NEV + 8]; /* events before the item */

START_TEST(test_batches_rule) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  char *path = start_ring();
  int id = eventring_register("batch.custom", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_ge(id, 0);
  size_t n = 0;
  item_pos[n] = 0, item_before[n] = 0, n++; /* ring_start */
  uint64_t tail = 3, written = 1, head = 0;
  unsigned char buf[400];
  memset(buf, 0x5a, sizeof buf);
  struct rf_file f;
  for (int i = 0; i < NEV; i++) {
    size_t bytes = (size_t)((i * 53) % 390);
    uint64_t len = 2 + ER_CUSTOM_WORDS(bytes);
    uint64_t idx = tail % RING;
    if (idx + len > RING) {
      item_pos[n] = tail, item_before[n] = written, n++;
      tail += RING - idx;
    }
    item_pos[n] = tail, item_before[n] = written, n++;
    uint64_t end = tail + len;
    ck_assert_int_eq(eventring_write_custom(id, buf, bytes), 0);
    tail = end;
    written++;
    ring_now(path, &f);
    const struct rf_ring *r = &f.rings[0];
    ck_assert_uint_eq(r->tail, tail);
    ck_assert_uint_eq(r->written, written);
    if (end - head > RING) {
      /* The first mark at or after end - RING. */
      uint64_t want = UINT64_MAX, before = 0, lo = end - RING;
      for (size_t k = 0; k < n; k++) {
        uint64_t c = item_pos[k] / CHUNK * CHUNK;
        int mark = k == 0 || item_pos[k - 1] < c;
        if (mark && item_pos[k] >= lo) {
          want = item_pos[k], before = item_before[k];
          break;
        }
      }
      ck_assert_uint_ne(want, UINT64_MAX);
      ck_assert_msg(r->head == want, "event %d: head %llu, want %llu", i,
                    (unsigned long long)r->head, (unsigned long long)want);
      ck_assert_uint_eq(r->evicted, before);
      head = want;
    } else {
      ck_assert_uint_eq(r->head, head);
    }
    ck_assert_uint_eq(r->pair_head, r->head);
    ck_assert_uint_eq(r->nevents, written - r->evicted);
    rf_close(&f);
  }
  ck_assert_uint_gt(head, 20 * RING); /* it wrapped many times */
  ck_assert_int_eq(eventring_stop(), 0);
  free(path);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_batch(void) {
  TCase *tc = er_tcase("batch");
  tcase_add_test(tc, test_batches_exact);
  tcase_add_test(tc, test_batches_rule);
  return tc;
}

ER_TEST_MAIN("evict_batch", tc_batch)
