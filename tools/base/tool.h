/* tool.h -- what the files of the `eventring` command share.
 *
 * The command is split by role:
 *   main.c     dispatch to a subcommand, the global --help and --version;
 *   source.c   where events come from: a ring file named on the command
 *              line or a process's file found by --dir/--pid, opened as a
 *              cursor and read to the end, or followed while the writer
 *              lives; `-- CMD ARGS...` runs a program and reads its file
 *              (spawn.c), with a progress line on a terminal
 *              (progress.c); for the subcommands that report on several
 *              processes, procs.c reads a list of files, every file of
 *              --dir DIR or a command's whole process tree;
 *   output.c   where the report goes (-o FILE, standard error while a
 *              command keeps standard output), buffered standard output
 *              that ends quietly on a closed pipe, the one-line error
 *              messages (usage errors from getopt too), OCaml-style
 *              escaping and the one escaping of names and other text
 *              that files supply;
 *   events.c   what every reader of events shares (events.h): installing
 *              the callbacks, the names of phases, counters, lifecycle
 *              kinds and user events with their phase_N-style
 *              fallbacks, the unit of lost counts;
 * and one file per subcommand, each reading through source.c:
 *   dump.c     `eventring dump`, every event as a line;
 *   ctf.c      `eventring ctf`, a CTF trace for babeltrace2;
 *   trace.c    `eventring trace`, a trace for Perfetto (trace.h), written
 *              by fuchsia.c or json.c;
 *   latency.c  `eventring latency` and stats.c `eventring stats`, which
 *              share analysis.c (analysis.h: their options, the pause
 *              tracker) and, for latency, histogram.c;
 *   diff.c     `eventring diff`, two runs compared (ranktest.c: the
 *              rank test that tells a change from noise; jsonread.c:
 *              reading saved `stats --json` outputs);
 *   metrics.c  `eventring metrics`, a Prometheus exporter (it uses
 *              analysis.c's pause tracker too; metrics_http.c serves
 *              it);
 *   snapshot.c `eventring snapshot`, what the rings hold now, and
 *   watch.c    `eventring watch`, the windows around triggers, both
 *              written by the library's compact-file writer
 *              (runtime/snapshot.h);
 *   dirscan.c  the ring files appearing in a directory, for the host
 *              mode (--dir alone) of metrics and watch;
 *   control.c  `eventring pause` and `eventring resume`, which read
 *              nothing.
 * A new subcommand reuses source.c, output.c and events.c and adds a file.
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
int tool_ctf(int argc, char **argv);
int tool_trace(int argc, char **argv);
int tool_latency(int argc, char **argv);
int tool_stats(int argc, char **argv);
int tool_diff(int argc, char **argv);
int tool_report(int argc, char **argv);
int tool_metrics(int argc, char **argv);
int tool_snapshot(int argc, char **argv);
int tool_watch(int argc, char **argv);
int tool_pause(int argc, char **argv);
int tool_resume(int argc, char **argv);

/* ------------------------------------------------------------------ */
/* Command-line options (source.c, output.c).                           */

/* The values getopt_long returns for the source options; a subcommand's
 * own long options take values from TOOL_OPT_OWN on. */
enum { TOOL_OPT_DIR = 256, TOOL_OPT_PID, TOOL_OPT_OCAML50, TOOL_OPT_OCAML53,
       TOOL_OPT_DRAIN, TOOL_OPT_F_DOMAIN, TOOL_OPT_F_EVENT, TOOL_OPT_F_KIND,
       TOOL_OPT_F_SINCE, TOOL_OPT_F_UNTIL, TOOL_OPT_F_LAST, TOOL_OPT_OWN };

/* The long options of every subcommand that reads a source, and --help,
 * for its `struct option` table (with "fh" in its short options). */
#define TOOL_SOURCE_OPTIONS                                                \
  {"dir", required_argument, NULL, TOOL_OPT_DIR},                          \
      {"pid", required_argument, NULL, TOOL_OPT_PID},                      \
      {"follow", no_argument, NULL, 'f'},                                  \
      {"ocaml50", no_argument, NULL, TOOL_OPT_OCAML50},                    \
      {"ocaml53", no_argument, NULL, TOOL_OPT_OCAML53},                    \
      {"drain-timeout", required_argument, NULL, TOOL_OPT_DRAIN},          \
      {"help", no_argument, NULL, 'h'}

/* The filters of filter.c (--domain, --event, --kind, --since, --until,
 * --last), for the subcommands that read events and report on them;
 * tool_source_other() applies them. */
#define TOOL_FILTER_OPTIONS                                                \
  {"domain", required_argument, NULL, TOOL_OPT_F_DOMAIN},                  \
      {"event", required_argument, NULL, TOOL_OPT_F_EVENT},                \
      {"kind", required_argument, NULL, TOOL_OPT_F_KIND},                  \
      {"since", required_argument, NULL, TOOL_OPT_F_SINCE},                \
      {"until", required_argument, NULL, TOOL_OPT_F_UNTIL},                \
      {"last", required_argument, NULL, TOOL_OPT_F_LAST}

/* Applies a source option (--dir, --pid, -f/--follow, --ocaml50,
 * --ocaml53, --drain-timeout) that
 * getopt_long returned as `c` to `src`.  Returns 1 when `c` was one, 0
 * when it is not. */
struct tool_source;
int tool_source_option(struct tool_source *src, int c);

/* The phase numbering that --ocaml50 or --ocaml53 force, for
 * eventring_cursor_set_numbering(): EVENTRING_NUMBERING_AUTO without
 * either. */
int tool_source_numbering(const struct tool_source *src);

/* Handles what getopt_long returned as `c` when it is not one of the
 * subcommand's own options: a source option (applied to `src`; returns
 * -1, parsing goes on), -h/--help (prints help(); returns the exit
 * status), or an error (tool_option_error()).  Returns -1 to go on, else
 * the exit status the subcommand returns at once. */
int tool_source_other(struct tool_source *src, int c, char **argv,
                      const char *help_ref, void (*help)(void));

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

/* ------------------------------------------------------------------ */
/* output.c                                                             */

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

/* ------------------------------------------------------------------ */
/* source.c, spawn.c, progress.c: where events come from.               */
/*                                                                      */
/* A subcommand names its source in one of three ways, all handled here: */
/*   FILE                   a ring file, read post-mortem (or followed); */
/*   --pid PID [--dir DIR]  the file of a running process;               */
/*   -- CMD ARGS...         a program run and traced for the occasion.   */
/* main() takes `-- CMD ARGS...` off the command line before the        */
/* subcommand parses its options (tool_source_take_command), so a       */
/* subcommand's getopt never sees it; tool_source_open() picks it up.   */

/* Exit statuses of a command that could not be run, as a shell reports
 * them: the program was not found / was found but could not be run. */
#define TOOL_EXIT_NOTFOUND 127
#define TOOL_EXIT_NOEXEC 126

/* A file a --follow reader reads, to tell when its writer is gone: the
 * device and inode (when file_known), the path with symbolic links
 * resolved (empty when unknown), and what the last look at the writer's
 * mappings found; the writer's start time as the file records it (when
 * start_known): a live process with the writer's pid but another start
 * time is a later process, and the writer is gone. */
struct tool_writer_state {
  int file_known;
  dev_t file_dev;
  ino_t file_ino;
  char file_real[4096];
  uint64_t maps_checked_ns, unmapped_since_ns;
  int seen_mapped;
  int writer_start_known;
  uint64_t writer_start;
};

struct tool_source {
  /* From the command line. */
  const char *file;   /* a ring file path, or NULL */
  const char *dir;    /* --dir, or NULL */
  const char *pid_arg;/* --pid, or NULL */
  int follow;         /* --follow (implied for a spawned command) */
  int ocaml50;        /* --ocaml50 */
  int ocaml53;        /* --ocaml53 */
  /* Set by tool_source_open(). */
  char path[4096];    /* the file read, for messages */
  pid_t pid;          /* the writer's pid, 0 when unknown */
  eventring_cursor *cursor;
  /* Set by the subcommand's lifecycle callback (tool_source_lifecycle). */
  int saw_ring_stop;

  /* Everything below is zero after memset() and is set by source.c. */

  /* The program's name, for titles ("process named after the program"):
   * the one its ring file records, else the spawned command's basename
   * or /proc/PID/comm of a live --pid process; empty when unknown. */
  char name[64];
  /* The spawned command (NULL-terminated), or NULL when not spawning. */
  char **cmd;
  /* Progress on stderr: 0 automatic (shown on a terminal for long runs),
   * -1 never.  A subcommand may set it before tool_source_read(). */
  int progress;
  /* Called by tool_source_read() after every poll with the poll's data,
   * for a subcommand that acts between polls rather than on events
   * (watch closes the windows whose time has passed); NULL: none.  A
   * subcommand may set it before tool_source_read(). */
  void (*between_polls)(struct tool_source *src, void *data);

  /* Kept by tool_source_read(). */
  uint64_t events_read; /* events delivered to the callbacks */
  uint64_t lost_total;  /* sum of what tool_source_lost() was told */
  uint64_t *lost;       /* per domain, lost_n entries (NULL: none lost) */
  int lost_n;
  uint64_t before_total; /* before the windows (tool_source_window) */
  /* The signal (SIGINT, SIGTERM, SIGHUP) that interrupted reading, or 0.
   * Reading then stopped early but cleanly: every event read so far went
   * to the callbacks, and the subcommand should finish its output as
   * usual. */
  int interrupted;
  /* CLOCK_MONOTONIC nanoseconds (the clock of the events) at which the
   * writer was seen gone: the spawned command reaped, or the --follow
   * process exited; 0 when unknown (a snapshot, or reading cut short).
   * A subcommand may close spans still open at this time. */
  uint64_t end_ns;
  /* The spawned command's wait status once it has been reaped
   * (child_reaped set).  WIFSIGNALED tells a command killed by a signal,
   * which wrote no ring_stop. */
  int child_reaped;
  int child_status;
  /* --pid: 1 while we hold a lease that keeps the process recording if
   * it was paused (e.g. started with OCAML_RUNTIME_EVENTS_START=paused),
   * given back when the source closes; ctl_dir is the directory of its
   * ring file. */
  int resumed;
  const char *ctl_dir;
  char ctl_dir_buf[4096];
  /* The file read, for --follow to tell when its writer is gone. */
  struct tool_writer_state w;

  /* Several processes (procs.c).  A subcommand that reports on several
   * processes sets `multi` before tool_source_open(); the source may then
   * be a list of files, --dir DIR without --pid (every ring file there)
   * or a command whose whole process tree is read.  Without `multi`, the
   * source is one file as before. */
  int multi;
  /* --drain-timeout: how long the processes of a command may outlive it
   * (0: TOOL_DRAIN_DEFAULT_NS). */
  uint64_t drain_ns;
  /* Set by tool_source_open() when `multi`: every process read so far,
   * in the order their files were found, and during a callback the
   * index of the one whose event it is (src->cursor is then its cursor,
   * for names).  Processes are added while reading a command or
   * --follow --dir. */
  struct tool_proc **procs;
  int nprocs;
  int proc;
  struct tool_dirscan_state *scan; /* procs.c's, NULL when not scanning */

  /* The filters given (filter.c), NULL when none: tool_source_read()
   * then gives the callbacks only the events that pass. */
  struct tool_filter *filter;
};


/* Called by main() with the subcommand's argc/argv (argv[0] is its name)
 * before the subcommand runs: takes `-- CMD ARGS...` (from the first
 * "--" on) off the command line, keeps it for tool_source_open(), and
 * returns the new argc (argv[argc] is then NULL).  Also stops any tracing
 * of the tool itself that OCAML_RUNTIME_EVENTS_START in its environment
 * made the library start when the tool was loaded. */
int tool_source_take_command(int argc, char **argv);

/* Whether the command line runs a command (`-- CMD`): for a subcommand
 * that reads a command's tree its own way, before tool_source_open(). */
int tool_source_command_given(void);

/* Checks the source options and the operands left after them (at most
 * one FILE, which excludes --pid and a command; --dir needs --pid; with
 * src->multi, several FILEs, or --dir alone) and opens the cursor.  With a command, first runs it (see spawn.c): a
 * private directory, the tracing variables in its environment, and waits
 * until its ring file appears.  Returns TOOL_EXIT_OK, or prints one line
 * and returns TOOL_EXIT_USAGE, TOOL_EXIT_INPUT, TOOL_EXIT_NOTFOUND or
 * TOOL_EXIT_NOEXEC (the command could not be run), or 128 + a signal
 * (interrupted while waiting for the command's file).  `help` names the
 * subcommand's --help for usage errors.  Also installs the SIGINT,
 * SIGTERM and SIGHUP handlers that make reading stop cleanly. */
int tool_source_open(struct tool_source *src, int nargs, char **args,
                     const char *help);

/* Frees the cursor.  For a spawned command: if it still runs (reading
 * ended early: an error, a closed output), sends it SIGTERM (SIGKILL two
 * seconds later) and reaps it; then removes its ring files and the
 * private directory.  Restores the signal handlers. */
void tool_source_close(struct tool_source *src);

/* Called by main() with the subcommand's exit status; returns the
 * command's: the subcommand's when it failed (nonzero), else the spawned
 * command's (its exit code, or 128 + the signal that killed it), else
 * 128 + the signal that interrupted reading, else 0.  Cleans up a spawned
 * command (as tool_source_close) should the subcommand not have. */
int tool_source_exit_status(int status);

/* Subcommands call this from their lifecycle callback so that --follow
 * on a file that names no pid ends at ring_stop. */
void tool_source_lifecycle(struct tool_source *src, int kind);

/* Subcommands call this from their lost_events callback (or install
 * tool_source_on_lost as that callback): counts the loss per domain for
 * the progress line and tool_source_lost_summary(). */
void tool_source_lost(struct tool_source *src, int domain, uint64_t count);

/* A lost_events callback that only counts (tool_source_lost on the
 * source being read by tool_source_read). */
int tool_source_on_lost(void *data, int domain, uint64_t count);

/* Subcommands call this from their window callback (or install
 * tool_source_on_window): `before` events of `domain` had been
 * overwritten before the source was first read, which is no loss; the
 * summary says what was read is a window. */
void tool_source_window(struct tool_source *src, int domain,
                        uint64_t before);
int tool_source_on_window(void *data, int domain, uint64_t before);

/* Prints, when something was lost, one line to `out` (stderr, or the
 * subcommand's report) such as
 *   eventring: 1234 events lost (domain 0: 1200, domain 3: 34); ...
 * naming the unit (ring words for OCaml 5's files) and how to get bigger
 * rings; before it, when the writer dropped events or the reader skipped
 * malformed ones (tool_unrecorded), one line for each:
 *   eventring: 3000 events dropped by the writer, never recorded
 *     (without a domain slot: 3000); more threads than domain slots: ...
 *   eventring: FILE: 1 malformed event skipped (domain 0: 1); ...
 * Returns lost_total. */
uint64_t tool_source_lost_summary(const struct tool_source *src, FILE *out);

/* What a cursor's file says its writer dropped (eventring_cursor_dropped:
 * `dropped` over every domain and the threads without one, `no_slot` for
 * those alone) and what the cursor skipped as malformed, each sum
 * saturating at UINT64_MAX.  Returns 0, or the cursor's error (the file
 * shrank, an impossible count). */
struct tool_unrecorded {
  uint64_t dropped, no_slot, malformed;
};
int tool_unrecorded(const eventring_cursor *c, struct tool_unrecorded *u);

/* Polls the cursor to the end -- until a poll finds nothing, or with
 * --follow (and always for a spawned command) until the writer is gone
 * and what it left is drained -- with `cb` and `data`.  Stops early when
 * standard output fails, and on SIGINT/SIGTERM/SIGHUP (src->interrupted;
 * a spawned command gets the signal and is read until it ends, or killed
 * after 3 s).  Shows progress on a terminal (progress.c).  Returns
 * TOOL_EXIT_OK, or TOOL_EXIT_INPUT after printing one line for a read
 * error; the callbacks have seen every event read before the error. */
int tool_source_read(struct tool_source *src, const eventring_callbacks *cb,
                     void *data);

/* ------------------------------------------------------------------ */
/* filter.c: which events the callbacks see (filter.c's comment says    */
/* what each filter keeps).                                             */

/* A filter option `c` (TOOL_OPT_F_*) with argument `arg` applied to
 * `src`: 1, or 0 when `c` is none, or -1 with the reason in `why`. */
int tool_filter_option(struct tool_source *src, int c, const char *arg,
                       char *why, size_t size);
/* The filters that contradict the source (--last while following):
 * TOOL_EXIT_OK or a usage error. */
int tool_filter_check(const struct tool_source *src, const char *help);
/* tool_source_read() with the filters: the callbacks of `cb` (made by
 * tool_callbacks_new) see only the events that pass. */
int tool_filter_read(struct tool_source *src, const eventring_callbacks *cb,
                     void *data);
/* The timestamp the relative times count from (the first event of the
 * source) when the filters know it: 1 and *ts, else 0. */
int tool_filter_first_ts(const struct tool_source *src, uint64_t *ts);
/* The earliest and latest timestamps of the events `src`'s files hold
 * now, in every domain and process, whatever a filter keeps (the origin
 * of relative times and of --since): returns 1 with *lo and *hi set, or
 * 0 when there is none yet. */
int tool_source_time_span(const struct tool_source *src, uint64_t *lo,
                          uint64_t *hi);
void tool_filter_free(struct tool_source *src);
/* Whether --since, --until or --last was given. */
int tool_filter_has_time(const struct tool_source *src);
/* tool_source_read() without the filters. */
int tool_source_read_raw(struct tool_source *src,
                         const eventring_callbacks *cb, void *data);

/* ------------------------------------------------------------------ */
/* procs.c: several processes in one report (src->multi).               */

/* One process of a multi source: one ring file, so an exec'd program,
 * which replaces its predecessor's file under the same pid, is a process
 * of its own that follows it. */
struct tool_proc {
  /* NULL while a file of a directory waits for a descriptor (procs.c):
   * no event of it has been delivered yet. */
  eventring_cursor *cursor;
  char path[4096];
  pid_t pid;     /* the writer, 0 when the file does not say */
  char name[64]; /* the program, as the file records it; "" if unknown */
  int index;     /* in src->procs */
  /* Kept while reading. */
  uint64_t events_read, lost_total;
  uint64_t *lost; /* per domain, lost_n entries */
  int lost_n;
  uint64_t before_total; /* overwritten before its window */
  /* Internal to procs.c. */
  int state;
  int replaced; /* a later program of the same pid replaced the file */
  unsigned long image; /* its name's N (tool_ring_name), 0: <pid>.events */
  unsigned long found_scan; /* the directory scan that found it, 0: none */
  uint64_t born; /* when its file was made (its wall clock's start pair's
                    timestamp), 0 when the file does not say */
  int saw_ring_stop;
  struct tool_writer_state w;
};

/* "pid 123 (prog)", "pid 123", or the file's name, into `buf`. */
const char *tool_proc_label(const struct tool_proc *p, char *buf, size_t n);

/* What the source's own code calls (source.c, spawn.c): */
int tool_procs_open(struct tool_source *src, int nargs, char **args,
                    const char *help);
int tool_procs_read(struct tool_source *src, const eventring_callbacks *cb,
                    void *data);
void tool_procs_close(struct tool_source *src);
void tool_procs_lost(struct tool_source *src, int domain, uint64_t count);
void tool_procs_lost_summary(const struct tool_source *src, FILE *out);

/* Room for tool_domain_thread() and tool_domain_label(). */
#define TOOL_THREAD_BUF TOOL_TEXT_BUF(24)
#define TOOL_DOMAIN_BUF (TOOL_THREAD_BUF + 32)
/* The name of the thread file `c` records as the holder of slot
 * `domain`, as tool_text() shows it, into `buf` (TOOL_THREAD_BUF bytes);
 * "" when the file names none (OCaml 5's files, `c` NULL). */
const char *tool_domain_thread(const eventring_cursor *c, int domain,
                               char *buf, size_t size);
/* "domain D (NAME)", or "domain D" when `thread` (already escaped) is
 * empty, into `buf` (TOOL_DOMAIN_BUF bytes): how every table and message
 * shows a domain.  Returns `buf`. */
const char *tool_domain_text(char *buf, size_t size, int domain,
                             const char *thread);
/* tool_domain_text() with the name of the thread file `c` records. */
const char *tool_domain_label(const eventring_cursor *c, int domain,
                              char *buf, size_t size);

/* The lines of tool_source_lost_summary() for one file: what the writer
 * dropped, what the reader skipped, what was lost; each after `label`
 * ("pid 12 (prog): ") when not empty. */
void tool_lost_lines(FILE *out, const eventring_cursor *c, const char *path,
                     const char *label, uint64_t lost_total,
                     const uint64_t *lost, int lost_n);
/* The line of tool_source_lost_summary() that says a file was read from
 * the middle, `before` events (or words) having been overwritten before
 * it was first read; nothing when `before` is 0. */
void tool_window_line(FILE *out, const eventring_cursor *c, const char *path,
                      const char *label, uint64_t before);

/* Adds a loss of `count` in `domain` to *total and to (*lost)[domain],
 * growing *lost (*lost_n entries) to the file's domain count. */
void tool_count_lost(const eventring_cursor *c, uint64_t *total,
                     uint64_t **lost, int *lost_n, int domain,
                     uint64_t count);

/* source.c: following one file's writer (struct tool_writer_state). */
void tool_writer_note(struct tool_writer_state *w, const char *path,
                      pid_t pid);
int tool_writer_gone(struct tool_writer_state *w, pid_t pid);
/* The line for a file whose phase numbering was a guess. */
void tool_warn_numbering(const eventring_cursor *c, const char *path);

/* The default of --drain-timeout. */
#define TOOL_DRAIN_DEFAULT_NS 5000000000ULL

/* ---- Between source.c and its helpers (not for subcommands). ---- */

/* spawn.c.  Runs src->cmd with the tracing variables set, and opens a
 * cursor on its ring file (src->path, src->pid, src->cursor).  Returns
 * an exit status as tool_source_open() does. */
int tool_spawn_open(struct tool_source *src);
/* Nonzero once the spawned command (and the writer of its ring file, if
 * another process) has ended; reaps it, setting child_reaped and
 * child_status. */
int tool_spawn_done(struct tool_source *src);
/* Kills the spawned command if it still runs (SIGTERM, then SIGKILL
 * after `grace_s`), reaps it, removes its files and directory.
 * Idempotent. */
void tool_spawn_cleanup(struct tool_source *src, double grace_s);
/* Sends SIGKILL to the spawned command if it still runs. */
void tool_spawn_kill(struct tool_source *src);
/* With src->multi: the private directory the command's tree writes
 * into; 1 once the command and every process of its tree have ended
 * (the tool is their subreaper, so orphans come back to it and are
 * reaped here too); the pids of the tree's processes still running
 * that are the tool's children, at most `max` into `v` (returns how
 * many). */
const char *tool_spawn_dir(void);
int tool_spawn_tree_done(struct tool_source *src);
int tool_spawn_children(pid_t *v, int max);

/* The signal handlers: installed by tool_source_open(), removed by
 * tool_source_close().  tool_signal_pending() is the first signal caught
 * (0: none), tool_signal_count() how many were. */
void tool_signals_install(void);
void tool_signals_restore(void);
void tool_signals_forward_to(pid_t pid);
int tool_signal_pending(void);
int tool_signal_count(void);

/* progress.c: the progress line on a terminal. */
void tool_progress_begin(struct tool_source *src);
void tool_progress_tick(const struct tool_source *src);
void tool_progress_end(void);

/* A pid: `len` decimal digits only, 1 .. INT_MAX.  Returns it, or 0. */
pid_t tool_parse_pid(const char *s, size_t len);

/* The pid in a file name of the form [DIR/]<pid>.events, else 0. */
pid_t tool_pid_of_path(const char *path);
/* The same, with *image 0 for <pid>.events, the file of the image that
 * runs (or ran last) under the pid, and N for <pid>.<N>.events, which a
 * later image of the pid kept (runtime/leftovers.c): a pid's files were
 * written in the order of N, <pid>.events last. */
pid_t tool_ring_name(const char *path, unsigned long *image);

/* The name of live process `pid` (its /proc/PID/comm) into `name`
 * (`size` bytes), or an empty string. */
void tool_process_name(pid_t pid, char *name, size_t size);

/* Whether process `pid` has exited (a zombie counts as exited). */
int tool_process_gone(pid_t pid);

/* What tool_find_ring() found. */
enum {
  TOOL_FIND_OK = 0,  /* the path of the ring file is in `path` */
  TOOL_FIND_NOPROC,  /* no such process, or it has exited */
  TOOL_FIND_NONE,    /* the process lives, but has no ring file (yet) */
  TOOL_FIND_ERROR    /* its ring file cannot be found or read */
};

/* Finds the ring file of process `pid`: with `dir` (--dir) only there,
 * else wherever the process maps it (/proc/PID/maps), else where its
 * OCAML_RUNTIME_EVENTS_DIR or working directory say, else in the tool's
 * OCAML_RUNTIME_EVENTS_DIR or working directory.  Every subcommand that
 * turns a pid into a file goes through here.  Returns TOOL_FIND_OK with
 * the file's path in `path` (`size` bytes), or another TOOL_FIND_* with
 * a one-line message for tool_error() in `msg` ("no such process 123",
 * "process 123 (prog) is not traced: ..."). */
int tool_find_ring(pid_t pid, const char *dir, char *path, size_t size,
                   char *msg, size_t msg_size);

/* The directory part of `path` into `dir` ("." when it has none), for
 * the library's remote control, which takes a directory and a pid. */
void tool_dir_of(const char *path, char *dir, size_t size);

/* What is wrong with the ring file at `path` that a cursor or remote
 * control refused with `err`, in words: "not a ring file", "a ring file
 * of an unsupported version 7 (...)", "truncated ring file: ...", the
 * owner of a file that is not ours.  Returns `buf` or a static string. */
const char *tool_ring_error(const char *path, int err, char *buf,
                            size_t size);

/* Reports that a poll of the ring file at `path` failed with `err`, after
 * the events read so far (the progress line ended, standard output
 * flushed): a file cut short says by how much. */
void tool_poll_error(const char *path, int err);

/* dirscan.c: the ring files that appear in a directory (--dir alone). */
struct dirscan_files;
struct stat;
struct tool_dirscan {
  const char *dir; /* the directory */
  const char *who; /* the subcommand, for messages ("metrics") */
  struct dirscan_files *files; /* NULL at first */
  /* Looks in a row before a refusal is settled and reported (0: 3, for
   * a scan four times a second; more for one that scans more often). */
  int tries;
  /* Also the files of earlier images, <pid>.<N>.events (process trees);
   * otherwise only <pid>.events, the files of running images. */
  int images;
};
/* What a scan tells the subcommand: `found` takes cursor `c` on a new
 * file of process `pid` and returns a handle for it (anything but NULL),
 * or NULL to decline it (the cursor is freed, the file looked at again
 * later); `still` says that the file whose handle it is is still there.
 * After a scan that did not call `still` for a handle, the file is gone
 * (or replaced: a new one of the same name goes to `found` in the same
 * scan) and the handle is never used again; until then it must stay
 * valid. */
struct tool_dirscan_ops {
  void (*still)(void *arg, void *handle);
  void *(*found)(void *arg, eventring_cursor *c, const char *path, pid_t pid,
                 const struct stat *st);
};
/* Whether `dir` is a directory: TOOL_EXIT_OK, or TOOL_EXIT_INPUT after
 * one line naming `who` and `dir`.  Also raises the soft limit on open
 * files to the hard one: a scan's subcommand holds one per live process. */
int tool_dirscan_check(const char *dir, const char *who);
/* One scan of d->dir.  Costs a listing and, per file, a hash lookup; a
 * file is opened only when new, replaced or changed since it was refused
 * (and one refused for want of descriptors, from time to time).  A file
 * refused three scans in a row is reported once ("WHO: PATH: reason
 * (skipped)") and looked at again only every 32 scans.  Returns the
 * number of files refused fewer than three times (a file being created
 * looks malformed for an instant: worth another look soon). */
int tool_dirscan(struct tool_dirscan *d, const struct tool_dirscan_ops *ops,
                 void *arg);
/* The files of the last scan that were refused for want of descriptors
 * (EMFILE, ENFILE) and not taken since. */
int tool_dirscan_nofile(const struct tool_dirscan *d);
void tool_dirscan_free(struct tool_dirscan *d);

/* The longest duration an option takes, in nanoseconds. */
#define TOOL_DURATION_MAX_NS 1e18

/* A duration such as 10ms, 2.5s (units ns, us, ms, s; at most
 * TOOL_DURATION_MAX_NS) into *ns: the one parser of every option that
 * takes a duration.  Returns 0, or -1 with the reason in `why` (not a
 * number, no unit, an unknown unit, too large). */
int tool_parse_duration(const char *s, uint64_t *ns, char *why, size_t size);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t tool_now_ns(void);

#endif /* EVENTRING_TOOL_H */
