/* report.c -- the TARGETS table of `make bench`: every target of issues
 * 6, 14, 19, 20, 21, 22 and 24 beside the figure measured in this run and
 * its limit.
 *
 * Usage: bench/report DIR, where DIR holds the results-NAME.json files
 * the benchmarks wrote.  It prints the table, the count of targets met,
 * missed and not measured, and where each limit comes from, and writes
 * DIR/results-targets.json, which `make bench` joins into results.json
 * with the others.
 *
 * A limit is computed from a figure of the same run wherever the issue
 * states it against one (the rdtsc loop, the probe without a reader, the
 * rdtsc loop's scaling, the program without the library); otherwise it
 * is a fixed number from the issue, and where that number is derived
 * from OCaml 5.2, which is not installed here, it is marked as an anchor,
 * quoted and not measured.  A figure that no benchmark of this run
 * produced is "not measured", never a guess.  The exit status reports
 * errors only: a missed target is a line of the table, never a failure.
 *
 * The JSON reader below takes the documents our benchmarks write (objects,
 * arrays, strings without escapes other than \" and \\, numbers, true,
 * false, null); it is not a general JSON parser.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
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

/* A figure as our benchmarks write it: a number, or the median of a
 * {"median", "min", "max"} object. */
static double jfig(const struct jv *v) {
  if (v != NULL && v->type == J_OBJ) return jnum(jget(v, "median"));
  return jnum(v);
}

enum verdict { V_MET, V_MISSED, V_NOT_MEASURED };
static const char *const verdict_names[] = {"met", "MISSED", "not measured"};
static const char *const verdict_json[] = {"met", "missed", "not measured"};

struct row {
  const char *issue;  /* the issue that set the target */
  const char *target; /* what is promised, in words */
  double measured;    /* this run's figure; NAN when not measured */
  double limit;       /* NAN when its same-run reference is missing */
  const char *unit;
  int higher_is_better;
  const char *source; /* the benchmark and key that give the figure */
  char from[240];     /* where the limit comes from */
};

#define MAXROWS 32
static struct row rows[MAXROWS];
static int nrows;

static void row(const char *issue, const char *target, double measured,
                double limit, const char *unit, int higher_is_better,
                const char *source, const char *from_fmt, ...)
    __attribute__((format(printf, 8, 9)));

static void row(const char *issue, const char *target, double measured,
                double limit, const char *unit, int higher_is_better,
                const char *source, const char *from_fmt, ...) {
  if (nrows == MAXROWS) {
    fprintf(stderr, "report: more than %d targets\n", MAXROWS);
    exit(2);
  }
  struct row *r = &rows[nrows++];
  *r = (struct row){issue, target, measured, limit, unit, higher_is_better,
                    source, ""};
  va_list ap;
  va_start(ap, from_fmt);
  vsnprintf(r->from, sizeof r->from, from_fmt, ap);
  va_end(ap);
}

static enum verdict judge(const struct row *r) {
  if (isnan(r->measured) || isnan(r->limit)) return V_NOT_MEASURED;
  return (r->higher_is_better ? r->measured >= r->limit
                              : r->measured <= r->limit)
             ? V_MET
             : V_MISSED;
}

/* Ratios are compared to the thousandth, the rest to the hundredth. */
static int digits(const struct row *r) {
  return strcmp(r->unit, "x") == 0 ? 3 : 2;
}

/* A same-run figure quoted in a limit's explanation: "?" when missing.
 * The result lives until the eighth call after this one. */
static const char *q(double v, int d) {
  static char bufs[8][32];
  static int next;
  char *b = bufs[next++ % 8];
  if (isnan(v))
    snprintf(b, sizeof bufs[0], "?");
  else
    snprintf(b, sizeof bufs[0], "%.*f", d, v);
  return b;
}

static double probe(const struct jv *probes, const char *op,
                    const char *state) {
  return jnum(jget(jfind(jget(probes, "results"), "op", op, "state", state),
                   "median"));
}

static double reader_mode(const struct jv *reader, const char *name) {
  return jnum(jget(jfind(jget(reader, "results"), "measurement", name, NULL,
                         NULL),
                   "median"));
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* What a reader adds to probe `op`, in per cent of the probe alone: the
 * median over the rounds of each round's ratio, the two runs of a round
 * being close in time, so that a change of the machine's load between
 * rounds cancels out; *paired says how many rounds had both figures.
 * Without per-round figures, the ratio of the medians (*paired 0). */
static double added_pct(const struct jv *probes, const char *op,
                        const char *state, int *paired) {
  struct jv *res = jget(probes, "results");
  struct jv *a = jget(jfind(res, "op", op, "state", "active"), "rounds");
  struct jv *w = jget(jfind(res, "op", op, "state", state), "rounds");
  double r[64];
  int n = 0;
  if (a != NULL && w != NULL && a->type == J_ARR && w->type == J_ARR)
    for (int i = 0; i < a->n && i < w->n && n < 64; i++) {
      double x = jnum(a->kids[i]), y = jnum(w->kids[i]);
      if (!isnan(x) && !isnan(y) && x > 0) r[n++] = 100 * (y / x - 1);
    }
  *paired = n;
  if (n == 0)
    return 100 * (probe(probes, op, state) / probe(probes, op, "active") - 1);
  qsort(r, (size_t)n, sizeof r[0], cmp_double);
  return n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
}

static void targets(const char *dir) {
  struct jv *probes = jload(dir, "bench_probes");
  struct jv *reader = jload(dir, "bench_reader");
  struct jv *oreader = jload(dir, "bench_ocaml_reader");
  struct jv *domains = jload(dir, "bench_domains");
  struct jv *memory = jload(dir, "bench_memory");
  struct jv *clock = jload(dir, "bench_clock");
  struct jv *rss = jload(dir, "bench_rss");
  struct jv *start = jload(dir, "bench_start");
  struct jv *cfork = jload(dir, "bench_fork");
  struct jv *ofork = jload(dir, "bench_ocaml_fork");

  /* Issue 14: the probes against the clock they read, in this run. */
  double tsc = probe(probes, "rdtsc", "-");
  static const char *const single[][3] = {
    {"begin", "active probe (begin) <= rdtsc + 3 ns",
     "bench_probes begin/active"},
    {"counter", "active probe (counter) <= rdtsc + 3 ns",
     "bench_probes counter/active"},
    {"user_int", "active probe (user int) <= rdtsc + 3 ns",
     "bench_probes user_int/active"}};
  for (int i = 0; i < 3; i++)
    row("14", single[i][1], probe(probes, single[i][0], "active"), tsc + 3,
        "ns", 0, single[i][2], "the rdtsc loop of this run (%s ns) + 3 ns",
        q(tsc, 2));
  row("14", "active begin+end pair <= 2 x rdtsc + 4 ns",
      probe(probes, "pair", "active"), 2 * tsc + 4, "ns", 0,
      "bench_probes pair/active",
      "2 x the rdtsc loop of this run (%s ns) + 4 ns", q(tsc, 2));

  /* Issue 14: what a concurrent reader costs the writer, against the
   * same probe without one in this run. */
  static const char *const rd[][4] = {
    {"begin", "active_reader", "busy reader adds <= 20% (begin)",
     "bench_probes begin/active_reader"},
    {"pair", "active_reader", "busy reader adds <= 20% (pair)",
     "bench_probes pair/active_reader"},
    {"begin", "active_reader_1ms", "reader polling every 1 ms adds <= 3% "
     "(begin)", "bench_probes begin/active_reader_1ms"},
    {"pair", "active_reader_1ms", "reader polling every 1 ms adds <= 3% "
     "(pair)", "bench_probes pair/active_reader_1ms"}};
  for (int i = 0; i < 4; i++) {
    double alone = probe(probes, rd[i][0], "active");
    double with = probe(probes, rd[i][0], rd[i][1]);
    int busy = strcmp(rd[i][1], "active_reader") == 0, paired;
    double pct = added_pct(probes, rd[i][0], rd[i][1], &paired);
    char how[64];
    if (paired > 0)
      snprintf(how, sizeof how, "the median of %d rounds' ratios", paired);
    else
      snprintf(how, sizeof how, "the ratio of the medians");
    row("14", rd[i][2], pct, busy ? 20 : 3, "%", 0, rd[i][3],
        "fixed by issue 14; the figure is %s of this run's %s with a "
        "reader (median %s ns) and without (%s ns)",
        how, rd[i][0], q(with, 2), q(alone, 2));
  }

  /* Issue 14: the readers, against OCaml 5.2's (anchors: OCaml 5.2 is not
   * installed here, so its figures are quoted from the issue). */
  row("14", "C reader, OCaml mix <= 3.0 ns/event",
      reader_mode(reader, "ocaml_mix_all_count"), 3.0, "ns/ev", 0,
      "bench_reader ocaml_mix_all_count",
      "anchor, quoted: issue 14's 3 ns/event, 0.33 x OCaml 5.2's C "
      "reader (~9-10 ns/event)");
  row("14", "OCaml read_poll <= 20 ns/event",
      jfig(jget(oreader, "read_poll_all_callbacks")), 20, "ns/ev", 0,
      "bench_ocaml_reader read_poll_all_callbacks",
      "anchor, quoted: 0.33 x OCaml 5.2's read_poll (60-64 ns/event)");

  /* Issue 14: nothing paid by a program that never traces, against the
   * same program without the library in this run. */
  double without = jfig(jget(rss, "rss_without_kib"));
  double with = jfig(jget(rss, "rss_with_kib"));
  row("14", "untraced: the library adds <= 64 KiB of RSS",
      jfig(jget(rss, "rss_delta_kib")), 64, "KiB", 0,
      "bench_rss rss_delta_kib",
      "fixed by issue 14; linked as users link (pkg-config, dynamic), "
      "against the same program without the library in this run (VmRSS "
      "%s KiB; with it: %s KiB; "
      "anonymous memory added: %s KiB)",
      q(without, 0), q(with, 0), q(jfig(jget(rss, "rss_anon_delta_kib")), 0));
  row("14", "eventring_start() <= 300 us", jfig(jget(start, "start_us")),
      300, "us", 0, "bench_start start_us", "fixed by issue 14");

  /* Issue 14: two domains against what two threads sharing nothing
   * achieved on this machine in this run: the probes' scaling (two
   * domains' aggregate rate over one's) as a share of the rdtsc loop's. */
  double rp = jfig(jget(domains, "ratio_probes"));
  double rr = jfig(jget(domains, "ratio_rdtsc"));
  row("14", "two domains scale >= 0.97 x the rdtsc loop", rp / rr,
      0.97, "x", 1, "bench_domains ratio_probes and ratio_rdtsc",
      "fixed by issue 14; the figure is this run's 2/1 ratio of the probes "
      "(%s) over the rdtsc loop's (%s)",
      q(rp, 3), q(rr, 3));

  /* Issue 19: a traced fork against an untraced one, in this run, the
   * child exiting at once. */
  static const char *const fk[][2] = {
    {"traced fork+wait adds <= 100 us (C)", "bench_fork exit.added_us"},
    {"traced fork+wait adds <= 100 us (OCaml)",
     "bench_ocaml_fork exit.added_us"}};
  for (int i = 0; i < 2; i++) {
    struct jv *b = i ? ofork : cfork, *e = jget(b, "exit");
    row("19", fk[i][0], jnum(jget(e, "added_us")), 100, "us", 0, fk[i][1],
        "fixed by issue 19; the figure is the median over rounds of this "
        "run's traced minus untraced fork+wait, the child exiting at once "
        "(untraced %s us, traced %s us; a child that writes one event, "
        "and so makes its file, adds %s us)",
        q(jfig(jget(e, "untraced_us")), 1), q(jfig(jget(e, "traced_us")), 1),
        q(jnum(jget(jget(b, "event"), "added_us")), 1));
  }

  /* Issue 6's targets that issue 14 did not replace. */
  row("6", "C reader, current mix <= 3.3 ns/event",
      reader_mode(reader, "all_count"), 3.3, "ns/ev", 0,
      "bench_reader all_count",
      "anchor, quoted: OCaml 5.2's C reader (~10 ns/event) / 3");
  row("6", "never started probe <= 0.5 ns",
      probe(probes, "begin", "never_started"), 0.5, "ns", 0,
      "bench_probes begin/never_started", "fixed by issue 6");
  row("6", "paused probe <= 0.5 ns", probe(probes, "begin", "paused"), 0.5,
      "ns", 0, "bench_probes begin/paused", "fixed by issue 6");
  double idle = NAN, used = NAN, ring = NAN;
  struct jv *ds = jget(memory, "domains");
  for (int i = 0; ds && ds->type == J_ARR && i < ds->n; i++) {
    double x = jnum(jget(ds->kids[i], "idle_rings_resident"));
    double u = jnum(jget(ds->kids[i], "used_ring_resident_max"));
    if (isnan(idle) || x > idle) idle = x;
    if (isnan(used) || u > used) used = u;
    ring = jnum(jget(ds->kids[i], "ring_bytes"));
  }
  row("6", "idle slots: no resident memory (1/2/8 dom.)", idle / 1024, 0,
      "KiB", 0, "bench_memory idle_rings_resident", "fixed by issue 6");
  row("6", "used slot: its ring and no more", used / 1024, ring / 1024,
      "KiB", 0, "bench_memory used_ring_resident_max",
      "the ring's size in this run");
  double dev = jnum(jget(clock, "max_abs_deviation_ns"));
  double out = jnum(jget(clock, "max_outside_window_ns"));
  row("6", "TSC timestamp within 10 us of clock_gettime",
      fmax(dev, out) / 1000, 10, "us", 0,
      "bench_clock max_abs_deviation_ns", "fixed by issue 6");
  row("6", "timestamps never go backwards", jnum(jget(clock, "backwards")),
      0, "steps", 0, "bench_clock backwards", "fixed by issue 6");

  /* Issue 20: diff on pairs of runs of one program, and of it made 30 %
   * slower (bench_diff), at SCHED_FIFO where allowed and as is. */
  struct jv *diff = jload(dir, "bench_diff");
  static const char *const sched[][2] = {
      {"fifo", "diff A/A at SCHED_FIFO: pairs marked/failed"},
      {"normal", "diff A/A as is: pairs marked or failed"}};
  for (int i = 0; i < 2; i++) {
    struct jv *x = jget(diff, sched[i][0]);
    double bad = jnum(jget(x, "aa_marked")) + jnum(jget(x, "aa_failed_p99")) +
                 jnum(jget(x, "aa_failed_p50")) +
                 jnum(jget(x, "aa_failed_mean"));
    row("20", sched[i][1], bad, 0, "pairs", 0, "bench_diff aa_*",
        "fixed by issue 20 (%s pairs; marks plus --fail-if p99, p50, mean "
        ">+10%% failures)",
        q(jnum(jget(x, "pairs")), 0));
  }
  struct jv *x = jget(diff, "normal");
  row("20", "diff A/B 30 % slower: pairs caught, of all",
      jnum(jget(x, "ab_caught")), jnum(jget(x, "pairs")), "pairs", 1,
      "bench_diff normal.ab_caught",
      "fixed by issue 20: every pair (aa.work marked, p50>+10%% fails)");

  /* Issue 21: the patched OCaml runtime against the stock one, the same
   * GC-heavy program, in this run. */
  struct jv *ort = jload(dir, "bench_ocaml_runtime");
  struct jv *ov = jget(ort, "variants");
  /* Against the unpatched runtime rebuilt as _er is when the run has it
   * (make bench-ocaml-base), like for like; else against Debian's. */
  double stock = jfig(jget(jget(ov, "stock"), "cpu_s"));
  double base = jfig(jget(jget(ov, "base"), "cpu_s"));
  int lfl = !isnan(jnum(jget(ort, "never_started_vs_base_pct")));
  const char *ref = lfl ? "the unpatched runtime rebuilt as _er is"
                        : "Debian's stock runtime";
  row("21", "OCaml _er runtime never started <= +0.5 %",
      jnum(jget(ort, lfl ? "never_started_vs_base_pct"
                         : "never_started_pct")), 0.5, "%", 0,
      lfl ? "bench_ocaml_runtime never_started_vs_base_pct"
          : "bench_ocaml_runtime never_started_pct",
      "fixed by issue 21; the figure is the ratio of the medians of this "
      "run's user+sys CPU time against %s (%s s; Debian's stock: %s s, "
      "_er never started %s %% against it)",
      ref, q(lfl ? base : stock, 4), q(stock, 4),
      q(jnum(jget(ort, "never_started_pct")), 2));
  row("21", "OCaml _er runtime tracing <= +3 %",
      jnum(jget(ort, lfl ? "tracing_vs_base_pct" : "tracing_pct")), 3, "%",
      0, lfl ? "bench_ocaml_runtime tracing_vs_base_pct"
             : "bench_ocaml_runtime tracing_pct",
      "fixed by issue 21; likewise against %s (against Debian's stock: "
      "%s %%; the i runtime tracing: %s %%)",
      ref, q(jnum(jget(ort, "tracing_pct")), 2),
      q(jnum(jget(jget(ov, "i_tracing"), "vs_stock_pct")), 2));

  /* Issue 22: LTTng-UST's begin+end pair (overwrite channel) against
   * ours, in the same run of bench_lttng (make bench runs it when LTTng
   * is installed). */
  struct jv *lt = jget(jload(dir, "bench_lttng"), "results");
  double lt_pair = jnum(jget(jfind(lt, "op", "lttng_pair", NULL, NULL),
                             "median"));
  double er_pair = jnum(jget(jfind(lt, "op", "eventring_pair", NULL, NULL),
                             "median"));
  row("22", "LTTng-UST begin+end / ours >= 10 x", lt_pair / er_pair, 10, "x",
      1, "bench_lttng lttng_pair / eventring_pair",
      "fixed by issue 22; the figure is the ratio of this run's medians "
      "(LTTng %s ns, ours %s ns)", q(lt_pair, 2), q(er_pair, 2));

  /* Issue 24: watch's rules on a program of 100 k events/s. */
  struct jv *watch = jload(dir, "bench_watch");
  row("24", "watch rules at 100 k events/s < 5% of a core",
      jfig(jget(watch, "rules_cpu_percent")), 5, "%", 0,
      "bench_watch rules_cpu_percent",
      "fixed by issue 24; the figure is the watcher's CPU time over the "
      "run's wall time (one condition alone: %s %%)",
      q(jfig(jget(watch, "plain_cpu_percent")), 2));
}

static void fmtnum(char *buf, size_t len, double v, int d) {
  if (isnan(v))
    snprintf(buf, len, "-");
  else
    snprintf(buf, len, "%.*f", d, v);
}

static void print_table(void) {
  int count[3] = {0, 0, 0};
  printf("TARGETS (issues 6, 14, 19, 20, 21, 22 and 24): each figure of "
         "this run against its limit\n\n");
  printf("%2s %-5s %-44s %9s %9s %-5s %s\n", "#", "issue", "target",
         "measured", "limit", "unit", "verdict");
  for (int i = 0; i < nrows; i++) {
    const struct row *r = &rows[i];
    enum verdict v = judge(r);
    char mv[32], lv[32];
    fmtnum(mv, sizeof mv, r->measured, digits(r));
    fmtnum(lv, sizeof lv, r->limit, digits(r));
    printf("%2d %-5s %-44s %9s %9s %-5s %s\n", i + 1, r->issue, r->target,
           mv, lv, r->unit, verdict_names[v]);
    count[v]++;
  }
  printf("\n%d met, %d missed, %d not measured, of %d targets\n",
         count[V_MET], count[V_MISSED], count[V_NOT_MEASURED], nrows);
  printf("\nwhere each limit comes from: a figure of this run, a number "
         "fixed by the issue, or an\nanchor (OCaml 5.2's figure quoted "
         "from the issue, not measured here):\n");
  for (int i = 0; i < nrows; i++) {
    const struct row *r = &rows[i];
    printf("%2d %s", i + 1, r->from);
    if (isnan(r->measured))
      printf(" [not measured: no %s in this run]", r->source);
    else if (isnan(r->limit))
      printf(" [no limit: its reference is missing from this run]");
    printf("\n");
  }
}

static void json_str(FILE *o, const char *s) {
  fputc('"', o);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', o);
    fputc(*s, o);
  }
  fputc('"', o);
}

static void json_num(FILE *o, double v) {
  if (isnan(v))
    fprintf(o, "null");
  else
    fprintf(o, "%.4f", v);
}

static int write_json(const char *dir) {
  char path[4096];
  int count[3] = {0, 0, 0};
  for (int i = 0; i < nrows; i++) count[judge(&rows[i])]++;
  snprintf(path, sizeof path, "%s/results-targets.json", dir);
  FILE *o = fopen(path, "w");
  if (o == NULL) {
    fprintf(stderr, "report: %s: %s\n", path, strerror(errno));
    return 1;
  }
  fprintf(o,
          "{\n  \"met\": %d,\n  \"missed\": %d,\n  \"not_measured\": %d,\n"
          "  \"targets\": [",
          count[V_MET], count[V_MISSED], count[V_NOT_MEASURED]);
  for (int i = 0; i < nrows; i++) {
    const struct row *r = &rows[i];
    enum verdict v = judge(r);
    fprintf(o, "%s\n    {\"issue\": %s, \"target\": ", i ? "," : "",
            r->issue);
    json_str(o, r->target);
    fprintf(o, ", \"measured\": ");
    json_num(o, r->measured);
    fprintf(o, ", \"limit\": ");
    json_num(o, r->limit);
    fprintf(o, ", \"unit\": ");
    json_str(o, r->unit);
    fprintf(o, ", \"limit_from\": ");
    json_str(o, r->from);
    fprintf(o, ", \"source\": ");
    json_str(o, r->source);
    fprintf(o, ", \"verdict\": \"%s\"}", verdict_json[v]);
  }
  fprintf(o, "\n  ]\n}\n");
  if (fclose(o) != 0) {
    fprintf(stderr, "report: %s: %s\n", path, strerror(errno));
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  targets(argv[1]);
  print_table();
  return write_json(argv[1]);
}
