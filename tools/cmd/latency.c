/* latency.c -- `eventring latency`: the distribution of GC pause times.
 *
 * A pause is an outermost runtime phase of a domain, but for the empty
 * marker spans of OCaml 4.13's GC hooks (analysis.h: which those are, and
 * how nesting, lost events and pauses left open are handled); by
 * default, as the program sees it: outermost phases with no mutator time
 * between them are one pause (analysis.h), unless --per-phase.  Every pause's
 * duration goes into a histogram with bounded relative error
 * (analysis.h), and the report gives, as olly's does, the number of
 * pauses, the mean, standard deviation, minimum and maximum (exact), and
 * the pause times at the 50th, 75th, 90th, 99th, 99.9th and 99.99th
 * percentiles and the maximum (within analysis.h's bound).  The pauses
 * of every domain go into one distribution.
 *
 * Text report (durations in readable units):
 *
 *   GC pauses: 10000 (as the program saw them, all domains; 0 back-to-back
 *   phases joined)
 *
 * or, with --per-phase, "GC pauses: N (each outermost runtime phase, all
 * domains)".
 *     mean    5.001 ms    stddev  2.887 ms
 *     min     1.000 ms    max     10.00 ms
 *
 *     percentile       pause
 *          50.00    5.001 ms
 *          ...
 *            max    10.00 ms
 *
 *   not included: 1 pause cut (by lost events or the window's start), 0 unfinished, 0 unmatched ends
 *
 * --json prints the same as one object, durations in nanoseconds:
 *
 *   {"pauses": N, "view": "program"|"phase", "merged": N,
 *    "min_ns": N, "max_ns": N, "mean_ns": X, "stddev_ns": X,
 *    "percentiles": {"50": N, "75": N, "90": N, "99": N, "99.9": N,
 *                    "99.99": N, "100": N},
 *    "relative_error": X, "cut": N, "unfinished": N, "unmatched_ends": N,
 *    "markers": N, "lost": N, "before_window": N,
 *    "lost_unit": "events"|"words",
 *    "dropped": N, "malformed": N}
 *
 * where min_ns .. percentiles are null when there is no pause, and
 * relative_error is the histogram's bound on the percentiles' error, and
 * markers counts the outermost marker spans, which are not pauses; view
 * says which pauses (as the program saw them, or each outermost phase,
 * --per-phase) and merged how many phases were joined to the one before.
 */
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"

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
  struct spans spans, phases; /* --span, --phase */
};

struct latency {
  struct tool_source *src;
  struct pauses pauses; /* one process */
  struct histogram *hist; /* every pause */
  struct lat_proc *procs; /* several processes, nprocs of them */
  int nprocs;
  int failed;
  const struct analysis_opts *opts;
  /* The first names of user spans, for the hint of a trace without GC
   * events; span_names_more when there were others. */
  char *span_names[8];
  int nspan_names, span_names_more;
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
/* The process being read (every source is multi here); NULL when out of
 * memory. */
static struct lat_proc *proc_of(struct latency *l) {
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
    const struct analysis_opts *o = l->opts;
    int nd = eventring_cursor_max_domains(c);
    if (!(p->hist = hist_create()) ||
        pauses_init(&p->pauses, c, nd, on_proc_pause, p) < 0 ||
        spans_init(&p->spans, c, nd, 0, o->span, o->nspan) < 0 ||
        spans_init(&p->phases, c, nd, 1, o->phase, o->nphase) < 0)
      goto oom;
    p->pauses.merge = !o->per_phase;
    p->ready = 1;
  }
  if (p->spans.oom || p->phases.oom) goto oom;
  return p;
oom:
  if (!l->failed) tool_error("out of memory");
  l->failed = 1;
  return NULL;
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  struct lat_proc *p = proc_of(data);
  if (!p) return 0;
  pauses_begin(&p->pauses, domain, ts, phase);
  if (p->l->opts->nphase) spans_begin(&p->phases, domain, ts, phase, NULL);
  return 1;
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  struct lat_proc *p = proc_of(data);
  if (!p) return 0;
  uint64_t start;
  pauses_end(&p->pauses, domain, ts, phase, &start);
  if (p->l->opts->nphase) spans_end(&p->phases, domain, ts, phase, NULL);
  return 1;
}

/* The program ran: a pause that follows is another one. */
static int activity(void *data, int domain) {
  struct lat_proc *p = proc_of(data);
  if (!p) return 0;
  pauses_activity(&p->pauses, domain);
  return 1;
}

static int on_user_unit(void *data, int domain, uint64_t ts, int id,
                        const char *name) {
  (void)ts, (void)id, (void)name;
  return activity(data, domain);
}

static int on_user_int(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t v) {
  (void)ts, (void)id, (void)name, (void)v;
  return activity(data, domain);
}

static int on_user_custom(void *data, int domain, uint64_t ts, int id,
                          const char *name, const void *b, size_t len) {
  (void)ts, (void)id, (void)name, (void)b, (void)len;
  return activity(data, domain);
}

/* Keeps `name` among the span names the hint lists.  Returns 1. */
static int note_span_name(struct latency *l, const char *name) {
  if (!name || !*name) return 1;
  for (int i = 0; i < l->nspan_names; i++)
    if (strcmp(l->span_names[i], name) == 0) return 1;
  int room = (int)(sizeof l->span_names / sizeof l->span_names[0]);
  if (l->nspan_names == room) {
    l->span_names_more = 1;
  } else {
    /* Out of memory: the hint lists one name fewer. */
    char *copy = strdup(name);
    if (copy) l->span_names[l->nspan_names++] = copy;
  }
  return 1;
}

static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  struct lat_proc *p = proc_of(data);
  if (!p) return 0;
  pauses_activity(&p->pauses, domain);
  if (!p->l->opts->nspan) return note_span_name(p->l, name);
  if (is_end)
    spans_end(&p->spans, domain, ts, id, name);
  else
    spans_begin(&p->spans, domain, ts, id, name);
  return 1;
}

static int on_thread(void *data, int domain, uint64_t ts, int64_t thread,
                     uint64_t tid, const char *name, size_t len) {
  (void)ts, (void)name, (void)len;
  struct lat_proc *p = proc_of(data);
  if (!p) return 0;
  pauses_activity(&p->pauses, domain);
  spans_thread(&p->spans, domain, thread, tid);
  spans_thread(&p->phases, domain, thread, tid);
  return 1;
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  (void)ts, (void)value, (void)has_data;
  struct latency *l = data;
  tool_source_lifecycle(l->src, kind);
  struct lat_proc *p = proc_of(l);
  if (!p) return 0;
  pauses_lifecycle(&p->pauses, domain, kind);
  spans_lifecycle(&p->spans, domain, kind);
  spans_lifecycle(&p->phases, domain, kind);
  return 1;
}

/* A loss (`window` 0) or the events before a ring's window: either way
 * what was open then is cut. */
static int cut(void *data, int domain, uint64_t count, int window) {
  struct latency *l = data;
  if (window)
    tool_source_window(l->src, domain, count);
  else
    tool_source_lost(l->src, domain, count);
  struct lat_proc *p = proc_of(l);
  if (!p) return 0;
  pauses_cut(&p->pauses, domain);
  spans_cut(&p->spans, domain);
  spans_cut(&p->phases, domain);
  return 1;
}

static int on_lost(void *data, int domain, uint64_t count) {
  return cut(data, domain, count, 0);
}

static int on_window(void *data, int domain, uint64_t before) {
  return cut(data, domain, before, 1);
}

/* What a report is about: one process, or the total of several. */
struct lat_report {
  const struct histogram *hist;
  uint64_t cut, unfinished, unmatched, markers, merged, lost, before;
  int per_phase; /* --per-phase: each outermost phase its own pause */
  const char *lost_unit;
  int unrecorded_known;
  struct tool_unrecorded u;
};

static void add_pauses(struct lat_report *r, const struct pauses *p) {
  r->cut += p->cut;
  r->unfinished += p->unfinished;
  r->unmatched += p->unmatched;
  r->markers += p->markers;
  r->merged += p->merged;
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

/* The mean, extremes and percentile table of `h`, under its title line;
 * `what` heads the duration column. */
static void print_body(const struct histogram *h, const char *what) {
  char a[32], b[32];
  uint64_t n = hist_count(h);
  if (n > 0) {
    printf("  mean   %10s    stddev %10s\n",
           analysis_duration(a, (uint64_t)(hist_mean(h) + 0.5)),
           analysis_duration(b, (uint64_t)(hist_stddev(h) + 0.5)));
    printf("  min    %10s    max    %10s\n", analysis_duration(a, hist_min(h)),
           analysis_duration(b, hist_max(h)));
    printf("\n  percentile  %10s\n", what);
    for (size_t i = 0; i < N_ROWS; i++)
      printf("  %10s  %10s\n", rows[i].label,
             analysis_duration(a, hist_percentile(h, rows[i].p)));
    /* A person reading a terminal gets the shape too (render.h); a pipe or
     * a file keeps the table alone, which scripts parse. */
    if (isatty(STDOUT_FILENO)) bars_print(stdout, h, what, 40);
  }
}

/* The line that counts what a distribution leaves out (`one`/`many`:
 * what it counts), when it leaves anything out. */
static void print_not_included(uint64_t cut, uint64_t unfinished,
                               uint64_t unmatched, const char *one,
                               const char *many) {
  if (!cut && !unfinished && !unmatched) return;
  printf("\nnot included: %" PRIu64 " %s cut (by lost events or the "
         "window's start), %" PRIu64 " unfinished, %" PRIu64
         " unmatched %s\n",
         cut, plural(cut, one, many), unfinished, unmatched,
         plural(unmatched, "end", "ends"));
}

static void print_text(const struct lat_report *p) {
  const struct histogram *h = p->hist;
  uint64_t n = hist_count(h);
  if (p->per_phase)
    printf("GC pauses: %" PRIu64 " (each outermost runtime phase, all "
           "domains)\n", n);
  else
    printf("GC pauses: %" PRIu64 " (as the program saw them, all domains; "
           "%" PRIu64 " back-to-back %s joined)\n",
           n, p->merged, plural(p->merged, "phase", "phases"));
  print_body(h, "pause");
  print_not_included(p->cut, p->unfinished, p->unmatched, "pause", "pauses");
}

/* The distribution's fields of `h`: min_ns .. percentiles. */
static void print_dist_json(const struct histogram *h) {
  uint64_t n = hist_count(h);
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
}

/* The report's fields, without the braces. */
static void print_json(const struct lat_report *p) {
  const struct histogram *h = p->hist;
  printf("\"pauses\": %" PRIu64 ", \"view\": \"%s\", \"merged\": %" PRIu64,
         hist_count(h), p->per_phase ? "phase" : "program", p->merged);
  print_dist_json(h);
  printf(", \"relative_error\": ");
  analysis_json_double(stdout, HIST_RELATIVE_ERROR);
  printf(", \"cut\": %" PRIu64 ", \"unfinished\": %" PRIu64
         ", \"unmatched_ends\": %" PRIu64 ", \"markers\": %" PRIu64
         ", \"lost\": %" PRIu64 ", \"before_window\": %" PRIu64
         ", \"lost_unit\": \"%s\"",
         p->cut, p->unfinished, p->unmatched, p->markers, p->lost, p->before,
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
  r.per_phase = l->opts->per_phase;
  r.lost = src->lost_total;
  r.before = src->before_total;
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
    q.per_phase = l->opts->per_phase;
    if (!q.hist) continue;
    if (lp) add_pauses(&q, &lp->pauses);
    q.lost = p->lost_total;
    q.before = p->before_total;
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

/* ---- --span and --phase. ---- */

/* The spans of `which` (0 user spans, 1 phases) of the processes
 * `first` .. `last` - 1, added up by name into *out (*n entries). */
static int merge_spans(const struct latency *l, int which, int first,
                       int last, struct span_stats **out, size_t *n) {
  *out = NULL;
  *n = 0;
  size_t cap = 0;
  for (int i = first; i < last && i < l->nprocs; i++) {
    if (!l->procs[i].ready) continue;
    const struct spans *s = which ? &l->procs[i].phases : &l->procs[i].spans;
    for (size_t k = 0; k < s->n; k++) {
      size_t j = 0;
      while (j < *n && strcmp((*out)[j].name, s->v[k].name)) j++;
      if (j == *n) {
        if (*n == cap) {
          cap = cap ? 2 * cap : 16;
          struct span_stats *v = realloc(*out, cap * sizeof *v);
          if (!v) return -1;
          *out = v;
        }
        memset(&(*out)[j], 0, sizeof **out);
        (*n)++;
      }
      if (span_stats_add(&(*out)[j], &s->v[k], 0) < 0) return -1;
    }
  }
  return 0;
}

static void free_merged(struct span_stats *v, size_t n) {
  for (size_t i = 0; i < n; i++) span_stats_free(&v[i]);
  free(v);
}

/* One name's distribution, as text or as a JSON object. */
static void print_span(const struct span_stats *st, int phase, int json,
                       int first) {
  const struct span_stat *a = &st->all;
  struct histogram *empty = a->hist ? NULL : hist_create();
  const struct histogram *h = a->hist ? a->hist : empty;
  if (!h) return;
  if (json) {
    printf("%s\n  {\"name\": ", first ? "" : ",");
    analysis_json_string(stdout, st->name);
    printf(", \"kind\": \"%s\", \"count\": %" PRIu64
           ", \"total_ns\": %" PRIu64,
           phase ? "phase" : "span", hist_count(h), a->total);
    print_dist_json(h);
    printf(", \"relative_error\": ");
    analysis_json_double(stdout, HIST_RELATIVE_ERROR);
    printf(", \"cut\": %" PRIu64 ", \"unfinished\": %" PRIu64
           ", \"unmatched_ends\": %" PRIu64 "}",
           a->cut, a->unfinished, a->unmatched);
  } else {
    char name[256];
    printf("%s%s %s: %" PRIu64 " (%s, all domains)\n", first ? "" : "\n",
           phase ? "phase" : "span",
           tool_name_str(name, sizeof name, st->name, "", 0), hist_count(h),
           phase ? "runtime phase at any depth" : "user span");
    print_body(h, "duration");
    print_not_included(a->cut, a->unfinished, a->unmatched, "span", "spans");
  }
  hist_free(empty);
}

/* Whether `pat` matches a name in `v`. */
static int matched(const char *pat, const struct span_stats *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (fnmatch(pat, v[i].name, 0) == 0) return 1;
  return 0;
}

/* The spans of processes first .. last - 1: every name of --span, then
 * of --phase; text names the patterns that matched nothing. */
static int print_spans(const struct latency *l, int first, int last,
                       int json) {
  const struct analysis_opts *o = l->opts;
  int any = 0;
  if (json) printf("\"spans\": [");
  for (int which = 0; which < 2; which++) {
    struct span_stats *v;
    size_t n;
    if (merge_spans(l, which, first, last, &v, &n) < 0) {
      free_merged(v, 0);
      return -1;
    }
    for (size_t i = 0; i < n; i++) print_span(&v[i], which, json, !any++);
    int np = which ? o->nphase : o->nspan;
    char *const *pats = which ? o->phase : o->span;
    for (int k = 0; k < np && !json; k++)
      if (!matched(pats[k], v, n))
        printf("%s%s %s: none in the events read\n", any++ ? "\n" : "",
               which ? "phase" : "span", pats[k]);
    free_merged(v, n);
  }
  if (json) printf("]");
  return 0;
}

/* The report of --span/--phase: the total's, then each process's. */
static int report_spans(struct latency *l, int json) {
  const struct tool_source *src = l->src;
  int several = src->nprocs > 1 || src->cmd || (src->dir && !src->pid_arg);
  struct lat_report r;
  memset(&r, 0, sizeof r);
  r.unrecorded_known = 1;
  for (int i = 0; i < src->nprocs; i++) add_unrecorded(&r, src->procs[i]->cursor);
  if (json) printf("{");
  else if (src->nprocs > 1) printf("== all %d processes ==\n", src->nprocs);
  if (print_spans(l, 0, l->nprocs, json) < 0) return -1;
  if (json) {
    printf(", \"lost\": %" PRIu64 ", \"lost_unit\": \"%s\"",
           src->lost_total, tool_lost_unit(src->cursor));
    if (r.unrecorded_known)
      printf(", \"dropped\": %" PRIu64 ", \"malformed\": %" PRIu64,
             r.u.dropped, r.u.malformed);
    else
      printf(", \"dropped\": null, \"malformed\": null");
  }
  if (several) {
    if (json) printf(",\n \"processes\": [");
    for (int i = 0; i < src->nprocs; i++) {
      const struct tool_proc *p = src->procs[i];
      if (json) {
        printf("%s\n  {\"pid\": %ld, \"name\": ", i ? "," : "",
               (long)p->pid);
        analysis_json_string(stdout, p->name);
        printf(", ");
      } else if (src->nprocs > 1) {
        char label[128];
        printf("\n== %s ==\n", tool_proc_label(p, label, sizeof label));
      } else {
        continue;
      }
      if (print_spans(l, i, i + 1, json) < 0) return -1;
      if (json)
        printf(", \"lost\": %" PRIu64 ", \"lost_unit\": \"%s\"}",
               p->lost_total, tool_lost_unit(p->cursor));
    }
    if (json) printf("]");
  }
  if (json) printf("}\n");
  return 0;
}

/* Whether the trace held GC events at all: a pause, or a phase that
 * made none (cut, unfinished, unmatched, a marker). */
static int saw_gc(const struct latency *l) {
  if (hist_count(l->hist) > 0) return 1;
  const struct pauses *one = &l->pauses;
  if (one->cut || one->unfinished || one->unmatched || one->markers) return 1;
  for (int i = 0; i < l->nprocs; i++) {
    const struct pauses *p = &l->procs[i].pauses;
    if (l->procs[i].ready &&
        (p->cut || p->unfinished || p->unmatched || p->markers))
      return 1;
  }
  return 0;
}

/* The hint after the text report of a trace without GC events, which
 * is what a C program that writes only user spans leaves: what 0 pauses
 * means, and the --span that measures what it has.  It goes where the
 * report goes, never into a traced command's stderr. */
static void hint_no_gc(const struct latency *l) {
  if (l->nspan_names == 0) {
    printf("\nThe trace has no runtime phase events and no user spans "
           "('eventring dump' shows what it holds).\n");
    return;
  }
  printf("\nThe trace has no runtime phase events; for the durations of "
         "its user spans (");
  for (int i = 0; i < l->nspan_names; i++) {
    if (i) printf(", ");
    tool_put_text(stdout, l->span_names[i], strlen(l->span_names[i]),
                  TOOL_TEXT_FIELD);
  }
  printf("%s), use --span NAME.\n", l->span_names_more ? ", ..." : "");
}

static void help(void) {
  analysis_help(
      "latency",
      "Print the distribution of GC pause times: the number of pauses "
      "(outermost\n"
      "runtime phases), their mean, standard deviation, minimum, maximum and\n"
      "percentiles (within 0.05%).  Pauses are as the program saw them:\n"
      "outermost phases with no program time between them (a minor\n"
      "collection and the major slice right after it) are one pause.\n"
      "  --per-phase    count each outermost phase as a pause of its own\n"
      "With --span NAME or --phase NAME, the\n"
      "same for the durations of a user span or of a runtime phase (at any\n"
      "depth) instead:\n"
      "  --span NAME    a user span (repeatable; NAME may be a glob: 'http.*')\n"
      "  --phase NAME   a runtime phase (repeatable; a glob too)\n");
}

int tool_latency(int argc, char **argv) {
  struct tool_source src;
  static struct analysis_opts opts = {.spans_allowed = 1};
  int rc = analysis_open(argc, argv, HELP_REF, help, &src, &opts);
  if (rc >= 0) return rc;
  int json = opts.json;

  struct latency l = {.src = &src, .opts = &opts};
  static const struct tool_handlers handlers = {.runtime_begin = on_begin,
                                                .runtime_end = on_end,
                                                .lifecycle = on_lifecycle,
                                                .user_unit = on_user_unit,
                                                .user_int = on_user_int,
                                                .user_span = on_user_span,
                                                .user_custom = on_user_custom,
                                                .lost_events = on_lost,
                                                .window = on_window,
                                                .thread = on_thread};
  eventring_callbacks *cb = tool_callbacks_new(&handlers);
  l.hist = hist_create();
  if (!cb || !l.hist ||
      pauses_init(&l.pauses, src.cursor,
                  eventring_cursor_max_domains(src.cursor), on_pause, &l) < 0) {
    tool_error("out of memory");
    rc = TOOL_EXIT_INPUT;
    goto out;
  }
  l.pauses.merge = !opts.per_phase;
  rc = tool_source_read(&src, cb, &l);
  if (l.failed) rc = TOOL_EXIT_INPUT;
  /* After a read error the report would look complete without being so:
   * as dump does, print nothing but the error. */
  if (rc == TOOL_EXIT_OK) {
    pauses_finish(&l.pauses);
    for (int i = 0; i < l.nprocs; i++)
      if (l.procs[i].ready) {
        pauses_finish(&l.procs[i].pauses);
        spans_finish(&l.procs[i].spans);
        spans_finish(&l.procs[i].phases);
      }
    if (!opts.nspan && !opts.nphase) {
      report(&l, json);
      /* With a filter the events it dropped are not the trace's. */
      if (!json && !src.filter && !saw_gc(&l)) hint_no_gc(&l);
    } else if (report_spans(&l, json) < 0) {
      tool_error("out of memory");
      rc = TOOL_EXIT_INPUT;
    }
    if (!json) tool_source_lost_summary(&src, stderr);
  }
out:
  for (int i = 0; i < l.nprocs; i++) {
    if (l.procs[i].ready) {
      pauses_free(&l.procs[i].pauses);
      spans_free(&l.procs[i].spans);
      spans_free(&l.procs[i].phases);
    }
    hist_free(l.procs[i].hist);
  }
  free(l.procs);
  for (int i = 0; i < l.nspan_names; i++) free(l.span_names[i]);
  pauses_free(&l.pauses);
  hist_free(l.hist);
  eventring_callbacks_free(cb);
  tool_source_close(&src);
  int out = tool_output_finish();
  return rc != TOOL_EXIT_OK ? rc : out;
}
