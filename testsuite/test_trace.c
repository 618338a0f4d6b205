/* Tests `eventring trace` as a user runs it: both output formats checked against their format's rules and against `dump`, on the OCaml 5 vectors, on our own files (every event kind, a wrapped ring, a lost-event gap, spans out of order or left open), on a spawned command, on Ctrl-C and on zero events.
 *
 * What the checks stand for.  The trace is meant for Perfetto, which is
 * not available here (nor in CI: it is neither a Debian package nor on
 * the npm registry as an offline trace processor), so the tests check
 * what Perfetto relies on instead:
 *
 *   - The JSON output is parsed by json-c, a maintained parser, in strict
 *     mode (RFC 8259 only, valid UTF-8, nothing after the document).
 *     json-c is loaded with dlopen() so that this test needs no link flag
 *     of its own; without it (no libjson-c-dev) the JSON tests skip.
 *   - The Fuchsia output is walked record by record by the walker below,
 *     written from the format's specification: the magic record first,
 *     the initialization record (1e9 ticks per second) before any string,
 *     thread or event record, every record's size word equal to what its
 *     fields and streams take, every argument's size likewise, every
 *     string and thread reference defined by an earlier record, process
 *     and thread names given by kernel object records.
 *   - On the events of either format (the same checks, on a neutral
 *     form): every track named; per track, timestamps never going back
 *     (complete slices aside, which the format lets start anywhere), every
 *     begin matched by an end of the same name in LIFO order, never
 *     before it, no slice left open, and all slices (begin/end pairs and
 *     complete ones) properly nested, which is how Perfetto builds its
 *     slice tracks and what it drops or flags otherwise; counters with
 *     numeric values only; invented events marked with a known "cut"
 *     reason; and the events that are not invented as many as `dump`
 *     reads, kind by kind.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<json-c/json.h>)
#include <json-c/json.h>
#define HAVE_JSONC_H 1
#endif
#endif

#include "eventring.h"
#include "cases.h"
#include "harness.h"
#include "testlib.h"

/* ------------------------------------------------------------------ */
/* Running programs.                                                    */

struct blob {
  char *p;
  size_t n;
};

static struct blob slurp(const char *path) {
  struct blob b;
  b.p = er_slurp(path, &b.n);
  return b;
}

/* Exit status 0; stderr empty or, for a ring that lost events, only the
 * one summary line of the losses. */
static void assert_ok(const struct er_run *r) {
  int code = er_exit_code(r, "the tool");
  int quiet = r->err[0] == '\0' ||
              (er_count_lines(r->err) == 1 && strstr(r->err, " lost ("));
  ck_assert_msg(code == 0 && quiet, "exit status %d, stderr: %s", code,
                r->err);
}

/* ------------------------------------------------------------------ */
/* What `dump` reads: the reference the traces are counted against.     */

struct dumpref {
  uint64_t total, begin, end, counter, alloc, lifecycle, user_int, user_span,
      user_unit, user_custom, lost_total;
  /* Custom payloads in reading order, as dump prints them, unquoted. */
  char **payloads;
  size_t npayloads;
};

static struct dumpref dump_of(const char *dir, const char *path) {
  const char *args[] = {"dump", "--time=raw", path, NULL};
  struct er_run r = er_run_tool(dir, args, ER_SPAWN_SIGINT);
  assert_ok(&r);
  struct dumpref d;
  memset(&d, 0, sizeof d);
  const char *sum = strstr(r.out, "SUMMARY total=");
  ck_assert_msg(sum != NULL, "dump printed no summary");
  d.total = er_field(sum, "total");
  d.begin = er_field(sum, "runtime_begin");
  d.end = er_field(sum, "runtime_end");
  d.counter = er_field(sum, "runtime_counter");
  d.alloc = er_field(sum, "alloc");
  d.lifecycle = er_field(sum, "lifecycle");
  d.user_int = er_field(sum, "user_int");
  d.user_span = er_field(sum, "user_span");
  d.user_unit = er_field(sum, "user_unit");
  d.user_custom = er_field(sum, "user_custom");
  d.lost_total = er_field(sum, "lost_events_total");
  for (char *line = r.out; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char *v = strstr(line, " kind=user_custom ");
    if (v && (v = strstr(v, " value=\""))) {
      v += 8;
      size_t len = strlen(v);
      ck_assert_msg(len > 0 && v[len - 1] == '"', "bad custom line: %s", line);
      d.payloads = realloc(d.payloads, (d.npayloads + 1) * sizeof *d.payloads);
      d.payloads[d.npayloads++] = strndup(v, len - 1);
    }
    line = nl ? nl + 1 : NULL;
  }
  er_run_free(&r);
  return d;
}

static void dumpref_free(struct dumpref *d) {
  for (size_t i = 0; i < d->npayloads; i++) free(d->payloads[i]);
  free(d->payloads);
}

/* ------------------------------------------------------------------ */
/* The neutral form both formats are read into.                         */

struct tev {
  char ph; /* B E X i C */
  uint64_t track;
  double ts, end; /* nanoseconds (exact); end for X only */
  char *name, *cat, *cut, *payload;
  int synthetic;
  int nargs, nnumeric;
  int has_count;
  uint64_t count; /* the "count" argument of a "lost events" instant */
};

struct track {
  uint64_t id;
  char *name;
};

struct trace {
  struct tev *v;
  size_t n;
  struct track tracks[64];
  int ntracks;
  char *process;
};

static struct tev *tev_new(struct trace *t) {
  t->v = realloc(t->v, (t->n + 1) * sizeof *t->v);
  ck_assert_ptr_nonnull(t->v);
  struct tev *e = &t->v[t->n++];
  memset(e, 0, sizeof *e);
  return e;
}

/* A track named again takes its last name, as viewers show it. */
static void name_track(struct trace *t, uint64_t id, const char *name) {
  for (int i = 0; i < t->ntracks; i++)
    if (t->tracks[i].id == id) {
      free(t->tracks[i].name);
      t->tracks[i].name = strdup(name);
      return;
    }
  ck_assert_int_lt(t->ntracks, 64);
  t->tracks[t->ntracks].id = id;
  t->tracks[t->ntracks++].name = strdup(name);
}

static const char *track_name(const struct trace *t, uint64_t id) {
  for (int i = 0; i < t->ntracks; i++)
    if (t->tracks[i].id == id) return t->tracks[i].name;
  return NULL;
}

static void trace_free(struct trace *t) {
  for (size_t i = 0; i < t->n; i++) {
    free(t->v[i].name);
    free(t->v[i].cat);
    free(t->v[i].cut);
    free(t->v[i].payload);
  }
  free(t->v);
  for (int i = 0; i < t->ntracks; i++) free(t->tracks[i].name);
  free(t->process);
  memset(t, 0, sizeof *t);
}

static int is_cut_reason(const char *s) {
  static const char *const known[] = {
      "ring start",  "lost events",        "domain start",
      "end of trace", "ended out of order", "domain terminated"};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (!strcmp(s, known[i])) return 1;
  return 0;
}

struct interval {
  double b, e;
};

static int by_start(const void *x, const void *y) {
  const struct interval *a = x, *b = y;
  if (a->b != b->b) return a->b < b->b ? -1 : 1;
  if (a->e != b->e) return a->e > b->e ? -1 : 1; /* outer first */
  return 0;
}

/* Slices of one track nest: sorted by start (outer first on a tie), each
 * lies within the innermost earlier slice that has not ended by its
 * start. */
static void check_nesting(struct interval *v, size_t n, const char *what,
                          uint64_t track) {
  /* qsort's array must not be NULL, even for no element (UBSan). */
  if (n > 1) qsort(v, n, sizeof *v, by_start);
  struct interval *stack = malloc((n + 1) * sizeof *stack);
  size_t depth = 0;
  for (size_t i = 0; i < n; i++) {
    while (depth > 0 && stack[depth - 1].e <= v[i].b) depth--;
    ck_assert_msg(depth == 0 || v[i].e <= stack[depth - 1].e,
                  "%s: track %" PRIu64 ": slice [%.3f, %.3f] overlaps "
                  "[%.3f, %.3f] without nesting",
                  what, track, v[i].b, v[i].e, stack[depth - 1].b,
                  stack[depth - 1].e);
    stack[depth++] = v[i];
  }
  free(stack);
}

/* Counts of the checked trace, for comparisons between formats. */
struct counts {
  size_t real, begin, end_real, complete, instant_real, counter, late_end,
      synthetic, lost_instants;
  uint64_t lost_count;
};

/* The format rules and the comparison with dump, on either format. */
static struct counts check_trace(const struct trace *t,
                                 const struct dumpref *d, const char *what) {
  struct counts c;
  memset(&c, 0, sizeof c);
  ck_assert_msg(t->process && *t->process, "%s: the process has no name",
                what);
  for (int k = 0; k < t->ntracks; k++) {
    uint64_t id = t->tracks[k].id;
    struct interval *iv = NULL;
    size_t niv = 0;
    size_t *stack = NULL, depth = 0;
    double last = -INFINITY;
    for (size_t i = 0; i < t->n; i++) {
      const struct tev *e = &t->v[i];
      if (e->track != id) continue;
      if (e->ph == 'X') {
        ck_assert_msg(e->end >= e->ts, "%s: complete slice %s ends before it "
                      "begins", what, e->name);
        iv = realloc(iv, (niv + 1) * sizeof *iv);
        iv[niv++] = (struct interval){e->ts, e->end};
        continue;
      }
      ck_assert_msg(e->ts >= last,
                    "%s: track %" PRIu64 ": %c %s at %.3f after %.3f", what,
                    id, e->ph, e->name, e->ts, last);
      last = e->ts;
      if (e->ph == 'B') {
        stack = realloc(stack, (depth + 1) * sizeof *stack);
        stack[depth++] = i;
      } else if (e->ph == 'E') {
        ck_assert_msg(depth > 0, "%s: track %" PRIu64 ": E %s with no open B",
                      what, id, e->name);
        const struct tev *b = &t->v[stack[--depth]];
        ck_assert_msg(!strcmp(b->name, e->name),
                      "%s: track %" PRIu64 ": E %s closes B %s", what, id,
                      e->name, b->name);
        ck_assert(e->ts >= b->ts);
        iv = realloc(iv, (niv + 1) * sizeof *iv);
        iv[niv++] = (struct interval){b->ts, e->ts};
      }
    }
    ck_assert_msg(depth == 0, "%s: track %" PRIu64 ": %zu slice(s) left open",
                  what, id, depth);
    check_nesting(iv, niv, what, id);
    free(iv);
    free(stack);
  }

  size_t payload_i = 0;
  for (size_t i = 0; i < t->n; i++) {
    const struct tev *e = &t->v[i];
    ck_assert_msg(track_name(t, e->track) != NULL,
                  "%s: event %s on an unnamed track %" PRIu64, what, e->name,
                  e->track);
    ck_assert_msg(e->name && *e->name, "%s: an event without a name", what);
    if (e->cut)
      ck_assert_msg(is_cut_reason(e->cut), "%s: unknown cut reason '%s'",
                    what, e->cut);
    if (e->synthetic) {
      ck_assert_msg(e->cut != NULL, "%s: synthetic %s without a cut", what,
                    e->name);
      ck_assert_msg(e->ph == 'E' || e->ph == 'i', "%s: synthetic %c", what,
                    e->ph);
      c.synthetic++;
      if (e->ph == 'i') {
        ck_assert_str_eq(e->name, "lost events");
        ck_assert(e->has_count);
        c.lost_instants++;
        c.lost_count += e->count;
      }
      continue;
    }
    if (!strcmp(e->cat, "alloc")) {
      /* An alloc event is two samples of ten buckets; count the first. */
      ck_assert_msg(e->ph == 'C' && e->nargs == 10,
                    "%s: alloc sample %s with %d buckets", what, e->name,
                    e->nargs);
      if (strstr(e->name, "alloc 10+ words")) {
        ck_assert_msg(i > 0 && t->v[i - 1].ts == e->ts &&
                          strstr(t->v[i - 1].name, "alloc <10 words"),
                      "%s: an alloc event's second half alone", what);
        ck_assert(e->nnumeric == 10);
        continue;
      }
    }
    c.real++;
    switch (e->ph) {
    case 'B': c.begin++; break;
    case 'E':
      ck_assert_msg(e->cut == NULL, "%s: real end %s marked", what, e->name);
      c.end_real++;
      break;
    case 'X':
      ck_assert_msg(e->cut != NULL, "%s: complete slice %s not marked", what,
                    e->name);
      c.complete++;
      break;
    case 'i':
      c.instant_real++;
      if (e->cut) {
        ck_assert_str_eq(e->cut, "ended out of order");
        c.late_end++;
      }
      if (e->payload && d) {
        ck_assert_msg(payload_i < d->npayloads, "%s: more payloads than dump",
                      what);
        ck_assert_msg(!strcmp(e->payload, d->payloads[payload_i]),
                      "%s: payload %s, dump has %s", what, e->payload,
                      d->payloads[payload_i]);
        payload_i++;
      }
      break;
    case 'C':
      ck_assert_msg(e->nargs > 0 && e->nnumeric == e->nargs,
                    "%s: counter %s with a non-numeric value", what, e->name);
      c.counter++;
      break;
    default: ck_abort_msg("%s: phase %c", what, e->ph);
    }
  }

  if (d) {
    ck_assert_msg(c.real == d->total, "%s: %zu events, dump reads %" PRIu64,
                  what, c.real, d->total);
    ck_assert_uint_eq(c.begin + c.end_real + c.complete + c.late_end,
                      d->begin + d->end + d->user_span);
    ck_assert_uint_eq(c.counter, d->counter + d->alloc + d->user_int);
    ck_assert_uint_eq(c.instant_real - c.late_end,
                      d->lifecycle + d->user_unit + d->user_custom);
    ck_assert_uint_eq(payload_i, d->npayloads);
    ck_assert_uint_eq(c.lost_count, d->lost_total);
  }
  return c;
}

static size_t count_cut(const struct trace *t, char ph, const char *cut,
                        uint64_t track) {
  size_t n = 0;
  for (size_t i = 0; i < t->n; i++)
    n += t->v[i].ph == ph && t->v[i].cut && !strcmp(t->v[i].cut, cut) &&
         (track == UINT64_MAX || t->v[i].track == track);
  return n;
}

/* ------------------------------------------------------------------ */
/* JSON, through json-c.                                                */

#ifdef HAVE_JSONC_H
#define JC_FUNCS(X)                                                       \
  X(json_tokener_new)                                                     \
  X(json_tokener_free)                                                    \
  X(json_tokener_set_flags)                                               \
  X(json_tokener_parse_ex)                                                \
  X(json_tokener_get_error)                                               \
  X(json_tokener_get_parse_end)                                           \
  X(json_tokener_error_desc)                                              \
  X(json_object_put)                                                      \
  X(json_object_get_type)                                                 \
  X(json_object_object_get_ex)                                            \
  X(json_object_array_length)                                             \
  X(json_object_array_get_idx)                                            \
  X(json_object_get_string)                                               \
  X(json_object_get_double)                                               \
  X(json_object_get_int64)                                                \
  X(json_object_get_boolean)                                              \
  X(json_object_iter_begin)                                               \
  X(json_object_iter_end)                                                 \
  X(json_object_iter_equal)                                               \
  X(json_object_iter_next)                                                \
  X(json_object_iter_peek_name)                                           \
  X(json_object_iter_peek_value)

/* Pointers to json-c's functions, typed from its header. */
static struct {
#define X(f) __typeof__(&f) f;
  JC_FUNCS(X)
#undef X
} jc;

static int jc_load(void) {
  static int loaded = -1;
  if (loaded >= 0) return loaded;
  void *h = dlopen("libjson-c.so.5", RTLD_NOW | RTLD_LOCAL);
  loaded = 0;
  if (!h) return 0;
#define X(f)                                                              \
  if (!(*(void **)&jc.f = dlsym(h, #f))) return 0;
  JC_FUNCS(X)
#undef X
  loaded = 1;
  return 1;
}

static json_object *jget(json_object *o, const char *key) {
  json_object *v = NULL;
  return jc.json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static int jis(json_object *o, enum json_type type) {
  return o && jc.json_object_get_type(o) == type;
}

static int jnumber(json_object *o) {
  return jis(o, json_type_int) || jis(o, json_type_double);
}

/* A time in microseconds as the text has it, in nanoseconds, exactly:
 * json-c keeps a number's text, and going through a double would round
 * ends computed as ts + dur differently from the timestamps they meet. */
static double jns(json_object *o, const char *what) {
  const char *s = jc.json_object_get_string(o);
  uint64_t us = 0, frac = 0;
  int nfrac = 0;
  for (; *s >= '0' && *s <= '9'; s++) us = us * 10 + (uint64_t)(*s - '0');
  if (*s == '.')
    for (s++; *s >= '0' && *s <= '9'; s++, nfrac++)
      if (nfrac < 3) frac = frac * 10 + (uint64_t)(*s - '0');
  ck_assert_msg(*s == '\0', "%s: a time that is not a plain decimal", what);
  for (int i = nfrac; i < 3; i++) frac *= 10;
  return (double)(us * 1000 + frac);
}

static const char *jstr(json_object *o, const char *key, const char *what) {
  json_object *v = jget(o, key);
  ck_assert_msg(jis(v, json_type_string), "%s: \"%s\" is not a string", what,
                key);
  return jc.json_object_get_string(v);
}

/* Parses `b` strictly and reads it into `t`; checks the structure that
 * the format requires of the file and of each event. */
static void read_json(const struct blob *b, struct trace *t,
                      const char *what) {
  struct json_tokener *tok = jc.json_tokener_new();
  ck_assert_ptr_nonnull(tok);
  jc.json_tokener_set_flags(tok,
                            JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  json_object *root = jc.json_tokener_parse_ex(tok, b->p, (int)b->n);
  enum json_tokener_error err = jc.json_tokener_get_error(tok);
  ck_assert_msg(root != NULL && err == json_tokener_success,
                "%s: not valid JSON: %s at byte %zu", what,
                jc.json_tokener_error_desc(err),
                jc.json_tokener_get_parse_end(tok));
  for (size_t i = jc.json_tokener_get_parse_end(tok); i < b->n; i++)
    ck_assert_msg(strchr(" \t\r\n", b->p[i]) != NULL,
                  "%s: bytes after the JSON document", what);
  jc.json_tokener_free(tok);

  ck_assert_msg(jis(root, json_type_object), "%s: not an object", what);
  ck_assert_str_eq(jstr(root, "displayTimeUnit", what), "ns");
  json_object *evs = jget(root, "traceEvents");
  ck_assert_msg(jis(evs, json_type_array), "%s: no traceEvents array", what);
  uint64_t pid = 0;
  int have_pid = 0;
  size_t n = jc.json_object_array_length(evs);
  for (size_t i = 0; i < n; i++) {
    json_object *e = jc.json_object_array_get_idx(evs, i);
    ck_assert_msg(jis(e, json_type_object), "%s: event %zu", what, i);
    const char *ph = jstr(e, "ph", what);
    const char *name = jstr(e, "name", what);
    ck_assert_msg(strlen(ph) == 1 && strchr("BEXiCM", ph[0]),
                  "%s: phase '%s'", what, ph);
    json_object *jp = jget(e, "pid"), *jt = jget(e, "tid");
    ck_assert_msg(jis(jp, json_type_int) && jis(jt, json_type_int),
                  "%s: event %zu has no integer pid and tid", what, i);
    uint64_t epid = (uint64_t)jc.json_object_get_int64(jp);
    uint64_t tid = (uint64_t)jc.json_object_get_int64(jt);
    if (have_pid) ck_assert_uint_eq(epid, pid);
    pid = epid;
    have_pid = 1;
    json_object *args = jget(e, "args");
    if (args) ck_assert(jis(args, json_type_object));
    if (ph[0] == 'M') {
      ck_assert_msg(args != NULL, "%s: metadata %s without args", what, name);
      if (!strcmp(name, "process_name")) {
        ck_assert_msg(t->process == NULL, "%s: two process names", what);
        t->process = strdup(jstr(args, "name", what));
      } else if (!strcmp(name, "thread_name")) {
        name_track(t, tid, jstr(args, "name", what));
      } else {
        ck_assert_str_eq(name, "thread_sort_index");
        ck_assert(jis(jget(args, "sort_index"), json_type_int));
      }
      continue;
    }
    struct tev *v = tev_new(t);
    v->ph = ph[0];
    v->track = tid;
    v->name = strdup(name);
    v->cat = strdup(jstr(e, "cat", what));
    json_object *ts = jget(e, "ts");
    ck_assert_msg(jnumber(ts), "%s: %s without a numeric ts", what, name);
    v->ts = jns(ts, what);
    if (v->ph == 'X') {
      json_object *dur = jget(e, "dur");
      ck_assert_msg(jnumber(dur), "%s: X %s without dur", what, name);
      v->end = v->ts + jns(dur, what);
    }
    if (v->ph == 'i') ck_assert_str_eq(jstr(e, "s", what), "t");
    if (!args) continue;
    struct json_object_iterator it = jc.json_object_iter_begin(args),
                                end = jc.json_object_iter_end(args);
    for (; !jc.json_object_iter_equal(&it, &end);
         jc.json_object_iter_next(&it)) {
      const char *key = jc.json_object_iter_peek_name(&it);
      json_object *val = jc.json_object_iter_peek_value(&it);
      v->nargs++;
      v->nnumeric += jnumber(val);
      if (!strcmp(key, "cut") && jis(val, json_type_string))
        v->cut = strdup(jc.json_object_get_string(val));
      if (!strcmp(key, "synthetic"))
        v->synthetic = jis(val, json_type_boolean) &&
                       jc.json_object_get_boolean(val);
      if (!strcmp(key, "payload") && jis(val, json_type_string))
        v->payload = strdup(jc.json_object_get_string(val));
      if (!strcmp(key, "count") && jis(val, json_type_int)) {
        v->has_count = 1;
        v->count = (uint64_t)jc.json_object_get_int64(val);
      }
    }
  }
  jc.json_object_put(root);
}
#endif /* HAVE_JSONC_H */

/* Whether JSON output can be checked here; skips the test if not. */
#define NEED_JSONC()                                                       \
  do {                                                                     \
    if (!json_available())                                                 \
      ER_SKIP("json-c is not available (apt-get install libjson-c-dev)");  \
  } while (0)

static int json_available(void) {
#ifdef HAVE_JSONC_H
  return jc_load();
#else
  return 0;
#endif
}

/* ------------------------------------------------------------------ */
/* The Fuchsia trace format, walked record by record.                   */

struct fxt_reader {
  const uint64_t *w;
  size_t nw;
  char *strings[0x8000];
  int thread_set[256];
  uint64_t thread_pid[256], thread_tid[256];
  int init_seen;
  const char *what;
};

static uint64_t bits(uint64_t w, int lo, int hi) {
  return (w >> lo) & (hi - lo == 63 ? ~0ull : ((1ull << (hi - lo + 1)) - 1));
}

static size_t words_for(size_t len) { return (len + 7) / 8; }

/* Resolves string ref `ref` of the record at w[0 .. size), whose inline
 * streams are read from *pos on; returns a malloc'd copy. */
static char *fxt_string(struct fxt_reader *r, unsigned ref, const uint64_t *rec,
                        size_t size, size_t *pos) {
  if (ref == 0) return strdup("");
  if (ref & 0x8000) {
    size_t len = ref & 0x7fff;
    ck_assert_msg(*pos + words_for(len) <= size,
                  "%s: inline string beyond its record", r->what);
    char *s = strndup((const char *)(rec + *pos), len);
    ck_assert_msg(strlen(s) == len, "%s: NUL in an inline string", r->what);
    *pos += words_for(len);
    return s;
  }
  ck_assert_msg(r->strings[ref] != NULL, "%s: string ref %u not defined",
                r->what, ref);
  return strdup(r->strings[ref]);
}

/* Reads `nargs` arguments from rec[*pos ..), checking each one's size
 * word, into `v` (NULL: only checked) and returns the "process" koid when
 * there is one. */
static uint64_t fxt_args(struct fxt_reader *r, const uint64_t *rec,
                         size_t size, size_t *pos, int nargs, struct tev *v) {
  uint64_t process = 0;
  for (int a = 0; a < nargs; a++) {
    ck_assert_msg(*pos < size, "%s: argument beyond its record", r->what);
    size_t start = *pos;
    uint64_t h = rec[(*pos)++];
    unsigned type = (unsigned)bits(h, 0, 3);
    size_t asize = bits(h, 4, 15);
    char *key = fxt_string(r, (unsigned)bits(h, 16, 31), rec, size, pos);
    char *sval = NULL;
    int numeric = 0;
    uint64_t value = 0;
    switch (type) {
    case 0: break;                                         /* null */
    case 1: case 2: numeric = 1; value = bits(h, 32, 63); break; /* int32 */
    case 3: case 4: case 5: case 7: case 8:               /* one word */
      ck_assert_msg(*pos < size, "%s: argument value beyond its record",
                    r->what);
      value = rec[(*pos)++];
      numeric = type <= 5;
      break;
    case 6:
      sval = fxt_string(r, (unsigned)bits(h, 32, 47), rec, size, pos);
      break;
    case 9: value = bits(h, 32, 32); break;
    default: ck_abort_msg("%s: argument type %u", r->what, type);
    }
    ck_assert_msg(*pos - start == asize,
                  "%s: argument %s: size word %zu, content %zu words",
                  r->what, key, asize, *pos - start);
    if (type == 8 && !strcmp(key, "process")) process = value;
    if (v) {
      v->nargs++;
      v->nnumeric += numeric;
      if (!strcmp(key, "cut") && sval) v->cut = strdup(sval);
      if (!strcmp(key, "payload") && sval) v->payload = strdup(sval);
      if (!strcmp(key, "synthetic") && type == 9) v->synthetic = value != 0;
      if (!strcmp(key, "count") && (type == 4 || type == 2)) {
        v->has_count = 1;
        v->count = value;
      }
    }
    free(key);
    free(sval);
  }
  return process;
}

static void read_fxt(const struct blob *b, struct trace *t, const char *what) {
  ck_assert_msg(b->n % 8 == 0, "%s: %zu bytes, not whole words", what, b->n);
  struct fxt_reader *r = calloc(1, sizeof *r);
  ck_assert_ptr_nonnull(r);
  r->w = (const uint64_t *)(const void *)b->p;
  r->nw = b->n / 8;
  r->what = what;
  ck_assert_msg(r->nw >= 1 && r->w[0] == 0x0016547846040010ull,
                "%s: no magic number record first", what);
  uint64_t process_koid = 0;
  int have_process = 0;
  for (size_t at = 1; at < r->nw;) {
    const uint64_t *rec = r->w + at;
    uint64_t h = rec[0];
    unsigned type = (unsigned)bits(h, 0, 3);
    size_t size = type == 15 ? bits(h, 4, 35) : bits(h, 4, 15);
    ck_assert_msg(size >= 1 && at + size <= r->nw,
                  "%s: record at word %zu: size %zu", what, at, size);
    size_t pos = 1;
    switch (type) {
    case 0: { /* metadata */
      unsigned mt = (unsigned)bits(h, 16, 19);
      if (mt == 1) {
        size_t len = bits(h, 52, 59);
        pos += words_for(len);
      } else if (mt == 4) {
        ck_assert_msg(bits(h, 20, 23) != 0 || size == 1,
                      "%s: a magic record with content", what);
      }
      break;
    }
    case 1: /* initialization */
      ck_assert_uint_eq(size, 2);
      ck_assert_uint_eq(rec[1], 1000000000u);
      r->init_seen = 1;
      pos = 2;
      break;
    case 2: { /* string */
      ck_assert_msg(r->init_seen, "%s: string before initialization", what);
      unsigned index = (unsigned)bits(h, 16, 30);
      size_t len = bits(h, 32, 46);
      ck_assert(bits(h, 31, 31) == 0 && bits(h, 47, 63) == 0);
      ck_assert_msg(index != 0, "%s: string record for index 0", what);
      pos += words_for(len);
      ck_assert_msg(pos <= size, "%s: string beyond its record", what);
      free(r->strings[index]);
      r->strings[index] = strndup((const char *)(rec + 1), len);
      break;
    }
    case 3: { /* thread */
      ck_assert_msg(r->init_seen, "%s: thread before initialization", what);
      unsigned index = (unsigned)bits(h, 16, 23);
      ck_assert(index != 0);
      ck_assert_uint_eq(size, 3);
      r->thread_set[index] = 1;
      r->thread_pid[index] = rec[1];
      r->thread_tid[index] = rec[2];
      pos = 3;
      break;
    }
    case 7: { /* kernel object */
      ck_assert_msg(r->init_seen, "%s: object before initialization", what);
      unsigned obj = (unsigned)bits(h, 16, 23);
      int nargs = (int)bits(h, 40, 43);
      uint64_t koid = rec[pos++];
      char *name = fxt_string(r, (unsigned)bits(h, 24, 39), rec, size, &pos);
      uint64_t proc = fxt_args(r, rec, size, &pos, nargs, NULL);
      if (obj == 1) {
        ck_assert_msg(!have_process, "%s: two processes", what);
        have_process = 1;
        process_koid = koid;
        t->process = strdup(name);
      } else if (obj == 2) {
        ck_assert_msg(have_process && proc == process_koid,
                      "%s: thread %s without its process", what, name);
        name_track(t, koid, name);
      }
      free(name);
      break;
    }
    case 4: { /* event */
      ck_assert_msg(r->init_seen, "%s: event before initialization", what);
      unsigned et = (unsigned)bits(h, 16, 19);
      int nargs = (int)bits(h, 20, 23);
      unsigned thread = (unsigned)bits(h, 24, 31);
      ck_assert_msg(et <= 4, "%s: event type %u", what, et);
      struct tev *v = tev_new(t);
      v->ph = "iCBEX"[et];
      ck_assert(pos < size);
      v->ts = (double)rec[pos++];
      uint64_t pid, tid;
      if (thread) {
        ck_assert_msg(r->thread_set[thread], "%s: thread ref %u not defined",
                      what, thread);
        pid = r->thread_pid[thread];
        tid = r->thread_tid[thread];
      } else {
        ck_assert(pos + 2 <= size);
        pid = rec[pos];
        tid = rec[pos + 1];
        pos += 2;
      }
      ck_assert_msg(have_process && pid == process_koid,
                    "%s: event of an unknown process", what);
      v->track = tid;
      v->cat = fxt_string(r, (unsigned)bits(h, 32, 47), rec, size, &pos);
      v->name = fxt_string(r, (unsigned)bits(h, 48, 63), rec, size, &pos);
      fxt_args(r, rec, size, &pos, nargs, v);
      if (et == 1) pos++; /* counter id */
      if (et == 4) {
        ck_assert(pos < size);
        v->end = (double)rec[pos++];
      }
      break;
    }
    default:
      ck_abort_msg("%s: record type %u at word %zu: we write none", what,
                   type, at);
    }
    ck_assert_msg(pos == size,
                  "%s: record type %u at word %zu: size word %zu, content "
                  "%zu words",
                  what, type, at, size, pos);
    at += size;
  }
  ck_assert_msg(r->init_seen, "%s: no initialization record", what);
  for (size_t i = 0; i < sizeof r->strings / sizeof r->strings[0]; i++)
    free(r->strings[i]);
  free(r);
}

/* ------------------------------------------------------------------ */
/* Running `trace` and checking what it wrote.                          */

/* Runs `eventring trace -o OUT --format FMT SOURCE...` (`src`, NULL-
 * terminated) in `dir` and reads OUT into `t`.  Returns the run. */
static struct er_run trace_run(const char *dir, const char *fmt,
                               const char *const *src, struct trace *t,
                               struct blob *raw) {
  char out[PATH_MAX];
  snprintf(out, sizeof out, "%s/trace.%s", dir, fmt);
  unlink(out);
  const char *args[32] = {"trace", "-o", out, "--format", fmt};
  int n = 5;
  for (; *src && n < 31; src++) args[n++] = *src;
  args[n] = NULL;
  struct er_run r = er_run_tool(dir, args, ER_SPAWN_SIGINT);
  memset(t, 0, sizeof *t);
  if (access(out, F_OK) != 0) return r;
  struct blob b = slurp(out);
  if (!strcmp(fmt, "json")) {
#ifdef HAVE_JSONC_H
    read_json(&b, t, out);
#endif
  } else {
    read_fxt(&b, t, out);
  }
  if (raw)
    *raw = b;
  else
    free(b.p);
  unlink(out);
  return r;
}

/* Both formats of `path`, checked; their counts must agree. */
static void check_both(const char *dir, const char *path,
                       const struct dumpref *d, struct trace *json,
                       struct trace *fxt) {
  const char *src[] = {path, NULL};
  struct er_run r = trace_run(dir, "fuchsia", src, fxt, NULL);
  assert_ok(&r);
  er_run_free(&r);
  struct counts cf = check_trace(fxt, d, "fuchsia");
  r = trace_run(dir, "json", src, json, NULL);
  assert_ok(&r);
  er_run_free(&r);
  struct counts cj = check_trace(json, d, "json");
  ck_assert_uint_eq(cf.real, cj.real);
  ck_assert_uint_eq(cf.synthetic, cj.synthetic);
  ck_assert_uint_eq(cf.complete, cj.complete);
  ck_assert_uint_eq(cf.late_end, cj.late_end);
  ck_assert_int_eq(fxt->ntracks, json->ntracks);
  ck_assert_str_eq(fxt->process, json->process);
}

/* ------------------------------------------------------------------ */
/* The OCaml 5 vectors.                                                 */

START_TEST(test_vector) {
  ER_NEED_TOOL();
  NEED_JSONC();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  if (!er_unpack_vector(dir, er_vectors[_i], path))
    ER_SKIP("EVENTRING_TEST_DATA is not set");
  struct dumpref d = dump_of(dir, path);
  ck_assert_uint_gt(d.total, 100);
  struct trace json, fxt;
  check_both(dir, path, &d, &json, &fxt);
  /* The process is named after the file when nothing better is known. */
  ck_assert_msg(strstr(json.process, er_vectors[_i]) != NULL, "process %s",
                json.process);
  if (d.lost_total) {
    /* The wrapped vector: its gap is marked on the track. */
    ck_assert_uint_ge(count_cut(&json, 'i', "lost events", UINT64_MAX), 1);
  }
  trace_free(&json);
  trace_free(&fxt);
  dumpref_free(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Our own files.                                                       */

static const char *writer_path(char *buf) {
  const char *progs = er_env_dir("EVENTRING_TEST_PROGS");
  if (!progs) return NULL;
  snprintf(buf, PATH_MAX, "%s/i_trace_writer", progs);
  return access(buf, X_OK) == 0 ? buf : NULL;
}

#define NEED_WRITER(buf)                                                  \
  do {                                                                    \
    if (!writer_path(buf)) ER_SKIP("i_trace_writer is not built");        \
  } while (0)

/* Runs the writer in `mode` "post" to its end, keeping its file; returns
 * the file's path in `path` and the writer's pid. */
static pid_t write_post(const char *dir, char *path) {
  char prog[PATH_MAX];
  writer_path(prog);
  setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
  setenv("OCAMLRUNPARAM", "e=10", 1);
  char *argv[] = {prog, "post", NULL};
  pid_t pid = er_spawn(argv, -1, -1, -1, NULL, ER_SPAWN_SIGINT);
  int st = er_wait_for(pid, ER_RUN_TIMEOUT);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "i_trace_writer failed: status %d", st);
  unsetenv("OCAML_RUNTIME_EVENTS_PRESERVE");
  unsetenv("OCAMLRUNPARAM");
  er_ring_path_for(path, PATH_MAX, dir, pid);
  return pid;
}

/* The tracks of domain `k`: named "domain K", "domain K, thread N" or
 * "NAME (domain K)".  Their ids (thread ids) into ids[0..max), in the
 * order they were named; returns how many there are. */
static int tracks_of(const struct trace *t, int k, uint64_t *ids, int max) {
  char plain[32], suffix[32], earlier[40];
  snprintf(plain, sizeof plain, "domain %d", k);
  snprintf(suffix, sizeof suffix, " (domain %d)", k);
  snprintf(earlier, sizeof earlier, "domain %d, thread ", k);
  int n = 0;
  for (int i = 0; i < t->ntracks; i++) {
    const char *name = t->tracks[i].name;
    size_t ln = strlen(name), ls = strlen(suffix);
    if (!strcmp(name, plain) || !strncmp(name, earlier, strlen(earlier)) ||
        (ln > ls && !strcmp(name + ln - ls, suffix))) {
      if (n < max) ids[n] = t->tracks[i].id;
      n++;
    }
  }
  return n;
}

/* The one track of domain `k`, or UINT64_MAX - 1 (no event's) when there
 * is none. */
static uint64_t track_id(const struct trace *t, int k) {
  uint64_t id = UINT64_MAX - 1;
  int n = tracks_of(t, k, &id, 1);
  ck_assert_msg(n <= 1, "domain %d has %d tracks", k, n);
  return id;
}

START_TEST(test_own_file) {
  ER_NEED_TOOL();
  NEED_JSONC();
  char prog[PATH_MAX];
  NEED_WRITER(prog);
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  write_post(dir, path);
  struct dumpref d = dump_of(dir, path);
  ck_assert_uint_gt(d.lost_total, 0);
  ck_assert_uint_eq(d.alloc, 3);
  ck_assert_uint_eq(d.user_custom, 3);
  struct trace json, fxt;
  check_both(dir, path, &d, &json, &fxt);
  struct trace *ts[] = {&json, &fxt};
  for (int f = 0; f < 2; f++) {
    struct trace *t = ts[f];
    /* Domains 0..3 and the two holders of slot 4 (test_names). */
    ck_assert_int_eq(t->ntracks, 6);
    for (int k = 0; k < 4; k++) ck_assert(track_name(t, track_id(t, k)));
    /* Domain 0: the begins of t.span and major_slice went with the
     * wrap; their ends open at the cut, nested (the span inside). */
    ck_assert_uint_eq(count_cut(t, 'X', "lost events", track_id(t, 0)), 2);
    double span_b = 0, span_e = 0, major_b = 0, major_e = 0;
    for (size_t i = 0; i < t->n; i++) {
      const struct tev *e = &t->v[i];
      if (e->ph != 'X') continue;
      if (!strcmp(e->name, "t.span")) span_b = e->ts, span_e = e->end;
      if (!strcmp(e->name, "major_slice")) major_b = e->ts, major_e = e->end;
    }
    ck_assert(major_b < span_b && span_e <= major_e);
    /* The span left open ends with the trace. */
    ck_assert_uint_eq(count_cut(t, 'E', "end of trace", track_id(t, 0)), 1);
    /* Domains 1..3: t.span ended inside major_slice, which is closed
     * there; major_slice's own end is then an instant. */
    for (int k = 1; k <= 3; k++) {
      uint64_t id = track_id(t, k);
      ck_assert_uint_eq(count_cut(t, 'E', "ended out of order", id), 1);
      ck_assert_uint_eq(count_cut(t, 'i', "ended out of order", id), 1);
    }
    /* Alloc events: two counter samples of ten buckets each. */
    size_t allocs = 0;
    for (size_t i = 0; i < t->n; i++) allocs += !strcmp(t->v[i].cat, "alloc");
    ck_assert_uint_eq(allocs, 6);
  }
  trace_free(&json);
  trace_free(&fxt);
  dumpref_free(&d);
}
END_TEST

/* The tracks of the i_trace_writer's file (or of a snapshot of it),
 * given the holders the file records for slots 0..4. */
static void check_name_tracks(const struct trace *t,
                              const eventring_slot_thread *th) {
  static const char *const want[] = {
      "i_trace_writer (domain 0)", "t.late-1 (domain 1)",
      "t.renamed-2 (domain 2)", "t.explicit-3 (domain 3)"};
  /* The process is named after the program the file records. */
  ck_assert_str_eq(t->process, "i_trace_writer");
  for (int k = 0; k < 4; k++) {
    uint64_t id = track_id(t, k);
    ck_assert_str_eq(track_name(t, id), want[k]);
    ck_assert_uint_eq(id, (uint64_t)th[k].tid);
  }
  /* Slot 4: two tracks, each with its own t.unit.  The file records the
   * second holder, whose track has its name and id; the first's is the
   * domain's, under an id no thread has. */
  uint64_t ids[4];
  ck_assert_int_eq(tracks_of(t, 4, ids, 4), 2);
  const char *n0 = track_name(t, ids[0]), *n1 = track_name(t, ids[1]);
  ck_assert_msg(!strcmp(n0, "domain 4") &&
                    !strcmp(n1, "t.second-4 (domain 4)"),
                "slot 4's tracks: %s, %s", n0, n1);
  ck_assert_uint_eq(ids[1], (uint64_t)th[4].tid);
  for (int k = 0; k < 5; k++) ck_assert_uint_ne(ids[0], (uint64_t)th[k].tid);
  for (int i = 0; i < 2; i++) {
    size_t units = 0;
    for (size_t e = 0; e < t->n; e++)
      units += t->v[e].track == ids[i] && !strcmp(t->v[e].name, "t.unit");
    ck_assert_uint_eq(units, 1);
  }
}

/* Reads the command line and the holders of slots 0..4 that `path`
 * records through the library, and checks what it says of them. */
static void file_threads(const char *path, pid_t pid, eventring_slot_thread *th) {
  eventring_cursor *c;
  ck_assert_int_eq(eventring_cursor_open_file(&c, path), 0);
  ck_assert_str_eq(eventring_cursor_program(c), "i_trace_writer");
  const char *line = eventring_cursor_cmdline(c);
  ck_assert_msg(line && strstr(line, "i_trace_writer post"), "cmdline %s",
                line ? line : "(none)");
  for (int k = 0; k < 5; k++)
    ck_assert_int_eq(eventring_cursor_slot_thread(c, k, &th[k]), 1);
  eventring_slot_thread none;
  ck_assert_int_le(eventring_cursor_slot_thread(c, 5, &none), 0);
  eventring_cursor_free(c);
  /* The main thread's id is the pid; every thread's is its own. */
  ck_assert_int_eq(th[0].tid, pid);
  for (int k = 1; k < 5; k++)
    for (int j = 0; j < k; j++) ck_assert_int_ne(th[k].tid, th[j].tid);
  ck_assert_uint_eq(th[0].since, 0);
  ck_assert_str_eq(th[4].name, "t.second-4");
}

/* Thread names and ids, the process's name, and a slot reused by a
 * second thread, in both formats, from a file after its writer exited
 * (everything comes from the file) and from a snapshot of it. */
START_TEST(test_names) {
  ER_NEED_TOOL();
  NEED_JSONC();
  char prog[PATH_MAX];
  NEED_WRITER(prog);
  const char *dir = er_tmpdir();
  /* The arguments are recorded only when asked for. */
  setenv("EVENTRING_RECORD_CMDLINE", "1", 1);
  char path[PATH_MAX], snap[PATH_MAX];
  pid_t pid = write_post(dir, path);
  eventring_slot_thread th[5];
  file_threads(path, pid, th);
  snprintf(snap, sizeof snap, "%s/snap.events", dir);
  const char *args[] = {"snapshot", "-o", snap, path, NULL};
  struct er_run r = er_run_tool(dir, args, ER_SPAWN_SIGINT);
  ck_assert_int_eq(er_exit_code(&r, "snapshot"), 0);
  er_run_free(&r);
  eventring_slot_thread ths[5];
  file_threads(snap, pid, ths);
  for (int k = 0; k < 5; k++) {
    ck_assert_int_eq(ths[k].tid, th[k].tid);
    ck_assert_str_eq(ths[k].name, th[k].name);
    ck_assert_uint_eq(ths[k].since, th[k].since);
  }
  const char *files[] = {path, snap};
  for (int i = 0; i < 2; i++) {
    struct trace json, fxt;
    struct dumpref d = dump_of(dir, files[i]);
    check_both(dir, files[i], &d, &json, &fxt);
    check_name_tracks(&json, th);
    check_name_tracks(&fxt, th);
    trace_free(&json);
    trace_free(&fxt);
    dumpref_free(&d);
  }
}
END_TEST

/* i_trace_writer MODE, its stdin and stdout on pipes: `to` (closing it
 * ends the writer) and `from`; started, it has printed its ready line. */
struct writer {
  pid_t pid;
  int to, from;
};

static struct writer start_writer(const char *prog, const char *mode) {
  int to_w[2], from_w[2];
  ck_assert(pipe2(to_w, O_CLOEXEC) == 0 && pipe2(from_w, O_CLOEXEC) == 0);
  char *argv[] = {(char *)prog, (char *)mode, NULL};
  struct writer w = {
      er_spawn(argv, to_w[0], from_w[1], -1, NULL, ER_SPAWN_SIGINT),
      to_w[1], from_w[0]};
  close(to_w[0]);
  close(from_w[1]);
  char line[16] = "";
  struct pollfd pfd = {w.from, POLLIN, 0};
  ck_assert_msg(poll(&pfd, 1, 10000) == 1 && read(w.from, line, sizeof line) > 0,
                "the writer did not get ready");
  return w;
}

/* Starts `trace -o OUT --format FMT --follow --pid PID --dir DIR` (OUT
 * is DIR/`name`, written to `out`, PATH_MAX bytes); its output files go
 * to `outp` and `errp` as for er_start_tool(). */
static pid_t start_follower(const char *dir, pid_t pid, const char *name,
                            const char *fmt, char *out, char *outp,
                            char *errp) {
  char pidarg[32];
  snprintf(pidarg, sizeof pidarg, "%ld", (long)pid);
  snprintf(out, PATH_MAX, "%s/%s", dir, name);
  const char *args[] = {"trace",    "-o",    out,    "--format", fmt,
                        "--follow", "--pid", pidarg, "--dir",    dir,
                        NULL};
  return er_start_tool(dir, args, ER_SPAWN_SIGINT, outp, errp);
}

/* A live writer whose ring wraps between two reads: spans open before the
 * gap are closed at it and their ends after it open at the cut. */
START_TEST(test_live_gap) {
  ER_NEED_TOOL();
  NEED_JSONC();
  char prog[PATH_MAX];
  NEED_WRITER(prog);
  const char *dir = er_tmpdir();
  setenv("OCAMLRUNPARAM", "e=10", 1);
  {
    struct writer w = start_writer(prog, "live");
    char out[PATH_MAX], outp[PATH_MAX], errp[PATH_MAX];
    pid_t tool =
        start_follower(dir, w.pid, "live.json", "json", out, outp, errp);
    /* The tool has read the first part once it waits for more.  Stopped
     * there, it cannot poll while the writer goes on: the writer wraps
     * its ring and ends before the tool reads again. */
    er_wait_idle(tool);
    ck_assert_int_eq(kill(tool, SIGSTOP), 0);
    ck_assert(write(w.to, "go\n", 3) == 3);
    close(w.to);
    int st = er_wait_for(w.pid, ER_RUN_TIMEOUT);
    close(w.from);
    ck_assert_int_eq(kill(tool, SIGCONT), 0);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "i_trace_writer live failed: status %d", st);
    struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
    assert_ok(&r);
    er_run_free(&r);
    struct blob b = slurp(out);
    struct trace t;
    memset(&t, 0, sizeof t);
#ifdef HAVE_JSONC_H
    read_json(&b, &t, out);
#endif
    free(b.p);
    /* The same file is not there any more for dump: rules only. */
    check_trace(&t, NULL, "live json");
    size_t closed = count_cut(&t, 'E', "lost events", track_id(&t, 0));
    size_t opened = count_cut(&t, 'X', "lost events", track_id(&t, 0));
    trace_free(&t);
    ck_assert_uint_eq(closed, 2);
    ck_assert_uint_eq(opened, 2);
  }
  unsetenv("OCAMLRUNPARAM");
}
END_TEST

/* Whether `dir` holds a temporary file of an output named "int.*". */
static int has_tmp(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  int found = 0;
  while ((e = readdir(d)) != NULL)
    found |= !strncmp(e->d_name, ".int.", 5);
  closedir(d);
  return found;
}

/* Ctrl-C on the tool following a writer that never ends: a complete,
 * valid file with every open span closed, and no temporary file left. */
START_TEST(test_interrupt) {
  ER_NEED_TOOL();
  char prog[PATH_MAX];
  NEED_WRITER(prog);
  const char *dir = er_tmpdir();
  const char *fmts[] = {"fuchsia", "json"};
  for (int f = 0; f < 2; f++) {
    if (f == 1 && !json_available()) break;
    struct writer w = start_writer(prog, "hold");
    char name[32], out[PATH_MAX], outp[PATH_MAX], errp[PATH_MAX];
    snprintf(name, sizeof name, "int.%s", fmts[f]);
    pid_t tool = start_follower(dir, w.pid, name, fmts[f], out, outp, errp);
    /* Until its handlers are in place a SIGINT would kill it: once it
     * waits for more events they are, and so is its temporary file. */
    er_wait_idle(tool);
    ck_assert(has_tmp(dir));
    kill(tool, SIGINT);
    struct er_run r = er_finish(tool, outp, errp, ER_RUN_TIMEOUT);
    close(w.to); /* the writer ends */
    er_wait_for(w.pid, ER_RUN_TIMEOUT);
    close(w.from);
    int code = er_exit_code(&r, "the tool");
    ck_assert_msg(code == 128 + SIGINT || code == 0,
                  "exit status %d, stderr %s", code, r.err);
    er_run_free(&r);
    struct blob b = slurp(out);
    struct trace t;
    memset(&t, 0, sizeof t);
    if (f == 0) {
      read_fxt(&b, &t, out);
    } else {
#ifdef HAVE_JSONC_H
      read_json(&b, &t, out);
#endif
    }
    free(b.p);
    check_trace(&t, NULL, out);
    /* Domain 0 had major_slice and t.span open, if the tool got to read
     * it before the signal (it reads a domain whole or not at all). */
    size_t on0 = 0;
    for (size_t i = 0; i < t.n; i++) on0 += t.v[i].track == track_id(&t, 0);
    if (on0)
      ck_assert_uint_eq(count_cut(&t, 'E', "end of trace", track_id(&t, 0)),
                        2);
    trace_free(&t);
    ck_assert_msg(!has_tmp(dir), "a temporary file was left in %s", dir);
  }
}
END_TEST

/* `eventring trace -o OUT -- CMD`: the process is named after the program. */
START_TEST(test_spawn) {
  ER_NEED_TOOL();
  NEED_JSONC();
  char prog[PATH_MAX];
  NEED_WRITER(prog);
  const char *dir = er_tmpdir();
  setenv("OCAMLRUNPARAM", "e=10", 1);
  const char *src[] = {"--", prog, "post", NULL};
  struct trace t;
  struct er_run r = trace_run(dir, "json", src, &t, NULL);
  unsetenv("OCAMLRUNPARAM");
  assert_ok(&r);
  er_run_free(&r);
  check_trace(&t, NULL, "spawn json");
  ck_assert_str_eq(t.process, "i_trace_writer");
  ck_assert_int_eq(t.ntracks, 6); /* domains 0..3, two threads of slot 4 */
  trace_free(&t);
}
END_TEST

/* A ring file without a single event still gives complete files. */
START_TEST(test_zero_events) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char path[PATH_MAX];
  if (!er_unpack_vector(dir, "ocaml5-basic", path))
    ER_SKIP("EVENTRING_TEST_DATA is not set");
  /* Empty every ring: head = tail = 0 (OCaml's files keep nothing else
   * about a ring's content). */
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  uint64_t meta[8];
  ck_assert(pread(fd, meta, sizeof meta, 0) == sizeof meta);
  static const uint64_t zero[2];
  for (uint64_t k = 0; k < meta[1]; k++)
    ck_assert(pwrite(fd, zero, sizeof zero, (off_t)(meta[5] + k * meta[2])) ==
              sizeof zero);
  close(fd);
  struct dumpref d = dump_of(dir, path);
  ck_assert_uint_eq(d.total, 0);
  const char *src[] = {path, NULL};
  struct trace t;
  struct blob raw;
  struct er_run r = trace_run(dir, "fuchsia", src, &t, &raw);
  assert_ok(&r);
  er_run_free(&r);
  check_trace(&t, &d, "empty fuchsia");
  ck_assert_uint_eq(t.n, 0);
  ck_assert_uint_gt(raw.n, 16);
  free(raw.p);
  trace_free(&t);
  if (json_available()) {
    r = trace_run(dir, "json", src, &t, NULL);
    assert_ok(&r);
    er_run_free(&r);
    check_trace(&t, &d, "empty json");
    ck_assert_uint_eq(t.n, 0);
    trace_free(&t);
  }
  dumpref_free(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bad usage and bad files: one line, the documented status, no OUT.     */

START_TEST(test_errors) {
  ER_NEED_TOOL();
  const char *dir = er_tmpdir();
  char out[PATH_MAX], missing[PATH_MAX], bad[PATH_MAX];
  snprintf(out, sizeof out, "%s/o.fxt", dir);
  snprintf(missing, sizeof missing, "%s/nope.events", dir);
  snprintf(bad, sizeof bad, "%s/nodir/o.fxt", dir);

  const char *a1[] = {"trace", "-o", out, "--format", "xml", missing, NULL};
  struct er_run r = er_run_tool(dir, a1, ER_SPAWN_SIGINT);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_assert_one_error(&r, "unknown format");
  er_run_free(&r);

  const char *a2[] = {"trace", NULL};
  r = er_run_tool(dir, a2, ER_SPAWN_SIGINT);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
  er_assert_one_error(&r, "OUT");
  er_run_free(&r);

  const char *a3[] = {"trace", "-o", out, missing, NULL};
  r = er_run_tool(dir, a3, ER_SPAWN_SIGINT);
  ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
  er_assert_one_error(&r, "nope.events");
  er_run_free(&r);
  ck_assert_int_ne(access(out, F_OK), 0);

  char vec[PATH_MAX];
  if (er_unpack_vector(dir, "ocaml5-basic", vec)) {
    const char *a4[] = {"trace", "-o", bad, vec, NULL};
    r = er_run_tool(dir, a4, ER_SPAWN_SIGINT);
    ck_assert_int_eq(er_exit_code(&r, "the tool"), 1);
    er_assert_one_error(&r, "nodir");
    er_run_free(&r);
    /* OUT the ring file itself would destroy it. */
    const char *a5[] = {"trace", "--format", "fuchsia", "-o", vec, vec, NULL};
    r = er_run_tool(dir, a5, ER_SPAWN_SIGINT);
    ck_assert_int_eq(er_exit_code(&r, "the tool"), 2);
    er_run_free(&r);
    struct dumpref d = dump_of(dir, vec);
    ck_assert_uint_gt(d.total, 100);
    dumpref_free(&d);
  }
}
END_TEST

static TCase *tc_vectors(void) {
  TCase *tc = er_tcase("vectors");
  tcase_add_loop_test(tc, test_vector, 0, ER_NVECTORS);
  return tc;
}

static TCase *tc_own(void) {
  TCase *tc = er_tcase("own files");
  ER_ADD_TESTS(tc, test_own_file, test_names, test_live_gap, test_interrupt,
               test_spawn, test_zero_events);
  return tc;
}

/* ------------------------------------------------------------------ */
/* Threads of a shared domain.                                          */

/* Two threads joined to slot 0 take turns (a baton under a mutex, as
 * OCaml 4's runtime lock would), each writing spans of its own; the
 * trace has a track per thread besides the domain's, which both formats
 * must name and nest properly (test_trace_threads checks which event
 * went where). */
static pthread_mutex_t baton_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t baton_cond = PTHREAD_COND_INITIALIZER;
static int baton, span_main, span_worker;

static void turns(int me, int span) {
  for (int i = 0; i < 10; i++) {
    pthread_mutex_lock(&baton_lock);
    while (baton % 2 != me) pthread_cond_wait(&baton_cond, &baton_lock);
    eventring_write_span(span, 0);
    eventring_write_span(span, 1);
    baton++;
    pthread_cond_broadcast(&baton_cond);
    pthread_mutex_unlock(&baton_lock);
  }
}

static void *worker_turns(void *arg) {
  (void)arg;
  ck_assert_int_eq(eventring_domain_join(0), 0);
  eventring_thread_id(1);
  ck_assert_int_eq(eventring_thread_name("worker"), 0);
  turns(1, span_worker);
  return NULL;
}

START_TEST(test_thread_tracks) {
  ER_NEED_TOOL();
  NEED_JSONC();
  const char *dir = er_tmpdir();
  ck_assert_int_eq(setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1), 0);
  span_main = eventring_register("main.work", EVENTRING_TYPE_SPAN);
  span_worker = eventring_register("worker.work", EVENTRING_TYPE_SPAN);
  ck_assert_int_eq(eventring_domain_join(0), 0);
  eventring_thread_id(0);
  ck_assert_int_eq(eventring_thread_name("main"), 0);
  ck_assert_int_eq(eventring_start(), 0);
  char *path = strdup(eventring_path());
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, worker_turns, NULL), 0);
  turns(0, span_main);
  pthread_join(th, NULL);
  ck_assert_int_eq(eventring_stop(), 0);
  eventring_domain_release();

  struct trace json, fxt;
  check_both(dir, path, NULL, &json, &fxt);
  struct trace *ts[] = {&json, &fxt};
  for (int f = 0; f < 2; f++) {
    struct trace *t = ts[f];
    /* One track per thread: the main thread, the slot's holder, keeps
     * the domain's track (its real tid), named after it. */
    ck_assert_int_eq(t->ntracks, 2);
    int named = 0;
    for (int k = 0; k < t->ntracks; k++)
      named += !strcmp(t->tracks[k].name, "main, thread 0 (domain 0)") ||
               !strcmp(t->tracks[k].name, "worker, thread 1 (domain 0)");
    ck_assert_int_eq(named, 2);
    /* Interleaved, yet no slice was cut: each thread's spans nest on
     * its own track. */
    ck_assert_uint_eq(count_cut(t, 'E', "ended out of order", UINT64_MAX), 0);
    ck_assert_uint_eq(count_cut(t, 'i', "ended out of order", UINT64_MAX), 0);
  }
  trace_free(&json);
  trace_free(&fxt);
  free(path);
}
END_TEST

static TCase *tc_threads(void) {
  TCase *tc = er_tcase("threads");
  tcase_add_test(tc, test_thread_tracks);
  return tc;
}

static TCase *tc_errors(void) {
  TCase *tc = er_tcase("errors");
  tcase_add_test(tc, test_errors);
  return tc;
}

ER_TEST_MAIN("trace", tc_vectors, tc_own, tc_threads, tc_errors)
