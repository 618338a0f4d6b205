/* mon_writer -- a traced program for test_metrics (tracing comes from
 * OCAML_RUNTIME_EVENTS_START, or from `eventring metrics -- mon_writer`).
 *
 *   mon_writer ROUNDS FLOOD [live]
 *
 * writes ROUNDS rounds of events with known shapes and values, then FLOOD
 * user unit events from a second thread (its own domain, so that only
 * that ring wraps when the ring is small), prints "ready PID" on stdout
 * and waits for standard input to close, then exits.  With `live`, it
 * goes on writing one slow round every 100 ms while it waits, so that a
 * scraper sees rates.
 *
 * A round (domain 0):
 *   - a minor pause: minor { minor_local_roots { 100 us } 200 us }, so at
 *     least 300 us, the inner phase at least 100 us;
 *   - every 5th round (1-based), a major slice of at least 2 ms;
 *   - counters minor_promoted = 10 * round, minor_allocated = 4242;
 *   - user int "mon.queue_depth" = round, and the int named
 *     MON_WEIRD_NAME = -round (a name that needs sanitising and escaping);
 *   - user span "mon.request" of at least 50 us; user unit "mon.tick".
 * A live round is a major slice of at least 2 ms and the same counters.
 * Busy waits, not sleeps, make the durations lower bounds whatever the
 * scheduler does.
 *
 * MON_OCAML_VERSION in the environment: given to
 * eventring_set_ocaml_version() first, as a language binding would after
 * tracing started (its live file's metadata is rewritten).
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"

#define MON_WEIRD_NAME "mon weird \"q\" \\ back\nline \xff"

static void spin_us(long us) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 <
         us + 1);
}

static int tick_id;
static long flood;

static void *flooder(void *arg) {
  (void)arg;
  for (long i = 0; i < flood; i++) eventring_write_unit(tick_id);
  return NULL;
}

static void major_slice(void) {
  eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
  spin_us(2000);
  eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
}

int main(int argc, char **argv) {
  long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 20;
  flood = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
  int live = argc > 3;
  if (getenv("MON_OCAML_VERSION"))
    eventring_set_ocaml_version(getenv("MON_OCAML_VERSION"));
  int depth = eventring_register("mon.queue_depth", EVENTRING_TYPE_INT);
  int weird = eventring_register(MON_WEIRD_NAME, EVENTRING_TYPE_INT);
  int req = eventring_register("mon.request", EVENTRING_TYPE_SPAN);
  tick_id = eventring_register("mon.tick", EVENTRING_TYPE_UNIT);
  if (depth < 0 || weird < 0 || req < 0 || tick_id < 0) {
    fprintf(stderr, "mon_writer: register failed\n");
    return 2;
  }
  for (long r = 1; r <= rounds; r++) {
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_begin(EVENTRING_PHASE_MINOR_LOCAL_ROOTS);
    spin_us(100);
    eventring_end(EVENTRING_PHASE_MINOR_LOCAL_ROOTS);
    spin_us(200);
    eventring_end(EVENTRING_PHASE_MINOR);
    if (r % 5 == 0) major_slice();
    eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, (uint64_t)(10 * r));
    eventring_counter(EVENTRING_COUNTER_MINOR_ALLOCATED, 4242);
    eventring_write_int(depth, r);
    eventring_write_int(weird, -r);
    eventring_write_span(req, 0);
    spin_us(50);
    eventring_write_span(req, 1);
    eventring_write_unit(tick_id);
  }
  if (flood > 0) {
    pthread_t th;
    if (pthread_create(&th, NULL, flooder, NULL) != 0) return 2;
    pthread_join(th, NULL);
  }
  printf("ready %ld\n", (long)getpid());
  fflush(stdout);
  /* Until standard input closes (or says anything). */
  struct pollfd p = {.fd = 0, .events = POLLIN};
  for (;;) {
    int n = poll(&p, 1, live ? 100 : -1);
    if (n > 0) break;
    if (n == 0) {
      major_slice();
      eventring_counter(EVENTRING_COUNTER_MINOR_ALLOCATED, 4242);
    }
  }
  return 0;
}
