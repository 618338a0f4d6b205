/* drop_threads -- five threads that all hold on while they write 1000
 * events each, for a test of what readers report when the file has fewer
 * domain slots (OCAMLRUNPARAM=d=2): the threads without one have their
 * events dropped and counted in the extension block.  Tracing comes from
 * the environment (OCAML_RUNTIME_EVENTS_START); each thread starts once
 * the previous one holds its slot or knows it has none, so that which
 * threads drop is fixed: all but the first two. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

#include "eventring.h"

#define NTHREADS 5
#define PER_THREAD 1000

static int id;
static pthread_barrier_t all_written;
static sem_t started[NTHREADS];

static void *worker(void *arg) {
  int index = (int)(long)arg;
  eventring_write_int(id, index);
  sem_post(&started[index]);
  for (int i = 1; i < PER_THREAD; i++) eventring_write_int(id, i);
  /* No slot frees up before every thread has written. */
  pthread_barrier_wait(&all_written);
  return NULL;
}

int main(void) {
  id = eventring_register("drop.value", EVENTRING_TYPE_INT);
  if (id < 0 || !eventring_path()) {
    fprintf(stderr, "drop_threads: tracing is not started\n");
    return 1;
  }
  /* The main thread took a slot for ring_start: the workers get both. */
  eventring_domain_release();
  pthread_t th[NTHREADS];
  pthread_barrier_init(&all_written, NULL, NTHREADS);
  for (long i = 0; i < NTHREADS; i++) {
    sem_init(&started[i], 0, 0);
    if (pthread_create(&th[i], NULL, worker, (void *)i) != 0) return 1;
    sem_wait(&started[i]);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  return 0;
}
