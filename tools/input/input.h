/* input.h -- the input layer of the `eventring` command (input/): where
 * events come from and what every reader of them shares.  From the top
 * of the layer down (a file calls only files below it):
 *   source.c   the source options, opening and closing a source (a ring
 *              file named on the command line, a process's file found
 *              by --pid/--dir, or a command run by `-- CMD ARGS...`),
 *              and reading it, through filter.c when a filter is given;
 *   filter.c   which events the callbacks see (--domain, --event,
 *              --kind, --since, --until, --last);
 *   read.c     reading to the end or following the writer, and the
 *              accounting of lost events and windows;
 *   procs.c    several processes in one report: a list of files, every
 *              file of --dir DIR, or a command's whole process tree;
 *   spawn.c    running a command (`-- CMD ARGS...`) and the signals;
 *   dirscan.c  the ring files appearing in a directory (the host mode of
 *              metrics and watch, --dir for procs.c);
 *   progress.c the progress line on a terminal;
 *   rings.c    ring files and their processes: pids and file names,
 *              finding a process's file, liveness of a writer, the
 *              messages for a file's errors and losses;
 *   events.c   installing the callbacks, the names of phases, counters,
 *              lifecycle kinds and user events with their fallbacks;
 *   walltime.c the wall clock of a source.
 * It builds on base/ alone.
 */
#ifndef EVENTRING_TOOLS_INPUT_H
#define EVENTRING_TOOLS_INPUT_H

#include "base/base.h"

/* ================================================================== */
/* Source options (source.c)                                            */
/* ================================================================== */

/* The values getopt_long returns for the source options; a subcommand's
 * own long options take values from TOOL_OPT_OWN on. */
enum { TOOL_OPT_DIR = 256, TOOL_OPT_PID, TOOL_OPT_OCAML50, TOOL_OPT_OCAML53,
       TOOL_OPT_DRAIN, TOOL_OPT_WAIT, TOOL_OPT_F_DOMAIN, TOOL_OPT_F_EVENT, TOOL_OPT_F_KIND,
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
      {"wait", required_argument, NULL, TOOL_OPT_WAIT},                    \
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

/* The lines of --help on those options, in the same words wherever a
 * subcommand has nothing of its own to add: --pid and --dir (the last
 * line without its newline, which a subcommand may continue),
 * --drain-timeout, --ocaml50 and --ocaml53 (short, or with the note on
 * whose files need them), and the first two lines of the filters. */
#define TOOL_HELP_PID_DIR                                                  \
  "  --pid PID      read the ring file of process PID\n"                   \
  "  --dir DIR      where that file is (default: $OCAML_RUNTIME_EVENTS_DIR" \
  ",\n"                                                                    \
  "                 else the current directory); without --pid, every\n"   \
  "                 ring file in DIR"
#define TOOL_HELP_WAIT                                                     \
  "  --wait DUR     with --follow --pid: wait at most DUR (default 5s) for\n" \
  "                 a live process to create its ring file\n"
#define TOOL_HELP_DRAIN                                                    \
  "  --drain-timeout DUR\n"                                                \
  "                 wait at most DUR (default 5s) for the processes of a\n" \
  "                 COMMAND's tree that outlive it\n"
#define TOOL_HELP_OCAML5X                                                  \
  "  --ocaml50      number phases as OCaml 5.0-5.2 did\n"                  \
  "  --ocaml53      number phases as OCaml 5.3+ does (default: inferred\n"  \
  "                 from the file)\n"
#define TOOL_HELP_OCAML5X_FILES                                            \
  "  --ocaml50      number phases as OCaml 5.0-5.2 did (for files those\n" \
  "                 versions wrote; eventring's files name their own)\n"   \
  "  --ocaml53      number phases as OCaml 5.3+ does (default for both:\n" \
  "                 inferred from the file)\n"
#define TOOL_HELP_FILTERS_HEAD                                             \
  "  --domain N|NAME, --event GLOB, --kind KIND, --since T, --until T, "   \
  "--last DUR\n"                                                           \
  "                 only the events of those domains, names, kinds and "   \
  "times\n"

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

/* ================================================================== */
/* source.c, read.c, procs.c, spawn.c, dirscan.c, progress.c, rings.c   */
/* ================================================================== */

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
  /* With --follow and --dir alone: the directory is followed until a
   * signal (SIGINT, SIGTERM, SIGHUP), with no file in it yet or every
   * writer gone, as a recorder run as a service does (record). */
  int until_signal;
  int ocaml50;        /* --ocaml50 */
  int ocaml53;        /* --ocaml53 */
  /* Set by tool_source_open(). */
  char path[4096];    /* the file read, for messages */
  pid_t pid;          /* the writer's pid, 0 when unknown */
  eventring_cursor *cursor;
  /* Set by the subcommand's lifecycle callback (tool_source_lifecycle). */
  int saw_ring_stop;

  /* Everything below is zero after memset() and is set by source.c
   * and read.c. */

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
  /* --wait: how long --follow --pid waits for a live process to create
   * its file (0: TOOL_WAIT_DEFAULT_NS). */
  uint64_t wait_ns;
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
 * src->multi, several FILEs, or --dir alone) and opens the cursor.  With
 * a command, first runs it (see spawn.c): a
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

/* What procs.c keeps per domain of a process several files hold. */
struct tool_jdom {
  uint64_t last_ts;  /* the last timestamp delivered */
  uint64_t last_cnt; /* events delivered at last_ts */
  uint64_t skip_eq;  /* of those, to skip still in a file repeating them */
  uint64_t pos;      /* events so far, lost ones and the window's too */
  uint64_t held_win, held_lost; /* said gone before the file's first */
  unsigned char st;  /* D_* */
};

/* One file of a process that several files hold (`eventring record`'s
 * rotated files, read together): see procs.c, "Joined files". */
struct tool_seg {
  char *path;
  /* The file as it was opened to tell whose it is, then released (it
   * answers for names and the writer); the cursor it is read through,
   * opened when its turn comes (the same as `id` for the first). */
  eventring_cursor *id, *cursor;
  unsigned long seq; /* SEQ of record's name, 0 when not one */
  int gap;           /* files are missing between the previous one and it
                        (2: or another process's files are) */
  int copy;          /* the same bytes as an earlier file: not read */
};

/* One process of a multi source: one ring file, so an exec'd program,
 * which replaces its predecessor's file under the same pid, is a process
 * of its own that follows it; or, read once through, the files of one
 * writer that several files hold (nsegs > 1; procs.c, "Joined files"). */
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
  /* Joined files (nsegs > 1, else none): in the order they are read,
   * segs[seg] being read; `cursor` above is then one of their `id`s (the
   * widest, the latest of those: the names and domains of them all). */
  struct tool_seg *segs;
  int nsegs, seg;
  int began;           /* its first file is being read */
  int in_order;        /* record's files: none repeats another's events */
  uint64_t gaps;       /* places where files of it are missing */
  uint64_t overlapped; /* events read twice in its files, delivered once */
  struct tool_jdom *dom; /* per domain (procs.c), ndom of them */
  int ndom;
};

/* Whether the files `a` and `b` read (by the cursors, at the paths) are
 * the same writer's: the same pid, program and, where the files record
 * them, start time (ER_EXT_FLAG_START_TIME) and wall clock start pair
 * (the instant its ring file was made, which record's files keep).  A
 * reused pid, or an exec'd image, is another writer.  The rule by which
 * files are joined into one process (procs.c) and watch's streams. */
int tool_same_writer(const eventring_cursor *a, const char *path_a,
                     const eventring_cursor *b, const char *path_b);

/* Whether `p` has been read to its end and its writer is gone: nothing
 * more will come of it. */
int tool_proc_done(const struct tool_proc *p);

/* "pid 123 (prog)", "pid 123", or the file's name, into `buf`. */
const char *tool_proc_label(const struct tool_proc *p, char *buf, size_t n);

/* What the source's own code calls (source.c, read.c): */
int tool_procs_open(struct tool_source *src, int nargs, char **args,
                    const char *help);
int tool_procs_read(struct tool_source *src, const eventring_callbacks *cb,
                    void *data);
void tool_procs_close(struct tool_source *src);
/* The files of directory `dir` named *.events (not hidden), sorted by
 * name, as paths into *out (*n of them; each to free with the array):
 * what a directory named as a FILE operand stands for (a directory of
 * `eventring record`'s files, or kept ring files).  Returns
 * TOOL_EXIT_OK, or TOOL_EXIT_INPUT after one line. */
int tool_procs_dir_files(const char *dir, char ***out, int *n);
void tool_procs_lost(struct tool_source *src, int domain, uint64_t count);
void tool_procs_lost_summary(const struct tool_source *src, FILE *out);
/* The lines of tool_procs_lost_summary() on joined files alone (files
 * missing, copies, events read twice), for a subcommand that reports
 * its losses its own way (dump). */
void tool_procs_join_summary(const struct tool_source *src, FILE *out);

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

/* rings.c: following one file's writer (struct tool_writer_state). */
void tool_writer_note(struct tool_writer_state *w, const char *path,
                      pid_t pid);
int tool_writer_gone(struct tool_writer_state *w, pid_t pid);
/* The line for a file whose phase numbering was a guess. */
void tool_warn_numbering(const eventring_cursor *c, const char *path);

/* The default of --wait: long enough for a program started in the same
 * shell line to get to its first event, short enough that a process
 * that will never be traced is soon reported. */
#define TOOL_WAIT_DEFAULT_NS 5000000000ULL

/* The default of --drain-timeout. */
#define TOOL_DRAIN_DEFAULT_NS 5000000000ULL

/* ---- Between the files of the input layer (not for subcommands). ---- */

/* read.c: the source being opened or read (set by tool_source_open()
 * and tool_source_read_raw(), cleared by tool_source_close()), for the
 * lost and window callbacks and for tool_source_exit_status(). */
extern struct tool_source *tool_source_current;

/* rings.c: a + b, or UINT64_MAX when that does not fit (the cursor bounds
 * each domain's count, 2^60, not the sum over thousands of domains). */
uint64_t tool_add_sat(uint64_t a, uint64_t b);

/* rings.c: the start time the file at `path` records for its writer, when
 * it names `pid` (runtime/starttime.c).  Returns 1 and sets *start, or 0. */
int tool_recorded_start(const char *path, pid_t pid, uint64_t *start);

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
/* The directory that a subcommand writes its files into (`-o DIR`):
 * made when it is missing (its parent must exist), then checked as
 * tool_dirscan_check() does and for writing.  TOOL_EXIT_OK, or
 * TOOL_EXIT_INPUT after one line naming `who` ("watch: -o") and `dir`. */
int tool_output_dir(const char *dir, const char *who);
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

/* ================================================================== */
/* events.c                                                             */
/* ================================================================== */

/* What the subcommands share in handling the events a cursor
 * delivers: one table to install their callbacks, the names of phases,
 * counters, lifecycle kinds and user events (with the fallback that
 * stands for a name the file does not give), and the unit of the lost
 * counts.
 *
 * Every subcommand shows an unnamed id the same way, as the kind's
 * fallback and the id (phase_12, counter_3, lifecycle_9, user_40), so
 * that the outputs of dump, ctf, trace, stats and metrics can be matched
 * against one another.
 */

#include <stddef.h>
#include <stdio.h>

/* A subcommand's callbacks, one field per kind of event, in the order of
 * eventring.h's setters (a table that handles every kind can list them
 * without names); a NULL field leaves that kind to the cursor's default
 * (skipped). */
struct tool_handlers {
  eventring_phase_fn runtime_begin;
  eventring_phase_fn runtime_end;
  eventring_counter_fn runtime_counter;
  eventring_alloc_fn alloc;
  eventring_lifecycle_fn lifecycle;
  eventring_user_unit_fn user_unit;
  eventring_user_int_fn user_int;
  eventring_user_span_fn user_span;
  eventring_user_custom_fn user_custom;
  eventring_lost_fn lost_events;
  eventring_thread_fn thread;
  /* NULL: the events before a ring's window go to lost_events, as
   * OCaml 5's consumer reports them. */
  eventring_window_fn window;
};

/* A callbacks object with the handlers of `h` installed; NULL when out of
 * memory.  Free it with eventring_callbacks_free(). */
eventring_callbacks *tool_callbacks_new(const struct tool_handlers *h);

/* The handlers that tool_callbacks_new() installed in `cb` (which the
 * filters of filter.c wrap), or NULL for a callbacks object it did not
 * make. */
const struct tool_handlers *tool_callbacks_handlers(
    const eventring_callbacks *cb);

enum tool_name_kind {
  TOOL_NAME_PHASE,
  TOOL_NAME_COUNTER,
  TOOL_NAME_LIFECYCLE,
  TOOL_NAME_USER,
};

/* The fallback of each kind: "phase_", "counter_", "lifecycle_",
 * "user_". */
extern const char *const tool_name_fallback[];

/* Room for a fallback name and its id. */
#define TOOL_NAME_BUF 32

/* The name the file gives id `id` of kind `k` (the cursor's phase and
 * counter tables, the library's lifecycle names, the file's user event
 * slots): NULL or "" when it has none. */
const char *tool_file_name(const eventring_cursor *c, enum tool_name_kind k,
                           int id);

/* `name` when it is not NULL or empty, else `fallback` and `id` written
 * into `buf` (TOOL_NAME_BUF bytes). */
const char *tool_name_or(char *buf, const char *name, const char *fallback,
                         int id);

/* The file's name for the id, or the kind's fallback and the id written
 * into `buf` (TOOL_NAME_BUF bytes).  Unescaped: for JSON strings, labels
 * and tables that escape in their own way. */
const char *tool_event_name(const eventring_cursor *c, enum tool_name_kind k,
                            int id, char *buf);

/* Writes the file's name for the id as tool_put_name() does (one field of
 * one line, the kind's fallback for a missing name). */
void tool_put_event_name(FILE *out, const eventring_cursor *c,
                         enum tool_name_kind k, int id);

/* "events" or "words": the unit of the cursor's lost counts. */
const char *tool_lost_unit(const eventring_cursor *c);

/* tool_put_name() into `buf` (`size` bytes, NUL-terminated, cut short if
 * need be); returns buf. */
const char *tool_name_str(char *buf, size_t size, const char *name,
                          const char *fallback, int id);

/* tool_put_ocaml_string() into `buf` (`size` bytes), without the quotes
 * and NUL-terminated; returns the length, 0 when it does not fit. */
size_t tool_ocaml_string_str(char *buf, size_t size, const void *bytes,
                             size_t len);

/* ================================================================== */
/* walltime.c                                                           */
/* ================================================================== */

/* The wall clock of a source, for the subcommands that
 * print or export times of day (walltime.c). */

#include <stddef.h>
#include <stdint.h>

/* Room for the longest ISO 8601 time tool_wall_format() writes. */
#define TOOL_WALL_BYTES 48

/* The wall-clock offset of the file `c` reads: the wall time of an event
 * stamped t is t + *offset nanoseconds since the Unix epoch.  The start
 * pair's offset, so that every event of the file, and of its forked
 * children's files (which keep it), is placed with one offset and keeps
 * its order.  Returns 0, or the cursor's error
 * (EVENTRING_E_NOWALLCLOCK for OCaml 5's files). */
int tool_wall_offset(const eventring_cursor *c, int64_t *offset);

/* The message for a source without a wall clock, naming `path`. */
void tool_wall_unknown(const char *path, int err);

/* `ns` nanoseconds since the Unix epoch as ISO 8601 UTC with
 * nanoseconds, 2026-11-24T05:50:42.123456789Z, into buf (at least
 * TOOL_WALL_BYTES). */
void tool_wall_format(char *buf, size_t size, int64_t ns);

#endif /* EVENTRING_TOOLS_INPUT_H */
