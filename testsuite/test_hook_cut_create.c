/* Tests that the owner cutting a ring file while tracing fills it in (between its mmap() and its first stores) no longer kills the program: the file is repaired, tracing starts, and the program goes on. */
/* The cut is forced with the test hook (ER_TEST_HOOKS, Makefile.in) at the
 * point where the new file is mapped and not yet written: before the fix
 * the SIGBUS handler guarded the file only once it was filled in. */
#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "testlib.h"

static int cut_done;

static int hook(enum er_hook h) {
  if (h == ER_HOOK_FILE_MAPPED && !cut_done)
    cut_done = truncate(er_st.path, 0) == 0;
  return 0;
}

START_TEST(test_cut_while_created) {
  if (er_tracing_off()) ER_SKIP("a build without tracing");
  er_tmpdir();
  er_test_hook = hook;
  struct er_capture cap;
  er_stderr_begin(&cap);
  int started = eventring_start();
  eventring_begin(EVENTRING_PHASE_MAJOR);
  eventring_end(EVENTRING_PHASE_MAJOR);
  int stopped = eventring_stop();
  char *err = er_stderr_end(&cap);
  ck_assert_msg(cut_done, "the file was not cut while it was made");
  ck_assert_int_eq(started, 0);
  ck_assert_int_eq(stopped, 0);
  ck_assert_msg(strstr(err, "was truncated while the program ran"),
                "stderr: %s", err);
  free(err);
  /* Tracing starts again, with a file that is whole this time. */
  ck_assert_int_eq(eventring_start(), 0);
  eventring_begin(EVENTRING_PHASE_MINOR);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

static TCase *tc_cut_create(void) {
  TCase *tc = er_tcase("cut_create");
  tcase_add_test(tc, test_cut_while_created);
  return tc;
}

ER_TEST_MAIN("hook_cut_create", tc_cut_create)
