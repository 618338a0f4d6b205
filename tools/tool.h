/* tool.h -- what the files of the `eventring` command share.
 *
 * The command is split by role:
 *   main.c     dispatch to a subcommand, the global --help and --version;
 *   source.c   where events come from: a ring file named on the command
 *              line or a process's file found by --dir/--pid, opened as a
 *              cursor and read to the end, or followed while the writer
 *              lives;
 *   output.c   buffered standard output that ends quietly on a closed
 *              pipe, the one-line error messages, OCaml-style escaping;
 *   dump.c     `eventring dump`.
 * Later subcommands reuse source.c and output.c and add a file each.
 *
 * Exit statuses are the same for every subcommand: 0 success,
 * TOOL_EXIT_INPUT for a file that cannot be read or is malformed (and for
 * a failing standard output), TOOL_EXIT_USAGE for bad arguments, and
 * TOOL_EXIT_PIPE when the reader of standard output went away.
 */
#ifndef EVENTRING_TOOL_H
#define EVENTRING_TOOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "eventring.h"

#ifndef EVENTRING_VERSION
#define EVENTRING_VERSION "unknown"
#endif

#define TOOL_EXIT_OK 0
#define TOOL_EXIT_INPUT 1
#define TOOL_EXIT_USAGE 2
#define TOOL_EXIT_PIPE 141 /* what a shell shows for death by SIGPIPE */

#if defined(__GNUC__) || defined(__clang__)
#define TOOL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TOOL_PRINTF(f, a)
#endif

/* ------------------------------------------------------------------ */
/* Subcommands: each gets its own argv (argv[0] is its name) and returns */
/* the exit status.                                                     */

int tool_dump(int argc, char **argv);

/* ------------------------------------------------------------------ */
/* output.c                                                             */

/* Gives standard output a large buffer and makes a write to a closed
 * pipe an error (EPIPE) instead of a fatal SIGPIPE, so that the tool can
 * end on its own terms.  Call once, before any output. */
void tool_output_init(void);

/* Prints "eventring: " and the message, as one line on stderr. */
void tool_error(const char *fmt, ...) TOOL_PRINTF(1, 2);

/* A usage error: one line on stderr that ends with a pointer to `help`
 * (e.g. "eventring dump --help"); returns TOOL_EXIT_USAGE. */
int tool_usage_error(const char *help, const char *fmt, ...)
    TOOL_PRINTF(2, 3);

/* Returns 1 while writes to standard output work, 0 once one has failed;
 * the subcommand then stops reading and returns tool_output_finish()'s
 * status.  Call it right after writing, while errno is the write's. */
int tool_output_ok(void);

/* Flushes standard output.  Returns TOOL_EXIT_OK, TOOL_EXIT_PIPE (the
 * reader went away: nothing is printed) or TOOL_EXIT_INPUT (another write
 * error, which is reported). */
int tool_output_finish(void);

/* Writes `len` bytes as an OCaml string literal, the way OCaml's "%S"
 * does (String.escaped between double quotes): \" \\ \n \t \r \b, the
 * printable ASCII characters as they are, every other byte as \DDD. */
void tool_put_ocaml_string(FILE *out, const void *bytes, size_t len);

/* Writes a name taken from a ring file so that it stays one field of one
 * line: printable ASCII other than the space as is, every other byte as
 * \DDD.  An empty name is written as `fallback` followed by `id`. */
void tool_put_name(FILE *out, const char *name, const char *fallback, int id);

/* ------------------------------------------------------------------ */
/* source.c                                                             */

struct tool_source {
  /* From the command line. */
  const char *file;   /* a ring file path, or NULL */
  const char *dir;    /* --dir, or NULL */
  const char *pid_arg;/* --pid, or NULL */
  int follow;         /* --follow */
  int ocaml50;        /* --ocaml50 */
  /* Set by tool_source_open(). */
  char path[4096];    /* the file read, for messages */
  pid_t pid;          /* the writer's pid, 0 when unknown */
  eventring_cursor *cursor;
  /* Set by the subcommand's lifecycle callback (tool_source_lifecycle). */
  int saw_ring_stop;
};

/* Checks the source options and the operands left after them (at most
 * one FILE, which excludes --pid; --dir needs --pid) and opens the cursor.
 * Returns TOOL_EXIT_OK, or prints one line and returns TOOL_EXIT_USAGE or
 * TOOL_EXIT_INPUT.  `help` names the subcommand's --help for usage
 * errors. */
int tool_source_open(struct tool_source *src, int nargs, char **args,
                     const char *help);

void tool_source_close(struct tool_source *src);

/* Subcommands call this from their lifecycle callback so that --follow
 * on a file that names no pid ends at ring_stop. */
void tool_source_lifecycle(struct tool_source *src, int kind);

/* Polls the cursor to the end -- until a poll finds nothing, or with
 * --follow until the writer is gone and what it left is drained -- with
 * `cb` and `data`.  Stops early when standard output fails.  Returns
 * TOOL_EXIT_OK, or TOOL_EXIT_INPUT after printing one line for a read
 * error; the callbacks have seen every event read before the error. */
int tool_source_read(struct tool_source *src, const eventring_callbacks *cb,
                     void *data);

#endif /* EVENTRING_TOOL_H */
