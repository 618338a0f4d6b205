/* Tests the vocabulary names and error strings against FORMAT.md's lists. */
#include <errno.h>
#include <string.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

/* FORMAT.md's lists, copied here by hand as the oracle: the library's
 * tables must agree with the contract, not with themselves. */
static const char *const phases_53[] = {
  "explicit_gc_set", "explicit_gc_stat", "explicit_gc_minor",
  "explicit_gc_major", "explicit_gc_full_major", "explicit_gc_compact",
  "major", "major_sweep", "major_mark_roots", "major_memprof_roots",
  "major_mark", "minor", "minor_local_roots", "minor_memprof_roots",
  "minor_memprof_clean", "minor_finalized", "explicit_gc_major_slice",
  "finalise_update_first", "finalise_update_last", "interrupt_remote",
  "major_ephe_mark", "major_ephe_sweep", "major_finish_marking",
  "major_gc_cycle_domains", "major_gc_phase_change", "major_gc_stw",
  "major_mark_opportunistic", "major_slice", "major_finish_cycle",
  "minor_clear", "minor_finalizers_oldify", "minor_global_roots",
  "minor_leave_barrier", "stw_api_barrier", "stw_handler", "stw_leader",
  "major_finish_sweeping", "major_memprof_clean", "minor_finalizers_admin",
  "minor_remembered_set", "minor_remembered_set_promote",
  "minor_local_roots_promote", "domain_condition_wait",
  "domain_resize_heap_reservation", "compaction", "compaction_evacuate",
  "compaction_forward", "compaction_release", "empty_minor",
};

static const char *const phases_50[] = {
  "explicit_gc_set", "explicit_gc_stat", "explicit_gc_minor",
  "explicit_gc_major", "explicit_gc_full_major", "explicit_gc_compact",
  "major", "major_sweep", "major_mark_roots", "major_mark", "minor",
  "minor_local_roots", "minor_finalized", "explicit_gc_major_slice",
  "finalise_update_first", "finalise_update_last", "interrupt_remote",
  "major_ephe_mark", "major_ephe_sweep", "major_finish_marking",
  "major_gc_cycle_domains", "major_gc_phase_change", "major_gc_stw",
  "major_mark_opportunistic", "major_slice", "major_finish_cycle",
  "minor_clear", "minor_finalizers_oldify", "minor_global_roots",
  "minor_leave_barrier", "stw_api_barrier", "stw_handler", "stw_leader",
  "major_finish_sweeping", "minor_finalizers_admin", "minor_remembered_set",
  "minor_remembered_set_promote", "minor_local_roots_promote",
  "domain_condition_wait", "domain_resize_heap_reservation", "compaction",
  "compaction_evacuate", "compaction_forward", "compaction_release",
};

static const char *const counters[] = {
  "force_minor_alloc_small", "force_minor_make_vect",
  "force_minor_set_minor_heap_size", "force_minor_memprof", "minor_promoted",
  "minor_allocated", "request_major_alloc_shr",
  "request_major_adjust_gc_speed", "request_minor_realloc_ref_table",
  "request_minor_realloc_ephe_ref_table",
  "request_minor_realloc_custom_table", "major_heap_pool_words",
  "major_heap_pool_live_words", "major_heap_large_words",
  "major_heap_pool_frag_words", "major_heap_pool_live_blocks",
  "major_heap_large_blocks", "major_heap_words", "major_allocated_words",
  "major_allocated_work", "major_dependent_work", "major_extra_work",
  "major_work_counter", "major_alloc_counter", "major_slice_target",
  "major_slice_budget",
};

static const char *const lifecycle[] = {
  "ring_start", "ring_stop", "ring_pause", "ring_resume",
  "fork_parent", "fork_child", "domain_spawn", "domain_terminate",
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

START_TEST(test_phase_names) {
  ck_assert_int_eq(COUNT(phases_53), 49);
  ck_assert_int_eq(EVENTRING_PHASE_COUNT, 49);
  for (int i = 0; i < COUNT(phases_53); i++) {
    const char *n = eventring_phase_name(i);
    ck_assert_msg(n != NULL, "phase %d has no name", i);
    ck_assert_msg(strcmp(n, phases_53[i]) == 0, "phase %d: %s, want %s", i,
                  n, phases_53[i]);
  }
  ck_assert_ptr_null(eventring_phase_name(49));
  ck_assert_ptr_null(eventring_phase_name(-1));
  ck_assert_ptr_null(eventring_phase_name(1 << 20));
  /* A few enum constants, so the header's enum matches the names. */
  ck_assert_str_eq(eventring_phase_name(EVENTRING_PHASE_MAJOR_MEMPROF_ROOTS),
                   "major_memprof_roots");
  ck_assert_str_eq(eventring_phase_name(EVENTRING_PHASE_STW_LEADER),
                   "stw_leader");
  ck_assert_str_eq(eventring_phase_name(EVENTRING_PHASE_EMPTY_MINOR),
                   "empty_minor");
}
END_TEST

/* The 5.0-5.2 table is internal (ring_format.h) but readers of old files
 * and the vector test depend on it. */
START_TEST(test_phase_names_50) {
  ck_assert_uint_eq(eventring__n_phases_50, (unsigned)COUNT(phases_50));
  for (int i = 0; i < COUNT(phases_50); i++)
    ck_assert_msg(strcmp(eventring__phase_names_50[i], phases_50[i]) == 0,
                  "5.0 phase %d: %s, want %s", i, eventring__phase_names_50[i],
                  phases_50[i]);
  /* The table eventring writes: OCaml's 5.3+ list, then its 7 extension
   * ids (OCaml 4.13 phases with no listed counterpart). */
  ck_assert_uint_eq(eventring__n_phases_53, (unsigned)COUNT(phases_53) + 7);
  for (int i = 0; i < COUNT(phases_53); i++)
    ck_assert_str_eq(eventring__phase_names_53[i], phases_53[i]);
}
END_TEST

/* name_of(i) is want[i] for each of the n entries (`what` names them in
 * the failure), and NULL for n and -1. */
static void check_table(const char *what, const char *(*name_of)(int),
                        const char *const *want, int n) {
  for (int i = 0; i < n; i++) {
    const char *got = name_of(i);
    ck_assert_msg(got != NULL && strcmp(got, want[i]) == 0,
                  "%s %d: %s, want %s", what, i, got ? got : "(null)",
                  want[i]);
  }
  ck_assert_ptr_null(name_of(n));
  ck_assert_ptr_null(name_of(-1));
}

START_TEST(test_counter_names) {
  ck_assert_int_eq(COUNT(counters), 26);
  ck_assert_int_eq(EVENTRING_COUNTER_COUNT, 26);
  check_table("counter", eventring_counter_name, counters, COUNT(counters));
  ck_assert_str_eq(
      eventring_counter_name(EVENTRING_COUNTER_MAJOR_SLICE_BUDGET),
      "major_slice_budget");
}
END_TEST

START_TEST(test_lifecycle_names) {
  ck_assert_int_eq(COUNT(lifecycle), 8);
  ck_assert_int_eq(EVENTRING_LIFECYCLE_COUNT, 8);
  check_table("lifecycle", eventring_lifecycle_name, lifecycle,
              COUNT(lifecycle));
  ck_assert_str_eq(
      eventring_lifecycle_name(EVENTRING_LIFECYCLE_DOMAIN_TERMINATE),
      "domain_terminate");
}
END_TEST

/* Names must fit the extension block's 48-byte slots with their NUL. */
START_TEST(test_names_fit_slots) {
  for (int i = 0; i < EVENTRING_PHASE_COUNT; i++)
    ck_assert_uint_lt(strlen(eventring_phase_name(i)), ER_EXT_NAME_BYTES);
  for (int i = 0; i < EVENTRING_COUNTER_COUNT; i++)
    ck_assert_uint_lt(strlen(eventring_counter_name(i)), ER_EXT_NAME_BYTES);
}
END_TEST

static const int codes[] = {
  EVENTRING_E_INVAL,    EVENTRING_E_NAMETOOLONG, EVENTRING_E_TOOMANY,
  EVENTRING_E_EXISTS,   EVENTRING_E_TOOBIG,      EVENTRING_E_DISABLED,
  EVENTRING_E_BUSY,     EVENTRING_E_NOTSTARTED,  EVENTRING_E_CORRUPT,
  EVENTRING_E_VERSION,  EVENTRING_E_NOTRING,     EVENTRING_E_TIMEDOUT,
  EVENTRING_E_NOTRINGFILE, EVENTRING_E_TRUNCATED, EVENTRING_E_NOCONTROL,
};

START_TEST(test_strerror_codes) {
  const char *seen[COUNT(codes) + 1];
  for (int i = 0; i < COUNT(codes); i++) {
    const char *s = eventring_strerror(codes[i]);
    ck_assert_msg(s != NULL && s[0] != '\0', "code %d has no text", codes[i]);
    for (int j = 0; j < i; j++)
      ck_assert_msg(strcmp(s, seen[j]) != 0, "codes %d and %d share \"%s\"",
                    codes[i], codes[j], s);
    seen[i] = s;
  }
  /* Success is a code too, and differs from every error. */
  const char *ok = eventring_strerror(EVENTRING_OK);
  ck_assert(ok != NULL && ok[0] != '\0');
  for (int i = 0; i < COUNT(codes); i++) ck_assert_str_ne(ok, seen[i]);
}
END_TEST

START_TEST(test_strerror_errno) {
  const char *s = eventring_strerror(-ENOENT);
  ck_assert_ptr_nonnull(s);
  ck_assert_str_eq(s, strerror(ENOENT));
  ck_assert_str_eq(eventring_strerror(-EEXIST), strerror(EEXIST));
  ck_assert_str_ne(eventring_strerror(-ENOENT), eventring_strerror(-EEXIST));
  /* Values that are neither still get a non-NULL text. */
  const char *u = eventring_strerror(-999999);
  ck_assert(u != NULL && u[0] != '\0');
  u = eventring_strerror(12345);
  ck_assert(u != NULL && u[0] != '\0');
}
END_TEST

static TCase *tc_names(void) {
  TCase *tc = er_tcase("names");
  tcase_add_test(tc, test_phase_names);
  tcase_add_test(tc, test_phase_names_50);
  tcase_add_test(tc, test_counter_names);
  tcase_add_test(tc, test_lifecycle_names);
  tcase_add_test(tc, test_names_fit_slots);
  return tc;
}

static TCase *tc_strerror(void) {
  TCase *tc = er_tcase("strerror");
  tcase_add_test(tc, test_strerror_codes);
  tcase_add_test(tc, test_strerror_errno);
  return tc;
}

ER_TEST_MAIN("names", tc_names, tc_strerror)
