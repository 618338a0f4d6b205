/* spans.c -- the durations of user spans and of runtime phases, per name,
 * per domain and in total, paired per track (analysis.h says how spans
 * pair, what a track is and what is counted apart).
 */
#include <fnmatch.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/* Ids are 13 bits wide in the event header. */
#define N_IDS 8192

struct open_span {
  int entry; /* index in spans->v */
  uint64_t ts;
};

/* A thread of a shared slot (known), or the domain's own track. */
struct span_track {
  int known;
  uint64_t tid;
  int64_t thread;
  struct open_span *open;
  size_t nopen, cap;
};

struct span_domain {
  struct span_track *tracks; /* tracks[0] is the domain's own */
  size_t ntracks, captracks;
  size_t cur;                /* the track events go to now */
  /* Per entry: spans counted cut at a loss whose end may still come. */
  uint64_t *owed;
  size_t nowed;
  int after_cut; /* a cut came: an end without a begin is a cut span */
};

int spans_init(struct spans *s, const eventring_cursor *names, int ndomains,
               int phases, char *const *globs, int nglobs) {
  memset(s, 0, sizeof *s);
  s->names = names;
  s->phases = phases;
  s->globs = globs;
  s->nglobs = nglobs;
  s->ndomains = ndomains > 0 ? ndomains : 0;
  s->domains =
      calloc(s->ndomains ? (size_t)s->ndomains : 1, sizeof *s->domains);
  s->entry_of = malloc(N_IDS * sizeof *s->entry_of);
  if (!s->domains || !s->entry_of) return -1;
  for (int i = 0; i < N_IDS; i++) s->entry_of[i] = -1;
  return 0;
}

void span_stats_free(struct span_stats *st) {
  hist_free(st->all.hist);
  for (int d = 0; d < st->ndom; d++) hist_free(st->dom[d].hist);
  free(st->dom);
  st->dom = NULL;
  st->ndom = 0;
  st->all.hist = NULL;
}

void spans_free(struct spans *s) {
  for (int i = 0; i < s->ndomains && s->domains; i++) {
    struct span_domain *d = s->domains[i];
    if (!d) continue;
    for (size_t t = 0; t < d->ntracks; t++) free(d->tracks[t].open);
    free(d->tracks);
    free(d->owed);
    free(d);
  }
  free(s->domains);
  for (size_t i = 0; i < s->n; i++) span_stats_free(&s->v[i]);
  free(s->v);
  free(s->entry_of);
  memset(s, 0, sizeof *s);
}

static struct span_domain *dom(struct spans *s, int domain) {
  if (domain < 0 || domain >= s->ndomains) return NULL;
  struct span_domain *d = s->domains[domain];
  if (!d) {
    d = calloc(1, sizeof *d);
    struct span_track *t = calloc(4, sizeof *t);
    if (!d || !t) {
      free(d);
      free(t);
      s->oom = 1;
      return NULL;
    }
    d->tracks = t;
    d->ntracks = 1;
    d->captracks = 4;
    s->domains[domain] = d;
  }
  return d;
}

/* The entry of id `id`, made on its first event; -1 when the name is not
 * tracked (or out of memory). */
static int entry(struct spans *s, int id, const char *name) {
  id &= N_IDS - 1;
  int e = s->entry_of[id];
  if (e != -1) return e < 0 ? -1 : e;
  char buf[TOOL_NAME_BUF];
  if (!name || !*name)
    name = tool_event_name(s->names,
                           s->phases ? TOOL_NAME_PHASE : TOOL_NAME_USER, id,
                           buf);
  int keep = s->nglobs == 0;
  for (int i = 0; i < s->nglobs && !keep; i++)
    keep = fnmatch(s->globs[i], name, 0) == 0;
  if (!keep) {
    s->entry_of[id] = -2;
    return -1;
  }
  /* Two ids of one name (a file may register a name twice) share it. */
  for (size_t i = 0; i < s->n; i++)
    if (!strncmp(s->v[i].name, name, SPAN_NAME_BYTES - 1)) {
      s->entry_of[id] = (int)i;
      return (int)i;
    }
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    struct span_stats *v = realloc(s->v, cap * sizeof *v);
    if (!v) {
      s->oom = 1;
      return -1;
    }
    s->v = v;
    s->cap = cap;
  }
  struct span_stats *st = &s->v[s->n];
  memset(st, 0, sizeof *st);
  snprintf(st->name, sizeof st->name, "%s", name);
  s->entry_of[id] = (int)s->n;
  return (int)s->n++;
}

/* Domain row `domain` of `st`, grown to the tracker's domain count. */
static struct span_stat *row(struct spans *s, struct span_stats *st,
                             int domain) {
  if (st->ndom < s->ndomains) {
    struct span_stat *v = realloc(st->dom, (size_t)s->ndomains * sizeof *v);
    if (!v) {
      s->oom = 1;
      return NULL;
    }
    memset(v + st->ndom, 0, (size_t)(s->ndomains - st->ndom) * sizeof *v);
    st->dom = v;
    st->ndom = s->ndomains;
  }
  return &st->dom[domain];
}

static void record(struct spans *s, struct span_stat *st, uint64_t dur) {
  if (!st->hist && !(st->hist = hist_create())) {
    s->oom = 1;
    return;
  }
  hist_record(st->hist, dur);
  st->total += dur;
}

/* Counts one span of entry `e` in domain `domain` with `field` (the
 * offset of cut, unfinished or unmatched in struct span_stat). */
static void count(struct spans *s, int e, int domain, size_t field) {
  struct span_stats *st = &s->v[e];
  (*(uint64_t *)((char *)&st->all + field))++;
  struct span_stat *r = row(s, st, domain);
  if (r) (*(uint64_t *)((char *)r + field))++;
}

static uint64_t *owed(struct spans *s, struct span_domain *d, int e) {
  if ((size_t)e >= d->nowed) {
    size_t n = (size_t)e + 16;
    uint64_t *v = realloc(d->owed, n * sizeof *v);
    if (!v) {
      s->oom = 1;
      return NULL;
    }
    memset(v + d->nowed, 0, (n - d->nowed) * sizeof *v);
    d->owed = v;
    d->nowed = n;
  }
  return &d->owed[e];
}

void spans_begin(struct spans *s, int domain, uint64_t ts, int id,
                 const char *name) {
  struct span_domain *d = dom(s, domain);
  int e = entry(s, id, name);
  if (!d || e < 0) return;
  struct span_track *t = &d->tracks[d->cur];
  if (t->nopen == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 16;
    struct open_span *v = realloc(t->open, cap * sizeof *v);
    if (!v) {
      s->oom = 1;
      return;
    }
    t->open = v;
    t->cap = cap;
  }
  t->open[t->nopen].entry = e;
  t->open[t->nopen].ts = ts;
  t->nopen++;
}

void spans_end(struct spans *s, int domain, uint64_t ts, int id,
               const char *name) {
  struct span_domain *d = dom(s, domain);
  int e = entry(s, id, name);
  if (!d || e < 0) return;
  struct span_track *t = &d->tracks[d->cur];
  size_t j = t->nopen;
  while (j > 0 && t->open[j - 1].entry != e) j--;
  if (j == 0) {
    /* No open span of this name on this track. */
    if (d->after_cut) {
      uint64_t *o = owed(s, d, e);
      if (o && *o > 0)
        (*o)--; /* the end of a span already counted cut */
      else
        count(s, e, domain, offsetof(struct span_stat, cut));
    } else {
      count(s, e, domain, offsetof(struct span_stat, unmatched));
    }
    return;
  }
  uint64_t start = t->open[j - 1].ts;
  memmove(&t->open[j - 1], &t->open[j],
          (t->nopen - j) * sizeof t->open[0]);
  t->nopen--;
  uint64_t dur = ts >= start ? ts - start : 0;
  struct span_stats *st = &s->v[e];
  record(s, &st->all, dur);
  struct span_stat *r = row(s, st, domain);
  if (r) record(s, r, dur);
}

void spans_thread(struct spans *s, int domain, int64_t thread, uint64_t tid) {
  struct span_domain *d = dom(s, domain);
  if (!d) return;
  for (size_t i = 1; i < d->ntracks; i++)
    if (d->tracks[i].tid == tid && d->tracks[i].thread == thread) {
      d->cur = i;
      return;
    }
  if (d->ntracks == d->captracks) {
    size_t cap = 2 * d->captracks;
    struct span_track *v = realloc(d->tracks, cap * sizeof *v);
    if (!v) {
      s->oom = 1;
      d->cur = 0;
      return;
    }
    d->tracks = v;
    d->captracks = cap;
  }
  struct span_track *t = &d->tracks[d->ntracks];
  memset(t, 0, sizeof *t);
  t->known = 1;
  t->tid = tid;
  t->thread = thread;
  d->cur = d->ntracks++;
}

/* Every open span of `d` is counted with `field`, and closed. */
static void close_all(struct spans *s, int domain, struct span_domain *d,
                      size_t field, int owe) {
  for (size_t i = 0; i < d->ntracks; i++) {
    struct span_track *t = &d->tracks[i];
    for (size_t j = 0; j < t->nopen; j++) {
      count(s, t->open[j].entry, domain, field);
      if (owe) {
        uint64_t *o = owed(s, d, t->open[j].entry);
        if (o) (*o)++;
      }
    }
    t->nopen = 0;
  }
}

void spans_cut(struct spans *s, int domain) {
  struct span_domain *d = dom(s, domain);
  if (!d) return;
  close_all(s, domain, d, offsetof(struct span_stat, cut), 1);
  d->after_cut = 1;
  /* The thread is unknown until the next marker. */
  d->cur = 0;
}

void spans_restart(struct spans *s, int domain) {
  struct span_domain *d = dom(s, domain);
  if (!d) return;
  close_all(s, domain, d, offsetof(struct span_stat, unfinished), 0);
  d->cur = 0;
}

void spans_lifecycle(struct spans *s, int domain, int kind) {
  if (kind == EVENTRING_LIFECYCLE_RING_PAUSE)
    spans_cut(s, domain);
  else if (kind == EVENTRING_LIFECYCLE_DOMAIN_SPAWN ||
           kind == EVENTRING_LIFECYCLE_DOMAIN_TERMINATE)
    spans_restart(s, domain);
}

void spans_finish(struct spans *s) {
  for (int i = 0; i < s->ndomains; i++)
    if (s->domains[i])
      close_all(s, i, s->domains[i], offsetof(struct span_stat, unfinished),
                0);
}

static int stat_add(struct span_stat *dst, const struct span_stat *src) {
  if (src->hist) {
    if (!dst->hist && !(dst->hist = hist_create())) return -1;
    hist_add(dst->hist, src->hist);
  }
  dst->total += src->total;
  dst->cut += src->cut;
  dst->unfinished += src->unfinished;
  dst->unmatched += src->unmatched;
  return 0;
}

int span_stats_add(struct span_stats *dst, const struct span_stats *src,
                   int by_domain) {
  if (!dst->name[0]) memcpy(dst->name, src->name, sizeof dst->name);
  if (stat_add(&dst->all, &src->all) < 0) return -1;
  if (!by_domain) return 0;
  if (dst->ndom < src->ndom) {
    struct span_stat *v = realloc(dst->dom, (size_t)src->ndom * sizeof *v);
    if (!v) return -1;
    memset(v + dst->ndom, 0, (size_t)(src->ndom - dst->ndom) * sizeof *v);
    dst->dom = v;
    dst->ndom = src->ndom;
  }
  for (int d = 0; d < src->ndom; d++)
    if (stat_add(&dst->dom[d], &src->dom[d]) < 0) return -1;
  return 0;
}

void span_stat_json(FILE *out, const struct span_stat *st) {
  uint64_t n = st->hist ? hist_count(st->hist) : 0;
  fprintf(out, "\"count\": %" PRIu64 ", \"total_ns\": %" PRIu64, n,
          st->total);
  if (n) {
    fprintf(out, ", \"mean_ns\": ");
    analysis_json_double(out, (double)st->total / (double)n);
    fprintf(out,
            ", \"min_ns\": %" PRIu64 ", \"p50_ns\": %" PRIu64
            ", \"p90_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64
            ", \"p999_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64,
            hist_min(st->hist), hist_percentile(st->hist, 50),
            hist_percentile(st->hist, 90), hist_percentile(st->hist, 99),
            hist_percentile(st->hist, 99.9), hist_max(st->hist));
  } else {
    fprintf(out, ", \"mean_ns\": null, \"min_ns\": null, \"p50_ns\": null, "
                 "\"p90_ns\": null, \"p99_ns\": null, \"p999_ns\": null, "
                 "\"max_ns\": null");
  }
  fprintf(out, ", \"relative_error\": ");
  analysis_json_double(out, HIST_RELATIVE_ERROR);
  fprintf(out,
          ", \"cut\": %" PRIu64 ", \"unfinished\": %" PRIu64
          ", \"unmatched_ends\": %" PRIu64,
          st->cut, st->unfinished, st->unmatched);
}

void span_stats_json(FILE *out, const struct span_stats *st, int domains) {
  fprintf(out, "\"name\": ");
  analysis_json_string(out, st->name);
  fprintf(out, ", ");
  span_stat_json(out, &st->all);
  fprintf(out, ", \"buckets\": ");
  analysis_json_buckets(out, st->all.hist);
  if (!domains) return;
  fprintf(out, ", \"domains\": [");
  int first = 1;
  for (int d = 0; d < st->ndom; d++) {
    const struct span_stat *r = &st->dom[d];
    if (!r->hist && !r->cut && !r->unfinished && !r->unmatched) continue;
    fprintf(out, "%s{\"domain\": %d, ", first ? "" : ", ", d);
    span_stat_json(out, r);
    fputc('}', out);
    first = 0;
  }
  fputc(']', out);
}
