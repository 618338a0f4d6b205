/* Tests rings of 2 to 512 words (OCAMLRUNPARAM e=1..9): every kind of event written, an event longer than the ring dropped and counted, delivered + lost == written. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "testlib.h"

#define NEED_TRACING()                                                   \
  do {                                                                   \
    if (er_tracing_off()) ER_SKIP("a build without tracing");            \
  } while (0)

/* The ring sizes tried, as e= values: the smallest ring (2 words: a
 * begin or end fits, nothing longer does), one where counters fit but
 * the padding logic is exercised at every turn (4 words), one below the
 * alloc event's 22 words (16) and the largest below the old clamp. */
static const unsigned sizes[] = {1, 2, 4, 9};

/* What a cursor delivered and reported lost, per domain. */
struct tally {
  uint64_t delivered[2], lost[2];
  int64_t last_int;   /* the last s.int value delivered (domain 0) */
  int ints_in_order;  /* each s.int delivered was above the previous */
  int bad_custom;     /* custom payloads that are not what was written:
                         "abc", or all 'x' */
};

static void count(struct tally *t, int d) {
  ck_assert_int_lt(d, 2);
  t->delivered[d]++;
}

static int on_phase(void *data, int d, uint64_t ts, int phase) {
  (void)ts;
  (void)phase;
  count(data, d);
  return 1;
}

static int on_counter(void *data, int d, uint64_t ts, int id, uint64_t v) {
  (void)ts;
  (void)id;
  (void)v;
  count(data, d);
  return 1;
}

static int on_life(void *data, int d, uint64_t ts, int kind, int64_t v,
                   int has) {
  (void)ts;
  (void)kind;
  (void)v;
  (void)has;
  count(data, d);
  return 1;
}

static int on_alloc(void *data, int d, uint64_t ts, const uint64_t *b) {
  (void)ts;
  (void)b;
  count(data, d);
  return 1;
}

static int on_unit(void *data, int d, uint64_t ts, int id, const char *n) {
  (void)ts;
  (void)id;
  (void)n;
  count(data, d);
  return 1;
}

static int on_int(void *data, int d, uint64_t ts, int id, const char *n,
                  int64_t v) {
  (void)ts;
  (void)id;
  struct tally *t = data;
  count(t, d);
  if (d == 0 && !strcmp(n, "s.int")) {
    if (v <= t->last_int) t->ints_in_order = 0;
    t->last_int = v;
  }
  return 1;
}

static int on_span(void *data, int d, uint64_t ts, int id, const char *n,
                   int is_end) {
  (void)ts;
  (void)id;
  (void)n;
  (void)is_end;
  count(data, d);
  return 1;
}

static int on_custom(void *data, int d, uint64_t ts, int id, const char *n,
                     const void *bytes, size_t len) {
  (void)ts;
  (void)id;
  (void)n;
  struct tally *t = data;
  count(t, d);
  const unsigned char *b = bytes;
  int ok = len == 3 && memcmp(b, "abc", 3) == 0;
  if (!ok && len > 3) {
    ok = 1;
    for (size_t i = 0; i < len; i++) ok &= b[i] == 'x';
  }
  if (!ok) t->bad_custom++;
  return 1;
}

static int on_lost(void *data, int d, uint64_t n) {
  struct tally *t = data;
  ck_assert_int_lt(d, 2);
  t->lost[d] += n;
  return 1;
}

static eventring_callbacks *callbacks(void) {
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  eventring_callbacks_set_runtime_begin(cb, on_phase);
  eventring_callbacks_set_runtime_end(cb, on_phase);
  eventring_callbacks_set_runtime_counter(cb, on_counter);
  eventring_callbacks_set_lifecycle(cb, on_life);
  eventring_callbacks_set_alloc(cb, on_alloc);
  eventring_callbacks_set_user_unit(cb, on_unit);
  eventring_callbacks_set_user_int(cb, on_int);
  eventring_callbacks_set_user_span(cb, on_span);
  eventring_callbacks_set_user_custom(cb, on_custom);
  eventring_callbacks_set_lost_events(cb, on_lost);
  return cb;
}

static void tally_init(struct tally *t) {
  memset(t, 0, sizeof *t);
  t->last_int = -1;
  t->ints_in_order = 1;
}

/* Polls `c` until it has nothing more; fails the test on an error. */
static void drain(eventring_cursor *c, eventring_callbacks *cb,
                  struct tally *t) {
  for (int i = 0; i < 1000000; i++) {
    int r = eventring_cursor_poll(c, cb, t, 0);
    ck_assert_msg(r >= 0, "poll: %s", eventring_strerror(r));
    if (r == 0) return;
  }
  ck_abort_msg("the cursor never ran dry");
}

/* What the writer expects of a ring of `words` words: an event is
 * written when it fits, else dropped. */
struct expect {
  uint64_t words, written, dropped;
};

static void account(struct expect *x, unsigned len) {
  if (len <= x->words)
    x->written++;
  else
    x->dropped++;
}

/* Domain 1's thread: domain_spawn (3 words), then begin/end pairs, then
 * domain_terminate (3 words) when it exits. */
#define THREAD_PAIRS 10
static void *second_domain(void *arg) {
  (void)arg;
  for (int i = 0; i < THREAD_PAIRS; i++) {
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_end(EVENTRING_PHASE_MINOR);
  }
  return NULL;
}

/* In this process: rounds of every kind of event the default variant
 * writes, into a ring of 2^e words, with a cursor of the same process
 * polling between rounds a varying number of events at a time, so that it
 * is lapped at every possible offset; then the file read again whole. */
START_TEST(test_every_kind_in_small_ring) {
  NEED_TRACING();
  const unsigned e = sizes[_i];
  char param[16];
  snprintf(param, sizeof param, "e=%u,d=2", e);
  const char *dir = er_tmpdir();
  setenv("OCAMLRUNPARAM", param, 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  struct er_capture cap;
  er_stderr_begin(&cap);
  int rc = eventring_start();
  char *err = er_stderr_end(&cap);
  ck_assert_msg(rc == 0, "%s: start: %s", param, eventring_strerror(rc));
  /* Honoured, not clamped: no warning. */
  ck_assert_msg(er_count_lines(err) == 0, "%s: stderr \"%s\"", param, err);
  free(err);
  char *path = strdup(eventring_path());
  int id_unit = eventring_register("s.unit", EVENTRING_TYPE_UNIT);
  int id_int = eventring_register("s.int", EVENTRING_TYPE_INT);
  int id_span = eventring_register("s.span", EVENTRING_TYPE_SPAN);
  int id_custom = eventring_register("s.custom", EVENTRING_TYPE_CUSTOM);
  ck_assert(id_unit >= 0 && id_int >= 0 && id_span >= 0 && id_custom >= 0);

  struct expect x[2] = {{UINT64_C(1) << e, 0, 0}, {UINT64_C(1) << e, 0, 0}};
  account(&x[0], 3); /* ring_start */

  eventring_cursor *c = NULL;
  ck_assert_int_eq(eventring_cursor_open(&c, NULL, 0), 0);
  eventring_callbacks *cb = callbacks();
  struct tally t;
  tally_init(&t);

  /* A custom payload longer than the ring by a word, and one that makes
   * an event of exactly the ring's length when that is possible (a
   * custom event has at least 3 words). */
  size_t over = (size_t)x[0].words * 8;
  size_t exact = x[0].words >= 3 ? (size_t)(x[0].words - 3) * 8 : 0;
  static unsigned char big[EVENTRING_MAX_CUSTOM_BYTES];
  memset(big, 'x', sizeof big);
  for (int r = 0; r < 300; r++) {
    eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
    account(&x[0], 2);
    eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, (uint64_t)r);
    account(&x[0], 3);
    eventring_write_unit(id_unit);
    account(&x[0], 2);
    eventring_write_int(id_int, r);
    account(&x[0], 3);
    eventring_write_span(id_span, 0);
    account(&x[0], 2);
    int w = eventring_write_custom(id_custom, "abc", 3);
    ck_assert_int_eq(w, 3 <= x[0].words ? 0 : EVENTRING_E_TOOBIG);
    account(&x[0], 3);
    /* Larger than the ring: never written, whatever the ring holds. */
    ck_assert_int_eq(eventring_write_custom(id_custom, big, over),
                     EVENTRING_E_TOOBIG);
    account(&x[0], (unsigned)(2 + ER_CUSTOM_WORDS(over)));
    if (x[0].words >= 3) {
      /* As long as the ring: written, and overwritten by the next. */
      ck_assert_int_eq(eventring_write_custom(id_custom, big, exact), 0);
      account(&x[0], (unsigned)(2 + ER_CUSTOM_WORDS(exact)));
    }
    eventring_write_span(id_span, 1);
    account(&x[0], 2);
    eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
    account(&x[0], 2);
    /* Poll between 1 and 7 events, or none, so that the cursor is lapped
     * at every offset of the ring. */
    if (r % 8 != 7) {
      int n = eventring_cursor_poll(c, cb, &t, (size_t)(r % 8) + 1);
      ck_assert_msg(n >= 0, "poll: %s", eventring_strerror(n));
    }
  }
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, second_domain, NULL), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  account(&x[1], 3); /* domain_spawn */
  for (int i = 0; i < 2 * THREAD_PAIRS; i++) account(&x[1], 2);
  account(&x[1], 3); /* domain_terminate */
  ck_assert_int_eq(eventring_stop(), 0);
  account(&x[0], 3); /* ring_stop */

  /* The header words: what fit was written, what did not was dropped. */
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.ring_words, UINT64_C(1) << e);
  for (int d = 0; d < 2; d++) {
    ck_assert_msg(f.rings[d].written == x[d].written,
                  "%s domain %d: WRITTEN %" PRIu64 ", expected %" PRIu64,
                  param, d, f.rings[d].written, x[d].written);
    ck_assert_msg(f.rings[d].dropped == x[d].dropped,
                  "%s domain %d: DROPPED %" PRIu64 ", expected %" PRIu64,
                  param, d, f.rings[d].dropped, x[d].dropped);
  }
  ck_assert_uint_gt(x[0].dropped, 0);

  /* The live cursor, drained after the stop, and a fresh one on the file:
   * every event written is delivered or counted lost, exactly once. */
  drain(c, cb, &t);
  eventring_cursor *fresh = NULL;
  ck_assert_int_eq(eventring_cursor_open_file(&fresh, path), 0);
  struct tally t2;
  tally_init(&t2);
  drain(fresh, cb, &t2);
  const struct tally *ts[2] = {&t, &t2};
  for (int k = 0; k < 2; k++)
    for (int d = 0; d < 2; d++) {
      ck_assert_msg(ts[k]->delivered[d] + ts[k]->lost[d] == x[d].written,
                    "%s %s cursor, domain %d: delivered %" PRIu64
                    " + lost %" PRIu64 " != written %" PRIu64,
                    param, k ? "fresh" : "live", d, ts[k]->delivered[d],
                    ts[k]->lost[d], x[d].written);
      ck_assert(ts[k]->ints_in_order);
      ck_assert_int_eq(ts[k]->bad_custom, 0);
    }
  /* The fresh cursor finds what the ring still holds, which the strict
   * decoder of the tests finds too. */
  ck_assert_uint_eq(t2.delivered[0], f.rings[0].nevents);
  ck_assert_uint_eq(t2.lost[0], f.rings[0].evicted);
  ck_assert_uint_gt(t.delivered[0], 0);
  rf_close(&f);
  eventring_cursor_free(c);
  eventring_cursor_free(fresh);
  eventring_callbacks_free(cb);
  free(path);
  er_rmdir(dir);
}
END_TEST

/* Lengths of progs/i_small_ring_writer's events, in its order: one round,
 * then the big custom event's (its payload is `over` bytes). */
static const unsigned round_lens[] = {2, 3, 2, 3, 2, 3, 0 /* big */, 22, 2, 2};
#define WRITER_ROUNDS 200

/* A real program of the instrumented variant (the alloc event, 22 words,
 * included) in a ring of 2^e words, read by the real `eventring dump`:
 * it exits 0, the dump reads the file to its end, and its event lines
 * plus the losses it reports are the events written. */
START_TEST(test_program_and_dump) {
  NEED_TRACING();
  ER_NEED_TOOL();
  const unsigned e = sizes[_i];
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) ER_SKIP("EVENTRING_TEST_PROGS is not set");
  const char *dir = er_tmpdir();
  char param[32], env[64], over[16], prog[PATH_MAX];
  snprintf(param, sizeof param, "e=%u", e);
  snprintf(env, sizeof env, "OCAMLRUNPARAM=%s", param);
  size_t over_bytes = ((size_t)8 << e) + 1;
  snprintf(over, sizeof over, "%zu", over_bytes);
  snprintf(prog, sizeof prog, "%s/i_small_ring_writer", progs);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  char *argv[] = {prog, over, NULL};
  pid_t pid = er_spawn(argv, ER_FD_NULL, ER_FD_NULL, ER_FD_KEEP, env, 0);
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "%s: i_small_ring_writer: status %d", param, st);
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, pid);

  struct expect x = {UINT64_C(1) << e, 0, 0};
  account(&x, 3); /* ring_start */
  for (int r = 0; r < WRITER_ROUNDS; r++)
    for (size_t i = 0; i < sizeof round_lens / sizeof *round_lens; i++)
      account(&x, round_lens[i] ? round_lens[i]
                                : (unsigned)(2 + ER_CUSTOM_WORDS(over_bytes)));
  account(&x, 3); /* ring_stop */
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.rings[0].written, x.written);
  ck_assert_uint_eq(f.rings[0].dropped, x.dropped);
  /* The alloc event is dropped exactly when the ring is under 22 words. */
  size_t allocs = rf_count(&f, 0, 0, ER_EV_ALLOC, -1);
  if (x.words < 22)
    ck_assert_uint_eq(allocs, 0);
  else
    ck_assert_uint_gt(allocs, 0);

  struct er_run run =
      er_run_tool(dir, (const char *[]){"dump", "--time=raw", path, NULL}, 0);
  er_assert_status(&run, 0);
  struct er_lines out = er_lines_split(run.out);
  ck_assert_uint_gt(out.n, 0);
  const char *sum = out.v[out.n - 1];
  ck_assert_msg(!strncmp(sum, "SUMMARY total=", 14), "%s", sum);
  ck_assert_msg(strstr(sum, " lost_unit=events") != NULL, "%s", sum);
  uint64_t total = er_field(sum, "total");
  uint64_t lost = er_field(sum, "lost_events_total");
  ck_assert_msg(total + lost == x.written,
                "%s: dump shows %" PRIu64 " + lost %" PRIu64
                " != written %" PRIu64, param, total, lost, x.written);
  ck_assert_uint_eq(total, f.rings[0].nevents);
  er_lines_free(&out);
  er_run_free(&run);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_small(void) {
  TCase *tc = er_tcase("small_rings");
  int n = (int)(sizeof sizes / sizeof *sizes);
  tcase_add_loop_test(tc, test_every_kind_in_small_ring, 0, n);
  tcase_add_loop_test(tc, test_program_and_dump, 0, n);
  return tc;
}

ER_TEST_MAIN("small_rings", tc_small)
