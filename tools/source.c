/* source.c -- where the `eventring` command reads events from.
 *
 * A subcommand reads one ring file, named either directly (FILE, e.g. a
 * file kept with OCAML_RUNTIME_EVENTS_PRESERVE or left by a process that
 * crashed) or as the file of a process (--pid PID, in --dir DIR or else
 * in OCAML_RUNTIME_EVENTS_DIR or the current directory, as the library
 * names it).  The cursor keeps the file open and mapped, so a file its
 * writer removes at exit is still read to the end.
 *
 * Reading ends in one of two ways:
 *   - by default when a poll finds nothing new: a snapshot of the file;
 *   - with --follow when the writer is gone.  We learn its pid from
 *     --pid or from a file name of the form <pid>.events, and poll every
 *     POLL_IDLE_NS while it lives.  A process that has exited but not yet
 *     been reaped by its parent (a zombie) still answers kill(pid, 0), so
 *     /proc/<pid>/stat is asked as well.  Once it is gone, a last round of
 *     polls drains what it wrote before exiting.  A file whose name gives
 *     no pid is followed until ring_stop has been read (the subcommand's
 *     lifecycle callback reports it through tool_source_lifecycle()).
 *     The pid could in principle have been reused by a new process by the
 *     time we ask; the cost is that we keep waiting, never that we stop
 *     early, and ring files are short-lived enough that it does not arise
 *     in practice.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool.h"

/* How long --follow sleeps when a poll found nothing: short enough that
 * a live listing keeps up, long enough to cost nothing measurable. */
#define POLL_IDLE_NS 10000000L

/* Parses a pid: decimal digits only, 1 .. INT_MAX.  Returns it, or 0. */
static pid_t parse_pid(const char *s, size_t len) {
  if (len == 0 || len > 10) return 0;
  long long v = 0;
  for (size_t i = 0; i < len; i++) {
    if (!isdigit((unsigned char)s[i])) return 0;
    v = v * 10 + (s[i] - '0');
  }
  return v >= 1 && v <= INT_MAX ? (pid_t)v : 0;
}

/* The pid in a file name of the form [DIR/]<pid>.events, else 0. */
static pid_t pid_of_path(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  static const char suffix[] = ".events";
  size_t sn = sizeof suffix - 1;
  if (n <= sn || strcmp(base + n - sn, suffix) != 0) return 0;
  return parse_pid(base, n - sn);
}

int tool_source_open(struct tool_source *src, int nargs, char **args,
                     const char *help) {
  src->cursor = NULL;
  src->pid = 0;
  src->saw_ring_stop = 0;
  src->path[0] = '\0';
  if (nargs > 1)
    return tool_usage_error(help, "too many arguments (one ring file at most)");
  src->file = nargs == 1 ? args[0] : NULL;
  if (src->file && src->pid_arg)
    return tool_usage_error(help, "give either a FILE or --pid, not both");
  if (!src->file && !src->pid_arg)
    return tool_usage_error(help, "no ring file given (FILE or --pid PID)");
  if (src->dir && !src->pid_arg)
    return tool_usage_error(help, "--dir needs --pid");

  int n;
  if (src->file) {
    if (!*src->file) return tool_usage_error(help, "empty file name");
    n = snprintf(src->path, sizeof src->path, "%s", src->file);
    src->pid = pid_of_path(src->file);
  } else {
    src->pid = parse_pid(src->pid_arg, strlen(src->pid_arg));
    if (!src->pid)
      return tool_usage_error(help, "invalid pid '%s'", src->pid_arg);
    const char *dir = src->dir;
    if (!dir) dir = getenv("OCAML_RUNTIME_EVENTS_DIR");
    if (!dir || !*dir) dir = ".";
    n = snprintf(src->path, sizeof src->path, "%s/%ld.events", dir,
                 (long)src->pid);
  }
  if (n < 0 || (size_t)n >= sizeof src->path) {
    tool_error("%.200s...: %s", src->file ? src->file : src->dir,
               strerror(ENAMETOOLONG));
    return TOOL_EXIT_INPUT;
  }

  int r = eventring_cursor_open_file(&src->cursor, src->path);
  if (r < 0) {
    tool_error("%s: %s", src->path, eventring_strerror(r));
    return TOOL_EXIT_INPUT;
  }
  eventring_cursor_set_ocaml50(src->cursor, src->ocaml50);
  return TOOL_EXIT_OK;
}

void tool_source_close(struct tool_source *src) {
  eventring_cursor_free(src->cursor);
  src->cursor = NULL;
}

void tool_source_lifecycle(struct tool_source *src, int kind) {
  if (kind == EVENTRING_LIFECYCLE_RING_STOP) src->saw_ring_stop = 1;
}

/* Whether process `pid` has exited (a zombie counts as exited). */
static int process_gone(pid_t pid) {
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
static int writer_done(const struct tool_source *src) {
  if (src->pid) return process_gone(src->pid);
  return src->saw_ring_stop;
}

int tool_source_read(struct tool_source *src, const eventring_callbacks *cb,
                     void *data) {
  int draining = 0;
  for (;;) {
    int r = eventring_cursor_poll(src->cursor, cb, data, 0);
    if (!tool_output_ok()) return TOOL_EXIT_OK; /* the caller reports it */
    if (r < 0) {
      /* The events read so far come first, then the reason we stopped. */
      fflush(stdout);
      tool_error("%s: %s", src->path, eventring_strerror(r));
      return TOOL_EXIT_INPUT;
    }
    if (r > 0) continue;
    if (!src->follow || draining) return TOOL_EXIT_OK;
    if (writer_done(src)) {
      draining = 1; /* one more pass reads what it wrote last */
      continue;
    }
    /* Show what we have before waiting for more. */
    if (fflush(stdout) != 0 && !tool_output_ok()) return TOOL_EXIT_OK;
    struct timespec ts = {0, POLL_IDLE_NS};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
  }
}
