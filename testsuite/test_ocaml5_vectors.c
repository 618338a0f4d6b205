/* Tests that the test decoder reads real OCaml 5 ring files exactly as OCaml 5's own consumer does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testlib.h"

/* The vectors' .expected files were printed by OCaml's read_poll, which
 * walks domain 0's ring to its tail, then domain 1's, and so on (the
 * files were quiescent when read), so printing our decode in domain order
 * must give the same lines.  lost_events and SUMMARY lines are the
 * consumer's bookkeeping, not events, and are left out; ring_stop's value
 * is a stale word in 5.2 (FORMAT.md's quirk), so only its prefix up to
 * "value=" is compared. */

/* Event lines of an .expected file, in order. */
static struct er_lines read_expected(const char *path) {
  struct er_lines all = er_lines_read(path), l = {0};
  for (size_t i = 0; i < all.n; i++)
    if (!strncmp(all.v[i], "domain=", 7) &&
        !strstr(all.v[i], " kind=lost_events"))
      er_lines_push(&l, all.v[i], strlen(all.v[i]));
  er_lines_free(&all);
  return l;
}

/* Our decode printed in domain order, one line per event. */
static struct er_lines print_decoded(const struct rf_file *f, int phases50) {
  struct er_lines l = {0};
  for (uint64_t d = 0; d < f->max_domains; d++) {
    const struct rf_ring *r = &f->rings[d];
    for (size_t i = 0; i < r->nevents; i++) {
      char *buf = NULL;
      size_t len = 0;
      FILE *m = open_memstream(&buf, &len);
      ck_assert_ptr_nonnull(m);
      rf_print_event(m, f, &r->events[i], phases50);
      fclose(m);
      ck_assert_msg(len > 0 && buf[len - 1] == '\n',
                    "rf_print_event printed no line");
      er_lines_push(&l, buf, len - 1);
      free(buf);
    }
  }
  return l;
}

/* Decompresses data/NAME.events.gz into a private temp dir and decodes
 * it.  Returns 0 when the data directory is unknown (the caller skips). */
static int open_vector(const char *name, struct rf_file *f, char *tmp,
                       size_t tmpn, char *expected, size_t expn) {
  const char *data = er_env_dir("EVENTRING_TEST_DATA");
  if (!data) return 0;
  ck_assert_uint_ge(tmpn, PATH_MAX);
  snprintf(expected, expn, "%s/%s.expected", data, name);
  er_unpack_vector(er_tmpdir(), name, tmp);
  er_open_ring(tmp, f);
  return 1;
}

/* open_vector() into `f`, `tmp` and `expected` (arrays), or skips the
 * test when the vectors are not there. */
#define NEED_VECTOR(name, f, tmp, expected)                                \
  do {                                                                     \
    if (!open_vector(name, f, tmp, sizeof tmp, expected, sizeof expected)) \
      ER_SKIP("EVENTRING_TEST_DATA is not set");                           \
  } while (0)

/* Closes what open_vector() opened and removes the unpacked copy and
 * its directory. */
static void close_vector(struct rf_file *f, const char *tmp) {
  rf_close(f);
  unlink(tmp);
  rmdir(getenv("OCAML_RUNTIME_EVENTS_DIR"));
}

static void check_vector(const char *name, int phases50) {
  struct rf_file f;
  char tmp[PATH_MAX], expected[PATH_MAX];
  NEED_VECTOR(name, &f, tmp, expected);
  ck_assert_int_eq(f.has_ext, 0); /* OCaml writes no extension block */
  struct er_lines want = read_expected(expected);
  struct er_lines got = print_decoded(&f, phases50);
  ck_assert_msg(want.n > 100, "%s has only %zu event lines", expected, want.n);
  er_lines_compare(name, &got, &want, 0);
  er_lines_free(&want);
  er_lines_free(&got);
  close_vector(&f, tmp);
}

START_TEST(test_ocaml52_basic) { check_vector("ocaml5-basic", 1); }
END_TEST

START_TEST(test_ocaml52_multidomain) {
  check_vector("ocaml5-multidomain", 1);
}
END_TEST

START_TEST(test_ocaml54_basic) { check_vector("ocaml54-basic", 0); }
END_TEST

START_TEST(test_ocaml54_multidomain) {
  check_vector("ocaml54-multidomain", 0);
}
END_TEST

/* The same 5.2 file named with the 5.3+ table must differ: the phase
 * numbering is what the phases50 switch is for, and this shows the
 * vectors exercise it (a decoder ignoring the switch would fail here or
 * in test_ocaml52_basic). */
START_TEST(test_numbering_matters) {
  struct rf_file f;
  char tmp[PATH_MAX], expected[PATH_MAX];
  NEED_VECTOR("ocaml5-basic", &f, tmp, expected);
  struct er_lines want = read_expected(expected);
  struct er_lines got = print_decoded(&f, 0);
  ck_assert_uint_eq(got.n, want.n);
  size_t differ = 0;
  for (size_t i = 0; i < got.n; i++)
    differ += strcmp(got.v[i], want.v[i]) != 0 && !er_is_ring_stop(want.v[i]);
  ck_assert_msg(differ > 10, "only %zu lines differ with 5.3+ names", differ);
  er_lines_free(&want);
  er_lines_free(&got);
  close_vector(&f, tmp);
}
END_TEST

/* ocaml5-wrapped: 5000 int events went through a 1024-word ring, so the
 * head has moved far past 0 and OCaml's reader, starting at 0, first
 * reported lost words and then read the events from the head to the tail.
 * Every event line of the .expected is therefore one still in the ring,
 * and the whole of our decode (which starts at the head) is comparable
 * with the expected event lines: the lost ones are in neither.  The
 * lost_events value (14002) is in ring words, OCaml 5.2's unit, and must
 * equal the head position, which is what we check it against. */
START_TEST(test_ocaml52_wrapped) {
  struct rf_file f;
  char tmp[PATH_MAX], expected[PATH_MAX];
  NEED_VECTOR("ocaml5-wrapped", &f, tmp, expected);
  ck_assert_uint_eq(f.ring_words, 1024);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_eq(r->head, 14002); /* the lost_events line's value */
  ck_assert_uint_le(r->tail - r->head, 1024);
  /* The oldest events (ring_start, ints 1..4662) are gone. */
  ck_assert_uint_eq(rf_count(&f, 0, 0, 1, 0), 0);
  ck_assert_uint_eq(rf_count(&f, 0, 1, 1, -1), 5000 - 4662);
  ck_assert_uint_eq(rf_count(&f, -1, 1, 4, -1), 1);

  struct er_lines want = read_expected(expected);
  struct er_lines got = print_decoded(&f, 1);
  ck_assert_str_eq(want.v[0],
                   "domain=0 ts=1300819377514 kind=user_int name=t.int "
                   "value=4663");
  er_lines_compare("ocaml5-wrapped", &got, &want, 0);
  er_lines_free(&want);
  er_lines_free(&got);
  close_vector(&f, tmp);
}
END_TEST

/* Spot checks of the decoded values themselves, independent of the
 * printer: ring_start carries the writer's pid, the 21 custom payloads
 * have lengths 0..20, and the int extremes are as OCaml 5.2 stored them:
 * its writer passes the value through a 32-bit C int, so -42 survives but
 * max_int and min_int arrive as -1 and 0 (its reader prints them so). */
START_TEST(test_ocaml52_basic_values) {
  struct rf_file f;
  char tmp[PATH_MAX], expected[PATH_MAX];
  NEED_VECTOR("ocaml5-basic", &f, tmp, expected);
  const struct rf_ring *r = &f.rings[0];
  ck_assert_uint_gt(r->nevents, 600);
  const struct rf_event *e = &r->events[0];
  ck_assert(!e->is_user && e->type == 1 && e->id == 0);
  ck_assert_uint_eq(e->payload[0], 22327);
  size_t ncustom = 0, nint = 0;
  int saw_neg = 0, saw_max = 0, saw_min = 0;
  for (size_t i = 0; i < r->nevents; i++) {
    e = &r->events[i];
    if (i > 0) ck_assert_uint_ge(e->ts, r->events[i - 1].ts);
    if (e->is_user && e->type == 4) {
      ck_assert_uint_eq(e->custom_len, ncustom);
      for (size_t k = 0; k < e->custom_len; k++)
        ck_assert_int_eq(e->custom[k], 'a' + (int)k);
      ck_assert_str_eq(rf_user_name(&f, e->id), "t.custom");
      ncustom++;
    }
    if (e->is_user && e->type == 1) {
      /* Ints 1..100, then -42, max_int, min_int in that order. */
      int64_t v = (int64_t)e->payload[0];
      if (nint < 100) ck_assert_int_eq(v, (int64_t)nint + 1);
      saw_neg |= nint == 100 && v == -42;
      saw_max |= nint == 101 && v == -1;
      saw_min |= nint == 102 && v == 0;
      nint++;
    }
  }
  ck_assert_uint_eq(ncustom, 21);
  ck_assert_uint_eq(nint, 103);
  ck_assert(saw_neg && saw_max && saw_min);
  ck_assert_uint_eq(rf_count(&f, 0, 1, 0, -1), 5);
  ck_assert_uint_eq(rf_count(&f, 0, 1, 2, -1), 10);
  ck_assert_uint_eq(rf_count(&f, 0, 1, 3, -1), 10);
  close_vector(&f, tmp);
}
END_TEST

/* A file with another version is refused, and so is one cut short: the
 * decoder must say no rather than read past the end. */
START_TEST(test_malformed_refused) {
  struct rf_file f;
  char tmp[PATH_MAX], expected[PATH_MAX], err[256];
  NEED_VECTOR("ocaml5-basic", &f, tmp, expected);
  rf_close(&f);
  FILE *fp = fopen(tmp, "r+");
  ck_assert_ptr_nonnull(fp);
  uint64_t two = 2;
  ck_assert_uint_eq(fwrite(&two, 8, 1, fp), 1);
  fclose(fp);
  ck_assert_int_eq(rf_open(tmp, &f, err), -1);
  ck_assert_msg(strstr(err, "version") != NULL, "message: %s", err);
  ck_assert_int_eq(truncate(tmp, 4096), 0);
  ck_assert_int_eq(rf_open(tmp, &f, err), -1);
  unlink(tmp);
  rmdir(getenv("OCAML_RUNTIME_EVENTS_DIR"));
}
END_TEST

static TCase *tc_vectors(void) {
  TCase *tc = er_tcase("vectors");
  tcase_add_test(tc, test_ocaml52_basic);
  tcase_add_test(tc, test_ocaml52_multidomain);
  tcase_add_test(tc, test_ocaml52_wrapped);
  tcase_add_test(tc, test_ocaml54_basic);
  tcase_add_test(tc, test_ocaml54_multidomain);
  tcase_add_test(tc, test_numbering_matters);
  tcase_add_test(tc, test_ocaml52_basic_values);
  tcase_add_test(tc, test_malformed_refused);
  return tc;
}

ER_TEST_MAIN("ocaml5_vectors", tc_vectors)
