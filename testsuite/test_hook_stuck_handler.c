/* A signal handler that interrupted a probe and blocks there holds its thread inside the probe at teardown: eventring_stop() gives up on it with one line, leaves the file mapped for it and retires its slot; the handler's own event is dropped and counted, and the file stays whole. */
/* The signal lands inside the probe on every run: the thread sends it to
 * itself from the hook that runs once its probe has seen the world open
 * (ER_TEST_HOOKS, Makefile.in), and a signal a thread sends itself is
 * handled before pthread_kill() returns, under ThreadSanitizer too (which
 * defers only signals from elsewhere).  Not a timing test: what is
 * checked is what the stop decided (its line, the mapping left, the slot
 * retired), never how long it waited. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "ring_format.h"
#include "rtlib.h"

/* Set by the writer thread for its next probe only. */
static __thread int raise_in_probe;

/* Atomics: ThreadSanitizer does not see a signal as synchronisation, and
 * the handler runs on the writer thread while the test reads these. */
static int ring_fd = -1;     /* the ring file, for pread */
static int64_t dropped_off;  /* the DROPPED word of the writer's ring */
static uint64_t handler_dropped = UINT64_MAX; /* what its probe added */
static int report[2], release[2];
static int val_id;

static int hook(enum er_hook h) {
  if (h == ER_HOOK_INSIDE_PROBE && raise_in_probe) {
    raise_in_probe = 0;
    pthread_kill(pthread_self(), SIGUSR1);
  }
  return 0;
}

/* Emits an event of its own (which must be dropped: its thread is inside
 * a probe), says how much DROPPED grew, and blocks until released. */
static void handler(int sig) {
  (void)sig;
  uint64_t before = 0, after = 0;
  int fd = __atomic_load_n(&ring_fd, __ATOMIC_SEQ_CST);
  off_t off = (off_t)__atomic_load_n(&dropped_off, __ATOMIC_SEQ_CST);
  if (pread(fd, &before, 8, off) != 8) return;
  eventring_begin(EVENTRING_PHASE_MAJOR);
  if (pread(fd, &after, 8, off) != 8) return;
  __atomic_store_n(&handler_dropped, after - before, __ATOMIC_SEQ_CST);
  char c = 1;
  if (write(report[1], &c, 1) != 1) return;
  if (read(release[0], &c, 1) != 1) return;
}

static void *writer(void *arg) {
  int *dom = arg;
  eventring_begin(EVENTRING_PHASE_MINOR); /* takes a slot */
  int d = eventring_domain_id();
  uint64_t meta[ER_META_WORDS];
  if (pread(ring_fd, meta, sizeof meta, 0) != sizeof meta) return NULL;
  __atomic_store_n(&dropped_off,
                   (int64_t)(meta[ER_META_HEADERS_OFFSET] +
                             (uint64_t)d * meta[ER_META_RING_HEADER_SIZE] +
                             8 * ER_RING_DROPPED),
                   __ATOMIC_SEQ_CST);
  __atomic_store_n(dom, d, __ATOMIC_SEQ_CST);
  raise_in_probe = 1;
  eventring_write_int(val_id, 1); /* the handler runs inside this probe */
  /* Released: the probe finished, with tracing stopped; more probes do
   * nothing. */
  for (int i = 0; i < 1000; i++) eventring_begin(EVENTRING_PHASE_MINOR);
  return NULL;
}

START_TEST(test_handler_stuck_at_teardown) {
  const char *dir = er_tmpdir();
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAMLRUNPARAM", "e=12,d=4", 1);
  er_test_hook = hook;
  val_id = eventring_register("stuck.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(val_id, 0);
  ck_assert_int_eq(eventring_start(), 0);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", eventring_path());
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  __atomic_store_n(&ring_fd, fd, __ATOMIC_SEQ_CST);
  ck_assert_int_eq(pipe(report), 0);
  ck_assert_int_eq(pipe(release), 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);

  int dom = -1;
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, writer, &dom), 0);
  /* A generous bound: the handler runs at once, but the machine may be
   * loaded. */
  struct pollfd p = {report[0], POLLIN, 0};
  ck_assert_msg(poll(&p, 1, 20000) == 1, "the handler never ran");
  ck_assert_uint_eq(__atomic_load_n(&handler_dropped, __ATOMIC_SEQ_CST), 1);
  ck_assert_int_ge(__atomic_load_n(&dom, __ATOMIC_SEQ_CST), 0);

  /* The stop gives up on the thread: one line on stderr, the mapping
   * left in place, the slot retired. */
  struct er_capture cap;
  er_stderr_begin(&cap);
  int rc = eventring_stop();
  char *err = er_stderr_end(&cap);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(er_count_lines(err), 1);
  ck_assert_msg(strstr(err, "eventring: ") == err &&
                    strstr(err, "a thread stayed inside a probe") &&
                    strstr(err, path),
                "stderr: %s", err);
  free(err);
  ck_assert(er_still_mapped(path));

  /* The handler returns and the interrupted probe finishes in the mapping
   * that was left for it; the thread goes on and exits. */
  char c = 1;
  ck_assert_int_eq(write(release[1], &c, 1), 1);
  ck_assert_int_eq(pthread_join(th, NULL), 0);

  /* The file is whole (the decoder checks every header) and counts the
   * handler's event as dropped. */
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_ge(f.rings[dom].dropped, 1);
  rf_close(&f);

  /* Tracing starts again; the retired slot is never handed out. */
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(eventring_start(), 0);
  ck_assert_int_eq(eventring_domain_bind(dom), EVENTRING_E_BUSY);
  ck_assert_int_eq(eventring_stop(), 0);
  close(fd);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_handler(void) {
  TCase *tc = er_tcase("handler");
  tcase_add_test(tc, test_handler_stuck_at_teardown);
  return tc;
}

ER_TEST_MAIN("hook_stuck_handler", tc_handler)
