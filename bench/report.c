/* report.c -- the TARGETS table of `make bench`: every target of issue 6
 * beside the figure measured in this run and the same-run reference.
 *
 * Usage: bench/report DIR, where DIR holds the results-NAME.json files
 * the benchmarks wrote.  It prints the table and writes
 * DIR/results-targets.json, which `make bench` joins into results.json
 * with the others.  A figure a benchmark did not produce is "n/a".  The
 * exit status reports errors only: a missed target is a line of the
 * table, never a failure.
 *
 * The JSON reader below takes the documents our benchmarks write (objects,
 * arrays, strings without escapes other than \" and \\, numbers, true,
 * false, null); it is not a general JSON parser.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- */
/* A small JSON tree.                                                */

enum { J_NULL, J_NUM, J_STR, J_ARR, J_OBJ, J_BOOL };

struct jv {
  int type;
  double num;
  char *str;
  int n;
  char **keys;       /* objects */
  struct jv **kids;  /* objects and arrays */
};

static const char *jp; /* the parser's position */

static void skip(void) {
  while (*jp && isspace((unsigned char)*jp)) jp++;
}

static struct jv *jnew(int type) {
  struct jv *v = calloc(1, sizeof *v);
  if (v == NULL) exit(2);
  v->type = type;
  return v;
}

static char *jstring(void) {
  /* At the opening quote. */
  const char *s = ++jp;
  size_t n = 0;
  char *out = malloc(strlen(s) + 1);
  if (out == NULL) exit(2);
  while (*jp && *jp != '"') {
    if (*jp == '\\' && jp[1]) jp++;
    out[n++] = *jp++;
  }
  out[n] = '\0';
  if (*jp == '"') jp++;
  return out;
}

static struct jv *jparse(void);

static void jpush(struct jv *v, char *key, struct jv *kid) {
  v->kids = realloc(v->kids, (size_t)(v->n + 1) * sizeof *v->kids);
  v->keys = realloc(v->keys, (size_t)(v->n + 1) * sizeof *v->keys);
  if (v->kids == NULL || v->keys == NULL) exit(2);
  v->kids[v->n] = kid;
  v->keys[v->n] = key;
  v->n++;
}

static struct jv *jparse(void) {
  skip();
  if (*jp == '{' || *jp == '[') {
    int obj = *jp == '{';
    char close = obj ? '}' : ']';
    struct jv *v = jnew(obj ? J_OBJ : J_ARR);
    jp++;
    for (;;) {
      skip();
      if (*jp == close) {
        jp++;
        return v;
      }
      if (*jp == '\0') return NULL;
      char *key = NULL;
      if (obj) {
        if (*jp != '"') return NULL;
        key = jstring();
        skip();
        if (*jp++ != ':') return NULL;
      }
      struct jv *kid = jparse();
      if (kid == NULL) return NULL;
      jpush(v, key, kid);
      skip();
      if (*jp == ',') jp++;
    }
  }
  if (*jp == '"') {
    struct jv *v = jnew(J_STR);
    v->str = jstring();
    return v;
  }
  if (strncmp(jp, "true", 4) == 0 || strncmp(jp, "false", 5) == 0) {
    struct jv *v = jnew(J_BOOL);
    v->num = *jp == 't';
    jp += *jp == 't' ? 4 : 5;
    return v;
  }
  if (strncmp(jp, "null", 4) == 0) {
    jp += 4;
    return jnew(J_NULL);
  }
  char *end;
  double d = strtod(jp, &end);
  if (end == jp) return NULL;
  jp = end;
  struct jv *v = jnew(J_NUM);
  v->num = d;
  return v;
}

static struct jv *jload(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/results-%s.json", dir, name);
  FILE *f = fopen(path, "r");
  if (f == NULL) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0, r;
  char chunk[4096];
  while ((r = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + r + 1 > cap) {
      cap = (len + r + 1) * 2;
      buf = realloc(buf, cap);
      if (buf == NULL) exit(2);
    }
    memcpy(buf + len, chunk, r);
    len += r;
  }
  fclose(f);
  if (buf == NULL) return NULL;
  buf[len] = '\0';
  jp = buf;
  struct jv *v = jparse();
  if (v == NULL) fprintf(stderr, "report: %s: not understood\n", path);
  return v;
}

static struct jv *jget(const struct jv *v, const char *key) {
  if (v == NULL || v->type != J_OBJ) return NULL;
  for (int i = 0; i < v->n; i++)
    if (strcmp(v->keys[i], key) == 0) return v->kids[i];
  return NULL;
}

static double jnum(const struct jv *v) {
  return v != NULL && (v->type == J_NUM || v->type == J_BOOL) ? v->num : NAN;
}

/* The element of array `a` whose string members k1 and k2 (k2 may be
 * NULL) equal s1 and s2. */
static struct jv *jfind(const struct jv *a, const char *k1, const char *s1,
                        const char *k2, const char *s2) {
  if (a == NULL || a->type != J_ARR) return NULL;
  for (int i = 0; i < a->n; i++) {
    struct jv *x = jget(a->kids[i], k1), *y = k2 ? jget(a->kids[i], k2) : 0;
    if (x && x->type == J_STR && strcmp(x->str, s1) == 0 &&
        (k2 == NULL || (y && y->type == J_STR && strcmp(y->str, s2) == 0)))
      return a->kids[i];
  }
  return NULL;
}

/* ---------------------------------------------------------------- */
/* The targets.                                                      */

struct row {
  const char *target;
  double measured, reference;
  const char *unit;
  int higher_is_better;
  const char *note; /* where the reference comes from */
};

#define MAXROWS 24
static struct row rows[MAXROWS];
static int nrows;

static void row(const char *target, double m, double ref, const char *unit,
                int hib, const char *note) {
  if (nrows < MAXROWS)
    rows[nrows++] = (struct row){target, m, ref, unit, hib, note};
}

static int met(const struct row *r) {
  if (isnan(r->measured) || isnan(r->reference)) return -1;
  return r->higher_is_better ? r->measured >= r->reference
                             : r->measured <= r->reference;
}

static double probe(const struct jv *probes, const char *op,
                    const char *state) {
  return jnum(jget(jfind(jget(probes, "results"), "op", op, "state", state),
                   "median"));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  struct jv *probes = jload(dir, "bench_probes");
  struct jv *reader = jload(dir, "bench_reader");
  struct jv *oreader = jload(dir, "bench_ocaml_reader");
  struct jv *domains = jload(dir, "bench_domains");
  struct jv *memory = jload(dir, "bench_memory");
  struct jv *clock = jload(dir, "bench_clock");

  double tsc = probe(probes, "rdtsc", "-");
  static const char *const single[][2] = {
    {"begin", "active probe (begin) <= TSC read + 4 ns"},
    {"counter", "active probe (counter) <= TSC read + 4 ns"},
    {"user_int", "active probe (user int) <= TSC read + 4 ns"}};
  for (int i = 0; i < 3; i++)
    row(single[i][1], probe(probes, single[i][0], "active"), tsc + 4, "ns",
        0, "rdtsc loop of this run + 4");
  row("begin+end pair <= 54.7 / 2 ns", probe(probes, "pair", "active"),
      54.7 / 2, "ns", 0, "OCaml 5.2 anchor, quoted");
  row("never started probe <= 0.5 ns", probe(probes, "begin", "never_started"),
      0.5, "ns", 0, "fixed");
  row("paused probe <= 0.5 ns", probe(probes, "begin", "paused"), 0.5, "ns",
      0, "fixed");
  double ab = probe(probes, "begin", "active");
  double rb = probe(probes, "begin", "active_reader");
  double ap = probe(probes, "pair", "active");
  double rp = probe(probes, "pair", "active_reader");
  row("concurrent reader adds <= 20% (begin)", 100 * (rb / ab - 1), 20, "%",
      0, "active begin of this run");
  row("concurrent reader adds <= 20% (pair)", 100 * (rp / ap - 1), 20, "%", 0,
      "active pair of this run");
  row("C reader <= 3.3 ns/event",
      jnum(jget(jfind(jget(reader, "results"), "measurement", "all_count",
                      NULL, NULL),
                "median")),
      3.3, "ns/ev", 0, "3 x faster than OCaml 5.2's ~10 ns, quoted");
  double ons = jnum(jget(jget(oreader, "read_poll_all_callbacks"), "median"));
  double otarget = jnum(jget(oreader, "target_ns"));
  row("OCaml reader >= 2 x OCaml 5.2's", 1000 / ons, 1000 / otarget,
      "M ev/s", 1, "2 x OCaml 5.2 (18-40 M ev/s), quoted");
  row("two domains >= 1.8 x one",
      jnum(jget(jget(domains, "ratio_probes"), "median")), 1.8, "x", 1,
      "fixed; the rdtsc loop's ratio below");
  double idle = NAN, used = NAN, ring = NAN;
  struct jv *ds = jget(memory, "domains");
  for (int i = 0; ds && ds->type == J_ARR && i < ds->n; i++) {
    double x = jnum(jget(ds->kids[i], "idle_rings_resident"));
    double u = jnum(jget(ds->kids[i], "used_ring_resident_max"));
    if (isnan(idle) || x > idle) idle = x;
    if (isnan(used) || u > used) used = u;
    ring = jnum(jget(ds->kids[i], "ring_bytes"));
  }
  row("idle slots: no resident memory (1/2/8 dom.)", idle / 1024, 0, "KiB",
      0, "fixed");
  row("used slot: its ring and no more", used / 1024, ring / 1024, "KiB", 0,
      "the ring's size");
  double dev = jnum(jget(clock, "max_abs_deviation_ns"));
  double out = jnum(jget(clock, "max_outside_window_ns"));
  row("TSC timestamp within 10 us of clock_gettime", fmax(dev, out) / 1000,
      10, "us", 0, "fixed");
  row("timestamps never go backwards", jnum(jget(clock, "backwards")), 0,
      "steps", 0, "fixed");

  printf("TARGETS (issue 6): measured in this run against the same-run "
         "reference\n\n");
  printf("%-46s %10s %10s %-7s %s\n", "target", "measured", "reference",
         "unit", "verdict");
  int nmet = 0, nmiss = 0;
  for (int i = 0; i < nrows; i++) {
    const struct row *r = &rows[i];
    int m = met(r);
    char mv[32], rv[32];
    snprintf(mv, sizeof mv, isnan(r->measured) ? "n/a" : "%.2f", r->measured);
    snprintf(rv, sizeof rv, isnan(r->reference) ? "n/a" : "%.2f",
             r->reference);
    printf("%-46s %10s %10s %-7s %s\n", r->target, mv, rv, r->unit,
           m < 0 ? "n/a" : m ? "MET" : "MISSED");
    nmet += m == 1, nmiss += m == 0;
  }
  printf("\n%d met, %d missed, %d not measured; reference: a figure of "
         "this run where one exists,\nelse the issue's anchor (quoted, "
         "not measured here)\n",
         nmet, nmiss, nrows - nmet - nmiss);
  double rr = jnum(jget(jget(domains, "ratio_rdtsc"), "median"));
  if (!isnan(rr))
    printf("two threads of an rdtsc loop that share nothing scaled %.2f x "
           "in this run\n", rr);

  char path[4096];
  snprintf(path, sizeof path, "%s/results-targets.json", dir);
  FILE *o = fopen(path, "w");
  if (o == NULL) {
    fprintf(stderr, "report: %s: %s\n", path, strerror(errno));
    return 1;
  }
  fprintf(o, "{\n  \"met\": %d,\n  \"missed\": %d,\n  \"targets\": [", nmet,
          nmiss);
  for (int i = 0; i < nrows; i++) {
    const struct row *r = &rows[i];
    int m = met(r);
    fprintf(o, "%s\n    {\"target\": \"%s\", ", i ? "," : "", r->target);
    if (isnan(r->measured))
      fprintf(o, "\"measured\": null, ");
    else
      fprintf(o, "\"measured\": %.4f, ", r->measured);
    if (isnan(r->reference))
      fprintf(o, "\"reference\": null, ");
    else
      fprintf(o, "\"reference\": %.4f, ", r->reference);
    fprintf(o, "\"unit\": \"%s\", \"reference_from\": \"%s\", \"met\": %s}",
            r->unit, r->note, m < 0 ? "null" : m ? "true" : "false");
  }
  fprintf(o, "\n  ]\n}\n");
  return fclose(o) == 0 ? 0 : 1;
}
