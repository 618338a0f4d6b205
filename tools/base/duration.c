/* duration.c -- the clock of the events and the one parser of the
 * durations and of the sizes options take.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"

uint64_t tool_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int tool_parse_duration(const char *s, uint64_t *ns, char *why, size_t size) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  int overflow = errno == ERANGE && v > 1; /* HUGE_VAL */
  if (end == s || (errno && !overflow) || !(v >= 0) || !(*s == '.' ||
      (*s >= '0' && *s <= '9'))) {
    snprintf(why, size, "duration '%s' is not a number and a unit (ns, us, "
             "ms, s), e.g. 10ms", s);
    return -1;
  }
  static const struct {
    const char *unit;
    double ns;
  } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  if (!*end) {
    snprintf(why, size, "duration '%s' needs a unit (ns, us, ms, s)", s);
    return -1;
  }
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcmp(end, units[i].unit)) {
      double x = v * units[i].ns;
      if (overflow || !(x <= TOOL_DURATION_MAX_NS)) {
        snprintf(why, size, "duration '%s' is too large (at most %.0fs, "
                 "about 31 years)", s, TOOL_DURATION_MAX_NS / 1e9);
        return -1;
      }
      *ns = (uint64_t)(x + 0.5);
      return 0;
    }
  snprintf(why, size, "duration '%s' has an unknown unit '%s' (ns, us, ms, "
           "s)", s, end);
  return -1;
}

int tool_parse_size(const char *s, uint64_t *bytes) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno || *s == '-') return -1;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10, end++;
  else if (*end == 'M' || *end == 'm') shift = 20, end++;
  else if (*end == 'G' || *end == 'g') shift = 30, end++;
  if (*end || v > (UINT64_MAX >> (shift + 4))) return -1;
  *bytes = (uint64_t)v << shift;
  return 0;
}
