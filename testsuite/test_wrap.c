/* A full ring overwrites its oldest events and keeps exact written/evicted counts. */
#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "rtlib.h"

#define NINTS 5000

/* Every 7th int is followed by a custom event whose payload starts with
 * that int's value, so each event identifies itself; lengths vary from 8
 * to 307 bytes (4 to 41 words) so that events rarely fit the ring's end
 * exactly and the writer must pad. */
static int has_custom(int i) { return i % 7 == 0; }
static size_t custom_len(int i) { return 8 + (size_t)((i * 37) % 300); }
static uint64_t custom_words(int i) { return 2 + ER_CUSTOM_WORDS(custom_len(i)); }

static void custom_fill(unsigned char *buf, int i) {
  memcpy(buf, &i, sizeof i);
  for (size_t k = sizeof i; k < custom_len(i); k++)
    buf[k] = (unsigned char)(i * 7 + k);
}

/* One event of the written sequence: kind 0 ring_start, 1 int, 2 custom,
 * 3 ring_stop, with the int it belongs to. */
struct expect {
  int kind, i;
};

START_TEST(test_wrap_keeps_newest) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  char *path = er_start_preserved("e=10");
  int int_id = eventring_register("wrap.int", EVENTRING_TYPE_INT);
  int cus_id = eventring_register("wrap.custom", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_ge(int_id, 0);
  ck_assert_int_ge(cus_id, 0);

  static struct expect seq[2 * NINTS];
  size_t total = 0;
  uint64_t words = 3; /* ring_start */
  seq[total++] = (struct expect){0, 0};
  unsigned char buf[512];
  for (int i = 1; i <= NINTS; i++) {
    eventring_write_int(int_id, i);
    seq[total++] = (struct expect){1, i};
    words += 3;
    if (has_custom(i)) {
      custom_fill(buf, i);
      ck_assert_int_eq(eventring_write_custom(cus_id, buf, custom_len(i)), 0);
      seq[total++] = (struct expect){2, i};
      words += custom_words(i);
    }
  }
  seq[total++] = (struct expect){3, 0};
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.ring_words, 1024);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_gt(r->head, 0);
  ck_assert_uint_le(r->tail - r->head, 1024);
  ck_assert_uint_eq(r->pair_head, r->head);
  ck_assert_uint_eq(r->written, total);
  ck_assert_uint_eq(r->written - r->evicted, r->nevents);
  ck_assert_uint_eq(r->dropped, 0);
  ck_assert_uint_ge(r->nevents, 10);
  ck_assert_uint_lt(r->nevents, total);

  /* The survivors are exactly the newest events of the sequence. */
  const struct rf_event *last = &r->events[r->nevents - 1];
  ck_assert(!last->is_user && last->type == ER_EV_LIFECYCLE &&
            last->id == EVENTRING_LIFECYCLE_RING_STOP);
  words += last->len;
  ck_assert_uint_eq(last->pos + last->len, r->tail);
  ck_assert_uint_eq(r->events[0].pos, r->head);
  size_t base = total - r->nevents;
  int ints_seen = 0, last_int = 0;
  for (size_t k = 0; k < r->nevents; k++) {
    const struct rf_event *e = &r->events[k];
    const struct expect *x = &seq[base + k];
    if (k > 0) {
      const struct rf_event *p = &r->events[k - 1];
      ck_assert_uint_ge(e->ts, p->ts);
      /* Only padding, which runs to the ring's end, separates events. */
      if (e->pos != p->pos + p->len) ck_assert_uint_eq(e->pos % 1024, 0);
    }
    ck_assert_uint_le(e->pos % 1024 + e->len, 1024);
    switch (x->kind) {
    case 1:
      ck_assert_msg(e->is_user && e->type == ER_UEV_INT,
                    "survivor %zu: expected int %d", k, x->i);
      ck_assert_uint_eq(e->id, (unsigned)int_id);
      ck_assert_int_eq((int64_t)e->payload[0], x->i);
      last_int = x->i;
      ints_seen++;
      break;
    case 2:
      ck_assert_msg(e->is_user && e->type == ER_UEV_CUSTOM,
                    "survivor %zu: expected custom %d", k, x->i);
      ck_assert_uint_eq(e->id, (unsigned)cus_id);
      ck_assert_uint_eq(e->custom_len, custom_len(x->i));
      custom_fill(buf, x->i);
      ck_assert(memcmp(e->custom, buf, custom_len(x->i)) == 0);
      ck_assert_uint_eq(e->len, custom_words(x->i));
      break;
    case 3:
      ck_assert_uint_eq(k, r->nevents - 1);
      break;
    default:
      ck_abort_msg("ring_start survived 5000 events in 1024 words");
    }
  }
  /* The newest int is 5000 and the ints run consecutively up to it. */
  ck_assert_int_ge(ints_seen, 1);
  ck_assert_int_eq(last_int, NINTS);
  /* The tail counts every word written: the events' and the padding's.
   * Events of varying sizes cannot all have met the ring's end exactly,
   * and each padding is shorter than the largest event (41 words). */
  ck_assert_uint_gt(r->tail, words);
  ck_assert_uint_lt(r->tail - words, (r->tail / 1024 + 1) * 40);
  ck_assert_str_eq(rf_user_name(&f, (unsigned)int_id), "wrap.int");
  ck_assert_str_eq(rf_user_name(&f, (unsigned)cus_id), "wrap.custom");
  rf_close(&f);
  free(path);
  er_rmdir(dir);
}
END_TEST

/* Events just too large for the space left before the ring's end: the
 * writer pads to the end and puts them at index 0. */
START_TEST(test_padding_at_end) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  char *path = er_start_preserved("e=10");
  int cus_id = eventring_register("wrap.custom", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_ge(cus_id, 0);
  /* ring_start is 3 words; customs of 95 bytes are 2 + 12 = 14 words.
   * 3 + 72 * 14 = 1011, so the 73rd custom (needing 14 words with 13
   * left) must go to index 0 after 13 words of padding. */
  unsigned char buf[95];
  memset(buf, 0xab, sizeof buf);
  for (int i = 0; i < 73; i++) {
    buf[0] = (unsigned char)i;
    ck_assert_int_eq(eventring_write_custom(cus_id, buf, sizeof buf), 0);
  }
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  /* The 73rd custom needs 13 words of padding and 14 at index 0, so
   * head must reach 1011 + 13 + 14 - 1024 = 14.  Eviction frees whole
   * chunks of 1024 / 32 = 32 words: head goes to the mark of the chunk
   * at 32, the first event starting there or after, the custom at 3 + 3
   * * 14 = 45.  ring_start and the first three customs are evicted. */
  ck_assert_uint_eq(r->written, 1 + 73 + 1);
  ck_assert_uint_eq(r->evicted, 4);
  ck_assert_uint_eq(r->head, 45);
  ck_assert_uint_eq(r->written - r->evicted, r->nevents);
  ck_assert_uint_eq(r->pair_head, r->head);
  size_t k;
  for (k = 0; k < r->nevents; k++)
    if (r->events[k].is_user && r->events[k].custom[0] == 72) break;
  ck_assert_uint_lt(k, r->nevents);
  const struct rf_event *e72 = &r->events[k];
  ck_assert_uint_eq(e72->pos, 1024);
  ck_assert_uint_eq(e72->custom_len, 95);
  ck_assert_uint_gt(k, 0);
  const struct rf_event *e71 = &r->events[k - 1];
  ck_assert_uint_eq(e71->custom[0], 71);
  ck_assert_uint_eq(e71->pos + e71->len, 1011);
  ck_assert_uint_eq(r->tail, e72->pos + e72->len + r->events[r->nevents - 1].len);
  rf_close(&f);
  free(path);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_wrap(void) {
  TCase *tc = er_tcase("wrap");
  tcase_add_test(tc, test_wrap_keeps_newest);
  tcase_add_test(tc, test_padding_at_end);
  return tc;
}

ER_TEST_MAIN("wrap", tc_wrap)
