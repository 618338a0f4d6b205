/* testlib.h -- what the integration tests share beyond harness.h: running
 * the eventring command and the helper programs bounded in time, reading
 * their output, the OCaml 5 vectors and the lines `eventring dump` prints.
 *
 * Everything here fails the running test (Check's ck_assert family) on an
 * error the test did not ask about, so that callers read as the steps a
 * user would take.  None of it needs libeventring: testlib.o can be pulled
 * from libtesthelp.a by any test, test_nolib_* included.
 *
 * A process is always waited for with a bound (er_wait_for), killed when
 * it runs over, and its wait status is then -1; tests never assert how
 * long anything took.
 */
#ifndef EVENTRING_TEST_TESTLIB_H
#define EVENTRING_TEST_TESTLIB_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

/* Seconds a program run by er_run() or er_run_tool() may take before it
 * is killed and reported as timed out (status -1), and the bound of the
 * other waits here: it turns a hang into a failure, and is generous for a
 * loaded machine running a sanitizer build (babeltrace2 reading 2,000
 * streams took over 20 s there).  Below the harness's ER_TEST_TIMEOUT. */
#define ER_RUN_TIMEOUT 60.0

/* ------------------------------------------------------------------ */
/* Time and numbers.                                                    */

/* CLOCK_MONOTONIC in seconds. */
double er_now(void);

/* Sleeps `ms` milliseconds, however many signals arrive meanwhile. */
void er_sleep_ms(long ms);

/* The next number of a xorshift64 generator whose (nonzero) state is
 * *state: the same numbers on every run. */
uint64_t er_xorshift(uint64_t *state);

/* Shuffles v[0 .. n-1] (Fisher-Yates) with er_xorshift(state). */
void er_shuffle(uint64_t *v, size_t n, uint64_t *state);

/* ------------------------------------------------------------------ */
/* What the build provides.                                             */

/* The eventring command (EVENTRING_TEST_TOOL) when it is set and
 * executable, else NULL. */
const char *er_tool_path(void);

/* The helper program EVENTRING_TEST_PROGS/`name` when it exists and is
 * executable, else NULL.  Static storage, overwritten by the next call. */
const char *er_prog_path(const char *name);

/* Nonzero in a build configured without tracing (EVENTRING_TRACING=no),
 * where nothing writes ring files. */
int er_tracing_off(void);

/* Skips the rest of the current test unless the eventring command is
 * there. */
#define ER_NEED_TOOL()                                                     \
  do {                                                                     \
    if (!er_tool_path()) ER_SKIP("EVENTRING_TEST_TOOL is not set");        \
  } while (0)

/* ------------------------------------------------------------------ */
/* Processes.                                                           */

/* Descriptors for er_spawn(): /dev/null, or the test's own. */
#define ER_FD_NULL (-1)
#define ER_FD_KEEP (-2)

/* er_spawn() flags. */
enum {
  /* Search argv[0] in PATH (execvp) rather than take it as a path. */
  ER_SPAWN_PATH = 1,
  /* Give the child SIGINT's default action: a shell that runs the tests
   * in the background ignores it for them, an ignored signal stays
   * ignored across exec, and a test of Ctrl-C wants what a terminal
   * gives. */
  ER_SPAWN_SIGINT = 2,
};

/* Forks with the child's stdout and stderr going to two new temporary
 * files, *out and *err (read them with er_read_stream() once the child
 * has ended).  Returns the child's pid, 0 in the child. */
pid_t er_fork_captured(FILE **out, FILE **err);

/* Starts argv[0] with `in_fd`, `out_fd` and `err_fd` as its stdin, stdout
 * and stderr (ER_FD_NULL or ER_FD_KEEP allowed), the test's environment
 * plus `env` ("NAME=VALUE" or NULL), and returns its pid; an exec failure
 * shows as exit status 127. */
pid_t er_spawn(char *const argv[], int in_fd, int out_fd, int err_fd,
               const char *env, int flags);

/* Waits for `pid` for at most `seconds`, killing it on timeout.  Returns
 * the wait status, or -1 on timeout. */
int er_wait_for(pid_t pid, double seconds);

/* Stops process `pid` with SIGSTOP and waits (at most ER_RUN_TIMEOUT)
 * until every thread of it is stopped: kill() returns before a thread
 * running on another CPU has taken the signal, and a test that needs a
 * process that cannot answer must not race with its last steps. */
void er_stop(pid_t pid);

/* Waits (at most ER_RUN_TIMEOUT) until process `pid` has `path` open,
 * so that what the test does to the file next cannot race with the
 * opening; fails the test when `pid` ends first. */
void er_wait_open(pid_t pid, const char *path);

/* Waits (at most ER_RUN_TIMEOUT) until process `pid` is blocked in
 * nanosleep(2) or clock_nanosleep(2), as /proc/PID/syscall tells.  The
 * eventring command's followers sleep only after a poll that found
 * nothing new, so once one sleeps it has read everything written before
 * this call, and its signal handlers are in place.  Fails the test when
 * `pid` ends first or never sleeps. */
void er_wait_idle(pid_t pid);

/* Waits (at most ER_RUN_TIMEOUT) until the main thread of process `pid`
 * has gone to sleep `n` more times (its voluntary context switches, in
 * /proc/PID/status): a loop that sleeps once a turn, such as mon_loop's,
 * has then run at least n - 1 whole turns since the call.  Fails the
 * test when `pid` ends first or the bound passes. */
void er_wait_turns(pid_t pid, int n);

/* Reads one '\n'-terminated line from `fd` into `buf` (without the
 * newline) within `seconds`.  Returns 0, -1 when the time ran out, -2
 * when `fd` reached its end or the line did not fit. */
int er_read_line(int fd, char *buf, size_t cap, double seconds);

/* A helper started by er_pipe_start(): its pid, the write end of its
 * stdin (the helpers exit when it closes) and the read end of its
 * stdout. */
struct er_pipe_proc {
  pid_t pid;
  int in, out;
};

/* Starts argv[0] with stdin and stdout on pipes (stdout and stderr to
 * `out_file` instead when it is given), each of `env` ("NAME=VALUE",
 * NULL-terminated, or NULL) added to its environment.  It is killed when
 * the test process dies (PR_SET_PDEATHSIG), so that a failing check
 * leaves nothing running. */
struct er_pipe_proc er_pipe_start(char *const argv[], char *const env[],
                                  const char *out_file);

/* Closes the pipes and waits for the helper for at most `seconds`.
 * Returns its wait status, or -1 after killing it (or when it was
 * already finished). */
int er_pipe_finish(struct er_pipe_proc *p, double seconds);

/* What a finished program left: wait status (-1 when it had to be
 * killed), stdout and stderr (malloc'd, NUL-terminated). */
struct er_run {
  int status;
  char *out, *err;
};

/* Starts `prog` with `args` (NULL-terminated, without argv[0]), stdin
 * `in_fd`, `env` and `flags` as for er_spawn(), its stdout and stderr
 * going to fresh files in `dir` whose paths go to `outp` and `errp`
 * (PATH_MAX bytes each), so that they can be read while it runs.  Returns
 * without waiting. */
pid_t er_start(const char *dir, const char *prog, const char *const *args,
               int in_fd, const char *env, int flags, char *outp,
               char *errp);

/* Waits for a program started by er_start() (at most `seconds`), reads
 * and removes its output files. */
struct er_run er_finish(pid_t pid, const char *outp, const char *errp,
                        double seconds);

/* Runs `prog` to its end (bounded by ER_RUN_TIMEOUT), stdin /dev/null. */
struct er_run er_run(const char *dir, const char *prog,
                     const char *const *args, const char *env, int flags);

/* er_start() and er_run() for the eventring command. */
pid_t er_start_tool(const char *dir, const char *const *args, int flags,
                    char *outp, char *errp);
struct er_run er_run_tool(const char *dir, const char *const *args,
                          int flags);

void er_run_free(struct er_run *r);

/* The exit code of a run; fails the test when `what` (for the message:
 * "the tool", "babeltrace2") timed out or died of a signal. */
int er_exit_code(const struct er_run *r, const char *what);

/* The tool exited with `code` and printed nothing on stderr. */
void er_assert_status(const struct er_run *r, int code);

/* The tool's stderr holds exactly one line, starting "eventring: " and
 * containing `what` (when not NULL). */
void er_assert_one_error(const struct er_run *r, const char *what);

/* ------------------------------------------------------------------ */
/* Files.                                                               */

/* The whole content of `path` (malloc'd, NUL-terminated); its length
 * goes to *len when `len` is not NULL. */
char *er_slurp(const char *path, size_t *len);

/* How many times `text` stands in `s` (overlapping ones too). */
int er_count_text(const char *s, const char *text);

/* Waits, for at most `seconds`, until the file at `path` holds `text` `n`
 * times (er_count_text).  Returns 1 when it does, 0 on timeout. */
int er_wait_text(const char *path, const char *text, int n, double seconds);

/* Writes `text` to the file at `path` (mode 0644 before the umask),
 * which must not exist yet when `excl` is set, else is truncated. */
void er_write_text(const char *path, const char *text, int excl);

/* Fails unless the file at `path` holds exactly `text`. */
void er_assert_content(const char *path, const char *text);

/* Number of entries of `dir` whose name ends in `suffix` ("" for every
 * entry but "." and ".."). */
int er_count_entries(const char *dir, const char *suffix);

/* Decompresses the gzip file `gz` to `path`. */
void er_gunzip(const char *gz, const char *path);

/* The OCaml 5 vectors of testsuite/data (NAME.events.gz, NAME.expected):
 * "ocaml5-*" were written by OCaml 5.2 (its phase numbering), the others
 * by OCaml 5.4. */
#define ER_NVECTORS 5
extern const char *const er_vectors[ER_NVECTORS];

/* Nonzero for a vector written by OCaml 5.2, which readers are told with
 * --ocaml50 (eventring_cursor_set_ocaml50). */
int er_vector_ocaml50(const char *name);

/* Decompresses data/NAME.events.gz to `dir`/NAME.events, whose path goes
 * to `path` (PATH_MAX bytes).  Returns 0, writing nothing, when
 * EVENTRING_TEST_DATA is unset (the caller skips). */
int er_unpack_vector(const char *dir, const char *name, char *path);

/* er_unpack_vector(), skipping the rest of the current test when
 * EVENTRING_TEST_DATA is unset. */
#define ER_NEED_VECTOR(dir, name, path)                                    \
  do {                                                                     \
    if (!er_unpack_vector(dir, name, path))                                \
      ER_SKIP("EVENTRING_TEST_DATA is not set");                           \
  } while (0)

/* ------------------------------------------------------------------ */
/* Lines of text.                                                       */

struct er_lines {
  char **v;
  size_t n, cap;
};

/* Appends the `len` bytes at `s` as a line. */
void er_lines_push(struct er_lines *l, const char *s, size_t len);

/* The lines of `s`, without their '\n'. */
struct er_lines er_lines_split(const char *s);

/* The lines of the file at `path`. */
struct er_lines er_lines_read(const char *path);

/* The lines of `all` that start with `prefix`. */
struct er_lines er_lines_starting(const struct er_lines *all,
                                  const char *prefix);

void er_lines_free(struct er_lines *l);

/* The paths (`dir`/NAME) of the entries of `dir` whose name ends in
 * `suffix` ("" for every entry but . and ..), sorted by name. */
struct er_lines er_entries(const char *dir, const char *suffix);

/* Nonzero when `line` is the ring_stop event of a `dump` listing. */
int er_is_ring_stop(const char *line);

/* Fails unless `got` equals `want` line for line.  A ring_stop line of
 * `want` (OCaml 5.2 prints a stale word as its value) is compared up to
 * "value=" only; with `ring_stop_dash` the value of `got`'s must then be
 * "-", as eventring prints it.  `what` names the comparison. */
void er_lines_compare(const char *what, const struct er_lines *got,
                      const struct er_lines *want, int ring_stop_dash);

/* The number after " key=" in a line of `eventring dump` (an event or the
 * SUMMARY line); fails when `key` is absent. */
uint64_t er_field(const char *line, const char *key);

#endif
