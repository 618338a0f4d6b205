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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "bars.h"
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

/* One process's pauses (with several processes; with one, the total's
 * are its own). */
struct lat_proc {
  struct latency *l;
  int ready;
  struct pauses pauses;
  struct histogram *hist;
};

struct latency {
  struct tool_source *src;
  struct pauses pauses; /* one process */
  struct histogram *hist; /* every pause */
  struct lat_proc *procs; /* several processes, nprocs of them */
  int nprocs;
  int failed;
};

static void on_pause(void *arg, int domain, uint64_t duration) {
  (void)domain;
  struct latency *l = arg;
  hist_record(l->hist, duration);
}

static void on_proc_pause(void *arg, int domain, uint64_t duration) {
  (void)domain;
  struct lat_proc *p = arg;
  hist_record(p->hist, duration);
  hist_record(p->l->hist, duration);
}

/* The pause tracker of the process being read; NULL when out of
 * memory. */
static struct pauses *pauses_of(struct latency *l) {
  if (!l->src->multi) return &l->pauses;
  int i = l->src->proc;
  if (i >= l->nprocs) {
    int n = i + 8;
    struct lat_proc *v = realloc(l->procs, (size_t)n * sizeof *v);
    if (!v) goto oom;
    memset(v + l->nprocs, 0, (size_t)(n - l->nprocs) * sizeof *v);
    l->procs = v;
    l->nprocs = n;
  }
  struct lat_proc *p = &l->procs[i];
  if (!p->ready) {
    const eventring_cursor *c = l->src->procs[i]->cursor;
    p->l = l;
    if (!(p->hist = hist_create()) ||
        pauses_init(&p->pauses, c, eventring_cursor_max_domains(c),
                    on_proc_pause, p) < 0)
      goto oom;
    p->ready = 1;
  }
  return &p->pauses;
oom:
  if (!l->failed) tool_error("out of memory");
  l->failed = 1;
  return NULL;
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  struct pauses *p = pauses_of(data);
  if (p) pauses_begin(p, domain, ts, phase);
  return p != NULL;
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  struct pauses *p = pauses_of(data);
  uint64_t start;
  if (p) pauses_end(p, domain, ts, phase, &start);
  return p != NULL;
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  (void)ts, (void)value, (void)has_data;
  struct latency *l = data;
  tool_source_lifecycle(l->src, kind);
  struct pauses *p = pauses_of(l);
  if (p) pauses_lifecycle(p, domain, kind);
  return p != NULL;
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct latency *l = data;
  tool_source_lost(l->src, domain, count);
  struct pauses *p = pauses_of(l);
  if (p) pauses_cut(p, domain);
  return p != NULL;
}

/* What a report is about: one process, or the total of several. */
struct lat_report {
  const struct histogram *hist;
  uint64_t cut, unfinished, unmatched, markers, lost;
  const char *lost_unit;
  int unrecorded_known;
  struct tool_unrecorded u;
};

static void add_pauses(struct lat_report *r, const struct pauses *p) {
  r->cut += p->cut;
  r->unfinished += p->unfinished;
  r->unmatched += p->unmatched;
  r->markers += p->markers;
}

static void add_unrecorded(struct lat_report *r, const eventring_cursor *c) {
  struct tool_unrecorded u;
  if (tool_unrecorded(c, &u) != 0) {
    r->unrecorded_known = 0;
    return;
  }
  r->u.dropped += u.dropped;
  r->u.malformed += u.malformed;
}

static const char *plural(uint64_t n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

static void print_text(const struct lat_report *p) {
  const struct histogram *h = p->hist;
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
    /* A person reading a terminal gets the shape too (bars.h); a pipe or
     * a file keeps the table alone, which scripts parse. */
    if (isatty(STDOUT_FILENO)) bars_print(stdout, h, "pause", 40);
  }
  if (p->cut || p->unfinished || p->unmatched)
    printf("\nnot included: %" PRIu64 " %s cut by lost events, %" PRIu64
           " unfinished, %" PRIu64 " unmatched %s\n",
           p->cut, plural(p->cut, "pause", "pauses"), p->unfinished,
           p->unmatched, plural(p->unmatched, "end", "ends"));
}

/* The report's fields, without the braces. */
static void print_json(const struct lat_report *p) {
  const struct histogram *h = p->hist;
  uint64_t n = hist_count(h);
  printf("\"pauses\": %" PRIu64, n);
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
         p->cut, p->unfinished, p->unmatched, p->markers, p->lost,
         p->lost_unit);
  if (p->unrecorded_known)
    printf(", \"dropped\": %" PRIu64 ", \"malformed\": %" PRIu64,
           p->u.dropped, p->u.malformed);
  else
    printf(", \"dropped\": null, \"malformed\": null");
}

/* The report of the source: the one process's, or the total of several,
 * then each process's (text: a section each; JSON: "processes"). */
static void report(struct latency *l, int json) {
  const struct tool_source *src = l->src;
  struct lat_report r;
  memset(&r, 0, sizeof r);
  r.hist = l->hist;
  r.lost = src->lost_total;
  r.lost_unit = tool_lost_unit(src->cursor);
  r.unrecorded_known = 1;
  int several = src->multi && (src->nprocs > 1 || src->cmd ||
                               (src->dir && !src->pid_arg));
  if (!src->multi) {
    add_pauses(&r, &l->pauses);
    add_unrecorded(&r, src->cursor);
  } else {
    for (int i = 0; i < src->nprocs; i++) {
      if (i < l->nprocs && l->procs[i].ready)
        add_pauses(&r, &l->procs[i].pauses);
      add_unrecorded(&r, src->procs[i]->cursor);
    }
  }
  if (json) {
    printf("{");
    print_json(&r);
  } else {
    if (src->nprocs > 1) printf("== all %d processes ==\n", src->nprocs);
    print_text(&r);
  }
  if (!several) {
    if (json) printf("}\n");
    return;
  }
  if (json) printf(",\n \"processes\": [");
  struct histogram *none = hist_create();
  for (int i = 0; i < src->nprocs; i++) {
    const struct tool_proc *p = src->procs[i];
    const struct lat_proc *lp =
        i < l->nprocs && l->procs[i].ready ? &l->procs[i] : NULL;
    struct lat_report q;
    memset(&q, 0, sizeof q);
    q.hist = lp ? lp->hist : none;
    if (!q.hist) continue;
    if (lp) add_pauses(&q, &lp->pauses);
    q.lost = p->lost_total;
    q.lost_unit = tool_lost_unit(p->cursor);
    q.unrecorded_known = 1;
    add_unrecorded(&q, p->cursor);
    if (json) {
      printf("%s\n  {\"pid\": %ld, \"name\": ", i ? "," : "", (long)p->pid);
      analysis_json_string(stdout, p->name);
      printf(", ");
      print_json(&q);
      printf("}");
    } else if (src->nprocs > 1) {
      char label[128];
      printf("\n== %s ==\n", tool_proc_label(p, label, sizeof label));
      print_text(&q);
    }
  }
  hist_free(none);
  if (json) printf("]}\n");
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
  if (l.failed) rc = TOOL_EXIT_INPUT;
  /* After a read error the report would look complete without being so:
   * as dump does, print nothing but the error. */
  if (rc == TOOL_EXIT_OK) {
    pauses_finish(&l.pauses);
    for (int i = 0; i < l.nprocs; i++)
      if (l.procs[i].ready) pauses_finish(&l.procs[i].pauses);
    report(&l, json);
    if (!json) tool_source_lost_summary(&src, stderr);
  }
out:
  for (int i = 0; i < l.nprocs; i++) {
    if (l.procs[i].ready) pauses_free(&l.procs[i].pauses);
    hist_free(l.procs[i].hist);
  }
  free(l.procs);
  pauses_free(&l.pauses);
  hist_free(l.hist);
  eventring_callbacks_free(cb);
  tool_source_close(&src);
  int out = tool_output_finish();
  return rc != TOOL_EXIT_OK ? rc : out;
}
