/* watch_writer -- a traced program with GC-like pauses of known lengths,
 * for test_watch and bench_watch.
 *
 *   watch_writer [--wait] [--lead MS] [--inject KIND] [--tail MS]
 *                [--storm N] [--flood MS] [--record FILE]
 *
 * Normal activity, about every millisecond of the program's life: a
 * minor phase of about 100 us (busy) with minor_local_roots nested in
 * it, the counter minor_promoted, the user int "app.queue" (0 .. 99) and,
 * every tenth time, a user span "app.request" of about 200 us.  So the
 * pauses are far below the tests' thresholds, and the user spans too --
 * unless the machine is so loaded that the program is stopped within
 * one, which is why a test judges by --record what it wrote.
 *
 * Durations are measured with CLOCK_MONOTONIC, the clock the events are
 * stamped with, and a stretch of normal activity ends with a step begun
 * at or past its end: so the lead and the tail hold in the events'
 * timestamps however long the program was kept from running, and only
 * how many steps they hold depends on the machine.
 *
 *   --wait        print "ready" and wait for a line on stdin first
 *   --lead MS     normal activity for MS ms before the injection
 *                 (default 300)
 *   --inject KIND at that moment, once: "pause" (a major slice of 50 ms),
 *                 "span" (an app.request span of 50 ms), "event" (the
 *                 user unit "app.slow"), "int" (app.queue = 5000), or
 *                 "none"; then prints "injected"
 *   --tail MS     normal activity for MS ms after it (default 200); -1:
 *                 until stdin ends
 *   --storm N     instead: N app.slow events, each 20 ms or more after
 *                 the one before, with normal activity between them and
 *                 past the last
 *   --flood MS    instead: begin/end pairs and user ints as fast as it
 *                 can, for MS ms
 *   --record FILE at the end (but with --flood, which overwrites its
 *                 rings), write what the rings hold -- everything written,
 *                 since the runs are far shorter than a ring -- to FILE
 *                 with eventring_snapshot(): what a test compares the
 *                 watcher's snapshots with
 * Tracing is started unless the environment started it.  Exit status 0,
 * or the step that failed. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"

static int queue_id, request_id, slow_id;
/* Set by the stdin reader thread, read by the main loop. */
static int stdin_done;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void busy_ns(uint64_t ns) {
  uint64_t end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void normal_step(unsigned i) {
  eventring_begin(EVENTRING_PHASE_MINOR);
  eventring_begin(EVENTRING_PHASE_MINOR_LOCAL_ROOTS);
  busy_ns(100000);
  eventring_end(EVENTRING_PHASE_MINOR_LOCAL_ROOTS);
  eventring_end(EVENTRING_PHASE_MINOR);
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, i);
  eventring_write_int(queue_id, (int64_t)(i % 100));
  if (i % 10 == 0) {
    eventring_write_span(request_id, 0);
    busy_ns(200000);
    eventring_write_span(request_id, 1);
  }
  sleep_ns(1000000);
}

/* Normal activity for `ms` ms, up to a step begun at or past the end
 * (while stdin lasts when ms < 0). */
static void normal(long ms, unsigned *i) {
  if (ms < 0) {
    while (!__atomic_load_n(&stdin_done, __ATOMIC_ACQUIRE))
      normal_step((*i)++);
    return;
  }
  uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
  for (;;) {
    int last = now_ns() >= end;
    normal_step((*i)++);
    if (last) return;
  }
}

/* Writes the rings' content to `path` (--record).  Returns 0 or 8. */
static int record(const char *path) {
  int rc = path ? eventring_snapshot(path) : 0;
  if (rc == 0) return 0;
  fprintf(stderr, "watch_writer: --record %s: %s\n", path,
          eventring_strerror(rc));
  return 8;
}

static void *read_stdin(void *arg) {
  (void)arg;
  char buf[256];
  while (read(0, buf, sizeof buf) > 0) {
  }
  __atomic_store_n(&stdin_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

int main(int argc, char **argv) {
  int wait = 0;
  long lead = 300, tail = 200, storm = -1, flood = -1;
  const char *inject = "none", *rec = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--wait")) wait = 1;
    else if (i + 1 < argc && !strcmp(argv[i], "--lead")) lead = atol(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--tail")) tail = atol(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--inject")) inject = argv[++i];
    else if (i + 1 < argc && !strcmp(argv[i], "--storm")) storm = atol(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--flood")) flood = atol(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--record")) rec = argv[++i];
    else return 2;
  }
  queue_id = eventring_register("app.queue", EVENTRING_TYPE_INT);
  request_id = eventring_register("app.request", EVENTRING_TYPE_SPAN);
  slow_id = eventring_register("app.slow", EVENTRING_TYPE_UNIT);
  if (queue_id < 0 || request_id < 0 || slow_id < 0) return 3;
  if (!eventring_is_active() && eventring_start() != 0) return 4;
  if (wait) {
    char line[64];
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) return 5;
  }
  pthread_t reader;
  if (tail < 0 && pthread_create(&reader, NULL, read_stdin, NULL) != 0)
    return 6;
  unsigned i = 0;
  if (flood >= 0) {
    uint64_t end = now_ns() + (uint64_t)flood * 1000000u;
    while (now_ns() < end)
      for (int k = 0; k < 1000; k++) {
        eventring_begin(EVENTRING_PHASE_MINOR);
        eventring_end(EVENTRING_PHASE_MINOR);
        eventring_write_int(queue_id, k);
      }
    return 0;
  }
  if (storm >= 0) {
    /* The next event's time is taken after this one is written, so that
     * their timestamps are 20 ms apart or more. */
    for (long k = 0; k < storm; k++) {
      eventring_write_unit(slow_id);
      uint64_t next = now_ns() + 20000000u;
      do normal_step(i++);
      while (now_ns() < next);
    }
    return record(rec);
  }
  normal(lead, &i);
  if (!strcmp(inject, "pause")) {
    eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
    sleep_ns(50000000u);
    eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
  } else if (!strcmp(inject, "span")) {
    eventring_write_span(request_id, 0);
    sleep_ns(50000000u);
    eventring_write_span(request_id, 1);
  } else if (!strcmp(inject, "event")) {
    eventring_write_unit(slow_id);
  } else if (!strcmp(inject, "int")) {
    eventring_write_int(queue_id, 5000);
  } else if (strcmp(inject, "none") != 0) {
    return 7;
  }
  printf("injected\n");
  fflush(stdout);
  normal(tail, &i);
  /* With --tail -1 the reader thread has seen stdin end: join it. */
  if (tail < 0) pthread_join(reader, NULL);
  return record(rec);
}
