/* fault_writer -- a traced program that dies in the middle of writing,
 * for test_postmortem.
 *
 *   fault_writer run NTHREADS      NTHREADS threads write until the
 *                                  process is killed from outside;
 *   fault_writer segv NTHREADS MS  the same, and MS milliseconds after
 *                                  "ready" the main thread dereferences
 *                                  NULL while the others are writing;
 *   fault_writer exit N            writes N events from main, returns;
 *   fault_writer _exit N           writes N events, then _exit(0), so
 *                                  that no teardown runs at all;
 *   fault_writer quick             starts tracing and returns at once
 *                                  (the file holds ring_start only).
 *
 * Tracing is started by eventring_start() (0 when the environment already
 * started it).  "ready PATH" goes to stdout once every writer thread has
 * written at least READY_EVENTS events, so that the rings are busy (and
 * usually wrapped) when the test kills us.
 *
 * Every thread writes one sequence: its n-th user event carries n, an int
 * event ("fw.seq", value = n) alternating with a custom event ("fw.blob")
 * whose payload is printable ASCII, so that `eventring dump` prints it
 * unescaped:
 *
 *   t=T s=N f=FILL c=XXXXXXXX
 *
 * FILL is 0 to 60 letters chosen from N, and c is the FNV-1a hash (hex)
 * of everything before " c=".  A reader that finds a custom payload whose
 * hash does not match has been handed a half-written event.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "eventring.h"

#define READY_EVENTS 20000

static int seq_id, blob_id;
static int n_ready;
/* A page that may not be touched (PROT_NONE), behind a volatile pointer:
 * a store to it is a real SIGSEGV, which neither the compiler nor
 * UBSan's null check can see coming. */
static int *volatile nowhere;

static uint32_t fnv(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

/* Builds the payload of thread t's event n into buf; returns its length. */
static size_t blob(char *buf, size_t cap, int t, unsigned long long n) {
  int k = snprintf(buf, cap, "t=%d s=%llu f=", t, n);
  unsigned fill = (unsigned)(n * 7 % 61);
  for (unsigned i = 0; i < fill; i++) buf[k++] = (char)('a' + (n + i) % 26);
  uint32_t h = fnv(buf, (size_t)k);
  k += snprintf(buf + k, cap - (size_t)k, " c=%08x", h);
  return (size_t)k;
}

/* Writes events 2 * i and 2 * i + 1 of thread t. */
static void write_pair(int t, unsigned long long i) {
  char buf[160];
  eventring_write_int(seq_id, (int64_t)(2 * i));
  size_t len = blob(buf, sizeof buf, t, 2 * i + 1);
  eventring_write_custom(blob_id, buf, len);
}

static void *writer(void *arg) {
  int t = (int)(long)arg;
  for (unsigned long long i = 0;; i++) {
    write_pair(t, i);
    if (2 * i == READY_EVENTS) __atomic_add_fetch(&n_ready, 1, __ATOMIC_SEQ_CST);
  }
  return NULL;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fault_writer run|segv|exit|_exit|quick ...\n");
    return 2;
  }
  const char *mode = argv[1];
  int rc = eventring_start();
  if (rc != 0) {
    fprintf(stderr, "fault_writer: start: %s\n", eventring_strerror(rc));
    return 2;
  }
  if (!strcmp(mode, "quick")) return 0;
  seq_id = eventring_register("fw.seq", EVENTRING_TYPE_INT);
  blob_id = eventring_register("fw.blob", EVENTRING_TYPE_CUSTOM);
  if (seq_id < 0 || blob_id < 0) return 2;

  if (!strcmp(mode, "exit") || !strcmp(mode, "_exit")) {
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 10;
    for (long i = 0; i < n; i++) write_pair(0, (unsigned long long)i);
    if (mode[0] == '_') _exit(0);
    return 0;
  }

  int nthreads = argc > 2 ? atoi(argv[2]) : 4;
  if (nthreads < 1 || nthreads > 64) return 2;
  for (int t = 1; t <= nthreads; t++) {
    pthread_t th;
    if (pthread_create(&th, NULL, writer, (void *)(long)t) != 0) return 2;
    pthread_detach(th);
  }
  while (__atomic_load_n(&n_ready, __ATOMIC_SEQ_CST) < nthreads) nap_ms(1);
  printf("ready %s\n", eventring_path());
  fflush(stdout);
  if (!strcmp(mode, "segv")) {
    void *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return 2;
    nowhere = page;
    nap_ms(argc > 3 ? atol(argv[3]) : 50);
    /* A real invalid access, not raise(): the kernel delivers SIGSEGV to
     * this thread while the writers are inside their probes. */
    *nowhere = 1;
  }
  for (;;) pause();
}
