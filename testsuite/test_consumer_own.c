/* Tests that the cursor reads files written by eventring itself event for event, from several threads, live and after stop. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "consumer_cb.h"
#include "eventring.h"
#include "harness.h"

/* Each writer thread binds to its own slot and writes a known script:
 * every phase's begin and end, every counter, a few lifecycle events,
 * and user unit, int, span and custom events (payloads of 0..40 bytes and
 * of the largest size), several rounds of it.  The script is recorded as
 * it is written; the cursor's reading of each domain must be the same
 * list, with domain_spawn before it and domain_terminate after it. */

#define NTHREADS 4
#define ROUNDS 6
#define MAX_EVENTS 20000
#define MAX_POLLS 100000
#define TIME_LIMIT 20

enum kind { K_BEGIN, K_END, K_COUNTER, K_LIFE, K_UNIT, K_INT, K_SPAN, K_CUSTOM };

struct ev {
  enum kind kind;
  int id;
  int64_t value; /* counter / lifecycle / int value, span is_end */
  int has_data;  /* lifecycle */
  uint64_t ts;
  unsigned char *bytes; /* custom */
  size_t len;
};

struct evlist {
  struct ev *v;
  size_t n;
};

static void push(struct evlist *l, struct ev e) {
  ck_assert_uint_lt(l->n, MAX_EVENTS);
  if (!l->v) {
    l->v = calloc(MAX_EVENTS, sizeof *l->v);
    ck_assert_ptr_nonnull(l->v);
  }
  l->v[l->n++] = e;
}

static void evlist_free(struct evlist *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i].bytes);
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

static int id_unit, id_int, id_span, id_custom, id_custom2;

static unsigned char *custom_bytes(int thread, int round, size_t len) {
  unsigned char *b = malloc(len ? len : 1);
  ck_assert_ptr_nonnull(b);
  for (size_t k = 0; k < len; k++)
    b[k] = (unsigned char)(thread * 31 + round * 7 + k * 13 + (k >> 8));
  return b;
}

struct writer {
  int thread, slot;
  struct evlist script;
};

static void *write_script(void *arg) {
  struct writer *w = arg;
  ck_assert_int_eq(eventring_domain_bind(w->slot), 0);
  for (int round = 0; round < ROUNDS; round++) {
    for (int p = 0; p < EVENTRING_PHASE_COUNT; p++) {
      eventring_begin((eventring_phase)p);
      push(&w->script, (struct ev){K_BEGIN, p, 0, 0, 0, NULL, 0});
    }
    for (int p = EVENTRING_PHASE_COUNT - 1; p >= 0; p--) {
      eventring_end((eventring_phase)p);
      push(&w->script, (struct ev){K_END, p, 0, 0, 0, NULL, 0});
    }
    for (int k = 0; k < EVENTRING_COUNTER_COUNT; k++) {
      uint64_t v = (uint64_t)w->thread << 40 | (uint64_t)round << 20 |
                   (uint64_t)k;
      if (k == 0) v = UINT64_MAX - (uint64_t)round;
      eventring_counter((eventring_counter_id)k, v);
      push(&w->script, (struct ev){K_COUNTER, k, (int64_t)v, 0, 0, NULL, 0});
    }
    /* Lifecycle kinds whose probes have no side effect in the library. */
    for (int k = EVENTRING_LIFECYCLE_FORK_PARENT;
         k <= EVENTRING_LIFECYCLE_DOMAIN_TERMINATE; k++) {
      int64_t v = 1000 * w->thread + k + round;
      eventring_lifecycle((eventring_lifecycle_kind)k, v);
      push(&w->script, (struct ev){K_LIFE, k, v, 1, 0, NULL, 0});
    }
    eventring_write_unit(id_unit);
    push(&w->script, (struct ev){K_UNIT, id_unit, 0, 0, 0, NULL, 0});
    const int64_t ints[] = {0, 1, -1, INT64_MAX, INT64_MIN, 42 + w->thread,
                            (int64_t)round << 50};
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
      eventring_write_int(id_int, ints[k]);
      push(&w->script, (struct ev){K_INT, id_int, ints[k], 0, 0, NULL, 0});
    }
    eventring_write_span(id_span, 0);
    push(&w->script, (struct ev){K_SPAN, id_span, 0, 0, 0, NULL, 0});
    for (size_t len = 0; len <= 40; len++) {
      unsigned char *b = custom_bytes(w->thread, round, len);
      int id = len % 2 ? id_custom2 : id_custom;
      ck_assert_int_eq(eventring_write_custom(id, b, len), 0);
      push(&w->script, (struct ev){K_CUSTOM, id, 0, 0, 0, b, len});
    }
    if (round % 2 == 0) {
      size_t len = EVENTRING_MAX_CUSTOM_BYTES - (size_t)round;
      unsigned char *b = custom_bytes(w->thread, round, len);
      ck_assert_int_eq(eventring_write_custom(id_custom, b, len), 0);
      push(&w->script, (struct ev){K_CUSTOM, id_custom, 0, 0, 0, b, len});
    }
    eventring_write_span(id_span, 1);
    push(&w->script, (struct ev){K_SPAN, id_span, 1, 0, 0, NULL, 0});
  }
  /* One event too big to write: refused, and nothing is written. */
  static unsigned char big[EVENTRING_MAX_CUSTOM_BYTES + 1];
  ck_assert_int_eq(eventring_write_custom(id_custom, big, sizeof big),
                   EVENTRING_E_TOOBIG);
  return NULL;
}

/* What the cursor delivered, per domain. */
struct reading {
  const eventring_cursor *c;
  struct evlist dom[NTHREADS + 1];
  size_t events;
  uint64_t lost;
  int bad_domain;
};

static struct evlist *dlist(struct reading *r, int dom) {
  if (dom < 0 || dom > NTHREADS) {
    r->bad_domain = 1;
    return &r->dom[0];
  }
  return &r->dom[dom];
}

static int rec(struct reading *r, int dom, struct ev e) {
  push(dlist(r, dom), e);
  r->events++;
  return 1;
}

static int on_begin(void *d, int dom, uint64_t ts, int phase) {
  return rec(d, dom, (struct ev){K_BEGIN, phase, 0, 0, ts, NULL, 0});
}
static int on_end(void *d, int dom, uint64_t ts, int phase) {
  return rec(d, dom, (struct ev){K_END, phase, 0, 0, ts, NULL, 0});
}
static int on_counter(void *d, int dom, uint64_t ts, int k, uint64_t v) {
  return rec(d, dom, (struct ev){K_COUNTER, k, (int64_t)v, 0, ts, NULL, 0});
}
static int on_alloc(void *d, int dom, uint64_t ts, const uint64_t *b) {
  (void)d, (void)dom, (void)ts, (void)b;
  ck_abort_msg("an alloc event in a file of the plain variant");
  return 0;
}
static int on_life(void *d, int dom, uint64_t ts, int k, int64_t v, int has) {
  return rec(d, dom, (struct ev){K_LIFE, k, v, has, ts, NULL, 0});
}
static void check_name(struct reading *r, int id, const char *name) {
  ck_assert_ptr_nonnull(name);
  ck_assert_str_eq(name, eventring_cursor_user_name(r->c, id));
}
static int on_unit(void *d, int dom, uint64_t ts, int id, const char *name) {
  check_name(d, id, name);
  ck_assert_str_eq(name, "own.unit");
  return rec(d, dom, (struct ev){K_UNIT, id, 0, 0, ts, NULL, 0});
}
static int on_int(void *d, int dom, uint64_t ts, int id, const char *name,
                  int64_t v) {
  check_name(d, id, name);
  ck_assert_str_eq(name, "own.int");
  return rec(d, dom, (struct ev){K_INT, id, v, 0, ts, NULL, 0});
}
static int on_span(void *d, int dom, uint64_t ts, int id, const char *name,
                   int is_end) {
  check_name(d, id, name);
  ck_assert_str_eq(name, "own.span");
  return rec(d, dom, (struct ev){K_SPAN, id, is_end, 0, ts, NULL, 0});
}
static int on_custom(void *d, int dom, uint64_t ts, int id, const char *name,
                     const void *bytes, size_t len) {
  check_name(d, id, name);
  ck_assert(!strcmp(name, "own.custom") || !strcmp(name, "own.custom.odd"));
  unsigned char *copy = malloc(len ? len : 1);
  ck_assert_ptr_nonnull(copy);
  memcpy(copy, bytes, len);
  return rec(d, dom, (struct ev){K_CUSTOM, id, 0, 0, ts, copy, len});
}
static int on_lost(void *d, int dom, uint64_t n) {
  struct reading *r = d;
  (void)dom;
  r->lost += n;
  return 1;
}

static eventring_callbacks *all_callbacks(void) {
  static const struct tool_handlers h = {.runtime_begin = on_begin,
      .runtime_end = on_end, .runtime_counter = on_counter, .alloc = on_alloc,
      .lifecycle = on_life, .user_unit = on_unit, .user_int = on_int,
      .user_span = on_span, .user_custom = on_custom, .lost_events = on_lost};
  return er_callbacks(&h);
}

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Polls until a poll returns 0, with a varying max_events; returns the
 * events delivered. */
static size_t read_all(eventring_cursor *c, const eventring_callbacks *cb,
                       struct reading *r) {
  uint64_t t0 = mono_ns();
  size_t total = 0;
  for (int i = 0;; i++) {
    ck_assert_int_lt(i, MAX_POLLS);
    ck_assert_uint_lt(mono_ns() - t0, (uint64_t)TIME_LIMIT * 1000000000u);
    size_t before = r->events;
    int n = eventring_cursor_poll(c, cb, r, i % 3 == 0 ? 0 : (size_t)(i * 37 % 500 + 1));
    ck_assert_msg(n >= 0, "poll: %s", eventring_strerror(n));
    ck_assert_uint_eq((size_t)n, r->events - before);
    if (n == 0) break;
    total += (size_t)n;
  }
  ck_assert_int_eq(r->bad_domain, 0);
  return total;
}

static void reading_free(struct reading *r) {
  for (int d = 0; d <= NTHREADS; d++) evlist_free(&r->dom[d]);
}

/* Compares one domain's delivered events `got` (from index `from`, with
 * `n` of them) with `want`, and checks timestamps are non-decreasing and
 * within [t0, t1]. */
static void compare(int dom, const struct evlist *got, size_t from,
                    const struct evlist *want, uint64_t t0, uint64_t t1) {
  ck_assert_uint_ge(got->n, from + want->n);
  for (size_t i = 0; i < want->n; i++) {
    const struct ev *g = &got->v[from + i], *w = &want->v[i];
    ck_assert_msg(g->kind == w->kind && g->id == w->id && g->value == w->value,
                  "domain %d event %zu: got kind %d id %d value %lld, want "
                  "kind %d id %d value %lld", dom, i, g->kind, g->id,
                  (long long)g->value, w->kind, w->id, (long long)w->value);
    if (w->kind == K_LIFE) ck_assert_int_eq(g->has_data, 1);
    if (w->kind == K_CUSTOM) {
      ck_assert_uint_eq(g->len, w->len);
      ck_assert_msg(memcmp(g->bytes, w->bytes, w->len) == 0,
                    "domain %d event %zu: custom bytes differ", dom, i);
    }
    ck_assert_uint_ge(g->ts, t0);
    ck_assert_uint_le(g->ts, t1);
    if (i > 0) ck_assert_uint_ge(g->ts, got->v[from + i - 1].ts);
  }
}

static void expect_life(const struct evlist *l, size_t i, int kind,
                        int64_t value, int has_data) {
  ck_assert_uint_lt(i, l->n);
  ck_assert_int_eq(l->v[i].kind, K_LIFE);
  ck_assert_int_eq(l->v[i].id, kind);
  ck_assert_int_eq(l->v[i].has_data, has_data);
  if (has_data) ck_assert_int_eq(l->v[i].value, value);
}

START_TEST(test_own_file_event_for_event) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  /* Registered before start (written at start) and after. */
  id_unit = eventring_register("own.unit", EVENTRING_TYPE_UNIT);
  id_int = eventring_register("own.int", EVENTRING_TYPE_INT);
  uint64_t t0 = mono_ns();
  ck_assert_int_eq(eventring_start(), 0);
  id_span = eventring_register("own.span", EVENTRING_TYPE_SPAN);
  id_custom = eventring_register("own.custom", EVENTRING_TYPE_CUSTOM);
  id_custom2 = eventring_register("own.custom.odd", EVENTRING_TYPE_CUSTOM);
  ck_assert(id_unit >= 0 && id_int >= 0 && id_span >= 0 && id_custom >= 0 &&
            id_custom2 >= 0);
  /* The starting thread takes slot 0; the writers take 1..NTHREADS. */
  eventring_write_unit(id_unit);
  ck_assert_int_eq(eventring_domain_id(), 0);

  static struct writer w[NTHREADS];
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) {
    w[t] = (struct writer){.thread = t, .slot = t + 1};
    ck_assert_int_eq(pthread_create(&th[t], NULL, write_script, &w[t]), 0);
  }
  for (int t = 0; t < NTHREADS; t++) ck_assert_int_eq(pthread_join(th[t], NULL), 0);
  uint64_t t1 = mono_ns();

  /* A cursor on this process, while tracing is on. */
  eventring_callbacks *cb = all_callbacks();
  eventring_cursor *live = NULL;
  int rc = eventring_cursor_open(&live, NULL, 0);
  ck_assert_msg(rc == 0, "open this process: %s", eventring_strerror(rc));
  ck_assert_int_eq(eventring_cursor_lost_unit(live), EVENTRING_LOST_EVENTS);
  ck_assert_int_eq(eventring_cursor_max_domains(live), 128);
  for (int p = 0; p < EVENTRING_PHASE_COUNT; p++)
    ck_assert_str_eq(eventring_cursor_phase_name(live, p),
                     eventring_phase_name(p));
  for (int k = 0; k < EVENTRING_COUNTER_COUNT; k++)
    ck_assert_str_eq(eventring_cursor_counter_name(live, k),
                     eventring_counter_name(k));
  /* Past the listed ids, the file's own table names eventring's
   * extension ids, and nothing after them. */
  ck_assert_str_eq(eventring_cursor_phase_name(live, EVENTRING_PHASE_COUNT),
                   "major_roots_global");
  ck_assert_ptr_null(
      eventring_cursor_phase_name(live, EVENTRING_PHASE_COUNT + 7));
  ck_assert_ptr_null(
      eventring_cursor_counter_name(live, EVENTRING_COUNTER_COUNT + 6));
  ck_assert_str_eq(eventring_cursor_user_name(live, id_unit), "own.unit");
  ck_assert_str_eq(eventring_cursor_user_name(live, id_custom2),
                   "own.custom.odd");
  ck_assert_str_eq(eventring_cursor_user_name(live, 8000), "");
  ck_assert_ptr_null(eventring_cursor_user_name(live, 8192));
  /* The file says 5.3+ numbering; asking for 5.0 must not rename it. */
  eventring_cursor_set_ocaml50(live, 1);
  ck_assert_str_eq(eventring_cursor_phase_name(live, 11), "minor");

  struct reading r = {.c = live};
  size_t n = read_all(live, cb, &r);
  ck_assert_uint_eq(r.lost, 0);
  /* Domain 0: ring_start (data = pid) and the unit. */
  ck_assert_uint_eq(r.dom[0].n, 2);
  expect_life(&r.dom[0], 0, EVENTRING_LIFECYCLE_RING_START, getpid(), 1);
  ck_assert_int_eq(r.dom[0].v[1].kind, K_UNIT);
  size_t want_total = 2;
  for (int t = 0; t < NTHREADS; t++) {
    const struct evlist *g = &r.dom[t + 1];
    /* domain_spawn, the script, domain_terminate. */
    ck_assert_uint_eq(g->n, w[t].script.n + 2);
    expect_life(g, 0, EVENTRING_LIFECYCLE_DOMAIN_SPAWN, getpid(), 1);
    compare(t + 1, g, 1, &w[t].script, t0, t1);
    expect_life(g, g->n - 1, EVENTRING_LIFECYCLE_DOMAIN_TERMINATE, getpid(), 1);
    want_total += g->n;
  }
  ck_assert_uint_eq(n, want_total);
  ck_assert_uint_eq(r.events, want_total);

  /* Stop: the live cursor goes on reading the preserved file. */
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  ck_assert_str_eq(eventring_path(), path);
  ck_assert_int_eq(eventring_stop(), 0);
  uint64_t t2 = mono_ns();
  size_t before0 = r.dom[0].n;
  ck_assert_uint_eq(read_all(live, cb, &r), 1);
  ck_assert_uint_eq(r.dom[0].n, before0 + 1);
  expect_life(&r.dom[0], before0, EVENTRING_LIFECYCLE_RING_STOP, 0, 0);
  ck_assert_uint_le(r.dom[0].v[before0].ts, t2);
  eventring_cursor_free(live);
  reading_free(&r);

  /* The same file through (dir, pid), from the start. */
  eventring_cursor *c = NULL;
  rc = eventring_cursor_open(&c, dir, getpid());
  ck_assert_msg(rc == 0, "open (dir, pid): %s", eventring_strerror(rc));
  r = (struct reading){.c = c};
  ck_assert_uint_eq(read_all(c, cb, &r), want_total + 1);
  ck_assert_uint_eq(r.lost, 0);
  for (int t = 0; t < NTHREADS; t++)
    compare(t + 1, &r.dom[t + 1], 1, &w[t].script, t0, t1);
  eventring_cursor_free(c);
  reading_free(&r);

  /* (dir, 0) is this process's file in dir; dir NULL reads the
   * environment; no file is -ENOENT. */
  ck_assert_int_eq(eventring_cursor_open(&c, dir, 0), 0);
  eventring_cursor_free(c);
  ck_assert_int_eq(eventring_cursor_open(&c, NULL, getpid()), 0);
  eventring_cursor_free(c);
  ck_assert_int_eq(eventring_cursor_open(&c, dir, 1), -ENOENT);
  ck_assert_ptr_null(c);
  /* Tracing is stopped: "this process" has no file to read. */
  ck_assert_int_eq(eventring_cursor_open(&c, NULL, 0),
                   EVENTRING_E_NOTSTARTED);

  eventring_callbacks_free(cb);
  for (int t = 0; t < NTHREADS; t++) evlist_free(&w[t].script);
  er_rmdir(dir);
}
END_TEST

/* A cursor opened before any thread wrote reads the events as they come,
 * poll by poll, each exactly once. */
START_TEST(test_own_incremental) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  ck_assert_int_eq(eventring_start(), 0);
  int id = eventring_register("own.int", EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);
  eventring_cursor *c = NULL;
  ck_assert_int_eq(eventring_cursor_open(&c, NULL, 0), 0);
  eventring_callbacks *cb = all_callbacks();
  struct reading r = {.c = c};
  ck_assert_int_eq(eventring_cursor_poll(c, cb, &r, 0), 1); /* ring_start */
  int64_t next = 1;
  for (int round = 1; round <= 50; round++) {
    for (int k = 0; k < round; k++) eventring_write_int(id, next++);
    size_t before = r.dom[0].n;
    ck_assert_int_eq(eventring_cursor_poll(c, cb, &r, 0), round);
    for (int k = 0; k < round; k++) {
      const struct ev *e = &r.dom[0].v[before + (size_t)k];
      ck_assert_int_eq(e->kind, K_INT);
      ck_assert_int_eq(e->value, next - round + k);
    }
    ck_assert_int_eq(eventring_cursor_poll(c, cb, &r, 0), 0);
  }
  ck_assert_uint_eq(r.lost, 0);
  eventring_cursor_free(c);
  eventring_callbacks_free(cb);
  reading_free(&r);
  ck_assert_int_eq(eventring_stop(), 0);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_own(void) {
  TCase *tc = er_tcase("own");
  tcase_add_test(tc, test_own_file_event_for_event);
  tcase_add_test(tc, test_own_incremental);
  return tc;
}

ER_TEST_MAIN("consumer_own", tc_own)
