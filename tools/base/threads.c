/* threads.c -- what the helper threads of the `eventring` command (the
 * exporter's server, sweeper and pusher) are started with: a condition
 * variable on the clock of tool_now_ns(), and a signal mask that leaves
 * the stopping signals to the thread that reads the rings.
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "base/base.h"

void tool_cond_init_monotonic(pthread_cond_t *c) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* as tool_now_ns() */
  pthread_cond_init(c, &ca);
  pthread_condattr_destroy(&ca);
}

void tool_block_stop_signals(sigset_t *old) {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, old);
}
