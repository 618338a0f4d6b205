/* base.h -- the bottom layer of the `eventring` command (base/): what
 * every other layer shares.  output.c: where a report goes (-o FILE,
 * standard error while a command keeps standard output), buffered
 * standard output that ends quietly on a closed pipe, the one-line error
 * messages (usage errors from getopt too), OCaml-style escaping and the
 * one escaping of names and other text that files supply; duration.c:
 * the clock of the events and the parser of durations; runcmd.c:
 * commands run beside the tool (watch --exec); httpclient.c: a POST to
 * an http:// URL with a deadline; threads.c: what helper threads start
 * with; labels.c: the --label NAME=VALUE pairs of watch and metrics.  It includes no other layer of tools/.
 *
 * Exit statuses are the same for every subcommand: 0 success,
 * TOOL_EXIT_INPUT for a file that cannot be read or is malformed (and for
 * a failing standard output), TOOL_EXIT_USAGE for bad arguments, and
 * TOOL_EXIT_PIPE when the reader of standard output went away.
 */
#ifndef EVENTRING_TOOLS_BASE_H
#define EVENTRING_TOOLS_BASE_H

/* ================================================================== */
/* Common definitions                                                   */
/* ================================================================== */

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

/* ================================================================== */
/* Command-line options (output.c)                                      */
/* ================================================================== */

/* -o FILE / --output FILE, for a subcommand that writes a report (with
 * "o:" in its short options). */
#define TOOL_OUTPUT_OPTION {"output", required_argument, NULL, 'o'}

/* getopt_long(argc, argv, shortopts, longopts, NULL) with getopt's own
 * messages off; keeps `longopts` so that tool_option_error() can name
 * the option a mistake is about.  Every subcommand parses with it. */
struct option;
int tool_getopt(int argc, char **argv, const char *shortopts,
                const struct option *longopts);

/* What tool_getopt (with a leading ':' in the short options) returned
 * for an option it did not accept, as a usage error in one form whatever
 * the spelling: "unknown option '-x'", "unknown option '--bogus'" (also
 * for --bogus=1), "ambiguous option '--f' ...", "option '--json' takes
 * no argument ('--json=3')", "option '--pid' needs an argument", each
 * followed by "(see 'HELP')".  Returns TOOL_EXIT_USAGE. */
int tool_option_error(const char *help, int c, char **argv);

/* ================================================================== */
/* output.c                                                             */
/* ================================================================== */

/* Gives standard output a large buffer and makes a write to a closed
 * pipe an error (EPIPE) instead of a fatal SIGPIPE, so that the tool can
 * end on its own terms.  Call once, before any output. */
void tool_output_init(void);

/* Prints "eventring: " and the message, as one line on stderr; the
 * message goes through tool_put_text(), so whatever it holds, it stays
 * one line and cannot act on a terminal. */
void tool_error(const char *fmt, ...) TOOL_PRINTF(1, 2);

/* A usage error: one line on stderr that ends with a pointer to `help`
 * (e.g. "eventring dump --help"); returns TOOL_EXIT_USAGE. */
int tool_usage_error(const char *help, const char *fmt, ...)
    TOOL_PRINTF(2, 3);

/* Called by main() when the command line runs a command (`-- CMD`),
 * before the subcommand parses its options. */
void tool_output_note_command(void);

/* tool_output_open() flags. */
#define TOOL_OUTPUT_BINARY 1u /* refuse a terminal */

/* Makes standard output (fd 1, where subcommands write their report) the
 * report's destination, after the options are parsed and before the
 * source is opened: `path` is -o's argument, or NULL without -o.
 *   NULL   standard output; with a command, standard error instead (the
 *          command keeps standard output);
 *   "-"    standard output; a usage error with a command;
 *   FILE   FILE, written as a temporary file beside it that
 *          tool_output_finish() renames to FILE (a pipe or a device is
 *          written as it is); a usage error when it is the command's
 *          standard output or error (the same regular file or pipe) or
 *          a ring file.
 * With TOOL_OUTPUT_BINARY a destination that is a terminal is a usage
 * error.  Returns TOOL_EXIT_OK, TOOL_EXIT_USAGE or TOOL_EXIT_INPUT (FILE
 * cannot be opened), after printing one line. */
int tool_output_open(const char *path, unsigned flags, const char *help);

/* Makes the next tool_output_open*() write a regular FILE in place,
 * truncated once the checks pass, rather than beside it: for a report
 * that is read while it grows (`dump --follow`, `dump -- CMD`). */
void tool_output_in_place(void);

/* tool_output_open() for a subcommand reading the ring file `source`
 * (its FILE operand, or NULL): an -o FILE that is `source` is a usage
 * error, found before anything is written. */
int tool_output_open_for(const char *path, unsigned flags, const char *help,
                         const char *source);

/* Whether `path` (-o's argument) is one of the `n` ring files at `files`
 * (a list of files: tool_output_open_for() checks one). */
int tool_output_is_input(const char *path, char *const *files, int n);

/* tool_output_open_for() for a subcommand reading the `n` ring files at
 * `files` (its operands; none for --pid, --dir or a command): -o naming
 * any of them is a usage error, found before it is truncated. */
int tool_output_open_reading(const char *path, const char *help,
                             char *const *files, int n);

/* Whether `path` is a ring file (one the consumer would take for one,
 * of any version, damaged or not). */
int tool_output_is_ring(const char *path);

/* Whether the report may go to FILE: a usage error when FILE exists and
 * is the command's standard output or error, or a ring file, which no
 * report replaces.  Returns TOOL_EXIT_OK or TOOL_EXIT_USAGE. */
int tool_output_check_path(const char *path, const char *help);

/* What the name of an output says it holds, by its extension. */
enum tool_format {
  TOOL_FORMAT_NONE,    /* any other extension, or none */
  TOOL_FORMAT_FUCHSIA, /* .fxt, a Fuchsia trace */
  TOOL_FORMAT_JSON,    /* .json, a Chrome JSON trace */
  TOOL_FORMAT_EVENTS,  /* .events, a ring file */
  TOOL_FORMAT_CTF      /* .ctf, a CTF trace's directory */
};

/* The format the extension of `path` stands for: the one rule by which
 * `trace -o` and `snapshot -o` tell the format from the name. */
enum tool_format tool_format_of(const char *path);

/* In the spawned command's child, between fork and exec: gives it back
 * the tool's original standard output and SIGXFSZ's disposition
 * (async-signal-safe). */
void tool_output_child_streams(void);

/* strerror(err), with the file size limit named for EFBIG (static
 * storage, overwritten by the next call). */
const char *tool_strerror(int err);

/* Returns 1 while writes to standard output work, 0 once one has failed;
 * the subcommand then stops reading and returns tool_output_finish()'s
 * status.  Call it right after writing, while errno is the write's. */
int tool_output_ok(void);

/* Flushes standard output and, once the report is written whole, renames
 * the temporary file of -o FILE to FILE (FILE is left as it was when a
 * write failed, or when this is never called).  Returns TOOL_EXIT_OK,
 * TOOL_EXIT_PIPE (the reader went away: nothing is printed) or
 * TOOL_EXIT_INPUT (another write error, which is reported). */
int tool_output_finish(void);

/* Writes `len` bytes as an OCaml string literal, the way OCaml's "%S"
 * does (String.escaped between double quotes): \" \\ \n \t \r \b, the
 * printable ASCII characters as they are, every other byte as \DDD. */
void tool_put_ocaml_string(FILE *out, const void *bytes, size_t len);

/* tool_put_text() flags. */
#define TOOL_TEXT_FIELD 1u /* one field of a line: the space as \032 too */
#define TOOL_TEXT_UTF8 2u  /* printable UTF-8 characters as they are */

/* Writes `len` bytes of text that a ring file or another process supplies
 * (program, thread and event names, command lines, /proc/PID/comm) so
 * that it can neither act on a terminal nor break a line: printable
 * ASCII as is (the backslash too), every other byte as \DDD in decimal;
 * with TOOL_TEXT_UTF8, a well-formed UTF-8 character as is unless it is
 * a C1 control, a line or paragraph separator or a bidirectional
 * control.  The one escaping of such text: every place that prints it
 * goes through here. */
void tool_put_text(FILE *out, const void *text, size_t len, unsigned how);

/* The one rule of what is well-formed UTF-8, for every encoder of such
 * text (terminal, HTML, JSON): the length (1 to 4) of the character at
 * `text` (`len` > 0 bytes), its code point in *cp; 0 when the first byte
 * begins none (a stray or missing continuation byte, an overlong form, a
 * surrogate, past U+10FFFF, cut short). */
size_t tool_utf8_char(const void *text, size_t len, uint32_t *cp);

/* How many of the `len` (> 0) bytes at `text` make the character that
 * tool_put_text() writes as it is, given `how`; 0 when the first byte is
 * to be escaped (as \DDD). */
size_t tool_text_char(const void *text, size_t len, unsigned how);

/* tool_put_text() of the string `s` into `buf` (`size` bytes), cut after
 * the last character or escape that fits, NUL-terminated; returns buf. */
const char *tool_text(char *buf, size_t size, const char *s, unsigned how);

/* Room for tool_text() of a string of `n` bytes, its NUL included. */
#define TOOL_TEXT_BUF(n) (4 * (n) + 1)

/* Writes a name taken from a ring file so that it stays one field of one
 * line (tool_put_text with TOOL_TEXT_FIELD: printable ASCII other than
 * the space as is, every other byte as \DDD).  An empty name is written
 * as `fallback` followed by `id`. */
void tool_put_name(FILE *out, const char *name, const char *fallback, int id);

/* ================================================================== */
/* duration.c                                                           */
/* ================================================================== */

/* The longest duration an option takes, in nanoseconds. */
#define TOOL_DURATION_MAX_NS 1e18

/* A duration such as 10ms, 2.5s (units ns, us, ms, s; at most
 * TOOL_DURATION_MAX_NS) into *ns: the one parser of every option that
 * takes a duration.  Returns 0, or -1 with the reason in `why` (not a
 * number, no unit, an unknown unit, too large). */
int tool_parse_duration(const char *s, uint64_t *ns, char *why, size_t size);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t tool_now_ns(void);

/* A size such as 512K, 64M, 1G (a number of bytes, or K, M or G: powers
 * of 1024) into *bytes: the one parser of every option that takes a
 * size.  Returns 0, or -1 when it is none (or too large). */
int tool_parse_size(const char *s, uint64_t *bytes);

/* ================================================================== */
/* labels.c                                                             */
/* ================================================================== */

/* The --label NAME=VALUE pairs of a subcommand, in their order. */
#define TOOL_MAX_LABELS 31
struct tool_labels {
  int n;
  char *name[TOOL_MAX_LABELS], *value[TOOL_MAX_LABELS];
};

/* Adds "NAME=VALUE" `arg` to `l`: NAME [a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with __, none of `reserved` (NULL-terminated, or NULL), not
 * given before.  Returns 0, or -1 with the reason in `why` (`size`
 * bytes), for the caller's "--label: WHY". */
int tool_labels_add(struct tool_labels *l, const char *arg,
                    const char *const *reserved, char *why, size_t size);
void tool_labels_free(struct tool_labels *l);

/* ================================================================== */
/* runcmd.c                                                             */
/* ================================================================== */

/* A command line template, split into words without a shell (runcmd.c
 * says how quotes work): `n` words, then NULL. */
struct tool_cmdline {
  char **words;
  int n;
};

/* Splits `tmpl` into `c`.  Returns 0, or -1 with the reason in `why` (no
 * command, a quote left open). */
int tool_cmdline_parse(const char *tmpl, struct tool_cmdline *c, char *why,
                       size_t size);
void tool_cmdline_free(struct tool_cmdline *c);

/* The argument vector of `c` for `arg`: every "{}" of every word replaced
 * by `arg` as it is.  NULL when out of memory; free it with
 * tool_cmdline_argv_free(). */
char **tool_cmdline_argv(const struct tool_cmdline *c, const char *arg);
void tool_cmdline_argv_free(char **argv);

/* The most commands tool_run_setup() lets run at once. */
#define TOOL_RUN_MAX 64

/* How a command ended: `status` as waitpid() gives it (-1 when another
 * reaper took it without telling us), `timed_out` when it had been sent
 * SIGTERM for its timeout. */
struct tool_run_end {
  pid_t pid;
  void *tag;
  int status;
  int timed_out;
  uint64_t duration_ns;
};
typedef void (*tool_run_done_fn)(void *arg, const struct tool_run_end *e);

/* Runs at most `max` (1 to TOOL_RUN_MAX) commands at once, each for at
 * most `timeout_ns` (0: no limit) before SIGTERM to its process group
 * and, two seconds later, SIGKILL; `done` is called (from
 * tool_run_poll) when one ends.  One set of jobs per process. */
void tool_run_setup(int max, uint64_t timeout_ns, tool_run_done_fn done,
                    void *arg);

/* Starts `argv` (argv[0] looked up in PATH) in a process group of its
 * own, standard input /dev/null, standard output onto standard error;
 * `tag` comes back in its tool_run_end.  Returns 0 with its pid in *pid,
 * -EAGAIN when `max` are running, or a negated errno when it could not
 * be started (ENOENT: no such program). */
int tool_run_start(char *const argv[], void *tag, pid_t *pid);

/* Reaps the commands that ended (calling `done` for each), sends the
 * signals of the timeouts due; never blocks.  Returns how many are still
 * running. */
int tool_run_poll(void);

/* tool_run_poll() until none is running: at most the longest timeout
 * left, plus the grace before SIGKILL. */
void tool_run_wait(void);

/* The number of commands running. */
int tool_run_running(void);

/* For a reaper of every child (waitpid(-1)): hands the status of `pid`
 * to its job.  Returns 1 when `pid` was one of ours, else 0. */
int tool_run_reaped(pid_t pid, int status);

/* ================================================================== */
/* httpclient.c                                                         */
/* ================================================================== */

/* An http:// URL, split. */
struct tool_http_url {
  char host[256]; /* without the brackets of an IPv6 address */
  char port[8];
  char path[1024]; /* with its query, "/" when the URL has none */
};

/* Splits `url` (http://HOST[:PORT][/PATH], HOST a name, an IPv4 address
 * or [IPv6]).  Returns 0, or -1 when it is not such a URL. */
int tool_http_url_parse(const char *url, struct tool_http_url *u);

/* POSTs `len` bytes of `body` to `u` with the extra `headers` (each line
 * ending in \r\n, or NULL), connecting, sending and reading the status
 * line within `timeout_ns`.  Returns the response's status, or -1 with
 * a reason in `err` (cannot connect, timed out, no response). */
int tool_http_post(const struct tool_http_url *u, const char *headers,
                   const void *body, size_t len, uint64_t timeout_ns,
                   char *err, size_t err_size);

/* ================================================================== */
/* threads.c                                                            */
/* ================================================================== */

#include <pthread.h>
#include <signal.h>

/* Initialises `c` to time its waits on CLOCK_MONOTONIC, the clock of
 * tool_now_ns(). */
void tool_cond_init_monotonic(pthread_cond_t *c);

/* Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, the previous
 * mask going to `old`: threads created until the caller restores it
 * (pthread_sigmask(SIG_SETMASK, old, NULL)) leave those signals to the
 * thread that reads, whose sleep they cut short. */
void tool_block_stop_signals(sigset_t *old);

#endif /* EVENTRING_TOOLS_BASE_H */
