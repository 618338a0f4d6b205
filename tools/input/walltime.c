/* walltime.c -- a source's wall clock, as the subcommands print it.
 *
 * eventring's files record pairs (timestamp, CLOCK_REALTIME) (ring
 * format: the extension block's wall clock words); OCaml 5's do not.
 * Times of day are given with the file's start pair: one offset for a
 * whole file, so that the order of events in wall time is their order in
 * timestamps, whatever steps the wall clock took meanwhile.
 */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "input/input.h"

int tool_wall_offset(const eventring_cursor *c, int64_t *offset) {
  eventring_wallclock w;
  int e = eventring_cursor_wallclock(c, EVENTRING_WALLCLOCK_START, &w);
  if (e) return e;
  *offset = w.wall - (int64_t)w.ts;
  return 0;
}

void tool_wall_unknown(const char *path, int err) {
  if (err == EVENTRING_E_NOWALLCLOCK)
    tool_error("%s does not record the wall clock (OCaml 5's runtime or an "
               "earlier eventring wrote it): times of day are unknown; use "
               "--time=relative or --time=raw", path);
  else
    tool_error("%s: cannot read its wall clock: %s", path,
               eventring_strerror(err));
}

void tool_wall_format(char *buf, size_t size, int64_t ns) {
  /* Floor division: a time before 1970 keeps its nanoseconds positive. */
  int64_t sec = ns / 1000000000, frac = ns % 1000000000;
  if (frac < 0) {
    frac += 1000000000;
    sec--;
  }
  time_t t = (time_t)sec;
  struct tm tm;
  if (!gmtime_r(&t, &tm)) {
    snprintf(buf, size, "%" PRId64 "ns", ns);
    return;
  }
  char day[32];
  strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, size, "%s.%09" PRId64 "Z", day, frac);
}
