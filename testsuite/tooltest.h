/* tooltest.h -- what the tests of the eventring command share beyond
 * testlib.h: traced runs of the helper programs whose ring files the
 * command then reads.
 *
 * Like testlib.h, everything here fails the running test on an error the
 * test did not ask about.
 */
#ifndef EVENTRING_TEST_TOOLTEST_H
#define EVENTRING_TEST_TOOLTEST_H

#include <stdint.h>
#include <sys/types.h>

#include "testlib.h"

/* Runs the helper program `name` (EVENTRING_TEST_PROGS/`name`) with `args`
 * (NULL-terminated, without argv[0]; NULL for none) and `env` (one
 * "NAME=VALUE" or NULL), its ring file kept (OCAML_RUNTIME_EVENTS_PRESERVE
 * is set in the test's environment) in `dir`, the directory the test's
 * OCAML_RUNTIME_EVENTS_DIR names (er_tmpdir()).  Fails unless it exits 0
 * within ER_RUN_TIMEOUT.  Writes the path of its ring file to `path`
 * (PATH_MAX bytes) when `path` is not NULL and returns its pid. */
pid_t er_trace_prog(const char *dir, const char *name,
                    const char *const *args, const char *env, char *path);

/* Starts the helper program `name` untraced (er_pipe_start(), its
 * stdin and stdout on pipes) and waits, at most ER_RUN_TIMEOUT, for the
 * first line it prints (mon_loop's "ready ..."); fails the test when
 * there is none. */
struct er_pipe_proc er_start_ready(const char *name);

/* An ISO 8601 UTC time with nanoseconds ("2026-01-02T03:04:05.123456789Z",
 * as `eventring dump --time=wall` and the traces print it), as
 * nanoseconds since the epoch; fails the test on any other text. */
int64_t er_parse_wall(const char *s);

/* The lines `eventring dump --time=raw FILE` prints, run in `dir`;
 * fails the test unless the command exits 0.  Free with
 * er_lines_free(). */
struct er_lines er_dump_raw(const char *dir, const char *file);

/* babeltrace2 from PATH (/usr/bin:/bin when PATH is unset), or NULL.
 * Static storage. */
const char *er_babeltrace_path(void);

#endif
