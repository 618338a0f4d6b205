/* A forked child makes its ring file at its first event, so that a child that writes none leaves none, and a child that writes keeps every event: first from a signal handler, from a thread of its own, after a pause, or in a grandchild. */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"
#include "rtlib.h"
#include "testlib.h"
#include "internal.h"

static int val_id = -1;

/* Starts tracing in a fresh directory, files kept at the stop so that the
 * children's can be read; returns the directory. */
static const char *start(void) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  val_id = eventring_register("lazy.val", EVENTRING_TYPE_INT);
  ck_assert_int_ge(val_id, 0);
  ck_assert_int_eq(eventring_start(), 0);
  return dir;
}

static int exists(const char *dir, pid_t pid) {
  char path[PATH_MAX];
  return access(er_ring_path_for(path, sizeof path, dir, pid), F_OK) == 0;
}

static int is_lifecycle(const struct rf_event *e, unsigned kind) {
  return !e->is_user && e->type == ER_EV_LIFECYCLE && e->id == kind;
}

/* Checks the child's file: one ring begins with ring_start (the child's
 * pid) and fork_child (`parent`), and the file holds exactly the user
 * ints from..to, each ring's in order, with nothing dropped. */
static void check_child(const char *dir, pid_t child, pid_t parent, int from,
                        int to) {
  char path[PATH_MAX];
  struct rf_file f;
  er_open_ring(er_ring_path_for(path, sizeof path, dir, child), &f);
  ck_assert_uint_eq(f.ext[ER_EXT_PID], (uint64_t)child);
  ck_assert_uint_eq(f.ext[ER_EXT_DROPPED], 0);
  int starts = 0, seen = 0;
  for (uint64_t d = 0; d < f.max_domains; d++) {
    int last = from - 1;
    const struct rf_ring *r = &f.rings[d];
    ck_assert_uint_eq(r->dropped, 0);
    if (r->nevents && is_lifecycle(&r->events[0],
                                   EVENTRING_LIFECYCLE_RING_START)) {
      starts++;
      ck_assert_uint_eq(r->events[0].payload[0], (uint64_t)child);
      ck_assert_uint_ge(r->nevents, 2);
      ck_assert(is_lifecycle(&r->events[1], EVENTRING_LIFECYCLE_FORK_CHILD));
      ck_assert_uint_eq(r->events[1].payload[0], (uint64_t)parent);
    }
    for (size_t i = 0; i < r->nevents; i++) {
      const struct rf_event *e = &r->events[i];
      if (e->is_user && e->type == ER_UEV_INT &&
          e->id == (unsigned)val_id) {
        int v = (int)e->payload[0];
        ck_assert_int_gt(v, last);
        ck_assert_int_le(v, to);
        last = v;
        seen++;
      }
    }
  }
  ck_assert_int_eq(starts, 1);
  ck_assert_int_eq(seen, to - from + 1);
  ck_assert_uint_eq(rf_count(&f, -1, 0, ER_EV_LIFECYCLE,
                             EVENTRING_LIFECYCLE_FORK_CHILD), 1);
  rf_close(&f);
}

/* A child that writes no event leaves no file, whether it ends with
 * _exit(), exit() or execs; it still counts as traced. */
START_TEST(test_silent_child_no_file) {
  const char *dir = start();
  pid_t kids[3];
  for (int how = 0; how < 3; how++) {
    kids[how] = fork();
    ck_assert_int_ge(kids[how], 0);
    if (kids[how] == 0) {
      ER_CHILD_CHECK(eventring_is_active() == 1, 10);
      if (how == 0) _exit(0);
      if (how == 1) exit(0);
      execl("/bin/true", "true", (char *)NULL);
      _exit(11);
    }
    er_wait_ok(kids[how]);
  }
  for (int how = 0; how < 3; how++)
    ck_assert_msg(!exists(dir, kids[how]),
                  "a child that wrote no event left a file (%s)",
                  how == 0 ? "_exit" : how == 1 ? "exit" : "exec");
  ck_assert_int_eq(er_count_entries(dir, ""), 1); /* the parent's */
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

static void on_usr1(int sig) {
  (void)sig;
  eventring_write_int(val_id, 1);
}

/* The child's first event comes from a signal handler: the file is made
 * there and holds it, then the rest. */
START_TEST(test_first_event_in_handler) {
  const char *dir = start();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
  eventring_write_int(val_id, 100);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    ER_CHILD_CHECK(raise(SIGUSR1) == 0, 20);
    for (int v = 2; v <= 5; v++) eventring_write_int(val_id, v);
    _exit(0);
  }
  er_wait_ok(pid);
  check_child(dir, pid, getpid(), 1, 5);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

static void *writer(void *arg) {
  int from = *(int *)arg;
  for (int v = from; v < from + 3; v++) eventring_write_int(val_id, v);
  return NULL;
}

/* The first event comes from a thread the child made, which has no slot:
 * the file is made with its ring, and the forking thread's events after
 * it go to the forking thread's.  Tracing is started here without the
 * remote-control thread (er_start_locked()), so that the parent is
 * single-threaded at the fork: ThreadSanitizer kills a child of a
 * multithreaded process that starts a thread. */
START_TEST(test_first_event_in_new_thread) {
  const char *dir = er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  val_id = eventring_register("lazy.val", EVENTRING_TYPE_INT);
  er_lock();
  int started = er_start_locked(NULL);
  er_unlock();
  ck_assert_int_eq(started, 0);
  eventring_write_int(val_id, 100);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    pthread_t th;
    int from = 1;
    ER_CHILD_CHECK(pthread_create(&th, NULL, writer, &from) == 0, 30);
    ER_CHILD_CHECK(pthread_join(th, NULL) == 0, 31);
    for (int v = 4; v <= 6; v++) eventring_write_int(val_id, v);
    ER_CHILD_CHECK(eventring_stop() == 0, 32);
    _exit(0);
  }
  er_wait_ok(pid);
  check_child(dir, pid, getpid(), 1, 6);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

/* A child of a paused parent writes nothing until it resumes, and its
 * file is made then; a child that stops before any event has no file,
 * and tracing is off in it. */
START_TEST(test_paused_and_stopped_child) {
  const char *dir = start();
  eventring_pause();
  pid_t resumed = fork();
  ck_assert_int_ge(resumed, 0);
  if (resumed == 0) {
    ER_CHILD_CHECK(eventring_is_active() == 0, 40);
    eventring_write_int(val_id, 99); /* paused: not written */
    ER_CHILD_CHECK(!exists(dir, getpid()), 41);
    eventring_resume();
    ER_CHILD_CHECK(eventring_is_active() == 1, 42);
    ER_CHILD_CHECK(!exists(dir, getpid()), 43);
    for (int v = 1; v <= 3; v++) eventring_write_int(val_id, v);
    ER_CHILD_CHECK(exists(dir, getpid()), 44);
    _exit(0);
  }
  er_wait_ok(resumed);
  check_child(dir, resumed, getpid(), 1, 3);
  eventring_resume();
  pid_t stopped = fork();
  ck_assert_int_ge(stopped, 0);
  if (stopped == 0) {
    ER_CHILD_CHECK(eventring_stop() == 0, 50);
    ER_CHILD_CHECK(eventring_is_active() == 0, 51);
    ER_CHILD_CHECK(eventring_path() == NULL, 52);
    eventring_write_int(val_id, 1);
    ER_CHILD_CHECK(eventring_stop() == EVENTRING_E_NOTSTARTED, 53);
    _exit(0);
  }
  er_wait_ok(stopped);
  ck_assert(!exists(dir, stopped));
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

/* A child that writes nothing forks a grandchild that writes: the
 * grandchild's file names the child as its parent, and the child has
 * none. */
START_TEST(test_grandchild_of_silent_child) {
  const char *dir = start();
  int fd[2];
  ck_assert_int_eq(pipe(fd), 0);
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    close(fd[0]);
    pid_t g = fork();
    ER_CHILD_CHECK(g >= 0, 60);
    if (g == 0) {
      for (int v = 1; v <= 2; v++) eventring_write_int(val_id, v);
      _exit(0);
    }
    int st;
    ER_CHILD_CHECK(waitpid(g, &st, 0) == g && WIFEXITED(st) &&
                    WEXITSTATUS(st) == 0,
                61);
    ER_CHILD_CHECK(write(fd[1], &g, sizeof g) == (ssize_t)sizeof g, 62);
    _exit(0);
  }
  close(fd[1]);
  pid_t grand = 0;
  ck_assert_int_eq(read(fd[0], &grand, sizeof grand), (ssize_t)sizeof grand);
  close(fd[0]);
  er_wait_ok(child);
  ck_assert(!exists(dir, child));
  check_child(dir, grand, child, 1, 2);
  ck_assert_int_eq(eventring_stop(), 0);
}
END_TEST

/* The directory is the parent's at the fork, even when the child changes
 * its working directory before its first event. */
START_TEST(test_file_beside_parent_after_chdir) {
  char dir[64], rel[80];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  ck_assert_int_eq(chdir(dir), 0);
  /* A relative directory, resolved where the parent is at the fork. */
  ck_assert_int_eq(mkdir("sub", 0700), 0);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_DIR", "sub", 1), 0);
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  val_id = eventring_register("lazy.val", EVENTRING_TYPE_INT);
  ck_assert_int_eq(eventring_start(), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    ER_CHILD_CHECK(chdir("/") == 0, 70);
    eventring_write_int(val_id, 1);
    _exit(0);
  }
  er_wait_ok(pid);
  ck_assert_int_eq(eventring_stop(), 0);
  snprintf(rel, sizeof rel, "%s/sub", dir);
  check_child(rel, pid, getpid(), 1, 1);
  er_rmdir(rel);
  ck_assert_int_eq(chdir("/"), 0);
}
END_TEST

static TCase *tc_fork_lazy(void) {
  TCase *tc = er_tcase("fork_lazy");
  tcase_add_test(tc, test_silent_child_no_file);
  tcase_add_test(tc, test_first_event_in_handler);
  tcase_add_test(tc, test_first_event_in_new_thread);
  tcase_add_test(tc, test_paused_and_stopped_child);
  tcase_add_test(tc, test_grandchild_of_silent_child);
  tcase_add_test(tc, test_file_beside_parent_after_chdir);
  return tc;
}

ER_TEST_MAIN("fork_lazy", tc_fork_lazy)
