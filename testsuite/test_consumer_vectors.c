/* Tests that the cursor API reads the OCaml 5 vectors exactly as OCaml 5's own consumer does, however the polls are cut. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "consumer_cb.h"
#include "eventring.h"
#include "harness.h"
#include "testlib.h"

/* The vectors' .expected files hold OCaml's read_poll output: one line per
 * event and one per lost_events report, in the order the callbacks ran.
 * The callbacks below print the same lines, so the whole run compares as
 * text.  ring_stop is the one exception: OCaml 5.2 prints a stale data
 * word for it, and the cursor delivers it with has_data = 0 (FORMAT.md's
 * quirk), so only the line up to "value=" is compared there. */

#define MAX_POLLS 200000 /* far more than any vector needs, even 1 by 1 */
#define TIME_LIMIT 20    /* seconds for one whole read */

/* What the callbacks saw. */
struct seen {
  const eventring_cursor *c;
  struct er_lines lines;
  size_t events;          /* event callbacks run (lost reports excluded) */
  uint64_t lost;          /* sum of lost counts */
  int stop_every;         /* event callbacks return 0 (stop) when set */
  int stop_on_lost;       /* the lost callback returns 0 when set */
  int ring_stops, ring_stop_has_data;
};

/* OCaml's reader gives payload words as OCaml ints: the low 63 bits. */
static long long ocaml_int(uint64_t w) {
  return (long long)((int64_t)(w << 1) >> 1);
}

static int add_line(struct seen *s, const char *line) {
  er_lines_push(&s->lines, line, strlen(line));
  s->events++;
  return !s->stop_every;
}

static int on_begin(void *data, int dom, uint64_t ts, int phase) {
  struct seen *s = data;
  const char *name = eventring_cursor_phase_name(s->c, phase);
  char buf[256];
  snprintf(buf, sizeof buf, "domain=%d ts=%" PRIu64
           " kind=runtime_begin name=%s value=-", dom, ts, name ? name : "?");
  return add_line(s, buf);
}

static int on_end(void *data, int dom, uint64_t ts, int phase) {
  struct seen *s = data;
  const char *name = eventring_cursor_phase_name(s->c, phase);
  char buf[256];
  snprintf(buf, sizeof buf, "domain=%d ts=%" PRIu64
           " kind=runtime_end name=%s value=-", dom, ts, name ? name : "?");
  return add_line(s, buf);
}

static int on_counter(void *data, int dom, uint64_t ts, int counter,
                      uint64_t value) {
  struct seen *s = data;
  const char *name = eventring_cursor_counter_name(s->c, counter);
  char buf[256];
  snprintf(buf, sizeof buf, "domain=%d ts=%" PRIu64
           " kind=runtime_counter name=%s value=%lld", dom, ts,
           name ? name : "?", ocaml_int(value));
  return add_line(s, buf);
}

static int on_alloc(void *data, int dom, uint64_t ts,
                    const uint64_t *buckets) {
  struct seen *s = data;
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "domain=%d ts=%" PRIu64
                   " kind=alloc name=alloc_buckets value=", dom, ts);
  for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++)
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%lld", i ? "," : "",
                  ocaml_int(buckets[i]));
  return add_line(s, buf);
}

static int on_lifecycle(void *data, int dom, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  struct seen *s = data;
  const char *name = eventring_lifecycle_name(kind);
  char buf[256];
  if (kind == EVENTRING_LIFECYCLE_RING_STOP) {
    s->ring_stops++;
    s->ring_stop_has_data |= has_data;
  }
  if (has_data)
    snprintf(buf, sizeof buf, "domain=%d ts=%" PRIu64
             " kind=lifecycle name=%s value=%lld", dom, ts,
             name ? name : "?", ocaml_int((uint64_t)value));
  else
    snprintf(buf, sizeof buf, "domain=%d ts=%" PRIu64
             " kind=lifecycle name=%s value=-", dom, ts, name ? name : "?");
  return add_line(s, buf);
}

static int on_unit(void *data, int dom, uint64_t ts, int id,
                   const char *name) {
  struct seen *s = data;
  ck_assert_str_eq(name, eventring_cursor_user_name(s->c, id));
  char buf[256];
  snprintf(buf, sizeof buf, "domain=%d ts=%" PRIu64
           " kind=user_unit name=%s value=()", dom, ts, name);
  return add_line(s, buf);
}

static int on_int(void *data, int dom, uint64_t ts, int id, const char *name,
                  int64_t value) {
  struct seen *s = data;
  ck_assert_str_eq(name, eventring_cursor_user_name(s->c, id));
  char buf[256];
  snprintf(buf, sizeof buf, "domain=%d ts=%" PRIu64
           " kind=user_int name=%s value=%lld", dom, ts, name,
           ocaml_int((uint64_t)value));
  return add_line(s, buf);
}

static int on_span(void *data, int dom, uint64_t ts, int id, const char *name,
                   int is_end) {
  struct seen *s = data;
  ck_assert_str_eq(name, eventring_cursor_user_name(s->c, id));
  char buf[256];
  snprintf(buf, sizeof buf, "domain=%d ts=%" PRIu64
           " kind=user_span name=%s value=%s", dom, ts, name,
           is_end ? "end" : "begin");
  return add_line(s, buf);
}

/* Custom payloads print as OCaml's %S does (String.escaped in quotes). */
static int on_custom(void *data, int dom, uint64_t ts, int id,
                     const char *name, const void *bytes, size_t len) {
  struct seen *s = data;
  ck_assert_str_eq(name, eventring_cursor_user_name(s->c, id));
  char *buf = NULL;
  size_t blen = 0;
  FILE *m = open_memstream(&buf, &blen);
  ck_assert_ptr_nonnull(m);
  fprintf(m, "domain=%d ts=%" PRIu64 " kind=user_custom name=%s value=", dom,
          ts, name);
  rf_print_ocaml_string(m, bytes, len);
  fclose(m);
  int r = add_line(s, buf);
  free(buf);
  return r;
}

static int on_lost(void *data, int dom, uint64_t count) {
  struct seen *s = data;
  char buf[128];
  snprintf(buf, sizeof buf, "domain=%d kind=lost_events value=%" PRIu64, dom,
           count);
  er_lines_push(&s->lines, buf, strlen(buf));
  s->lost += count;
  return !s->stop_on_lost;
}

static eventring_callbacks *all_callbacks(void) {
  static const struct tool_handlers h = {.runtime_begin = on_begin,
      .runtime_end = on_end, .runtime_counter = on_counter, .alloc = on_alloc,
      .lifecycle = on_lifecycle, .user_unit = on_unit, .user_int = on_int,
      .user_span = on_span, .user_custom = on_custom, .lost_events = on_lost};
  return er_callbacks(&h);
}

/* Event and lost_events lines of an .expected file, in order. */
static struct er_lines read_expected(const char *path) {
  struct er_lines all = er_lines_read(path);
  struct er_lines l = er_lines_starting(&all, "domain=");
  er_lines_free(&all);
  return l;
}

/* Decompresses data/NAME.events.gz into a temp dir; the path goes to
 * `path`.  Returns 0 when EVENTRING_TEST_DATA is unset. */
static int unpack(const char *name, char *path, size_t n, char *expected,
                  size_t en) {
  const char *data = er_env_dir("EVENTRING_TEST_DATA");
  if (!data) return 0;
  ck_assert_uint_ge(n, PATH_MAX);
  snprintf(expected, en, "%s/%s.expected", data, name);
  return er_unpack_vector(er_tmpdir(), name, path);
}

/* Opens a vector; `ocaml50` 1 forces the 5.0-5.2 numbering, 0 leaves
 * the cursor to infer it, -1 calls no setter at all. */
static eventring_cursor *open_vector(const char *path, int ocaml50) {
  eventring_cursor *c = NULL;
  int rc = eventring_cursor_open_file(&c, path);
  ck_assert_msg(rc == 0, "open %s: %s", path, eventring_strerror(rc));
  ck_assert_ptr_nonnull(c);
  if (ocaml50 >= 0) ck_assert_int_eq(eventring_cursor_set_ocaml50(c, ocaml50), 0);
  ck_assert_int_eq(eventring_cursor_lost_unit(c), EVENTRING_LOST_WORDS);
  ck_assert_int_eq(eventring_cursor_max_domains(c), 128);
  return c;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Polls with `max` per poll until a poll returns 0 and reports nothing.
 * Checks that each poll's return value is the number of event callbacks
 * it ran, and within `max`.  Returns the number of polls. */
static size_t drain(eventring_cursor *c, const eventring_callbacks *cb,
                    struct seen *s, size_t max) {
  double t0 = now();
  size_t polls = 0;
  for (;;) {
    ck_assert_msg(polls < MAX_POLLS && now() - t0 < TIME_LIMIT,
                  "no end after %zu polls", polls);
    size_t before = s->events, lines_before = s->lines.n;
    int r = eventring_cursor_poll(c, cb, s, max);
    polls++;
    ck_assert_msg(r >= 0, "poll: %s", eventring_strerror(r));
    ck_assert_uint_eq((size_t)r, s->events - before);
    if (max) ck_assert_uint_le((size_t)r, max);
    if (s->stop_every) ck_assert_int_le(r, 1);
    if (r == 0 && s->lines.n == lines_before) break;
  }
  return polls;
}

static void check_vector(const char *name, int ocaml50) {
  char path[PATH_MAX], expected[PATH_MAX];
  if (!unpack(name, path, sizeof path, expected, sizeof expected))
    ER_SKIP("EVENTRING_TEST_DATA is not set");
  struct er_lines want = read_expected(expected);
  ck_assert_msg(want.n > 300, "%s has only %zu lines", expected, want.n);
  size_t want_events = 0;
  uint64_t want_lost = 0;
  for (size_t i = 0; i < want.n; i++) {
    const char *lost = strstr(want.v[i], " kind=lost_events value=");
    if (lost) want_lost += strtoull(strstr(lost, "value=") + 6, NULL, 10);
    else want_events++;
  }
  eventring_callbacks *cb = all_callbacks();

  /* 1. One unbounded poll reads everything; a second finds nothing. */
  eventring_cursor *c = open_vector(path, ocaml50);
  struct seen s = {.c = c};
  int r = eventring_cursor_poll(c, cb, &s, 0);
  ck_assert_msg(r >= 0, "poll: %s", eventring_strerror(r));
  ck_assert_uint_eq((size_t)r, s.events);
  ck_assert_uint_eq(s.events, want_events);
  ck_assert_uint_eq(s.lost, want_lost);
  ck_assert_int_eq(s.ring_stops, 1);
  ck_assert_int_eq(s.ring_stop_has_data, 0);
  er_lines_compare(name, &s.lines, &want, 1);
  size_t nlines = s.lines.n;
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, 0), 0);
  ck_assert_uint_eq(s.lines.n, nlines);
  eventring_cursor_free(c);
  er_lines_free(&s.lines);

  /* 2. Every event callback stops the poll: each poll delivers exactly
   * one event, the next poll continues with the next one, and nothing is
   * lost or repeated. */
  c = open_vector(path, ocaml50);
  s = (struct seen){.c = c, .stop_every = 1};
  size_t polls = drain(c, cb, &s, 0);
  ck_assert_uint_ge(polls, want_events);
  er_lines_compare(name, &s.lines, &want, 1);
  eventring_cursor_free(c);
  er_lines_free(&s.lines);

  /* 3. max_events bounds each poll; only the last ones fall short. */
  const size_t maxes[] = {1, 7, 64, 1000};
  for (size_t k = 0; k < sizeof maxes / sizeof maxes[0]; k++) {
    c = open_vector(path, ocaml50);
    s = (struct seen){.c = c};
    size_t got = 0, p = 0;
    double t0 = now();
    for (;;) {
      ck_assert(p++ < MAX_POLLS && now() - t0 < TIME_LIMIT);
      r = eventring_cursor_poll(c, cb, &s, maxes[k]);
      ck_assert_msg(r >= 0, "poll: %s", eventring_strerror(r));
      ck_assert_uint_le((size_t)r, maxes[k]);
      got += (size_t)r;
      if ((size_t)r < maxes[k]) {
        /* Short: the cursor has drained every ring. */
        ck_assert_uint_eq(got, want_events);
        break;
      }
    }
    ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, maxes[k]), 0);
    ck_assert_uint_eq(s.events, want_events);
    er_lines_compare(name, &s.lines, &want, 1);
    eventring_cursor_free(c);
    er_lines_free(&s.lines);
  }

  /* 4. Only the callbacks that are set run; the others' events still
   * count as read. */
  c = open_vector(path, ocaml50);
  eventring_callbacks *none = eventring_callbacks_create();
  ck_assert_ptr_nonnull(none);
  ck_assert_int_eq(eventring_cursor_poll(c, none, NULL, 0), (int)want_events);
  ck_assert_int_eq(eventring_cursor_poll(c, none, NULL, 0), 0);
  eventring_callbacks_free(none);
  eventring_cursor_free(c);

  eventring_callbacks_free(cb);
  er_lines_free(&want);
  unlink(path);
}

/* Frees a test's cursor, callbacks and the lines it collected. */
static void close_reading(eventring_cursor *c, eventring_callbacks *cb,
                          struct er_lines *lines) {
  eventring_cursor_free(c);
  eventring_callbacks_free(cb);
  er_lines_free(lines);
}

START_TEST(test_vector) {
  check_vector(er_vectors[_i], er_vector_ocaml50(er_vectors[_i]));
}
END_TEST

/* With no flag at all the cursor tells 5.2's files from 5.4's by how
 * their phases nest, certain of it when it opens, and decodes each
 * exactly as OCaml's own consumer did. */
START_TEST(test_vector_inferred) {
  const char *name = er_vectors[_i];
  char path[PATH_MAX], expected[PATH_MAX];
  if (!unpack(name, path, sizeof path, expected, sizeof expected))
    ER_SKIP("EVENTRING_TEST_DATA is not set");
  struct er_lines want = read_expected(expected);
  eventring_callbacks *cb = all_callbacks();
  eventring_cursor *c = open_vector(path, -1);
  int basis = 99;
  ck_assert_int_eq(eventring_cursor_numbering(c, &basis),
                   er_vector_ocaml50(name) ? EVENTRING_NUMBERING_OCAML50
                                           : EVENTRING_NUMBERING_OCAML53);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_INFERRED);
  struct seen s = {.c = c};
  int r = eventring_cursor_poll(c, cb, &s, 0);
  ck_assert_msg(r >= 0, "poll: %s", eventring_strerror(r));
  er_lines_compare(name, &s.lines, &want, 1);
  close_reading(c, cb, &s.lines);
  er_lines_free(&want);
  unlink(path);
}
END_TEST

/* The wrapped vector begins with a loss of 14002 words: a lost callback
 * returning 0 ends the poll right after it, with no event delivered, and
 * the next poll delivers the events without reporting the loss again. */
START_TEST(test_stop_on_lost) {
  char path[PATH_MAX], expected[PATH_MAX];
  if (!unpack("ocaml5-wrapped", path, sizeof path, expected, sizeof expected))
    ER_SKIP("EVENTRING_TEST_DATA is not set");
  eventring_callbacks *cb = all_callbacks();
  eventring_cursor *c = open_vector(path, 1);
  struct seen s = {.c = c, .stop_on_lost = 1};
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, 0), 0);
  ck_assert_uint_eq(s.lines.n, 1);
  ck_assert_str_eq(s.lines.v[0], "domain=0 kind=lost_events value=14002");
  int r = eventring_cursor_poll(c, cb, &s, 0);
  ck_assert_int_eq(r, 341);
  ck_assert_uint_eq(s.lost, 14002);
  ck_assert_uint_eq(s.lines.n, 342);
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, 0), 0);
  close_reading(c, cb, &s.lines);
  unlink(path);
}
END_TEST

/* The same 5.2 file read with the 5.3+ numbering forced names phases
 * differently: the numbering is what makes the vectors match. */
START_TEST(test_numbering_forced53) {
  char path[PATH_MAX], expected[PATH_MAX];
  if (!unpack("ocaml5-basic", path, sizeof path, expected, sizeof expected))
    ER_SKIP("EVENTRING_TEST_DATA is not set");
  eventring_callbacks *cb = all_callbacks();
  eventring_cursor *c = open_vector(path, -1);
  ck_assert_int_eq(
      eventring_cursor_set_numbering(c, EVENTRING_NUMBERING_OCAML53), 0);
  struct seen s = {.c = c};
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &s, 0), 690);
  struct er_lines want = read_expected(expected);
  ck_assert_uint_eq(s.lines.n, want.n);
  size_t differ = 0;
  for (size_t i = 0; i < want.n; i++)
    differ +=
        strcmp(s.lines.v[i], want.v[i]) != 0 && !er_is_ring_stop(want.v[i]);
  ck_assert_msg(differ > 100, "only %zu lines differ", differ);
  ck_assert_str_eq(eventring_cursor_phase_name(c, 10), "major_mark");
  eventring_cursor_set_ocaml50(c, 1);
  ck_assert_str_eq(eventring_cursor_phase_name(c, 10), "minor");
  ck_assert_ptr_null(eventring_cursor_phase_name(c, 44));
  ck_assert_ptr_null(eventring_cursor_phase_name(c, -1));
  close_reading(c, cb, &s.lines);
  er_lines_free(&want);
  unlink(path);
}
END_TEST

static TCase *tc_vectors(void) {
  TCase *tc = er_tcase("vectors");
  tcase_add_loop_test(tc, test_vector, 0, ER_NVECTORS);
  tcase_add_test(tc, test_stop_on_lost);
  tcase_add_loop_test(tc, test_vector_inferred, 0, ER_NVECTORS);
  tcase_add_test(tc, test_numbering_forced53);
  return tc;
}

ER_TEST_MAIN("consumer_vectors", tc_vectors)
