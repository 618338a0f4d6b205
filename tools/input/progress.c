/* progress.c -- the progress line of a long read, on a terminal.
 *
 * While a subcommand reads (tool_source_read), a line such as
 *
 *   eventring: gc_heavy: 1843211 events read, 0 lost, 4.2 s
 *
 * is kept up to date on stderr, at most PROGRESS_EVERY_NS apart and only
 * once the read has lasted PROGRESS_AFTER_NS (a short read shows
 * nothing), and erased when reading ends, so that what stays on the
 * terminal is the subcommand's output alone.  Nothing is shown when
 * stderr is not a terminal (a pipe, a file, a test), so logs and scripts
 * never see it, nor when the subcommand streams its own output to the
 * same terminal (`eventring dump` without a redirection): the two would
 * interleave.  We notice the latter by stdout having buffered output at
 * a tick; once seen, the line is erased for good.
 *
 * The line is drawn with a carriage return and "erase to end of line"
 * (ECMA-48 EL, ESC [ K), which every terminal emulator in use
 * understands, and written with write(2) so that it never mixes with
 * stdio's buffering of stderr.
 */
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <unistd.h>

#include "input/input.h"

#define PROGRESS_AFTER_NS 500000000ULL
#define PROGRESS_EVERY_NS 200000000ULL

static int enabled;          /* stderr is a terminal and progress wanted */
static int drawn;            /* the line is on the terminal now */
static uint64_t start_ns, last_ns;

static void put(const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0) return; /* a progress line is not worth a retry loop */
    s += w;
    n -= (size_t)w;
  }
}

void tool_progress_begin(struct tool_source *src) {
  enabled = src->progress >= 0 && isatty(STDERR_FILENO);
  drawn = 0;
  start_ns = tool_now_ns();
  last_ns = 0;
}

void tool_progress_tick(const struct tool_source *src) {
  if (!enabled) return;
  uint64_t now = tool_now_ns();
  if (now - start_ns < PROGRESS_AFTER_NS || now - last_ns < PROGRESS_EVERY_NS)
    return;
  last_ns = now;
  if (isatty(STDOUT_FILENO) && __fpending(stdout) > 0) {
    /* The subcommand writes to the terminal as it reads. */
    tool_progress_end();
    enabled = 0;
    return;
  }
  const char *name = src->name[0] ? src->name : src->path;
  const char *slash = src->name[0] ? NULL : strrchr(name, '/');
  if (slash) name = slash + 1;
  char shown[65], line[256];
  name = tool_text(shown, sizeof shown, name, TOOL_TEXT_UTF8);
  int n = snprintf(line, sizeof line,
                   "\reventring: %.64s: %llu events read, %llu lost, "
                   "%.1f s\033[K",
                   name, (unsigned long long)src->events_read,
                   (unsigned long long)src->lost_total,
                   (double)(now - start_ns) / 1e9);
  if (n <= 0) return;
  put(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  drawn = 1;
}

void tool_progress_end(void) {
  if (!drawn) return;
  put("\r\033[K", 4);
  drawn = 0;
}
