/* json.c -- `eventring trace --format json`: the Chrome JSON trace event
 * format, as Perfetto and chrome://tracing read it.
 *
 * The file is one object, {"displayTimeUnit":"ns","traceEvents":[...]},
 * with traceEvents last so that events can be written as they come and
 * the closing brackets at the end are all that completes the document.
 * One event per line.  Timestamps are microseconds, the format's unit,
 * written exactly from our nanoseconds as a decimal with three places
 * (never through a double, which would round large clocks).  Each
 * process (several in a trace of several) and each track are named by
 * metadata events ("ph":"M",
 * process_name and thread_name); thread_sort_index keeps the tracks in
 * domain order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "render/render.h"

struct json {
  uint64_t pid;
  const struct trace_wallclock *wall; /* the trace's, read by begin() */
  int first; /* no event written yet: no comma before the next one */
};

/* Writes `s[0 .. len)` as a JSON string, which is UTF-8: well-formed
 * UTF-8 characters as they are (those tool_put_text() would escape, the
 * C1 and bidirectional controls, as \uXXXX), the ASCII controls as
 * \uXXXX; a byte that is no part of a well-formed character (trace.c
 * hands us names already escaped so, but the output stays valid JSON
 * whatever it is given) as the text \DDD, as the tool writes it
 * elsewhere. */
void render_json_string(FILE *out, const char *s, size_t len) {
  putc_unlocked('"', out);
  const unsigned char *p = (const unsigned char *)s;
  while (len) {
    uint32_t cp;
    size_t n = tool_utf8_char(p, len, &cp);
    if (n == 0) {
      fprintf(out, "\\\\%03u", *p);
      n = 1;
    } else if (cp == '"' || cp == '\\') {
      putc_unlocked('\\', out);
      putc_unlocked((int)cp, out);
    } else if (tool_text_char(p, len, TOOL_TEXT_UTF8) == n) {
      fwrite_unlocked(p, 1, n, out);
    } else {
      fprintf(out, "\\u%04x", (unsigned)cp); /* all in the BMP */
    }
    p += n;
    len -= n;
  }
  putc_unlocked('"', out);
}

static void put_cstr(FILE *out, const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  render_json_string(out, s, n);
}

/* Nanoseconds as microseconds with three decimals. */
static void put_us(FILE *out, uint64_t ns) {
  fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void sep(struct json *j, FILE *out) {
  if (!j->first) fputs_unlocked(",\n", out);
  j->first = 0;
}

static void jt_begin(void *self, FILE *out, uint64_t pid,
                       const char *process) {
  struct json *j = self;
  j->pid = pid;
  j->first = 1;
  fputs_unlocked("{\"displayTimeUnit\":\"ns\",\n"
                 "\"otherData\":{\"producer\":\"eventring\"",
                 out);
  /* The clock of "ts" and, when the source records it, the wall clock:
   * otherData holds strings (the Trace Event Format's metadata). */
  fputs_unlocked(",\"clock-domain\":\"LINUX_CLOCK_MONOTONIC\"", out);
  if (j->wall->known) {
    char when[TOOL_WALL_BYTES];
    tool_wall_format(when, sizeof when, j->wall->start);
    fprintf(out,
            ",\"wall-clock-start\":\"%s\",\"wall-clock-offset-ns\":"
            "\"%" PRId64 "\"",
            when, j->wall->offset);
  }
  fputs_unlocked("},\n\"traceEvents\":[\n", out);
  sep(j, out);
  fprintf(out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu64
               ",\"tid\":0,\"args\":{\"name\":",
          pid);
  put_cstr(out, process);
  fputs_unlocked("}}", out);
}

static void jt_process(void *self, FILE *out, uint64_t pid,
                         const char *process) {
  struct json *j = self;
  j->pid = pid;
  if (!process) return;
  sep(j, out);
  fprintf(out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu64
               ",\"tid\":0,\"args\":{\"name\":",
          pid);
  put_cstr(out, process);
  fputs_unlocked("}}", out);
}

static void jt_track(void *self, FILE *out, int track, uint64_t tid,
                       const char *name) {
  struct json *j = self;
  sep(j, out);
  fprintf(out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu64
               ",\"tid\":%" PRIu64 ",\"args\":{\"name\":",
          j->pid, tid);
  put_cstr(out, name);
  fputs_unlocked("}}", out);
  sep(j, out);
  fprintf(out, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRIu64
               ",\"tid\":%" PRIu64 ",\"args\":{\"sort_index\":%d}}",
          j->pid, tid, track);
}

static void put_arg(FILE *out, const struct trace_arg *a) {
  put_cstr(out, a->key);
  putc_unlocked(':', out);
  switch (a->type) {
  case TRACE_ARG_STR: render_json_string(out, a->s, a->len); break;
  case TRACE_ARG_INT: fprintf(out, "%" PRId64, a->i); break;
  case TRACE_ARG_UINT: fprintf(out, "%" PRIu64, a->u); break;
  case TRACE_ARG_BOOL: fputs_unlocked(a->i ? "true" : "false", out); break;
  }
}

static void jt_event(void *self, FILE *out, const struct trace_event *ev) {
  struct json *j = self;
  static const char ph[] = {[TRACE_BEGIN] = 'B', [TRACE_END] = 'E',
                            [TRACE_COMPLETE] = 'X', [TRACE_INSTANT] = 'i',
                            [TRACE_COUNTER] = 'C'};
  sep(j, out);
  fprintf(out, "{\"ph\":\"%c\",\"cat\":", ph[ev->ph]);
  put_cstr(out, ev->cat);
  fputs_unlocked(",\"name\":", out);
  put_cstr(out, ev->name);
  fprintf(out, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"ts\":", j->pid,
          ev->tid);
  put_us(out, ev->ts);
  if (ev->ph == TRACE_COMPLETE) {
    fputs_unlocked(",\"dur\":", out);
    put_us(out, ev->end_ts - ev->ts);
  }
  /* Thread scope: an instant belongs to its domain's track. */
  if (ev->ph == TRACE_INSTANT) fputs_unlocked(",\"s\":\"t\"", out);
  if (ev->nargs > 0) {
    fputs_unlocked(",\"args\":{", out);
    for (int i = 0; i < ev->nargs; i++) {
      if (i) putc_unlocked(',', out);
      put_arg(out, &ev->args[i]);
    }
    putc_unlocked('}', out);
  }
  putc_unlocked('}', out);
}

static void jt_end(void *self, FILE *out) {
  (void)self;
  fputs_unlocked("\n]}\n", out);
}

static void jt_free(void *self) { free(self); }

static const struct trace_writer writer = {
    jt_begin, jt_process, jt_track, jt_event, jt_end, jt_free};

void *trace_json_new(struct trace_writer *w,
                     const struct trace_wallclock *wall) {
  struct json *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->wall = wall;
  j->first = 1;
  *w = writer;
  return j;
}
