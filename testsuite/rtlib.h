/* rtlib.h -- steps the runtime's C tests share: starting a preserved
 * file, stopping while capturing what the stop says, asking whether the
 * process still maps a file.
 *
 * Like testlib.h, every function fails the running test (ck_assert) on an
 * error the test did not ask about.  Unlike testlib.o, rtlib.o calls
 * libeventring (or the test-hook build, libeventring_t, which test_hook_*
 * link instead).
 */
#ifndef EVENTRING_TEST_RTLIB_H
#define EVENTRING_TEST_RTLIB_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>
#include <unistd.h>

#include "eventring.h"

/* Starts tracing with the file preserved at stop, and OCAMLRUNPARAM set
 * to params unless params is NULL, in the directory of the test's last
 * er_tmpdir() (which the test calls itself: harness.h records the
 * directories of its own translation unit).  Returns the file's path, to
 * free. */
char *er_start_preserved(const char *params);

/* Stops tracing (eventring_stop() must return 0); returns what it wrote
 * to stderr, to free. */
char *er_stop_saying(void);

/* The wall clock pair `which` (EVENTRING_WALLCLOCK_*) of the ring file
 * `path`, which must open, in *w: returns eventring_cursor_wallclock()'s
 * result. */
int er_file_wallclock(const char *path, int which, eventring_wallclock *w);

/* 1 when this process still maps the file at `path` (removed or not),
 * else 0. */
int er_still_mapped(const char *path);

/* A baton: threads take numbered turns, 0, 1, 2, ..., each waiting for
 * its own, so that a test forces an interleaving instead of leaving it
 * to the scheduler.  er_baton_take() returns holding the baton's lock;
 * er_baton_pass() ends the turn and lets the next one go. */
struct er_baton {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int turn; /* the turn being played */
};
#define ER_BATON_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0}
void er_baton_take(struct er_baton *b, int turn);
void er_baton_pass(struct er_baton *b);

/* Joins the calling thread to domain slot 0 as worker `who`: thread id
 * who * 10, thread name "worker <who>". */
void er_join0_worker(int who);

/* Maps a one-page file of its own, dir/other, cuts it to 0 bytes and
 * returns the mapping: a store there raises a SIGBUS that is not about a
 * ring file. */
volatile char *er_cut_mapping(const char *dir);

/* Stores into a fresh er_cut_mapping(dir): raises that SIGBUS, and
 * returns only when a handler returned from it. */
void er_store_to_cut_mapping(const char *dir);

/* Asserts that the wait status `status` is a death by SIGBUS, as an
 * untraced process's would be.  Under a sanitizer (EVENTRING_SANITIZER
 * set and not "none") the handler before eventring's is the sanitizer's,
 * which reports the fault and aborts (ASan) or exits 66 (TSan): there any
 * signal or exit status 66 will do.  `what` ends the failure message. */
void er_assert_sigbus_death(int status, const char *what);

/* In the child of a fork, which must not use Check's assertions (they
 * would report through the parent's test): exits with `code` unless
 * `cond` holds.  The parent reads the code with er_wait_ok(). */
#define ER_CHILD_CHECK(cond, code) \
  do {                             \
    if (!(cond)) _exit(code);      \
  } while (0)

/* Waits for the child `pid`, which must exit with status 0 (else the
 * message gives its wait status: the failed ER_CHILD_CHECK's code). */
void er_wait_ok(pid_t pid);

#endif
