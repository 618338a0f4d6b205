/* threads.h -- for the helper programs: running a body on numbered
 * threads and collecting their verdicts. */
#ifndef EVENTRING_PROGS_THREADS_H
#define EVENTRING_PROGS_THREADS_H

#include <pthread.h>
#include <stdint.h>

/* Runs fn((void *)k) on n threads (n at most 16), k = 1 to n, and waits
 * for them all.  Returns 0, 5 when a thread could not be created, or 6
 * when one returned non-NULL (its failure). */
static inline int prog_run_threads(int n, void *(*fn)(void *)) {
  pthread_t t[16];
  if (n > 16) return 5;
  for (int k = 1; k <= n; k++)
    if (pthread_create(&t[k - 1], NULL, fn, (void *)(intptr_t)k)) return 5;
  int rc = 0;
  for (int k = 1; k <= n; k++) {
    void *r;
    pthread_join(t[k - 1], &r);
    if (r) rc = 6;
  }
  return rc;
}

#endif
