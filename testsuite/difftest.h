/* difftest.h -- running `eventring diff` and reading its --json rows, for
 * the tests of diff on crafted files (test_diff) and on recorded runs
 * (test_diff_aa). */
#ifndef EVENTRING_TEST_DIFFTEST_H
#define EVENTRING_TEST_DIFFTEST_H

#include <string.h>

#include "lat_craft.h"

/* Runs `eventring diff [OPT1 [OPT2]] A B` (an option NULL: left out). */
static __attribute__((unused)) struct lat_run diff(const char *a,
                                                   const char *b,
                                                   const char *opt1,
                                                   const char *opt2) {
  const char *args[] = {"diff", opt1, opt2, a, b, NULL};
  const char *argv[6];
  int n = 0;
  for (int i = 0; i < 5; i++)
    if (args[i]) argv[n++] = args[i];
  argv[n] = NULL;
  return lat_run_tool(argv);
}

/* Runs `eventring diff [OPT1 [OPT2]] A B` and checks that it exits with
 * `status` and, when `says` is not NULL, that its stderr holds `says`. */
static __attribute__((unused)) void diff_expect(const char *a, const char *b,
                                                const char *opt1,
                                                const char *opt2, int status,
                                                const char *says) {
  struct lat_run r = diff(a, b, opt1, opt2);
  ck_assert_msg(r.status == status, "diff %s %s: status %d, stderr: %s",
                opt1 ? opt1 : "", opt2 ? opt2 : "", r.status, r.err);
  if (says)
    ck_assert_msg(strstr(r.err, says) != NULL, "diff %s %s: %s",
                  opt1 ? opt1 : "", opt2 ? opt2 : "", r.err);
  lat_run_free(&r);
}

/* The row of `kind` ("span", "phase") and `name` in diff --json output,
 * up to the next row (a copy, to free); fails when there is none. */
static __attribute__((unused)) char *json_row(const char *json,
                                              const char *kind,
                                              const char *name) {
  char pat[256];
  snprintf(pat, sizeof pat, "{\"kind\": \"%s\", \"name\": \"%s\"", kind,
           name);
  const char *p = strstr(json, pat);
  ck_assert_msg(p != NULL, "no row %s %s in: %.400s", kind, name, json);
  const char *end = strstr(p + 1, "{\"kind\": ");
  if (!end) end = p + strlen(p);
  return strndup(p, (size_t)(end - p));
}

#endif
