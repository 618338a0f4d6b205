/* source.c -- where the `eventring` command reads events from.
 *
 * A subcommand reads one ring file, named either directly (FILE, e.g. a
 * file kept with OCAML_RUNTIME_EVENTS_PRESERVE or left by a process that
 * crashed), as the file of a process (--pid PID, in --dir DIR or else
 * in OCAML_RUNTIME_EVENTS_DIR or the current directory, as the library
 * names it), or as the file of a program the tool runs itself
 * (`-- CMD ARGS...`, spawn.c).  The cursor keeps the file open and
 * mapped, so a file its writer removes at exit is still read to the end.
 *
 * Once open, the source is read by read.c (to the end, or following the
 * writer), through filter.c when a filter is given; the ring files and
 * processes themselves are rings.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring_format.h"
#include "starttime.h"
#include "input/input.h"

/* How long --pid waits for a live process's new file to be complete. */
#define OPEN_RETRY_NS 1000000000ULL

/* The command that main() took off the command line, for
 * tool_source_open(); `taken` even when "--" had nothing after it. */
static char **taken_cmd;
static int taken;

/* The files of a directory given as the FILE operand, kept while the
 * source is open. */
static char **dir_files;
static int n_dir_files;

/* What tool_source_exit_status() reports once the source is closed. */
static int last_child_reaped, last_child_status, last_interrupted;

int tool_source_take_command(int argc, char **argv) {
  /* The tool reads ring files and never writes one; the library's
   * constructor starts tracing of any program it is linked into when
   * OCAML_RUNTIME_EVENTS_START is set, which a user running
   * `OCAML_RUNTIME_EVENTS_START=1 eventring ...` does not mean for us.
   * The file is removed even with OCAML_RUNTIME_EVENTS_PRESERVE: the
   * library made it just now (O_EXCL), and nobody wants the tool's. */
  const char *own = eventring_path();
  if (own) {
    char path[4096];
    snprintf(path, sizeof path, "%s", own);
    if (eventring_stop() == 0) unlink(path);
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") != 0) continue;
    taken = 1;
    taken_cmd = argv + i + 1;
    argv[i] = NULL;
    return i;
  }
  return argc;
}

int tool_source_option(struct tool_source *src, int c) {
  switch (c) {
  case TOOL_OPT_DIR: src->dir = optarg; return 1;
  case TOOL_OPT_PID: src->pid_arg = optarg; return 1;
  case 'f': src->follow = 1; return 1;
  case TOOL_OPT_OCAML50: src->ocaml50 = 1; return 1;
  case TOOL_OPT_OCAML53: src->ocaml53 = 1; return 1;
  default: return 0;
  }
}

int tool_source_other(struct tool_source *src, int c, char **argv,
                      const char *help_ref, void (*help)(void)) {
  if (c == TOOL_OPT_DRAIN) {
    char why[160];
    if (tool_parse_duration(optarg, &src->drain_ns, why, sizeof why) != 0)
      return tool_usage_error(help_ref, "--drain-timeout: %s", why);
    if (src->drain_ns == 0) src->drain_ns = 1; /* 0 means the default */
    return -1;
  }
  if (c == TOOL_OPT_WAIT) {
    char why[160];
    if (tool_parse_duration(optarg, &src->wait_ns, why, sizeof why) != 0)
      return tool_usage_error(help_ref, "--wait: %s", why);
    if (src->wait_ns == 0) src->wait_ns = 1; /* 0 means the default */
    return -1;
  }
  char fwhy[300];
  int fr = tool_filter_option(src, c, optarg, fwhy, sizeof fwhy);
  if (fr < 0) return tool_usage_error(help_ref, "%s", fwhy);
  if (fr > 0) return -1;
  if (tool_source_option(src, c)) {
    if (src->ocaml50 && src->ocaml53)
      return tool_usage_error(help_ref, "--ocaml50 and --ocaml53 contradict "
                                        "each other (give one)");
    return -1;
  }
  if (c == 'h') {
    help();
    return tool_output_finish();
  }
  return tool_option_error(help_ref, c, argv);
}


/* Waits (--wait, TOOL_WAIT_DEFAULT_NS by default) while process `pid`
 * lives without a ring file, as --follow does for a process started a
 * moment ago.  Returns tool_find_ring()'s last answer. */
static int wait_for_ring(struct tool_source *src, const char *dir, char *msg,
                         size_t msg_size) {
  uint64_t wait = src->wait_ns ? src->wait_ns : TOOL_WAIT_DEFAULT_NS;
  double secs = wait / 1e9;
  tool_error("waiting up to %g s for process %ld to create its ring file",
             secs, (long)src->pid);
  uint64_t give_up = tool_now_ns() + wait;
  int r;
  do {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
    r = tool_find_ring(src->pid, dir, src->path, sizeof src->path, msg,
                       msg_size);
  } while (r == TOOL_FIND_NONE && tool_now_ns() < give_up &&
           !tool_signal_pending());
  if (r == TOOL_FIND_NOPROC)
    snprintf(msg, msg_size, "process %ld ended without creating a ring file",
             (long)src->pid);
  else if (r == TOOL_FIND_NONE && !tool_signal_pending())
    snprintf(msg + strlen(msg), msg_size - strlen(msg),
             " (waited %g s; --wait DUR waits longer)", secs);
  return r;
}


/* Remembers which file the cursor reads, so that following it can tell
 * whether the writer still maps it (writer_done). */
static void note_file(struct tool_source *src) {
  tool_writer_note(&src->w, src->path, src->pid);
}

/* Opens the cursor on a FILE or on the file of --pid. */
static int open_named(struct tool_source *src, const char *help) {
  if (src->file) {
    if (!*src->file) return tool_usage_error(help, "empty file name");
    if (snprintf(src->path, sizeof src->path, "%s", src->file) >=
        (int)sizeof src->path) {
      tool_error("%.200s...: %s", src->file, strerror(ENAMETOOLONG));
      return TOOL_EXIT_INPUT;
    }
  } else {
    src->pid = tool_parse_pid(src->pid_arg, strlen(src->pid_arg));
    if (!src->pid)
      return tool_usage_error(help, "invalid pid '%s'", src->pid_arg);
    if (src->dir && !*src->dir)
      return tool_usage_error(help, "empty directory name");
    char msg[PATH_MAX + 256];
    int f = tool_find_ring(src->pid, src->dir, src->path, sizeof src->path,
                           msg, sizeof msg);
    if (f == TOOL_FIND_NONE && src->follow)
      f = wait_for_ring(src, src->dir, msg, sizeof msg);
    if (f != TOOL_FIND_OK) {
      tool_error("%s", msg);
      return TOOL_EXIT_INPUT;
    }
    tool_process_name(src->pid, src->name, sizeof src->name);
  }

  int r = eventring_cursor_open_file(&src->cursor, src->path);
  /* A process that has just started tracing may not have written its
   * file's header yet (the library writes the version word last): give
   * a live process a moment before calling its file malformed. */
  uint64_t give_up = tool_now_ns() + OPEN_RETRY_NS;
  while (!src->file &&
         (r == EVENTRING_E_VERSION || r == EVENTRING_E_CORRUPT ||
          r == EVENTRING_E_NOTRINGFILE || r == EVENTRING_E_TRUNCATED) &&
         tool_now_ns() < give_up && !tool_process_gone(src->pid) &&
         !tool_signal_pending()) {
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    r = eventring_cursor_open_file(&src->cursor, src->path);
  }
  if (r < 0) {
    char why[256];
    tool_error("%s: %s", src->path,
               tool_ring_error(src->path, r, why, sizeof why));
    return TOOL_EXIT_INPUT;
  }
  note_file(src);
  if (src->file) {
    /* The writer, to follow the file while it lives: as the file says,
     * else as its name says. */
    src->pid = eventring_cursor_writer_pid(src->cursor);
    if (!src->pid) src->pid = tool_pid_of_path(src->file);
    src->w.writer_start_known =
        src->pid &&
        tool_recorded_start(src->path, src->pid, &src->w.writer_start);
    return TOOL_EXIT_OK;
  }
  /* A process armed but paused records while we read it: we hold a lease
   * on it (tool_source_close gives it back, and the process lets go of it
   * by itself if we are killed).  Leases add up, so that a reader leaving
   * never pauses a process another one still reads; hence one is taken
   * even on a process that records already.  Without one (an older
   * eventring, 16 readers already, a stopped process) we read anyway.
   * The library's remote control takes the directory of the file. */
  tool_dir_of(src->path, src->ctl_dir_buf, sizeof src->ctl_dir_buf);
  const char *dir = src->ctl_dir_buf;
  if (eventring_remote_hold(dir, src->pid) == 0) {
    src->resumed = 1;
    src->ctl_dir = dir;
  }
  return TOOL_EXIT_OK;
}

int tool_source_command_given(void) { return taken; }

int tool_source_open(struct tool_source *src, int nargs, char **args,
                     const char *help) {
  src->cursor = NULL;
  src->pid = 0;
  src->saw_ring_stop = 0;
  src->path[0] = '\0';
  src->name[0] = '\0';
  src->cmd = taken ? taken_cmd : NULL;
  src->events_read = 0;
  src->lost_total = 0;
  src->before_total = 0;
  src->lost = NULL;
  src->lost_n = 0;
  src->interrupted = 0;
  src->end_ns = 0;
  src->child_reaped = 0;
  src->child_status = 0;
  src->resumed = 0;
  src->ctl_dir = NULL;
  src->procs = NULL;
  src->nprocs = 0;
  src->proc = 0;
  src->scan = NULL;
  if (nargs > 1 && !src->multi)
    return tool_usage_error(help, "too many arguments (one ring file at most)");
  /* A directory, where several files will do, is the files in it. */
  struct stat dsb;
  if (src->multi && nargs == 1 && stat(args[0], &dsb) == 0 &&
      S_ISDIR(dsb.st_mode)) {
    int rc = tool_procs_dir_files(args[0], &dir_files, &n_dir_files);
    if (rc != TOOL_EXIT_OK) return rc;
    if (!n_dir_files) {
      tool_error("%s: no ring file (*.events) in this directory", args[0]);
      return TOOL_EXIT_INPUT;
    }
    args = dir_files;
    nargs = n_dir_files;
  }
  src->file = nargs >= 1 ? args[0] : NULL;
  if (nargs > 1 && (src->cmd || src->pid_arg || src->dir))
    return tool_usage_error(help, "give either FILEs, --pid, --dir or "
                                  "-- COMMAND, not several");
  if (taken && !taken_cmd[0])
    return tool_usage_error(help, "no command after '--'");
  if (src->cmd && (src->file || src->pid_arg))
    return tool_usage_error(help, "give either a FILE, --pid or -- COMMAND, "
                                  "not several");
  if (src->file && src->pid_arg)
    return tool_usage_error(help, "give either a FILE or --pid, not both");
  int dir_alone = src->dir && !src->pid_arg;
  if (dir_alone && (src->file || src->cmd))
    return tool_usage_error(help, src->multi
                                      ? "give either FILEs, --dir or "
                                        "-- COMMAND, not several"
                                      : "--dir needs --pid");
  if (!src->file && !src->pid_arg && !src->cmd && !(dir_alone && src->multi))
    return tool_usage_error(help, src->multi
                                      ? "no ring file given (FILE..., --dir "
                                        "DIR, --pid PID or -- COMMAND)"
                                      : "no ring file given (FILE, --pid PID "
                                        "or -- COMMAND)");
  if (dir_alone && !src->multi)
    return tool_usage_error(help, "--dir needs --pid");
  if (dir_alone && !*src->dir)
    return tool_usage_error(help, "empty directory name");
  if (src->wait_ns && !(src->follow && src->pid_arg))
    return tool_usage_error(help, "--wait applies to --follow --pid (how "
                                  "long to wait for the process's ring "
                                  "file)");
  int frc = tool_filter_check(src, help);
  if (frc != TOOL_EXIT_OK) return frc;

  tool_source_current = src;
  tool_signals_install();
  int rc = src->multi && (nargs > 1 || dir_alone)
               ? TOOL_EXIT_OK
               : src->cmd ? tool_spawn_open(src) : open_named(src, help);
  /* With `multi`, the one file opened above becomes the first process,
   * and the others are found by procs.c. */
  if (rc == TOOL_EXIT_OK && src->multi)
    rc = tool_procs_open(src, nargs, args, help);
  if (rc != TOOL_EXIT_OK) {
    tool_source_close(src);
    return rc;
  }
  if (src->cursor)
    eventring_cursor_set_numbering(src->cursor, tool_source_numbering(src));
  /* The program as its file records it wins over the spawned command's
   * name and /proc/PID/comm: it is the image's own after an exec (`sh -c
   * 'exec ./prog'` wrote prog's file), and stays the program's when the
   * main thread names itself (comm is the main thread's name). */
  const char *prog = src->cursor ? eventring_cursor_program(src->cursor) : NULL;
  if (prog && *prog) snprintf(src->name, sizeof src->name, "%s", prog);
  tool_progress_begin(src);
  return TOOL_EXIT_OK;
}

void tool_source_close(struct tool_source *src) {
  tool_progress_end();
  if (src->resumed) {
    /* The process may have exited meanwhile: nothing to give back then. */
    eventring_remote_unhold(src->ctl_dir, src->pid);
    src->resumed = 0;
  }
  if (src->multi) tool_procs_close(src); /* frees src->cursor too */
  else eventring_cursor_free(src->cursor);
  src->cursor = NULL;
  for (int i = 0; i < n_dir_files; i++) free(dir_files[i]);
  free(dir_files);
  dir_files = NULL;
  n_dir_files = 0;
  if (src->cmd) tool_spawn_cleanup(src, 2.0);
  if (!src->interrupted) src->interrupted = tool_signal_pending();
  last_child_reaped = src->child_reaped;
  last_child_status = src->child_status;
  last_interrupted = src->interrupted;
  tool_signals_restore();
  free(src->lost);
  src->lost = NULL;
  src->lost_n = 0;
  tool_filter_free(src);
  if (tool_source_current == src) tool_source_current = NULL;
}

int tool_source_exit_status(int status) {
  if (tool_source_current) tool_source_close(tool_source_current);
  if (status != TOOL_EXIT_OK) return status;
  if (last_child_reaped) {
    if (WIFEXITED(last_child_status)) return WEXITSTATUS(last_child_status);
    if (WIFSIGNALED(last_child_status))
      return 128 + WTERMSIG(last_child_status);
  }
  if (last_interrupted) return 128 + last_interrupted;
  return TOOL_EXIT_OK;
}


int tool_source_read(struct tool_source *src, const eventring_callbacks *cb,
                     void *data) {
  if (src->filter) return tool_filter_read(src, cb, data);
  return tool_source_read_raw(src, cb, data);
}
