/* rules.c -- the conditions of `eventring watch --when`: a small language
 * of rules (analysis.h has the grammar), parsed once, and evaluated for
 * each traced process over the events it is fed, in trace time.
 *
 * Windows.  An aggregate over a window of W keeps RULES_SLICES + 1 slices
 * of width s = W / RULES_SLICES in a ring: the current slice, which the
 * newest events go into, and the RULES_SLICES complete ones before it,
 * which are the window.  Slices are aligned on multiples of s in trace
 * time.  When trace time (the newest timestamp read) passes the current
 * slice's end, that slice joins the window and the oldest leaves it:
 * counts and sums are added and subtracted, percentiles kept as bucket
 * counts (the log-linear layout of histogram.c with RULES_SUB_BITS, one
 * array per slice and one for the window) added and subtracted alike, so
 * a slide costs O(buckets) and an event O(1), whatever the rate.  The
 * value of an aggregate is that of its window, which ends at the boundary
 * just passed; rules with aggregates are evaluated at those boundaries.
 * An event older than the current slice (another domain read later) goes
 * into its own slice while that is still in the window.
 *
 * Firing.  A rule of aggregates alone (a level) fires when it becomes
 * true at a boundary, not while it stays true.  An instant condition (the
 * simple ones: pause>DUR, event:NAME...) holds at its event only: a rule
 * that has one is evaluated at each such event with that condition true
 * and fires each time it holds, as --when always did.  `C for D` holds at
 * a boundary when C has held at every boundary since one at least D
 * before.
 *
 * The end.  When a process's events end (it exited, its recorded files
 * are read through, the watcher stops), its trace time is moved to the
 * end of the slices then current, so that the events of its last
 * slices are evaluated too; no trace time past that is invented.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "internal.h"

#define MAX_NODES 64
#define MAX_ATOMS 16
/* Percentiles: within 1/2^RULES_SUB_BITS (1.6 %) of the true value. */
#define RULES_SUB_BITS 6

enum src { S_PAUSE, S_PHASE, S_SPAN, S_INT, S_EVENT, S_LOST, S_TIME };
enum fn { F_INSTANT, F_P50, F_P90, F_P99, F_P999, F_MAX, F_MIN, F_AVG,
          F_COUNT, F_RATE, F_GC_SHARE };
enum cmp { C_GT, C_GE, C_LT, C_LE };
enum nkind { N_OR, N_AND, N_NOT, N_FOR, N_ATOM };

static const char *const src_prefix[] = {"pause", "phase:", "span:", "int:",
                                         "event:", "lost", ""};
static const char *const src_reason[] = {"pause", "phase", "span", "int",
                                         "event", "lost", "gc_share"};
static const struct {
  const char *name;
  enum fn fn;
  double pct;
} fns[] = {{"p50", F_P50, 50},   {"p90", F_P90, 90},     {"p99", F_P99, 99},
           {"p999", F_P999, 99.9}, {"max", F_MAX, 0},    {"min", F_MIN, 0},
           {"avg", F_AVG, 0},    {"count", F_COUNT, 0}, {"rate", F_RATE, 0},
           {"gc_share", F_GC_SHARE, 0}};
#define N_FNS (sizeof fns / sizeof fns[0])

struct atom {
  enum src src;
  enum fn fn;
  enum cmp cmp;
  char name[EVENTRING_MAX_NAME + 1];
  uint64_t ns;     /* instant: the duration to exceed */
  int64_t value;   /* instant int: the value to exceed */
  uint64_t window; /* aggregate */
  double limit;    /* aggregate: in ns, units, per second or a fraction */
  int from, to;    /* its text in the rule: [from, to) */
  int call_to;     /* aggregate: the end of FN(...) */
  int seen;        /* its source appeared in some process */
};

struct node {
  enum nkind kind;
  int a, b;    /* operands (nodes) */
  uint64_t ns; /* for */
  int atom;    /* atom */
};

struct rule {
  char *text;
  struct node node[MAX_NODES];
  int nnodes, root;
  struct atom atom[MAX_ATOMS];
  int natoms;
  int instants, aggregates;
};

struct rules {
  struct rule **v;
  int n;
  int users, phases; /* conditions on user events, on runtime phases */
};

/* ------------------------------------------------------------------ */
/* Parsing.                                                             */

enum tok { T_END, T_WORD, T_LPAREN, T_RPAREN, T_COMMA, T_CMP };

struct parser {
  const char *s;
  size_t pos;         /* after the current token */
  enum tok tok;
  size_t start, len;  /* the current token */
  enum cmp cmp;
  struct rule *r;
  char *err;
  size_t errsize;
  int failed;
};

static int word_char(char c) {
  return c && !strchr(" \t(),<>=", c);
}

static void next(struct parser *p) {
  const char *s = p->s;
  size_t i = p->pos;
  while (s[i] == ' ' || s[i] == '\t') i++;
  p->start = i;
  char c = s[i];
  if (!c) {
    p->tok = T_END;
  } else if (c == '(' || c == ')' || c == ',') {
    p->tok = c == '(' ? T_LPAREN : c == ')' ? T_RPAREN : T_COMMA;
    i++;
  } else if (c == '<' || c == '>' || c == '=') {
    p->tok = T_CMP;
    int eq = s[i + 1] == '=';
    p->cmp = c == '>' ? (eq ? C_GE : C_GT) : c == '<' ? (eq ? C_LE : C_LT)
                                                      : C_GE;
    /* '=' alone is no comparison: reported where one is expected. */
    if (c == '=' && !eq) p->tok = T_WORD;
    i += eq ? 2 : 1;
  } else {
    p->tok = T_WORD;
    while (word_char(s[i])) i++;
  }
  p->len = i - p->start;
  p->pos = i;
}

/* Records the first error, at column `at` (an offset): what was wrong
 * or expected, then ", at column N". */
static void fail(struct parser *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(struct parser *p, size_t at, const char *fmt, ...) {
  if (p->failed) return;
  p->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(p->err, p->errsize, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < p->errsize)
    snprintf(p->err + n, p->errsize - (size_t)n, ", at column %zu", at + 1);
}

static int is_word(const struct parser *p, const char *w) {
  return p->tok == T_WORD && p->len == strlen(w) &&
         !strncmp(p->s + p->start, w, p->len);
}

/* The current token, as text, into buf. */
static const char *tok_text(const struct parser *p, char *buf, size_t size) {
  if (p->tok == T_END) return "the end of the rule";
  snprintf(buf, size, "'%.*s'", (int)(p->len > 40 ? 40 : p->len),
           p->s + p->start);
  return buf;
}

static int new_node(struct parser *p, enum nkind k, int a, int b) {
  if (p->r->nnodes == MAX_NODES) {
    fail(p, p->start, "rule too long (at most %d conditions and operators)",
         MAX_NODES);
    return -1;
  }
  struct node *n = &p->r->node[p->r->nnodes];
  memset(n, 0, sizeof *n);
  n->kind = k;
  n->a = a;
  n->b = b;
  return p->r->nnodes++;
}

/* A duration token; its text is what tool_parse_duration() sees. */
static int duration(struct parser *p, uint64_t *ns, const char *what) {
  char buf[64], why[256];
  if (p->tok != T_WORD) {
    fail(p, p->start, "expected %s (a duration, e.g. 10ms), not %s", what,
         tok_text(p, buf, sizeof buf));
    return -1;
  }
  char text[64];
  snprintf(text, sizeof text, "%.*s", (int)(p->len > 60 ? 60 : p->len),
           p->s + p->start);
  if (tool_parse_duration(text, ns, why, sizeof why)) {
    fail(p, p->start, "%s", why);
    return -1;
  }
  next(p);
  return 0;
}

/* A number token: a plain number, with a trailing '%' when `percent`
 * (then a fraction), or '/s' allowed when `rate`. */
static int number(struct parser *p, double *x, int percent, int rate) {
  char buf[64], text[64];
  const char *want = percent ? "a percentage (e.g. 30%)"
                             : "a number (e.g. 100)";
  if (p->tok != T_WORD) {
    fail(p, p->start, "expected %s, not %s", want,
         tok_text(p, buf, sizeof buf));
    return -1;
  }
  snprintf(text, sizeof text, "%.*s", (int)(p->len > 60 ? 60 : p->len),
           p->s + p->start);
  char *end;
  double v = strtod(text, &end);
  int ok = end != text && (text[0] >= '0' && text[0] <= '9');
  if (ok && percent) ok = !strcmp(end, "%");
  else if (ok && rate) ok = !*end || !strcmp(end, "/s");
  else if (ok) ok = !*end;
  if (!ok || !(v < 1e300)) {
    fail(p, p->start, "expected %s, not %s", want,
         tok_text(p, buf, sizeof buf));
    return -1;
  }
  *x = percent ? v / 100 : v;
  next(p);
  return 0;
}

/* Whether `name` is a runtime phase in either numbering (eventring's
 * table, OCaml 5.3+'s up to the latest release known, or 5.0-5.2's). */
static int known_phase(const char *name) {
  for (unsigned i = 0; i < eventring__n_phases_53; i++)
    if (eventring__phase_names_53[i] &&
        !strcmp(eventring__phase_names_53[i], name))
      return 1;
  for (unsigned i = 0; i < eventring__n_ocaml_phases; i++)
    if (!strcmp(eventring__ocaml_phase_names[i], name)) return 1;
  for (unsigned i = 0; i < eventring__n_phases_50; i++)
    if (eventring__phase_names_50[i] &&
        !strcmp(eventring__phase_names_50[i], name))
      return 1;
  return 0;
}

/* A source at the current word: pause, phase:NAME, span:NAME, int:NAME,
 * event:NAME or lost.  Returns the source, or -1 (not one: nothing is
 * reported, the caller says what it expected; a bad name: reported). */
static int source(struct parser *p, struct atom *a) {
  if (p->tok != T_WORD) return -1;
  const char *w = p->s + p->start;
  for (int k = S_PAUSE; k <= S_LOST; k++) {
    size_t n = strlen(src_prefix[k]);
    int named = src_prefix[k][n - 1] == ':';
    if (named ? p->len < n || strncmp(w, src_prefix[k], n)
              : !is_word(p, src_prefix[k]))
      continue;
    a->src = (enum src)k;
    if (named) {
      size_t len = p->len - n;
      if (!len) {
        fail(p, p->start + n, k == S_EVENT ? "no event name"
                                           : "no name after '%s'",
             src_prefix[k]);
        return -2;
      }
      if (len > EVENTRING_MAX_NAME) {
        fail(p, p->start + n, "name too long");
        return -2;
      }
      snprintf(a->name, sizeof a->name, "%.*s", (int)len, w + n);
      if (k == S_PHASE && !known_phase(a->name)) {
        fail(p, p->start + n, "unknown runtime phase '%s' (e.g. minor, "
             "major_slice, stw_leader; eventring(1) lists them)", a->name);
        return -2;
      }
    }
    next(p);
    return k;
  }
  return -1;
}

#define CONDITIONS                                                      \
  "pause>DUR, phase:NAME>DUR, span:NAME>DUR, int:NAME>VALUE, "          \
  "event:NAME, lost, an aggregate such as p99(pause, 10s) > 5ms, 'not' " \
  "or '('"

/* FUNC(SOURCE, DUR) CMP LIMIT, or gc_share(DUR) CMP PERCENT, the function
 * name being the current word, '(' next. */
static int aggregate(struct parser *p, struct atom *a, size_t f) {
  char buf[64];
  a->fn = fns[f].fn;
  next(p); /* the name */
  next(p); /* '(' */
  if (a->fn == F_GC_SHARE) {
    a->src = S_TIME;
  } else {
    size_t at = p->start;
    int k = source(p, a);
    if (k == -2) return -1;
    if (k < 0) {
      fail(p, at, "expected what %s() is over (pause, phase:NAME, "
           "span:NAME, int:NAME, event:NAME or lost), not %s", fns[f].name,
           tok_text(p, buf, sizeof buf));
      return -1;
    }
    int values = k == S_PAUSE || k == S_PHASE || k == S_SPAN || k == S_INT;
    if (!values && a->fn != F_COUNT && a->fn != F_RATE) {
      fail(p, at, "%s() needs durations or values (pause, phase:NAME, "
           "span:NAME or int:NAME); %s has only count() and rate()",
           fns[f].name, src_reason[k]);
      return -1;
    }
    if (p->tok != T_COMMA) {
      fail(p, p->start, "expected ',' and the window (e.g. %s(%s, 10s)), "
           "not %s", fns[f].name, src_reason[k], tok_text(p, buf, sizeof buf));
      return -1;
    }
    next(p);
  }
  size_t wat = p->start;
  if (duration(p, &a->window, "the window") < 0) return -1;
  if (a->window < RULES_SLICES) {
    fail(p, wat, "window too short (at least %d ns)", RULES_SLICES);
    return -1;
  }
  if (p->tok != T_RPAREN) {
    fail(p, p->start, "expected ')', not %s", tok_text(p, buf, sizeof buf));
    return -1;
  }
  a->call_to = (int)p->pos;
  next(p);
  if (p->tok != T_CMP) {
    fail(p, p->start, "expected a comparison (>, >=, < or <=) after %s(...), "
         "not %s", fns[f].name, tok_text(p, buf, sizeof buf));
    return -1;
  }
  a->cmp = p->cmp;
  next(p);
  if (a->fn == F_GC_SHARE) return number(p, &a->limit, 1, 0);
  if (a->fn == F_COUNT) return number(p, &a->limit, 0, 0);
  if (a->fn == F_RATE) return number(p, &a->limit, 0, 1);
  if (a->src == S_INT) {
    /* An int's limit may be negative. */
    char text[64], *end;
    snprintf(text, sizeof text, "%.*s", (int)(p->len > 60 ? 60 : p->len),
             p->s + p->start);
    double v = p->tok == T_WORD ? strtod(text, &end) : 0;
    if (p->tok != T_WORD || end == text || *end || !(v < 1e300 && v > -1e300)) {
      fail(p, p->start, "expected a number (the int's value), not %s",
           tok_text(p, buf, sizeof buf));
      return -1;
    }
    a->limit = v;
    next(p);
    return 0;
  }
  uint64_t ns;
  if (duration(p, &ns, "the limit") < 0) return -1;
  a->limit = (double)ns;
  return 0;
}

/* The simple conditions: pause>DUR, phase:NAME>DUR, span:NAME>DUR,
 * int:NAME>VALUE, event:NAME, lost. */
static int simple(struct parser *p, struct atom *a) {
  char buf[64];
  size_t at = p->start;
  int k = source(p, a);
  if (k == -2) return -1;
  if (k < 0) {
    fail(p, at, "unknown condition %s (expected " CONDITIONS ")",
         tok_text(p, buf, sizeof buf));
    return -1;
  }
  a->fn = F_INSTANT;
  if (k == S_EVENT || k == S_LOST) return 0;
  if (p->tok != T_CMP || p->cmp != C_GT) {
    fail(p, p->start, "expected %s%s, not %s", src_prefix[k],
         k == S_PAUSE  ? ">DURATION"
         : k == S_INT ? "NAME>VALUE"
                      : "NAME>DURATION",
         tok_text(p, buf, sizeof buf));
    return -1;
  }
  next(p);
  if (k == S_INT) {
    char text[64], *end;
    snprintf(text, sizeof text, "%.*s", (int)(p->len > 60 ? 60 : p->len),
             p->s + p->start);
    errno = 0;
    long long v = p->tok == T_WORD ? strtoll(text, &end, 10) : 0;
    if (p->tok != T_WORD || end == text || *end || errno) {
      fail(p, p->start, "%s is not an integer", tok_text(p, buf, sizeof buf));
      return -1;
    }
    a->value = v;
    next(p);
    return 0;
  }
  return duration(p, &a->ns, "the limit");
}

static int expr(struct parser *p);

static int primary(struct parser *p) {
  char buf[64];
  if (p->tok == T_LPAREN) {
    next(p);
    int n = expr(p);
    if (n < 0) return -1;
    if (p->tok != T_RPAREN) {
      fail(p, p->start, "expected ')', 'and' or 'or', not %s",
           tok_text(p, buf, sizeof buf));
      return -1;
    }
    next(p);
    return n;
  }
  if (p->tok != T_WORD) {
    fail(p, p->start, "expected a condition (" CONDITIONS "), not %s",
         tok_text(p, buf, sizeof buf));
    return -1;
  }
  if (is_word(p, "and") || is_word(p, "or") || is_word(p, "for")) {
    fail(p, p->start, "expected a condition (" CONDITIONS "), not %s",
         tok_text(p, buf, sizeof buf));
    return -1;
  }
  struct rule *r = p->r;
  if (r->natoms == MAX_ATOMS) {
    fail(p, p->start, "too many conditions in one rule (at most %d)",
         MAX_ATOMS);
    return -1;
  }
  struct atom *a = &r->atom[r->natoms];
  memset(a, 0, sizeof *a);
  a->from = (int)p->start;
  /* A function is a known name followed by '('. */
  size_t f = N_FNS;
  if (p->s[p->pos] == '(')
    for (f = 0; f < N_FNS && !is_word(p, fns[f].name); f++) {
    }
  if (p->s[p->pos] == '(' && f == N_FNS) {
    fail(p, p->start, "unknown function %s (p50, p90, p99, p999, max, min, "
         "avg, count, rate or gc_share)", tok_text(p, buf, sizeof buf));
    return -1;
  }
  if ((f < N_FNS ? aggregate(p, a, f) : simple(p, a)) < 0) return -1;
  /* The text ends at the last token's end, spaces excluded. */
  size_t to = p->start;
  while (to > (size_t)a->from && (p->s[to - 1] == ' ' || p->s[to - 1] == '\t'))
    to--;
  a->to = (int)to;
  if (a->fn == F_INSTANT) r->instants++;
  else r->aggregates++;
  int n = new_node(p, N_ATOM, -1, -1);
  if (n >= 0) r->node[n].atom = r->natoms++;
  return n;
}

/* Whether node `n` has an instant condition below it. */
static int has_instant(const struct rule *r, int n) {
  const struct node *x = &r->node[n];
  if (x->kind == N_ATOM) return r->atom[x->atom].fn == F_INSTANT;
  return has_instant(r, x->a) || (x->b >= 0 && has_instant(r, x->b));
}

static int postfix(struct parser *p) {
  size_t at = p->start;
  int n = primary(p);
  if (n < 0 || !is_word(p, "for")) return n;
  size_t fat = p->start;
  next(p);
  uint64_t ns;
  if (duration(p, &ns, "how long it must hold") < 0) return -1;
  if (has_instant(p->r, n)) {
    fail(p, fat, "'for' needs a condition that lasts (aggregates such as "
         "p99(pause, 10s) > 5ms), not an event's (the condition at column "
         "%zu holds at an instant)", at + 1);
    return -1;
  }
  int f = new_node(p, N_FOR, n, -1);
  if (f >= 0) p->r->node[f].ns = ns;
  return f;
}

static int unary(struct parser *p) {
  if (!is_word(p, "not")) return postfix(p);
  next(p);
  int n = unary(p);
  return n < 0 ? -1 : new_node(p, N_NOT, n, -1);
}

static int conjunction(struct parser *p) {
  int n = unary(p);
  while (n >= 0 && is_word(p, "and")) {
    next(p);
    int m = unary(p);
    n = m < 0 ? -1 : new_node(p, N_AND, n, m);
  }
  return n;
}

static int expr(struct parser *p) {
  int n = conjunction(p);
  while (n >= 0 && is_word(p, "or")) {
    next(p);
    int m = conjunction(p);
    n = m < 0 ? -1 : new_node(p, N_OR, n, m);
  }
  return n;
}

struct rules *rules_new(void) { return calloc(1, sizeof(struct rules)); }

void rules_free(struct rules *rs) {
  if (!rs) return;
  for (int i = 0; i < rs->n; i++) {
    free(rs->v[i]->text);
    free(rs->v[i]);
  }
  free(rs->v);
  free(rs);
}

int rules_add(struct rules *rs, const char *text, char *err, size_t size) {
  struct rule *r = calloc(1, sizeof *r);
  struct rule **v = realloc(rs->v, (size_t)(rs->n + 1) * sizeof *v);
  if (v) rs->v = v;
  if (!r || !v || !(r->text = strdup(text))) {
    free(r);
    snprintf(err, size, "out of memory");
    return -1;
  }
  struct parser p = {0};
  p.s = r->text;
  p.r = r;
  p.err = err;
  p.errsize = size;
  next(&p);
  int root = expr(&p);
  if (root >= 0 && p.tok != T_END) {
    char buf[64];
    fail(&p, p.start, "expected 'and', 'or' or the end of the rule, not %s",
         tok_text(&p, buf, sizeof buf));
  }
  if (p.failed) {
    free(r->text);
    free(r);
    return -1;
  }
  r->root = root;
  for (int k = 0; k < r->natoms; k++) {
    enum src s = r->atom[k].src;
    rs->users |= s == S_SPAN || s == S_INT || s == S_EVENT;
    rs->phases |= s == S_PHASE;
  }
  rs->v[rs->n++] = r;
  return 0;
}

int rules_count(const struct rules *rs) { return rs->n; }

int rules_on_phases(const struct rules *rs) { return rs->phases; }

const char *rules_text(const struct rules *rs, int i) {
  return rs->v[i]->text;
}

const char *rules_reason(const struct rules *rs, int i) {
  const struct rule *r = rs->v[i];
  const struct node *n = &r->node[r->root];
  if (n->kind == N_FOR) n = &r->node[n->a];
  if (n->kind != N_ATOM) return "rule";
  const struct atom *a = &r->atom[n->atom];
  if (a->fn == F_INSTANT) return src_reason[a->src];
  for (size_t f = 0; f < N_FNS; f++)
    if (fns[f].fn == a->fn) return fns[f].name;
  return "rule";
}

int rules_unseen(const struct rules *rs, int i, char *buf, size_t size) {
  const struct rule *r = rs->v[i];
  size_t len = 0;
  int n = 0;
  buf[0] = 0;
  for (int k = 0; k < r->natoms; k++) {
    const struct atom *a = &r->atom[k];
    if (a->seen || a->src == S_LOST || a->src == S_TIME) continue;
    /* Once per source. */
    int dup = 0;
    for (int j = 0; j < k && !dup; j++)
      dup = !r->atom[j].seen && r->atom[j].src == a->src &&
            !strcmp(r->atom[j].name, a->name);
    if (dup) continue;
    int w = snprintf(buf + len, size - len, "%s%s%s", n ? ", " : "",
                     a->src == S_PAUSE ? "GC pause" : src_prefix[a->src],
                     a->name);
    if (w > 0 && (size_t)w < size - len) len += (size_t)w;
    n++;
  }
  return n;
}

/* ------------------------------------------------------------------ */
/* Windows.                                                             */

struct slot {
  uint64_t count;
  int64_t min, max; /* valid when count */
  __int128 sum;
};

/* One aggregate condition's window in one process. */
struct agg {
  const struct atom *atom;
  uint64_t slice;   /* width */
  uint64_t cur;     /* start of the current slice */
  int head;         /* the current slice's index in `slot` */
  struct slot slot[RULES_SLICES + 1];
  struct slot win;  /* the complete slices together (min, max: unused) */
  int64_t wmin, wmax; /* recomputed at each slide */
  uint32_t *bucket;   /* percentiles: (RULES_SLICES + 1) * nb counters */
  uint32_t *wbucket;  /* and the window's */
  size_t nb;
  uint64_t *gc;       /* gc_share: per domain, RULES_SLICES + 1 slices */
  uint64_t *gcwin;    /* per domain, the window's */
  int ndomains;
};

struct rstate {
  struct agg *agg[MAX_ATOMS];  /* per atom; NULL for instants */
  uint64_t *span_open[MAX_ATOMS]; /* span atoms: per domain, begin + 1 */
  uint64_t since[MAX_NODES];   /* for: held since this boundary + 1 */
  int level;                   /* the level at the last boundary */
};

struct rules_eval {
  struct rules *rs;
  int ndomains;
  rules_fire_fn fire;
  void *arg;
  const char *lost_unit;
  struct rstate *st;
  uint64_t now;   /* trace time: the newest timestamp fed */
  uint64_t next;  /* the next boundary of any aggregate; 0 none */
  int started;
  int domain;     /* of the newest event, for the level's marks */
  int oom;
};

static struct slot *slot_at(struct agg *g, int k) { return &g->slot[k]; }

static void slot_clear(struct slot *s) { memset(s, 0, sizeof *s); }

static void slot_add(struct slot *s, int64_t v, uint64_t n) {
  if (!s->count || v < s->min) s->min = v;
  if (!s->count || v > s->max) s->max = v;
  s->count += n;
  s->sum += (__int128)v * (__int128)n;
}

static struct agg *agg_new(const struct atom *a, int ndomains) {
  struct agg *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->atom = a;
  g->slice = a->window / RULES_SLICES;
  int pct = a->fn == F_P50 || a->fn == F_P90 || a->fn == F_P99 ||
            a->fn == F_P999;
  if (pct) {
    g->nb = hist_layout_buckets(RULES_SUB_BITS);
    g->bucket = calloc((RULES_SLICES + 2) * g->nb, sizeof *g->bucket);
    if (!g->bucket) {
      free(g);
      return NULL;
    }
    g->wbucket = g->bucket + (RULES_SLICES + 1) * g->nb;
  }
  if (a->fn == F_GC_SHARE) {
    g->ndomains = ndomains;
    g->gc = calloc((size_t)ndomains * (RULES_SLICES + 2), sizeof *g->gc);
    if (!g->gc) {
      free(g);
      return NULL;
    }
    g->gcwin = g->gc + (size_t)ndomains * (RULES_SLICES + 1);
  }
  return g;
}

static void agg_free(struct agg *g) {
  if (!g) return;
  free(g->bucket);
  free(g->gc);
  free(g);
}

/* Whether the window and the current slice hold nothing. */
static int agg_empty(const struct agg *g) {
  if (g->win.count || g->slot[g->head].count) return 0;
  if (g->gc)
    for (int d = 0; d < g->ndomains; d++)
      if (g->gcwin[d] || g->gc[(size_t)d * (RULES_SLICES + 1) + g->head])
        return 0;
  return 1;
}

/* The current slice joins the window, the oldest leaves it. */
static void agg_slide(struct agg *g) {
  int old = (g->head + 1) % (RULES_SLICES + 1);
  struct slot *h = slot_at(g, g->head), *o = slot_at(g, old);
  g->win.count += h->count - o->count;
  g->win.sum += h->sum - o->sum;
  if (g->bucket) {
    uint32_t *hb = g->bucket + (size_t)g->head * g->nb;
    uint32_t *ob = g->bucket + (size_t)old * g->nb;
    if (h->count || o->count)
      for (size_t i = 0; i < g->nb; i++) g->wbucket[i] += hb[i] - ob[i];
    if (o->count) memset(ob, 0, g->nb * sizeof *ob);
  }
  if (g->gc)
    for (int d = 0; d < g->ndomains; d++) {
      uint64_t *s = g->gc + (size_t)d * (RULES_SLICES + 1);
      g->gcwin[d] += s[g->head] - s[old];
      s[old] = 0;
    }
  slot_clear(o);
  g->head = old;
  g->cur += g->slice;
  /* The extremes of the complete slices. */
  int any = 0;
  for (int k = 0; k <= RULES_SLICES; k++) {
    const struct slot *s = &g->slot[k];
    if (k == g->head || !s->count) continue;
    if (!any || s->min < g->wmin) g->wmin = s->min;
    if (!any || s->max > g->wmax) g->wmax = s->max;
    any = 1;
  }
}

/* The slice that holds `ts`: the current one, a complete one (*in_window
 * set), or -1 when it is older than the window. */
static int agg_slot_of(const struct agg *g, uint64_t ts, int *in_window) {
  *in_window = 0;
  if (ts >= g->cur) return g->head;
  uint64_t back = (g->cur - ts + g->slice - 1) / g->slice;
  if (back > RULES_SLICES) return -1;
  *in_window = 1;
  return (int)((g->head + RULES_SLICES + 1 - back) % (RULES_SLICES + 1));
}

static void agg_record(struct agg *g, uint64_t ts, int64_t v, uint64_t n) {
  int in_window, k = agg_slot_of(g, ts, &in_window);
  if (k < 0) return;
  slot_add(slot_at(g, k), v, n);
  if (in_window) {
    g->win.count += n;
    g->win.sum += (__int128)v * (__int128)n;
    if (g->win.count == n || v < g->wmin) g->wmin = v;
    if (g->win.count == n || v > g->wmax) g->wmax = v;
  }
  if (g->bucket) {
    size_t i = hist_layout_index(v > 0 ? (uint64_t)v : 0, RULES_SUB_BITS);
    g->bucket[(size_t)k * g->nb + i] += (uint32_t)n;
    if (in_window) g->wbucket[i] += (uint32_t)n;
  }
}

/* Time in GC from `start` to `end` in `domain`, spread over the slices
 * it covers. */
static void agg_gc(struct agg *g, int domain, uint64_t start, uint64_t end) {
  if (domain < 0 || domain >= g->ndomains || end <= start) return;
  uint64_t *s = g->gc + (size_t)domain * (RULES_SLICES + 1);
  uint64_t lo = g->cur > g->slice * RULES_SLICES
                    ? g->cur - g->slice * RULES_SLICES
                    : 0;
  if (start < lo) start = lo;
  while (start < end) {
    int in_window, k = agg_slot_of(g, start, &in_window);
    uint64_t slice_end = k == g->head ? UINT64_MAX
                                      : start - (start - lo) % g->slice +
                                            g->slice;
    uint64_t stop = end < slice_end ? end : slice_end;
    if (k >= 0) {
      s[k] += stop - start;
      if (in_window) g->gcwin[domain] += stop - start;
    }
    start = stop;
  }
}

/* The window's percentile p, clamped to its extremes. */
static double agg_percentile(const struct agg *g, double p) {
  uint64_t n = g->win.count;
  if (!n) return 0;
  double x = p / 100.0 * (double)n;
  uint64_t k = 1;
  if (x > 1) {
    x -= 1e-9;
    k = (uint64_t)x;
    if ((double)k < x) k++;
  }
  if (k > n) k = n;
  uint64_t seen = 0;
  for (size_t i = 0; i < g->nb; i++) {
    seen += g->wbucket[i];
    if (seen >= k) {
      int64_t v = (int64_t)hist_layout_mid(i, RULES_SUB_BITS);
      if (v < g->wmin) v = g->wmin;
      if (v > g->wmax) v = g->wmax;
      return (double)v;
    }
  }
  return (double)g->wmax;
}

/* The aggregate's value over its window; *empty when it has none (a
 * percentile, extreme or mean of no value). */
static double agg_value(const struct agg *g, int *empty) {
  const struct atom *a = g->atom;
  double w = (double)(g->slice * RULES_SLICES);
  *empty = 0;
  switch (a->fn) {
  case F_COUNT: return (double)g->win.count;
  case F_RATE: return (double)g->win.count / (w / 1e9);
  case F_GC_SHARE: {
    uint64_t most = 0;
    for (int d = 0; d < g->ndomains; d++)
      if (g->gcwin[d] > most) most = g->gcwin[d];
    return (double)most / w;
  }
  default: break;
  }
  if (!g->win.count) {
    *empty = 1;
    return 0;
  }
  for (size_t f = 0; f < N_FNS; f++)
    if (fns[f].fn == a->fn && fns[f].pct > 0)
      return agg_percentile(g, fns[f].pct);
  if (a->fn == F_MAX) return (double)g->wmax;
  if (a->fn == F_MIN) return (double)g->wmin;
  return (double)g->win.sum / (double)g->win.count;
}

/* ------------------------------------------------------------------ */
/* Evaluation.                                                          */

static int compare(double v, enum cmp c, double limit) {
  switch (c) {
  case C_GT: return v > limit;
  case C_GE: return v >= limit;
  case C_LT: return v < limit;
  default: return v <= limit;
  }
}

/* Node `n` of rule `r` at time `at`: at a boundary (`instant` -1), where
 * `for` takes note, or at the event of instant condition `instant`. */
static int eval(struct rules_eval *e, int ri, int n, uint64_t at,
                int instant) {
  const struct rule *r = e->rs->v[ri];
  struct rstate *st = &e->st[ri];
  const struct node *x = &r->node[n];
  switch (x->kind) {
  case N_OR:
    return eval(e, ri, x->a, at, instant) | eval(e, ri, x->b, at, instant);
  case N_AND:
    return eval(e, ri, x->a, at, instant) & eval(e, ri, x->b, at, instant);
  case N_NOT: return !eval(e, ri, x->a, at, instant);
  case N_FOR: {
    int v = eval(e, ri, x->a, at, instant);
    if (instant < 0) {
      if (!v) st->since[n] = 0;
      else if (!st->since[n]) st->since[n] = at + 1;
    }
    return v && st->since[n] && at - (st->since[n] - 1) >= x->ns;
  }
  default: break;
  }
  const struct atom *a = &r->atom[x->atom];
  if (a->fn == F_INSTANT) return x->atom == instant;
  const struct agg *g = st->agg[x->atom];
  int empty;
  double v = agg_value(g, &empty);
  return !empty && compare(v, a->cmp, a->limit);
}

/* What the aggregates of rule `ri` measure, after `prefix`, into buf. */
static void measured(struct rules_eval *e, int ri, const char *prefix,
                     char *buf, size_t size) {
  const struct rule *r = e->rs->v[ri];
  size_t len = (size_t)snprintf(buf, size, "%s", prefix);
  int alone = r->natoms == 1;
  for (int k = 0; k < r->natoms && len < size; k++) {
    const struct atom *a = &r->atom[k];
    if (a->fn == F_INSTANT) continue;
    int empty;
    double v = agg_value(e->st[ri].agg[k], &empty);
    char val[48];
    if (empty) snprintf(val, sizeof val, "none");
    else if (a->fn == F_GC_SHARE) snprintf(val, sizeof val, "%.1f%%", v * 100);
    else if (a->fn == F_COUNT) snprintf(val, sizeof val, "%.0f", v);
    else if (a->fn == F_RATE) snprintf(val, sizeof val, "%.1f/s", v);
    else if (a->src == S_INT && a->fn == F_AVG)
      snprintf(val, sizeof val, "%.1f", v);
    else if (a->src == S_INT) snprintf(val, sizeof val, "%.0f", v);
    else analysis_duration(val, (uint64_t)v);
    int w = alone ? snprintf(buf + len, size - len, "%s", val)
                  : snprintf(buf + len, size - len, "%s%.*s = %s",
                             len ? ", " : "", a->call_to - a->from,
                             r->text + a->from, val);
    if (w > 0) len += (size_t)w;
  }
}

/* Evaluates every rule with aggregates at boundary `at`. */
static void boundary(struct rules_eval *e, uint64_t at) {
  for (int i = 0; i < e->rs->n; i++) {
    const struct rule *r = e->rs->v[i];
    if (!r->aggregates) continue;
    int v = eval(e, i, r->root, at, -1);
    if (v && !e->st[i].level) {
      char m[256];
      measured(e, i, "", m, sizeof m);
      e->fire(e->arg, i, e->domain, at, at, m);
    }
    e->st[i].level = v;
  }
}

/* Trace time moves to `ts`: the aggregates slide past every boundary up
 * to it, and the rules are evaluated at each.  An aggregate with nothing
 * in its window skips ahead, so that a long gap costs O(slices). */
static void advance(struct rules_eval *e, uint64_t ts) {
  if (!e->started) {
    e->started = 1;
    e->now = ts;
    for (int i = 0; i < e->rs->n; i++)
      for (int k = 0; k < e->rs->v[i]->natoms; k++) {
        struct agg *g = e->st[i].agg[k];
        if (!g) continue;
        g->cur = ts - ts % g->slice;
        if (!e->next || g->cur + g->slice < e->next)
          e->next = g->cur + g->slice;
      }
    return;
  }
  if (ts <= e->now) return;
  e->now = ts;
  while (e->next && e->next <= ts) {
    uint64_t at = e->next, soonest = 0;
    for (int i = 0; i < e->rs->n; i++)
      for (int k = 0; k < e->rs->v[i]->natoms; k++) {
        struct agg *g = e->st[i].agg[k];
        if (!g) continue;
        if (g->cur + g->slice == at) {
          if (agg_empty(g)) {
            uint64_t to = ts - ts % g->slice;
            g->cur = to > g->cur ? to - g->slice : g->cur;
          }
          agg_slide(g);
        }
        if (!soonest || g->cur + g->slice < soonest)
          soonest = g->cur + g->slice;
      }
    boundary(e, at);
    e->next = soonest;
  }
}

struct rules_eval *rules_eval_new(struct rules *rs, int ndomains,
                                  const char *lost_unit, rules_fire_fn fire,
                                  void *arg) {
  struct rules_eval *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->rs = rs;
  e->ndomains = ndomains > 0 ? ndomains : 1;
  e->fire = fire;
  e->arg = arg;
  e->lost_unit = lost_unit;
  e->st = calloc((size_t)(rs->n ? rs->n : 1), sizeof *e->st);
  if (!e->st) {
    free(e);
    return NULL;
  }
  for (int i = 0; i < rs->n; i++)
    for (int k = 0; k < rs->v[i]->natoms; k++) {
      const struct atom *a = &rs->v[i]->atom[k];
      if (a->fn != F_INSTANT &&
          !(e->st[i].agg[k] = agg_new(a, e->ndomains))) {
        rules_eval_free(e);
        return NULL;
      }
      if (a->src == S_SPAN &&
          !(e->st[i].span_open[k] = calloc((size_t)e->ndomains,
                                           sizeof(uint64_t)))) {
        rules_eval_free(e);
        return NULL;
      }
    }
  return e;
}

void rules_eval_free(struct rules_eval *e) {
  if (!e) return;
  for (int i = 0; i < e->rs->n; i++)
    for (int k = 0; k < MAX_ATOMS; k++) {
      agg_free(e->st[i].agg[k]);
      free(e->st[i].span_open[k]);
    }
  free(e->st);
  free(e);
}

void rules_finish(struct rules_eval *e) {
  if (!e->started) return;
  uint64_t end = 0;
  for (int i = 0; i < e->rs->n; i++)
    for (int k = 0; k < e->rs->v[i]->natoms; k++) {
      const struct agg *g = e->st[i].agg[k];
      if (g && g->cur + g->slice > end) end = g->cur + g->slice;
    }
  if (end > e->now) advance(e, end);
}

void rules_time(struct rules_eval *e, int domain, uint64_t ts) {
  e->domain = domain;
  if (ts > e->now || !e->started) advance(e, ts);
}

/* Instant condition `k` of rule `ri` held at `at` in `domain`: fires
 * when the rule holds. */
static void instant(struct rules_eval *e, int ri, int k, int domain,
                    uint64_t at, uint64_t start, const char *m) {
  const struct rule *r = e->rs->v[ri];
  if (!eval(e, ri, r->root, at, k)) return;
  if (r->aggregates) {
    char buf[256];
    measured(e, ri, m, buf, sizeof buf);
    e->fire(e->arg, ri, domain, at, start, buf);
  } else {
    e->fire(e->arg, ri, domain, at, start, m);
  }
}

/* Calls `each` for every condition of source `src` named `name` ("" for
 * pause and lost), marking it seen. */
#define FOR_SOURCE(e, src_, name_, i, k, a)                                \
  for (int i = 0; i < (e)->rs->n; i++)                                     \
    for (int k = 0; k < (e)->rs->v[i]->natoms; k++)                        \
      for (struct atom *a = &(e)->rs->v[i]->atom[k]; a;                    \
           a = NULL)                                                        \
        if (a->src == (src_) && !strcmp(a->name, (name_)) &&               \
            (a->seen = 1))

static void durations(struct rules_eval *e, enum src src, const char *name,
                      int domain, uint64_t ts, uint64_t dur) {
  char m[128], buf[32];
  int have = 0;
  FOR_SOURCE(e, src, name, i, k, a) {
    if (a->fn != F_INSTANT) {
      agg_record(e->st[i].agg[k], ts, (int64_t)(dur > INT64_MAX ? INT64_MAX
                                                                 : dur), 1);
    } else if (dur > a->ns) {
      if (!have)
        snprintf(m, sizeof m, "%s (domain %d)", analysis_duration(buf, dur),
                 domain);
      have = 1;
      instant(e, i, k, domain, ts, ts - dur, m);
    }
  }
}

void rules_pause(struct rules_eval *e, int domain, uint64_t ts,
                 uint64_t duration) {
  rules_time(e, domain, ts);
  uint64_t start = ts >= duration ? ts - duration : 0;
  for (int i = 0; i < e->rs->n; i++)
    for (int k = 0; k < e->rs->v[i]->natoms; k++)
      if (e->rs->v[i]->atom[k].src == S_TIME)
        agg_gc(e->st[i].agg[k], domain, start, ts);
  durations(e, S_PAUSE, "", domain, ts, duration);
}

void rules_phase(struct rules_eval *e, int domain, const char *name,
                 uint64_t ts, uint64_t start) {
  rules_time(e, domain, ts);
  /* The start is passed on for the window: an instant's anomaly began
   * there. */
  uint64_t dur = ts >= start ? ts - start : 0;
  char m[128], buf[32];
  int have = 0;
  FOR_SOURCE(e, S_PHASE, name, i, k, a) {
    if (a->fn != F_INSTANT) {
      agg_record(e->st[i].agg[k], ts, (int64_t)dur, 1);
    } else if (dur > a->ns) {
      if (!have)
        snprintf(m, sizeof m, "%s (domain %d)", analysis_duration(buf, dur),
                 domain);
      have = 1;
      instant(e, i, k, domain, ts, start, m);
    }
  }
}

void rules_user(struct rules_eval *e, int domain, uint64_t ts,
                enum rules_user_kind kind, const char *name, int64_t value) {
  rules_time(e, domain, ts);
  if (!e->rs->users) return;
  /* What an instant measured, written when one holds (not per event). */
  char m[128] = "", buf[32];
#define USER_MEASURED()                                                  \
  (m[0] ? m                                                              \
   : kind == RULES_INT                                                   \
       ? (snprintf(m, sizeof m, "%" PRId64 " (domain %d)", value, domain), \
          m)                                                             \
       : (snprintf(m, sizeof m, "domain %d", domain), m))
  if (kind != RULES_SPAN_END) {
    FOR_SOURCE(e, S_EVENT, name, i, k, a) {
      if (a->fn != F_INSTANT)
        agg_record(e->st[i].agg[k], ts, 0, 1);
      else
        instant(e, i, k, domain, ts, ts, USER_MEASURED());
    }
  }
  if (kind == RULES_INT) {
    FOR_SOURCE(e, S_INT, name, i, k, a) {
      if (a->fn != F_INSTANT)
        agg_record(e->st[i].agg[k], ts, value, 1);
      else if (value > a->value)
        instant(e, i, k, domain, ts, ts, USER_MEASURED());
    }
  }
#undef USER_MEASURED
  if ((kind == RULES_SPAN_BEGIN || kind == RULES_SPAN_END) && domain >= 0 &&
      domain < e->ndomains) {
    FOR_SOURCE(e, S_SPAN, name, i, k, a) {
      uint64_t *open = &e->st[i].span_open[k][domain];
      /* Spans of one name do not nest: a second begin restarts it. */
      if (kind == RULES_SPAN_BEGIN) {
        *open = ts + 1;
        continue;
      }
      if (!*open) continue;
      uint64_t b = *open - 1, dur = ts >= b ? ts - b : 0;
      *open = 0;
      if (a->fn != F_INSTANT) {
        agg_record(e->st[i].agg[k], ts, (int64_t)dur, 1);
      } else if (dur > a->ns) {
        snprintf(m, sizeof m, "%s (domain %d)", analysis_duration(buf, dur),
                 domain);
        instant(e, i, k, domain, ts, b, m);
      }
    }
  }
}

void rules_lost(struct rules_eval *e, int domain, uint64_t ts,
                uint64_t count) {
  rules_time(e, domain, ts);
  char m[128];
  snprintf(m, sizeof m, "%" PRIu64 " %s (domain %d)", count,
           e->lost_unit ? e->lost_unit : "events", domain);
  FOR_SOURCE(e, S_LOST, "", i, k, a) {
    if (a->fn != F_INSTANT)
      agg_record(e->st[i].agg[k], ts, 0, count);
    else
      instant(e, i, k, domain, ts, ts, m);
  }
}

void rules_cut(struct rules_eval *e, int domain) {
  if (domain < 0 || domain >= e->ndomains) return;
  for (int i = 0; i < e->rs->n; i++)
    for (int k = 0; k < e->rs->v[i]->natoms; k++)
      if (e->st[i].span_open[k]) e->st[i].span_open[k][domain] = 0;
}
