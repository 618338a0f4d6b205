/* spawn_child -- a program for test_tool_spawn to run under
 * `eventring SUBCOMMAND -- spawn_child MODE ...`.  It does not start
 * tracing itself: the tool's environment (OCAML_RUNTIME_EVENTS_START)
 * does.  It first reports what the tool gave it, as user ints:
 *   spawn.start     1 when OCAML_RUNTIME_EVENTS_START is set
 *   spawn.preserve  1 when OCAML_RUNTIME_EVENTS_PRESERVE is set
 *   spawn.dirmode   the permission bits of OCAML_RUNTIME_EVENTS_DIR
 *                   (-1 when unset or missing)
 * then, by MODE:
 *   exit CODE         writes spawn.seq 0..99 inside a span "spawn.work"
 *                     and exits with CODE;
 *   kill              the same, then dies of SIGKILL (no ring_stop);
 *   threads N         N threads (domains 1..N) each write spawn.seq
 *                     0..99, then it exits 0;
 *   run SECONDS [ignore-int]
 *                     writes spawn.seq 0, 1, ... once a millisecond for
 *                     SECONDS, then exits 0 (or dies with the tool);
 *                     with ignore-int, SIGINT is ignored.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

#include "eventring.h"

static int seq_id, span_id;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void work(void) {
  eventring_write_span(span_id, 0);
  for (int i = 0; i < 100; i++) eventring_write_int(seq_id, i);
  eventring_write_span(span_id, 1);
}

static void *thread_main(void *arg) {
  (void)arg;
  work();
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  seq_id = eventring_register("spawn.seq", EVENTRING_TYPE_INT);
  span_id = eventring_register("spawn.work", EVENTRING_TYPE_SPAN);
  int start_id = eventring_register("spawn.start", EVENTRING_TYPE_INT);
  int pres_id = eventring_register("spawn.preserve", EVENTRING_TYPE_INT);
  int mode_id = eventring_register("spawn.dirmode", EVENTRING_TYPE_INT);
  if (seq_id < 0 || span_id < 0 || start_id < 0 || pres_id < 0 ||
      mode_id < 0)
    return 2;
  const char *dir = getenv("OCAML_RUNTIME_EVENTS_DIR");
  struct stat st;
  long mode = dir && stat(dir, &st) == 0 ? (long)(st.st_mode & 07777) : -1;
  eventring_write_int(start_id, getenv("OCAML_RUNTIME_EVENTS_START") != NULL);
  eventring_write_int(pres_id,
                      getenv("OCAML_RUNTIME_EVENTS_PRESERVE") != NULL);
  eventring_write_int(mode_id, mode);

  if (!strcmp(argv[1], "exit") && argc > 2) {
    work();
    return atoi(argv[2]);
  }
  if (!strcmp(argv[1], "kill")) {
    work();
    raise(SIGKILL);
    return 2;
  }
  if (!strcmp(argv[1], "threads") && argc > 2) {
    int n = atoi(argv[2]);
    pthread_t t[16];
    if (n < 1 || n > 16) return 2;
    for (int i = 0; i < n; i++)
      if (pthread_create(&t[i], NULL, thread_main, NULL) != 0) return 2;
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return 0;
  }
  if (!strcmp(argv[1], "run") && argc > 2) {
    /* Never outlives the tool that ran it, however long it was asked to
     * run. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (argc > 3 && !strcmp(argv[3], "ignore-int")) signal(SIGINT, SIG_IGN);
    double end = now() + atof(argv[2]);
    for (long i = 0; now() < end; i++) {
      eventring_write_int(seq_id, i);
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
    return 0;
  }
  return 2;
}
