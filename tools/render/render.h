/* render.h -- the render layer of the `eventring` command (render/):
 * output formats, fed by the subcommands.
 *   fuchsia.c, json.c  the two formats of `eventring trace` (the trace
 *                      events below);
 *   svg.c              the charts of `eventring report`;
 *   bars.c             a distribution in power-of-two bins, and its bar
 *                      chart on a terminal;
 *   eventlog.c         a log of what a long-running subcommand does, as
 *                      text lines or one JSON object a line;
 *   exposition.c       the series of `eventring metrics` in Prometheus's
 *                      text exposition format;
 *   remotewrite.c      the same series as a remote-write request.
 * It builds on analysis/ and the layers below.
 */
#ifndef EVENTRING_TOOLS_RENDER_H
#define EVENTRING_TOOLS_RENDER_H

#include "analysis/analysis.h"

/* ================================================================== */
/* Trace events (fuchsia.c, json.c)                                     */
/* ================================================================== */

/* What `eventring trace` shares with its two output formats.
 *
 * trace.c reads the events and turns them into a format-neutral stream
 * of trace events: one track per domain, slices (begin/end, or complete
 * when a slice's begin was lost), instants and counters, each with a few
 * typed arguments.  It owns every decision about spans cut by lost
 * events, so that both formats show the same thing.  A writer turns that
 * stream into a file:
 *   fuchsia.c  the Fuchsia trace format (FXT), binary, Perfetto's native
 *              input for traces made outside Android;
 *   json.c     the Chrome JSON trace event format.
 *
 * Strings handed to a writer are printable ASCII (trace.c escapes every
 * other byte of a name or payload as \DDD), so a writer only has to deal
 * with its own format's quoting.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum trace_ph {
  TRACE_BEGIN,    /* a slice opens on the track */
  TRACE_END,      /* the innermost open slice closes */
  TRACE_COMPLETE, /* a whole slice, [ts, end_ts] */
  TRACE_INSTANT,
  TRACE_COUNTER, /* every argument is one series of the counter */
};

enum trace_arg_type { TRACE_ARG_STR, TRACE_ARG_INT, TRACE_ARG_UINT,
                      TRACE_ARG_BOOL };

struct trace_arg {
  const char *key;
  enum trace_arg_type type;
  const char *s; /* TRACE_ARG_STR: s[0 .. len) */
  size_t len;
  int64_t i;  /* TRACE_ARG_INT, TRACE_ARG_BOOL (0 or 1) */
  uint64_t u; /* TRACE_ARG_UINT */
};

/* At most this many arguments per event (an alloc event's 20 buckets). */
#define TRACE_MAX_ARGS 24

struct trace_event {
  enum trace_ph ph;
  int track;          /* the domain */
  uint64_t tid;       /* its thread id in the output */
  uint64_t ts;        /* nanoseconds */
  uint64_t end_ts;    /* TRACE_COMPLETE only */
  const char *cat;    /* category */
  const char *name;
  int nargs;
  struct trace_arg args[TRACE_MAX_ARGS];
};

/* A writer.  Each function writes to `out` and returns nothing: write
 * errors show in ferror(out), which trace.c checks. */
struct trace_writer {
  /* The file's header, with the process that every track belongs to. */
  void (*begin)(void *self, FILE *out, uint64_t pid, const char *process);
  /* With several processes: makes `pid` the process of the tracks and
   * events that follow, declaring it with its display name first when
   * `process` is not NULL (begin() declared the first one). */
  void (*process)(void *self, FILE *out, uint64_t pid, const char *process);
  /* Declares a track before its first event: `tid` is its thread id in
   * the output (unique in the trace), `name` its display name. */
  void (*track)(void *self, FILE *out, int track, uint64_t tid,
                const char *name);
  void (*event)(void *self, FILE *out, const struct trace_event *ev);
  /* Completes the file's structure; no call follows. */
  void (*end)(void *self, FILE *out);
  void (*free)(void *self);
};

/* The wall clock of the trace, set by trace.c before begin() from the
 * first file's start pair (walltime.c): the time of day of timestamp t
 * is t + offset nanoseconds since the Unix epoch, `start` that of the
 * moment tracing started.  known is 0 when the source has none (OCaml
 * 5's files): the writers then say nothing of it. */
struct trace_wallclock {
  int known;
  int64_t offset;
  int64_t start;
};

/* Each returns a writer's state for `w`, or NULL when out of memory.
 * The writer reads `wall` at begin() and keeps the pointer. */
void *trace_fuchsia_new(struct trace_writer *w,
                        const struct trace_wallclock *wall);
void *trace_json_new(struct trace_writer *w,
                     const struct trace_wallclock *wall);

/* Writes `s[0 .. len)` as a JSON string (json.c): UTF-8 as it is, the
 * controls as \uXXXX, a byte of no well-formed character as the text
 * \DDD.  The one JSON string writer of the render layer. */
void render_json_string(FILE *out, const char *s, size_t len);

/* ================================================================== */
/* svg.c                                                                */
/* ================================================================== */

/* Chart primitives for `eventring report`: an inline SVG picture
 * with a plot area mapped to data coordinates, its axes with ticks, bars,
 * lines and marks, and the escaping of text for HTML and SVG.
 *
 * Every chart is an <svg class="chart"> whose data-points attribute
 * counts the data points drawn in it (bars with a count, line vertices),
 * so that a test reading the page's DOM can tell an empty chart.  Bars
 * are <rect class="bar">, lines <polyline class="line"> (a point alone:
 * <circle class="dot">), marks <line
 * class="mark">; each has a <title> (a tooltip) where it helps.
 */

#include <stdio.h>

/* A number as a tick label: writes into buf (32 bytes). */
typedef void (*svg_label_fn)(char *buf, double v);

struct svg_plot {
  FILE *out;
  int w, h;                      /* the picture, in px */
  int left, right, top, bottom;  /* margins around the plot area */
  double x0, x1, y0, y1;         /* the data ranges of the plot area */
  long points;                   /* data points drawn so far */
  long at;                       /* offset of the data-points placeholder */
};

/* Writes `s` with & < > " ' escaped: safe in HTML text, in attribute
 * values and in SVG, for a page in UTF-8.  The names come from a file
 * and need not be UTF-8: what tool_put_text() shows as it is (printable
 * ASCII, well-formed UTF-8 characters) is written as it is, every other
 * byte as the text \DDD, as the tool's other output writes it. */
void svg_escape(FILE *out, const char *s);

/* Opens a chart of w x h px whose plot area shows [x0, x1] x [y0, y1]
 * (a degenerate range is widened), titled `title` (escaped).  `out` must
 * be seekable: svg_close() fills in the count of data points. */
void svg_open(struct svg_plot *p, FILE *out, int w, int h, double x0,
              double x1, double y0, double y1, const char *title);

double svg_x(const struct svg_plot *p, double x);
double svg_y(const struct svg_plot *p, double y);

/* The axes, with about five ticks each at round values, labelled by
 * `xl` and `yl` (NULL: no x ticks, for a chart that labels its own; a
 * label left empty: no tick there), and the axes' names. */
void svg_axes(struct svg_plot *p, svg_label_fn xl, svg_label_fn yl,
              const char *xname, const char *yname);

/* A bar over [xa, xb] from 0 to y, with tooltip `tip` (escaped; NULL for
 * none).  A bar of height 0 is not drawn and not counted. */
void svg_bar(struct svg_plot *p, double xa, double xb, double y,
             const char *tip);

/* A label under the x axis at x (escaped), for a chart of categories. */
void svg_xlabel(struct svg_plot *p, double x, const char *text);

/* A line through the n points (x[i], y[i]), in colour `colour` (an index
 * into a fixed palette); a NaN y breaks the line there. */
void svg_line(struct svg_plot *p, const double *x, const double *y, int n,
              int colour);

/* The legend: entry i names the lines of colour colours[i] (names
 * escaped), laid out in rows under the title, each entry as wide as its
 * text so that none overlaps the next; the plot area moves down by the
 * rows it takes.  Called before svg_axes(). */
void svg_legend(struct svg_plot *p, const char *const *names,
                const int *colours, int n);

/* A vertical mark at x across the plot area (lost events), with tooltip
 * `tip`. */
void svg_mark(struct svg_plot *p, double x, const char *tip);

void svg_close(struct svg_plot *p);

/* ================================================================== */
/* bars.c                                                               */
/* ================================================================== */

/* A distribution of durations in power-of-two bins, and its
 * bar chart on a terminal (`eventring latency`).  `eventring report`
 * draws the same bins in SVG, so both pictures agree.
 *
 * Bin i holds the durations in [2^(e0+i), 2^(e0+i+1)) nanoseconds, e0
 * being the exponent of the smallest duration (a duration of 0 counts in
 * the first bin); the bins run up to the one that holds the largest.
 * Powers of two are bucket boundaries of the histogram (analysis.h), so
 * the counts are exact.
 */

#include <stdint.h>
#include <stdio.h>

#define BARS_MAX 64

struct bars {
  int n;                  /* bins in use; 0 for an empty histogram */
  uint64_t lo[BARS_MAX];  /* each bin's lower end, in nanoseconds */
  uint64_t count[BARS_MAX];
  uint64_t peak;          /* the largest count */
};

void bars_bin(const struct histogram *h, struct bars *b);

/* The upper end of bin i (its exclusive bound), or UINT64_MAX for a bin
 * that reaches 2^64. */
uint64_t bars_hi(const struct bars *b, int i);

/* Prints the chart of `h` to `out`: a line per bin, its range, a bar of
 * '#' as long as `width` times its share of the peak (at least one for a
 * bin that is not empty) and its count.  `what` heads the ranges'
 * column ("pause", "duration").  Prints nothing for an empty histogram. */
void bars_print(FILE *out, const struct histogram *h, const char *what,
                int width);

/* ================================================================== */
/* The event log (eventlog.c)                                           */
/* ================================================================== */

/* What a long-running subcommand (watch) tells as it goes, one line per
 * thing that happened, in one of two forms:
 *   text  "eventring: ..." lines (eventlog_text), as tool_error() writes
 *         them; eventlog_begin() ... eventlog_end() write nothing;
 *   json  one JSON object per line (eventlog_begin() ... eventlog_end()),
 *         {"time":"2026-11-28T13:20:53.123Z","event":"...", the fields
 *         in the order given, "labels":{...} when there are labels};
 *         eventlog_text() writes nothing.
 * Each line goes to the log (standard error, or the --log file) whole
 * and flushed. */

struct eventlog {
  FILE *out;
  int own; /* out is a file of ours */
  int json;
  struct tool_labels labels; /* --label's, on every JSON line */
};

/* Sets `l` up for standard error, text. */
void eventlog_init(struct eventlog *l);

/* The log goes to `path` (appended to, created when missing).  Returns
 * 0 or a negated errno. */
int eventlog_open(struct eventlog *l, const char *path);

/* Closes the --log file; frees the labels. */
void eventlog_close(struct eventlog *l);

/* A text line, in text form only (as tool_error() writes it). */
void eventlog_text(struct eventlog *l, const char *fmt, ...) TOOL_PRINTF(2, 3);

/* A JSON line, in json form only: begin with the event's name, a field
 * per call, then end. */
void eventlog_begin(struct eventlog *l, const char *event);
void eventlog_str(struct eventlog *l, const char *key, const char *value);
void eventlog_int(struct eventlog *l, const char *key, int64_t value);
/* Nanoseconds as seconds, with nine decimals. */
void eventlog_seconds(struct eventlog *l, const char *key, uint64_t ns);
void eventlog_end(struct eventlog *l);
/* exposition.c                                                         */
/* ================================================================== */

/* Writes the series of `set` to `o` (the page of a scrape) in
 * Prometheus's text exposition format, version 0.0.4, or when
 * `openmetrics` in the OpenMetrics text format 1.0.0, with the
 * histograms' exemplars. */
void exposition_write(FILE *o, const struct metrics_set *set,
                      int openmetrics);

/* ================================================================== */
/* remotewrite.c (built with EVENTRING_HAVE_REMOTE_WRITE)               */
/* ================================================================== */

/* The series of `set`, each with one sample at `ts_ms` (milliseconds
 * since the epoch), as the body of a Prometheus remote-write 1.0
 * request: a protobuf WriteRequest, snappy-compressed.  Returns 0 with
 * *body (malloc'd), its *len and the *nsamples it holds, or -1 when out
 * of memory. */
int remote_write_encode(const struct metrics_set *set, int64_t ts_ms,
                        char **body, size_t *len, size_t *nsamples);

#endif /* EVENTRING_TOOLS_RENDER_H */
