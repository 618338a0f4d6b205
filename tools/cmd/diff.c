/* diff.c -- `eventring diff A B`: how run B differs from run A, per
 * runtime phase and per user span.
 *
 * A and B are each a ring file or a saved `eventring stats --json`
 * output (told apart by their first byte: '{' is JSON).  From a ring
 * file, every completed instance of a phase (at any depth, paired as
 * `stats` pairs them, through analysis.c's pause tracker) and of a user
 * span (paired per thread track as `stats` and `latency --span` pair
 * them, by spans.c) gives a duration, recorded in a histogram
 * (analysis.h: percentiles within 0.05 %).  From stats
 * --json, the figures it holds: count ("completed" for a phase),
 * total_ns, mean_ns, max_ns, p50_ns and p99_ns when present, and the
 * sample itself when the entry has "buckets": [[VALUE_NS, COUNT], ...]
 * (a histogram's non-empty buckets, ascending, as stats writes them for
 * phases and spans).
 *
 * Rows pair A's and B's entries by kind and name.  Each shows count,
 * total, mean, p50, p99 and max in A and B and the change in percent,
 * (B - A) / A.  Two runs of one program never give samples of exactly
 * one distribution (clock speed, caches, other load), and a rank test of
 * thousands of tight durations calls a shift of 0.1 % certain: being
 * beyond noise is not being large.  So a change is marked only when it
 * is both: at least the minimum effect e (--min-effect, 10 % by default)
 * and beyond noise against a change of exactly e, i.e. B's durations
 * divided by 1 + e (1 - e for a speed-up) still differ from A's with p
 * below --alpha (0.01).  The test is the metric's own: Welch's for the
 * mean, the quantile test (analysis.h) at p50 and at p99 -- the tail's
 * test looks at the durations above the pooled p99 only, so a tail that
 * moves alone is seen and a bulk that moves alone does not mark p99.
 * The rank test of the whole distribution is shown, and marks nothing.
 *
 * --fail-if '[span:|phase:][NAME:]METRIC(>|<)[+|-]PCT%' makes the exit
 * status 1 when the change of METRIC (count, total, mean, p50, p99, max)
 * passes the threshold in a row present on both sides (whose kind and
 * name match, NAME a glob), in the condition's direction ('>' only on an
 * increase, '<' only on a decrease), by at least the minimum effect, and,
 * for mean, p50 and p99, marked and beyond noise against the threshold
 * itself (condition_real).
 * A condition that names a row no side pair has, or that no row can
 * answer (the metric missing from a stats --json), is an error (exit 1)
 * rather than a silent pass.
 *
 * --domain, --event, --kind, --since, --until and --last filter the
 * events of a ring-file input as they do for the other subcommands; a
 * saved stats --json was filtered when saved, and refuses them.
 *
 * --json prints one object; eventring(1) documents it.
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cmd.h"

#define HELP_REF "eventring diff --help"
#define N_IDS 8192 /* ids are 13 bits wide */
#define FAIL_IF_MAX 32
#define JSON_INPUT_MAX ((size_t)1 << 30)
#define DEFAULT_MIN_EFFECT 10.0 /* percent */
/* Welch's test takes the mean of this many durations as normal; below,
 * its p-value would be too small (the t distribution's tails are
 * heavier), and the mean has no test. */
#define MEAN_TEST_MIN 30

enum { K_PHASE, K_SPAN };
static const char *const kind_names[] = {"phase", "span"};

enum { M_COUNT, M_TOTAL, M_MEAN, M_P50, M_P99, M_MAX, N_METRICS };
static const char *const metric_names[] = {"count", "total", "mean",
                                           "p50",   "p99",   "max"};
static const char *const metric_json[] = {"count",  "total_ns", "mean_ns",
                                          "p50_ns", "p99_ns",   "max_ns"};

/* The metrics whose change has a noise test: the mean (Welch's test) and
 * p50 and p99 (quantile tests).  count and total are not durations, max
 * is one duration. */
#define N_EFFECTS 3
static const int effect_metric[N_EFFECTS] = {M_MEAN, M_P50, M_P99};

/* The test of one metric's change against the minimum effect e: B's
 * durations divided by 1 + e for a slowdown (1 - e for a speed-up) and
 * tested against A's; p is twice the one-sided p-value on the side of
 * the change.  Marked when the change is at least e and p < alpha: B
 * still slower (faster), beyond noise and beyond the minimum effect.
 * The mean has a test from MEAN_TEST_MIN durations on each side. */
struct effect {
  int tested;
  double scale; /* 1 + e or 1 - e */
  double p;
  int marked;
};

/* One kind and name in one input. */
struct dist {
  int kind;
  char *name;
  size_t hash; /* of kind and name (name_hash) */
  double m[N_METRICS]; /* the figures, as doubles for the changes */
  uint64_t u[N_METRICS]; /* the same, exact, but the mean */
  int has[N_METRICS];
  struct histogram *hist; /* a ring file's durations */
  uint64_t total;
  /* The sample, ascending distinct values and their counts (NULL: not
   * known, a stats --json without buckets). */
  uint64_t *val, *cnt;
  size_t nval;
};

/* The filter options (--since, --kind...), given again to each ring
 * file's source: filter.c keeps one filter, which closing a source
 * clears. */
#define FILTER_MAX 64
struct filter_opt {
  int c;
  const char *arg;
};

struct input {
  const char *path;
  const struct filter_opt *filters;
  int nfilters;
  int ocaml50, ocaml53; /* the phase numbering forced, for a ring file */
  int json;
  int dir; /* a directory of one process's ring files */
  struct dist *d;
  size_t n, cap;
  /* (kind, name) -> 1 + the index in d, 0 for an empty slot: open
   * addressing, index_cap slots (a power of two), at most half full. */
  size_t *index, index_cap;
  int failed; /* out of memory */
  /* While reading a ring file. */
  struct tool_source src;
  struct pauses pauses;
  struct spans spans;
  int phase_idx[N_IDS]; /* id -> index in d, -1 */
};

/* A test build counts the names compared in lookups here. */
#ifndef DIFF_NAME_COMPARED
#define DIFF_NAME_COMPARED() ((void)0)
#endif

static size_t name_hash(int kind, const char *name) {
  uint64_t h = 1469598103934665603ULL ^ (uint64_t)kind; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)name; *p; p++)
    h = (h ^ *p) * 1099511628211ULL;
  return (size_t)(h ^ h >> 29);
}

/* The slot of in->index where `kind` and `name` (whose name_hash is
 * `hash`) are, or the empty one where they would go (in->index_cap, a
 * power of two, is never full). */
static size_t *slot_of(const struct input *in, int kind, const char *name,
                       size_t hash) {
  size_t mask = in->index_cap - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    size_t *s = &in->index[i];
    if (!*s) return s;
    const struct dist *d = &in->d[*s - 1];
    if (d->hash != hash || d->kind != kind) continue;
    DIFF_NAME_COMPARED();
    if (!strcmp(d->name, name)) return s;
  }
}

static struct dist *find(const struct input *in, int kind, const char *name) {
  if (!in->index_cap) return NULL;
  size_t *s = slot_of(in, kind, name, name_hash(kind, name));
  return *s ? &in->d[*s - 1] : NULL;
}

/* Makes room in in->index for one more entry (kept at most half full).
 * Returns 0, or -1 when out of memory. */
static int index_grow(struct input *in) {
  if (2 * (in->n + 1) <= in->index_cap) return 0;
  size_t cap = in->index_cap ? 2 * in->index_cap : 64;
  size_t *old = in->index, old_cap = in->index_cap;
  if (!(in->index = calloc(cap, sizeof *in->index))) {
    in->index = old;
    return -1;
  }
  in->index_cap = cap;
  /* The names are distinct: each goes to the first empty slot. */
  for (size_t i = 0; i < old_cap; i++)
    if (old[i]) {
      size_t j = in->d[old[i] - 1].hash & (cap - 1);
      while (in->index[j]) j = (j + 1) & (cap - 1);
      in->index[j] = old[i];
    }
  free(old);
  return 0;
}

/* The entry of `kind` and `name`, added when new; NULL when out of
 * memory. */
static struct dist *entry(struct input *in, int kind, const char *name) {
  struct dist *e = find(in, kind, name);
  if (e) return e;
  if (index_grow(in) < 0) goto oom;
  if (in->n == in->cap) {
    size_t cap = in->cap ? 2 * in->cap : 32;
    struct dist *v = realloc(in->d, cap * sizeof *v);
    if (!v) goto oom;
    in->d = v;
    in->cap = cap;
  }
  e = &in->d[in->n];
  memset(e, 0, sizeof *e);
  e->kind = kind;
  e->hash = name_hash(kind, name);
  e->name = strdup(name);
  if (!e->name) goto oom;
  in->n++;
  *slot_of(in, kind, name, e->hash) = in->n;
  return e;
oom:
  if (!in->failed) tool_error("out of memory");
  in->failed = 1;
  return NULL;
}

/* The entry of phase `id` in the ring file being read, by the name the
 * file gives it. */
static struct dist *phase_entry(struct input *in, int id) {
  id &= N_IDS - 1;
  if (in->phase_idx[id] >= 0) return &in->d[in->phase_idx[id]];
  char buf[TOOL_NAME_BUF];
  const char *name =
      tool_event_name(in->src.cursor, TOOL_NAME_PHASE, id, buf);
  struct dist *e = entry(in, K_PHASE, name);
  if (!e) return NULL;
  if (!e->hist && !(e->hist = hist_create())) {
    if (!in->failed) tool_error("out of memory");
    in->failed = 1;
    return NULL;
  }
  in->phase_idx[id] = (int)(e - in->d);
  return e;
}

/* ------------------------------------------------------------------ */
/* Reading a ring file.                                                 */

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  struct input *in = data;
  pauses_begin(&in->pauses, domain, ts, phase);
  return !in->failed;
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  struct input *in = data;
  uint64_t start;
  if (pauses_end(&in->pauses, domain, ts, phase, &start)) {
    struct dist *e = phase_entry(in, phase);
    if (!e) return 0;
    uint64_t d = ts >= start ? ts - start : 0;
    hist_record(e->hist, d);
    e->total += d;
  }
  return !in->failed;
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  (void)ts, (void)value, (void)has_data;
  struct input *in = data;
  tool_source_lifecycle(&in->src, kind);
  pauses_lifecycle(&in->pauses, domain, kind);
  spans_lifecycle(&in->spans, domain, kind);
  return 1;
}

static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  struct input *in = data;
  if (is_end)
    spans_end(&in->spans, domain, ts, id, name);
  else
    spans_begin(&in->spans, domain, ts, id, name);
  return !in->spans.oom;
}

/* Spans pair on their thread's track in a slot that threads share. */
static int on_thread(void *data, int domain, uint64_t ts, int64_t thread,
                     uint64_t tid, const char *name, size_t len) {
  (void)ts, (void)name, (void)len;
  struct input *in = data;
  spans_thread(&in->spans, domain, thread, tid);
  return 1;
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct input *in = data;
  tool_source_lost(&in->src, domain, count);
  pauses_cut(&in->pauses, domain);
  spans_cut(&in->spans, domain);
  return 1;
}

/* The summary figures and the sample of a ring file's entry, from the
 * histogram `h` of its durations (NULL: none) and their sum. */
static int settle(struct dist *e, const struct histogram *h,
                  uint64_t total) {
  uint64_t n = h ? hist_count(h) : 0;
  e->u[M_COUNT] = n;
  e->u[M_TOTAL] = total;
  e->u[M_P50] = n ? hist_percentile(h, 50) : 0;
  e->u[M_P99] = n ? hist_percentile(h, 99) : 0;
  e->u[M_MAX] = n ? hist_max(h) : 0;
  for (int m = 0; m < N_METRICS; m++) {
    e->m[m] = (double)e->u[m];
    e->has[m] = n > 0 || m == M_COUNT || m == M_TOTAL;
  }
  e->m[M_MEAN] = n ? (double)total / (double)n : 0;
  size_t i = 0, k = 0;
  uint64_t v, c;
  while (n && hist_bucket_next(h, &i, &v, &c)) k++;
  e->val = malloc((k ? k : 1) * sizeof *e->val);
  e->cnt = malloc((k ? k : 1) * sizeof *e->cnt);
  if (!e->val || !e->cnt) return -1;
  for (i = 0, k = 0; n && hist_bucket_next(h, &i, &v, &c); k++) {
    e->val[k] = v;
    e->cnt[k] = c;
  }
  e->nval = k;
  return 0;
}

static int load_ring(struct input *in) {
  struct tool_source *src = &in->src;
  memset(src, 0, sizeof *src);
  src->ocaml50 = in->ocaml50;
  src->ocaml53 = in->ocaml53;
  for (int i = 0; i < in->nfilters; i++) {
    char why[300];
    /* Checked when parsed: cannot fail here. */
    tool_filter_option(src, in->filters[i].c, in->filters[i].arg, why,
                       sizeof why);
  }
  char *args[1] = {(char *)in->path};
  /* A directory (`eventring record`'s) of one process's files, read as
   * one run of it. */
  struct stat st;
  src->multi = in->dir = stat(in->path, &st) == 0 && S_ISDIR(st.st_mode);
  int rc = tool_source_open(src, 1, args, HELP_REF);
  if (rc != TOOL_EXIT_OK) return rc;
  if (src->multi && src->nprocs != 1) {
    tool_error("%s: the files of %d processes: give the files of one "
               "(one run of one program)", in->path, src->nprocs);
    tool_source_close(src);
    return TOOL_EXIT_INPUT;
  }
  for (int i = 0; i < N_IDS; i++) in->phase_idx[i] = -1;
  int ndomains = eventring_cursor_max_domains(src->cursor);
  eventring_callbacks *cb = NULL;
  int pauses_ok =
      pauses_init(&in->pauses, src->cursor, ndomains, NULL, NULL) == 0;
  int spans_ok = spans_init(&in->spans, src->cursor, ndomains, 0, NULL, 0) == 0;
  if (!pauses_ok || !spans_ok) goto oom;
  static const struct tool_handlers handlers = {
      .runtime_begin = on_begin,
      .runtime_end = on_end,
      .lifecycle = on_lifecycle,
      .user_span = on_user_span,
      .lost_events = on_lost,
      .thread = on_thread,
  };
  cb = tool_callbacks_new(&handlers);
  if (!cb) goto oom;
  rc = tool_source_read(src, cb, in);
  if (in->failed) rc = TOOL_EXIT_INPUT;
  if (rc == TOOL_EXIT_OK && in->spans.oom) goto oom;
  if (rc == TOOL_EXIT_OK) {
    pauses_finish(&in->pauses);
    spans_finish(&in->spans);
    /* Named A or B: the lines of the two files would read alike. */
    char label[4200];
    snprintf(label, sizeof label, "%s: ", in->path);
    if (src->multi)
      tool_source_lost_summary(src, stderr);
    else
      tool_lost_lines(stderr, src->cursor, src->path, label, src->lost_total,
                      src->lost, src->lost_n);
    for (size_t i = 0; i < in->n; i++) {
      struct dist *e = &in->d[i];
      if (settle(e, e->hist, e->total) < 0) goto oom;
      hist_free(e->hist);
      e->hist = NULL;
    }
    for (size_t i = 0; i < in->spans.n; i++) {
      const struct span_stats *sp = &in->spans.v[i];
      struct dist *e = entry(in, K_SPAN, sp->name);
      if (!e) goto oom;
      if (settle(e, sp->all.hist, sp->all.total) < 0) goto oom;
    }
  }
  goto out;
oom:
  tool_error("out of memory");
  rc = TOOL_EXIT_INPUT;
out:
  eventring_callbacks_free(cb);
  if (pauses_ok) pauses_free(&in->pauses);
  if (spans_ok) spans_free(&in->spans);
  tool_source_close(src);
  return rc;
}

/* ------------------------------------------------------------------ */
/* Reading a saved `stats --json`.                                      */

/* What load_json_entry() found wrong. */
enum { ENTRY_OK, ENTRY_NO_NAME = -1, ENTRY_OOM = -2, ENTRY_BUCKETS = -3,
       ENTRY_SYNTAX = -4 };

/* The "buckets" list of an entry, which the reader is at, into *e's
 * sample.  Returns ENTRY_OK, ENTRY_BUCKETS or ENTRY_SYNTAX. */
static int load_json_buckets(struct json_reader *r, struct dist *e) {
  size_t cap = 0;
  free(e->val);
  free(e->cnt);
  e->val = e->cnt = NULL;
  e->nval = 0;
  if (!json_reader_enter(r)) return ENTRY_SYNTAX;
  while (json_reader_next(r, NULL, 0)) {
    if (e->nval == cap) {
      cap = cap ? 2 * cap : 64;
      uint64_t *v = realloc(e->val, cap * sizeof *v);
      if (v) e->val = v;
      uint64_t *c = v ? realloc(e->cnt, cap * sizeof *c) : NULL;
      if (c) e->cnt = c;
      if (!v || !c) return ENTRY_OOM;
    }
    size_t i = e->nval;
    struct json_value pair[2];
    int n = 0;
    if (json_reader_peek(r) != '[') return ENTRY_BUCKETS;
    json_reader_enter(r);
    while (n < 3 && json_reader_next(r, NULL, 0)) {
      int c = json_reader_peek(r);
      if (c == '{' || c == '[' || c == '"') return ENTRY_BUCKETS;
      if (n++ < 2 && !json_reader_scalar(r, &pair[n - 1])) break;
    }
    if (json_reader_failed(r)) return ENTRY_SYNTAX;
    if (n != 2 || !json_u64(&pair[0], &e->val[i]) ||
        !json_u64(&pair[1], &e->cnt[i]) || e->cnt[i] == 0 ||
        (i && e->val[i] <= e->val[i - 1]))
      return ENTRY_BUCKETS;
    e->nval++;
  }
  return json_reader_failed(r) ? ENTRY_SYNTAX : ENTRY_OK;
}

/* One entry of "phases" or "spans", which the reader is at: its figures
 * and sample, kept as one more entry of `in` (or replacing one of the
 * same name).  Returns ENTRY_OK or what is wrong. */
static int load_json_entry(struct input *in, int kind, struct json_reader *r) {
  if (json_reader_peek(r) != '{')
    return json_reader_skip(r) ? ENTRY_NO_NAME : ENTRY_SYNTAX;
  /* Read into `got`, named once the whole object is read. */
  struct dist got;
  memset(&got, 0, sizeof got);
  char *name = NULL;
  int has_completed = 0, rc = ENTRY_OK;
  struct json_value completed;
  char key[32];
  json_reader_enter(r);
  while (rc == ENTRY_OK && json_reader_next(r, key, sizeof key)) {
    int m = -1;
    for (int k = 0; k < N_METRICS; k++)
      if (!strcmp(key, k == M_COUNT ? "count" : metric_json[k])) m = k;
    int c = json_reader_peek(r);
    if (!strcmp(key, "name") && c == '"') {
      struct json_value *v = json_reader_value(r);
      if (v) {
        free(name);
        name = v->str;
        v->str = NULL;
      }
      json_free(v);
    } else if (!strcmp(key, "buckets") && c == '[') {
      rc = load_json_buckets(r, &got);
    } else if ((m >= 0 || !strcmp(key, "completed")) && c != '{' &&
               c != '[' && c != '"') {
      struct json_value v;
      if (!json_reader_scalar(r, &v) || v.type != JSON_NUMBER) continue;
      if (m < 0) {
        completed = v;
        has_completed = 1;
        continue;
      }
      got.has[m] = 1;
      got.m[m] = v.num;
      if (v.is_u64) got.u[m] = v.u64;
    } else {
      json_reader_skip(r);
    }
  }
  if (json_reader_failed(r)) rc = ENTRY_SYNTAX;
  if (rc == ENTRY_OK && !name) rc = ENTRY_NO_NAME;
  /* A phase's "count" is its begins; "completed" those with an end,
   * which the durations are of. */
  if (rc == ENTRY_OK && kind == K_PHASE && has_completed) {
    got.has[M_COUNT] = 1;
    got.m[M_COUNT] = completed.num;
    got.u[M_COUNT] = completed.is_u64 ? completed.u64 : 0;
  }
  struct dist *e = rc == ENTRY_OK ? entry(in, kind, name) : NULL;
  if (rc == ENTRY_OK && !e) rc = ENTRY_OOM;
  if (e) {
    for (int m = 0; m < N_METRICS; m++)
      if (got.has[m]) {
        e->has[m] = 1;
        e->m[m] = got.m[m];
        e->u[m] = got.u[m];
      }
    if (got.val) {
      free(e->val);
      free(e->cnt);
      e->val = got.val;
      e->cnt = got.cnt;
      e->nval = got.nval;
      got.val = got.cnt = NULL;
    }
  }
  free(got.val);
  free(got.cnt);
  free(name);
  return rc;
}

/* A saved `stats --json` output: its "phases" and "spans" lists (or
 * "user_spans", from older outputs, when it comes first), read one entry
 * at a time, so that memory holds the entries and their samples, not
 * the document's tree. */
static int load_json(struct input *in, const char *text, size_t len) {
  char err[256], key[32];
  struct json_reader r;
  json_reader_init(&r, text, len, err, sizeof err);
  int rc = TOOL_EXIT_OK, seen[2] = {0, 0};
  json_reader_enter(&r);
  while (rc == TOOL_EXIT_OK && json_reader_next(&r, key, sizeof key)) {
    int k = !strcmp(key, "phases") ? K_PHASE
            : !strcmp(key, "spans") || !strcmp(key, "user_spans") ? K_SPAN
                                                                  : -1;
    if (k < 0 || seen[k] || json_reader_peek(&r) != '[') {
      json_reader_skip(&r);
      continue;
    }
    seen[k] = 1;
    json_reader_enter(&r);
    for (size_t i = 0; json_reader_next(&r, NULL, 0); i++) {
      int e = load_json_entry(in, k, &r);
      if (e == ENTRY_OK) continue;
      if (e == ENTRY_SYNTAX) break;
      if (e == ENTRY_OOM)
        tool_error("out of memory");
      else
        tool_error("%s: %s entry %zu: %s", in->path, kind_names[k], i + 1,
                   e == ENTRY_NO_NAME
                       ? "no \"name\" string"
                       : "\"buckets\" is not a list of [VALUE, COUNT] "
                         "pairs in ascending order");
      rc = TOOL_EXIT_INPUT;
      break;
    }
  }
  if (rc == TOOL_EXIT_OK && json_reader_end(&r) < 0) {
    tool_error("%s: not valid JSON: %s", in->path, err);
    return TOOL_EXIT_INPUT;
  }
  if (rc == TOOL_EXIT_OK && !seen[K_PHASE]) {
    tool_error("%s: not the output of 'eventring stats --json' (no "
               "\"phases\" array)",
               in->path);
    rc = TOOL_EXIT_INPUT;
  }
  return rc;
}

/* Reads A or B: a JSON document when its first byte that is not white
 * space is '{', else a ring file. */
static int load(struct input *in) {
  FILE *f = fopen(in->path, "rb");
  if (!f) {
    tool_error("%s: %s", in->path, strerror(errno));
    return TOOL_EXIT_INPUT;
  }
  int c;
  do c = getc(f);
  while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
  if (c != '{') {
    fclose(f);
    return load_ring(in);
  }
  in->json = 1;
  if (in->nfilters) {
    fclose(f);
    return tool_usage_error(HELP_REF,
                            "%s is a saved stats --json: --domain, --event, "
                            "--kind, --since, --until and --last apply to "
                            "ring files (give them to 'eventring stats "
                            "--json' when saving)",
                            in->path);
  }
  /* A regular file is read into a buffer of its size, in one go. */
  struct stat st;
  size_t cap = 1 << 16, len = 0;
  if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
      (uint64_t)st.st_size < JSON_INPUT_MAX)
    cap = (size_t)st.st_size + 1;
  char *text = malloc(cap);
  if (!text) goto oom;
  rewind(f);
  for (;;) {
    if (len == cap) {
      if (len > JSON_INPUT_MAX) {
        tool_error("%s: larger than 1 GiB: not a stats output", in->path);
        free(text);
        fclose(f);
        return TOOL_EXIT_INPUT;
      }
      cap = 2 * cap < JSON_INPUT_MAX ? 2 * cap : JSON_INPUT_MAX + 1;
      char *t = realloc(text, cap);
      if (!t) goto oom;
      text = t;
    }
    size_t r = fread(text + len, 1, cap - len, f);
    len += r;
    if (r == 0) break;
  }
  if (ferror(f)) {
    tool_error("%s: %s", in->path, strerror(errno));
    free(text);
    fclose(f);
    return TOOL_EXIT_INPUT;
  }
  fclose(f);
  int rc = load_json(in, text, len);
  free(text);
  return rc;
oom:
  free(text);
  fclose(f);
  tool_error("out of memory");
  return TOOL_EXIT_INPUT;
}

static void free_input(struct input *in) {
  for (size_t i = 0; i < in->n; i++) {
    free(in->d[i].name);
    hist_free(in->d[i].hist);
    free(in->d[i].val);
    free(in->d[i].cnt);
  }
  free(in->d);
  free(in->index);
}

/* ------------------------------------------------------------------ */
/* Rows: A's and B's entries paired.                                    */

struct row {
  int kind;
  const char *name;
  const struct dist *a, *b;
  int tested; /* both samples known and not empty: r is the test's */
  struct rank_result r;
  int significant;
  /* The quantile tests at p50 and p99 against no change (when tested). */
  struct quantile_result q[2];
  int q_tested[2], q_significant[2];
  /* The tests of mean, p50 and p99 against a change of the minimum
   * effect, in the direction of the change (effect_metric order). */
  struct effect e[N_EFFECTS];
  int marked; /* any of e[] */
};

static const double quantiles[2] = {0.5, 0.99};
static const int quantile_metric[2] = {M_P50, M_P99};

/* The p-value of metric `m`'s test of B's durations divided by `scale`
 * against A's, on the side of the change that the scale is for (> 1:
 * slower; < 1: faster), twice that one-sided p (two-sided).  -1 when
 * the metric has no test on these samples. */
static double effect_p(const struct row *w, int m, double scale) {
  if (!w->tested || !(scale > 0)) return -1;
  struct rank_sample sa = {w->a->val, w->a->cnt, w->a->nval},
                     sb = {w->b->val, w->b->cnt, w->b->nval};
  int slower = scale >= 1;
  double one;
  if (m == M_MEAN) {
    struct mean_result mr;
    if (w->r.na < MEAN_TEST_MIN || w->r.nb < MEAN_TEST_MIN ||
        mean_test(&sa, &sb, scale, &mr) < 0)
      return -1;
    one = slower ? mr.p_slower : mr.p_faster;
  } else if (m == M_P50 || m == M_P99) {
    struct quantile_result qr;
    if (quantile_test_scaled(&sa, &sb, m == M_P50 ? 0.5 : 0.99, scale,
                             &qr) < 0)
      return -1;
    one = slower ? qr.p_slower : qr.p_faster;
  } else {
    return -1;
  }
  return 2 * one < 1 ? 2 * one : 1;
}

/* The line of metric `m` in a row's e[], or -1 when it has no test. */
static int effect_line(int m) {
  for (int k = 0; k < N_EFFECTS; k++)
    if (effect_metric[k] == m) return k;
  return -1;
}

/* The change of metric `m` from A to B in percent: 1 and *pct, or 0 when
 * a side lacks it.  From 0 to more it is +infinity (*pct = 1e300). */
static int change(const struct row *w, int m, double *pct) {
  if (!w->a || !w->b || !w->a->has[m] || !w->b->has[m]) return 0;
  double a = w->a->m[m], b = w->b->m[m];
  if (a == 0)
    *pct = b == 0 ? 0 : 1e300;
  else
    *pct = (b - a) / a * 100;
  return 1;
}

/* ------------------------------------------------------------------ */
/* --fail-if.                                                           */

struct condition {
  const char *text; /* as given */
  int kind;         /* -1: either */
  char *name;       /* a glob, NULL: any */
  int metric;
  int greater;      /* '>' (else '<') */
  double pct;
  int held;         /* rows where it held */
  int checked;      /* rows it could be checked on */
  int matched;      /* rows of its kind and name on both sides */
};

static int parse_condition(const char *s, struct condition *c) {
  memset(c, 0, sizeof *c);
  c->text = s;
  c->kind = -1;
  const char *cond = strrchr(s, ':');
  if (cond) {
    const char *name = s;
    if (!strncmp(s, "span:", 5) && s + 4 < cond) {
      c->kind = K_SPAN;
      name = s + 5;
    } else if (!strncmp(s, "phase:", 6) && s + 5 < cond) {
      c->kind = K_PHASE;
      name = s + 6;
    }
    if (name == cond)
      return tool_usage_error(HELP_REF, "--fail-if '%s': empty name", s);
    c->name = strndup(name, (size_t)(cond - name));
    if (!c->name) {
      tool_error("out of memory");
      return TOOL_EXIT_INPUT;
    }
    cond++;
  } else {
    cond = s;
  }
  size_t ml = strcspn(cond, "<>");
  c->metric = -1;
  for (int m = 0; m < N_METRICS; m++)
    if (strlen(metric_names[m]) == ml && !strncmp(cond, metric_names[m], ml))
      c->metric = m;
  if (c->metric < 0)
    return tool_usage_error(HELP_REF,
                            "--fail-if '%s': the metric is one of count, "
                            "total, mean, p50, p99, max",
                            s);
  if (!cond[ml])
    return tool_usage_error(HELP_REF,
                            "--fail-if '%s': expected '>' or '<' and a "
                            "change such as +10%%",
                            s);
  c->greater = cond[ml] == '>';
  const char *num = cond + ml + 1;
  char *end;
  errno = 0;
  double v = strtod(num, &end);
  int digit = *num >= '0' && *num <= '9';
  if ((*num == '+' || *num == '-') && num[1] >= '0' && num[1] <= '9')
    digit = 1;
  if (!digit || end == num || errno || strcmp(end, "%") || !(v == v) ||
      v > 1e9 || v < -1e9)
    return tool_usage_error(HELP_REF,
                            "--fail-if '%s': expected a change in percent "
                            "after '%c', such as +10%% or -5%%",
                            s, cond[ml]);
  c->pct = v;
  return TOOL_EXIT_OK;
}

static int condition_matches(const struct condition *c, const struct row *w) {
  if (c->kind >= 0 && c->kind != w->kind) return 0;
  return !c->name || fnmatch(c->name, w->name, 0) == 0;
}

/* Whether a change of `pct` that passes condition `c`'s threshold in row
 * `w` is real enough to hold: in the condition's direction (a slowdown
 * condition, '>', never holds on a speed-up, nor '<' on a slowdown), at
 * least the minimum effect, and, for a metric with a noise test, marked
 * (beyond noise and the minimum effect) and, when the threshold is
 * beyond the minimum effect, beyond noise against the threshold itself
 * ('p99>+20%': B's durations divided by 1.2 still slower at p < alpha).
 * A row without durations (a stats --json without buckets) has no test
 * and is judged on its figures. */
static int condition_real(const struct row *w, const struct condition *c,
                          double pct, double min_effect, double alpha) {
  if (c->greater ? !(pct > 0) : !(pct < 0)) return 0;
  if ((pct < 0 ? -pct : pct) < min_effect) return 0;
  int k = effect_line(c->metric);
  if (k < 0 || !w->tested) return 1;
  if (!w->e[k].tested || !w->e[k].marked) return 0;
  double beyond = c->greater ? c->pct : -c->pct;
  if (beyond <= min_effect) return 1;
  double p = effect_p(w, c->metric, 1 + c->pct / 100);
  return p >= 0 && p < alpha;
}

/* ------------------------------------------------------------------ */
/* Output.                                                              */

static char *fmt_metric(char *buf, const struct dist *d, int m) {
  if (!d) return strcpy(buf, "-");
  if (!d->has[m]) return strcpy(buf, "?");
  if (m == M_COUNT) {
    snprintf(buf, 32, "%" PRIu64, d->u[m] ? d->u[m] : (uint64_t)d->m[m]);
    return buf;
  }
  double v = d->m[m];
  return analysis_duration(buf, m == M_MEAN || !d->u[m]
                                    ? (uint64_t)(v > 0 ? v + 0.5 : 0)
                                    : d->u[m]);
}

static char *fmt_change(char *buf, const struct row *w, int m) {
  double pct;
  if (!change(w, m, &pct)) return strcpy(buf, "");
  if (pct >= 1e300) return strcpy(buf, "new");
  snprintf(buf, 32, "%+.1f%%", pct);
  return buf;
}

static const char *origin(const struct input *in) {
  return in->json ? "stats --json" : in->dir ? "ring files" : "ring file";
}

/* A p-value as text: "p = 0.012", or a bound below what a double
 * holds apart from 0. */
static char *fmt_p(char *buf, double p) {
  if (p < 1e-300)
    strcpy(buf, "p < 1e-300");
  else
    snprintf(buf, 32, "p = %.2g", p);
  return buf;
}

static void print_text(const struct input *a, const struct input *b,
                       const struct row *rows, size_t n, double alpha,
                       double min_effect) {
  char x[32], y[32], z[32];
  printf("A: %s (%s)\nB: %s (%s)\n", a->path, origin(a), b->path, origin(b));
  printf("marks: * on a change of the mean, p50 or p99 of at least %g%% "
         "(--min-effect)\nand beyond noise: B's durations divided by %g "
         "(%g for a speed-up) still\ndiffer from A's in its direction at "
         "p < %g (--alpha; two-sided: Welch's\ntest for the mean, quantile "
         "tests for p50 and p99); --fail-if holds only\non a marked change "
         "in its direction\n",
         min_effect, 1 + min_effect / 100, 1 - min_effect / 100, alpha);
  for (size_t i = 0; i < n; i++) {
    const struct row *w = &rows[i];
    char name[256], shown[TOOL_TEXT_BUF(200)];
    snprintf(name, sizeof name, "%s %s", kind_names[w->kind],
             tool_text(shown, sizeof shown, w->name, TOOL_TEXT_UTF8));
    printf("\n%c %-34s %12s %12s %9s\n", w->marked ? '*' : ' ', name, "A",
           "B", "change");
    if (!w->a || !w->b) {
      printf("    only in %s\n", w->a ? "A" : "B");
    }
    for (int m = 0; m < N_METRICS; m++) {
      int k = effect_line(m);
      printf("    %-32s %12s %12s %9s%s\n", metric_names[m],
             fmt_metric(x, w->a, m), fmt_metric(y, w->b, m),
             fmt_change(z, w, m), k >= 0 && w->e[k].marked ? " *" : "");
    }
    if (!w->a || !w->b) continue;
    if (w->tested) {
      printf("    tests against a change of %g%%:", min_effect);
      int shown_tests = 0;
      for (int k = 0; k < N_EFFECTS; k++)
        if (w->e[k].tested)
          printf("%s %s %s", shown_tests++ ? "," : "",
                 metric_names[effect_metric[k]], fmt_p(x, w->e[k].p));
      printf(" (%" PRIu64 " and %" PRIu64 " durations)\n", w->r.na,
             w->r.nb);
      const char *what = !w->significant ? "no shift beyond noise"
                         : w->r.shift < 0 ? "B's tend to be longer"
                                          : "B's tend to be shorter";
      printf("    whole distribution: %s (rank test, %s): %s\n",
             fmt_p(x, w->r.p),
             w->r.exact ? "exact" : "normal approximation", what);
    } else if (w->a->has[M_COUNT] && w->b->has[M_COUNT] &&
               (w->a->m[M_COUNT] == 0 || w->b->m[M_COUNT] == 0)) {
      printf("    no noise test: no durations on one side\n");
    } else {
      printf("    no noise test: %s has no durations (a stats --json "
             "without buckets); compare the ring files\n",
             !w->a->val ? "A" : "B");
    }
  }
}

static void json_metrics(FILE *o, const struct dist *d) {
  if (!d) {
    fputs("null", o);
    return;
  }
  fputc('{', o);
  for (int m = 0; m < N_METRICS; m++) {
    fprintf(o, "%s\"%s\": ", m ? ", " : "", metric_json[m]);
    if (!d->has[m])
      fputs("null", o);
    else if (m == M_MEAN || (d->u[m] == 0 && d->m[m] != 0))
      analysis_json_double(o, d->m[m]);
    else
      fprintf(o, "%" PRIu64, d->u[m]);
  }
  fputc('}', o);
}

static void print_json(const struct input *a, const struct input *b,
                       const struct row *rows, size_t n, double alpha,
                       double min_effect, const struct condition *conds,
                       int nconds) {
  FILE *o = stdout;
  const struct input *ins[2] = {a, b};
  fputc('{', o);
  for (int k = 0; k < 2; k++) {
    fprintf(o, "%s\"%s\": {\"path\": ", k ? ", " : "", k ? "b" : "a");
    analysis_json_string(o, ins[k]->path);
    fprintf(o, ", \"type\": \"%s\"}", ins[k]->json ? "stats-json" : "ring");
  }
  fprintf(o, ",\n \"test\": \"mann-whitney\", \"alpha\": ");
  analysis_json_double(o, alpha);
  fprintf(o, ", \"min_effect_pct\": ");
  analysis_json_double(o, min_effect);
  fprintf(o, ",\n \"rows\": [");
  for (size_t i = 0; i < n; i++) {
    const struct row *w = &rows[i];
    fprintf(o, "%s\n  {\"kind\": \"%s\", \"name\": ", i ? "," : "",
            kind_names[w->kind]);
    analysis_json_string(o, w->name);
    fprintf(o, ", \"marked\": %s", w->marked ? "true" : "false");
    fputs(", \"a\": ", o);
    json_metrics(o, w->a);
    fputs(", \"b\": ", o);
    json_metrics(o, w->b);
    fputs(", \"change_pct\": {", o);
    for (int m = 0; m < N_METRICS; m++) {
      double pct;
      fprintf(o, "%s\"%s\": ", m ? ", " : "", metric_names[m]);
      if (change(w, m, &pct) && pct < 1e300)
        analysis_json_double(o, pct);
      else
        fputs("null", o);
    }
    fputs("}, \"test\": ", o);
    if (w->tested) {
      fputs("{\"p_value\": ", o);
      analysis_json_double(o, w->r.p);
      fputs(", \"u\": ", o);
      analysis_json_double(o, w->r.u);
      fputs(", \"z\": ", o);
      analysis_json_double(o, w->r.z);
      fprintf(o,
              ", \"exact\": %s, \"n_a\": %" PRIu64 ", \"n_b\": %" PRIu64
              ", \"significant\": %s, \"direction\": \"%s\"",
              w->r.exact ? "true" : "false", w->r.na, w->r.nb,
              w->significant ? "true" : "false",
              w->r.shift < 0 ? "slower" : w->r.shift > 0 ? "faster" : "same");
      for (int k = 0; k < 2; k++) {
        fprintf(o, "%s\"%s\": ", k ? ", " : ", \"quantiles\": {",
                metric_names[quantile_metric[k]]);
        if (!w->q_tested[k]) {
          fputs("null", o);
          continue;
        }
        fputs("{\"p_value\": ", o);
        analysis_json_double(o, w->q[k].p);
        fprintf(o,
                ", \"quantile_ns\": %" PRIu64 ", \"above_a\": %" PRIu64
                ", \"above_b\": %" PRIu64
                ", \"significant\": %s, \"direction\": \"%s\"}",
                w->q[k].value, w->q[k].above_a, w->q[k].above_b,
                w->q_significant[k] ? "true" : "false",
                w->q[k].excess > 0   ? "slower"
                : w->q[k].excess < 0 ? "faster"
                                     : "same");
      }
      fputs("}}", o); /* the quantiles, the test */
    } else {
      fputs("null", o);
    }
    fputs(", \"effects\": {", o);
    for (int k = 0; k < N_EFFECTS; k++) {
      fprintf(o, "%s\"%s\": ", k ? ", " : "",
              metric_names[effect_metric[k]]);
      if (!w->e[k].tested) {
        fputs("null", o);
        continue;
      }
      fputs("{\"p_value\": ", o);
      analysis_json_double(o, w->e[k].p);
      fputs(", \"against_pct\": ", o);
      analysis_json_double(o, (w->e[k].scale - 1) * 100);
      fprintf(o, ", \"marked\": %s}", w->e[k].marked ? "true" : "false");
    }
    fputs("}}", o);
  }
  fprintf(o, "],\n \"fail_if\": [");
  for (int i = 0; i < nconds; i++) {
    fprintf(o, "%s{\"condition\": ", i ? ", " : "");
    analysis_json_string(o, conds[i].text);
    fprintf(o, ", \"held\": %s, \"rows\": %d}",
            conds[i].held ? "true" : "false", conds[i].held);
  }
  fprintf(o, "]}\n");
}

/* ------------------------------------------------------------------ */

static void help(void) {
  printf(
      "Usage: eventring diff [OPTION]... A B\n"
      "Compare two runs, per runtime phase and per user span: count, total,\n"
      "mean, p50, p99 and max of the durations in A and B, the change in\n"
      "percent, and a mark (*) on a change of the mean, p50 or p99 that is\n"
      "both beyond the noise of the samples and at least the minimum effect:\n"
      "B's durations divided by 1 + MIN (1 - MIN for a speed-up) still\n"
      "differ from A's (Welch's test for the mean, a quantile test for p50\n"
      "and p99; two-sided).  The rank test of the whole distribution is\n"
      "shown too and marks nothing: thousands of tight durations make any\n"
      "shift significant, however small.\n"
      "A and B are ring files or saved 'eventring stats --json' outputs\n"
      "(the tests need the durations: a stats output has them only with\n"
      "\"buckets\").\n"
      "\n"
      "Options:\n"
      "  --fail-if COND exit with status 1 when COND holds in a row of both\n"
      "                 A and B; COND is [span:|phase:][NAME:]METRIC OP PCT%%\n"
      "                 with METRIC count, total, mean, p50, p99 or max, OP\n"
      "                 '>' (a slowdown or increase) or '<' (a speed-up or\n"
      "                 decrease), PCT a signed change in percent, NAME a\n"
      "                 glob (e.g. 'p99>+10%%', 'span:http.*:p50>+5%%');\n"
      "                 it holds only on a change in its direction, at least\n"
      "                 --min-effect, and for mean, p50 and p99 marked and\n"
      "                 beyond noise against PCT itself;\n"
      "                 repeatable (any one holding fails)\n"
      "  --min-effect PCT  the smallest change marked or failed on (default\n"
      "                 10%%; 0 marks whatever is beyond noise)\n"
      "  --alpha P      the p-value below which a change is beyond noise\n"
      "                 (default 0.01)\n"
      "  --domain, --event, --kind, --since, --until, --last\n"
      "                 read only those events of ring-file inputs, as the\n"
      "                 other subcommands (see eventring(1)); a stats --json\n"
      "                 input is filtered when saved\n"
      "  --json         print one JSON object instead of the tables\n"
      "  -o FILE, --output FILE\n"
      "                 write the report to FILE ('-': standard output)\n"
      "  --ocaml50      number phases as OCaml 5.0-5.2 did, in both ring\n"
      "                 files (for files those versions wrote)\n"
      "  --ocaml53      number phases as OCaml 5.3+ does (default for both:\n"
      "                 inferred from each file)\n"
      "  -h, --help     print this help and exit\n"
      "\n"
      "Exit status: 0 success, 1 a --fail-if condition held (or an input\n"
      "could not be read, or a condition could be checked nowhere), 2 bad\n"
      "usage.  See eventring(1).\n");
}

int tool_diff(int argc, char **argv) {
  enum { OPT_JSON = TOOL_OPT_OWN, OPT_FAIL_IF, OPT_ALPHA, OPT_MIN_EFFECT };
  static const struct option longopts[] = {
      TOOL_OUTPUT_OPTION,
      TOOL_FILTER_OPTIONS,
      {"min-effect", required_argument, NULL, OPT_MIN_EFFECT},
      {"json", no_argument, NULL, OPT_JSON},
      {"fail-if", required_argument, NULL, OPT_FAIL_IF},
      {"alpha", required_argument, NULL, OPT_ALPHA},
      {"ocaml50", no_argument, NULL, TOOL_OPT_OCAML50},
      {"ocaml53", no_argument, NULL, TOOL_OPT_OCAML53},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int ocaml50 = 0, ocaml53 = 0;
  struct condition conds[FAIL_IF_MAX];
  int nconds = 0, json = 0, rc = TOOL_EXIT_OK;
  double alpha = 0.01, min_effect = DEFAULT_MIN_EFFECT;
  struct filter_opt filters[FILTER_MAX];
  int nfilters = 0;
  struct tool_source scratch; /* where the filter options are checked */
  memset(&scratch, 0, sizeof scratch);
  const char *output = NULL;
  struct input *in[2] = {NULL, NULL};
  struct row *rows = NULL;
  int c;
  while ((c = tool_getopt(argc, argv, ":ho:", longopts)) != -1) {
    if (c == OPT_JSON) {
      json = 1;
    } else if (c == 'o') {
      output = optarg;
    } else if (c == OPT_ALPHA) {
      char *end;
      errno = 0;
      alpha = strtod(optarg, &end);
      if (end == optarg || *end || errno || !(alpha > 0 && alpha < 1)) {
        rc = tool_usage_error(HELP_REF,
                              "--alpha '%s': a probability between 0 and 1 "
                              "(exclusive) is expected",
                              optarg);
        goto out;
      }
    } else if (c == OPT_MIN_EFFECT) {
      char *end;
      errno = 0;
      min_effect = strtod(optarg, &end);
      if (*end == '%') end++;
      if (end == optarg || *end || errno ||
          !(min_effect >= 0 && min_effect < 100)) {
        rc = tool_usage_error(HELP_REF,
                              "--min-effect '%s': a change in percent from "
                              "0 to below 100 is expected, such as 5%%",
                              optarg);
        goto out;
      }
    } else if (c >= TOOL_OPT_F_DOMAIN && c <= TOOL_OPT_F_LAST) {
      char why[300];
      if (nfilters == FILTER_MAX) {
        rc = tool_usage_error(HELP_REF, "more than %d filter options",
                              FILTER_MAX);
        goto out;
      }
      if (tool_filter_option(&scratch, c, optarg, why, sizeof why) < 0) {
        rc = tool_usage_error(HELP_REF, "%s", why);
        goto out;
      }
      filters[nfilters].c = c;
      filters[nfilters++].arg = optarg;
    } else if (c == OPT_FAIL_IF) {
      if (nconds == FAIL_IF_MAX) {
        rc = tool_usage_error(HELP_REF, "more than %d --fail-if",
                              FAIL_IF_MAX);
        goto out;
      }
      rc = parse_condition(optarg, &conds[nconds]);
      nconds++; /* its name is freed at the end either way */
      if (rc != TOOL_EXIT_OK) goto out;
    } else if (c == TOOL_OPT_OCAML50 || c == TOOL_OPT_OCAML53) {
      *(c == TOOL_OPT_OCAML50 ? &ocaml50 : &ocaml53) = 1;
    } else if (c == 'h') {
      help();
      goto out;
    } else {
      rc = tool_option_error(HELP_REF, c, argv);
      goto out;
    }
  }
  rc = tool_filter_check(&scratch, HELP_REF);
  tool_filter_free(&scratch);
  if (rc != TOOL_EXIT_OK) goto out;
  if (ocaml50 && ocaml53) {
    rc = tool_usage_error(HELP_REF, "--ocaml50 and --ocaml53 contradict each "
                                    "other");
    goto out;
  }
  if (argc - optind != 2) {
    rc = tool_usage_error(HELP_REF,
                          argc - optind < 2
                              ? "two inputs to compare are needed (A B)"
                              : "too many arguments (two inputs: A B)");
    goto out;
  }
  if (tool_output_is_input(output, argv + optind + 1, 1)) {
    rc = tool_usage_error(HELP_REF, "'%s' is B, an input being read", output);
    goto out;
  }
  rc = tool_output_open_for(output, 0, HELP_REF, argv[optind]);
  if (rc != TOOL_EXIT_OK) goto out;

  for (int k = 0; k < 2; k++) {
    in[k] = calloc(1, sizeof *in[k]);
    if (!in[k]) {
      tool_error("out of memory");
      rc = TOOL_EXIT_INPUT;
      goto out;
    }
    in[k]->path = argv[optind + k];
    in[k]->ocaml50 = ocaml50;
    in[k]->ocaml53 = ocaml53;
    in[k]->filters = filters;
    in[k]->nfilters = nfilters;
    rc = load(in[k]);
    if (rc != TOOL_EXIT_OK) goto out;
  }

  /* Rows: A's entries in their order, then those only B has; phases
   * before spans. */
  size_t nrows = 0, common = 0;
  rows = calloc(in[0]->n + in[1]->n + 1, sizeof *rows);
  if (!rows) {
    tool_error("out of memory");
    rc = TOOL_EXIT_INPUT;
    goto out;
  }
  for (int kind = 0; kind < 2; kind++)
    for (int k = 0; k < 2; k++)
      for (size_t i = 0; i < in[k]->n; i++) {
        struct dist *d = &in[k]->d[i];
        if (d->kind != kind) continue;
        struct dist *other = find(in[1 - k], kind, d->name);
        if (k == 1 && other) continue; /* paired already */
        struct row *w = &rows[nrows++];
        w->kind = kind;
        w->name = d->name;
        w->a = k == 0 ? d : NULL;
        w->b = k == 0 ? other : d;
        if (w->a && w->b) common++;
      }
  if (in[0]->n && in[1]->n && !common) {
    tool_error("%s and %s have no phase or span in common: not runs of one "
               "program?",
               in[0]->path, in[1]->path);
    rc = TOOL_EXIT_INPUT;
    goto out;
  }

  for (size_t i = 0; i < nrows; i++) {
    struct row *w = &rows[i];
    if (!w->a || !w->b || !w->a->val || !w->b->val) continue;
    struct rank_sample sa = {w->a->val, w->a->cnt, w->a->nval},
                       sb = {w->b->val, w->b->cnt, w->b->nval};
    if (rank_test(&sa, &sb, &w->r) == 0) {
      w->tested = 1;
      w->significant = w->r.p < alpha;
    }
    for (int k = 0; k < 2; k++)
      if (quantile_test(&sa, &sb, quantiles[k], &w->q[k]) == 0) {
        w->q_tested[k] = 1;
        w->q_significant[k] = w->q[k].p < alpha;
      }
    if (!w->tested) continue;
    for (int k = 0; k < N_EFFECTS; k++) {
      int m = effect_metric[k];
      double pct;
      if (!change(w, m, &pct)) continue;
      int dir = pct < 0 ? -1 : 1;
      struct effect *e = &w->e[k];
      e->scale = 1 + dir * min_effect / 100;
      if ((e->p = effect_p(w, m, e->scale)) < 0) continue;
      e->tested = 1;
      double mag = pct < 0 ? -pct : pct;
      e->marked = mag >= min_effect && e->p < alpha;
      if (e->marked) w->marked = 1;
    }
  }

  /* The conditions. */
  int failed = 0, unanswered = 0;
  for (int j = 0; j < nconds; j++) {
    struct condition *cd = &conds[j];
    for (size_t i = 0; i < nrows; i++) {
      const struct row *w = &rows[i];
      if (!w->a || !w->b || !condition_matches(cd, w)) continue;
      cd->matched++;
      double pct;
      if (!change(w, cd->metric, &pct)) continue;
      cd->checked++;
      if (!(cd->greater ? pct > cd->pct : pct < cd->pct)) continue;
      if (!condition_real(w, cd, pct, min_effect, alpha)) continue;
      cd->held++;
      char pb[32];
      if (pct >= 1e300)
        snprintf(pb, sizeof pb, "new");
      else
        snprintf(pb, sizeof pb, "%+.1f%%", pct);
      tool_error("diff: %s %s: %s %s (--fail-if '%s')", kind_names[w->kind],
                 w->name, metric_names[cd->metric], pb, cd->text);
    }
    if (cd->held) failed = 1;
    if (cd->checked == 0 && (cd->name || nrows)) {
      if (cd->matched == 0)
        tool_error("diff: --fail-if '%s': no %s%s%s in both %s and %s",
                   cd->text, cd->kind >= 0 ? kind_names[cd->kind] : "row",
                   cd->name ? " named " : "", cd->name ? cd->name : "",
                   in[0]->path, in[1]->path);
      else
        tool_error("diff: --fail-if '%s': %s is missing from the inputs "
                   "(a stats --json of an earlier version; compare the "
                   "ring files)",
                   cd->text, metric_names[cd->metric]);
      unanswered = 1;
    }
  }

  if (json)
    print_json(in[0], in[1], rows, nrows, alpha, min_effect, conds, nconds);
  else
    print_text(in[0], in[1], rows, nrows, alpha, min_effect);
  rc = failed || unanswered ? TOOL_EXIT_INPUT : TOOL_EXIT_OK;

out:
  tool_filter_free(&scratch);
  for (int j = 0; j < nconds; j++) free(conds[j].name);
  for (int k = 0; k < 2; k++)
    if (in[k]) {
      free_input(in[k]);
      free(in[k]);
    }
  free(rows);
  int o = tool_output_finish();
  return rc != TOOL_EXIT_OK ? rc : o;
}
