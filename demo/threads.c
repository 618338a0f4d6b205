/* threads.c -- the C program of `make demo`: a toy multi-threaded
 * "runtime" traced through eventring's C API.
 *
 * Each of NTHREADS worker threads serves requests.  A request is a user
 * span ("demo.request") around some work that allocates from the
 * thread's own nursery, a bump allocator.  When the nursery is full the
 * thread "collects" it, as a generational GC would: a minor phase that
 * copies the survivors (about one block in ten) into an old space, with
 * the number of bytes promoted as the minor_promoted counter; every
 * eighth collection also runs a major slice, with mark and sweep phases
 * nested in it, over the old space.  The phases are the runtime phases of
 * the format, so `eventring latency` reads them as GC pauses, exactly as
 * it reads an OCaml program's.  Each thread also writes the depth of its
 * (simulated) queue as a user int, a user unit event on a cache miss, and
 * a custom event with a line of text every 250 requests.
 *
 * Each thread gets a domain (ring) of its own when it first writes, so a
 * trace shows one track per thread.  The program does not start tracing
 * itself: run it as `eventring SUBCOMMAND -- ./threads`, which sets
 * OCAML_RUNTIME_EVENTS_START, or set that variable by hand.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventring.h"

#define NTHREADS 4
#define REQUESTS 4000
#define NURSERY_BYTES (256 * 1024)
#define OLD_BYTES (4 * 1024 * 1024)

static int ev_request, ev_queue, ev_miss, ev_note;

struct worker {
  int index;
  uint64_t state; /* xorshift state: each thread its own sequence */
  unsigned char *nursery, *old;
  size_t used, old_used;
  unsigned minors;
  uint64_t checksum;
};

static uint64_t rnd(struct worker *w) {
  w->state ^= w->state << 13;
  w->state ^= w->state >> 7;
  w->state ^= w->state << 17;
  return w->state;
}

/* A major slice: mark (read the old space) then sweep (free part of it). */
static void major_slice(struct worker *w) {
  eventring_begin(EVENTRING_PHASE_MAJOR_SLICE);
  eventring_begin(EVENTRING_PHASE_MAJOR_MARK);
  uint64_t sum = 0;
  for (size_t i = 0; i < w->old_used; i += 64) sum += w->old[i];
  w->checksum += sum;
  eventring_end(EVENTRING_PHASE_MAJOR_MARK);
  eventring_begin(EVENTRING_PHASE_MAJOR_SWEEP);
  size_t keep = w->old_used / 2 + rnd(w) % (w->old_used / 4 + 1);
  memset(w->old + keep, 0, w->old_used - keep);
  w->old_used = keep;
  eventring_end(EVENTRING_PHASE_MAJOR_SWEEP);
  eventring_counter(EVENTRING_COUNTER_MAJOR_HEAP_WORDS, w->old_used / 8);
  eventring_end(EVENTRING_PHASE_MAJOR_SLICE);
}

/* A minor collection: promote about a tenth of the nursery. */
static void minor(struct worker *w) {
  eventring_begin(EVENTRING_PHASE_MINOR);
  size_t promoted = 0;
  for (size_t off = 0; off + 64 <= w->used; off += 64) {
    if (rnd(w) % 10 != 0) continue;
    if (w->old_used + 64 > OLD_BYTES) w->old_used = 0; /* a "compaction" */
    memcpy(w->old + w->old_used, w->nursery + off, 64);
    w->old_used += 64;
    promoted += 64;
  }
  w->used = 0;
  eventring_counter(EVENTRING_COUNTER_MINOR_PROMOTED, promoted);
  eventring_end(EVENTRING_PHASE_MINOR);
  if (++w->minors % 8 == 0) major_slice(w);
}

static void *alloc(struct worker *w, size_t n) {
  if (w->used + n > NURSERY_BYTES) minor(w);
  void *p = w->nursery + w->used;
  w->used += n;
  return p;
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  for (int r = 1; r <= REQUESTS; r++) {
    eventring_write_span(ev_request, 0);
    eventring_write_int(ev_queue, (int64_t)(rnd(w) % 32));
    int blocks = 8 + (int)(rnd(w) % 64);
    for (int b = 0; b < blocks; b++) {
      size_t n = 64 + 64 * (rnd(w) % 16);
      unsigned char *p = alloc(w, n);
      for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i + (size_t)r);
      w->checksum += p[n / 2];
    }
    if (rnd(w) % 50 == 0) eventring_write_unit(ev_miss);
    if (r % 250 == 0) {
      char note[64];
      int len = snprintf(note, sizeof note, "thread %d: %d requests served",
                         w->index, r);
      eventring_write_custom(ev_note, note, (size_t)len);
    }
    eventring_write_span(ev_request, 1);
  }
  return NULL;
}

int main(void) {
  ev_request = eventring_register("demo.request", EVENTRING_TYPE_SPAN);
  ev_queue = eventring_register("demo.queue_depth", EVENTRING_TYPE_INT);
  ev_miss = eventring_register("demo.cache_miss", EVENTRING_TYPE_UNIT);
  ev_note = eventring_register("demo.note", EVENTRING_TYPE_CUSTOM);
  if (ev_request < 0 || ev_queue < 0 || ev_miss < 0 || ev_note < 0) {
    fprintf(stderr, "threads: cannot register the user events\n");
    return 1;
  }

  struct worker w[NTHREADS];
  pthread_t t[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].index = i + 1;
    w[i].state = 0x9e3779b97f4a7c15u * (uint64_t)(i + 1);
    w[i].nursery = malloc(NURSERY_BYTES);
    w[i].old = calloc(1, OLD_BYTES);
    if (!w[i].nursery || !w[i].old) {
      fprintf(stderr, "threads: out of memory\n");
      return 1;
    }
  }
  for (int i = 0; i < NTHREADS; i++)
    if (pthread_create(&t[i], NULL, worker_main, &w[i]) != 0) {
      fprintf(stderr, "threads: cannot create a thread\n");
      return 1;
    }
  unsigned minors = 0;
  uint64_t checksum = 0;
  for (int i = 0; i < NTHREADS; i++) {
    pthread_join(t[i], NULL);
    minors += w[i].minors;
    checksum += w[i].checksum;
    free(w[i].nursery);
    free(w[i].old);
  }
  printf("threads: %d threads, %d requests, %u minor collections "
         "(checksum %llu)\n",
         NTHREADS, NTHREADS * REQUESTS, minors,
         (unsigned long long)checksum);
  return 0;
}
