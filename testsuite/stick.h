/* stick.h -- for the test_hook_* tests (built with ER_TEST_HOOKS): a
 * thread that stops at one of internal.h's hook points until the test
 * lets it go.
 *
 * A thread sets stick_here to the hook point + 1, then runs the code that
 * passes the point: hook() (install it as er_test_hook, after sem_init of
 * both semaphores) posts `stuck` there and blocks until the test posts
 * `release`.  Each test program includes this once; the state is its own.
 */
#ifndef EVENTRING_TEST_STICK_H
#define EVENTRING_TEST_STICK_H

#include <semaphore.h>

#include "internal.h"

static __thread int stick_here; /* the hook this thread blocks in, + 1 */
static sem_t stuck, release;

static int hook(enum er_hook h) {
  if (stick_here == (int)h + 1) {
    stick_here = 0;
    sem_post(&stuck);
    while (sem_wait(&release) != 0) continue;
  }
  return 0;
}

#endif
