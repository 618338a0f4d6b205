/* Tests that readers name every phase and counter id of every OCaml 5
 * release (5.0 to 5.5) read from OCaml's headers as that release does,
 * tell from the ids a file holds the oldest release that could have
 * written it, and show any other id as a number, never as another
 * event's name: one past the lists, or one of the 5.5 ids eventring has
 * not read from a header (a ramp-up phase, three counters). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lat_craft.h"

/* ------------------------------------------------------------------ */
/* OCaml's lists, as runtime/caml/runtime_events.h declares them.       */

/* ev_runtime_phase of OCaml 5.0 to 5.2 (5.0.0, 5.1.0, 5.2.0 tags): the
 * first 40 in 5.0 and 5.1, all 44 in 5.2. */
static const char *const phases_50[] = {
    "EV_EXPLICIT_GC_SET", "EV_EXPLICIT_GC_STAT", "EV_EXPLICIT_GC_MINOR",
    "EV_EXPLICIT_GC_MAJOR", "EV_EXPLICIT_GC_FULL_MAJOR",
    "EV_EXPLICIT_GC_COMPACT", "EV_MAJOR", "EV_MAJOR_SWEEP",
    "EV_MAJOR_MARK_ROOTS", "EV_MAJOR_MARK", "EV_MINOR",
    "EV_MINOR_LOCAL_ROOTS", "EV_MINOR_FINALIZED",
    "EV_EXPLICIT_GC_MAJOR_SLICE", "EV_FINALISE_UPDATE_FIRST",
    "EV_FINALISE_UPDATE_LAST", "EV_INTERRUPT_REMOTE", "EV_MAJOR_EPHE_MARK",
    "EV_MAJOR_EPHE_SWEEP", "EV_MAJOR_FINISH_MARKING",
    "EV_MAJOR_GC_CYCLE_DOMAINS", "EV_MAJOR_GC_PHASE_CHANGE",
    "EV_MAJOR_GC_STW", "EV_MAJOR_MARK_OPPORTUNISTIC", "EV_MAJOR_SLICE",
    "EV_MAJOR_FINISH_CYCLE", "EV_MINOR_CLEAR", "EV_MINOR_FINALIZERS_OLDIFY",
    "EV_MINOR_GLOBAL_ROOTS", "EV_MINOR_LEAVE_BARRIER", "EV_STW_API_BARRIER",
    "EV_STW_HANDLER", "EV_STW_LEADER", "EV_MAJOR_FINISH_SWEEPING",
    "EV_MINOR_FINALIZERS_ADMIN", "EV_MINOR_REMEMBERED_SET",
    "EV_MINOR_REMEMBERED_SET_PROMOTE", "EV_MINOR_LOCAL_ROOTS_PROMOTE",
    "EV_DOMAIN_CONDITION_WAIT", "EV_DOMAIN_RESIZE_HEAP_RESERVATION",
    /* 5.2 */
    "EV_COMPACT", "EV_COMPACT_EVACUATE", "EV_COMPACT_FORWARD",
    "EV_COMPACT_RELEASE"};

/* ev_runtime_phase of OCaml 5.3 and later: the first 48 in 5.3, 49 in
 * 5.4, 50 in 5.5 as far as read from its header (5.5 also lists
 * EV_EXPLICIT_GC_RAMP_UP, whose id was not read: eventring leaves it
 * unnamed). */
static const char *const phases_53[] = {
    "EV_EXPLICIT_GC_SET", "EV_EXPLICIT_GC_STAT", "EV_EXPLICIT_GC_MINOR",
    "EV_EXPLICIT_GC_MAJOR", "EV_EXPLICIT_GC_FULL_MAJOR",
    "EV_EXPLICIT_GC_COMPACT", "EV_MAJOR", "EV_MAJOR_SWEEP",
    "EV_MAJOR_MARK_ROOTS", "EV_MAJOR_MEMPROF_ROOTS", "EV_MAJOR_MARK",
    "EV_MINOR", "EV_MINOR_LOCAL_ROOTS", "EV_MINOR_MEMPROF_ROOTS",
    "EV_MINOR_MEMPROF_CLEAN", "EV_MINOR_FINALIZED",
    "EV_EXPLICIT_GC_MAJOR_SLICE", "EV_FINALISE_UPDATE_FIRST",
    "EV_FINALISE_UPDATE_LAST", "EV_INTERRUPT_REMOTE", "EV_MAJOR_EPHE_MARK",
    "EV_MAJOR_EPHE_SWEEP", "EV_MAJOR_FINISH_MARKING",
    "EV_MAJOR_GC_CYCLE_DOMAINS", "EV_MAJOR_GC_PHASE_CHANGE",
    "EV_MAJOR_GC_STW", "EV_MAJOR_MARK_OPPORTUNISTIC", "EV_MAJOR_SLICE",
    "EV_MAJOR_FINISH_CYCLE", "EV_MINOR_CLEAR", "EV_MINOR_FINALIZERS_OLDIFY",
    "EV_MINOR_GLOBAL_ROOTS", "EV_MINOR_LEAVE_BARRIER", "EV_STW_API_BARRIER",
    "EV_STW_HANDLER", "EV_STW_LEADER", "EV_MAJOR_FINISH_SWEEPING",
    "EV_MAJOR_MEMPROF_CLEAN", "EV_MINOR_FINALIZERS_ADMIN",
    "EV_MINOR_REMEMBERED_SET", "EV_MINOR_REMEMBERED_SET_PROMOTE",
    "EV_MINOR_LOCAL_ROOTS_PROMOTE", "EV_DOMAIN_CONDITION_WAIT",
    "EV_DOMAIN_RESIZE_HEAP_RESERVATION", "EV_COMPACT",
    "EV_COMPACT_EVACUATE", "EV_COMPACT_FORWARD", "EV_COMPACT_RELEASE",
    /* 5.4 */
    "EV_EMPTY_MINOR",
    /* 5.5 */
    "EV_MINOR_EPHE_CLEAN"};

/* ev_runtime_counter: the first 11 in 5.0, 17 in 5.1 and 5.2, 26 in 5.3
 * and 5.4, 28 in 5.5 as far as read from its header (5.5 also lists
 * EV_C_MAJOR_{DIRECT,SUSPENDED,RESUMED}_ALLOCATED_WORDS, whose ids were not
 * read: eventring leaves them unnamed). */
static const char *const counters[] = {
    "EV_C_FORCE_MINOR_ALLOC_SMALL", "EV_C_FORCE_MINOR_MAKE_VECT",
    "EV_C_FORCE_MINOR_SET_MINOR_HEAP_SIZE", "EV_C_FORCE_MINOR_MEMPROF",
    "EV_C_MINOR_PROMOTED", "EV_C_MINOR_ALLOCATED",
    "EV_C_REQUEST_MAJOR_ALLOC_SHR", "EV_C_REQUEST_MAJOR_ADJUST_GC_SPEED",
    "EV_C_REQUEST_MINOR_REALLOC_REF_TABLE",
    "EV_C_REQUEST_MINOR_REALLOC_EPHE_REF_TABLE",
    "EV_C_REQUEST_MINOR_REALLOC_CUSTOM_TABLE",
    /* 5.1 */
    "EV_C_MAJOR_HEAP_POOL_WORDS", "EV_C_MAJOR_HEAP_POOL_LIVE_WORDS",
    "EV_C_MAJOR_HEAP_LARGE_WORDS", "EV_C_MAJOR_HEAP_POOL_FRAG_WORDS",
    "EV_C_MAJOR_HEAP_POOL_LIVE_BLOCKS", "EV_C_MAJOR_HEAP_LARGE_BLOCKS",
    /* 5.3 */
    "EV_C_MAJOR_HEAP_WORDS", "EV_C_MAJOR_ALLOCATED_WORDS",
    "EV_C_MAJOR_ALLOCATED_WORK", "EV_C_MAJOR_DEPENDENT_WORK",
    "EV_C_MAJOR_EXTRA_WORK", "EV_C_MAJOR_WORK_COUNTER",
    "EV_C_MAJOR_ALLOC_COUNTER", "EV_C_MAJOR_SLICE_TARGET",
    "EV_C_MAJOR_SLICE_BUDGET",
    /* 5.5 */
    "EV_C_MINOR_ALLOCATED_WORDS", "EV_C_MINOR_PROMOTED_WORDS"};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Each release: how many of each list it has. */
static const struct release {
  int rel, numbering;
  unsigned phases, counters;
} releases[] = {
    {50, EVENTRING_NUMBERING_OCAML50, 40, 11},
    {51, EVENTRING_NUMBERING_OCAML50, 40, 17},
    {52, EVENTRING_NUMBERING_OCAML50, 44, 17},
    {53, EVENTRING_NUMBERING_OCAML53, 48, 26},
    {54, EVENTRING_NUMBERING_OCAML53, 49, 26},
    {55, EVENTRING_NUMBERING_OCAML53, 50, 28},
};

/* The name OCaml's Runtime_events prints for a constant: without "EV_"
 * or "EV_C_", in lower case, EV_COMPACT* as "compaction*". */
static void ocaml_name(const char *ev, char *out, size_t n) {
  const char *s = strncmp(ev, "EV_C_", 5) == 0 ? ev + 5 : ev + 3;
  char buf[96];
  if (strncmp(s, "COMPACT", 7) == 0) {
    snprintf(buf, sizeof buf, "COMPACTION%s", s + 7);
    s = buf;
  }
  size_t i = 0;
  for (; s[i] && i + 1 < n; i++)
    out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
  out[i] = 0;
}

/* The release of `numbering` that added phase `id`, or counter `id`
 * (phase < 0): the first whose list holds it, 0 for none. */
static int added_in(int numbering, int phase, unsigned id) {
  for (size_t i = 0; i < N(releases); i++) {
    if (releases[i].numbering != numbering) continue;
    if (id < (phase >= 0 ? releases[i].phases : releases[i].counters))
      return releases[i].rel;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* Crafted files.                                                       */

static void craft_path(char *path, size_t n, const char *what) {
  snprintf(path, n, "%s/%s.events", er_tmpdir(), what);
}

/* A file whose domain 0 starts tracing and then holds one counter `id`
 * (value 77), or (phase >= 0) one begin/end pair of phase `id`. */
static void write_one(const char *path, int phase, unsigned id) {
  struct craft c;
  craft_init(&c);
  craft_lifecycle(&c, 0, 1000, EVENTRING_LIFECYCLE_RING_START, 42);
  if (phase >= 0) {
    craft_begin(&c, 0, 2000, id);
    craft_end(&c, 0, 2100, id);
  } else {
    craft_counter(&c, 0, 2000, id, 77);
  }
  craft_write(&c, path);
  craft_free(&c);
}

static eventring_cursor *open_forced(const char *path, int numbering) {
  eventring_cursor *c = NULL;
  int rc = eventring_cursor_open_file(&c, path);
  ck_assert_msg(rc == 0, "open %s: %s", path, eventring_strerror(rc));
  ck_assert_int_eq(eventring_cursor_set_numbering(c, numbering), 0);
  return c;
}

/* The library names every id of OCaml's lists as OCaml does, in each
 * numbering, and gives no name past them: not even eventring's
 * extension names, which only its own files use. */
START_TEST(test_names_match_ocaml) {
  char path[PATH_MAX], want[96];
  craft_path(path, sizeof path, "names");
  write_one(path, -1, 0);
  eventring_cursor *c50 = open_forced(path, EVENTRING_NUMBERING_OCAML50);
  eventring_cursor *c53 = open_forced(path, EVENTRING_NUMBERING_OCAML53);
  for (unsigned id = 0; id < N(phases_50); id++) {
    ocaml_name(phases_50[id], want, sizeof want);
    const char *got = eventring_cursor_phase_name(c50, (int)id);
    ck_assert_msg(got && !strcmp(got, want), "5.0-5.2 phase %u: %s, not %s",
                  id, got ? got : "(none)", want);
  }
  for (unsigned id = 0; id < N(phases_53); id++) {
    ocaml_name(phases_53[id], want, sizeof want);
    const char *got = eventring_cursor_phase_name(c53, (int)id);
    ck_assert_msg(got && !strcmp(got, want), "5.3+ phase %u: %s, not %s", id,
                  got ? got : "(none)", want);
  }
  for (unsigned id = 0; id < N(counters); id++) {
    ocaml_name(counters[id], want, sizeof want);
    for (int k = 0; k < 2; k++) {
      const char *got = eventring_cursor_counter_name(k ? c53 : c50, (int)id);
      ck_assert_msg(got && !strcmp(got, want), "counter %u: %s, not %s", id,
                    got ? got : "(none)", want);
    }
  }
  /* Past the lists, and far past: no name (phase 50 and counters 28-30
   * among them, the ids 5.5's unread additions were assumed to have). */
  for (int id = 0; id < 8; id++) {
    ck_assert_ptr_null(eventring_cursor_phase_name(c50, (int)N(phases_50) + id));
    ck_assert_ptr_null(eventring_cursor_phase_name(c53, (int)N(phases_53) + id));
    ck_assert_ptr_null(eventring_cursor_counter_name(c53, (int)N(counters) + id));
  }
  ck_assert_ptr_null(eventring_cursor_phase_name(c53, 8191));
  ck_assert_ptr_null(eventring_cursor_counter_name(c53, 8191));
  eventring_cursor_free(c50);
  eventring_cursor_free(c53);
}
END_TEST

/* Every id a release added over the first release of its numbering, in a
 * file of its own: under each numbering forced and inferred, the name
 * (or none), and the release the file's ids need. */
static void check_id(int phase, unsigned id) {
  char path[PATH_MAX], want[96], what[64];
  snprintf(what, sizeof what, "%s%u", phase >= 0 ? "phase" : "counter", id);
  craft_path(path, sizeof path, what);
  write_one(path, phase, id);
  static const int numberings[] = {EVENTRING_NUMBERING_OCAML50,
                                   EVENTRING_NUMBERING_OCAML53,
                                   EVENTRING_NUMBERING_AUTO};
  for (size_t k = 0; k < N(numberings); k++) {
    eventring_cursor *c = open_forced(path, numberings[k]);
    int numbering = eventring_cursor_numbering(c, NULL);
    const char *const *list = numbering == EVENTRING_NUMBERING_OCAML50
                                  ? phases_50
                                  : phases_53;
    size_t n = phase < 0 ? N(counters)
               : numbering == EVENTRING_NUMBERING_OCAML50 ? N(phases_50)
                                                          : N(phases_53);
    const char *got = phase >= 0 ? eventring_cursor_phase_name(c, (int)id)
                                 : eventring_cursor_counter_name(c, (int)id);
    if (id < n) {
      ocaml_name(phase >= 0 ? list[id] : counters[id], want, sizeof want);
      ck_assert_msg(got && !strcmp(got, want), "%s under %d: %s, not %s",
                    what, numbering, got ? got : "(none)", want);
    } else {
      ck_assert_msg(!got, "%s under %d: named %s", what, numbering, got);
    }
    /* The oldest release that writes it, under that numbering: past
     * 5.3+'s lists a later OCaml, past 5.0-5.2's (impossible there) the
     * numbering's first release. */
    int base = numbering == EVENTRING_NUMBERING_OCAML50 ? 50 : 53;
    int rel = added_in(numbering, phase, id);
    if (!rel && numbering == EVENTRING_NUMBERING_OCAML53)
      rel = EVENTRING_OCAML_LATER;
    int want_kind = rel > base ? (phase >= 0 ? EVENTRING_ID_PHASE
                                             : EVENTRING_ID_COUNTER)
                               : 0;
    if (rel < base) rel = base;
    int kind = -1, got_id = -1;
    ck_assert_msg(eventring_cursor_ocaml_release(c, &kind, &got_id) == rel,
                  "%s under %d: release %d, not %d", what, numbering,
                  eventring_cursor_ocaml_release(c, NULL, NULL), rel);
    ck_assert_int_eq(kind, want_kind);
    ck_assert_int_eq(got_id, want_kind ? (int)id : 0);
    eventring_cursor_free(c);
  }
  unlink(path);
}

START_TEST(test_each_new_id) {
  /* 5.1's counters, 5.2's phases (5.0-5.2 numbering), 5.3's counters,
   * 5.4's and 5.5's phases and 5.5's counters, and past each list: one
   * id, and for counters all three ids assumed for 5.5's unread ones
   * (28-30), which need "a later OCaml" and have no name. */
  for (unsigned id = 11; id <= N(counters) + 2; id++) check_id(-1, id);
  for (unsigned id = 40; id <= N(phases_50); id++) check_id(1, id);
  for (unsigned id = 48; id <= N(phases_53); id++) check_id(1, id);
  /* Ids all releases share need no later one. */
  check_id(-1, 0);
  check_id(-1, 10);
  check_id(1, 0);
}
END_TEST

/* Inferred: an id past 5.0-5.2's lists decides 5.3+, and no guess. */
START_TEST(test_new_ids_decide) {
  static const struct { int phase; unsigned id; } ids[] = {
      {1, 48}, {1, 49}, {1, 50}, {-1, 26}, {-1, 27}, {-1, 28}, {-1, 30}};
  for (size_t i = 0; i < N(ids); i++) {
    char path[PATH_MAX];
    craft_path(path, sizeof path, "decide");
    write_one(path, ids[i].phase, ids[i].id);
    eventring_cursor *c = open_forced(path, EVENTRING_NUMBERING_AUTO);
    int basis = 99;
    ck_assert_int_eq(eventring_cursor_numbering(c, &basis),
                     EVENTRING_NUMBERING_OCAML53);
    ck_assert_int_eq(basis, EVENTRING_NUMBERING_INFERRED);
    eventring_cursor_free(c);
  }
}
END_TEST

/* ------------------------------------------------------------------ */
/* The tool.                                                            */

static struct er_run dump(const char *path, const char *opt) {
  const char *args[] = {"dump", "--time=raw", path, opt, NULL};
  return er_run_tool(er_tmpdir(), args, 0);
}

/* A 5.5 file: its new phases and counters read from a header by name;
 * the ids assumed for its ramp-up phase (50) and major allocated-words
 * counters (28-30) as numbers, never with the name assumed nor an
 * extension name of eventring's, and one line saying why. */
START_TEST(test_tool_names_55) {
  ER_NEED_TOOL();
  struct craft c;
  craft_init(&c);
  craft_lifecycle(&c, 0, 1000, EVENTRING_LIFECYCLE_RING_START, 42);
  craft_begin(&c, 0, 2000, 35); /* stw_leader { minor { ... } } */
  craft_begin(&c, 0, 2010, 11);
  craft_begin(&c, 0, 2020, 49);
  craft_end(&c, 0, 2030, 49);
  craft_end(&c, 0, 2040, 11);
  craft_counter(&c, 0, 2050, 26, 1000);
  craft_counter(&c, 0, 2060, 27, 100);
  craft_end(&c, 0, 2070, 35);
  craft_begin(&c, 0, 3000, 50);
  craft_counter(&c, 0, 3010, 29, 5000);
  craft_end(&c, 0, 3020, 50);
  craft_counter(&c, 0, 3030, 28, 7);
  craft_counter(&c, 0, 3040, 30, 2000);
  char path[PATH_MAX];
  craft_path(path, sizeof path, "ocaml55");
  craft_write(&c, path);
  craft_free(&c);
  struct er_run r = dump(path, NULL);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 0);
  static const char *const want[] = {
      "ts=2020 kind=runtime_begin name=minor_ephe_clean ",
      "ts=2050 kind=runtime_counter name=minor_allocated_words value=1000",
      "ts=2060 kind=runtime_counter name=minor_promoted_words value=100",
      "ts=3000 kind=runtime_begin name=phase_50 ",
      "ts=3010 kind=runtime_counter name=counter_29 value=5000",
      "ts=3020 kind=runtime_end name=phase_50 ",
      "ts=3030 kind=runtime_counter name=counter_28 value=7",
      "ts=3040 kind=runtime_counter name=counter_30 value=2000",
  };
  for (size_t i = 0; i < N(want); i++)
    ck_assert_msg(strstr(r.out, want[i]), "no '%s' in:\n%s", want[i], r.out);
  static const char *const never[] = {
      "explicit_gc_ramp_up", "direct_allocated", "suspended_allocated",
      "resumed_allocated",
      /* eventring's extension names for phases 49-50, counters 26-30 */
      "major_roots", "alloc_jump", "force_minor_weak", "major_mark_slice"};
  for (size_t i = 0; i < N(never); i++)
    ck_assert_msg(!strstr(r.out, never[i]), "'%s' in:\n%s", never[i], r.out);
  char warn[PATH_MAX + 160];
  snprintf(warn, sizeof warn,
           "eventring: %s: phase id 50 has no name in eventring's lists "
           "(OCaml 5.0 to 5.5's headers as read; a later or unlisted id); "
           "shown as phase_50\n",
           path);
  ck_assert_str_eq(r.err, warn);
  er_run_free(&r);
  /* Forced to 5.0-5.2 (wrongly), 49 and 50 have no name there: numbers. */
  r = dump(path, "--ocaml50");
  er_assert_status(&r, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "kind=runtime_begin name=phase_49 "));
  ck_assert_ptr_nonnull(strstr(r.out, "kind=runtime_begin name=phase_50 "));
  er_run_free(&r);
  unlink(path);
}
END_TEST

/* Ids past every list: numbers, one line saying why, and never a name
 * from eventring's own extension ids (which follow the 5.3+ list in the
 * files eventring writes). */
START_TEST(test_tool_unknown_ids) {
  ER_NEED_TOOL();
  struct craft c;
  craft_init(&c);
  craft_lifecycle(&c, 0, 1000, EVENTRING_LIFECYCLE_RING_START, 42);
  craft_counter(&c, 0, 1500, 31, 5);
  craft_begin(&c, 0, 2000, 51);
  craft_end(&c, 0, 2100, 51);
  craft_begin(&c, 0, 3000, 55);
  craft_end(&c, 0, 3100, 55);
  char path[PATH_MAX];
  craft_path(path, sizeof path, "later");
  craft_write(&c, path);
  craft_free(&c);
  struct er_run r = dump(path, NULL);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 0);
  ck_assert_ptr_nonnull(strstr(r.out, "kind=runtime_counter name=counter_31 "
                                      "value=5"));
  ck_assert_ptr_nonnull(strstr(r.out, "kind=runtime_begin name=phase_51 "));
  ck_assert_ptr_nonnull(strstr(r.out, "kind=runtime_end name=phase_55 "));
  /* eventring's extension names for those ids in its own files. */
  ck_assert_ptr_null(strstr(r.out, "major_roots"));
  ck_assert_ptr_null(strstr(r.out, "major_check_and_compact"));
  ck_assert_ptr_null(strstr(r.out, "alloc_jump"));
  char want[PATH_MAX + 160];
  snprintf(want, sizeof want,
           "eventring: %s: counter id 31 has no name in eventring's lists "
           "(OCaml 5.0 to 5.5's headers as read; a later or unlisted id); "
           "shown as counter_31\n",
           path);
  ck_assert_str_eq(r.err, want);
  er_run_free(&r);
  unlink(path);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Real files: 5.2's and 5.4's.                                         */

static void check_vector_release(const char *name, int want_rel,
                                 int want_kind, int want_id) {
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  ER_NEED_VECTOR(dir, name, path);
  eventring_cursor *c = open_forced(path, EVENTRING_NUMBERING_AUTO);
  int kind = -1, id = -1;
  ck_assert_int_eq(eventring_cursor_ocaml_release(c, &kind, &id), want_rel);
  ck_assert_int_eq(kind, want_kind);
  ck_assert_int_eq(id, want_id);
  eventring_cursor_free(c);
  unlink(path);
}

START_TEST(test_vectors_release) {
  /* 5.2's files hold its major heap counters (5.1+), and basic a
   * compaction (5.2); 5.4's hold empty_minor. */
  check_vector_release("ocaml5-basic", 52, EVENTRING_ID_PHASE, 40);
  check_vector_release("ocaml5-multidomain", 51, EVENTRING_ID_COUNTER, 11);
  check_vector_release("ocaml54-basic", 54, EVENTRING_ID_PHASE, 48);
  check_vector_release("ocaml54-multidomain", 54, EVENTRING_ID_PHASE, 48);
}
END_TEST

/* eventring's own files name their ids: no release to tell. */
START_TEST(test_own_file_no_release) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  ck_assert_int_eq(eventring_start(), 0);
  eventring_begin(EVENTRING_PHASE_EMPTY_MINOR);
  eventring_end(EVENTRING_PHASE_EMPTY_MINOR);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", eventring_path());
  eventring_cursor *c = NULL;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  int kind = -1, id = -1;
  ck_assert_int_eq(eventring_cursor_ocaml_release(c, &kind, &id), 0);
  ck_assert_int_eq(kind, 0);
  ck_assert_int_eq(id, 0);
  ck_assert_int_eq(eventring_cursor_ocaml_release(NULL, NULL, NULL),
                   EVENTRING_E_INVAL);
  eventring_cursor_free(c);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

/* watch --when phase:NAME knows 5.5's phase minor_ephe_clean (the
 * missing file after it is what is refused, an input error, which shows
 * the condition was taken), not the ramp-up phase, which eventring does
 * not name (a usage error). */
START_TEST(test_watch_phase_names) {
  ER_NEED_TOOL();
  static const char *const conds[] = {"phase:minor_ephe_clean>1ms",
                                      "phase:explicit_gc_ramp_up>1ms",
                                      "phase:no_such_phase>1ms"};
  for (size_t i = 0; i < N(conds); i++) {
    const char *args[] = {"watch", "--when", conds[i], "x.events", NULL};
    struct er_run r = er_run_tool(er_tmpdir(), args, 0);
    ck_assert_int_eq(er_exit_code(&r, "the tool"), i > 0 ? 2 : 1);
    ck_assert_msg(i > 0 || strstr(r.err, "x.events"), "%s", r.err);
    int unknown = strstr(r.err, "unknown runtime phase") != NULL;
    ck_assert_msg(unknown == (i > 0), "%s: %s", conds[i], r.err);
    er_run_free(&r);
  }
}
END_TEST

static TCase *tc_names(void) {
  TCase *tc = er_tcase("names");
  tcase_add_test(tc, test_names_match_ocaml);
  tcase_add_test(tc, test_each_new_id);
  tcase_add_test(tc, test_new_ids_decide);
  tcase_add_test(tc, test_own_file_no_release);
  return tc;
}

static TCase *tc_tool(void) {
  TCase *tc = er_tcase("tool");
  tcase_add_test(tc, test_tool_names_55);
  tcase_add_test(tc, test_tool_unknown_ids);
  tcase_add_test(tc, test_vectors_release);
  tcase_add_test(tc, test_watch_phase_names);
  return tc;
}

ER_TEST_MAIN("ocaml_ids", tc_names, tc_tool)
