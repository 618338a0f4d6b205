/* stats.c -- `eventring stats`: a summary of a ring file.
 *
 *   - Per runtime phase, by name: the number of begin events, and over
 *     the instances whose begin and end were both read (`completed`),
 *     the total, mean and maximum time.  Nested phases count for
 *     themselves: a minor collection inside a major slice adds to both.
 *   - The wall time, from the first to the last timestamp of any domain,
 *     and the time spent in GC: the sum of the pauses (outermost phases
 *     but markers, as `eventring latency` counts them; "markers" says how
 *     many were left out), per domain and in total, with
 *     its share: of the domain's lifetime (its first to its last event)
 *     for each domain, and of the sum of the domains' lifetimes for the
 *     total, so that domains collecting at once never add up past 100 %
 *     and a process that lived for part of the time (a child in a tree)
 *     weighs that part only.
 *   - Allocation bucket totals (the instrumented variant's alloc events),
 *     when there are any.
 *   - Each counter's last value (the one with the latest timestamp, in
 *     any domain), by name, and how many samples were read.
 *   - User events: how many of each name and kind.
 *   - Events read and lost, per domain; lost counts are in the cursor's
 *     unit (events for eventring's files, ring words for OCaml 5's).
 *     Events overwritten before the file was first read (a ring that had
 *     wrapped: a snapshot, a preserved file, a live file read late) are
 *     no loss: they are counted apart, as before the window, and the
 *     text says what the window holds.
 *
 * --json prints the same as one object:
 *
 *   {"wall_ns": N, "first_ts": N, "last_ts": N,
 *    "gc": {"total_ns": N, "share": X, "pauses": N, "cut": N,
 *           "unfinished": N, "unmatched_ends": N, "markers": N,
 *           "domains": [{"domain": D, "thread": S, "pauses": N,
 *                        "total_ns": N, "share": X}, ...]},
 *    "phases": [{"name": S, "count": N, "completed": N, "total_ns": N,
 *                "mean_ns": X, "max_ns": N, "p50_ns": N, "p99_ns": N,
 *                "buckets": [[N, N], ...]}, ...],
 *    "alloc": null | {"events": N, "buckets": [N x 20]},
 *    "counters": [{"name": S, "last": N, "samples": N, "domain": D}, ...],
 *    "user_events": [{"name": S, "kind": "unit"|"int"|"span"|"custom",
 *                     "count": N}, ...],
 *    "events": {"read": N, "lost": N, "lost_unit": "events"|"words",
 *               "before_window": N, "dropped": N, "malformed": N,
 *               "domains": [{"domain": D, "thread": S, "read": N,
 *                            "lost": N, "before_window": N}, ...]}}
 *
 * "thread" (the name the file records for the slot's holder) is there
 * when the file names one.
 *
 * first_ts and last_ts are null (and wall_ns 0) when no event was read.
 * Phases, counters and user events are listed in order of first
 * appearance of their id; domains that have no event and no loss are
 * left out.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"

#define HELP_REF "eventring stats --help"

/* Ids are 13 bits wide in the event header. */
#define N_IDS 8192

enum { U_UNIT, U_INT, U_SPAN, U_CUSTOM, U_KINDS };
static const char *const user_kinds[U_KINDS] = {"unit", "int", "span",
                                                "custom"};

struct phase_stat {
  uint64_t count, completed, total, max;
  int seen;
  struct histogram *hist; /* the completed instances' durations, or NULL */
};

struct counter_stat {
  uint64_t last, last_ts, samples, min, max;
  int domain;
  int seen;
};

/* A counter's or a user int's values in one domain (or in all). */
struct value_stat {
  uint64_t count, last_ts;
  int64_t min, max, last; /* counters' unsigned values as int64_t bits */
  double sum;
};

struct domain_stat {
  uint64_t read, lost, pauses, gc;
  uint64_t before;          /* overwritten before its window was read */
  uint64_t first_ts, last_ts; /* its first and last events, when read > 0 */
};

/* The statistics of one process. */
struct stats {
  struct tool_source *src;
  const eventring_cursor *cursor; /* its file, which names the ids */
  pid_t pid;
  const char *name;
  struct pauses pauses;
  int ndomains;
  struct domain_stat *domains;
  uint64_t first_ts, last_ts;
  int any_ts;
  /* Each table is indexed by id; the *_order arrays list the ids (for
   * user events: id * U_KINDS + kind) in order of first appearance. */
  struct phase_stat phases[N_IDS];
  int phase_order[N_IDS], nphases;
  struct counter_stat counters[N_IDS];
  int counter_order[N_IDS], ncounters;
  uint64_t user[N_IDS * U_KINDS];
  int user_order[N_IDS * U_KINDS], nusers;
  uint64_t alloc_events, alloc[EVENTRING_ALLOC_BUCKETS];
  /* User spans' durations (analysis.h), user ints' and counters' values
   * and unit events' counts per domain: each a table of ndomains
   * entries, made on the id's first event. */
  struct spans spans;
  struct value_stat *ints[N_IDS], *cdoms[N_IDS];
  int int_order[N_IDS], nints;
  uint64_t *units[N_IDS];
};

/* Every process's, by its index in src->procs. */
struct stats_set {
  struct tool_source *src;
  struct stats **per;
  int nper;
  int failed;
};

static void on_pause(void *arg, int domain, uint64_t duration);

/* The statistics of the process being read, made on its first event;
 * NULL when out of memory. */
static struct stats *cur(void *data) {
  struct stats_set *set = data;
  int i = set->src->proc;
  if (i >= set->nper) {
    int n = i + 8;
    struct stats **v = realloc(set->per, (size_t)n * sizeof *v);
    if (!v) goto oom;
    memset(v + set->nper, 0, (size_t)(n - set->nper) * sizeof *v);
    set->per = v;
    set->nper = n;
  }
  if (!set->per[i]) {
    struct stats *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    set->per[i] = s;
    const struct tool_proc *p = set->src->procs[i];
    s->src = set->src;
    s->cursor = p->cursor;
    s->pid = p->pid;
    s->name = p->name;
    s->ndomains = eventring_cursor_max_domains(p->cursor);
    s->domains = calloc((size_t)s->ndomains + 1, sizeof *s->domains);
    if (!s->domains ||
        pauses_init(&s->pauses, s->cursor, s->ndomains, on_pause, s) < 0 ||
        spans_init(&s->spans, s->cursor, s->ndomains, 0, NULL, 0) < 0)
      goto oom;
  }
  if (set->per[i]->spans.oom) goto oom;
  return set->per[i];
oom:
  if (!set->failed) tool_error("out of memory");
  set->failed = 1;
  return NULL;
}

/* Adds value `v` at `ts` to `t` (signed: compared as int64_t, else as
 * uint64_t). */
static void value_add(struct value_stat *t, uint64_t ts, int64_t v,
                      int is_signed) {
  int lower = is_signed ? v < t->min : (uint64_t)v < (uint64_t)t->min;
  int higher = is_signed ? v > t->max : (uint64_t)v > (uint64_t)t->max;
  if (t->count == 0 || lower) t->min = v;
  if (t->count == 0 || higher) t->max = v;
  /* Ties go to the later read, which within a domain is the later
   * event. */
  if (t->count == 0 || ts >= t->last_ts) {
    t->last = v;
    t->last_ts = ts;
  }
  t->count++;
  t->sum += is_signed ? (double)v : (double)(uint64_t)v;
}

/* The per-domain table of `*slot` for `domain`, made on first use. */
static struct value_stat *value_of(struct stats *s, struct value_stat **slot,
                                   int domain) {
  if (domain < 0 || domain >= s->ndomains) return NULL;
  if (!*slot) *slot = calloc((size_t)s->ndomains, sizeof **slot);
  return *slot ? &(*slot)[domain] : NULL;
}

static void saw(struct stats *s, int domain, uint64_t ts) {
  if (!s->any_ts || ts < s->first_ts) s->first_ts = ts;
  if (!s->any_ts || ts > s->last_ts) s->last_ts = ts;
  s->any_ts = 1;
  if (domain < 0 || domain >= s->ndomains) return;
  struct domain_stat *d = &s->domains[domain];
  if (!d->read || ts < d->first_ts) d->first_ts = ts;
  if (!d->read || ts > d->last_ts) d->last_ts = ts;
  d->read++;
}

static void on_pause(void *arg, int domain, uint64_t duration) {
  struct stats *s = arg;
  if (domain >= 0 && domain < s->ndomains) {
    s->domains[domain].pauses++;
    s->domains[domain].gc += duration;
  }
}

static struct phase_stat *phase_stat(struct stats *s, int phase) {
  phase &= N_IDS - 1;
  struct phase_stat *p = &s->phases[phase];
  if (!p->seen) {
    p->seen = 1;
    s->phase_order[s->nphases++] = phase;
  }
  return p;
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  struct stats *s = cur(data);
  if (!s) return 0;
  saw(s, domain, ts);
  phase_stat(s, phase)->count++;
  pauses_begin(&s->pauses, domain, ts, phase);
  return 1;
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  struct stats *s = cur(data);
  if (!s) return 0;
  saw(s, domain, ts);
  uint64_t start;
  if (pauses_end(&s->pauses, domain, ts, phase, &start)) {
    uint64_t d = ts >= start ? ts - start : 0;
    struct phase_stat *p = phase_stat(s, phase);
    p->completed++;
    p->total += d;
    if (d > p->max) p->max = d;
    /* The percentiles and buckets of --json, which `eventring diff`
     * tests for noise. */
    if (!p->hist && !(p->hist = hist_create())) {
      struct stats_set *set = data;
      if (!set->failed) tool_error("out of memory");
      set->failed = 1;
      return 0;
    }
    hist_record(p->hist, d);
  }
  return 1;
}

static int on_counter(void *data, int domain, uint64_t ts, int counter,
                      uint64_t value) {
  struct stats *s = cur(data);
  if (!s) return 0;
  saw(s, domain, ts);
  counter &= N_IDS - 1;
  struct counter_stat *c = &s->counters[counter];
  if (!c->seen) {
    c->seen = 1;
    s->counter_order[s->ncounters++] = counter;
  }
  /* Ties go to the later read, which within a domain is the later
   * event. */
  if (c->samples == 0 || ts >= c->last_ts) {
    c->last = value;
    c->last_ts = ts;
    c->domain = domain;
  }
  if (c->samples == 0 || value < c->min) c->min = value;
  if (c->samples == 0 || value > c->max) c->max = value;
  c->samples++;
  struct value_stat *v = value_of(s, &s->cdoms[counter], domain);
  if (v) value_add(v, ts, (int64_t)value, 0);
  return 1;
}

static int on_alloc(void *data, int domain, uint64_t ts,
                    const uint64_t *buckets) {
  struct stats *s = cur(data);
  if (!s) return 0;
  saw(s, domain, ts);
  s->alloc_events++;
  for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++) s->alloc[i] += buckets[i];
  return 1;
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  (void)value, (void)has_data;
  struct stats *s = cur(data);
  if (!s) return 0;
  saw(s, domain, ts);
  tool_source_lifecycle(s->src, kind);
  pauses_lifecycle(&s->pauses, domain, kind);
  spans_lifecycle(&s->spans, domain, kind);
  return 1;
}

static int user(void *data, int domain, uint64_t ts, int id, int k) {
  struct stats *s = cur(data);
  if (!s) return 0;
  saw(s, domain, ts);
  int key = (id & (N_IDS - 1)) * U_KINDS + k;
  if (!s->user[key]) s->user_order[s->nusers++] = key;
  s->user[key]++;
  return 1;
}

static int on_user_unit(void *data, int domain, uint64_t ts, int id,
                        const char *name) {
  (void)name;
  struct stats *s = cur(data);
  if (!s) return 0;
  id &= N_IDS - 1;
  if (domain >= 0 && domain < s->ndomains) {
    if (!s->units[id])
      s->units[id] = calloc((size_t)s->ndomains, sizeof *s->units[id]);
    if (s->units[id]) s->units[id][domain]++;
  }
  return user(data, domain, ts, id, U_UNIT);
}

static int on_user_int(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t value) {
  (void)name;
  struct stats *s = cur(data);
  if (!s) return 0;
  id &= N_IDS - 1;
  if (!s->ints[id] && domain >= 0 && domain < s->ndomains)
    s->int_order[s->nints++] = id;
  struct value_stat *v = value_of(s, &s->ints[id], domain);
  if (v) value_add(v, ts, value, 1);
  return user(data, domain, ts, id, U_INT);
}

/* A span counts once, by its begin; its end is read but not counted.
 * Both go to the span tracker for the durations. */
static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  struct stats *s = cur(data);
  if (!s) return 0;
  if (is_end)
    spans_end(&s->spans, domain, ts, id, name);
  else
    spans_begin(&s->spans, domain, ts, id, name);
  if (!is_end) return user(data, domain, ts, id, U_SPAN);
  saw(s, domain, ts);
  return 1;
}

static int on_thread(void *data, int domain, uint64_t ts, int64_t thread,
                     uint64_t tid, const char *name, size_t len) {
  (void)ts, (void)name, (void)len;
  struct stats *s = cur(data);
  if (!s) return 0;
  spans_thread(&s->spans, domain, thread, tid);
  return 1;
}

static int on_user_custom(void *data, int domain, uint64_t ts, int id,
                          const char *name, const void *bytes, size_t len) {
  (void)name, (void)bytes, (void)len;
  return user(data, domain, ts, id, U_CUSTOM);
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct stats *s = cur(data);
  if (!s) return 0;
  tool_source_lost(s->src, domain, count);
  if (domain >= 0 && domain < s->ndomains) s->domains[domain].lost += count;
  pauses_cut(&s->pauses, domain);
  spans_cut(&s->spans, domain);
  return 1;
}

/* The oldest events of a ring had been overwritten before it was read:
 * no loss, but what was open then is cut by the window's start. */
static int on_window(void *data, int domain, uint64_t before) {
  struct stats *s = cur(data);
  if (!s) return 0;
  tool_source_window(s->src, domain, before);
  if (domain >= 0 && domain < s->ndomains)
    s->domains[domain].before += before;
  pauses_cut(&s->pauses, domain);
  spans_cut(&s->spans, domain);
  return 1;
}

/* ------------------------------------------------------------------ */
/* Reports.                                                             */
/*                                                                      */
/* A report is about one process, or the total of several: ids are      */
/* merged by the name each file gives them (two programs may register   */
/* different user events under one id), domains are listed per process. */

struct named_phase {
  const char *name;
  char buf[TOOL_NAME_BUF];
  uint64_t count, completed, total, max;
  struct histogram *hist; /* NULL: no completed instance */
};

struct named_counter {
  const char *name;
  char buf[TOOL_NAME_BUF];
  uint64_t last, last_ts, samples, min, max;
  int domain;
  struct value_stat *dom; /* per domain (one process's report), or NULL */
  int ndom;
};

struct named_int {
  const char *name;
  char buf[TOOL_NAME_BUF];
  struct value_stat all;
  struct value_stat *dom;
  int ndom;
};

struct named_unit {
  const char *name;
  char buf[TOOL_NAME_BUF];
  uint64_t count;
  uint64_t *dom;
  int ndom;
};

struct named_user {
  const char *name;
  char buf[TOOL_NAME_BUF];
  int kind;
  uint64_t count;
};

struct domain_row {
  pid_t pid;
  int domain;
  char thread[TOOL_THREAD_BUF]; /* its holder's name, "" if unknown */
  struct domain_stat d;
};

struct report {
  int any_ts;
  uint64_t first_ts, last_ts;
  uint64_t pauses, cut, unfinished, unmatched, markers;
  int with_pid; /* domain rows name their process */
  struct domain_row *doms;
  size_t ndoms;
  struct named_phase *ph;
  size_t nph;
  uint64_t alloc_events, alloc[EVENTRING_ALLOC_BUCKETS];
  struct named_counter *ctr;
  size_t nctr;
  struct named_user *usr;
  size_t nusr;
  struct span_stats *sp;
  size_t nsp;
  struct named_int *ints;
  size_t nints;
  struct named_unit *units;
  size_t nunits;
  const char *lost_unit;
  int unrecorded_known;
  uint64_t dropped, malformed;
  int oom;
};

/* The entry named `name` among `n` entries of `size` bytes at `v`
 * (matching `kind` too for user events when kind >= 0), added when new
 * (the arrays are sized for every id of every process).  Entries start
 * with the name and its buffer. */
static void *named(void *v, size_t *n, size_t size, const char *name,
                   const char *buf, int kind) {
  for (size_t j = 0; j < *n; j++) {
    unsigned char *e = (unsigned char *)v + j * size;
    if (!strcmp(*(const char **)e, name) &&
        (kind < 0 || ((struct named_user *)e)->kind == kind))
      return e;
  }
  unsigned char *e = (unsigned char *)v + (*n)++ * size;
  memset(e, 0, size);
  struct named_phase *np = (struct named_phase *)e; /* same first fields */
  if (name == buf) {
    memcpy(np->buf, buf, TOOL_NAME_BUF);
    name = np->buf;
  }
  np->name = name;
  return e;
}

static void add_stats(struct report *r, const struct stats *s) {
  if (s->any_ts) {
    if (!r->any_ts || s->first_ts < r->first_ts) r->first_ts = s->first_ts;
    if (!r->any_ts || s->last_ts > r->last_ts) r->last_ts = s->last_ts;
    r->any_ts = 1;
  }
  r->pauses += s->pauses.count;
  r->cut += s->pauses.cut;
  r->unfinished += s->pauses.unfinished;
  r->unmatched += s->pauses.unmatched;
  r->markers += s->pauses.markers;
  for (int d = 0; d < s->ndomains; d++) {
    const struct domain_stat *ds = &s->domains[d];
    if (!ds->read && !ds->lost && !ds->before) continue; /* not listed */
    struct domain_row *row = &r->doms[r->ndoms++];
    row->pid = s->pid;
    row->domain = d;
    tool_domain_thread(s->cursor, d, row->thread, sizeof row->thread);
    row->d = *ds;
  }
  char buf[TOOL_NAME_BUF];
  for (int i = 0; i < s->nphases; i++) {
    int id = s->phase_order[i];
    const struct phase_stat *p = &s->phases[id];
    const char *name = tool_event_name(s->cursor, TOOL_NAME_PHASE, id, buf);
    struct named_phase *e = named(r->ph, &r->nph, sizeof *e, name, buf, -1);
    e->count += p->count;
    e->completed += p->completed;
    e->total += p->total;
    if (p->max > e->max) e->max = p->max;
    if (p->hist && !e->hist && !(e->hist = hist_create())) r->oom = 1;
    if (p->hist && e->hist) hist_add(e->hist, p->hist);
  }
  r->alloc_events += s->alloc_events;
  for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++) r->alloc[i] += s->alloc[i];
  for (int i = 0; i < s->ncounters; i++) {
    int id = s->counter_order[i];
    const struct counter_stat *cs = &s->counters[id];
    const char *name = tool_event_name(s->cursor, TOOL_NAME_COUNTER, id, buf);
    size_t before = r->nctr;
    struct named_counter *e =
        named(r->ctr, &r->nctr, sizeof *e, name, buf, -1);
    /* The last value is the latest sample's, in any process. */
    if (r->nctr > before || cs->last_ts >= e->last_ts) {
      e->last = cs->last;
      e->last_ts = cs->last_ts;
      e->domain = cs->domain;
    }
    if (r->nctr > before || cs->min < e->min) e->min = cs->min;
    if (r->nctr > before || cs->max > e->max) e->max = cs->max;
    e->samples += cs->samples;
    if (!r->with_pid) {
      e->dom = s->cdoms[id];
      e->ndom = s->ndomains;
    }
  }
  for (int i = 0; i < s->nints; i++) {
    int id = s->int_order[i];
    const char *name = tool_event_name(s->cursor, TOOL_NAME_USER, id, buf);
    size_t before = r->nints;
    struct named_int *e = named(r->ints, &r->nints, sizeof *e, name, buf, -1);
    for (int d = 0; d < s->ndomains; d++) {
      const struct value_stat *v = &s->ints[id][d];
      if (!v->count) continue;
      struct value_stat *a = &e->all;
      if (a->count == 0 || v->min < a->min) a->min = v->min;
      if (a->count == 0 || v->max > a->max) a->max = v->max;
      if (a->count == 0 || v->last_ts >= a->last_ts) {
        a->last = v->last;
        a->last_ts = v->last_ts;
      }
      a->count += v->count;
      a->sum += v->sum;
    }
    (void)before;
    if (!r->with_pid) {
      e->dom = s->ints[id];
      e->ndom = s->ndomains;
    }
  }
  for (int i = 0; i < s->nusers; i++) {
    int key = s->user_order[i], id = key / U_KINDS, k = key % U_KINDS;
    if (k != U_UNIT) continue;
    const char *name = tool_event_name(s->cursor, TOOL_NAME_USER, id, buf);
    struct named_unit *e =
        named(r->units, &r->nunits, sizeof *e, name, buf, -1);
    e->count += s->user[key];
    if (!r->with_pid) {
      e->dom = s->units[id];
      e->ndom = s->ndomains;
    }
  }
  for (size_t i = 0; i < s->spans.n; i++) {
    const struct span_stats *sp = &s->spans.v[i];
    size_t j = 0;
    while (j < r->nsp && strcmp(r->sp[j].name, sp->name)) j++;
    if (j == r->nsp) memset(&r->sp[r->nsp++], 0, sizeof r->sp[0]);
    if (span_stats_add(&r->sp[j], sp, !r->with_pid) < 0) r->oom = 1;
  }
  for (int i = 0; i < s->nusers; i++) {
    int key = s->user_order[i], id = key / U_KINDS, k = key % U_KINDS;
    const char *name = tool_event_name(s->cursor, TOOL_NAME_USER, id, buf);
    struct named_user *e = named(r->usr, &r->nusr, sizeof *e, name, buf, k);
    e->kind = k;
    e->count += s->user[key];
  }
  if (!r->lost_unit) r->lost_unit = tool_lost_unit(s->cursor);
  struct tool_unrecorded u;
  if (tool_unrecorded(s->cursor, &u) == 0) {
    r->dropped += u.dropped;
    r->malformed += u.malformed;
  } else {
    r->unrecorded_known = 0;
  }
}

/* The report of the `n` processes' statistics at `v`; -1 when out of
 * memory. */
static int make_report(struct report *r, struct stats *const *v, int n,
                       int with_pid) {
  memset(r, 0, sizeof *r);
  r->with_pid = with_pid;
  r->unrecorded_known = 1;
  size_t nd = 1, np = 1, nc = 1, nu = 1, ns = 1, ni = 1;
  for (int i = 0; i < n; i++) {
    nd += (size_t)v[i]->ndomains;
    np += (size_t)v[i]->nphases;
    nc += (size_t)v[i]->ncounters;
    nu += (size_t)v[i]->nusers;
    ns += v[i]->spans.n;
    ni += (size_t)v[i]->nints;
  }
  r->doms = calloc(nd, sizeof *r->doms);
  r->ph = calloc(np, sizeof *r->ph);
  r->ctr = calloc(nc, sizeof *r->ctr);
  r->usr = calloc(nu, sizeof *r->usr);
  r->sp = calloc(ns, sizeof *r->sp);
  r->ints = calloc(ni, sizeof *r->ints);
  r->units = calloc(nu, sizeof *r->units);
  if (!r->doms || !r->ph || !r->ctr || !r->usr || !r->sp || !r->ints ||
      !r->units)
    return -1;
  for (int i = 0; i < n; i++) add_stats(r, v[i]);
  if (r->oom) return -1;
  if (!r->lost_unit) r->lost_unit = "events";
  return 0;
}

static void free_report(struct report *r) {
  for (size_t i = 0; r->ph && i < r->nph; i++) hist_free(r->ph[i].hist);
  for (size_t i = 0; r->sp && i < r->nsp; i++) span_stats_free(&r->sp[i]);
  free(r->sp);
  free(r->ints);
  free(r->units);
  free(r->doms);
  free(r->ph);
  free(r->ctr);
  free(r->usr);
}

/* The bucket's block sizes, as the format defines them. */
static void bucket_label(char *buf, size_t n, int i) {
  if (i == 0)
    snprintf(buf, n, "0 words");
  else if (i < 10)
    snprintf(buf, n, "%d %s", i, i == 1 ? "word" : "words");
  else if (i < 19)
    snprintf(buf, n, "%d-%d words", (i - 9) * 10, (i - 9) * 10 + 9);
  else
    snprintf(buf, n, ">=100 words");
}

static double share(uint64_t part, uint64_t whole) {
  return whole ? (double)part / (double)whole : 0;
}

static uint64_t gc_total(const struct report *r) {
  uint64_t t = 0;
  for (size_t d = 0; d < r->ndoms; d++) t += r->doms[d].d.gc;
  return t;
}

/* How long a domain existed, as far as its events tell: from its first
 * to its last. */
static uint64_t lifetime(const struct domain_stat *d) {
  return d->read ? d->last_ts - d->first_ts : 0;
}

/* The time the domains could have spent in GC: each one's lifetime, so
 * that a process that ran for part of the time weighs that part only. */
static uint64_t domain_time(const struct report *r) {
  uint64_t t = 0;
  for (size_t d = 0; d < r->ndoms; d++) t += lifetime(&r->doms[d].d);
  return t;
}

/* "domain 3 (NAME)" or "pid 12 domain 3 (NAME)", NAME its thread's
 * when the file names it, padded to `width` when the report has several
 * domains. */
static const char *domain_label(char *buf, size_t n, const struct report *r,
                                const struct domain_row *row, int width) {
  char dl[TOOL_DOMAIN_BUF], pid[32] = "";
  tool_domain_text(dl, sizeof dl, row->domain, row->thread);
  if (r->with_pid) snprintf(pid, sizeof pid, "pid %ld ", (long)row->pid);
  snprintf(buf, n, "%s%-*s", pid, width, dl);
  return buf;
}

/* The thread name of domain `d` of a report of one process. */
static const char *domain_thread(const struct report *r, int d) {
  for (size_t i = 0; i < r->ndoms; i++)
    if (r->doms[i].domain == d) return r->doms[i].thread;
  return "";
}

/* The width of the widest domain label without its pid: the tables'
 * figures line up (at least that of "domain 123"). */
static int domain_width(const struct report *r) {
  int w = 10;
  for (size_t d = 0; d < r->ndoms; d++) {
    char dl[TOOL_DOMAIN_BUF];
    const struct domain_row *row = &r->doms[d];
    int n = (int)strlen(
        tool_domain_text(dl, sizeof dl, row->domain, row->thread));
    if (n > w) w = n;
  }
  return w;
}

/* One row of the user span table: `label`, then the figures of `a`. */
static void span_row(const char *label, const struct span_stat *a) {
  char d[5][32];
  uint64_t n = a->hist ? hist_count(a->hist) : 0;
  printf("%-32s %8" PRIu64 " %10s %10s %10s %10s %10s\n", label, n,
         analysis_duration(d[0], a->total),
         analysis_duration(d[1], n ? a->total / n : 0),
         analysis_duration(d[2], n ? hist_percentile(a->hist, 50) : 0),
         analysis_duration(d[3], n ? hist_percentile(a->hist, 99) : 0),
         analysis_duration(d[4], n ? hist_max(a->hist) : 0));
}

static void print_text(const struct report *r) {
  char a[32], b[32], c[32], name[256];
  uint64_t wall = r->any_ts ? r->last_ts - r->first_ts : 0;
  uint64_t gc = gc_total(r);
  printf("wall time: %s (first to last event)\n", analysis_duration(a, wall));
  printf("GC time:   %s in %" PRIu64 " pauses (%.2f%% of the domains' "
         "lifetimes)\n",
         analysis_duration(a, gc), r->pauses,
         100 * share(gc, domain_time(r)));
  for (size_t d = 0; d < r->ndoms; d++) {
    const struct domain_row *row = &r->doms[d];
    printf("  %s %10s in %" PRIu64 " pauses (%.2f%% of %s)\n",
           domain_label(name, sizeof name, r, row, domain_width(r)),
           analysis_duration(a, row->d.gc), row->d.pauses,
           100 * share(row->d.gc, lifetime(&row->d)),
           analysis_duration(b, lifetime(&row->d)));
  }
  if (r->cut || r->unfinished || r->unmatched)
    printf("  not included: %" PRIu64 " cut, %" PRIu64 " unfinished, %" PRIu64
           " unmatched ends\n",
           r->cut, r->unfinished, r->unmatched);

  if (r->nph) {
    printf("\n%-32s %8s %11s %11s %11s\n", "phase", "count", "total", "mean",
           "max");
    for (size_t i = 0; i < r->nph; i++) {
      const struct named_phase *p = &r->ph[i];
      uint64_t mean = p->completed ? p->total / p->completed : 0;
      printf("%-32s %8" PRIu64 " %11s %11s %11s\n",
             tool_name_str(name, sizeof name, p->name, "phase_", 0), p->count,
             analysis_duration(a, p->total), analysis_duration(b, mean),
             analysis_duration(c, p->max));
    }
  }

  if (r->alloc_events) {
    printf("\nallocations (blocks by size, %" PRIu64 " alloc events):\n",
           r->alloc_events);
    for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++) {
      if (!r->alloc[i]) continue;
      bucket_label(a, sizeof a, i);
      printf("  %-12s %12" PRIu64 "\n", a, r->alloc[i]);
    }
  }

  if (r->nctr) {
    printf("\n%-32s %20s %8s %20s %20s\n", "counter", "last", "samples",
           "min", "max");
    for (size_t i = 0; i < r->nctr; i++) {
      const struct named_counter *cs = &r->ctr[i];
      printf("%-32s %20" PRIu64 " %8" PRIu64 " %20" PRIu64 " %20" PRIu64 "\n",
             tool_name_str(name, sizeof name, cs->name, "counter_", 0),
             cs->last, cs->samples, cs->min, cs->max);
    }
  }

  if (r->nusr) {
    printf("\n%-32s %-7s %8s\n", "user event", "kind", "count");
    for (size_t i = 0; i < r->nusr; i++)
      printf("%-32s %-7s %8" PRIu64 "\n",
             tool_name_str(name, sizeof name, r->usr[i].name, "user_", 0),
             user_kinds[r->usr[i].kind], r->usr[i].count);
  }

  if (r->nsp) {
    printf("\n%-32s %8s %10s %10s %10s %10s %10s\n", "user span", "count",
           "total", "mean", "p50", "p99", "max");
    for (size_t i = 0; i < r->nsp; i++) {
      const struct span_stats *sp = &r->sp[i];
      span_row(tool_name_str(name, sizeof name, sp->name, "user_", 0),
               &sp->all);
      /* Per domain, when more than one had spans of the name. */
      int with = 0;
      for (int d = 0; d < sp->ndom; d++) with += sp->dom[d].hist != NULL;
      for (int d = 0; with > 1 && d < sp->ndom; d++) {
        if (!sp->dom[d].hist) continue;
        char label[TOOL_DOMAIN_BUF + 8];
        const char *th = domain_thread(r, d);
        if (*th) snprintf(label, sizeof label, "  domain %d (%s)", d, th);
        else snprintf(label, sizeof label, "  domain %d", d);
        span_row(label, &sp->dom[d]);
      }
      const struct span_stat *a = &sp->all;
      if (a->cut || a->unfinished || a->unmatched)
        printf("  not included: %" PRIu64 " cut, %" PRIu64 " unfinished, %"
               PRIu64 " unmatched ends\n",
               a->cut, a->unfinished, a->unmatched);
    }
  }

  if (r->nints) {
    printf("\n%-32s %8s %20s %20s %20s %20s\n", "user int", "count", "min",
           "mean", "max", "last");
    for (size_t i = 0; i < r->nints; i++) {
      const struct value_stat *v = &r->ints[i].all;
      printf("%-32s %8" PRIu64 " %20" PRId64 " %20.2f %20" PRId64 " %20" PRId64
             "\n",
             tool_name_str(name, sizeof name, r->ints[i].name, "user_", 0),
             v->count, v->min, v->count ? v->sum / (double)v->count : 0,
             v->max, v->last);
    }
  }

  if (r->nunits) {
    printf("\n%-32s %8s %12s\n", "unit event", "count", "per second");
    for (size_t i = 0; i < r->nunits; i++)
      printf("%-32s %8" PRIu64 " %12.3f\n",
             tool_name_str(name, sizeof name, r->units[i].name, "user_", 0),
             r->units[i].count,
             wall ? (double)r->units[i].count * 1e9 / (double)wall : 0.0);
  }

  uint64_t read = 0, lost = 0, before = 0;
  for (size_t d = 0; d < r->ndoms; d++) {
    read += r->doms[d].d.read;
    lost += r->doms[d].d.lost;
    before += r->doms[d].d.before;
  }
  if (before)
    printf("\nwindow: the run's last %s, %" PRIu64 " events from ts %" PRIu64
           " to %" PRIu64 "; %" PRIu64 " older %s had been overwritten "
           "before it was read (not lost)\n",
           analysis_duration(a, wall), read, r->first_ts, r->last_ts, before,
           strcmp(r->lost_unit, "words") ? "events" : "ring words");
  printf("\nevents: %" PRIu64 " read, %" PRIu64 " lost (%s)", read, lost,
         r->lost_unit);
  /* Only when there are some, so that the line reads as before. */
  if (r->unrecorded_known) {
    if (r->dropped) printf(", %" PRIu64 " dropped by the writer", r->dropped);
    if (r->malformed) printf(", %" PRIu64 " malformed skipped", r->malformed);
  }
  printf("\n");
  for (size_t d = 0; d < r->ndoms; d++) {
    const struct domain_row *row = &r->doms[d];
    printf("  %s %12" PRIu64 " read %12" PRIu64 " lost",
           domain_label(name, sizeof name, r, row, domain_width(r)),
           row->d.read, row->d.lost);
    if (row->d.before)
      printf(" %12" PRIu64 " before the window", row->d.before);
    printf("\n");
  }
}

/* A domain row's opening, with its pid when the report has several
 * processes. */
static void json_domain(FILE *o, const struct report *r,
                        const struct domain_row *row) {
  fputc('{', o);
  if (r->with_pid) fprintf(o, "\"pid\": %ld, ", (long)row->pid);
  fprintf(o, "\"domain\": %d", row->domain);
  if (row->thread[0]) {
    fprintf(o, ", \"thread\": ");
    analysis_json_string(o, row->thread);
  }
}

/* A user int's figures: count, min, mean, max, last. */
static void json_values(FILE *o, const struct value_stat *v) {
  fprintf(o, "\"count\": %" PRIu64, v->count);
  if (!v->count) {
    fprintf(o, ", \"min\": null, \"mean\": null, \"max\": null, "
               "\"last\": null");
    return;
  }
  fprintf(o, ", \"min\": %" PRId64 ", \"mean\": ", v->min);
  analysis_json_double(o, v->sum / (double)v->count);
  fprintf(o, ", \"max\": %" PRId64 ", \"last\": %" PRId64, v->max, v->last);
}

/* `count` events per second of `wall` nanoseconds; null without a wall
 * time. */
static void json_rate(FILE *o, uint64_t count, uint64_t wall) {
  if (!wall) {
    fputs("null", o);
    return;
  }
  analysis_json_double(o, (double)count * 1e9 / (double)wall);
}

/* The report's fields, without the braces. */
static void print_json(const struct report *r) {
  FILE *o = stdout;
  uint64_t wall = r->any_ts ? r->last_ts - r->first_ts : 0;
  uint64_t gc = gc_total(r);
  fprintf(o, "\"wall_ns\": %" PRIu64, wall);
  if (r->any_ts)
    fprintf(o, ", \"first_ts\": %" PRIu64 ", \"last_ts\": %" PRIu64,
            r->first_ts, r->last_ts);
  else
    fprintf(o, ", \"first_ts\": null, \"last_ts\": null");

  fprintf(o, ",\n \"gc\": {\"total_ns\": %" PRIu64 ", \"share\": ", gc);
  analysis_json_double(o, share(gc, domain_time(r)));
  fprintf(o,
          ", \"pauses\": %" PRIu64 ", \"cut\": %" PRIu64
          ", \"unfinished\": %" PRIu64 ", \"unmatched_ends\": %" PRIu64
          ", \"markers\": %" PRIu64 ", \"domains\": [",
          r->pauses, r->cut, r->unfinished, r->unmatched, r->markers);
  for (size_t d = 0; d < r->ndoms; d++) {
    const struct domain_row *row = &r->doms[d];
    if (d) fputs(", ", o);
    json_domain(o, r, row);
    fprintf(o, ", \"pauses\": %" PRIu64 ", \"total_ns\": %" PRIu64
               ", \"share\": ",
            row->d.pauses, row->d.gc);
    analysis_json_double(o, share(row->d.gc, lifetime(&row->d)));
    fputc('}', o);
  }
  fprintf(o, "]},\n \"phases\": [");
  for (size_t i = 0; i < r->nph; i++) {
    const struct named_phase *p = &r->ph[i];
    fprintf(o, "%s\n  {\"name\": ", i ? "," : "");
    analysis_json_string(o, p->name);
    fprintf(o,
            ", \"count\": %" PRIu64 ", \"completed\": %" PRIu64
            ", \"total_ns\": %" PRIu64 ", \"mean_ns\": ",
            p->count, p->completed, p->total);
    analysis_json_double(
        o, p->completed ? (double)p->total / (double)p->completed : 0);
    fprintf(o, ", \"max_ns\": %" PRIu64, p->max);
    if (p->hist)
      fprintf(o, ", \"p50_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64,
              hist_percentile(p->hist, 50), hist_percentile(p->hist, 99));
    else
      fprintf(o, ", \"p50_ns\": null, \"p99_ns\": null");
    fprintf(o, ", \"buckets\": ");
    analysis_json_buckets(o, p->hist);
    fputc('}', o);
  }

  fprintf(o, "],\n \"alloc\": ");
  if (r->alloc_events) {
    fprintf(o, "{\"events\": %" PRIu64 ", \"buckets\": [", r->alloc_events);
    for (int i = 0; i < EVENTRING_ALLOC_BUCKETS; i++)
      fprintf(o, "%s%" PRIu64, i ? ", " : "", r->alloc[i]);
    fprintf(o, "]}");
  } else {
    fprintf(o, "null");
  }

  fprintf(o, ",\n \"counters\": [");
  for (size_t i = 0; i < r->nctr; i++) {
    const struct named_counter *cs = &r->ctr[i];
    fprintf(o, "%s\n  {\"name\": ", i ? "," : "");
    analysis_json_string(o, cs->name);
    fprintf(o,
            ", \"last\": %" PRIu64 ", \"samples\": %" PRIu64
            ", \"domain\": %d, \"min\": %" PRIu64 ", \"max\": %" PRIu64,
            cs->last, cs->samples, cs->domain, cs->min, cs->max);
    if (cs->dom) {
      fprintf(o, ", \"domains\": [");
      int first = 1;
      for (int d = 0; d < cs->ndom; d++) {
        const struct value_stat *v = &cs->dom[d];
        if (!v->count) continue;
        fprintf(o,
                "%s{\"domain\": %d, \"samples\": %" PRIu64
                ", \"min\": %" PRIu64 ", \"max\": %" PRIu64
                ", \"last\": %" PRIu64 "}",
                first ? "" : ", ", d, v->count, (uint64_t)v->min,
                (uint64_t)v->max, (uint64_t)v->last);
        first = 0;
      }
      fputc(']', o);
    }
    fputc('}', o);
  }

  fprintf(o, "],\n \"user_events\": [");
  for (size_t i = 0; i < r->nusr; i++) {
    fprintf(o, "%s\n  {\"name\": ", i ? "," : "");
    analysis_json_string(o, r->usr[i].name);
    fprintf(o, ", \"kind\": \"%s\", \"count\": %" PRIu64 "}",
            user_kinds[r->usr[i].kind], r->usr[i].count);
  }

  fprintf(o, "],\n \"spans\": [");
  for (size_t i = 0; i < r->nsp; i++) {
    fprintf(o, "%s\n  {", i ? "," : "");
    span_stats_json(o, &r->sp[i], !r->with_pid);
    fputc('}', o);
  }

  fprintf(o, "],\n \"user_ints\": [");
  for (size_t i = 0; i < r->nints; i++) {
    const struct named_int *e = &r->ints[i];
    fprintf(o, "%s\n  {\"name\": ", i ? "," : "");
    analysis_json_string(o, e->name);
    fprintf(o, ", ");
    json_values(o, &e->all);
    if (e->dom) {
      fprintf(o, ", \"domains\": [");
      int first = 1;
      for (int d = 0; d < e->ndom; d++) {
        if (!e->dom[d].count) continue;
        fprintf(o, "%s{\"domain\": %d, ", first ? "" : ", ", d);
        json_values(o, &e->dom[d]);
        fputc('}', o);
        first = 0;
      }
      fputc(']', o);
    }
    fputc('}', o);
  }

  fprintf(o, "],\n \"user_units\": [");
  for (size_t i = 0; i < r->nunits; i++) {
    const struct named_unit *e = &r->units[i];
    fprintf(o, "%s\n  {\"name\": ", i ? "," : "");
    analysis_json_string(o, e->name);
    fprintf(o, ", \"count\": %" PRIu64 ", \"rate_per_s\": ", e->count);
    json_rate(o, e->count, wall);
    if (e->dom) {
      fprintf(o, ", \"domains\": [");
      int first = 1;
      for (int d = 0; d < e->ndom; d++) {
        if (!e->dom[d]) continue;
        fprintf(o, "%s{\"domain\": %d, \"count\": %" PRIu64
                   ", \"rate_per_s\": ",
                first ? "" : ", ", d, e->dom[d]);
        json_rate(o, e->dom[d], wall);
        fputc('}', o);
        first = 0;
      }
      fputc(']', o);
    }
    fputc('}', o);
  }

  uint64_t read = 0, lost = 0, before = 0;
  for (size_t d = 0; d < r->ndoms; d++) {
    read += r->doms[d].d.read;
    lost += r->doms[d].d.lost;
    before += r->doms[d].d.before;
  }
  fprintf(o,
          "],\n \"events\": {\"read\": %" PRIu64 ", \"lost\": %" PRIu64
          ", \"lost_unit\": \"%s\", \"before_window\": %" PRIu64 ", ",
          read, lost, r->lost_unit, before);
  if (r->unrecorded_known)
    fprintf(o, "\"dropped\": %" PRIu64 ", \"malformed\": %" PRIu64 ", ",
            r->dropped, r->malformed);
  else
    fprintf(o, "\"dropped\": null, \"malformed\": null, ");
  fprintf(o, "\"domains\": [");
  for (size_t d = 0; d < r->ndoms; d++) {
    const struct domain_row *row = &r->doms[d];
    if (d) fputs(", ", o);
    json_domain(o, r, row);
    fprintf(o,
            ", \"read\": %" PRIu64 ", \"lost\": %" PRIu64
            ", \"before_window\": %" PRIu64 "}",
            row->d.read, row->d.lost, row->d.before);
  }
  fprintf(o, "]}");
}

/* The report: the one process's, or the total of several, then each
 * process's (text: a section each; JSON: "processes", also for a source
 * that could have held several, so that scripts find it). */
static int report(const struct stats_set *set, int json) {
  const struct tool_source *src = set->src;
  int n = 0;
  struct stats **v = calloc((size_t)set->nper + 1, sizeof *v);
  if (!v) return -1;
  for (int i = 0; i < set->nper; i++)
    if (set->per[i]) v[n++] = set->per[i];
  int several = src->nprocs > 1 || src->cmd || (src->dir && !src->pid_arg);
  struct report r;
  int rc = make_report(&r, v, n, src->nprocs > 1);
  if (rc == 0 && n == 0 && src->nprocs > 0)
    r.lost_unit = tool_lost_unit(src->procs[0]->cursor);
  if (rc == 0) {
    if (json) {
      printf("{");
      print_json(&r);
    } else {
      if (src->nprocs > 1) printf("== all %d processes ==\n", src->nprocs);
      print_text(&r);
    }
  }
  free_report(&r);
  if (rc == 0 && json && several) printf(",\n \"processes\": [");
  for (int i = 0; rc == 0 && i < src->nprocs; i++) {
    const struct tool_proc *p = src->procs[i];
    struct stats *one = i < set->nper ? set->per[i] : NULL;
    rc = make_report(&r, &one, one ? 1 : 0, 0);
    if (rc == 0 && !one) r.lost_unit = tool_lost_unit(p->cursor);
    if (rc == 0 && json && several) {
      printf("%s\n {\"pid\": %ld, \"name\": ", i ? "," : "", (long)p->pid);
      analysis_json_string(stdout, p->name);
      printf(", ");
      print_json(&r);
      printf("}");
    } else if (rc == 0 && !json && src->nprocs > 1) {
      char label[128];
      printf("\n== %s ==\n", tool_proc_label(p, label, sizeof label));
      print_text(&r);
    }
    free_report(&r);
  }
  if (rc == 0 && json) printf(several ? "]}\n" : "}\n");
  free(v);
  return rc;
}

static void help(void) {
  analysis_help(
      "stats",
      "Summarise a ring file: per runtime phase its count, total, mean and\n"
      "maximum time; the wall time and the share spent in GC pauses; "
      "allocation\n"
      "totals; counters' last values; user event counts; events read and "
      "lost.\n");
}

int tool_stats(int argc, char **argv) {
  struct tool_source src;
  struct analysis_opts opts = {.spans_allowed = 0};
  int rc = analysis_open(argc, argv, HELP_REF, help, &src, &opts);
  if (rc >= 0) return rc;
  int json = opts.json;

  static const struct tool_handlers handlers = {
      on_begin,     on_end,      on_counter,   on_alloc,       on_lifecycle,
      on_user_unit, on_user_int, on_user_span, on_user_custom, on_lost,
      on_thread /* spans pair on their thread's track */, on_window};
  eventring_callbacks *cb = tool_callbacks_new(&handlers);
  struct stats_set set = {.src = &src};
  if (!cb) {
    tool_error("out of memory");
    rc = TOOL_EXIT_INPUT;
    goto out;
  }
  rc = tool_source_read(&src, cb, &set);
  if (set.failed) rc = TOOL_EXIT_INPUT;
  if (rc == TOOL_EXIT_OK) {
    for (int i = 0; i < set.nper; i++)
      if (set.per[i]) {
        pauses_finish(&set.per[i]->pauses);
        spans_finish(&set.per[i]->spans);
      }
    if (report(&set, json) < 0) {
      tool_error("out of memory");
      rc = TOOL_EXIT_INPUT;
      goto out;
    }
    if (!json) tool_source_lost_summary(&src, stderr);
  }
out:
  for (int i = 0; i < set.nper; i++) {
    struct stats *s = set.per[i];
    if (!s) continue;
    pauses_free(&s->pauses);
    spans_free(&s->spans);
    for (int k = 0; k < s->nphases; k++)
      hist_free(s->phases[s->phase_order[k]].hist);
    for (int k = 0; k < N_IDS; k++) {
      free(s->ints[k]);
      free(s->cdoms[k]);
      free(s->units[k]);
    }
    free(s->domains);
    free(s);
  }
  free(set.per);
  eventring_callbacks_free(cb);
  tool_source_close(&src);
  int out = tool_output_finish();
  return rc != TOOL_EXIT_OK ? rc : out;
}
