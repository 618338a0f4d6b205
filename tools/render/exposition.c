/* exposition.c -- the series of `eventring metrics` (analysis/'s
 * metricset.c) in Prometheus's text exposition format, version 0.0.4:
 * `# HELP` and `# TYPE` once per family, then a line per sample,
 * `name{label="value",...} value`.
 */
#include <inttypes.h>
#include <stdio.h>

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

static void on_family(void *arg, const char *name, const char *type,
                      const char *help) {
  fprintf(arg, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void on_sample(void *arg, const struct metrics_sample *s) {
  FILE *o = arg;
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
    fprintf(o, "%" PRIu64 ".%09" PRIu64, s->u / 1000000000u,
            s->u % 1000000000u);
  else
    fprintf(o, "%" PRIu64, s->u);
  fputc('\n', o);
}

void exposition_write(FILE *o, const struct metrics_set *set) {
  const struct metrics_sink sink = {on_family, on_sample, o};
  metrics_list(set, &sink);
}
