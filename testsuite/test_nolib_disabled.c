/* With EVENTRING_DISABLED every probe compiles to nothing (no library
 * call, no argument evaluated) and every function is a stub that needs
 * no library. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Every function of eventring.h, called as a program would, links without
 * libeventring and lets the program run on untraced (test_nolib_api.sh
 * checks that each function the header declares is called here). */
START_TEST(test_functions_are_stubs) {
  /* Every code is described as the library describes it. */
  ck_assert_str_eq(eventring_strerror(EVENTRING_E_DISABLED),
                   "eventring was built with tracing disabled");
  ck_assert_str_eq(eventring_strerror(0), "success");
  ck_assert_str_eq(eventring_strerror(-ENOENT), strerror(ENOENT));
  ck_assert_str_eq(eventring_strerror(-99999), "unknown eventring error");
  ck_assert_ptr_null(eventring_phase_name(EVENTRING_PHASE_MINOR));
  ck_assert_ptr_null(eventring_counter_name(0));
  ck_assert_ptr_null(eventring_lifecycle_name(0));

  /* Tracing cannot start; the rest of the control answers "off". */
  ck_assert_int_eq(eventring_start(), EVENTRING_E_DISABLED);
  ck_assert_int_eq(eventring_is_active(), 0);
  eventring_pause();
  eventring_resume();
  ck_assert_int_eq(eventring_is_active(), 0);
  ck_assert_ptr_null(eventring_path());
  ck_assert_int_eq(eventring_snapshot("/tmp/never-made.events"),
                   EVENTRING_E_DISABLED);
  ck_assert_int_eq(access("/tmp/never-made.events", F_OK), -1);
  ck_assert_int_eq(eventring_stop(), EVENTRING_E_NOTSTARTED);
  ck_assert_int_eq(eventring_remote_pause(NULL, getpid()),
                   EVENTRING_E_DISABLED);
  ck_assert_int_eq(eventring_remote_resume(NULL, getpid()),
                   EVENTRING_E_DISABLED);
  ck_assert_int_eq(eventring_remote_hold(NULL, getpid()),
                   EVENTRING_E_DISABLED);
  ck_assert_int_eq(eventring_remote_unhold(NULL, getpid()),
                   EVENTRING_E_DISABLED);
  ck_assert_int_eq(eventring_remote_state(NULL, getpid()),
                   EVENTRING_E_DISABLED);

  /* eventring_fork() still forks. */
  pid_t child = eventring_fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) _exit(eventring_is_active() ? 1 : 42);
  int status = 0;
  ck_assert_int_eq(waitpid(child, &status, 0), child);
  ck_assert(WIFEXITED(status));
  ck_assert_int_eq(WEXITSTATUS(status), 42);

  /* What only shapes the trace succeeds, checking what it is given. */
  ck_assert_int_eq(eventring_domain_bind(3), 0);
  ck_assert_int_eq(eventring_domain_bind(-1), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_domain_join(0), 0);
  ck_assert_int_eq(eventring_domain_id(), -1);
  eventring_domain_release();
  eventring_thread_id(7);
  ck_assert_int_eq(eventring_thread_name("worker"), 0);
  ck_assert_int_eq(eventring_thread_name(NULL), 0);
  char long_name[200];
  memset(long_name, 'x', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = 0;
  ck_assert_int_eq(eventring_thread_name(long_name), EVENTRING_E_NAMETOOLONG);
  eventring_domain_name("slot");
  eventring_record_cmdline(1);
  eventring_set_ocaml_version("4.14.2");

  /* A valid registration gives an id the probes take. */
  int id = eventring_register("requests", EVENTRING_TYPE_SPAN);
  ck_assert_int_ge(id, 0);
  eventring_write_span(id, 0);
  eventring_write_span(id, 1);
  ck_assert_int_eq(eventring_register("", EVENTRING_TYPE_UNIT),
                   EVENTRING_E_NAMETOOLONG);
  ck_assert_int_eq(eventring_register(long_name, EVENTRING_TYPE_UNIT),
                   EVENTRING_E_NAMETOOLONG);
  ck_assert_int_eq(eventring_register("x", 3), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_register(NULL, EVENTRING_TYPE_INT),
                   EVENTRING_E_INVAL);

  /* No cursor opens; the accessors answer as for a NULL cursor. */
  eventring_cursor *c = (eventring_cursor *)1;
  ck_assert_int_eq(eventring_cursor_open(&c, NULL, 0), EVENTRING_E_DISABLED);
  ck_assert_ptr_null(c);
  c = (eventring_cursor *)1;
  ck_assert_int_eq(eventring_cursor_open_file(&c, "x.events"),
                   EVENTRING_E_DISABLED);
  ck_assert_ptr_null(c);
  ck_assert_int_eq(eventring_cursor_set_numbering(c, 0), EVENTRING_E_INVAL);
  int basis = 5;
  ck_assert_int_eq(eventring_cursor_numbering(c, &basis), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_cursor_set_ocaml50(c, 1), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_cursor_ocaml_release(c, NULL, NULL),
                   EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_cursor_lost_unit(c), EVENTRING_LOST_WORDS);
  ck_assert_ptr_null(eventring_cursor_phase_name(c, 0));
  ck_assert_ptr_null(eventring_cursor_counter_name(c, 0));
  ck_assert_ptr_null(eventring_cursor_user_name(c, 0));
  ck_assert_int_eq(eventring_cursor_max_domains(c), 0);
  ck_assert_int_eq(eventring_cursor_writer_pid(c), 0);
  ck_assert_ptr_null(eventring_cursor_program(c));
  ck_assert_ptr_null(eventring_cursor_cmdline(c));
  ck_assert_ptr_null(eventring_cursor_ocaml_version(c));
  const char *ln, *lv;
  ck_assert_int_eq(eventring_cursor_label(c, 0, &ln, &lv), EVENTRING_E_INVAL);
  eventring_wallclock wc;
  ck_assert_int_eq(eventring_cursor_wallclock(c, EVENTRING_WALLCLOCK_START,
                                              &wc),
                   EVENTRING_E_INVAL);
  eventring_slot_thread st;
  ck_assert_int_eq(eventring_cursor_slot_thread(c, 0, &st), EVENTRING_E_INVAL);
  uint64_t count = 0;
  ck_assert_int_eq(eventring_cursor_dropped(c, 0, &count), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_cursor_malformed(c, 0, &count),
                   EVENTRING_E_INVAL);

  /* A set of callbacks is made (not NULL: no "out of memory") and taken. */
  eventring_callbacks *cb = eventring_callbacks_create();
  ck_assert_ptr_nonnull(cb);
  eventring_callbacks_set_runtime_begin(cb, NULL);
  eventring_callbacks_set_runtime_end(cb, NULL);
  eventring_callbacks_set_runtime_counter(cb, NULL);
  eventring_callbacks_set_alloc(cb, NULL);
  eventring_callbacks_set_lifecycle(cb, NULL);
  eventring_callbacks_set_user_unit(cb, NULL);
  eventring_callbacks_set_user_int(cb, NULL);
  eventring_callbacks_set_user_span(cb, NULL);
  eventring_callbacks_set_user_custom(cb, NULL);
  eventring_callbacks_set_lost_events(cb, NULL);
  eventring_callbacks_set_thread(cb, NULL);
  eventring_callbacks_set_window(cb, NULL);
  ck_assert_int_eq(eventring_cursor_poll(c, cb, NULL, 0), EVENTRING_E_INVAL);
  eventring_callbacks_free(cb);
  eventring_cursor_free(c);
}
END_TEST

static TCase *tc_disabled(void) {
  TCase *tc = er_tcase("disabled");
  tcase_add_test(tc, test_probes_vanish);
  tcase_add_test(tc, test_probes_are_expressions);
  tcase_add_test(tc, test_functions_are_stubs);
  return tc;
}

ER_TEST_MAIN("nolib_disabled", tc_disabled)
