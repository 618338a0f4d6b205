/* numbered -- a traced program that writes a known count of numbered
 * events, for test_record and bench_record.
 *
 *   numbered N [--first K --go FILE] [--span MS] [--rate K] [--hold FILE]
 *
 * writes the user int "rec.n" with the values 1 .. N (N 0: on until
 * SIGTERM, which ends it at once: exit status 0), and nothing else of its
 * own (the library adds its lifecycle events), then exits 0.
 *   --go FILE  first print "ready" on stdout and wait until FILE exists
 *   --first K  write 1 .. K before printing "ready"
 *   --span MS  spread the events over at least MS ms of CLOCK_MONOTONIC,
 *              the events' clock: event i is written at or after
 *              start + MS * (i - 1) / (N - 1), so the first and the last
 *              are at least MS apart however the program is scheduled
 *   --hold FILE  once done, print "wrote N" and wait until FILE exists
 *   --rate K   write K events per millisecond of CLOCK_MONOTONIC (a
 *              steady load; with N 0, until SIGTERM)
 * At the end it prints "wrote N" on stdout, N the last value written.
 * Tracing is started unless the environment started it. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"

static volatile sig_atomic_t stop;

static void on_term(int sig) {
  (void)sig;
  stop = 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleeps until CLOCK_MONOTONIC reaches `t`. */
static void until_ns(uint64_t t) {
  for (uint64_t n = now_ns(); n < t && !stop; n = now_ns()) {
    uint64_t d = t - n;
    struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  uint64_t n = strtoull(argv[1], NULL, 10), span_ms = 0, rate = 0, first = 0;
  const char *go = NULL, *hold = NULL;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--go"))
      go = argv[i + 1];
    else if (!strcmp(argv[i], "--span"))
      span_ms = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--hold"))
      hold = argv[i + 1];
    else if (!strcmp(argv[i], "--first"))
      first = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--rate"))
      rate = strtoull(argv[i + 1], NULL, 10);
    else
      return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, NULL);
  int id = eventring_register("rec.n", EVENTRING_TYPE_INT);
  if (id < 0) return 3;
  if (!eventring_is_active() && eventring_start() != 0) return 4;
  uint64_t i = 1;
  for (; i <= first; i++) eventring_write_int(id, (int64_t)i);
  if (go) {
    printf("ready\n");
    fflush(stdout);
    while (access(go, F_OK) != 0 && !stop) usleep(1000);
  }
  uint64_t start = now_ns();
  for (; (!n || i <= n) && !stop; i++) {
    if (span_ms && n > 1)
      until_ns(start + span_ms * 1000000u * (i - 1) / (n - 1));
    else if (rate && i % rate == 1)
      until_ns(start + (i / rate) * 1000000u);
    eventring_write_int(id, (int64_t)i);
  }
  printf("wrote %llu\n", (unsigned long long)(i - 1));
  fflush(stdout);
  while (hold && access(hold, F_OK) != 0 && !stop) usleep(1000);
  return 0;
}
