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
 * Reading ends in one of these ways:
 *   - by default when a poll finds nothing new: a snapshot of the file;
 *   - with --follow, and always for a spawned command, when the writer
 *     is gone.  We learn its pid from --pid, from the spawn, or from a
 *     file name of the form <pid>.events, and poll every POLL_IDLE_NS
 *     while it lives.  A process that has exited but not yet been reaped
 *     by its parent (a zombie) still answers kill(pid, 0), so
 *     /proc/<pid>/stat is asked as well; our own child is asked with
 *     waitpid().  Once it is gone, a last round of polls drains what it
 *     wrote before exiting.  A file whose name gives no pid is followed
 *     until ring_stop has been read (the subcommand's lifecycle callback
 *     reports it through tool_source_lifecycle()).  The pid could in
 *     principle have been reused by a new process by the time we ask; the
 *     cost is that we keep waiting, never that we stop early, and ring
 *     files are short-lived enough that it does not arise in practice.
 *   - on SIGINT, SIGTERM or SIGHUP.  The handler only records the signal
 *     (and passes it on to a spawned command); the loop notices it
 *     between polls, so the subcommand always gets whole events and
 *     finishes its output.  Without a spawned command reading stops at
 *     once.  A spawned command gets the signal and is read until it ends,
 *     so that its last events are not lost; one that outlives the signal
 *     by KILL_GRACE_NS (or a second signal) is killed.
 *
 * Lost events are not the source's to print: the subcommand's lost_events
 * callback reports them through tool_source_lost(), which counts them per
 * domain, and the subcommand prints tool_source_lost_summary() once at
 * the end.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

/* How long --follow sleeps when a poll found nothing: short enough that
 * a live listing keeps up and that a default-sized ring (64 Ki words per
 * domain) cannot fill up in between at the rates our demo programs and a
 * GC-heavy OCaml program write, long enough to cost nothing measurable. */
#define POLL_IDLE_NS 10000000L

/* How long --pid waits for a live process's new file to be complete. */
#define OPEN_RETRY_NS 1000000000ULL

/* How long a spawned command may outlive the signal that interrupted
 * the tool before it is killed. */
#define KILL_GRACE_NS 3000000000ULL

/* The command that main() took off the command line, for
 * tool_source_open(); `taken` even when "--" had nothing after it. */
static char **taken_cmd;
static int taken;

/* The source being opened or read, for tool_source_on_lost() and for
 * tool_source_exit_status(). */
static struct tool_source *current;

/* What tool_source_exit_status() reports once the source is closed. */
static int last_child_reaped, last_child_status, last_interrupted;

uint64_t tool_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

int tool_source_numbering(const struct tool_source *src) {
  return src->ocaml50   ? EVENTRING_NUMBERING_OCAML50
         : src->ocaml53 ? EVENTRING_NUMBERING_OCAML53
                        : EVENTRING_NUMBERING_AUTO;
}

/* One line when the phase events of an OCaml 5 file could not tell its
 * numbering (eventring's own files record theirs): the phase names shown
 * are then a guess, and the user is the one who knows the OCaml version.
 * Judged once the file has been read, since the cursor goes on looking
 * while a live writer writes; a file with no event names nothing and
 * draws no warning. */
static void warn_numbering(const struct tool_source *src) {
  int basis;
  int n = eventring_cursor_numbering(src->cursor, &basis);
  if (basis == EVENTRING_NUMBERING_GUESSED)
    tool_error("%s: cannot tell OCaml 5.0-5.2 from 5.3+ phase numbering "
               "(too few phase events); assuming 5.3+, use --ocaml50 or "
               "--ocaml53 to choose", src->path);
  else if (basis == EVENTRING_NUMBERING_CONFLICTING)
    tool_error("%s: the phase events fit neither OCaml 5.0-5.2's nor 5.3+'s "
               "phase numbering; assuming %s, use --ocaml50 or --ocaml53 to "
               "choose", src->path,
               n == EVENTRING_NUMBERING_OCAML50 ? "5.0-5.2" : "5.3+");
}

pid_t tool_parse_pid(const char *s, size_t len) {
  if (len == 0 || len > 10) return 0;
  long long v = 0;
  for (size_t i = 0; i < len; i++) {
    if (!isdigit((unsigned char)s[i])) return 0;
    v = v * 10 + (s[i] - '0');
  }
  return v >= 1 && v <= INT_MAX ? (pid_t)v : 0;
}

pid_t tool_pid_of_path(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  static const char suffix[] = ".events";
  size_t sn = sizeof suffix - 1;
  if (n <= sn || strcmp(base + n - sn, suffix) != 0) return 0;
  return tool_parse_pid(base, n - sn);
}

void tool_process_name(pid_t pid, char *name, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
  name[0] = '\0';
  FILE *f = fopen(path, "re");
  if (!f) return;
  if (fgets(name, (int)size, f)) name[strcspn(name, "\n")] = '\0';
  fclose(f);
}

/* Opens the cursor on a FILE or on the file of --pid. */
static int open_named(struct tool_source *src, const char *help) {
  int n;
  const char *dir = NULL;
  if (src->file) {
    if (!*src->file) return tool_usage_error(help, "empty file name");
    n = snprintf(src->path, sizeof src->path, "%s", src->file);
    src->pid = tool_pid_of_path(src->file);
  } else {
    src->pid = tool_parse_pid(src->pid_arg, strlen(src->pid_arg));
    if (!src->pid)
      return tool_usage_error(help, "invalid pid '%s'", src->pid_arg);
    dir = src->dir;
    if (!dir) dir = getenv("OCAML_RUNTIME_EVENTS_DIR");
    if (!dir || !*dir) dir = ".";
    n = snprintf(src->path, sizeof src->path, "%s/%ld.events", dir,
                 (long)src->pid);
    tool_process_name(src->pid, src->name, sizeof src->name);
  }
  if (n < 0 || (size_t)n >= sizeof src->path) {
    tool_error("%.200s...: %s", src->file ? src->file : dir,
               strerror(ENAMETOOLONG));
    return TOOL_EXIT_INPUT;
  }

  int r = eventring_cursor_open_file(&src->cursor, src->path);
  /* A process that has just started tracing may not have written its
   * file's header yet (the library writes the version word last): give
   * a live process a moment before calling its file malformed. */
  uint64_t give_up = tool_now_ns() + OPEN_RETRY_NS;
  while (!src->file && (r == EVENTRING_E_VERSION || r == EVENTRING_E_CORRUPT) &&
         tool_now_ns() < give_up && !tool_process_gone(src->pid) &&
         !tool_signal_pending()) {
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    r = eventring_cursor_open_file(&src->cursor, src->path);
  }
  if (r == -ENOENT && !src->file) {
    /* The file's name is ours, not the user's: say what we looked for. */
    tool_error("no ring file for pid %ld in %s (no %s)", (long)src->pid, dir,
               src->path);
    return TOOL_EXIT_INPUT;
  }
  if (r < 0) {
    tool_error("%s: %s", src->path, eventring_strerror(r));
    return TOOL_EXIT_INPUT;
  }
  /* A process armed but paused records while we read it, and is paused
   * again when we are done (tool_source_close). */
  if (!src->file && eventring_remote_state(dir, src->pid) == 1 &&
      eventring_remote_resume(dir, src->pid) == 0) {
    src->resumed = 1;
    src->ctl_dir = dir;
  }
  return TOOL_EXIT_OK;
}

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
  src->lost = NULL;
  src->lost_n = 0;
  src->interrupted = 0;
  src->end_ns = 0;
  src->child_reaped = 0;
  src->child_status = 0;
  src->resumed = 0;
  src->ctl_dir = NULL;
  if (nargs > 1)
    return tool_usage_error(help, "too many arguments (one ring file at most)");
  src->file = nargs == 1 ? args[0] : NULL;
  if (taken && !taken_cmd[0])
    return tool_usage_error(help, "no command after '--'");
  if (src->cmd && (src->file || src->pid_arg))
    return tool_usage_error(help, "give either a FILE, --pid or -- COMMAND, "
                                  "not several");
  if (src->file && src->pid_arg)
    return tool_usage_error(help, "give either a FILE or --pid, not both");
  if (!src->file && !src->pid_arg && !src->cmd)
    return tool_usage_error(help, "no ring file given (FILE, --pid PID or "
                                  "-- COMMAND)");
  if (src->dir && !src->pid_arg)
    return tool_usage_error(help, "--dir needs --pid");

  current = src;
  tool_signals_install();
  int rc = src->cmd ? tool_spawn_open(src) : open_named(src, help);
  if (rc != TOOL_EXIT_OK) {
    tool_source_close(src);
    return rc;
  }
  eventring_cursor_set_numbering(src->cursor, tool_source_numbering(src));
  tool_progress_begin(src);
  return TOOL_EXIT_OK;
}

void tool_source_close(struct tool_source *src) {
  tool_progress_end();
  if (src->resumed) {
    /* The process may have exited meanwhile: nothing to pause then. */
    eventring_remote_pause(src->ctl_dir, src->pid);
    src->resumed = 0;
  }
  eventring_cursor_free(src->cursor);
  src->cursor = NULL;
  if (src->cmd) tool_spawn_cleanup(src, 2.0);
  if (!src->interrupted) src->interrupted = tool_signal_pending();
  last_child_reaped = src->child_reaped;
  last_child_status = src->child_status;
  last_interrupted = src->interrupted;
  tool_signals_restore();
  free(src->lost);
  src->lost = NULL;
  src->lost_n = 0;
  if (current == src) current = NULL;
}

int tool_source_exit_status(int status) {
  if (current) tool_source_close(current);
  if (status != TOOL_EXIT_OK) return status;
  if (last_child_reaped) {
    if (WIFEXITED(last_child_status)) return WEXITSTATUS(last_child_status);
    if (WIFSIGNALED(last_child_status))
      return 128 + WTERMSIG(last_child_status);
  }
  if (last_interrupted) return 128 + last_interrupted;
  return TOOL_EXIT_OK;
}

void tool_source_lifecycle(struct tool_source *src, int kind) {
  if (kind == EVENTRING_LIFECYCLE_RING_STOP) src->saw_ring_stop = 1;
}

void tool_source_lost(struct tool_source *src, int domain, uint64_t count) {
  src->lost_total += count;
  if (domain < 0) return;
  if (domain >= src->lost_n) {
    /* Grown to the file's domain count at once: losses are rare, and a
     * file has at most a few thousand domains. */
    int n = eventring_cursor_max_domains(src->cursor);
    if (n <= domain) n = domain + 1;
    uint64_t *p = realloc(src->lost, (size_t)n * sizeof *p);
    if (!p) return; /* the total above is still right */
    memset(p + src->lost_n, 0, (size_t)(n - src->lost_n) * sizeof *p);
    src->lost = p;
    src->lost_n = n;
  }
  src->lost[domain] += count;
}

int tool_source_on_lost(void *data, int domain, uint64_t count) {
  (void)data;
  if (current) tool_source_lost(current, domain, count);
  return 1;
}

uint64_t tool_source_lost_summary(const struct tool_source *src, FILE *out) {
  if (src->lost_total == 0) return 0;
  int words = src->cursor &&
              eventring_cursor_lost_unit(src->cursor) == EVENTRING_LOST_WORDS;
  fprintf(out, "eventring: %llu %s lost (",
          (unsigned long long)src->lost_total,
          words ? "ring words of events" : "events");
  /* A few domains by name, the rest as a count: one line however many. */
  int shown = 0, more = 0;
  for (int d = 0; d < src->lost_n; d++) {
    if (!src->lost[d]) continue;
    if (shown == 8) {
      more++;
      continue;
    }
    fprintf(out, "%sdomain %d: %llu", shown ? ", " : "", d,
            (unsigned long long)src->lost[d]);
    shown++;
  }
  if (more) fprintf(out, ", %d more domain%s", more, more > 1 ? "s" : "");
  fprintf(out, "); the writer overwrote them before they were read%s\n",
          words ? "" : " (a larger ring: OCAMLRUNPARAM=e=18 or more)");
  return src->lost_total;
}

int tool_process_gone(pid_t pid) {
  if (kill(pid, 0) < 0 && errno == ESRCH) return 1;
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "re");
  if (!f) return 0; /* no /proc: kill()'s answer is all there is */
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* "pid (comm) S ...": comm may hold anything, so the state is the
   * first field after the last ')'. */
  const char *p = strrchr(buf, ')');
  return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Whether the writer is done, so that what is left is all there will be. */
static int writer_done(struct tool_source *src) {
  if (src->cmd) return tool_spawn_done(src);
  if (src->pid) return tool_process_gone(src->pid);
  return src->saw_ring_stop;
}

int tool_source_read(struct tool_source *src, const eventring_callbacks *cb,
                     void *data) {
  int following = src->follow || src->cmd;
  int draining = 0, killed = 0;
  uint64_t kill_at = 0;
  current = src;
  for (;;) {
    int r = eventring_cursor_poll(src->cursor, cb, data, 0);
    if (r > 0) src->events_read += (uint64_t)r;
    tool_progress_tick(src);
    if (!tool_output_ok()) break; /* the caller reports it */
    if (r < 0) {
      /* The events read so far come first, then the reason we stopped. */
      tool_progress_end();
      fflush(stdout);
      tool_error("%s: %s", src->path, eventring_strerror(r));
      return TOOL_EXIT_INPUT;
    }
    int sig = tool_signal_pending();
    if (sig && !src->interrupted) {
      src->interrupted = sig;
      kill_at = tool_now_ns() + KILL_GRACE_NS;
    }
    /* Interrupted, a file or another's process is left at once; our own
     * command is read until it has ended (below). */
    if (src->interrupted && !src->cmd) break;
    if (r > 0) continue;
    if (!following || draining) break;
    if (writer_done(src)) {
      src->end_ns = tool_now_ns();
      draining = 1; /* one more pass reads what it wrote last */
      continue;
    }
    if (src->interrupted && !killed &&
        (tool_signal_count() > 1 || tool_now_ns() >= kill_at)) {
      tool_spawn_kill(src);
      killed = 1;
    }
    /* Show what we have before waiting for more. */
    if (fflush(stdout) != 0 && !tool_output_ok()) break;
    /* A signal cuts the sleep short (the handlers are installed without
     * SA_RESTART), which is what we want: the loop looks at it at once. */
    struct timespec ts = {0, POLL_IDLE_NS};
    nanosleep(&ts, NULL);
  }
  tool_progress_end();
  if (src->events_read) warn_numbering(src);
  return TOOL_EXIT_OK;
}
