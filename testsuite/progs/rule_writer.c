/* rule_writer -- a traced program that makes the patterns of watch's
 * rules happen on request, for test_watch_rules.
 *
 *   rule_writer STEP...
 *
 * runs each step in order:
 *
 *   tick MS        the user int "app.tick" (its count) about every
 *                  millisecond for MS ms, the last one at or past the end
 *                  (CLOCK_MONOTONIC, the clock of the events: so MS ms of
 *                  trace time pass, however long the program is stopped)
 *   retry N        N user units "app.retry" back to back (a burst)
 *   span N US      N user spans "http.request" of US microseconds each
 *                  (busy: each lasts at least that long in trace time)
 *   gc N MS GAP    N runtime phases major_slice (GC pauses) of MS ms each,
 *                  with GAP ms of ticks after each
 *
 * Tracing is started unless the environment started it.  Exit status 0,
 * 2 for bad arguments, 3 when tracing could not start. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eventring.h"

static int tick_id, retry_id, request_id;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
  }
}

static void tick(long ms) {
  uint64_t end = now_ns() + (uint64_t)ms * 1000000u, n = 0;
  for (;;) {
    uint64_t t = now_ns();
    eventring_write_int(tick_id, (int64_t)n++);
    if (t >= end) return;
    sleep_until(t + 1000000u);
  }
}

static void span(long n, long us) {
  for (long i = 0; i < n; i++) {
    eventring_write_span(request_id, 0);
    uint64_t end = now_ns() + (uint64_t)us * 1000u;
    while (now_ns() < end) {
    }
    eventring_write_span(request_id, 1);
  }
}

int main(int argc, char **argv) {
  tick_id = eventring_register("app.tick", EVENTRING_TYPE_INT);
  retry_id = eventring_register("app.retry", EVENTRING_TYPE_UNIT);
  request_id = eventring_register("http.request", EVENTRING_TYPE_SPAN);
  if (tick_id < 0 || retry_id < 0 || request_id < 0) return 3;
  if (!eventring_is_active() && eventring_start() != 0) return 3;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "tick") && i + 1 < argc) {
      tick(atol(argv[++i]));
    } else if (!strcmp(argv[i], "retry") && i + 1 < argc) {
      for (long n = atol(argv[++i]); n > 0; n--) eventring_write_unit(retry_id);
    } else if (!strcmp(argv[i], "span") && i + 2 < argc) {
      long n = atol(argv[++i]);
      span(n, atol(argv[++i]));
    } else if (!strcmp(argv[i], "gc") && i + 3 < argc) {
      long n = atol(argv[++i]), ms = atol(argv[++i]), gap = atol(argv[++i]);
      for (long k = 0; k < n; k++) {
        eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
        sleep_until(now_ns() + (uint64_t)ms * 1000000u);
        eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
        tick(gap);
      }
    } else {
      fprintf(stderr, "rule_writer: bad step '%s'\n", argv[i]);
      return 2;
    }
  }
  return 0;
}
