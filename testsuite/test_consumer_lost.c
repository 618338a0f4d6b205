/* Tests that the cursor's lost-event counts are exact: lost + delivered == written, per domain, quiescent and under a concurrent writer. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "consumer_cb.h"
#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "rtlib.h"
#include "testlib.h"

#define MAX_POLLS 1000000
#define MAX_DOMS 4

/* Per-domain tallies of one reading.  In a ring written by one thread
 * that calls eventring_start() (no domain_spawn) and writes ints 1, 2,
 * ..., event number k of the ring (ring_start being number 0) is the int
 * k, so every delivered int says where it stands, and the gap before it
 * must be exactly the loss reported since the previous delivery. */
struct tally {
  uint64_t delivered[MAX_DOMS], lost[MAX_DOMS];
  int64_t last[MAX_DOMS];     /* event number of the last delivery */
  uint64_t pending[MAX_DOMS]; /* lost reported since that delivery */
  uint64_t gaps, lost_reports;
  int out_of_order;           /* a delivery that broke the rule above */
  int64_t bad_got, bad_want;
  int stops;
};

static void tally_init(struct tally *t) {
  memset(t, 0, sizeof *t);
  for (int d = 0; d < MAX_DOMS; d++) t->last[d] = -1;
}

/* Event number `k` delivered in domain `d`. */
static void at(struct tally *t, int d, int64_t k) {
  if (d < 0 || d >= MAX_DOMS) {
    t->out_of_order = 1;
    return;
  }
  int64_t want = t->last[d] + 1 + (int64_t)t->pending[d];
  if (k != want && !t->out_of_order) {
    t->out_of_order = 1;
    t->bad_got = k;
    t->bad_want = want;
  }
  if (k != t->last[d] + 1) t->gaps++;
  t->last[d] = k;
  t->pending[d] = 0;
  t->delivered[d]++;
}

static int on_int(void *data, int d, uint64_t ts, int id, const char *name,
                  int64_t v) {
  (void)ts, (void)id, (void)name;
  at(data, d, v);
  return 1;
}

static int on_life(void *data, int d, uint64_t ts, int kind, int64_t v,
                   int has) {
  struct tally *t = data;
  (void)ts, (void)v, (void)has;
  if (kind == EVENTRING_LIFECYCLE_RING_START) {
    at(t, d, 0);
  } else if (kind == EVENTRING_LIFECYCLE_RING_STOP) {
    /* Numbered after the ints: the caller knows how many there were. */
    t->stops++;
    if (d >= 0 && d < MAX_DOMS) t->delivered[d]++;
  } else {
    t->out_of_order = 1;
  }
  return 1;
}

static int on_lost(void *data, int d, uint64_t n) {
  struct tally *t = data;
  if (d < 0 || d >= MAX_DOMS || n == 0) {
    t->out_of_order = 1;
    return 1;
  }
  t->lost[d] += n;
  t->pending[d] += n;
  t->lost_reports++;
  return 1;
}

static eventring_callbacks *callbacks(void) {
  static const struct tool_handlers h = {.lifecycle = on_life,
      .user_int = on_int, .lost_events = on_lost};
  return er_callbacks(&h);
}

/* Polls until a poll returns 0; returns the sum of what the polls
 * returned. */
static uint64_t drain(eventring_cursor *c, const eventring_callbacks *cb,
                      struct tally *t, size_t max) {
  uint64_t sum = 0;
  double t0 = er_now();
  for (int i = 0;; i++) {
    ck_assert_int_lt(i, MAX_POLLS);
    ck_assert(er_now() - t0 < 20);
    int r = eventring_cursor_poll(c, cb, t, max);
    ck_assert_msg(r >= 0, "poll: %s", eventring_strerror(r));
    if (r == 0) break;
    sum += (uint64_t)r;
  }
  return sum;
}

static void check_order(const struct tally *t) {
  ck_assert_msg(!t->out_of_order,
                "event number %lld delivered where %lld was due (last + 1 + "
                "lost since)", (long long)t->bad_got, (long long)t->bad_want);
}

/* A second thread that binds to slot 1 and writes ints 1..n after its
 * domain_spawn, which is its ring's event number 0. */
struct writer {
  int id;
  int64_t n;
};

static void *write_ints(void *arg) {
  struct writer *w = arg;
  ck_assert_int_eq(eventring_domain_bind(1), 0);
  for (int64_t v = 1; v <= w->n; v++) eventring_write_int(w->id, v);
  eventring_domain_release(); /* domain_terminate: event n + 1 */
  return NULL;
}

static int on_life_spawn(void *data, int d, uint64_t ts, int kind, int64_t v,
                         int has) {
  struct tally *t = data;
  if (kind == EVENTRING_LIFECYCLE_DOMAIN_SPAWN && d == 1) {
    at(t, d, 0);
    return 1;
  }
  if (kind == EVENTRING_LIFECYCLE_DOMAIN_TERMINATE && d == 1) {
    t->delivered[d]++;
    return 1;
  }
  return on_life(data, d, ts, kind, v, has);
}

/* Two domains overflow a 1024-word ring many times over with no reader;
 * the file, read after stop, reports each loss exactly (in events), and
 * lost + delivered equals the WRITTEN word of each ring header. */
START_TEST(test_lost_quiescent) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  char *path = er_start_preserved("e=10");
  int id = eventring_register("lost.seq", EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);

  /* A cursor that reads a little first, so that losses are counted from
   * a position other than 0 too. */
  eventring_cursor *early = NULL;
  ck_assert_int_eq(eventring_cursor_open(&early, NULL, 0), 0);
  eventring_callbacks *cb = callbacks();
  eventring_callbacks_set_lifecycle(cb, on_life_spawn);
  struct tally te;
  tally_init(&te);
  for (int64_t v = 1; v <= 100; v++) eventring_write_int(id, v);
  ck_assert_uint_eq(drain(early, cb, &te, 7), 101);
  ck_assert_uint_eq(te.lost[0], 0);

  const int64_t n0 = 50000, n1 = 30011;
  for (int64_t v = 101; v <= n0; v++) eventring_write_int(id, v);
  struct writer w = {id, n1};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, write_ints, &w), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.ring_words, 1024);
  /* Domain 0: ring_start, n0 ints, ring_stop.  Domain 1: domain_spawn,
   * n1 ints, domain_terminate. */
  ck_assert_uint_eq(f.rings[0].written, (uint64_t)n0 + 2);
  ck_assert_uint_eq(f.rings[1].written, (uint64_t)n1 + 2);

  for (int pass = 0; pass < 2; pass++) {
    eventring_cursor *c = early;
    struct tally t = te;
    if (pass == 1) {
      ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
      tally_init(&t);
    }
    ck_assert_int_eq(eventring_cursor_lost_unit(c), EVENTRING_LOST_EVENTS);
    uint64_t sum = drain(c, cb, &t, pass ? 0 : 100);
    check_order(&t);
    ck_assert_int_eq(t.stops, 1);
    uint64_t delivered = 0;
    for (int d = 0; d < 2; d++) {
      const struct rf_ring *r = &f.rings[d];
      ck_assert_msg(t.lost[d] + t.delivered[d] == r->written,
                    "pass %d domain %d: lost %llu + delivered %llu != "
                    "written %llu", pass, d, (unsigned long long)t.lost[d],
                    (unsigned long long)t.delivered[d],
                    (unsigned long long)r->written);
      ck_assert_uint_gt(t.lost[d], 0);
      delivered += t.delivered[d];
    }
    /* The ints still in the rings came last: the final ones. */
    ck_assert_int_eq(t.last[0], n0);
    ck_assert_int_eq(t.last[1], n1);
    if (pass == 1) {
      ck_assert_uint_eq(sum, delivered);
      ck_assert_uint_eq(t.delivered[0], f.rings[0].nevents);
      ck_assert_uint_eq(t.delivered[1], f.rings[1].nevents);
      ck_assert_uint_eq(t.lost[0], f.rings[0].evicted);
      ck_assert_uint_eq(t.lost[1], f.rings[1].evicted);
    } else {
      ck_assert_uint_eq(sum + 101, delivered);
    }
    ck_assert_uint_eq(drain(c, cb, &t, 0), 0);
    eventring_cursor_free(c);
  }
  rf_close(&f);
  eventring_callbacks_free(cb);
  free(path);
  er_rmdir(dir);
}
END_TEST

/* A reader thread polls a small ring while the thread that started
 * tracing writes sequence-numbered ints into it as fast as it can. */
struct race {
  eventring_cursor *c;
  eventring_callbacks *cb;
  struct tally t;
  int done; /* the writer has finished (atomic) */
  uint64_t polls, sum;
  int err;
};

static void *reader(void *arg) {
  struct race *rc = arg;
  double t0 = er_now();
  for (;;) {
    int done = __atomic_load_n(&rc->done, __ATOMIC_ACQUIRE);
    int r = eventring_cursor_poll(rc->c, rc->cb, &rc->t, 256);
    rc->polls++;
    if (r < 0) {
      rc->err = r;
      break;
    }
    rc->sum += (uint64_t)r;
    /* Drained after the writer finished: everything it wrote was seen. */
    if (done && r == 0) break;
    if (er_now() - t0 > 30) {
      rc->err = -1;
      break;
    }
  }
  return NULL;
}

START_TEST(test_lost_concurrent) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  char *path = er_start_preserved("e=10");
  int id = eventring_register("lost.seq", EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);

  static struct race rc;
  rc.cb = callbacks();
  tally_init(&rc.t);
  ck_assert_int_eq(eventring_cursor_open(&rc.c, NULL, 0), 0);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, reader, &rc), 0);

  /* Bounded in time and count; under a sanitizer far fewer get written. */
  int64_t n = 0;
  double t0 = er_now();
  while (n < 4000000 && (n % 1024 != 0 || er_now() - t0 < 1.0))
    eventring_write_int(id, ++n);
  __atomic_store_n(&rc.done, 1, __ATOMIC_RELEASE);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_msg(rc.err == 0, "reader: %d (%s)", rc.err,
                eventring_strerror(rc.err));
  check_order(&rc.t);
  /* The reader drained after the last int: it saw it or its loss. */
  ck_assert_uint_eq(rc.t.lost[0] + rc.t.delivered[0], (uint64_t)n + 1);
  ck_assert_uint_eq(rc.sum, rc.t.delivered[0]);
  ck_assert_int_eq(eventring_stop(), 0);
  /* ring_stop, read by this thread now that the reader is gone. */
  struct tally *t = &rc.t;
  ck_assert_uint_eq(drain(rc.c, rc.cb, t, 0), 1);
  ck_assert_int_eq(t->stops, 1);
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.rings[0].written, (uint64_t)n + 2);
  ck_assert_uint_eq(t->lost[0] + t->delivered[0], f.rings[0].written);
  for (int d = 1; d < MAX_DOMS; d++) ck_assert_uint_eq(t->delivered[d], 0);
  printf("concurrent: %lld ints written, %llu delivered, %llu lost in %llu "
         "reports, %llu polls\n", (long long)n,
         (unsigned long long)t->delivered[0], (unsigned long long)t->lost[0],
         (unsigned long long)t->lost_reports, (unsigned long long)rc.polls);
  rf_close(&f);
  eventring_cursor_free(rc.c);
  eventring_callbacks_free(rc.cb);
  free(path);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_lost(void) {
  TCase *tc = er_tcase("lost");
  tcase_add_test(tc, test_lost_quiescent);
  tcase_add_test(tc, test_lost_concurrent);
  return tc;
}

ER_TEST_MAIN("consumer_lost", tc_lost)
