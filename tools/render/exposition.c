/* exposition.c -- the series of `eventring metrics` (analysis/'s
 * metricset.c) in Prometheus's text exposition format, version 0.0.4:
 * `# HELP` and `# TYPE` once per family, then a line per sample,
 * `name{label="value",...} value`; or in the OpenMetrics text format
 * 1.0.0, which differs in three ways here: a counter's family is named
 * without its samples' _total, a histogram bucket that has an exemplar
 * ends in ` # {snapshot="ID"} VALUE TIMESTAMP` (seconds since the epoch),
 * and `# EOF` ends the text.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "render/render.h"

/* A label value: made UTF-8, then \\, \" and \n escaped, as the format
 * requires. */
static void put_escaped(void *arg, const char *p, size_t n) {
  FILE *o = arg;
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '\\') fputs("\\\\", o);
    else if (p[i] == '"') fputs("\\\"", o);
    else if (p[i] == '\n') fputs("\\n", o);
    else fputc(p[i], o);
  }
}

struct out {
  FILE *o;
  int openmetrics;
};

static void on_family(void *arg, const char *name, const char *type,
                      const char *help) {
  const struct out *w = arg;
  int n = (int)strlen(name);
  if (w->openmetrics && !strcmp(type, "counter") && n > 6 &&
      !strcmp(name + n - 6, "_total"))
    n -= 6;
  fprintf(w->o, "# HELP %.*s %s\n# TYPE %.*s %s\n", n, name, help, n, name,
          type);
}

static void put_seconds(FILE *o, uint64_t ns) {
  fprintf(o, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

static void on_sample(void *arg, const struct metrics_sample *s) {
  const struct out *w = arg;
  FILE *o = w->o;
  fputs(s->name, o);
  for (int i = 0; i < s->nlabels; i++) {
    fprintf(o, "%c%s=\"", i ? ',' : '{', s->labels[i].name);
    metrics_utf8(s->labels[i].value, put_escaped, o);
    fputc('"', o);
  }
  if (s->nlabels) fputc('}', o);
  fputc(' ', o);
  if (s->kind == METRICS_INT)
    fprintf(o, "%" PRId64, s->i);
  else if (s->kind == METRICS_SECONDS)
    put_seconds(o, s->u);
  else
    fprintf(o, "%" PRIu64, s->u);
  const struct metrics_exemplar *x = metrics_sample_exemplar(s);
  if (w->openmetrics && x) {
    fputs(" # {" METRICS_EXEMPLAR_LABEL "=\"", o);
    metrics_utf8(x->id, put_escaped, o);
    fputs("\"} ", o);
    put_seconds(o, x->value_ns);
    if (x->wall_ns) fputc(' ', o), put_seconds(o, x->wall_ns);
  }
  fputc('\n', o);
}

void exposition_write(FILE *o, const struct metrics_set *set,
                      int openmetrics) {
  struct out w = {o, openmetrics};
  const struct metrics_sink sink = {on_family, on_sample, &w};
  metrics_list(set, &sink);
  if (openmetrics) fputs("# EOF\n", o);
}
