/* Tests that every probe and user event type is recorded exactly, in order, with sane timestamps. */
#include <string.h>
#include <time.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What one event should be. */
struct want {
  int user;
  unsigned type, id, len;
  int has_value;
  uint64_t value;
  const char *custom; /* user custom events: the payload, NUL-free */
};

#define RT(t, i, l) {0, (t), (i), (l), 0, 0, NULL}
#define RT1(t, i, v) {0, (t), (i), 3, 1, (uint64_t)(v), NULL}
#define US(t, i, l) {1, (t), (unsigned)(i), (l), 0, 0, NULL}
#define US1(t, i, v) {1, (t), (unsigned)(i), 3, 1, (uint64_t)(v), NULL}
#define CU(i, s) {1, ER_UEV_CUSTOM, (unsigned)(i), 2 + (unsigned)ER_CUSTOM_WORDS(sizeof(s) - 1), 0, 0, (s)}

static void check_event(const struct rf_event *e, const struct want *w,
                        size_t i) {
  ck_assert_msg(e->is_user == w->user && e->type == w->type && e->id == w->id,
                "event %zu: user %d type %u id %u, want user %d type %u id %u",
                i, e->is_user, e->type, e->id, w->user, w->type, w->id);
  ck_assert_msg(e->len == w->len, "event %zu: length %u, want %u", i, e->len,
                w->len);
  if (w->has_value)
    ck_assert_msg(e->payload[0] == w->value,
                  "event %zu: value %#llx, want %#llx", i,
                  (unsigned long long)e->payload[0],
                  (unsigned long long)w->value);
  if (w->custom) {
    size_t n = strlen(w->custom);
    ck_assert_msg(e->custom_len == n, "event %zu: %zu custom bytes, want %zu",
                  i, e->custom_len, n);
    ck_assert_msg(memcmp(e->custom, w->custom, n) == 0,
                  "event %zu: custom bytes differ", i);
  }
}

START_TEST(test_every_probe) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1); /* read at start */

  /* Some names are registered before the start, some after. */
  int u_unit = eventring_register("p.unit", EVENTRING_TYPE_UNIT);
  int u_int = eventring_register("p.int", EVENTRING_TYPE_INT);
  ck_assert_int_ge(u_unit, 0);
  ck_assert_int_ge(u_int, 0);

  uint64_t t0 = now_ns();
  ck_assert_int_eq(eventring_start(), 0);
  int u_span = eventring_register("p.span", EVENTRING_TYPE_SPAN);
  int u_custom = eventring_register("p.custom", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_ge(u_span, 0);
  ck_assert_int_ge(u_custom, 0);

  eventring_begin(EVENTRING_PHASE_EXPLICIT_GC_SET); /* id 0 */
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_counter(EVENTRING_COUNTER_FORCE_MINOR_ALLOC_SMALL, 0);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, 12345);
  eventring_counter(EVENTRING_COUNTER_MAJOR_HEAP_WORDS, UINT64_C(1) << 62);
  eventring_counter(EVENTRING_COUNTER_MAJOR_SLICE_BUDGET, UINT64_MAX);
  eventring_end(EVENTRING_PHASE_MINOR);
  eventring_begin(EVENTRING_PHASE_EMPTY_MINOR); /* the highest id, 48 */
  eventring_end(EVENTRING_PHASE_EMPTY_MINOR);
  eventring_end(EVENTRING_PHASE_EXPLICIT_GC_SET);
  eventring_lifecycle(EVENTRING_LIFECYCLE_FORK_PARENT, 4242);
  eventring_lifecycle(EVENTRING_LIFECYCLE_FORK_CHILD, -1);
  eventring_write_unit(u_unit);
  eventring_write_int(u_int, 0);
  eventring_write_int(u_int, -1);
  eventring_write_int(u_int, INT64_MAX);
  eventring_write_int(u_int, INT64_MIN);
  eventring_write_span(u_span, 0);
  eventring_write_span(u_span, 1);
  ck_assert_int_eq(eventring_write_custom(u_custom, "", 0), 0);
  ck_assert_int_eq(eventring_write_custom(u_custom, "hello", 5), 0);
  ck_assert_int_eq(eventring_write_custom(u_custom, "8 bytes!", 8), 0);
  ck_assert_int_eq(eventring_write_custom(u_custom, "\"\\\n\x01\xff", 5), 0);
  uint64_t t1 = now_ns();
  ck_assert_int_eq(eventring_stop(), 0);
  uint64_t t2 = now_ns();

  const struct want want[] = {
    RT1(ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_START, getpid()),
    RT(ER_EV_BEGIN, 0, 2),
    RT(ER_EV_BEGIN, EVENTRING_PHASE_MINOR, 2),
    RT1(ER_EV_COUNTER, 0, 0),
    RT1(ER_EV_COUNTER, EVENTRING_COUNTER_MINOR_PROMOTED, 12345),
    RT1(ER_EV_COUNTER, EVENTRING_COUNTER_MAJOR_HEAP_WORDS, UINT64_C(1) << 62),
    RT1(ER_EV_COUNTER, EVENTRING_COUNTER_MAJOR_SLICE_BUDGET, UINT64_MAX),
    RT(ER_EV_END, EVENTRING_PHASE_MINOR, 2),
    RT(ER_EV_BEGIN, 48, 2),
    RT(ER_EV_END, 48, 2),
    RT(ER_EV_END, 0, 2),
    RT1(ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_FORK_PARENT, 4242),
    RT1(ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_FORK_CHILD, UINT64_MAX),
    US(ER_UEV_UNIT, u_unit, 2),
    US1(ER_UEV_INT, u_int, 0),
    US1(ER_UEV_INT, u_int, UINT64_MAX),
    US1(ER_UEV_INT, u_int, INT64_MAX),
    US1(ER_UEV_INT, u_int, (uint64_t)1 << 63),
    US(ER_UEV_SPAN_BEGIN, u_span, 2),
    US(ER_UEV_SPAN_END, u_span, 2),
    CU(u_custom, ""),
    CU(u_custom, "hello"),
    CU(u_custom, "8 bytes!"),
    CU(u_custom, "\"\\\n\x01\xff"),
    RT1(ER_EV_LIFECYCLE, EVENTRING_LIFECYCLE_RING_STOP, 0),
  };
  const size_t nwant = sizeof want / sizeof want[0];

  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, nwant);
  uint64_t words = 0;
  for (size_t i = 0; i < nwant; i++) {
    const struct rf_event *e = &r->events[i];
    check_event(e, &want[i], i);
    words += e->len;
    ck_assert_msg(e->ts >= t0, "event %zu: ts %llu before start %llu", i,
                  (unsigned long long)e->ts, (unsigned long long)t0);
    ck_assert_msg(e->ts <= (i + 1 < nwant ? t1 : t2),
                  "event %zu: ts %llu after the last probe", i,
                  (unsigned long long)e->ts);
    if (i > 0) ck_assert_uint_ge(e->ts, r->events[i - 1].ts);
  }
  /* "8 bytes!" needs a second payload word for the padding count. */
  ck_assert_uint_eq(r->events[22].len, 4);
  ck_assert_uint_eq(r->events[21].len, 3);
  /* Nothing else anywhere, and the header words agree. */
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE, -1), 4);
  for (uint64_t d = 1; d < f.max_domains; d++)
    ck_assert_uint_eq(f.rings[d].nevents, 0);
  ck_assert_uint_eq(r->head, 0);
  ck_assert_uint_eq(r->tail, words);
  ck_assert_uint_eq(r->written, nwant);
  ck_assert_uint_eq(r->evicted, 0);
  ck_assert_str_eq(rf_user_name(&f, (unsigned)u_unit), "p.unit");
  ck_assert_str_eq(rf_user_name(&f, (unsigned)u_int), "p.int");
  ck_assert_str_eq(rf_user_name(&f, (unsigned)u_span), "p.span");
  ck_assert_str_eq(rf_user_name(&f, (unsigned)u_custom), "p.custom");
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

/* The printer gives these events the lines OCaml's reader would. */
START_TEST(test_printed_like_ocaml) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1); /* read at start */
  ck_assert_int_eq(eventring_start(), 0);
  int c = eventring_register("q.custom", EVENTRING_TYPE_CUSTOM);
  int n = eventring_register("q.int", EVENTRING_TYPE_INT);
  eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
  eventring_counter(EVENTRING_COUNTER_MINOR_ALLOCATED, 77);
  eventring_write_int(n, -5);
  eventring_write_custom(c, "a\"b\tc\x7f", 6);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, 6);
  const char *want[] = {
    "kind=lifecycle name=ring_start value=%d\n",
    "kind=runtime_begin name=major_slice value=-\n",
    "kind=runtime_counter name=minor_allocated value=77\n",
    "kind=user_int name=q.int value=-5\n",
    "kind=user_custom name=q.custom value=\"a\\\"b\\tc\\127\"\n",
    "kind=lifecycle name=ring_stop value=-\n",
  };
  for (size_t i = 0; i < 6; i++) {
    char *buf = NULL, expect[256], tail[200];
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    rf_print_event(m, &f, &r->events[i], 0);
    fclose(m);
    snprintf(tail, sizeof tail, want[i], (int)getpid());
    snprintf(expect, sizeof expect, "domain=0 ts=%llu %s",
             (unsigned long long)r->events[i].ts, tail);
    ck_assert_str_eq(buf, expect);
    free(buf);
  }
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

/* Probes before the start and after the stop write nothing anywhere. */
START_TEST(test_probes_when_off) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  er_ring_path(path, sizeof path, dir);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1); /* read at start */
  int u = eventring_register("off.int", EVENTRING_TYPE_INT);
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_write_int(u, 1);
  ck_assert_int_eq(eventring_write_custom(u, "x", 1), 0);
  ck_assert_int_eq(eventring_start(), 0);
  eventring_write_int(u, 2);
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_end(EVENTRING_PHASE_MINOR);
  eventring_write_int(u, 3);

  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->nevents, 3);
  ck_assert_uint_eq(r->events[1].payload[0], 2);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_BEGIN, -1), 0);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_END, -1), 0);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_probes(void) {
  TCase *tc = er_tcase("probes");
  tcase_add_test(tc, test_every_probe);
  tcase_add_test(tc, test_printed_like_ocaml);
  tcase_add_test(tc, test_probes_when_off);
  return tc;
}

ER_TEST_MAIN("probes", tc_probes)
