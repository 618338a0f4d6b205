/* Tests user event registration rules, name slots and custom payload round trips. */
#include <stdlib.h>
#include <string.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

static char *repeat(char c, size_t n) {
  char *s = malloc(n + 1);
  ck_assert_ptr_nonnull(s);
  memset(s, c, n);
  s[n] = '\0';
  return s;
}

START_TEST(test_same_name_same_id) {
  int a = eventring_register("u.a", EVENTRING_TYPE_INT);
  int b = eventring_register("u.b", EVENTRING_TYPE_INT);
  ck_assert_int_ge(a, 0);
  ck_assert_int_ge(b, 0);
  ck_assert_int_ne(a, b);
  ck_assert_int_eq(eventring_register("u.a", EVENTRING_TYPE_INT), a);
  ck_assert_int_eq(eventring_register("u.b", EVENTRING_TYPE_INT), b);
  /* The same name with another type is refused, for every other type. */
  ck_assert_int_eq(eventring_register("u.a", EVENTRING_TYPE_UNIT),
                   EVENTRING_E_EXISTS);
  ck_assert_int_eq(eventring_register("u.a", EVENTRING_TYPE_SPAN),
                   EVENTRING_E_EXISTS);
  ck_assert_int_eq(eventring_register("u.a", EVENTRING_TYPE_CUSTOM),
                   EVENTRING_E_EXISTS);
  /* and leaves the first registration alone. */
  ck_assert_int_eq(eventring_register("u.a", EVENTRING_TYPE_INT), a);
  /* Names are compared whole, not by prefix. */
  int ab = eventring_register("u.ab", EVENTRING_TYPE_UNIT);
  ck_assert_int_ge(ab, 0);
  ck_assert_int_ne(ab, a);
}
END_TEST

START_TEST(test_name_lengths) {
  ck_assert_int_eq(eventring_register("", EVENTRING_TYPE_INT),
                   EVENTRING_E_NAMETOOLONG);
  char *n128 = repeat('x', 128), *n127 = repeat('y', 127);
  char *n1000 = repeat('z', 1000);
  ck_assert_int_eq(eventring_register(n128, EVENTRING_TYPE_INT),
                   EVENTRING_E_NAMETOOLONG);
  ck_assert_int_eq(eventring_register(n1000, EVENTRING_TYPE_UNIT),
                   EVENTRING_E_NAMETOOLONG);
  int id = eventring_register(n127, EVENTRING_TYPE_INT);
  ck_assert_int_ge(id, 0);
  ck_assert_int_lt(id, EVENTRING_MAX_USER_EVENTS);
  ck_assert_int_eq(eventring_register("a", EVENTRING_TYPE_INT) >= 0, 1);
  free(n128);
  free(n127);
  free(n1000);
}
END_TEST

START_TEST(test_bad_type) {
  ck_assert_int_eq(eventring_register("t.bad", 3), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_register("t.bad", 5), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_register("t.bad", -1), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_register("t.bad", 1 << 20), EVENTRING_E_INVAL);
  /* The failed attempts reserved nothing: the name is still free. */
  ck_assert_int_ge(eventring_register("t.bad", EVENTRING_TYPE_SPAN), 0);
}
END_TEST

START_TEST(test_too_many) {
  static int seen[EVENTRING_MAX_USER_EVENTS];
  char name[32];
  for (int i = 0; i < EVENTRING_MAX_USER_EVENTS; i++) {
    snprintf(name, sizeof name, "many.%d", i);
    int id = eventring_register(name, i % 2 ? EVENTRING_TYPE_INT
                                            : EVENTRING_TYPE_UNIT);
    ck_assert_msg(id >= 0 && id < EVENTRING_MAX_USER_EVENTS,
                  "registration %d: %d (%s)", i, id, eventring_strerror(id));
    ck_assert_msg(!seen[id], "id %d given twice", id);
    seen[id] = 1;
  }
  ck_assert_int_eq(eventring_register("one.too.many", EVENTRING_TYPE_INT),
                   EVENTRING_E_TOOMANY);
  /* Known names still resolve when the table is full. */
  int again = eventring_register("many.7", EVENTRING_TYPE_INT);
  ck_assert_int_ge(again, 0);
  ck_assert_int_eq(eventring_register("many.7", EVENTRING_TYPE_INT), again);
}
END_TEST

/* The test's directory, with `path` (PATH_MAX bytes) its ring file's,
 * which the start to come keeps (OCAML_RUNTIME_EVENTS_PRESERVE is read
 * at start). */
static const char *preserved_ring(char *path) {
  const char *dir = er_tmpdir();
  er_ring_path(path, PATH_MAX, dir);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  return dir;
}

/* Names registered before and after the start land in their slots. */
START_TEST(test_names_in_file) {
  char path[PATH_MAX];
  const char *dir = preserved_ring(path);
  char *long_name = repeat('L', 127);
  int before = eventring_register("before.start", EVENTRING_TYPE_UNIT);
  int lng = eventring_register(long_name, EVENTRING_TYPE_SPAN);
  ck_assert_int_ge(before, 0);
  ck_assert_int_ge(lng, 0);
  ck_assert_int_eq(eventring_start(), 0);
  int after = eventring_register("after.start", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_ge(after, 0);
  ck_assert_int_eq(eventring_register("", EVENTRING_TYPE_UNIT),
                   EVENTRING_E_NAMETOOLONG);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_str_eq(rf_user_name(&f, (unsigned)before), "before.start");
  ck_assert_str_eq(rf_user_name(&f, (unsigned)after), "after.start");
  ck_assert_str_eq(rf_user_name(&f, (unsigned)lng), long_name);
  /* Exactly three slots are used. */
  int used = 0;
  for (unsigned i = 0; i < ER_NAME_SLOTS; i++) used += rf_user_name(&f, i) != 0;
  ck_assert_int_eq(used, 3);
  rf_close(&f);

  /* A second file (same process, restarted) gets every name again. */
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_stop(), 0);
  er_open_ring(path, &f);
  ck_assert_str_eq(rf_user_name(&f, (unsigned)before), "before.start");
  ck_assert_str_eq(rf_user_name(&f, (unsigned)after), "after.start");
  ck_assert_str_eq(rf_user_name(&f, (unsigned)lng), long_name);
  rf_close(&f);
  free(long_name);
  er_rmdir(dir);
}
END_TEST

static void fill(unsigned char *buf, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(seed * 31 + i * 7);
}

START_TEST(test_custom_round_trip) {
  char path[PATH_MAX];
  const char *dir = preserved_ring(path);
  int id = eventring_register("rt.custom", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_ge(id, 0);
  ck_assert_int_eq(eventring_start(), 0);
  static unsigned char buf[EVENTRING_MAX_CUSTOM_BYTES + 1];
  /* Lengths 0..20 cross every padding count twice, then the largest. */
  for (size_t len = 0; len <= 20; len++) {
    fill(buf, len, (unsigned)len);
    ck_assert_int_eq(eventring_write_custom(id, buf, len), 0);
  }
  fill(buf, EVENTRING_MAX_CUSTOM_BYTES, 99);
  ck_assert_int_eq(eventring_write_custom(id, buf, EVENTRING_MAX_CUSTOM_BYTES),
                   0);
  ck_assert_int_eq(
      eventring_write_custom(id, buf, EVENTRING_MAX_CUSTOM_BYTES + 1),
      EVENTRING_E_TOOBIG);
  ck_assert_int_eq(eventring_write_custom(id, buf, (size_t)-1),
                   EVENTRING_E_TOOBIG);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(rf_count(&f, -1, 1, ER_UEV_CUSTOM, -1), 22);
  ck_assert_uint_eq(r->nevents, 2 + 22);
  unsigned char want[EVENTRING_MAX_CUSTOM_BYTES];
  for (size_t k = 0; k < 22; k++) {
    const struct rf_event *e = &r->events[1 + k];
    size_t len = k <= 20 ? k : EVENTRING_MAX_CUSTOM_BYTES;
    fill(want, len, k <= 20 ? (unsigned)k : 99);
    ck_assert(e->is_user && e->type == ER_UEV_CUSTOM);
    ck_assert_uint_eq(e->id, (unsigned)id);
    ck_assert_uint_eq(e->len, 2 + (len + 8) / 8);
    ck_assert_uint_eq(e->custom_len, len);
    ck_assert_msg(memcmp(e->custom, want, len) == 0, "payload %zu differs",
                  len);
  }
  /* The largest payload is the largest event. */
  ck_assert_uint_eq(r->events[22].len, ER_MAX_EVENT_WORDS);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

START_TEST(test_too_big_when_off) {
  static unsigned char buf[EVENTRING_MAX_CUSTOM_BYTES + 1];
  int id = eventring_register("off.custom", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_eq(
      eventring_write_custom(id, buf, EVENTRING_MAX_CUSTOM_BYTES + 1),
      EVENTRING_E_TOOBIG);
  ck_assert_int_eq(eventring_write_custom(id, buf, 3), 0);
}
END_TEST

START_TEST(test_unregistered_ids) {
  char path[PATH_MAX];
  const char *dir = preserved_ring(path);
  int known = eventring_register("known", EVENTRING_TYPE_CUSTOM);
  ck_assert_int_ge(known, 0);
  ck_assert_int_eq(eventring_start(), 0);
  int bad[] = {known + 1, 500, EVENTRING_MAX_USER_EVENTS - 1,
               EVENTRING_MAX_USER_EVENTS, -1, 1 << 30};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    eventring_write_unit(bad[i]);
    eventring_write_int(bad[i], 7);
    eventring_write_span(bad[i], 0);
    eventring_write_span(bad[i], 1);
    ck_assert_int_eq(eventring_write_custom(bad[i], "abc", 3),
                     EVENTRING_E_INVAL);
  }
  ck_assert_int_eq(eventring_write_custom(known, "ok", 2), 0);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[0];
  /* ring_start, the one valid custom event, ring_stop. */
  ck_assert_uint_eq(r->nevents, 3);
  ck_assert_uint_eq(r->events[1].id, (unsigned)known);
  ck_assert_uint_eq(r->events[1].custom_len, 2);
  for (uint64_t d = 1; d < f.max_domains; d++)
    ck_assert_uint_eq(f.rings[d].nevents, 0);
  rf_close(&f);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_register(void) {
  TCase *tc = er_tcase("register");
  tcase_add_test(tc, test_same_name_same_id);
  tcase_add_test(tc, test_name_lengths);
  tcase_add_test(tc, test_bad_type);
  tcase_add_test(tc, test_too_many);
  return tc;
}

static TCase *tc_write(void) {
  TCase *tc = er_tcase("write");
  tcase_add_test(tc, test_names_in_file);
  tcase_add_test(tc, test_custom_round_trip);
  tcase_add_test(tc, test_too_big_when_off);
  tcase_add_test(tc, test_unregistered_ids);
  return tc;
}

ER_TEST_MAIN("user_events", tc_register, tc_write)
