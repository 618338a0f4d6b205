/* A signal handler's probe in a forked child, before eventring's fork handler has run there, writes into the child's own file, never into its parent's. */
/* The child shares its parent's ring file mapping until eventring's
 * fork handler gives it up; a probe that runs before then writes at the
 * parent's tail, as a second writer in the parent's ring (the soak saw
 * it under TSan, which may run a signal deferred in the parent in the
 * child too: a timestamp going back in the parent's ring where the
 * child's copy of a handler's event overwrote the parent's).  The test
 * puts the signal exactly there: a fork handler of its own, installed
 * before eventring's and so run before it in the child, raises SIGUSR1,
 * whose handler writes an event.  The event must reach the child's file,
 * and the parent's must not change. */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "eventring.h"
#include "harness.h"
#include "ring_format.h"

static int handler_id = -1;
static volatile sig_atomic_t raise_in_child, handler_ran;

static void on_usr1(int sig) {
  (void)sig;
  eventring_write_int(handler_id, (int64_t)getpid());
  handler_ran = 1;
}

static void child_raise(void) {
  if (raise_in_child) raise(SIGUSR1);
}

/* Runs before the library's constructor (which has the default
 * priority, so comes after every numbered one in a static link) and so
 * installs its child handler first: fork handlers for the child run in
 * the order they were installed. */
__attribute__((constructor(101))) static void install_first(void) {
  pthread_atfork(NULL, NULL, child_raise);
}

/* The user ints of `f` (every domain) whose value is `v`. */
static size_t ints_of(const struct rf_file *f, int64_t v) {
  size_t n = 0;
  for (uint64_t d = 0; d < f->max_domains; d++)
    for (size_t i = 0; i < f->rings[d].nevents; i++) {
      const struct rf_event *e = &f->rings[d].events[i];
      if (e->is_user && e->type == ER_UEV_INT && e->id == (unsigned)handler_id &&
          (int64_t)e->payload[0] == v)
        n++;
    }
  return n;
}

START_TEST(test_handler_before_fork_handler) {
  char dir[64], parent_path[PATH_MAX], child_path[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", er_tmpdir());
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  handler_id = eventring_register("fork.handler", EVENTRING_TYPE_INT);
  ck_assert_int_ge(handler_id, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);

  ck_assert_int_eq(eventring_start(), 0);
  eventring_write_int(handler_id, (int64_t)getpid());
  raise_in_child = 1;
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    /* The handler ran (before eventring's fork handler, or as soon as it
     * let signals in); the child's file is kept for the parent to read. */
    int ran = handler_ran;
    _exit(eventring_stop() != 0 ? 4 : ran ? 0 : 3);
  }
  raise_in_child = 0;
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  /* TSan runs a signal's handler at the next call it intercepts, which in
   * the child may come after the child's check, or after its file is
   * stopped: there the child's side is only held to writing the event at
   * most once, into its own file. */
  const char *san = getenv("EVENTRING_SANITIZER");
  int tsan = san && strcmp(san, "thread") == 0;
  ck_assert_msg(WIFEXITED(status) && (WEXITSTATUS(status) == 0 ||
                                      (tsan && WEXITSTATUS(status) == 3)),
                "the child ended with status %#x (3: its SIGUSR1 handler "
                "never ran; 4: eventring_stop failed)", status);

  /* Read before the parent writes again: its next event would go where
   * its own tail says, over whatever the child put there. */
  struct rf_file f;
  er_open_ring(er_ring_path_for(parent_path, sizeof parent_path, dir, 0), &f);
  ck_assert_msg(ints_of(&f, pid) == 0 && f.rings[0].written == 2,
                "the child's handler wrote into its parent's ring (%zu of "
                "its events there, %llu written where the parent wrote 2)",
                ints_of(&f, pid), (unsigned long long)f.rings[0].written);
  ck_assert_uint_eq(ints_of(&f, getpid()), 1);
  ck_assert_uint_eq(f.rings[0].nevents, 2); /* ring_start, the int */
  rf_close(&f);
  ck_assert_int_eq(eventring_stop(), 0);

  /* The child's file is made by its first event: under TSan, whose
   * handler may not have run before the child stopped tracing, there may
   * be none. */
  er_ring_path_for(child_path, sizeof child_path, dir, pid);
  size_t in_child = 0;
  if (!tsan || access(child_path, F_OK) == 0) {
    er_open_ring(child_path, &f);
    in_child = ints_of(&f, pid);
    rf_close(&f);
  }
  ck_assert_msg(in_child == 1 || (tsan && in_child == 0),
                "the child's handler's event is %zu times in the child's file",
                in_child);
  er_rmdir(dir);
}
END_TEST

static TCase *tc_fork_signal(void) {
  TCase *tc = er_tcase("fork_signal");
  tcase_add_test(tc, test_handler_before_fork_handler);
  return tc;
}

ER_TEST_MAIN("fork_signal", tc_fork_signal)
