/* A signal handler that drops an event while its thread is counting a drop loses neither count. */
/* The signal is raised from the test hook at the point where the runtime
 * counts a drop (ER_HOOK_DROP, drops.h), so the handler's own drop runs
 * in the middle of the interrupted one: every count must be there after.
 * The handler's event is dropped because it interrupts a probe of its
 * own thread (stw.h), or because its thread has no slot. */
#include <pthread.h>
#include <signal.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "ring_format.h"

static int val_id;
/* The signal to raise at the next drop, and at the next probe's inside
 * (then arming the drop with `then_at_drop`); 0 for none. */
static volatile sig_atomic_t at_drop, at_inside, then_at_drop;
static volatile sig_atomic_t handled;

static int hook(enum er_hook h) {
  int sig = 0;
  if (h == ER_HOOK_DROP && at_drop) {
    sig = at_drop;
    at_drop = 0;
  } else if (h == ER_HOOK_INSIDE_PROBE && at_inside) {
    sig = at_inside;
    at_inside = 0;
    at_drop = then_at_drop;
  }
  if (sig) raise(sig);
  return 0;
}

static void handler(int sig) {
  (void)sig;
  handled++;
  eventring_write_int(val_id, 9);
}

static char *setup(const char *params) {
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", params, 1), 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
  ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
  er_test_hook = hook;
  val_id = eventring_register("drop.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(val_id, 0);
  ck_assert_int_eq(eventring_start(), 0);
  return strdup(eventring_path());
}

/* Stops tracing and reads the file at `path` into `f`. */
static void stop_and_read(char *path, struct rf_file *f) {
  ck_assert_int_eq(eventring_stop(), 0);
  er_open_ring(path, f);
  free(path);
}

START_TEST(test_own_drop_interrupted) {
  /* The thread drops an event whose id the file cannot hold; a handler's
   * probe, nested in that one, drops too. */
  char *path = setup("e=16");
  at_drop = SIGUSR1;
  eventring_counter(40, 1);
  ck_assert_int_eq(handled, 1);
  struct rf_file f;
  stop_and_read(path, &f);
  ck_assert_uint_eq(f.rings[0].dropped, 2);
  rf_close(&f);
}
END_TEST

START_TEST(test_nested_drop_interrupted) {
  /* A handler interrupts a probe and drops; a second handler interrupts
   * that drop and drops too; the probe then writes its event. */
  char *path = setup("e=16");
  then_at_drop = SIGUSR2;
  at_inside = SIGUSR1;
  eventring_write_int(val_id, 1);
  ck_assert_int_eq(handled, 2);
  struct rf_file f;
  stop_and_read(path, &f);
  ck_assert_uint_eq(f.rings[0].dropped, 2);
  ck_assert_uint_eq(rf_count(&f, 0, 1, ER_UEV_INT, val_id), 1);
  rf_close(&f);
}
END_TEST

START_TEST(test_too_long_interrupted) {
  /* A ring of 2 words: the thread's int events (3 words) are too long
   * for it, and so are the handler's, ring_start and ring_stop. */
  char *path = setup("e=1");
  eventring_write_int(val_id, 0);
  at_drop = SIGUSR1;
  eventring_write_int(val_id, 1);
  ck_assert_int_eq(handled, 1);
  struct rf_file f;
  stop_and_read(path, &f);
  ck_assert_uint_eq(f.rings[0].dropped, 5);
  rf_close(&f);
}
END_TEST

static void *slotless(void *arg) {
  (void)arg;
  at_drop = SIGUSR1;
  eventring_write_int(val_id, 1);
  return NULL;
}

START_TEST(test_slotless_drop_interrupted) {
  /* One slot, the main thread's: another thread's event and its
   * handler's are counted in the extension block. */
  char *path = setup("d=1");
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, slotless, NULL), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(handled, 1);
  struct rf_file f;
  stop_and_read(path, &f);
  ck_assert_uint_eq(f.ext[ER_EXT_DROPPED], 2);
  rf_close(&f);
}
END_TEST

static TCase *tc_drops(void) {
  TCase *tc = er_tcase("drops");
  tcase_add_test(tc, test_own_drop_interrupted);
  tcase_add_test(tc, test_nested_drop_interrupted);
  tcase_add_test(tc, test_too_long_interrupted);
  tcase_add_test(tc, test_slotless_drop_interrupted);
  return tc;
}

ER_TEST_MAIN("hook_drop_signal", tc_drops)
