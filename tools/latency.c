/* latency.c -- `eventring latency`: the distribution of GC pause times.
 *
 * A pause is an outermost runtime phase of a domain, but for the empty
 * marker spans of OCaml 4.13's GC hooks (analysis.h: which those are, and
 * how nesting, lost events and pauses left open are handled).  Every pause's
 * duration goes into a histogram with bounded relative error
 * (histogram.h), and the report gives, as olly's does, the number of
 * pauses, the mean, standard deviation, minimum and maximum (exact), and
 * the pause times at the 50th, 75th, 90th, 99th, 99.9th and 99.99th
 * percentiles and the maximum (within histogram.h's bound).  The pauses
 * of every domain go into one distribution.
 *
 * Text report (durations in readable units):
 *
 *   GC pauses: 10000 (outermost runtime phases, all domains)
 *     mean    5.001 ms    stddev  2.887 ms
 *     min     1.000 ms    max     10.00 ms
 *
 *     percentile       pause
 *          50.00    5.001 ms
 *          ...
 *            max    10.00 ms
 *
 *   not included: 1 pause cut by lost events, 0 unfinished, 0 unmatched ends
 *
 * --json prints the same as one object, durations in nanoseconds:
 *
 *   {"pauses": N, "min_ns": N, "max_ns": N, "mean_ns": X, "stddev_ns": X,
 *    "percentiles": {"50": N, "75": N, "90": N, "99": N, "99.9": N,
 *                    "99.99": N, "100": N},
 *    "relative_error": X, "cut": N, "unfinished": N, "unmatched_ends": N,
 *    "markers": N, "lost": N, "lost_unit": "events"|"words",
 *    "dropped": N, "malformed": N}
 *
 * where min_ns .. percentiles are null when there is no pause, and
 * relative_error is the histogram's bound on the percentiles' error, and
 * markers counts the outermost marker spans, which are not pauses.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "events.h"
#include "histogram.h"

#define HELP_REF "eventring latency --help"

static const struct {
  const char *label, *key;
  double p;
} rows[] = {
    {"50.00", "50", 50}, {"75.00", "75", 75},     {"90.00", "90", 90},
    {"99.00", "99", 99}, {"99.90", "99.9", 99.9}, {"99.99", "99.99", 99.99},
    {"max", "100", 100},
};
#define N_ROWS (sizeof rows / sizeof rows[0])

struct latency {
  struct tool_source *src;
  struct pauses pauses;
  struct histogram *hist;
};

static void on_pause(void *arg, int domain, uint64_t duration) {
  (void)domain;
  struct latency *l = arg;
  hist_record(l->hist, duration);
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  struct latency *l = data;
  pauses_begin(&l->pauses, domain, ts, phase);
  return 1;
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  struct latency *l = data;
  uint64_t start;
  pauses_end(&l->pauses, domain, ts, phase, &start);
  return 1;
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  (void)ts, (void)value, (void)has_data;
  struct latency *l = data;
  tool_source_lifecycle(l->src, kind);
  pauses_lifecycle(&l->pauses, domain, kind);
  return 1;
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct latency *l = data;
  tool_source_lost(l->src, domain, count);
  pauses_cut(&l->pauses, domain);
  return 1;
}

static const char *plural(uint64_t n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

static void print_text(const struct latency *l) {
  const struct histogram *h = l->hist;
  const struct pauses *p = &l->pauses;
  char a[32], b[32];
  uint64_t n = hist_count(h);
  printf("GC pauses: %" PRIu64 " (outermost runtime phases, all domains)\n", n);
  if (n > 0) {
    printf("  mean   %10s    stddev %10s\n",
           analysis_duration(a, (uint64_t)(hist_mean(h) + 0.5)),
           analysis_duration(b, (uint64_t)(hist_stddev(h) + 0.5)));
    printf("  min    %10s    max    %10s\n", analysis_duration(a, hist_min(h)),
           analysis_duration(b, hist_max(h)));
    printf("\n  percentile       pause\n");
    for (size_t i = 0; i < N_ROWS; i++)
      printf("  %10s  %10s\n", rows[i].label,
             analysis_duration(a, hist_percentile(h, rows[i].p)));
  }
  if (p->cut || p->unfinished || p->unmatched)
    printf("\nnot included: %" PRIu64 " %s cut by lost events, %" PRIu64
           " unfinished, %" PRIu64 " unmatched %s\n",
           p->cut, plural(p->cut, "pause", "pauses"), p->unfinished,
           p->unmatched, plural(p->unmatched, "end", "ends"));
}

static void print_json(const struct latency *l) {
  const struct histogram *h = l->hist;
  const struct pauses *p = &l->pauses;
  uint64_t n = hist_count(h);
  printf("{\"pauses\": %" PRIu64, n);
  if (n > 0) {
    printf(", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 ", \"mean_ns\": ",
           hist_min(h), hist_max(h));
    analysis_json_double(stdout, hist_mean(h));
    printf(", \"stddev_ns\": ");
    analysis_json_double(stdout, hist_stddev(h));
    printf(", \"percentiles\": {");
    for (size_t i = 0; i < N_ROWS; i++)
      printf("%s\"%s\": %" PRIu64, i ? ", " : "", rows[i].key,
             hist_percentile(h, rows[i].p));
    printf("}");
  } else {
    printf(", \"min_ns\": null, \"max_ns\": null, \"mean_ns\": null"
           ", \"stddev_ns\": null, \"percentiles\": null");
  }
  printf(", \"relative_error\": ");
  analysis_json_double(stdout, HIST_RELATIVE_ERROR);
  printf(", \"cut\": %" PRIu64 ", \"unfinished\": %" PRIu64
         ", \"unmatched_ends\": %" PRIu64 ", \"markers\": %" PRIu64
         ", \"lost\": %" PRIu64 ", \"lost_unit\": \"%s\"",
         p->cut, p->unfinished, p->unmatched, p->markers, l->src->lost_total,
         tool_lost_unit(l->src->cursor));
  struct tool_unrecorded u;
  if (tool_unrecorded(l->src->cursor, &u) == 0)
    printf(", \"dropped\": %" PRIu64 ", \"malformed\": %" PRIu64 "}\n",
           u.dropped, u.malformed);
  else
    printf(", \"dropped\": null, \"malformed\": null}\n");
}

static void help(void) {
  analysis_help(
      "latency",
      "Print the distribution of GC pause times: the number of pauses "
      "(outermost\n"
      "runtime phases), their mean, standard deviation, minimum, maximum and\n"
      "percentiles (within 0.05%).\n");
}

int tool_latency(int argc, char **argv) {
  struct tool_source src;
  int json;
  int rc = analysis_open(argc, argv, HELP_REF, help, &src, &json);
  if (rc >= 0) return rc;

  struct latency l = {.src = &src};
  static const struct tool_handlers handlers = {.runtime_begin = on_begin,
                                                .runtime_end = on_end,
                                                .lifecycle = on_lifecycle,
                                                .lost_events = on_lost};
  eventring_callbacks *cb = tool_callbacks_new(&handlers);
  l.hist = hist_create();
  if (!cb || !l.hist ||
      pauses_init(&l.pauses, src.cursor,
                  eventring_cursor_max_domains(src.cursor), on_pause, &l) < 0) {
    tool_error("out of memory");
    rc = TOOL_EXIT_INPUT;
    goto out;
  }
  rc = tool_source_read(&src, cb, &l);
  /* After a read error the report would look complete without being so:
   * as dump does, print nothing but the error. */
  if (rc == TOOL_EXIT_OK) {
    pauses_finish(&l.pauses);
    if (json)
      print_json(&l);
    else
      print_text(&l);
    if (!json) tool_source_lost_summary(&src, stderr);
  }
out:
  pauses_free(&l.pauses);
  hist_free(l.hist);
  eventring_callbacks_free(cb);
  tool_source_close(&src);
  int out = tool_output_finish();
  return rc != TOOL_EXIT_OK ? rc : out;
}
