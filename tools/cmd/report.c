/* report.c -- `eventring report`: one self-contained HTML page of charts
 * and tables about a run.
 *
 * The page holds no script, no style sheet or font from elsewhere and no
 * raw event: every chart is inline SVG (render.h) drawn from aggregates, so
 * the page's size depends on the number of names, domains and bins, not
 * on the number of events.  Its sections:
 *
 *   - Summary: wall time, events read and lost, GC pauses and their time
 *     (the numbers of `eventring stats` and `eventring latency`); each
 *     number is in a table row with data-key and data-value attributes,
 *     which the tests compare with the JSON of those subcommands.
 *   - GC pauses: their distribution in power-of-two bins (render.h) and the
 *     percentile table; per domain, the pauses and their time.
 *   - GC time share over time, per domain: the share of each time bin
 *     spent inside outermost runtime phases (followed with a depth per
 *     domain; a loss resets the depth).
 *   - Counters over time (runtime counters, heap words among them, and
 *     user int events), each the minimum and maximum of its samples per
 *     time bin.
 *   - User spans: the distribution of each name's durations and their
 *     rate (ends per second) over time.  Spans pair as for `stats` and
 *     `latency --span` (spans.c's tracker: on their thread's track, nested
 *     ones of a name innermost first; cut, unfinished and unmatched ones
 *     counted apart), and the table has stats' numbers.
 *   - Lost events marked (red) on every time line, at the time of the
 *     last event read before the loss on that domain.
 *
 * Time lines share one set of TL_BINS bins.  Reading is one pass, and
 * the events of the domains come one domain after another, so the span
 * of time is not known in advance: the bins start 1024 ns wide at the
 * first event and double in width (merging pairs) whenever an event
 * falls past the last bin; an event before the first bin moves the bins
 * right, or doubles them when there is no room.  Every series is merged
 * alike, so they stay aligned.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"

#define HELP_REF "eventring report --help"
#define N_IDS 8192
#define TL_BINS 240
#define TL_WIDTH_MAX (UINT64_C(1) << 55) /* 240 bins of it < 2^63 */
/* Charts drawn at most for so many span names, and lines per chart of
 * domains; the tables list everything. */
#define MAX_SPAN_CHARTS 32
#define MAX_LINES 8

/* ------------------------------------------------------------------ */
/* Time lines.                                                          */

struct bin {
  double sum;
  uint64_t min, max, n;
};

struct series {
  struct bin b[TL_BINS];
};

struct timeline {
  int started;
  uint64_t origin, width; /* bin i is [origin + i * width, + width) */
  int hi;                 /* the highest bin in use */
  struct series **all;
  int nall, cap;
};

static void bin_merge(struct bin *to, const struct bin *from) {
  if (from->n) {
    if (!to->n || from->min < to->min) to->min = from->min;
    if (!to->n || from->max > to->max) to->max = from->max;
  }
  to->n += from->n;
  to->sum += from->sum;
}

static struct series *tl_series(struct timeline *tl) {
  if (tl->nall == tl->cap) {
    int n = tl->cap ? tl->cap * 2 : 16;
    struct series **v = realloc(tl->all, (size_t)n * sizeof *v);
    if (!v) return NULL;
    tl->all = v;
    tl->cap = n;
  }
  struct series *s = calloc(1, sizeof *s);
  if (s) tl->all[tl->nall++] = s;
  return s;
}

/* Moves every series onto bins of `width` from `origin`, which cover
 * what the old bins did. */
static void tl_remap(struct timeline *tl, uint64_t origin, uint64_t width) {
  static struct bin tmp[TL_BINS];
  int hi = -1;
  for (int k = 0; k < tl->nall; k++) {
    struct bin *b = tl->all[k]->b;
    memset(tmp, 0, sizeof tmp);
    for (int i = 0; i <= tl->hi; i++) {
      if (!b[i].n && b[i].sum == 0) continue;
      /* origin <= tl->origin: the bins only move right or widen. */
      uint64_t j = (tl->origin - origin + (uint64_t)i * tl->width) / width;
      bin_merge(&tmp[j < TL_BINS ? j : TL_BINS - 1], &b[i]);
    }
    memcpy(b, tmp, sizeof tmp);
  }
  if (tl->hi >= 0)
    hi = (int)((tl->origin - origin + (uint64_t)tl->hi * tl->width) / width);
  if (hi >= TL_BINS) hi = TL_BINS - 1;
  tl->origin = origin;
  tl->width = width;
  tl->hi = hi;
}

/* The bin of time `ts`, the bins moved or widened as need be. */
static int tl_index(struct timeline *tl, uint64_t ts) {
  if (!tl->started) {
    tl->started = 1;
    tl->width = 1024;
    tl->origin = ts & ~(tl->width - 1);
    tl->hi = -1;
  }
  /* Bins this wide span more than any clock's range: timestamps that far
   * apart come from a damaged file, and go to the first or last bin
   * rather than widening the bins past what 64 bits hold. */
  if (tl->width >= TL_WIDTH_MAX) {
    uint64_t i = ts < tl->origin ? 0 : (ts - tl->origin) / tl->width;
    if (i >= TL_BINS) i = TL_BINS - 1;
    if ((int)i > tl->hi) tl->hi = (int)i;
    return (int)i;
  }
  for (;;) {
    if (ts >= tl->origin) {
      uint64_t i = (ts - tl->origin) / tl->width;
      if (i < TL_BINS) {
        if ((int)i > tl->hi) tl->hi = (int)i;
        return (int)i;
      }
    } else {
      /* Move right by what is needed plus half the room left, so that a
       * domain whose events start a little earlier each time does not
       * move the bins at every event. */
      uint64_t need = (tl->origin - ts + tl->width - 1) / tl->width;
      uint64_t room = (uint64_t)(TL_BINS - 1 - tl->hi);
      if (need <= room) {
        uint64_t by = need + (room - need) / 2;
        if (by * tl->width > tl->origin) by = tl->origin / tl->width;
        if (by >= need) {
          tl_remap(tl, tl->origin - by * tl->width, tl->width);
          continue;
        }
      }
    }
    uint64_t w = tl->width * 2;
    tl_remap(tl, tl->origin & ~(w - 1), w);
    if (w >= TL_WIDTH_MAX) return tl_index(tl, ts);
  }
}

/* Adds `v` at time `ts` to series `s`, as a sum and a sample. */
static void tl_add(struct timeline *tl, struct series *s, uint64_t ts,
                   double sum, uint64_t sample) {
  struct bin *b = &s->b[tl_index(tl, ts)];
  if (!b->n || sample < b->min) b->min = sample;
  if (!b->n || sample > b->max) b->max = sample;
  b->n++;
  b->sum += sum;
}

/* Adds the interval [a, b) to the sums of `s`, each bin getting the
 * nanoseconds of it that fall in the bin. */
static void tl_interval(struct timeline *tl, struct series *s, uint64_t a,
                        uint64_t b) {
  if (b <= a) return;
  tl_index(tl, a);
  tl_index(tl, b - 1); /* may widen the bins: index a again after */
  int i = tl_index(tl, a), j = tl_index(tl, b - 1);
  for (int k = i; k <= j; k++) {
    uint64_t lo = tl->origin + (uint64_t)k * tl->width;
    uint64_t hi = lo > UINT64_MAX - tl->width ? UINT64_MAX : lo + tl->width;
    uint64_t x = a > lo ? a : lo, y = b < hi ? b : hi;
    if (y <= x) continue;
    s->b[k].sum += (double)(y - x);
  }
}

/* ------------------------------------------------------------------ */
/* What is gathered.                                                    */

enum { N_SPAN, N_COUNTER, N_INT, N_UNIT, N_KINDS };
static const char *const kind_names[N_KINDS] = {"span", "counter", "int",
                                                "unit"};

/* A user event or counter, by kind and name over every process. */
struct named {
  int kind;
  char *name;
  uint64_t count;
  struct series *tl; /* spans: ends per bin */
  /* Counters and ints: the last sample (latest timestamp), and the
   * samples of each process apart (indexed as r->procs; NULL where none):
   * two programs' heaps are two lines, not one that jumps between them. */
  uint64_t last, last_ts, min, max;
  struct series **per;
  int nper;
};

struct rdomain {
  int depth;
  uint64_t open_ts, last_ts;
  uint64_t from, to; /* its first and last event's times, once seen */
  int seen;
  uint64_t pauses, gc_ns, read;
  uint64_t lost_unplaced; /* lost before the domain's first event */
  struct series *gc; /* time in outermost phases */
};

struct rproc {
  int ready;
  struct pauses pauses;
  struct spans spans;
  int ndomains;
  struct rdomain *dom;
  int ids[N_KINDS][N_IDS]; /* index into names + 1, 0 unknown */
};

struct report {
  struct tool_source *src;
  struct timeline tl;
  struct histogram *gc;
  struct rproc **procs;
  int nprocs;
  struct named *names;
  int nnames, capnames;
  struct series *lost; /* lost counts */
  struct span_stats *sp; /* every process's spans, by name */
  size_t nsp;
  uint64_t first_ts, last_ts;
  int any_ts;
  int any_phase; /* a runtime phase was read: the program has a GC */
  int failed;
};

static void oom(struct report *r) {
  if (!r->failed) tool_error("out of memory");
  r->failed = 1;
}

static void on_pause(void *arg, int domain, uint64_t duration);

struct pause_arg {
  struct report *r;
  struct rproc *p;
};

/* The state of the process being read; NULL when out of memory. */
static struct rproc *proc_of(struct report *r) {
  int i = r->src->multi ? r->src->proc : 0;
  if (i >= r->nprocs) {
    int n = i + 8;
    struct rproc **v = realloc(r->procs, (size_t)n * sizeof *v);
    if (!v) goto fail;
    memset(v + r->nprocs, 0, (size_t)(n - r->nprocs) * sizeof *v);
    r->procs = v;
    r->nprocs = n;
  }
  if (!r->procs[i]) {
    struct rproc *p = calloc(1, sizeof *p + sizeof(struct pause_arg));
    if (!p) goto fail;
    r->procs[i] = p;
    const eventring_cursor *c =
        r->src->multi ? r->src->procs[i]->cursor : r->src->cursor;
    p->ndomains = eventring_cursor_max_domains(c);
    p->dom = calloc((size_t)p->ndomains, sizeof *p->dom);
    struct pause_arg *a = (struct pause_arg *)(p + 1);
    a->r = r;
    a->p = p;
    if (!p->dom ||
        pauses_init(&p->pauses, c, p->ndomains, on_pause, a) < 0 ||
        spans_init(&p->spans, c, p->ndomains, 0, NULL, 0) < 0)
      goto fail;
    p->ready = 1;
  }
  return r->procs[i]->ready ? r->procs[i] : NULL;
fail:
  oom(r);
  return NULL;
}

static struct rdomain *dom_of(struct report *r, struct rproc *p, int d) {
  if (d < 0 || d >= p->ndomains) return NULL;
  struct rdomain *x = &p->dom[d];
  if (!x->gc && !(x->gc = tl_series(&r->tl))) {
    oom(r);
    return NULL;
  }
  return x;
}

static void saw(struct report *r, struct rdomain *d, uint64_t ts) {
  if (!r->any_ts || ts < r->first_ts) r->first_ts = ts;
  if (!r->any_ts || ts > r->last_ts) r->last_ts = ts;
  r->any_ts = 1;
  if (d) {
    if (d->lost_unplaced) {
      tl_add(&r->tl, r->lost, ts, (double)d->lost_unplaced, 0);
      d->lost_unplaced = 0;
    }
    if (!d->seen || ts < d->from) d->from = ts;
    if (!d->seen || ts > d->to) d->to = ts;
    d->seen = 1;
    d->last_ts = ts;
    d->read++;
  }
}

static void on_pause(void *arg, int domain, uint64_t duration) {
  struct pause_arg *a = arg;
  hist_record(a->r->gc, duration);
  if (domain >= 0 && domain < a->p->ndomains) {
    a->p->dom[domain].pauses++;
    a->p->dom[domain].gc_ns += duration;
  }
}

/* The index of the named thing of kind `k` that id `id` of the current
 * file names, made on first sight; -1 when out of memory. */
static int named_of(struct report *r, struct rproc *p, int k, int id,
                    const char *name) {
  id &= N_IDS - 1;
  if (p->ids[k][id]) return p->ids[k][id] - 1;
  char buf[TOOL_NAME_BUF];
  if (k == N_COUNTER)
    name = tool_event_name(r->src->cursor, TOOL_NAME_COUNTER, id, buf);
  else
    name = tool_name_or(buf, name, tool_name_fallback[TOOL_NAME_USER], id);
  int i;
  for (i = 0; i < r->nnames; i++)
    if (r->names[i].kind == k && !strcmp(r->names[i].name, name)) break;
  if (i == r->nnames) {
    if (r->nnames == r->capnames) {
      int n = r->capnames ? r->capnames * 2 : 32;
      struct named *v = realloc(r->names, (size_t)n * sizeof *v);
      if (!v) goto fail;
      r->names = v;
      r->capnames = n;
    }
    struct named *x = &r->names[i];
    memset(x, 0, sizeof *x);
    x->kind = k;
    if (!(x->name = strdup(name))) goto fail;
    if (k == N_SPAN && !(x->tl = tl_series(&r->tl))) goto fail;
    r->nnames++;
  }
  p->ids[k][id] = i + 1;
  return i;
fail:
  oom(r);
  return -1;
}

/* Everything open on the domain is cut: a loss, or recording paused. */
static void cut(struct report *r, struct rproc *p, int domain) {
  pauses_cut(&p->pauses, domain);
  spans_cut(&p->spans, domain);
  struct rdomain *d = dom_of(r, p, domain);
  if (d) d->depth = 0;
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  struct report *r = data;
  struct rproc *p = proc_of(r);
  if (!p) return 0;
  struct rdomain *d = dom_of(r, p, domain);
  saw(r, d, ts);
  r->any_phase = 1;
  pauses_begin(&p->pauses, domain, ts, phase);
  if (d && d->depth++ == 0) d->open_ts = ts;
  return 1;
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  struct report *r = data;
  struct rproc *p = proc_of(r);
  if (!p) return 0;
  struct rdomain *d = dom_of(r, p, domain);
  saw(r, d, ts);
  uint64_t start;
  pauses_end(&p->pauses, domain, ts, phase, &start);
  if (d && d->depth > 0 && --d->depth == 0)
    tl_interval(&r->tl, d->gc, d->open_ts, ts);
  return 1;
}

static void sample(struct report *r, int k, int id, const char *name,
                   uint64_t ts, uint64_t value) {
  struct rproc *p = proc_of(r);
  if (!p) return;
  int i = named_of(r, p, k, id, name);
  if (i < 0) return;
  struct named *x = &r->names[i];
  if (!x->count || value < x->min) x->min = value;
  if (!x->count || value > x->max) x->max = value;
  /* Ties go to the later read, as in stats. */
  if (!x->count || ts >= x->last_ts) {
    x->last = value;
    x->last_ts = ts;
  }
  x->count++;
  int pi = r->src->multi ? r->src->proc : 0;
  if (pi >= x->nper) {
    int n = pi + 8;
    struct series **v = realloc(x->per, (size_t)n * sizeof *v);
    if (!v) {
      oom(r);
      return;
    }
    memset(v + x->nper, 0, (size_t)(n - x->nper) * sizeof *v);
    x->per = v;
    x->nper = n;
  }
  if (!x->per[pi] && !(x->per[pi] = tl_series(&r->tl))) {
    oom(r);
    return;
  }
  tl_add(&r->tl, x->per[pi], ts, 0, value);
}

static int on_counter(void *data, int domain, uint64_t ts, int counter,
                      uint64_t value) {
  struct report *r = data;
  struct rproc *p = proc_of(r);
  if (!p) return 0;
  saw(r, dom_of(r, p, domain), ts);
  sample(r, N_COUNTER, counter, NULL, ts, value);
  return 1;
}

static int on_alloc(void *data, int domain, uint64_t ts,
                    const uint64_t *buckets) {
  (void)buckets;
  struct report *r = data;
  struct rproc *p = proc_of(r);
  if (p) saw(r, dom_of(r, p, domain), ts);
  return p != NULL;
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  (void)value, (void)has_data;
  struct report *r = data;
  struct rproc *p = proc_of(r);
  if (!p) return 0;
  struct rdomain *d = dom_of(r, p, domain);
  saw(r, d, ts);
  tool_source_lifecycle(r->src, kind);
  pauses_lifecycle(&p->pauses, domain, kind);
  spans_lifecycle(&p->spans, domain, kind);
  if (d && kind == EVENTRING_LIFECYCLE_RING_PAUSE) d->depth = 0;
  if (d && (kind == EVENTRING_LIFECYCLE_DOMAIN_SPAWN ||
            kind == EVENTRING_LIFECYCLE_DOMAIN_TERMINATE))
    d->depth = 0;
  return 1;
}

static int on_user_unit(void *data, int domain, uint64_t ts, int id,
                        const char *name) {
  struct report *r = data;
  struct rproc *p = proc_of(r);
  if (!p) return 0;
  saw(r, dom_of(r, p, domain), ts);
  int i = named_of(r, p, N_UNIT, id, name);
  if (i >= 0) r->names[i].count++;
  return 1;
}

static int on_user_int(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t value) {
  struct report *r = data;
  struct rproc *p = proc_of(r);
  if (!p) return 0;
  saw(r, dom_of(r, p, domain), ts);
  sample(r, N_INT, id, name, ts, (uint64_t)value);
  return 1;
}

static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  struct report *r = data;
  struct rproc *p = proc_of(r);
  if (!p) return 0;
  saw(r, dom_of(r, p, domain), ts);
  if (!is_end) {
    spans_begin(&p->spans, domain, ts, id, name);
    return 1;
  }
  spans_end(&p->spans, domain, ts, id, name);
  int i = named_of(r, p, N_SPAN, id, name);
  if (i < 0) return 0;
  r->names[i].count++;
  tl_add(&r->tl, r->names[i].tl, ts, 1, 0);
  return 1;
}

static int on_thread(void *data, int domain, uint64_t ts, int64_t thread,
                     uint64_t tid, const char *name, size_t len) {
  (void)ts, (void)name, (void)len;
  struct report *r = data;
  struct rproc *p = proc_of(r);
  if (p) spans_thread(&p->spans, domain, thread, tid);
  return p != NULL;
}

static int on_user_custom(void *data, int domain, uint64_t ts, int id,
                          const char *name, const void *bytes, size_t len) {
  (void)id, (void)name, (void)bytes, (void)len;
  struct report *r = data;
  struct rproc *p = proc_of(r);
  if (p) saw(r, dom_of(r, p, domain), ts);
  return p != NULL;
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct report *r = data;
  tool_source_lost(r->src, domain, count);
  struct rproc *p = proc_of(r);
  if (!p) return 0;
  cut(r, p, domain);
  /* A loss has no time of its own: it is marked at the last event read
   * on its domain, or before any, at the domain's first event. */
  struct rdomain *d = dom_of(r, p, domain);
  if (d && d->seen)
    tl_add(&r->tl, r->lost, d->last_ts, (double)count, 0);
  else if (d)
    d->lost_unplaced += count;
  return 1;
}

/* The events overwritten before a ring's window: no loss, but what was
 * open at the window's start is cut. */
static int on_window(void *data, int domain, uint64_t before) {
  struct report *r = data;
  tool_source_window(r->src, domain, before);
  struct rproc *p = proc_of(r);
  if (!p) return 0;
  cut(r, p, domain);
  return 1;
}

/* ------------------------------------------------------------------ */
/* The page.                                                            */

static const char style[] =
    "body{font:14px sans-serif;margin:24px;color:#222;max-width:940px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px;"
    "border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:8px 0}"
    "td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}"
    "th:first-child,td.name{text-align:left}"
    ".chart{display:block;margin:8px 0;background:#fcfcfc}"
    ".chart .axes path{stroke:#444;fill:none}"
    ".chart path.grid{stroke:#e4e4e4}"
    ".chart .tick{font-size:10px;fill:#444}"
    ".chart .name,.chart .legend{font-size:11px;fill:#444}"
    ".chart .title{font-size:13px;font-weight:bold}"
    ".chart .bar{fill:#0072b2}"
    ".chart .line{fill:none;stroke-width:1.5}"
    ".chart .mark{stroke:#d00;stroke-width:1;stroke-dasharray:3 2}"
    ".note{color:#666;font-size:12px}";

static void label_seconds(char *buf, double v) {
  snprintf(buf, 32, "%g s", v);
}
static void label_percent(char *buf, double v) {
  snprintf(buf, 32, "%g%%", v);
}
static void label_number(char *buf, double v) {
  if (v >= 1e9 || v <= -1e9) snprintf(buf, 32, "%gG", v / 1e9);
  else if (v >= 1e6 || v <= -1e6) snprintf(buf, 32, "%gM", v / 1e6);
  else if (v >= 1e4 || v <= -1e4) snprintf(buf, 32, "%gk", v / 1e3);
  else snprintf(buf, 32, "%g", v);
}

/* A row of the summary: its label, its value in readable form, and the
 * exact number in data-value under data-key. */
static void row(FILE *o, const char *key, const char *label,
                const char *shown, uint64_t value) {
  fputs("<tr data-key=\"", o);
  svg_escape(o, key);
  fprintf(o, "\" data-value=\"%" PRIu64 "\"><th>", value);
  svg_escape(o, label);
  fputs("</th><td>", o);
  svg_escape(o, shown);
  fputs("</td></tr>\n", o);
}

static void row_ns(FILE *o, const char *key, const char *label, uint64_t ns) {
  char b[32];
  row(o, key, label, analysis_duration(b, ns), ns);
}

static void row_n(FILE *o, const char *key, const char *label, uint64_t n) {
  char b[32];
  snprintf(b, sizeof b, "%" PRIu64, n);
  row(o, key, label, b, n);
}

/* The x coordinate, seconds from the first event, of the middle of bin
 * i. */
static double bin_x(const struct report *r, int i) {
  double mid = (double)r->tl.origin + ((double)i + 0.5) * (double)r->tl.width;
  return (mid - (double)r->first_ts) / 1e9;
}

static double run_seconds(const struct report *r) {
  return r->any_ts ? (double)(r->last_ts - r->first_ts) / 1e9 : 0;
}

/* Marks the bins in which events were lost. */
static void lost_marks(const struct report *r, struct svg_plot *pl) {
  for (int i = 0; i <= r->tl.hi; i++) {
    const struct bin *b = &r->lost->b[i];
    if (b->sum <= 0) continue;
    char tip[96];
    snprintf(tip, sizeof tip, "%.0f %s lost", b->sum,
             tool_lost_unit(r->src->cursor));
    double x = bin_x(r, i);
    if (x < pl->x0) x = pl->x0;
    svg_mark(pl, x, tip);
  }
}

/* A count on the log scale of dist_chart(): 1 at a count of 1, 2 at 10,
 * 3 at 100..., 0 for none, so that a bin of one event among thousands
 * still shows.  (The command links without libm: histogram.c.) */
static double log_count(uint64_t n) {
  if (n == 0) return 0;
  double v = 1, x = (double)n;
  while (x >= 10) x /= 10, v++;
  /* log10 of x in [1, 10), to within a pixel: the series of
   * ln(x) = 2 atanh((x - 1) / (x + 1)). */
  double t = (x - 1) / (x + 1), t2 = t * t, sum = 0, term = t;
  for (int k = 1; k < 40; k += 2, term *= t2) sum += term / k;
  return v + 2 * sum / 2.302585092994046;
}

static void label_log_count(char *buf, double v) {
  buf[0] = 0;
  if (v == 0) {
    snprintf(buf, 32, "0");
  } else if (v >= 1 && v == (double)(int)v) {
    uint64_t n = 1;
    for (int i = 1; i < (int)v && i < 20; i++) n *= 10;
    label_number(buf, (double)n);
  }
}

/* The distribution of `h` as bars over its power-of-two bins, their
 * heights on a log scale of counts: the tail of a distribution (a few
 * long pauses beside thousands of short ones) is what the chart is
 * read for, and on a linear scale it would not show. */
static void dist_chart(FILE *o, const struct histogram *h, const char *title) {
  struct bars b;
  bars_bin(h, &b);
  struct svg_plot pl;
  svg_open(&pl, o, 860, 240, 0, b.n ? b.n : 1, 0, log_count(b.peak) + 0.25,
           title);
  svg_axes(&pl, NULL, label_log_count, "duration (power-of-two bins)",
           "count (log scale)");
  char lo[32], hi[32], tip[128];
  for (int i = 0; i < b.n; i++) {
    analysis_duration(lo, b.lo[i]);
    analysis_duration(hi, bars_hi(&b, i));
    snprintf(tip, sizeof tip, "%s .. %s: %" PRIu64, lo, hi, b.count[i]);
    svg_bar(&pl, i, i + 1, log_count(b.count[i]), tip);
    /* Every bin is labelled when they fit, else every other. */
    if (b.n <= 14 || i % 2 == 0) svg_xlabel(&pl, i, lo);
  }
  svg_close(&pl);
}

static void percentile_table(FILE *o, const struct histogram *h,
                             const char *key) {
  static const struct {
    const char *label, *key;
    double p;
  } ps[] = {{"50", "p50", 50},   {"90", "p90", 90},        {"99", "p99", 99},
            {"99.9", "p99.9", 99.9}, {"max", "max", 100}};
  fputs("<table><tr><th>percentile</th>", o);
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
    fprintf(o, "<th>%s</th>", ps[i].label);
  fputs("</tr><tr><td class=\"name\">duration</td>", o);
  char b[32];
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    uint64_t v = hist_percentile(h, ps[i].p);
    fputs("<td data-key=\"", o);
    svg_escape(o, key);
    fprintf(o, ".%s\" data-value=\"%" PRIu64 "\">%s</td>", ps[i].key, v,
            analysis_duration(b, v));
  }
  fputs("</tr></table>\n", o);
}

/* A domain's label: "3", or "pid 1234 domain 3" with several
 * processes. */
static void domain_label(const struct report *r, int proc, int d, char *buf,
                         size_t size) {
  if (r->src->multi && r->src->nprocs > 1)
    snprintf(buf, size, "pid %ld domain %d", (long)r->src->procs[proc]->pid,
             d);
  else
    snprintf(buf, size, "%d", d);
}

static void gc_section(FILE *o, struct report *r) {
  const struct histogram *h = r->gc;
  fputs("<h2>GC pauses</h2>\n", o);
  if (!r->any_phase) {
    /* A program without a GC (a C program that records no runtime
     * phase): nothing to chart. */
    fputs("<p class=\"note\" id=\"no-gc\">No GC events: the program "
          "recorded no runtime phase.</p>\n", o);
    return;
  }
  if (hist_count(h) == 0) {
    fputs("<p>No GC pause was read.</p>\n", o);
  } else {
    dist_chart(o, h, "GC pause distribution");
    percentile_table(o, h, "gc");
  }
  /* Per domain: the table, and the time line of the busiest ones. */
  fputs("<table><tr><th>domain</th><th>pauses</th><th>GC time</th>"
        "<th>share of wall time</th></tr>\n", o);
  double wall = run_seconds(r) * 1e9;
  struct {
    int proc, d;
    uint64_t gc;
  } top[MAX_LINES];
  int ntop = 0, more = 0;
  for (int i = 0; i < r->nprocs; i++) {
    struct rproc *p = r->procs[i];
    if (!p || !p->ready) continue;
    for (int d = 0; d < p->ndomains; d++) {
      struct rdomain *x = &p->dom[d];
      if (!x->seen) continue;
      char label[96], b[32], key[128];
      domain_label(r, i, d, label, sizeof label);
      snprintf(key, sizeof key, "gc.domain.%s", label);
      fputs("<tr><td class=\"name\">", o);
      svg_escape(o, label);
      fprintf(o, "</td><td data-key=\"%s.pauses\" data-value=\"%" PRIu64
                 "\">%" PRIu64 "</td><td data-key=\"%s.total_ns\" "
                 "data-value=\"%" PRIu64 "\">%s</td><td>%.2f%%</td></tr>\n",
              key, x->pauses, x->pauses, key, x->gc_ns,
              analysis_duration(b, x->gc_ns),
              wall > 0 ? 100.0 * (double)x->gc_ns / wall : 0.0);
      /* Keep the MAX_LINES domains with the most GC time, busiest
       * first. */
      if (ntop == MAX_LINES && top[ntop - 1].gc >= x->gc_ns) {
        more++;
        continue;
      }
      if (ntop == MAX_LINES) more++;
      int k = ntop < MAX_LINES ? ntop++ : MAX_LINES - 1;
      top[k].proc = i, top[k].d = d, top[k].gc = x->gc_ns;
      for (; k > 0 && top[k].gc > top[k - 1].gc; k--) {
        __typeof__(top[0]) t = top[k];
        top[k] = top[k - 1];
        top[k - 1] = t;
      }
    }
  }
  fputs("</table>\n", o);
  if (r->tl.hi < 0) return;
  /* The lines drawn in process and domain order, so that a process has
   * the colour it has in the counters' charts. */
  for (int i = 1; i < ntop; i++)
    for (int k = i; k > 0 && (top[k].proc < top[k - 1].proc ||
                              (top[k].proc == top[k - 1].proc &&
                               top[k].d < top[k - 1].d));
         k--) {
      __typeof__(top[0]) t = top[k];
      top[k] = top[k - 1];
      top[k - 1] = t;
    }
  /* The share of each bin, of the part of it within the domain's life:
   * a domain (a process forked later, a domain spawned late) has no line
   * before its first event or after its last. */
  struct svg_plot pl;
  double x1 = run_seconds(r);
  svg_open(&pl, o, 860, 260, 0, x1, 0, 100,
           "GC time share over time, per domain");
  char labels[MAX_LINES][112];
  const char *names[MAX_LINES];
  int colours[MAX_LINES];
  for (int k = 0; k < ntop; k++) {
    char d[96];
    domain_label(r, top[k].proc, top[k].d, d, sizeof d);
    /* "pid 12 domain 0" with several processes, else "domain 0". */
    snprintf(labels[k], sizeof labels[k], "%s%s",
             r->src->multi && r->src->nprocs > 1 ? "" : "domain ", d);
    names[k] = labels[k];
    colours[k] = k;
  }
  svg_legend(&pl, names, colours, ntop);
  svg_axes(&pl, label_seconds, label_percent, "time since the first event",
           "% of the bin in GC");
  double xs[TL_BINS], ys[TL_BINS];
  for (int k = 0; k < ntop; k++) {
    const struct rdomain *dm = &r->procs[top[k].proc]->dom[top[k].d];
    const struct series *s = dm->gc;
    int n = 0;
    for (int i = 0; i <= r->tl.hi; i++) {
      uint64_t lo = r->tl.origin + (uint64_t)i * r->tl.width;
      uint64_t hi = lo > UINT64_MAX - r->tl.width ? UINT64_MAX
                                                  : lo + r->tl.width;
      if (lo < dm->from) lo = dm->from;
      if (hi > dm->to) hi = dm->to;
      if (hi <= lo) continue;
      xs[n] = bin_x(r, i);
      if (xs[n] < 0) xs[n] = 0;
      if (xs[n] > x1) xs[n] = x1;
      double share = 100.0 * s->b[i].sum / (double)(hi - lo);
      ys[n++] = share > 100 ? 100 : share;
    }
    svg_line(&pl, xs, ys, n, k);
  }
  lost_marks(r, &pl);
  svg_close(&pl);
  if (more)
    fprintf(o, "<p class=\"note\">%d more domains are in the table, not "
               "drawn.</p>\n", more);
}

/* The minimum and maximum of each bin of a counter or int: two lines,
 * or with several processes a pair of lines of one colour for each (at
 * most MAX_LINES of them). */
static void sample_chart(FILE *o, struct report *r, const struct named *x) {
  static double xs[MAX_LINES][TL_BINS], lo[MAX_LINES][TL_BINS],
      hi[MAX_LINES][TL_BINS];
  int np[MAX_LINES], proc[MAX_LINES], nlines = 0, more = 0;
  double top = 0, bottom = 0;
  int first = 1;
  for (int pi = 0; pi < x->nper; pi++) {
    const struct series *s = x->per[pi];
    if (!s) continue;
    if (nlines == MAX_LINES) {
      more++;
      continue;
    }
    int k = nlines++, n = 0;
    proc[k] = pi;
    for (int i = 0; i <= r->tl.hi; i++) {
      const struct bin *b = &s->b[i];
      /* Bins without a sample are left out: the line joins the samples
       * on either side, as the value held between them. */
      if (!b->n) continue;
      xs[k][n] = bin_x(r, i);
      if (xs[k][n] < 0) xs[k][n] = 0;
      lo[k][n] = (double)b->min;
      hi[k][n] = (double)b->max;
      if (x->kind == N_INT)
        lo[k][n] = (double)(int64_t)b->min, hi[k][n] = (double)(int64_t)b->max;
      if (first || hi[k][n] > top) top = hi[k][n];
      if (first || lo[k][n] < bottom) bottom = lo[k][n];
      first = 0;
      n++;
    }
    np[k] = n;
  }
  if (bottom > 0) bottom = 0;
  struct svg_plot pl;
  char title[160];
  snprintf(title, sizeof title, "%s%s%s", x->kind == N_INT ? "user int " : "",
           x->name, nlines > 1 ? " (per process: minimum and maximum per bin)"
                               : "");
  svg_open(&pl, o, 860, 200, 0, run_seconds(r), bottom, top, title);
  char labels[MAX_LINES][96];
  const char *names[MAX_LINES];
  int colours[MAX_LINES];
  if (nlines > 1) {
    for (int k = 0; k < nlines; k++) {
      tool_proc_label(r->src->procs[proc[k]], labels[k], sizeof labels[k]);
      names[k] = labels[k];
      colours[k] = k;
    }
    svg_legend(&pl, names, colours, nlines);
  } else {
    static const char *const two[] = {"maximum per bin", "minimum per bin"};
    static const int c2[] = {0, 1};
    svg_legend(&pl, two, c2, nlines ? 2 : 0);
  }
  svg_axes(&pl, label_seconds, label_number, "time since the first event",
           NULL);
  for (int k = 0; k < nlines; k++) {
    svg_line(&pl, xs[k], hi[k], np[k], nlines > 1 ? k : 0);
    svg_line(&pl, xs[k], lo[k], np[k], nlines > 1 ? k : 1);
  }
  lost_marks(r, &pl);
  svg_close(&pl);
  if (more)
    fprintf(o, "<p class=\"note\">%d more processes are not drawn.</p>\n",
            more);
}

static void counters_section(FILE *o, struct report *r) {
  int any = 0;
  for (int i = 0; i < r->nnames; i++)
    any |= r->names[i].kind == N_COUNTER || r->names[i].kind == N_INT;
  fputs("<h2>Counters over time</h2>\n", o);
  if (!any) {
    fputs("<p>No counter was read.</p>\n", o);
    return;
  }
  fputs("<table><tr><th>counter</th><th>samples</th><th>min</th>"
        "<th>max</th><th>last</th></tr>\n", o);
  for (int i = 0; i < r->nnames; i++) {
    const struct named *x = &r->names[i];
    if (x->kind != N_COUNTER && x->kind != N_INT) continue;
    int s = x->kind == N_INT;
    fputs("<tr><td class=\"name\">", o);
    svg_escape(o, x->name);
    fprintf(o, "%s</td><td>%" PRIu64 "</td>", s ? " (user int)" : "",
            x->count);
    const uint64_t v[3] = {x->min, x->max, x->last};
    static const char *const what[3] = {"min", "max", "last"};
    for (int k = 0; k < 3; k++) {
      fprintf(o, "<td data-key=\"%s.", kind_names[x->kind]);
      svg_escape(o, x->name);
      if (s)
        fprintf(o, ".%s\" data-value=\"%" PRId64 "\">%" PRId64 "</td>",
                what[k], (int64_t)v[k], (int64_t)v[k]);
      else
        fprintf(o, ".%s\" data-value=\"%" PRIu64 "\">%" PRIu64 "</td>",
                what[k], v[k], v[k]);
    }
    fputs("</tr>\n", o);
  }
  fputs("</table>\n", o);
  if (r->tl.hi < 0) return;
  for (int i = 0; i < r->nnames; i++)
    if (r->names[i].kind == N_COUNTER || r->names[i].kind == N_INT)
      sample_chart(o, r, &r->names[i]);
}

/* The rate series of span name `name`, or NULL. */
static const struct series *span_rate(const struct report *r,
                                      const char *name) {
  for (int i = 0; i < r->nnames; i++)
    if (r->names[i].kind == N_SPAN && !strcmp(r->names[i].name, name))
      return r->names[i].tl;
  return NULL;
}

static void spans_section(FILE *o, struct report *r) {
  fputs("<h2>User spans</h2>\n", o);
  if (r->nsp == 0) {
    fputs("<p>No user span was read.</p>\n", o);
    return;
  }
  fputs("<table><tr><th>span</th><th>count</th><th>total</th><th>mean</th>"
        "<th>p50</th><th>p99</th><th>max</th><th>cut</th>"
        "<th>unfinished</th><th>unmatched</th></tr>\n", o);
  char b[32];
  for (size_t i = 0; i < r->nsp; i++) {
    const struct span_stats *x = &r->sp[i];
    const struct span_stat *st = &x->all;
    uint64_t n = st->hist ? hist_count(st->hist) : 0;
    fputs("<tr><td class=\"name\">", o);
    svg_escape(o, x->name);
    fputs("</td>", o);
    const struct {
      const char *key;
      uint64_t v;
      int ns;
    } cells[] = {
        {"count", n, 0},
        {"total_ns", st->total, 1},
        {"mean_ns", n ? (st->total + n / 2) / n : 0, 1},
        {"p50_ns", n ? hist_percentile(st->hist, 50) : 0, 1},
        {"p99_ns", n ? hist_percentile(st->hist, 99) : 0, 1},
        {"max_ns", n ? hist_max(st->hist) : 0, 1},
        {"cut", st->cut, 0},
        {"unfinished", st->unfinished, 0},
        {"unmatched_ends", st->unmatched, 0},
    };
    for (size_t k = 0; k < sizeof cells / sizeof cells[0]; k++) {
      fputs("<td data-key=\"span.", o);
      svg_escape(o, x->name);
      fprintf(o, ".%s\" data-value=\"%" PRIu64 "\">", cells[k].key,
              cells[k].v);
      if (cells[k].ns && n)
        fputs(analysis_duration(b, cells[k].v), o);
      else if (cells[k].ns)
        fputs("&ndash;", o);
      else
        fprintf(o, "%" PRIu64, cells[k].v);
      fputs("</td>", o);
    }
    fputs("</tr>\n", o);
  }
  fputs("</table>\n", o);
  int drawn = 0, left = 0;
  for (size_t i = 0; i < r->nsp; i++) {
    const struct span_stats *x = &r->sp[i];
    const struct series *rate = span_rate(r, x->name);
    if (!x->all.hist || hist_count(x->all.hist) == 0 || !rate) continue;
    if (drawn == MAX_SPAN_CHARTS) {
      left++;
      continue;
    }
    drawn++;
    char title[160];
    snprintf(title, sizeof title, "%s: duration distribution", x->name);
    dist_chart(o, x->all.hist, title);
    /* The rate: ends per second in each bin. */
    double xs[TL_BINS], ys[TL_BINS], top = 0;
    int n = 0;
    for (int j = 0; j <= r->tl.hi; j++) {
      xs[n] = bin_x(r, j);
      if (xs[n] < 0) xs[n] = 0;
      ys[n] = rate->b[j].sum / ((double)r->tl.width / 1e9);
      if (ys[n] > top) top = ys[n];
      n++;
    }
    snprintf(title, sizeof title, "%s: rate over time", x->name);
    struct svg_plot pl;
    svg_open(&pl, o, 860, 180, 0, run_seconds(r), 0, top, title);
    svg_axes(&pl, label_seconds, label_number, "time since the first event",
             "ends per second");
    svg_line(&pl, xs, ys, n, 2);
    lost_marks(r, &pl);
    svg_close(&pl);
  }
  if (left)
    fprintf(o, "<p class=\"note\">%d more span names are in the table, not "
               "drawn.</p>\n", left);
}

static void units_section(FILE *o, struct report *r) {
  int any = 0;
  for (int i = 0; i < r->nnames; i++) any |= r->names[i].kind == N_UNIT;
  if (!any) return;
  fputs("<h2>User events</h2>\n<table><tr><th>event</th><th>count</th>"
        "<th>per second</th></tr>\n", o);
  double secs = run_seconds(r);
  for (int i = 0; i < r->nnames; i++) {
    struct named *x = &r->names[i];
    if (x->kind != N_UNIT) continue;
    fputs("<tr><td class=\"name\">", o);
    svg_escape(o, x->name);
    fputs("</td><td data-key=\"unit.", o);
    svg_escape(o, x->name);
    fprintf(o, ".count\" data-value=\"%" PRIu64 "\">%" PRIu64
               "</td><td>%.4g</td></tr>\n",
            x->count, x->count, secs > 0 ? (double)x->count / secs : 0.0);
  }
  fputs("</table>\n", o);
}

/* What the writer of `c`'s file recorded of itself: its OCaml version
 * and its labels, one line (none when the file says neither); `who`
 * names the process when the page has several. */
static void writer_meta(FILE *o, const eventring_cursor *c, const char *who) {
  const char *v = c ? eventring_cursor_ocaml_version(c) : NULL, *n, *val;
  int labels = c && eventring_cursor_label(c, 0, &n, &val) == 1;
  if (!v && !labels) return;
  fputs("<p class=\"note writer\">", o);
  if (who) {
    svg_escape(o, who);
    fputs(": ", o);
  }
  if (v) {
    fputs("OCaml ", o);
    svg_escape(o, v);
  }
  for (int i = 0; eventring_cursor_label(c, i, &n, &val) == 1; i++) {
    fputs(i ? ", " : v ? " &middot; labels: " : "labels: ", o);
    svg_escape(o, n);
    fputc('=', o);
    svg_escape(o, val);
  }
  fputs("</p>\n", o);
}

static void page(FILE *o, struct report *r) {
  const struct tool_source *src = r->src;
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<title>eventring report: ", o);
  /* The program the file records (the first that has a name, with
   * "and N more" for other programs), else the file. */
  const char *what = src->name[0] ? src->name : NULL;
  int others = 0;
  for (int i = 0; src->multi && i < src->nprocs; i++) {
    const char *n = src->procs[i]->name;
    if (!n[0]) continue;
    if (!what) what = n;
    else if (strcmp(n, what)) {
      int j = 0;
      while (j < i && strcmp(src->procs[j]->name, n)) j++;
      others += j == i;
    }
  }
  char more[64] = "";
  if (others)
    snprintf(more, sizeof more, " and %d other program%s", others,
             others > 1 ? "s" : "");
  if (!what) what = src->path;
  svg_escape(o, what);
  fprintf(o, "%s</title>\n<style>%s</style></head>\n<body>\n"
             "<h1>eventring report: ", more, style);
  svg_escape(o, what);
  fprintf(o, "%s</h1>\n<p class=\"note\">", more);
  if (src->multi && src->nprocs > 1)
    fprintf(o, "%d processes; ", src->nprocs);
  /* A command's ring file is a temporary one: the command says more.
   * Its arguments may hold secrets, and a report is passed around: they
   * are shown only when asked for, as the ring file records them. */
  if (src->cmd) {
    fputs("command: ", o);
    svg_escape(o, src->cmd[0]);
    const char *all = getenv("EVENTRING_RECORD_CMDLINE");
    if (all && *all && strcmp(all, "0") != 0) {
      for (char **a = src->cmd + 1; *a; a++) {
        fputc(' ', o);
        svg_escape(o, *a);
      }
    } else if (src->cmd[1]) {
      fputs(" (arguments not shown; EVENTRING_RECORD_CMDLINE=1 shows them)",
            o);
    }
  } else {
    svg_escape(o, src->path);
  }
  fputs(" &middot; written by eventring " EVENTRING_VERSION
        " &middot; no script, nothing loaded from elsewhere</p>\n", o);
  if (!src->multi) {
    writer_meta(o, src->cursor, NULL);
  } else {
    for (int i = 0; i < src->nprocs; i++) {
      char who[128];
      writer_meta(o, src->procs[i]->cursor,
                  src->nprocs > 1
                      ? tool_proc_label(src->procs[i], who, sizeof who)
                      : NULL);
    }
  }

  fputs("<h2>Summary</h2>\n<table id=\"summary\">\n", o);
  uint64_t wall = r->any_ts ? r->last_ts - r->first_ts : 0;
  row_ns(o, "wall_ns", "wall time (first to last event)", wall);
  row_n(o, "events.read", "events read", src->events_read);
  char b[64];
  snprintf(b, sizeof b, "%" PRIu64 " %s", src->lost_total,
           tool_lost_unit(src->cursor));
  row(o, "events.lost", "lost", b, src->lost_total);
  uint64_t gc_total = 0, cutp = 0, unfinished = 0, markers = 0, unmatched = 0;
  for (int i = 0; i < r->nprocs; i++) {
    struct rproc *p = r->procs[i];
    if (!p || !p->ready) continue;
    for (int d = 0; d < p->ndomains; d++) gc_total += p->dom[d].gc_ns;
    cutp += p->pauses.cut;
    unfinished += p->pauses.unfinished;
    markers += p->pauses.markers;
    unmatched += p->pauses.unmatched;
  }
  if (!r->any_phase) {
    /* No GC: one row says so, rather than six rows of zeros. */
    row(o, "gc.pauses", "GC pauses", "none (no GC events)", 0);
  } else {
    row_n(o, "gc.pauses", "GC pauses", hist_count(r->gc));
    row_ns(o, "gc.total_ns", "GC time (sum of pauses)", gc_total);
    row_n(o, "gc.cut", "pauses cut by lost events", cutp);
    row_n(o, "gc.unfinished", "pauses unfinished", unfinished);
    row_n(o, "gc.unmatched_ends", "unmatched ends", unmatched);
    row_n(o, "gc.markers", "markers (not pauses)", markers);
  }
  fputs("</table>\n", o);
  if (src->lost_total)
    fputs("<p class=\"note\">Dashed red lines on the time lines mark where "
          "events were lost.</p>\n", o);

  gc_section(o, r);
  counters_section(o, r);
  spans_section(o, r);
  units_section(o, r);
  fputs("</body></html>\n", o);
}

/* ------------------------------------------------------------------ */

static void help(void) {
  printf("Usage: eventring report -o FILE.html [OPTION]... FILE.events...\n"
         "   or: eventring report -o FILE.html [OPTION]... --pid PID "
         "[--dir DIR]\n"
         "   or: eventring report -o FILE.html [OPTION]... --dir DIR\n"
         "   or: eventring report -o FILE.html [OPTION]... -- COMMAND "
         "[ARG]...\n"
         "Write one self-contained HTML page (inline SVG charts, no script)"
         " about a run:\n"
         "the GC pause distribution, GC time share over time per domain, "
         "counters over\n"
         "time, user span distributions and rates, lost events, and the "
         "summary tables.\n\n"
         "Options:\n"
         "  -o FILE, --output FILE\n"
         "                 write the page to FILE (required; '-': standard "
         "output)\n"
         "  --pid PID, --dir DIR, -f/--follow, --wait DUR, --drain-timeout "
         "DUR,\n"
         "  --ocaml50, --ocaml53, --domain N, --event GLOB, --kind KIND,\n"
         "  --since T, --until T, --last DUR\n"
         "                 as for eventring stats (the filters apply before"
         " the\n"
         "                 analysis)\n"
         "  -h, --help     print this help and exit\n\n"
         "Exit status: 0 success, 1 unreadable or malformed input, 2 bad "
         "usage;\n"
         "with a COMMAND, the command's status once the page is written.\n"
         "See eventring(1).\n");
}

static int open_source(int argc, char **argv, struct tool_source *src) {
  memset(src, 0, sizeof *src);
  static const struct option longopts[] = {
      TOOL_SOURCE_OPTIONS,
      TOOL_FILTER_OPTIONS,
      TOOL_OUTPUT_OPTION,
      {NULL, 0, NULL, 0},
  };
  const char *output = NULL;
  int c;
  while ((c = tool_getopt(argc, argv, ":fho:", longopts)) != -1) {
    if (c == 'o') {
      output = optarg;
    } else {
      int rc = tool_source_other(src, c, argv, HELP_REF, help);
      if (rc >= 0) return rc;
    }
  }
  if (!output)
    return tool_usage_error(HELP_REF, "give the page's file with -o FILE");
  int rc = tool_output_open_reading(output, HELP_REF, argv + optind,
                                    argc - optind);
  if (rc != TOOL_EXIT_OK) return rc;
  src->multi = 1;
  rc = tool_source_open(src, argc - optind, argv + optind, HELP_REF);
  return rc != TOOL_EXIT_OK ? rc : -1;
}

int tool_report(int argc, char **argv) {
  struct tool_source src;
  int rc = open_source(argc, argv, &src);
  if (rc >= 0) return rc;

  struct report r = {.src = &src};
  static const struct tool_handlers handlers = {
      .runtime_begin = on_begin,
      .runtime_end = on_end,
      .runtime_counter = on_counter,
      .alloc = on_alloc,
      .lifecycle = on_lifecycle,
      .user_unit = on_user_unit,
      .user_int = on_user_int,
      .user_span = on_user_span,
      .user_custom = on_user_custom,
      .lost_events = on_lost,
      .window = on_window,
      .thread = on_thread /* spans pair on their thread's track */};
  eventring_callbacks *cb = tool_callbacks_new(&handlers);
  r.gc = hist_create();
  r.lost = tl_series(&r.tl);
  if (!cb || !r.gc || !r.lost) {
    tool_error("out of memory");
    rc = TOOL_EXIT_INPUT;
    goto out;
  }
  rc = tool_source_read(&src, cb, &r);
  if (r.failed) rc = TOOL_EXIT_INPUT;
  if (rc == TOOL_EXIT_OK) {
    for (int i = 0; i < r.nprocs; i++) {
      struct rproc *p = r.procs[i];
      if (!p || !p->ready) continue;
      pauses_finish(&p->pauses);
      spans_finish(&p->spans);
      /* The total of every process, by name, as stats has it. */
      for (size_t k = 0; k < p->spans.n; k++) {
        const struct span_stats *sp = &p->spans.v[k];
        size_t j = 0;
        while (j < r.nsp && strcmp(r.sp[j].name, sp->name)) j++;
        if (j == r.nsp) {
          struct span_stats *v =
              realloc(r.sp, (r.nsp + 1) * sizeof *v);
          if (!v) {
            r.failed = 1;
            break;
          }
          r.sp = v;
          memset(&r.sp[r.nsp++], 0, sizeof *v);
        }
        if (span_stats_add(&r.sp[j], sp, 0) < 0) r.failed = 1;
      }
    }
    if (r.failed) {
      tool_error("out of memory");
      rc = TOOL_EXIT_INPUT;
      goto out;
    }
    page(stdout, &r);
    tool_source_lost_summary(&src, stderr);
  }
out:
  for (int i = 0; i < r.nprocs; i++) {
    struct rproc *p = r.procs[i];
    if (!p) continue;
    if (p->ready) {
      pauses_free(&p->pauses);
      spans_free(&p->spans);
    }
    free(p->dom);
    free(p);
  }
  free(r.procs);
  for (int i = 0; i < r.nnames; i++) {
    free(r.names[i].name);
    free(r.names[i].per);
  }
  for (size_t i = 0; i < r.nsp; i++) span_stats_free(&r.sp[i]);
  free(r.sp);
  free(r.names);
  for (int i = 0; i < r.tl.nall; i++) free(r.tl.all[i]);
  free(r.tl.all);
  hist_free(r.gc);
  eventring_callbacks_free(cb);
  tool_source_close(&src);
  int out = tool_output_finish();
  return rc != TOOL_EXIT_OK ? rc : out;
}
