/* Tests that readers infer the phase numbering of OCaml 5's files (5.0-5.2 or 5.3+) from how phases nest, warn once when the evidence is too thin, and obey --ocaml50/--ocaml53. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"
#include "lat_craft.h"

/* Phase ids of the two numberings (doc/FORMAT.md). */
#define P50_MINOR 10
#define P50_STW_LEADER 32
#define P53_MINOR 11
#define P53_STW_LEADER 35
#define P_MAJOR 6 /* the same in both */

#define WARNING_TAIL                                                    \
  ": cannot tell OCaml 5.0-5.2 from 5.3+ phase numbering (too few "     \
  "phase events); assuming 5.3+, use --ocaml50 or --ocaml53 to choose\n"

static void craft_path(char *path, size_t n) {
  /* No <pid>.events name: the tool must not take it for a live process. */
  snprintf(path, n, "%s/crafted.events", er_tmpdir());
}

/* Domain 0 starts tracing: what follows nests from an empty stack. */
static void craft_start(struct craft *c) {
  craft_init(c);
  craft_lifecycle(c, 0, 1000, EVENTRING_LIFECYCLE_RING_START, 42);
}

/* A stop-the-world minor collection: stw_leader { minor }, with the ids
 * `leader` and `minor`. */
static void craft_stw_minor(struct craft *c, uint64_t ts, unsigned leader,
                            unsigned minor) {
  craft_begin(c, 0, ts, leader);
  craft_begin(c, 0, ts + 10, minor);
  craft_end(c, 0, ts + 20, minor);
  craft_end(c, 0, ts + 30, leader);
}

static eventring_cursor *open_path(const char *path) {
  eventring_cursor *c = NULL;
  int rc = eventring_cursor_open_file(&c, path);
  ck_assert_msg(rc == 0, "open %s: %s", path, eventring_strerror(rc));
  return c;
}

static void assert_numbering(const char *path, int want, int want_basis) {
  eventring_cursor *c = open_path(path);
  int basis = 99;
  ck_assert_int_eq(eventring_cursor_numbering(c, &basis), want);
  ck_assert_int_eq(basis, want_basis);
  eventring_cursor_free(c);
}

/* `eventring dump PATH [OPT1 [OPT2]]`; the caller has checked that the
 * tool is there (ER_NEED_TOOL). */
static struct er_run dump(const char *path, const char *opt1,
                          const char *opt2) {
  const char *args[] = {"dump", "--time=raw", path, opt1, opt2, NULL};
  if (!opt1) args[3] = NULL;
  return er_run_tool(er_tmpdir(), args, 0);
}

/* Exit status 0 and the one warning line on stderr. */
static void assert_warned(const struct er_run *r, const char *path) {
  ck_assert_int_eq(er_exit_code(r, "the tool"), 0);
  char want[PATH_MAX + 256];
  snprintf(want, sizeof want, "eventring: %s" WARNING_TAIL, path);
  ck_assert_str_eq(r->err, want);
}

/* ------------------------------------------------------------------ */
/* What a crafted file's phase events tell.                             */

/* One step of a crafted file (lat_craft.h), on domain `d`. */
struct step {
  char op;      /* 'S' ring_start at ts 1000, 'K' skip to ring position
                   `ts`, 'B' begin, 'E' end, 'C' counter `id` = `v`,
                   'M' stop-the-world minor collection: stw_leader `id`
                   { minor `v` } from `ts` on */
  int d;
  uint64_t ts;
  unsigned id;
  uint64_t v;
};

/* What `eventring dump FILE` says on stderr, with exit status 0. */
enum said {
  NOT_RUN,    /* the case does not run the tool */
  WARNED,     /* the one warning of thin evidence */
  SILENT,     /* nothing */
  CONFLICTED, /* the events fit neither numbering */
};

/* The steps, by name. */
#define START {'S', 0, 0, 0, 0}
#define SKIP(d, pos) {'K', d, pos, 0, 0}
#define BEGIN(d, ts, id) {'B', d, ts, id, 0}
#define END(d, ts, id) {'E', d, ts, id, 0}
#define COUNTER(d, ts, id, v) {'C', d, ts, id, v}
#define STW_MINOR(ts, leader, minor) {'M', 0, ts, leader, minor}

/* The numberings and how they were decided, short. */
#define N50 EVENTRING_NUMBERING_OCAML50
#define N53 EVENTRING_NUMBERING_OCAML53
#define GUESSED EVENTRING_NUMBERING_GUESSED
#define INFERRED EVENTRING_NUMBERING_INFERRED
#define HEAP_WORDS EVENTRING_COUNTER_MAJOR_HEAP_WORDS
/* What dump of a stop-the-world minor collection shows. */
#define STW_SHOWN                                                       \
  {"kind=runtime_begin name=stw_leader ", "kind=runtime_begin name=minor "}

static const struct infer_case {
  const char *name;
  struct step steps[8]; /* up to the first op 0 */
  int numbering, basis; /* eventring_cursor_numbering() */
  enum said said;
  const char *shows[2]; /* in dump's listing, when not NULL */
  const char *choose;   /* an option that silences the warning */
} infer_cases[] = {
    /* Thin evidence: a guess, and one warning.  Only counters: no phase
     * at all; it is still read. */
    {"only_counters",
     {START, COUNTER(0, 2000, CT_MINOR_PROMOTED, 7),
      COUNTER(0, 2100, CT_MINOR_ALLOCATED, 9)},
     N53, GUESSED, WARNED,
     {"name=minor_promoted value=7", "name=minor_allocated value=9"}, NULL},
    /* One begin/end pair of a phase both numberings allow there (major,
     * id 6 in both, outside any stop-the-world section); choosing
     * silences it. */
    {"one_neutral_pair",
     {START, BEGIN(0, 2000, P_MAJOR), END(0, 2100, P_MAJOR)}, N53, GUESSED,
     WARNED, {"kind=runtime_begin name=major ", NULL}, "--ocaml53"},
    /* After lost events nothing is known of what was open before: a
     * minor collection with no stop-the-world section around it may sit
     * in one begun before the loss, so it rules nothing out. */
    {"unknown_context_is_no_evidence",
     {SKIP(0, 5000), BEGIN(0, 2000, P53_MINOR), END(0, 2100, P53_MINOR)},
     N53, GUESSED, NOT_RUN, {NULL, NULL}, NULL},
    /* Decisive evidence, read so by the API and by the tool, no warning:
     * stw_leader { minor } in 5.0-5.2's ids reads under 5.3+ as a minor
     * step (minor_leave_barrier) outside any stop-the-world section ... */
    {"impossible_under_53", {START, STW_MINOR(2000, P50_STW_LEADER, P50_MINOR)},
     N50, INFERRED, SILENT, STW_SHOWN, NULL},
    /* ... and the other way: 5.3's stw_leader (35) is 5.0's
     * minor_remembered_set. */
    {"impossible_under_50", {START, STW_MINOR(2000, P53_STW_LEADER, P53_MINOR)},
     N53, INFERRED, SILENT, STW_SHOWN, NULL},
    /* Ids that only 5.3+ has: a counter from 17 on, a phase from 44 on
     * (48, empty_minor). */
    {"ids_beyond_50_counter", {COUNTER(0, 2000, HEAP_WORDS, 1)}, N53, INFERRED,
     NOT_RUN, {NULL, NULL}, NULL},
    {"ids_beyond_50_phase", {BEGIN(1, 2000, 48)}, N53, INFERRED, NOT_RUN,
     {NULL, NULL}, NULL},
    /* A stop-the-world section nested in another is impossible even where
     * the nesting below is unknown (after a loss): ids 34 { 35 } are
     * 5.0's minor_finalizers_admin { minor_remembered_set }, fine inside a
     * minor collection begun before the loss, and 5.3's stw_handler {
     * stw_leader }, which no runtime does. */
    {"nested_stw_after_loss",
     {SKIP(0, 5000), BEGIN(0, 2000, 34), BEGIN(0, 2010, 35), END(0, 2020, 35),
      END(0, 2030, 34)},
     N50, INFERRED, NOT_RUN, {NULL, NULL}, NULL},
    /* Evidence against both: the numbering with less, and the tool says
     * the events fit neither. */
    {"conflicting",
     {START, STW_MINOR(2000, P50_STW_LEADER, P50_MINOR),
      STW_MINOR(3000, P50_STW_LEADER, P50_MINOR),
      COUNTER(0, 4000, HEAP_WORDS, 1)},
     N50, EVENTRING_NUMBERING_CONFLICTING, CONFLICTED, {NULL, NULL}, NULL},
};

/* Writes the file of `steps` to `path`. */
static void craft_steps(const struct step *steps, size_t max,
                        const char *path) {
  struct craft c;
  craft_init(&c);
  for (size_t i = 0; i < max && steps[i].op; i++) {
    const struct step *s = &steps[i];
    switch (s->op) {
    case 'S': craft_lifecycle(&c, 0, 1000, EVENTRING_LIFECYCLE_RING_START, 42);
      break;
    case 'K': craft_skip(&c, s->d, s->ts); break;
    case 'B': craft_begin(&c, s->d, s->ts, s->id); break;
    case 'E': craft_end(&c, s->d, s->ts, s->id); break;
    case 'C': craft_counter(&c, s->d, s->ts, s->id, s->v); break;
    case 'M': craft_stw_minor(&c, s->ts, s->id, (unsigned)s->v); break;
    default: ck_abort_msg("step %zu: unknown op %c", i, s->op);
    }
  }
  craft_write(&c, path);
  craft_free(&c);
}

START_TEST(test_infer_case) {
  const struct infer_case *k = &infer_cases[_i];
  if (k->said != NOT_RUN) ER_NEED_TOOL();
  char path[PATH_MAX];
  craft_path(path, sizeof path);
  craft_steps(k->steps, sizeof k->steps / sizeof k->steps[0], path);
  assert_numbering(path, k->numbering, k->basis);
  if (k->said == NOT_RUN) return;
  struct er_run r = dump(path, NULL, NULL);
  char want[PATH_MAX + 256];
  switch (k->said) {
  case WARNED:
    assert_warned(&r, path);
    break;
  case SILENT:
    er_assert_status(&r, 0);
    ck_assert_str_eq(r.err, "");
    break;
  case CONFLICTED:
    ck_assert_int_eq(er_exit_code(&r, "the tool"), 0);
    snprintf(want, sizeof want,
             "eventring: %s: the phase events fit neither OCaml 5.0-5.2's "
             "nor 5.3+'s phase numbering; assuming 5.0-5.2, use --ocaml50 "
             "or --ocaml53 to choose\n",
             path);
    ck_assert_str_eq(r.err, want);
    break;
  case NOT_RUN:
    break;
  }
  for (int i = 0; i < 2 && k->shows[i]; i++)
    ck_assert_ptr_nonnull(strstr(r.out, k->shows[i]));
  er_run_free(&r);
  if (k->choose) {
    r = dump(path, k->choose, NULL);
    er_assert_status(&r, 0);
    ck_assert_str_eq(r.err, "");
    er_run_free(&r);
  }
}
END_TEST

/* A live file: too little at open, decided by what a later poll finds,
 * and the events of that poll already carry the decided names. */
START_TEST(test_refined_while_live) {
  struct craft c;
  craft_start(&c);
  craft_counter(&c, 0, 2000, CT_MINOR_PROMOTED, 1);
  char path[PATH_MAX];
  craft_path(path, sizeof path);
  craft_write(&c, path);
  eventring_cursor *cur = open_path(path);
  int basis;
  ck_assert_int_eq(eventring_cursor_numbering(cur, &basis),
                   EVENTRING_NUMBERING_OCAML53);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_GUESSED);
  eventring_callbacks *none = eventring_callbacks_create();
  ck_assert_int_eq(eventring_cursor_poll(cur, none, NULL, 0), 2);
  ck_assert_int_eq(eventring_cursor_numbering(cur, &basis),
                   EVENTRING_NUMBERING_OCAML53);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_GUESSED);
  /* The writer goes on: a 5.0-5.2 minor collection. */
  craft_stw_minor(&c, 3000, P50_STW_LEADER, P50_MINOR);
  craft_update(&c, path, 0);
  ck_assert_int_eq(eventring_cursor_poll(cur, none, NULL, 0), 4);
  ck_assert_int_eq(eventring_cursor_numbering(cur, &basis),
                   EVENTRING_NUMBERING_OCAML50);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_INFERRED);
  ck_assert_str_eq(eventring_cursor_phase_name(cur, P50_STW_LEADER),
                   "stw_leader");
  /* Once decided it stays: 5.3's ids later do not flip it back. */
  craft_stw_minor(&c, 4000, P53_STW_LEADER, P53_MINOR);
  craft_update(&c, path, 0);
  ck_assert_int_eq(eventring_cursor_poll(cur, none, NULL, 0), 4);
  ck_assert_int_eq(eventring_cursor_numbering(cur, &basis),
                   EVENTRING_NUMBERING_OCAML50);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_INFERRED);
  eventring_callbacks_free(none);
  eventring_cursor_free(cur);
  craft_free(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Forcing.                                                             */

START_TEST(test_api_force) {
  struct craft c;
  craft_start(&c);
  craft_stw_minor(&c, 2000, P50_STW_LEADER, P50_MINOR);
  char path[PATH_MAX];
  craft_path(path, sizeof path);
  craft_write(&c, path);
  craft_free(&c);
  eventring_cursor *cur = open_path(path);
  int basis;
  ck_assert_int_eq(
      eventring_cursor_set_numbering(cur, EVENTRING_NUMBERING_OCAML53), 0);
  ck_assert_int_eq(eventring_cursor_numbering(cur, &basis),
                   EVENTRING_NUMBERING_OCAML53);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_FORCED);
  ck_assert_str_eq(eventring_cursor_phase_name(cur, P50_STW_LEADER),
                   "minor_leave_barrier");
  /* Back to automatic: the inference made at open. */
  ck_assert_int_eq(
      eventring_cursor_set_numbering(cur, EVENTRING_NUMBERING_AUTO), 0);
  ck_assert_int_eq(eventring_cursor_numbering(cur, &basis),
                   EVENTRING_NUMBERING_OCAML50);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_INFERRED);
  /* set_ocaml50 keeps its meaning: 1 forces 5.0-5.2, 0 is automatic. */
  ck_assert_int_eq(eventring_cursor_set_ocaml50(cur, 1), 0);
  ck_assert_int_eq(eventring_cursor_numbering(cur, &basis),
                   EVENTRING_NUMBERING_OCAML50);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_FORCED);
  ck_assert_int_eq(eventring_cursor_set_ocaml50(cur, 0), 0);
  ck_assert_int_eq(basis = 99, 99);
  eventring_cursor_numbering(cur, &basis);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_INFERRED);
  ck_assert_int_eq(eventring_cursor_set_numbering(cur, 52), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_cursor_set_numbering(NULL, 0), EVENTRING_E_INVAL);
  ck_assert_int_eq(eventring_cursor_numbering(NULL, &basis), EVENTRING_E_INVAL);
  eventring_cursor_free(cur);
}
END_TEST

/* eventring's own files record their numbering: forcing does not rename
 * them, and they never draw the warning. */
START_TEST(test_own_file) {
  ER_NEED_TOOL();
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  setenv("OCAML_RUNTIME_EVENTS_DIR", dir, 1);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  ck_assert_int_eq(eventring_start(), 0);
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_end(EVENTRING_PHASE_MINOR);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", eventring_path());
  eventring_cursor *cur = open_path(path);
  int basis;
  ck_assert_int_eq(eventring_cursor_numbering(cur, &basis),
                   EVENTRING_NUMBERING_OCAML53);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_FROM_FILE);
  eventring_cursor_set_numbering(cur, EVENTRING_NUMBERING_OCAML50);
  ck_assert_int_eq(eventring_cursor_numbering(cur, &basis),
                   EVENTRING_NUMBERING_OCAML53);
  ck_assert_int_eq(basis, EVENTRING_NUMBERING_FROM_FILE);
  ck_assert_str_eq(eventring_cursor_phase_name(cur, EVENTRING_PHASE_MINOR),
                   "minor");
  eventring_cursor_free(cur);
  ck_assert_int_eq(eventring_stop(), 0);
  /* Two phase events, which tell nothing, and no warning. */
  struct er_run r = dump(path, NULL, NULL);
  er_assert_status(&r, 0);
  ck_assert_str_eq(r.err, "");
  ck_assert_ptr_nonnull(strstr(r.out, "kind=runtime_begin name=minor "));
  er_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The tool on the OCaml 5 vectors, with no option.                     */

static void check_vector_tool(const char *name, const char *opt,
                              int want_equal) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX], exp_path[PATH_MAX];
  if (!er_unpack_vector(dir, name, path))
    ER_SKIP("EVENTRING_TEST_DATA is not set");
  snprintf(exp_path, sizeof exp_path, "%s/%s.expected",
           er_env_dir("EVENTRING_TEST_DATA"), name);
  struct er_run r = dump(path, opt, NULL);
  er_assert_status(&r, 0);
  ck_assert_str_eq(r.err, "");
  struct er_lines out = er_lines_split(r.out);
  struct er_lines all = er_lines_read(exp_path);
  struct er_lines got = er_lines_starting(&out, "domain=");
  struct er_lines want = er_lines_starting(&all, "domain=");
  ck_assert_uint_eq(got.n, want.n);
  if (want_equal) {
    er_lines_compare(name, &got, &want, 1);
  } else {
    size_t differ = 0;
    for (size_t i = 0; i < got.n; i++)
      differ += strcmp(got.v[i], want.v[i]) != 0 && !er_is_ring_stop(want.v[i]);
    ck_assert_msg(differ > 10, "%s: only %zu lines differ", name, differ);
  }
  er_lines_free(&got);
  er_lines_free(&want);
  er_lines_free(&all);
  er_lines_free(&out);
  er_run_free(&r);
  unlink(path);
}

START_TEST(test_vectors_no_option) {
  check_vector_tool(er_vectors[_i], NULL, 1);
}
END_TEST

/* --ocaml53 on a 5.2 file forces 5.3+'s names (wrong ones, as asked). */
START_TEST(test_ocaml53_forces) {
  check_vector_tool("ocaml5-basic", "--ocaml53", 0);
  check_vector_tool("ocaml54-basic", "--ocaml53", 1);
}
END_TEST

START_TEST(test_both_options) {
  ER_NEED_TOOL();
  const char *args[] = {"dump", "--time=raw", "--ocaml50", "--ocaml53", "x.events", NULL};
  struct er_run r = er_run_tool(er_tmpdir(), args, 0);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_assert_one_error(&r, "--ocaml50 and --ocaml53 contradict each other");
  ck_assert_str_eq(r.out, "");
  er_run_free(&r);
}
END_TEST

static TCase *tc_infer(void) {
  TCase *tc = er_tcase("infer");
  ER_ADD_CASES(tc, test_infer_case, infer_cases);
  tcase_add_test(tc, test_refined_while_live);
  return tc;
}

static TCase *tc_force(void) {
  TCase *tc = er_tcase("force");
  ER_ADD_TESTS(tc, test_api_force, test_own_file);
  tcase_add_loop_test(tc, test_vectors_no_option, 0, ER_NVECTORS);
  ER_ADD_TESTS(tc, test_ocaml53_forces, test_both_options);
  return tc;
}

ER_TEST_MAIN("numbering", tc_infer, tc_force)
