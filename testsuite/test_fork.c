/* A forked child gets a ring file of its own and leaves its parent's file intact. */
#include <pthread.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "rtlib.h"
#include "testlib.h"

static int val_id;

static char *start_preserved(char *dir, size_t n) {
  snprintf(dir, n, "%s", er_tmpdir());
  char *path = er_start_preserved(NULL);
  val_id = eventring_register("fork.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(val_id, 0);
  return path;
}

static int is_lifecycle(const struct rf_event *e, unsigned kind) {
  return !e->is_user && e->type == ER_EV_LIFECYCLE && e->id == kind;
}

/* The child's side: it traces into its own file, which its exit-time
 * teardown closes with ring_stop, or an explicit stop when `stop` is set
 * (a child forked from a thread leaves with _exit: exit() would have
 * LeakSanitizer count the vanished main thread's memory as leaked). */
static void child_body(const char *parent_path, int stop) {
  ER_CHILD_CHECK(eventring_is_active() == 1, 10);
  const char *p = eventring_path();
  ER_CHILD_CHECK(p != NULL, 11);
  ER_CHILD_CHECK(strcmp(p, parent_path) != 0, 12);
  for (int v = 101; v <= 105; v++) eventring_write_int(val_id, v);
  if (stop) {
    ER_CHILD_CHECK(eventring_stop() == 0, 14);
    _exit(0);
  }
  exit(0);
}

/* Checks the parent's file: values 1..10 before the fork point and
 * 11..20 after, none of the child's, and exactly the parent's own
 * ring_start and ring_stop.  `fork_parent_pid` is the child's pid when
 * the fork went through eventring_fork(), else 0 (no fork_parent). */
static void check_parent(const char *path, pid_t fork_parent_pid) {
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert_uint_eq(f.ext[ER_EXT_PID], (uint64_t)getpid());
  const struct rf_ring *r = &f.rings[0];
  ck_assert(is_lifecycle(&r->events[0], EVENTRING_LIFECYCLE_RING_START));
  ck_assert_uint_eq(r->events[0].payload[0], (uint64_t)getpid());
  int next = 1, saw_fork_parent = 0;
  for (size_t i = 0; i < r->nevents; i++) {
    const struct rf_event *e = &r->events[i];
    if (is_lifecycle(e, EVENTRING_LIFECYCLE_FORK_PARENT)) {
      ck_assert_int_eq(next, 11);
      ck_assert_uint_eq(e->payload[0], (uint64_t)fork_parent_pid);
      saw_fork_parent++;
    }
    if (e->is_user) {
      ck_assert_uint_eq(e->type, ER_UEV_INT);
      ck_assert_int_eq((int64_t)e->payload[0], next);
      next++;
    }
  }
  ck_assert_int_eq(next, 21);
  ck_assert_int_eq(saw_fork_parent, fork_parent_pid ? 1 : 0);
  ck_assert(is_lifecycle(&r->events[r->nevents - 1],
                         EVENTRING_LIFECYCLE_RING_STOP));
  ck_assert_uint_eq(rf_count(&f, -1, 1, ER_UEV_INT, -1), 20);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_RING_START), 1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_RING_STOP), 1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_FORK_CHILD), 0);
  rf_close(&f);
}

/* Checks the child's file: ring_start (child pid), fork_child (parent
 * pid), the child's five values, then ring_stop, all in one ring, which
 * is `ring` (the forking thread's slot). */
static void check_child(const char *dir, pid_t child, int ring) {
  char path[PATH_MAX];
  er_ring_path_for(path, sizeof path, dir, child);
  struct rf_file f;
  er_open_ring(path, &f);
  ck_assert(f.has_ext);
  ck_assert_uint_eq(f.ext[ER_EXT_PID], (uint64_t)child);
  const struct rf_ring *r = NULL;
  for (uint64_t d = 0; d < f.max_domains; d++)
    if (f.rings[d].nevents > 0) {
      ck_assert_msg(r == NULL, "child events in more than one ring");
      r = &f.rings[d];
    }
  ck_assert_ptr_nonnull(r);
  ck_assert_ptr_eq(r, &f.rings[ring]);
  ck_assert_uint_eq(r->nevents, 8);
  ck_assert(is_lifecycle(&r->events[0], EVENTRING_LIFECYCLE_RING_START));
  ck_assert_uint_eq(r->events[0].payload[0], (uint64_t)child);
  ck_assert(is_lifecycle(&r->events[1], EVENTRING_LIFECYCLE_FORK_CHILD));
  ck_assert_uint_eq(r->events[1].payload[0], (uint64_t)getpid());
  for (int k = 0; k < 5; k++) {
    const struct rf_event *e = &r->events[2 + k];
    ck_assert(e->is_user && e->type == ER_UEV_INT);
    ck_assert_uint_eq(e->id, (unsigned)val_id);
    ck_assert_int_eq((int64_t)e->payload[0], 101 + k);
  }
  ck_assert(is_lifecycle(&r->events[7], EVENTRING_LIFECYCLE_RING_STOP));
  /* Names registered in the parent carry over to the child's file. */
  ck_assert_str_eq(rf_user_name(&f, (unsigned)val_id), "fork.val");
  rf_close(&f);
}

static void run_fork_test(pid_t (*do_fork)(void), int records_parent) {
  char dir[64];
  char *path = start_preserved(dir, sizeof dir);
  for (int v = 1; v <= 10; v++) eventring_write_int(val_id, v);
  pid_t child = do_fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) child_body(path, 0);
  er_wait_ok(child);
  /* The parent traces on into its own file. */
  ck_assert_int_eq(eventring_is_active(), 1);
  ck_assert_str_eq(eventring_path(), path);
  for (int v = 11; v <= 20; v++) eventring_write_int(val_id, v);
  ck_assert_int_eq(eventring_stop(), 0);

  check_parent(path, records_parent ? child : 0);
  check_child(dir, child, 0);
  ck_assert_int_eq(er_count_entries(dir, ""), 2);
  free(path);
  er_rmdir(dir);
}

START_TEST(test_eventring_fork) { run_fork_test(eventring_fork, 1); }
END_TEST

START_TEST(test_plain_fork) { run_fork_test(fork, 0); }
END_TEST

/* Forking from a thread other than the starter: both fork_parent and the
 * child's ring are in that thread's slot. */
struct forker {
  pid_t child;
  int id;
  const char *path;
};

static void *forking_thread(void *arg) {
  struct forker *k = arg;
  for (int v = 1; v <= 10; v++) eventring_write_int(val_id, v);
  k->id = eventring_domain_id();
  k->child = eventring_fork();
  if (k->child == 0) {
    ER_CHILD_CHECK(eventring_domain_id() == k->id, 13);
    child_body(k->path, 1);
  }
  return NULL;
}

START_TEST(test_fork_from_thread) {
  char dir[64];
  char *path = start_preserved(dir, sizeof dir);
  struct forker k = {.child = -1, .id = -1, .path = path};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, forking_thread, &k), 0);
  pthread_join(th, NULL);
  ck_assert_int_gt(k.child, 0);
  ck_assert_int_eq(k.id, 1);
  er_wait_ok(k.child);
  ck_assert_int_eq(eventring_stop(), 0);

  struct rf_file f;
  er_open_ring(path, &f);
  const struct rf_ring *r = &f.rings[1];
  int saw = 0;
  for (size_t i = 0; i < r->nevents; i++)
    if (is_lifecycle(&r->events[i], EVENTRING_LIFECYCLE_FORK_PARENT)) {
      ck_assert_uint_eq(r->events[i].payload[0], (uint64_t)k.child);
      saw++;
    }
  ck_assert_int_eq(saw, 1);
  ck_assert_uint_eq(rf_count(&f, 1, 1, ER_UEV_INT, val_id), 10);
  ck_assert_uint_eq(rf_count(&f, -1, 1, ER_UEV_INT, -1), 10);
  rf_close(&f);
  check_child(dir, k.child, 1);
  free(path);
  er_rmdir(dir);
}
END_TEST

/* Forking while tracing is off gives the child no file, whichever fork. */
static void run_fork_untraced(pid_t (*do_fork)(void)) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  val_id = eventring_register("fork.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(val_id, 0);
  pid_t child = do_fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    ER_CHILD_CHECK(eventring_path() == NULL, 20);
    ER_CHILD_CHECK(eventring_is_active() == 0, 21);
    eventring_write_int(val_id, 1);
    eventring_begin(EVENTRING_PHASE_MINOR);
    eventring_end(EVENTRING_PHASE_MINOR);
    exit(0);
  }
  er_wait_ok(child);
  ck_assert_int_eq(er_count_entries(dir, ""), 0);
  er_rmdir(dir);
}

START_TEST(test_eventring_fork_untraced) { run_fork_untraced(eventring_fork); }
END_TEST

START_TEST(test_plain_fork_untraced) { run_fork_untraced(fork); }
END_TEST

/* After a stop, tracing is off again: a child forked then has no file. */
START_TEST(test_fork_after_stop) {
  char dir[64];
  char *path = start_preserved(dir, sizeof dir);
  eventring_write_int(val_id, 1);
  ck_assert_int_eq(eventring_stop(), 0);
  pid_t child = eventring_fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    ER_CHILD_CHECK(eventring_path() == NULL, 30);
    eventring_write_int(val_id, 2);
    exit(0);
  }
  er_wait_ok(child);
  ck_assert_int_eq(er_count_entries(dir, ""), 1);
  ck_assert_int_eq(access(path, F_OK), 0);
  free(path);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_fork(void) {
  TCase *tc = er_tcase("fork");
  tcase_add_test(tc, test_eventring_fork);
  tcase_add_test(tc, test_plain_fork);
  tcase_add_test(tc, test_fork_from_thread);
  tcase_add_test(tc, test_eventring_fork_untraced);
  tcase_add_test(tc, test_plain_fork_untraced);
  tcase_add_test(tc, test_fork_after_stop);
  return tc;
}

ER_TEST_MAIN("fork", tc_fork)
