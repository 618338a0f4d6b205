/* A slot retired by a remote pause (its thread stuck inside a probe) is never written again, and no stop unmaps a file its stuck thread may still write into. */
/* The pause, resume and readers' leases of remote control hold the
 * probes off without closing the world (stw.h, HOLDING PROBES OFF); a
 * thread that stays inside a probe meanwhile has its slot retired.  The
 * thread is stuck by the test hooks (as in test_hook_stuck_threads.c)
 * and remote control is applied as the watcher applies it, under the
 * lock.  Not a timing test: what is checked is what the stop decided and
 * what the file holds, never how long anything took. */
#include <pthread.h>
#include <semaphore.h>

#include "eventring.h"
#include "harness.h"
#include "internal.h"
#include "remote.h"
#include "ring_format.h"
#include "rtlib.h"
#include "stick.h"

static int val_id;

/* The worker writes `value` when told to, stuck inside the probe when
 * `stick` says so; value 0 ends it. */
static struct {
  sem_t go, done;
  int value, stick;
} cmd;

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    while (sem_wait(&cmd.go) != 0) continue;
    if (cmd.value == 0) return NULL;
    if (cmd.stick) stick_here = (int)ER_HOOK_INSIDE_PROBE + 1;
    eventring_write_int(val_id, cmd.value);
    sem_post(&cmd.done);
  }
}

/* Has the worker write `value`; returns once it is stuck inside the
 * probe (`stick`) or has written. */
static void order(int value, int stick) {
  cmd.value = value;
  cmd.stick = stick;
  sem_post(&cmd.go);
  if (value == 0) return;
  while (sem_wait(stick ? &stuck : &cmd.done) != 0) continue;
}

/* Lets the stuck worker go and waits for its event to be done. */
static void let_go(void) {
  sem_post(&release);
  while (sem_wait(&cmd.done) != 0) continue;
}

static void remote(void (*apply)(void)) {
  er_lock();
  apply();
  er_unlock();
}

static void new_dir(void) {
  er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  ck_assert_int_eq(setenv("OCAMLRUNPARAM", "d=4", 1), 0);
}

static pthread_t setup(void) {
  new_dir();
  sem_init(&stuck, 0, 0);
  sem_init(&release, 0, 0);
  sem_init(&cmd.go, 0, 0);
  sem_init(&cmd.done, 0, 0);
  er_test_hook = hook;
  val_id = eventring_register("retired.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(val_id, 0);
  ck_assert_int_eq(eventring_start(), 0);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, worker, NULL), 0);
  return th;
}

/* Events in slot `domain` of the file at `path`, and how many of them are
 * the worker's value `v` (-1: any value). */
static size_t events_in(const char *path, int domain, int v, size_t *vals) {
  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[domain];
  size_t n = r->nevents;
  *vals = 0;
  for (size_t i = 0; i < n; i++) {
    const struct rf_event *e = &r->events[i];
    if (e->is_user && e->type == ER_UEV_INT && e->id == (unsigned)val_id &&
        (v < 0 || e->payload[0] == (uint64_t)v))
      ++*vals;
  }
  rf_close(&f);
  return n;
}

static void readers_hold(void) { er_readers_came_locked(); }
static void readers_let_go(void) { er_readers_left_locked(); }

/* Retires the slot of the worker, stuck inside a probe, by holding the
 * probes off as `how` says, lets it finish its event, and lets the
 * probes in again. */
enum how { REMOTE_PAUSE, READERS_LEASE };
static void retire_and_let_go(enum how how) {
  if (how == REMOTE_PAUSE) {
    remote(er_remote_pause_locked);
    let_go();
    remote(er_remote_resume_locked);
  } else {
    /* Paused by the program itself (no wait), resumed for a reader (the
     * hold), paused again when it lets go. */
    eventring_pause();
    remote(readers_hold);
    let_go();
    remote(readers_let_go);
    eventring_resume();
  }
}

static void released_stuck_again_stopped(enum how how) {
  pthread_t th = setup();
  char *path = strdup(eventring_path());
  order(1, 1);                        /* takes slot 1, stuck inside */
  retire_and_let_go(how);             /* slot 1 retired meanwhile */
  order(2, 1);                        /* its next event: stuck again */
  char *said = er_stop_saying();
  int mapped = er_still_mapped(path);
  let_go();                           /* must not write into a hole */
  ck_assert_msg(strstr(said, "a thread stayed inside a probe") != NULL,
                "stop said: %s", said);
  ck_assert(mapped);
  free(said);
  order(3, 0);                        /* stopped: nothing */
  order(0, 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);

  /* Slot 1 holds its domain_spawn and the event it was inside, nothing
   * after; the worker's next event went to a slot of its own. */
  size_t vals;
  ck_assert_uint_eq(events_in(path, 1, 1, &vals), 2);
  ck_assert_uint_eq(vals, 1);
  ck_assert_uint_eq(events_in(path, 2, 2, &vals), 2);
  ck_assert_uint_eq(vals, 1);
  for (int d = 0; d < 4; d++) {
    events_in(path, d, 3, &vals);
    ck_assert_uint_eq(vals, 0);
  }
  free(path);
}

START_TEST(test_paused_released_resumed_stuck_again_stopped) {
  released_stuck_again_stopped(REMOTE_PAUSE);
}
END_TEST

START_TEST(test_leased_released_stuck_again_stopped) {
  released_stuck_again_stopped(READERS_LEASE);
}
END_TEST

START_TEST(test_stuck_through_pause_and_resume) {
  pthread_t th = setup();
  char *path1 = strdup(eventring_path());
  order(1, 1);
  remote(er_remote_pause_locked);
  remote(er_remote_resume_locked);
  /* Still inside its probe: the stop must leave the file mapped for it,
   * retired or not. */
  char *said = er_stop_saying();
  int mapped = er_still_mapped(path1);
  let_go();
  ck_assert_msg(strstr(said, "a thread stayed inside a probe") != NULL,
                "stop said: %s", said);
  ck_assert(mapped);
  free(said);

  /* Its next event, in the next file, goes to another slot than the
   * retired one; the first file gets nothing more. */
  new_dir();
  ck_assert_int_eq(eventring_start(), 0);
  char *path2 = strdup(eventring_path());
  order(2, 0);
  said = er_stop_saying();
  ck_assert_msg(said[0] == '\0', "second stop: %s", said);
  free(said);
  order(0, 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);

  size_t vals;
  ck_assert_uint_eq(events_in(path1, 1, -1, &vals), 2);
  ck_assert_uint_eq(vals, 1);
  events_in(path2, 1, -1, &vals);
  ck_assert_uint_eq(vals, 0);
  events_in(path2, 2, 2, &vals);
  ck_assert_uint_eq(vals, 1);
  free(path1);
  free(path2);
}
END_TEST

static TCase *tc_retired(void) {
  TCase *tc = er_tcase("retired");
  tcase_add_test(tc, test_paused_released_resumed_stuck_again_stopped);
  tcase_add_test(tc, test_leased_released_stuck_again_stopped);
  tcase_add_test(tc, test_stuck_through_pause_and_resume);
  return tc;
}

ER_TEST_MAIN("hook_retired_slot", tc_retired)
