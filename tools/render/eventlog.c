/* eventlog.c -- the log of a long-running subcommand: text lines for
 * people, or one JSON object per line for log shippers (render.h).
 *
 * A JSON line is written into a memory buffer and then to the log in
 * one write, so that a reader of a growing file (a shipper tailing it)
 * never sees half an object, and lines of several writers on one
 * descriptor opened for appending do not interleave within a line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "render/render.h"

/* The line being built (json form). */
static char *line;
static size_t line_len;
static FILE *cur;

void eventlog_init(struct eventlog *l) {
  memset(l, 0, sizeof *l);
  l->out = stderr;
}

int eventlog_open(struct eventlog *l, const char *path) {
  FILE *f = fopen(path, "ae");
  if (!f) return -errno;
  l->out = f;
  l->own = 1;
  return 0;
}

void eventlog_close(struct eventlog *l) {
  if (l->own) fclose(l->out);
  l->out = stderr;
  l->own = 0;
  tool_labels_free(&l->labels);
}

void eventlog_text(struct eventlog *l, const char *fmt, ...) {
  if (l->json) return;
  va_list ap;
  char msg[1024];
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (l->out == stderr) {
    tool_error("%s", msg);
    return;
  }
  char shown[TOOL_TEXT_BUF(sizeof msg)];
  fprintf(l->out, "eventring: %s\n",
          tool_text(shown, sizeof shown, msg, TOOL_TEXT_UTF8));
  fflush(l->out);
}

static void key(const char *k) {
  fputc(',', cur);
  render_json_string(cur, k, strlen(k));
  fputc(':', cur);
}

void eventlog_begin(struct eventlog *l, const char *event) {
  if (!l->json) return;
  cur = open_memstream(&line, &line_len);
  if (!cur) return;
  struct timespec ts;
  struct tm tm;
  char when[40];
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  fprintf(cur, "{\"time\":\"%s.%03ldZ\",\"event\":", when,
          ts.tv_nsec / 1000000);
  render_json_string(cur, event, strlen(event));
}

void eventlog_str(struct eventlog *l, const char *k, const char *value) {
  if (!l->json || !cur) return;
  key(k);
  render_json_string(cur, value, strlen(value));
}

void eventlog_int(struct eventlog *l, const char *k, int64_t value) {
  if (!l->json || !cur) return;
  key(k);
  fprintf(cur, "%" PRId64, value);
}

void eventlog_seconds(struct eventlog *l, const char *k, uint64_t ns) {
  if (!l->json || !cur) return;
  key(k);
  fprintf(cur, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

void eventlog_end(struct eventlog *l) {
  if (!l->json || !cur) return;
  const struct tool_labels *ls = &l->labels;
  if (ls->n) {
    key("labels");
    for (int i = 0; i < ls->n; i++) {
      fputc(i ? ',' : '{', cur);
      render_json_string(cur, ls->name[i], strlen(ls->name[i]));
      fputc(':', cur);
      render_json_string(cur, ls->value[i], strlen(ls->value[i]));
    }
    fputc('}', cur);
  }
  fputs("}\n", cur);
  int bad = fclose(cur) != 0;
  cur = NULL;
  if (!bad) {
    /* Standard output's report, if it shares the stream, comes first. */
    if (l->out == stderr) fflush(stdout);
    fflush(l->out);
    for (size_t done = 0; done < line_len;) {
      ssize_t n = write(fileno(l->out), line + done, line_len - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += (size_t)n;
    }
  }
  free(line);
  line = NULL;
  line_len = 0;
}
