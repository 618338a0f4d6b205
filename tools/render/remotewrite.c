/* remotewrite.c -- the series of `eventring metrics` (analysis/'s
 * metricset.c) as the body of a Prometheus remote-write 1.0 request: a
 * WriteRequest (proto/remote_write.proto, packed by libprotobuf-c) with
 * one series per sample of the text exposition, each with its labels
 * sorted by name, __name__ first, and one sample at the collection's
 * time; compressed in snappy's block format.
 *
 * A histogram bucket that has an exemplar (metrics --exemplars) carries
 * it, the one the OpenMetrics page shows: snapshot="ID", the value in
 * seconds, the event's wall time.  It goes with every request, not only
 * the first after it appeared, as a scrape shows it on every page:
 * Prometheus stores an exemplar equal to its series' latest (labels,
 * value and time) once and takes the others without error, so a push
 * that was dropped from the queue, or a receiver that restarted, loses
 * no exemplar, for a few hundred bytes a push at most (one exemplar a
 * bucket).
 */
#include "render/render.h"

#ifdef EVENTRING_HAVE_REMOTE_WRITE

#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>

#include "proto/remote_write.pb-c.h"

/* A growing byte buffer. */
struct bytes {
  char *p;
  size_t n, cap;
  int failed;
};

static void bytes_put(void *arg, const char *p, size_t n) {
  struct bytes *b = arg;
  if (b->failed) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
      b->failed = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
  b->p[b->n] = '\0';
}

/* One series and everything it points to, in one allocation. */
struct series {
  EventringRw__TimeSeries ts;
  EventringRw__Sample sample;
  EventringRw__Sample *samples[1];
  EventringRw__Exemplar ex; /* when ts.n_exemplars is 1 */
  EventringRw__Exemplar *exemplars[1];
  EventringRw__Label ex_label;
  EventringRw__Label *ex_labels[1];
  /* nlabels Label structs, then their pointers, then the strings: each
   * label's name and value, then the exemplar's. */
};

struct builder {
  EventringRw__TimeSeries **v;
  size_t n, cap;
  int64_t ts_ms;
  struct bytes strings; /* scratch: one sample's label strings */
  int failed;
};

static int label_cmp(const void *a, const void *b) {
  const EventringRw__Label *const *x = a, *const *y = b;
  return strcmp((*x)->name, (*y)->name);
}

static void on_family(void *arg, const char *name, const char *type,
                      const char *help) {
  (void)arg, (void)name, (void)type, (void)help;
}

static void on_sample(void *arg, const struct metrics_sample *s) {
  struct builder *b = arg;
  if (b->failed) return;
  /* The strings, NUL-separated: __name__ and its value, then each label
   * with a value (an empty value is no label to a receiver). */
  struct bytes *str = &b->strings;
  str->n = 0;
  int nl = 0;
  bytes_put(str, "__name__", sizeof "__name__");
  bytes_put(str, s->name, strlen(s->name) + 1);
  nl++;
  for (int i = 0; i < s->nlabels; i++) {
    if (!s->labels[i].value[0]) continue;
    bytes_put(str, s->labels[i].name, strlen(s->labels[i].name) + 1);
    metrics_utf8(s->labels[i].value, bytes_put, str);
    bytes_put(str, "", 1);
    nl++;
  }
  const struct metrics_exemplar *ex = metrics_sample_exemplar(s);
  if (ex) {
    bytes_put(str, METRICS_EXEMPLAR_LABEL, sizeof METRICS_EXEMPLAR_LABEL);
    metrics_utf8(ex->id, bytes_put, str);
    bytes_put(str, "", 1);
  }
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 256;
    EventringRw__TimeSeries **v = realloc(b->v, cap * sizeof *v);
    if (!v) str->failed = 1;
    else b->v = v, b->cap = cap;
  }
  size_t size = sizeof(struct series) +
                (size_t)nl * (sizeof(EventringRw__Label) +
                              sizeof(EventringRw__Label *)) + str->n;
  struct series *x = str->failed ? NULL : malloc(size);
  if (!x) {
    b->failed = 1;
    return;
  }
  EventringRw__Label *labels = (EventringRw__Label *)(x + 1);
  EventringRw__Label **lp = (EventringRw__Label **)(labels + nl);
  char *text = (char *)(lp + nl);
  memcpy(text, str->p, str->n);
  for (int i = 0; i < nl; i++) {
    eventring_rw__label__init(&labels[i]);
    labels[i].name = text;
    text += strlen(text) + 1;
    labels[i].value = text;
    text += strlen(text) + 1;
    lp[i] = &labels[i];
  }
  qsort(lp, (size_t)nl, sizeof *lp, label_cmp);
  eventring_rw__time_series__init(&x->ts);
  eventring_rw__sample__init(&x->sample);
  x->sample.value = metrics_sample_value(s);
  x->sample.timestamp = b->ts_ms;
  x->samples[0] = &x->sample;
  x->ts.n_labels = (size_t)nl;
  x->ts.labels = lp;
  x->ts.n_samples = 1;
  x->ts.samples = x->samples;
  if (ex) {
    eventring_rw__exemplar__init(&x->ex);
    eventring_rw__label__init(&x->ex_label);
    x->ex_label.name = text;
    text += strlen(text) + 1;
    x->ex_label.value = text;
    x->ex_labels[0] = &x->ex_label;
    x->ex.n_labels = 1;
    x->ex.labels = x->ex_labels;
    x->ex.value = (double)ex->value_ns / 1e9;
    x->ex.timestamp = metrics_exemplar_ms(ex);
    x->exemplars[0] = &x->ex;
    x->ts.n_exemplars = 1;
    x->ts.exemplars = x->exemplars;
  }
  b->v[b->n++] = &x->ts;
}

int remote_write_encode(const struct metrics_set *set, int64_t ts_ms,
                        char **body, size_t *len, size_t *nsamples) {
  struct builder b;
  memset(&b, 0, sizeof b);
  b.ts_ms = ts_ms;
  const struct metrics_sink sink = {on_family, on_sample, &b};
  metrics_list(set, &sink);
  int rc = -1;
  char *packed = NULL, *out = NULL;
  if (!b.failed) {
    EventringRw__WriteRequest req = EVENTRING_RW__WRITE_REQUEST__INIT;
    req.n_timeseries = b.n;
    req.timeseries = b.v;
    size_t plen = eventring_rw__write_request__get_packed_size(&req);
    packed = malloc(plen ? plen : 1);
    size_t olen = snappy_max_compressed_length(plen);
    out = packed ? malloc(olen) : NULL;
    if (out) {
      eventring_rw__write_request__pack(&req, (uint8_t *)packed);
      if (snappy_compress(packed, plen, out, &olen) == SNAPPY_OK) {
        *body = out;
        *len = olen;
        *nsamples = b.n;
        out = NULL;
        rc = 0;
      }
    }
  }
  free(out);
  free(packed);
  for (size_t i = 0; i < b.n; i++) free(b.v[i]); /* the struct series */
  free(b.v);
  free(b.strings.p);
  return rc;
}

#endif /* EVENTRING_HAVE_REMOTE_WRITE */
