/* A thread stuck inside a probe at a stop is waited for once: later stops and exit do not wait for it again, and a stuck slotless thread never dereferences a forgotten file. */
/* The threads are stuck by the test hooks (ER_TEST_HOOKS, Makefile.in):
 * a thread that armed itself blocks in the hook that runs once its probe
 * has seen `live`, exactly where a stopped thread or one in a signal
 * handler that never returns would be.  Not a timing test: what is
 * checked is what the stop decided (its warning line, the mapping left
 * or not), never how long it took. */
#include <pthread.h>
#include <semaphore.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "ring_format.h"
#include "rtlib.h"
#include "stick.h"

static int val_id;

static void *stuck_thread(void *arg) {
  stick_here = (int)(intptr_t)arg + 1;
  eventring_write_int(val_id, 1);
  return NULL;
}

static const char *slots;

/* Each start writes its file in a directory of its own (the files are
 * preserved, and all have this process's pid for a name). */
static void new_dir(void) {
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", slots, 1), 0);
}

static void setup(const char *d) {
  slots = d;
  new_dir();
  sem_init(&stuck, 0, 0);
  sem_init(&release, 0, 0);
  er_test_hook = hook;
  val_id = eventring_register("stuck.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(val_id, 0);
}

static pthread_t stick(enum er_hook where) {
  pthread_t th;
  ck_assert_int_eq(
      pthread_create(&th, NULL, stuck_thread, (void *)(intptr_t)where), 0);
  while (sem_wait(&stuck) != 0) continue;
  return th;
}

/* Stops tracing, which must say that a thread stayed inside a probe;
 * `what` names the stop in the failure message. */
static void stop_past_stuck(const char *what) {
  char *said = er_stop_saying();
  ck_assert_msg(strstr(said, "a thread stayed inside a probe") != NULL,
                "%s said: %s", what, said);
  free(said);
}

/* Stops tracing, which must wait for nobody (say nothing) and unmap the
 * file at `path` (unless NULL); `what` begins the failure message. */
static void stop_quietly(const char *what, const char *path) {
  char *said = er_stop_saying();
  ck_assert_msg(said[0] == '\0', "%s: %s", what, said);
  if (path) ck_assert(!er_still_mapped(path));
  free(said);
}

START_TEST(test_retired_slot_not_waited_for_again) {
  /* Two slots: the main thread's and the stuck thread's. */
  setup("d=2");
  ck_assert_int_eq(eventring_start(), 0);
  char *path1 = strdup(eventring_path());
  pthread_t th = stick(ER_HOOK_INSIDE_PROBE);

  stop_past_stuck("first stop");
  ck_assert(er_still_mapped(path1));

  /* The stuck thread's slot is retired; the next file's stop has nobody
   * to wait for and takes its mapping away. */
  new_dir();
  ck_assert_int_eq(eventring_start(), 0);
  char *path2 = strdup(eventring_path());
  eventring_write_int(val_id, 2);
  stop_quietly("second stop waited again", path2);

  /* Released, the thread finishes its event in the first file, which
   * stayed mapped for it. */
  sem_post(&release);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  struct rf_file f;
  er_open_ring(path1, &f);
  ck_assert_uint_eq(rf_count(&f, 1, 1, ER_UEV_INT, val_id), 1);
  rf_close(&f);
  free(path1);
  free(path2);
}
END_TEST

START_TEST(test_stuck_slotless_thread) {
  /* One slot, the main thread's: the stuck thread has none. */
  setup("d=1");
  ck_assert_int_eq(eventring_start(), 0);
  char *path1 = strdup(eventring_path());
  pthread_t th = stick(ER_HOOK_INSIDE_SLOTLESS);

  stop_past_stuck("first stop");

  new_dir();
  ck_assert_int_eq(eventring_start(), 0);
  char *path2 = strdup(eventring_path());
  stop_quietly("second stop waited again", path2);

  /* Released after the file it saw is gone, the thread counts its drop
   * in that file, which stayed mapped, and nowhere else. */
  sem_post(&release);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  struct rf_file f;
  er_open_ring(path1, &f);
  ck_assert_uint_eq(f.ext[ER_EXT_DROPPED], 1);
  rf_close(&f);
  er_open_ring(path2, &f);
  ck_assert_uint_eq(f.ext[ER_EXT_DROPPED], 0);
  rf_close(&f);

  /* A third file's stop waits for nobody either. */
  new_dir();
  ck_assert_int_eq(eventring_start(), 0);
  stop_quietly("third stop", NULL);
  free(path1);
  free(path2);
}
END_TEST

START_TEST(test_stuck_slotless_thread_after_stop) {
  setup("d=1");
  ck_assert_int_eq(eventring_start(), 0);
  char *path1 = strdup(eventring_path());
  pthread_t th = stick(ER_HOOK_INSIDE_SLOTLESS);
  stop_past_stuck("stop");
  /* Released once the stop has forgotten the file (and before any other
   * start), the thread still counts its drop in that file. */
  sem_post(&release);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  struct rf_file f;
  er_open_ring(path1, &f);
  ck_assert_uint_eq(f.ext[ER_EXT_DROPPED], 1);
  rf_close(&f);
  free(path1);
}
END_TEST

static TCase *tc_stuck(void) {
  TCase *tc = er_tcase("stuck");
  tcase_add_test(tc, test_retired_slot_not_waited_for_again);
  tcase_add_test(tc, test_stuck_slotless_thread);
  tcase_add_test(tc, test_stuck_slotless_thread_after_stop);
  return tc;
}

ER_TEST_MAIN("hook_stuck_threads", tc_stuck)
