/* Tests that every option taking a duration parses it alike (one parser): a duration too large says so, whatever its unit, and a missing unit, an unknown unit or no number are each named; each a usage error (status 2, one line). */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "testlib.h"

/* Every option that takes a duration, as an argument list in which "@"
 * stands for the duration (with "%s" where a --when condition holds
 * it). */
static const char *const options[][8] = {
    {"stats", "--drain-timeout", "@", "--", "true", NULL},
    {"dump", "--follow", "--wait", "@", "--pid", "1", NULL},
    {"dump", "--since", "@", "x.events", NULL},
    {"dump", "--until", "@", "x.events", NULL},
    {"latency", "--last", "@", "x.events", NULL},
    {"watch", "--when", "lost", "--before", "@", "--", "true", NULL},
    {"watch", "--when", "lost", "--after", "@", "--", "true", NULL},
    {"watch", "--when", "lost", "--every", "@", "--", "true", NULL},
    {"watch", "--when", "pause>%s", "--", "true", NULL},
    {"watch", "--when", "span:req>%s", "--", "true", NULL},
    {"watch", "--when", "phase:major_slice>%s", "--", "true", NULL},
};
#define N_OPTIONS (int)(sizeof options / sizeof options[0])

/* A duration and what the error says of it. */
static const struct {
  const char *value, *says;
} durations[] = {
    {"1e30s", "duration '1e30s' is too large (at most 1000000000s"},
    {"1e400s", "duration '1e400s' is too large"},
    {"2e9s", "duration '2e9s' is too large"},
    {"1e19ns", "duration '1e19ns' is too large"},
    {"10", "duration '10' needs a unit (ns, us, ms, s)"},
    {"10mins", "duration '10mins' has an unknown unit 'mins'"},
    {"fast", "duration 'fast' is not a number"},
    {"-1s", "duration '-1s' is not a number"},
};
#define N_DURATIONS (int)(sizeof durations / sizeof durations[0])

START_TEST(test_bad_duration) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  const char *const *opt = options[_i];
  for (int k = 0; k < N_DURATIONS; k++) {
    const char *args[8];
    char cond[64];
    for (int j = 0; j < 8; j++) {
      args[j] = opt[j];
      if (opt[j] && !strcmp(opt[j], "@")) {
        args[j] = durations[k].value;
      } else if (opt[j] && strstr(opt[j], "%s")) {
        snprintf(cond, sizeof cond, opt[j], durations[k].value);
        args[j] = cond;
      }
    }
    struct er_run r = er_run_tool(dir, args, ER_SPAWN_PATH);
    ck_assert_msg(er_exit_code(&r, args[0]) == 2, "%s %s %s: status %d: %s",
                  args[0], args[1], durations[k].value, r.status, r.err);
    er_assert_one_error(&r, durations[k].says);
    er_run_free(&r);
  }
  /* Nothing was run. */
  ck_assert_int_eq(er_count_entries(dir, ".events"), 0);
}
END_TEST

/* The largest duration is taken, in any unit. */
START_TEST(test_largest) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  const char *ok[] = {"1e9s", "1e18ns", "1e15us", "1e12ms"};
  for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
    struct er_run r = er_run_tool(
        dir, (const char *[]){"dump", "--since", ok[k], "missing.events", NULL},
        0);
    /* Past the options: the file is what is missing. */
    ck_assert_int_eq(er_exit_code(&r, "dump"), 1);
    er_assert_one_error(&r, "missing.events");
    er_run_free(&r);
  }
}
END_TEST

static TCase *tc_durations(void) {
  TCase *tc = er_tcase("durations");
  tcase_add_loop_test(tc, test_bad_duration, 0, N_OPTIONS);
  tcase_add_test(tc, test_largest);
  return tc;
}

ER_TEST_MAIN("durations", tc_durations)
