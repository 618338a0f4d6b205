/* cases.h -- case tables: one Check test run once per row of a table.
 *
 * A table is an array of structs whose first member is `const char
 * *name`.  ER_ADD_CASES(tc, test, table) adds `test` (a START_TEST) to
 * `tc` once per row, with the row's index in _i and the row's name as the
 * test's name, so that Check's failure line reads
 * "FILE:LINE:F:TCASE:ROW-NAME:INDEX: message" and names the case that
 * broke, as separate START_TESTs would.
 */
#ifndef EVENTRING_TEST_CASES_H
#define EVENTRING_TEST_CASES_H

#include <check.h>
#include <stddef.h>
#include <stdlib.h>

/* The TTests er_add_cases() makes, kept on a list so that they stay
 * reachable once Check's runner has freed its own lists (LeakSanitizer
 * would otherwise report them at exit). */
struct er_case_test {
  TTest test;
  struct er_case_test *next;
};
static struct er_case_test *er_case_tests;

/* Adds `test` to `tc` for rows 0 .. n-1, row i named by the string at
 * `first_name` + i * `stride` bytes.  The TTests it makes live until the
 * process ends, as Check needs. */
static inline void er_add_cases(TCase *tc, const TTest *test,
                                const char *const *first_name, size_t n,
                                size_t stride) {
  for (size_t i = 0; i < n; i++) {
    struct er_case_test *c = malloc(sizeof *c);
    if (!c) abort();
    c->next = er_case_tests;
    er_case_tests = c;
    TTest *t = &c->test;
    t->name = *(const char *const *)((const char *)first_name + i * stride);
    t->fn = test->fn;
    t->file = test->file;
    t->line = test->line;
    _tcase_add_test(tc, t, 0, 0, (int)i, (int)i + 1);
  }
}

#define ER_ADD_CASES(tc, test, table)                                     \
  er_add_cases((tc), (test), &(table)[0].name,                           \
               sizeof(table) / sizeof((table)[0]), sizeof((table)[0]))

/* main() of a test file whose tests are the rows of `table`, run by the
 * START_TEST `test` in one test case named `tcase`; `suite` as for
 * ER_TEST_MAIN. */
#define ER_CASES_MAIN(suite, tcase, test, table)                          \
  static TCase *er_cases_tcase(void) {                                    \
    TCase *tc = er_tcase(tcase);                                          \
    ER_ADD_CASES(tc, test, table);                                        \
    return tc;                                                            \
  }                                                                       \
  ER_TEST_MAIN(suite, er_cases_tcase)

/* Adds the START_TESTs `tests` (NULL-terminated) to `tc`. */
static inline void er_add_tests(TCase *tc, const TTest *const *tests) {
  for (; *tests; tests++) _tcase_add_test(tc, *tests, 0, 0, 0, 1);
}

#define ER_ADD_TESTS(tc, ...)                                             \
  er_add_tests((tc), (const TTest *const[]){__VA_ARGS__, NULL})

#endif
