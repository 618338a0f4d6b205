/* With EVENTRING_DISABLED every probe compiles to nothing: no library call, no argument evaluated. */
#include "eventring.h"
#include "harness.h"

#ifndef EVENTRING_DISABLED
#error "test_nolib_disabled must be compiled with -DEVENTRING_DISABLED"
#endif

/* Counts its calls; a probe that evaluated its arguments would call it. */
static int evaluations;

static int bump(void) { return ++evaluations; }

START_TEST(test_probes_vanish) {
  /* Referenced only inside probe arguments, which vanish. */
  unsigned char buf[16] ER_UNUSED = {0};
  evaluations = 0;
  eventring_begin((eventring_phase)bump());
  eventring_end((eventring_phase)bump());
  eventring_counter((eventring_counter_id)bump(), (uint64_t)bump());
  eventring_lifecycle((eventring_lifecycle_kind)bump(), bump());
  eventring_write_unit(bump());
  eventring_write_int(bump(), bump());
  eventring_write_span(bump(), bump());
  eventring_alloc((uint64_t)bump());
  eventring_alloc_flush();
  int rc = eventring_write_custom(bump(), buf + bump(), (size_t)bump());
  ck_assert_int_eq(rc, 0);
  /* Even a payload over the limit is not looked at. */
  ck_assert_int_eq(eventring_write_custom(0, buf, (size_t)-1), 0);
  ck_assert_int_eq(evaluations, 0);
  /* The counter does count when the function is really called. */
  bump();
  ck_assert_int_eq(evaluations, 1);
}
END_TEST

/* The probes are usable as statements and expressions anywhere a call
 * would be, for example as the body of an if without braces. */
START_TEST(test_probes_are_expressions) {
  evaluations = 0;
  if (evaluations == 0)
    eventring_begin(EVENTRING_PHASE_MINOR);
  else
    eventring_end(EVENTRING_PHASE_MINOR);
  for (int i = 0; i < 3; i++) eventring_write_int(i, bump());
  int sum = eventring_write_custom(1, "x", 1) + eventring_write_custom(2, "", 0);
  ck_assert_int_eq(sum, 0);
  ck_assert_int_eq(evaluations, 0);
}
END_TEST

static TCase *tc_disabled(void) {
  TCase *tc = er_tcase("disabled");
  tcase_add_test(tc, test_probes_vanish);
  tcase_add_test(tc, test_probes_are_expressions);
  return tc;
}

ER_TEST_MAIN("nolib_disabled", tc_disabled)
