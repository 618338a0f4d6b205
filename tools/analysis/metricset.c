/* metricset.c -- the series of `eventring metrics`: what the events of
 * each ring file add up to (analysis.h, "metricset.c"), and their listing
 * as Prometheus families, which render/ writes out as the text exposition
 * or a remote-write request.
 *
 * What is listed (every series of a target has the labels pid and
 * program; the program is /proc/PID/comm, or the spawned command's name):
 *   eventring_events_read_total        counter
 *   eventring_lost_events_total        counter (eventring's files count
 *                                      events; OCaml 5's files count ring
 *                                      words: eventring_lost_ring_words_total)
 *   eventring_dropped_events_total     counter, events the writer could
 *                                      not record (eventring's files)
 *   eventring_malformed_events_total   counter, bad events skipped
 *   eventring_ring_paused              gauge, 1 after ring_pause
 *   eventring_gc_pause_seconds         histogram of pauses: outermost
 *                                      runtime phases of a domain (not
 *                                      the markers, analysis.h)
 *   eventring_gc_phase_seconds         histogram per phase (label phase):
 *                                      every phase's own duration
 *   eventring_runtime_NAME             gauge per domain (label domain): the
 *                                      runtime counter's latest value
 *   eventring_user_NAME                gauge per domain: a user int's latest
 *   eventring_user_NAME_seconds        histogram: a user span's durations
 *   eventring_user_NAME_total          counter: a user unit event's count
 * User series also carry the event's own name in the label `event`, so
 * that two names that sanitise alike stay apart.  NAME is the event's
 * name made to follow Prometheus's naming rules (sanitise(): lower case,
 * '_' for every other character, type words in the plural); a gauge's
 * name that ends in _total, _count, _sum, _bucket or _seconds gets _value
 * after it, which keeps families of different types apart whatever the
 * names (gauge_suffix()); a runtime counter whose cleaned name another
 * counter of the same file has gets _ID after it.  `promtool check
 * metrics` finds nothing to say about the names, but for units a user's
 * event name may spell (_ms, ...).
 *
 * Pauses are tracked by the tracker of `eventring latency` and `stats`
 * (analysis.c) in its live mode, with the one difference a live exporter
 * cannot avoid: after a cut (lost events, ring_pause) it cannot wait to
 * learn whether what looks outermost really is, so it takes it at face
 * value; ends without a begin are ignored.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/* The bounds of struct metrics_hist, in ns and as Prometheus's own
 * clients write them in seconds. */
static const uint64_t bound_ns[METRICS_N_BOUNDS] = {
    1000ULL,       2500ULL,       5000ULL,       10000ULL,
    25000ULL,      50000ULL,      100000ULL,     250000ULL,
    500000ULL,     1000000ULL,    2500000ULL,    5000000ULL,
    10000000ULL,   25000000ULL,   50000000ULL,   100000000ULL,
    250000000ULL,  500000000ULL,  1000000000ULL, 2500000000ULL,
    5000000000ULL, 10000000000ULL};
static const char *const bound_le[METRICS_N_BOUNDS] = {
    "1e-06",  "2.5e-06", "5e-06", "1e-05", "2.5e-05", "5e-05",
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
    "0.01",   "0.025",   "0.05",  "0.1",   "0.25",    "0.5",
    "1",      "2.5",     "5",     "10"};

static int bucket_of(uint64_t ns) {
  int i = 0;
  while (i < METRICS_N_BOUNDS && ns > bound_ns[i]) i++;
  return i;
}

void metrics_hist_add(struct metrics_hist *h, uint64_t ns) {
  int i = bucket_of(ns);
  h->bucket[i]++;
  h->count++;
  h->sum_ns += ns;
}

static void copy_name(char *dst, const char *src, size_t n) {
  snprintf(dst, n, "%s", src ? src : "");
}

/* ------------------------------------------------------------------ */
/* Targets.                                                             */

/* A pause, from the tracker: `arg` is the target. */
static void on_pause(void *arg, int domain, uint64_t duration) {
  (void)domain;
  struct metrics_target *t = arg;
  metrics_hist_add(&t->pause, duration);
}

/* The OCaml version and labels that `c`'s file records, as `t`'s
 * (copied: the cursor may go before the target). */
static void take_file_labels(struct metrics_target *t,
                             const eventring_cursor *c) {
  size_t at = 0;
  t->nfile_labels = 0;
  const char *v = eventring_cursor_ocaml_version(c), *name, *value;
  for (int i = -1; t->nfile_labels < METRICS_FILE_LABELS; i++) {
    if (i < 0) {
      if (!v) continue;
      name = "ocaml_version";
      value = v;
    } else if (eventring_cursor_label(c, i, &name, &value) != 1) {
      break;
    }
    size_t nn = strlen(name) + 1, vn = strlen(value) + 1;
    if (at + nn + vn > sizeof t->file_text) break;
    char *n = memcpy(t->file_text + at, name, nn);
    char *w = memcpy(t->file_text + at + nn, value, vn);
    at += nn + vn;
    t->file_label[t->nfile_labels++] = (struct metrics_label){n, w};
  }
}

struct metrics_target *metrics_target_new(eventring_cursor *c, int own,
                                          const char *path, pid_t pid,
                                          const char *program,
                                          int numbering) {
  struct metrics_target *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->cursor = c;
  t->own_cursor = own;
  copy_name(t->path, path, sizeof t->path);
  t->pid = pid;
  copy_name(t->program, program, sizeof t->program);
  t->nd = eventring_cursor_max_domains(c);
  if (t->nd < 1) t->nd = 1;
  t->lost_words = eventring_cursor_lost_unit(c) == EVENTRING_LOST_WORDS;
  if (pauses_init(&t->pauses, c, t->nd, on_pause, t) < 0) {
    pauses_free(&t->pauses);
    free(t);
    return NULL;
  }
  t->pauses.live = 1;
  if (numbering >= 0) eventring_cursor_set_numbering(c, numbering);
  take_file_labels(t, c);
  return t;
}

void metrics_target_free(struct metrics_target *t) {
  if (t->own_cursor && t->cursor) eventring_cursor_free(t->cursor);
  pauses_free(&t->pauses);
  free(t->pause.ex);
  for (int i = 0; i < METRICS_MAX_PHASES; i++)
    if (t->phase[i]) free(t->phase[i]->ex), free(t->phase[i]);
  free(t->counter);
  free(t->counter_set);
  for (int i = 0; i < t->nusers; i++) {
    struct metrics_user *u = t->users[i];
    free(u->ival);
    free(u->iset);
    if (u->span) free(u->span->ex);
    free(u->span);
    free(u->open);
    free(u);
  }
  free(t->users);
  free(t->user_by_id);
  free(t);
}

/* a += b, each count saturating. */
static void unrec_add(struct tool_unrecorded *a,
                      const struct tool_unrecorded *b) {
  uint64_t *x[3] = {&a->dropped, &a->no_slot, &a->malformed};
  const uint64_t y[3] = {b->dropped, b->no_slot, b->malformed};
  for (int i = 0; i < 3; i++)
    *x[i] = *x[i] + y[i] < *x[i] ? UINT64_MAX : *x[i] + y[i];
}

void metrics_target_close(struct metrics_target *t) {
  if (!t->cursor) return;
  struct tool_unrecorded u;
  if (tool_unrecorded(t->cursor, &u) == 0) {
    unrec_add(&t->unrec, &u);
    t->unrec_ok = 1;
  }
  if (t->own_cursor) eventring_cursor_free(t->cursor);
  t->cursor = NULL;
}

/* Events were lost in domain d, it paused, or another thread took the
 * slot: the user spans open there will never be seen to end (the pause
 * tracker is told by the caller). */
static void cut_spans(struct metrics_target *t, int d) {
  for (int i = 0; i < t->nusers; i++)
    if (t->users[i]->open && d >= 0 && d < t->nd) t->users[i]->open[d] = 0;
}

/* Grows `t`'s per-domain arrays to `nd` domains (a later session's file
 * may have more slots).  Returns 0, or -1 when out of memory (then the
 * domains above t->nd are not exported). */
static int grow_domains(struct metrics_target *t, int nd) {
  if (nd <= t->nd) return 0;
  size_t old = (size_t)t->nd, n = (size_t)nd;
#define GROW(p, each)                                                   \
  do {                                                                 \
    if (p) {                                                           \
      void *q = realloc(p, n * (each));                                \
      if (!q) return -1;                                               \
      memset((char *)q + old * (each), 0, (n - old) * (each));         \
      p = q;                                                           \
    }                                                                  \
  } while (0)
  GROW(t->counter, METRICS_MAX_COUNTERS * sizeof *t->counter);
  GROW(t->counter_set, METRICS_MAX_COUNTERS);
  for (int i = 0; i < t->nusers; i++) {
    struct metrics_user *u = t->users[i];
    GROW(u->ival, sizeof *u->ival);
    GROW(u->iset, 1);
    GROW(u->open, sizeof *u->open);
  }
#undef GROW
  t->nd = nd;
  return 0;
}

int metrics_target_rebind(struct metrics_target *t, eventring_cursor *c,
                          const char *path, int numbering) {
  struct pauses fresh;
  int nd = eventring_cursor_max_domains(c);
  if (nd < 1) nd = 1;
  if (grow_domains(t, nd) < 0 ||
      pauses_init(&fresh, c, t->nd, on_pause, t) < 0) {
    pauses_free(&fresh);
    return -1;
  }
  pauses_free(&t->pauses);
  t->pauses = fresh;
  t->pauses.live = 1;
  eventring_cursor_set_numbering(c, numbering);
  t->cursor = c;
  t->own_cursor = 1;
  copy_name(t->path, path, sizeof t->path);
  t->lost_words = eventring_cursor_lost_unit(c) == EVENTRING_LOST_WORDS;
  /* Ids are the file's: the new one maps them again, by name. */
  if (t->user_by_id)
    memset(t->user_by_id, 0,
           EVENTRING_MAX_USER_EVENTS * sizeof *t->user_by_id);
  for (int d = 0; d < t->nd; d++) cut_spans(t, d);
  t->paused = t->stopped = t->ended = t->failed = t->gone = 0;
  return 0;
}

/* A metric name made of `prefix` and an event's name, as Prometheus's
 * naming rules (those `promtool check metrics` enforces) want it: letters
 * lowered (snake_case), every character outside [a-z0-9_] made '_' (':'
 * is for recording rules), and each '_'-separated word that names a
 * metric type (counter, gauge, histogram, summary, untyped) put in the
 * plural, so that a gauge of the runtime counter major_work_counter is
 * not taken for a counter.  The prefix makes the first character a
 * letter; `prefix` must follow these rules itself. */
static void sanitise(char *dst, size_t n, const char *prefix,
                     const char *name) {
  static const char *const types[] = {"counter", "gauge", "histogram",
                                      "summary", "untyped"};
  size_t k = (size_t)snprintf(dst, n, "%s", prefix);
  if (k >= n) k = n - 1;
  size_t word = k; /* where the current word starts */
  for (const unsigned char *p = (const unsigned char *)name;; p++) {
    int c = *p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p;
    int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!ok) {
      /* A word ends here. */
      for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (k - word == strlen(types[i]) &&
            !memcmp(dst + word, types[i], k - word) && k + 1 < n)
          dst[k++] = 's';
      if (!*p) break;
      word = k + 1;
    }
    if (k + 1 < n) dst[k++] = ok ? (char)c : '_';
  }
  dst[k] = '\0';
}

static struct metrics_user *user_of(struct metrics_target *t, int id,
                                    const char *name) {
  if (id < 0 || id >= EVENTRING_MAX_USER_EVENTS) return NULL;
  if (!t->user_by_id) {
    t->user_by_id = calloc(EVENTRING_MAX_USER_EVENTS, sizeof *t->user_by_id);
    if (!t->user_by_id) return NULL;
  }
  if (t->user_by_id[id]) return t->user_by_id[id];
  char buf[TOOL_NAME_BUF];
  const char *shown =
      tool_name_or(buf, name, tool_name_fallback[TOOL_NAME_USER], id);
  /* One state per name: the ids of a later session (or two ids of one
   * name in a file) add to the same series. */
  for (int i = 0; i < t->nusers; i++)
    if (!strncmp(t->users[i]->name, shown, sizeof t->users[i]->name - 1))
      return t->user_by_id[id] = t->users[i];
  if (t->nusers == t->capusers) {
    int cap = t->capusers ? 2 * t->capusers : 16;
    struct metrics_user **p = realloc(t->users, (size_t)cap * sizeof *p);
    if (!p) return NULL;
    t->users = p;
    t->capusers = cap;
  }
  struct metrics_user *u = calloc(1, sizeof *u);
  if (!u) return NULL;
  u->id = id;
  copy_name(u->name, shown, sizeof u->name);
  sanitise(u->metric, sizeof u->metric, "eventring_user_", u->name);
  t->users[t->nusers++] = u;
  t->user_by_id[id] = u;
  return u;
}

/* ------------------------------------------------------------------ */
/* Events.                                                              */

void metrics_on_begin(struct metrics_target *t, int domain, uint64_t ts,
                      int phase) {
  t->events++;
  pauses_begin(&t->pauses, domain, ts, phase);
}

void metrics_on_end(struct metrics_target *t, int domain, uint64_t ts,
                    int phase) {
  t->events++;
  uint64_t start;
  /* A pause (the outermost phase) goes to on_pause() from in here. */
  if (pauses_end(&t->pauses, domain, ts, phase, &start) && phase >= 0 &&
      phase < METRICS_MAX_PHASES) {
    uint64_t d = ts >= start ? ts - start : 0;
    if (!t->phase[phase]) {
      t->phase[phase] = calloc(1, sizeof(struct metrics_hist));
      char buf[TOOL_NAME_BUF];
      copy_name(t->phase_name[phase],
                tool_event_name(t->cursor, TOOL_NAME_PHASE, phase, buf),
                METRICS_NAME_BYTES);
    }
    if (t->phase[phase]) metrics_hist_add(t->phase[phase], d);
  }
}

void metrics_on_counter(struct metrics_target *t, int domain, int counter,
                        uint64_t value) {
  t->events++;
  if (counter < 0 || counter >= METRICS_MAX_COUNTERS || domain < 0 ||
      domain >= t->nd)
    return;
  if (!t->counter) {
    t->counter =
        calloc((size_t)t->nd * METRICS_MAX_COUNTERS, sizeof *t->counter);
    t->counter_set = calloc((size_t)t->nd * METRICS_MAX_COUNTERS, 1);
    if (!t->counter || !t->counter_set) {
      free(t->counter), free(t->counter_set);
      t->counter = NULL, t->counter_set = NULL;
    }
  }
  if (t->counter) {
    size_t k = (size_t)domain * METRICS_MAX_COUNTERS + (size_t)counter;
    if (!t->counter_name[counter][0]) {
      char buf[TOOL_NAME_BUF];
      copy_name(t->counter_name[counter],
                tool_event_name(t->cursor, TOOL_NAME_COUNTER, counter, buf),
                METRICS_NAME_BYTES);
    }
    t->counter[k] = value;
    t->counter_set[k] = 1;
  }
}

void metrics_on_other(struct metrics_target *t) { t->events++; }

void metrics_on_lifecycle(struct metrics_target *t, int domain, int kind) {
  t->events++;
  pauses_lifecycle(&t->pauses, domain, kind);
  switch (kind) {
  case EVENTRING_LIFECYCLE_RING_PAUSE:
    t->paused = 1;
    cut_spans(t, domain);
    break;
  case EVENTRING_LIFECYCLE_RING_RESUME:
    t->paused = 0;
    break;
  case EVENTRING_LIFECYCLE_RING_START:
    t->paused = 0;
    t->stopped = 0;
    break;
  case EVENTRING_LIFECYCLE_RING_STOP:
    t->stopped = 1;
    break;
  case EVENTRING_LIFECYCLE_DOMAIN_SPAWN:
  case EVENTRING_LIFECYCLE_DOMAIN_TERMINATE:
    cut_spans(t, domain);
    break;
  default: break;
  }
}

void metrics_on_user_unit(struct metrics_target *t, int id,
                          const char *name) {
  t->events++;
  struct metrics_user *u = user_of(t, id, name);
  if (u) u->units++, u->has_unit = 1;
}

void metrics_on_user_int(struct metrics_target *t, int domain, int id,
                         const char *name, int64_t value) {
  t->events++;
  struct metrics_user *u = user_of(t, id, name);
  if (!u || domain < 0 || domain >= t->nd) return;
  if (!u->ival) {
    u->ival = calloc((size_t)t->nd, sizeof *u->ival);
    u->iset = calloc((size_t)t->nd, 1);
    if (!u->ival || !u->iset) {
      free(u->ival), free(u->iset);
      u->ival = NULL, u->iset = NULL;
    }
  }
  if (u->ival) u->ival[domain] = value, u->iset[domain] = 1;
}

void metrics_on_user_span(struct metrics_target *t, int domain, uint64_t ts,
                          int id, const char *name, int is_end) {
  t->events++;
  struct metrics_user *u = user_of(t, id, name);
  if (!u || domain < 0 || domain >= t->nd) return;
  if (!u->span) {
    u->span = calloc(1, sizeof *u->span);
    u->open = calloc((size_t)t->nd, sizeof *u->open);
    if (!u->span || !u->open) {
      free(u->span), free(u->open);
      u->span = NULL, u->open = NULL;
    }
  }
  if (!u->span) return;
  /* Spans of one event do not nest: a second begin restarts it. */
  if (!is_end) {
    u->open[domain] = ts + 1;
  } else if (u->open[domain]) {
    uint64_t b = u->open[domain] - 1;
    metrics_hist_add(u->span, ts >= b ? ts - b : 0);
    u->open[domain] = 0;
  }
}

void metrics_on_lost(struct metrics_target *t, int domain, uint64_t count) {
  t->lost += count;
  pauses_cut(&t->pauses, domain);
  cut_spans(t, domain);
}

/* ------------------------------------------------------------------ */
/* Exemplars.                                                           */

/* The histogram `source` of `t`, or NULL when it has none yet. */
static struct metrics_hist *hist_of(struct metrics_target *t,
                                    const char *source) {
  if (!strcmp(source, "pause")) return t->pause.count ? &t->pause : NULL;
  if (!strncmp(source, "phase:", 6)) {
    for (int p = 0; p < METRICS_MAX_PHASES; p++)
      if (t->phase[p] && !strcmp(t->phase_name[p], source + 6))
        return t->phase[p];
    return NULL;
  }
  for (int i = 0; i < t->nusers; i++)
    if (!strcmp(t->users[i]->name, source + 5)) return t->users[i]->span;
  return NULL;
}

int metrics_exemplar_add(struct metrics_set *set, pid_t pid,
                         const char *source, uint64_t value_ns,
                         uint64_t wall_ns, uint64_t seen_ns,
                         const char *id) {
  if ((strcmp(source, "pause") && strncmp(source, "phase:", 6) &&
       strncmp(source, "span:", 5)) ||
      strlen(id) > METRICS_EXEMPLAR_ID)
    return -1;
  struct metrics_hist *h = NULL;
  for (struct metrics_target *t = set->targets; t && !h; t = t->next)
    if (t->pid == pid) h = hist_of(t, source);
  if (!h) return 1;
  if (!h->ex && !(h->ex = calloc(METRICS_N_BOUNDS + 1, sizeof *h->ex)))
    return -1;
  struct metrics_exemplar *x = &h->ex[bucket_of(value_ns)];
  snprintf(x->id, sizeof x->id, "%s", id);
  x->value_ns = value_ns;
  x->wall_ns = wall_ns;
  x->seen_ns = seen_ns;
  return 0;
}

const struct metrics_exemplar *
metrics_sample_exemplar(const struct metrics_sample *s) {
  if (!s->hist || !s->hist->ex || s->bucket < 0) return NULL;
  const struct metrics_exemplar *x = &s->hist->ex[s->bucket];
  return x->id[0] ? x : NULL;
}

int64_t metrics_exemplar_ms(const struct metrics_exemplar *x) {
  return (int64_t)((x->wall_ns ? x->wall_ns : x->seen_ns) / 1000000u);
}

/* ------------------------------------------------------------------ */
/* The listing.                                                         */

void metrics_utf8(const char *s, void (*put)(void *arg, const char *p,
                                              size_t n), void *arg) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    size_t ascii = 0;
    while (p[ascii] && p[ascii] < 0x80) ascii++;
    if (ascii) {
      put(arg, (const char *)p, ascii);
      p += ascii;
      continue;
    }
    unsigned c = *p;
    int n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (c >= 0xf5) n = 0;
    int ok = n > 0;
    for (int i = 1; ok && i < n; i++) ok = (p[i] & 0xc0) == 0x80;
    /* Overlong forms and surrogates are not UTF-8 either. */
    if (ok && n == 3)
      ok = !(c == 0xe0 && p[1] < 0xa0) && !(c == 0xed && p[1] >= 0xa0);
    if (ok && n == 4)
      ok = !(c == 0xf0 && p[1] < 0x90) && !(c == 0xf4 && p[1] >= 0x90);
    if (ok) {
      put(arg, (const char *)p, (size_t)n);
      p += n;
    } else {
      put(arg, "\xef\xbf\xbd", 3);
      p++;
    }
  }
}

double metrics_sample_value(const struct metrics_sample *s) {
  switch (s->kind) {
  case METRICS_INT: return (double)s->i;
  case METRICS_SECONDS: {
    /* As a scrape's parser reads the text: one rounding, not two. */
    char text[48];
    snprintf(text, sizeof text, "%" PRIu64 ".%09" PRIu64,
             s->u / 1000000000u, s->u % 1000000000u);
    return strtod(text, NULL);
  }
  default: return (double)s->u;
  }
}

/* The labels of a sample being listed: the set's common ones, the
 * target's, then up to two of the sample's own. */
#define MAX_OWN_LABELS 2
struct labels {
  struct metrics_label *v;
  int n, base; /* in use; the common and target's ones */
  char pid[24];
  struct metrics_label fixed[16 + MAX_OWN_LABELS + 2 + METRICS_FILE_LABELS];
  struct metrics_label *heap;
};

/* Sets `l` to the common labels and, when `t`, the target's.  Returns 0,
 * or -1 when out of memory. */
static int labels_start(struct labels *l, const struct metrics_set *set,
                        const struct metrics_target *t) {
  int need = set->ncommon + 2 + METRICS_FILE_LABELS + MAX_OWN_LABELS;
  l->heap = NULL;
  l->v = l->fixed;
  if (need > (int)(sizeof l->fixed / sizeof l->fixed[0])) {
    l->heap = malloc((size_t)need * sizeof *l->heap);
    if (!l->heap) return -1;
    l->v = l->heap;
  }
  l->n = 0;
  for (int i = 0; i < set->ncommon; i++) l->v[l->n++] = set->common[i];
  if (t) {
    snprintf(l->pid, sizeof l->pid, "%ld", (long)t->pid);
    l->v[l->n++] = (struct metrics_label){"pid", l->pid};
    l->v[l->n++] = (struct metrics_label){"program", t->program};
    /* The file's own, unless an operator's --label (which wins) or one
     * of metrics' own has the name. */
    for (int i = 0; i < t->nfile_labels; i++) {
      const char *name = t->file_label[i].name;
      int taken = 0;
      for (int k = 0; !taken && k < set->ncommon; k++)
        taken = !strcmp(set->common[k].name, name);
      for (int k = 0; !taken && metrics_reserved_labels[k]; k++)
        taken = !strcmp(metrics_reserved_labels[k], name);
      if (!taken) l->v[l->n++] = t->file_label[i];
    }
  }
  l->base = l->n;
  return 0;
}

static void labels_end(struct labels *l) { free(l->heap); }

/* Sets the labels after the target's to `k1=v1` and `k2=v2` (NULL keys:
 * fewer). */
static void labels_own(struct labels *l, const char *k1, const char *v1,
                       const char *k2, const char *v2) {
  l->n = l->base;
  if (k1) l->v[l->n++] = (struct metrics_label){k1, v1};
  if (k2) l->v[l->n++] = (struct metrics_label){k2, v2};
}

static void put_value(const struct metrics_sink *o, const char *name,
                      const struct labels *l, enum metrics_value_kind kind,
                      uint64_t u, int64_t i) {
  struct metrics_sample s = {name, l->v, l->n, kind, u, i, NULL, -1};
  o->sample(o->arg, &s);
}

static void put_family(const struct metrics_sink *o, const char *name,
                       const char *type, const char *help) {
  o->family(o->arg, name, type, help);
}

/* A histogram's samples; `extra_key` is a label such as phase written
 * before le (or NULL). */
static void put_hist(const struct metrics_sink *o, const char *name,
                     struct labels *l, const char *extra_key,
                     const char *extra_value, const struct metrics_hist *h) {
  char sname[2 * EVENTRING_MAX_NAME + 64];
  uint64_t cum = 0;
  snprintf(sname, sizeof sname, "%s_bucket", name);
  for (int i = 0; i <= METRICS_N_BOUNDS; i++) {
    cum += h->bucket[i];
    labels_own(l, extra_key, extra_value, "le",
               i < METRICS_N_BOUNDS ? bound_le[i] : "+Inf");
    struct metrics_sample s = {sname, l->v, l->n, METRICS_UINT, cum, 0, h, i};
    o->sample(o->arg, &s);
  }
  labels_own(l, extra_key, extra_value, NULL, NULL);
  snprintf(sname, sizeof sname, "%s_sum", name);
  put_value(o, sname, l, METRICS_SECONDS, h->sum_ns, 0);
  snprintf(sname, sizeof sname, "%s_count", name);
  put_value(o, sname, l, METRICS_UINT, h->count, 0);
}

/* The families named after events, gathered from every target and
 * sorted, so that each family's HELP and TYPE come once, followed by all
 * of its samples. */
enum fam_kind { F_COUNTER, F_INT, F_SPAN, F_UNIT };

struct entry {
  char family[2 * EVENTRING_MAX_NAME + 48];
  enum fam_kind kind;
  const struct metrics_target *t;
  int idx;                       /* counter id */
  const struct metrics_user *u;  /* user events */
};

static int entry_cmp(const void *a, const void *b) {
  const struct entry *x = a, *y = b;
  int c = strcmp(x->family, y->family);
  if (c) return c;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->t->pid != y->t->pid) return x->t->pid < y->t->pid ? -1 : 1;
  if (x->u && y->u) return strcmp(x->u->name, y->u->name);
  return 0;
}

static const char *const fam_type[] = {"gauge", "gauge", "histogram",
                                       "counter"};
static const char *const fam_help[] = {
    "Latest value of this runtime counter, per domain.",
    "Latest value of this user int event, per domain.",
    "Durations of this user span event, in seconds.",
    "Number of these user unit events."};

static void put_entry(const struct metrics_sink *o,
                      const struct metrics_set *set, const struct entry *e) {
  const struct metrics_target *t = e->t;
  struct labels l;
  if (labels_start(&l, set, t) < 0) return;
  char dom[16];
  if (e->kind == F_COUNTER) {
    for (int d = 0; d < t->nd; d++) {
      size_t k = (size_t)d * METRICS_MAX_COUNTERS + (size_t)e->idx;
      if (!t->counter_set[k]) continue;
      snprintf(dom, sizeof dom, "%d", d);
      labels_own(&l, "domain", dom, NULL, NULL);
      put_value(o, e->family, &l, METRICS_UINT, t->counter[k], 0);
    }
  } else if (e->kind == F_INT) {
    for (int d = 0; d < t->nd; d++) {
      if (!e->u->iset[d]) continue;
      snprintf(dom, sizeof dom, "%d", d);
      labels_own(&l, "event", e->u->name, "domain", dom);
      put_value(o, e->family, &l, METRICS_INT, 0, e->u->ival[d]);
    }
  } else if (e->kind == F_SPAN) {
    put_hist(o, e->family, &l, "event", e->u->name, e->u->span);
  } else {
    labels_own(&l, "event", e->u->name, NULL, NULL);
    put_value(o, e->family, &l, METRICS_UINT, e->u->units, 0);
  }
  labels_end(&l);
}

/* The families named after events never collide across types, whatever
 * the names: a user span's family ends in _seconds, a unit event's in
 * _total, and a gauge's never ends in either (nor as a histogram's
 * samples do, _count, _sum, _bucket): such a name gets _value after it.
 * So a name another family's type would take (an int r_seconds beside a
 * span r, in any process) is the gauge's with _value, and two events of
 * one type whose names clean alike share a family, told apart by the
 * label `event`. */
static void gauge_suffix(char *family, size_t n) {
  static const char *const reserved[] = {"_total", "_count", "_sum",
                                         "_bucket", "_seconds"};
  size_t len = strlen(family);
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
    size_t r = strlen(reserved[i]);
    if (len >= r && !strcmp(family + len - r, reserved[i])) {
      snprintf(family + len, n - len, "_value");
      return;
    }
  }
}

static void list_named(const struct metrics_set *set,
                       const struct metrics_sink *o) {
  size_t n = 0, cap = 0;
  struct entry *es = NULL;
#define ADD(x)                                                      \
  do {                                                             \
    if (n == cap) {                                                \
      size_t nc = cap ? 2 * cap : 64;                              \
      struct entry *p = realloc(es, nc * sizeof *p);               \
      if (!p) goto out;                                            \
      es = p, cap = nc;                                            \
    }                                                              \
    es[n++] = (x);                                                 \
  } while (0)
  for (const struct metrics_target *t = set->targets; t; t = t->next) {
    size_t first_counter = n;
    for (int c = 0; c < METRICS_MAX_COUNTERS && t->counter; c++) {
      if (!t->counter_name[c][0]) continue;
      struct entry e = {.kind = F_COUNTER, .t = t, .idx = c};
      sanitise(e.family, sizeof e.family, "eventring_runtime_",
               t->counter_name[c]);
      gauge_suffix(e.family, sizeof e.family);
      /* Runtime counters have no label with their own name: a file whose
       * table names two alike gets the later one's id after its name. */
      for (size_t k = first_counter; k < n; k++)
        if (!strcmp(es[k].family, e.family)) {
          size_t len = strlen(e.family);
          snprintf(e.family + len, sizeof e.family - len, "_%d", c);
          break;
        }
      ADD(e);
    }
    for (int i = 0; i < t->nusers; i++) {
      const struct metrics_user *u = t->users[i];
      struct entry e = {.t = t, .u = u};
      if (u->ival) {
        e.kind = F_INT;
        snprintf(e.family, sizeof e.family, "%s", u->metric);
        gauge_suffix(e.family, sizeof e.family);
        ADD(e);
      }
      if (u->span) {
        e.kind = F_SPAN;
        snprintf(e.family, sizeof e.family, "%s_seconds", u->metric);
        ADD(e);
      }
      if (u->has_unit) {
        e.kind = F_UNIT;
        snprintf(e.family, sizeof e.family, "%s_total", u->metric);
        ADD(e);
      }
    }
  }
#undef ADD
  if (n > 1) qsort(es, n, sizeof *es, entry_cmp);
  for (size_t i = 0; i < n; i++) {
    int first = i == 0 || strcmp(es[i].family, es[i - 1].family) != 0;
    /* A family of another type, or a series twice: the names made here
     * never give them (gauge_suffix()), but whatever a file holds, the
     * exposition must stay one that Prometheus accepts. */
    if (!first && es[i].kind != es[i - 1].kind) {
      while (i + 1 < n && !strcmp(es[i + 1].family, es[i].family)) i++;
      continue;
    }
    if (!first && es[i].kind == F_COUNTER && es[i].t == es[i - 1].t)
      continue;
    if (first)
      put_family(o, es[i].family, fam_type[es[i].kind], fam_help[es[i].kind]);
    put_entry(o, set, &es[i]);
  }
out:
  free(es);
}

/* What the writer dropped and the reader skipped: from the file while it
 * is open, then as it last said.  Returns 0 when nothing is known. */
static int unrecorded(const struct metrics_target *t,
                      struct tool_unrecorded *u) {
  *u = t->unrec;
  struct tool_unrecorded now;
  if (!t->cursor || tool_unrecorded(t->cursor, &now) != 0) return t->unrec_ok;
  unrec_add(u, &now);
  return 1;
}

/* What a per-target family of the exporter's own lists. */
enum own_value { V_EVENTS, V_LOST_EVENTS, V_LOST_WORDS, V_DROPPED,
                 V_MALFORMED, V_PAUSED };

/* The samples of `name`, one per target that has the value: the dropped
 * and malformed events are read from the file at each listing
 * (eventring_cursor_dropped may be called while another thread polls);
 * a file that no longer gives them has no sample. */
static void put_per_target(const struct metrics_set *set,
                           const struct metrics_sink *o, const char *name,
                           enum own_value what) {
  for (const struct metrics_target *t = set->targets; t; t = t->next) {
    uint64_t v;
    struct tool_unrecorded u;
    switch (what) {
    case V_EVENTS: v = t->events; break;
    case V_LOST_EVENTS:
    case V_LOST_WORDS:
      if (t->lost_words != (what == V_LOST_WORDS)) continue;
      v = t->lost;
      break;
    case V_DROPPED:
    case V_MALFORMED:
      if (!unrecorded(t, &u)) continue;
      v = what == V_MALFORMED ? u.malformed : u.dropped;
      break;
    default: v = (uint64_t)t->paused; break;
    }
    struct labels l;
    if (labels_start(&l, set, t) < 0) continue;
    put_value(o, name, &l, METRICS_UINT, v, 0);
    labels_end(&l);
  }
}

/* The pusher's own families, with the common labels `l`. */
static void list_push(const struct metrics_push_stats *p,
                      const struct labels *l, const struct metrics_sink *o) {
  static const struct {
    const char *name, *type, *help;
    size_t offset;
  } fams[] = {
      {"eventring_remote_write_samples_total", "counter",
       "Samples collected for remote write.",
       offsetof(struct metrics_push_stats, collected)},
      {"eventring_remote_write_sent_samples_total", "counter",
       "Samples the remote-write receiver accepted.",
       offsetof(struct metrics_push_stats, sent)},
      {"eventring_remote_write_dropped_samples_total", "counter",
       "Samples dropped because the queue was full while the receiver "
       "stayed away.",
       offsetof(struct metrics_push_stats, dropped)},
      {"eventring_remote_write_rejected_samples_total", "counter",
       "Samples the remote-write receiver refused (a 4xx status).",
       offsetof(struct metrics_push_stats, rejected)},
      {"eventring_remote_write_queued_samples", "gauge",
       "Samples waiting to be sent.",
       offsetof(struct metrics_push_stats, queued)},
      {"eventring_remote_write_failed_requests_total", "counter",
       "Remote-write requests that failed and were tried again.",
       offsetof(struct metrics_push_stats, failed)},
  };
  for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
    const uint64_t *v =
        (const uint64_t *)((const char *)p + fams[i].offset);
    put_family(o, fams[i].name, fams[i].type, fams[i].help);
    put_value(o, fams[i].name, l, METRICS_UINT,
              __atomic_load_n(v, __ATOMIC_RELAXED), 0);
  }
}

const char *const metrics_reserved_labels[] = {
    "pid", "program", "domain", "event", "phase", "le", NULL};

void metrics_list(const struct metrics_set *set,
                  const struct metrics_sink *o) {
  const struct metrics_target *t;
  int ntargets = 0, any_words = 0, any_events = 0;
  for (t = set->targets; t; t = t->next) {
    ntargets++;
    if (t->lost_words) any_words = 1;
    else any_events = 1;
  }
  struct labels l;
  if (labels_start(&l, set, NULL) < 0) return;
  put_family(o, "eventring_rings", "gauge",
             "Ring files this exporter is reading.");
  put_value(o, "eventring_rings", &l, METRICS_UINT, (uint64_t)ntargets, 0);
  if (set->push) list_push(set->push, &l, o);
  labels_end(&l);

  put_family(o, "eventring_events_read_total", "counter",
             "Events read from the ring file.");
  put_per_target(set, o, "eventring_events_read_total", V_EVENTS);
  if (any_events) {
    put_family(o, "eventring_lost_events_total", "counter",
               "Events overwritten by the writer before they were read.");
    put_per_target(set, o, "eventring_lost_events_total", V_LOST_EVENTS);
  }
  if (any_words) {
    put_family(o, "eventring_lost_ring_words_total", "counter",
               "Ring words of events overwritten before they were read "
               "(OCaml 5's files count words, not events).");
    put_per_target(set, o, "eventring_lost_ring_words_total", V_LOST_WORDS);
  }
  put_family(o, "eventring_dropped_events_total", "counter",
             "Events the writer could not record: threads without a domain "
             "slot, probes in signal handlers, events longer than the ring.");
  put_per_target(set, o, "eventring_dropped_events_total", V_DROPPED);
  put_family(o, "eventring_malformed_events_total", "counter",
             "Malformed events the reader skipped.");
  put_per_target(set, o, "eventring_malformed_events_total", V_MALFORMED);
  put_family(o, "eventring_ring_paused", "gauge",
             "1 while recording is paused (after ring_pause), else 0.");
  put_per_target(set, o, "eventring_ring_paused", V_PAUSED);
  put_family(o, "eventring_gc_pause_seconds", "histogram",
             "GC pauses (outermost runtime phases of a domain), in seconds.");
  for (t = set->targets; t; t = t->next) {
    if (labels_start(&l, set, t) < 0) continue;
    put_hist(o, "eventring_gc_pause_seconds", &l, NULL, NULL, &t->pause);
    labels_end(&l);
  }
  put_family(o, "eventring_gc_phase_seconds", "histogram",
             "Durations of each runtime phase, nested ones included, in "
             "seconds.");
  for (t = set->targets; t; t = t->next) {
    if (labels_start(&l, set, t) < 0) continue;
    for (int p = 0; p < METRICS_MAX_PHASES; p++)
      if (t->phase[p])
        put_hist(o, "eventring_gc_phase_seconds", &l, "phase",
                 t->phase_name[p], t->phase[p]);
    labels_end(&l);
  }
  list_named(set, o);
}
