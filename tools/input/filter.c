/* filter.c -- choosing which events a subcommand sees: --domain, --event,
 * --kind, --since, --until and --last, applied by the source layer
 * (tool_source_read) before any subcommand's callback, so that every
 * analysis is of the chosen events only (`latency --since 10s --until 20s`
 * is the distribution of the pauses of that interval).
 *
 * `eventring metrics` takes --domain, --event and --kind (for --pid or a
 * command), which choose what it exports.
 *
 * An event is kept when it passes every filter given:
 *   --domain N      its domain is one of those given (repeatable, or a
 *                   comma-separated list): a number, or the name of the
 *                   thread the file records as the slot's holder (a glob;
 *                   every domain whose thread matches, in every process);
 *                   a name that matches no thread of a file is an error
 *                   that lists the names there are (for a live source,
 *                   once reading ends);
 *   --event GLOB    its name (as dump prints it: the phase, counter,
 *                   lifecycle or user event name, alloc_buckets) matches
 *                   one of the globs (fnmatch(3); repeatable);
 *   --kind KIND     its kind is one of those given, with dump's names
 *                   (runtime_begin, runtime_end, runtime_counter, alloc,
 *                   lifecycle, user_unit, user_int, user_span,
 *                   user_custom, thread; repeatable, or comma-separated);
 *   --since T, --until T
 *                   its timestamp is in [T1, T2): a duration (10s,
 *                   500ms) counts from the first event of the source (the
 *                   earliest timestamp over every domain and process), a
 *                   time of day (ISO 8601: 05:50:42.5, or a full
 *                   2026-11-24T05:50:42Z; UTC unless an offset is given)
 *                   is placed with each file's recorded wall clock (a file
 *                   that has none is an error);
 *   --last DUR      its timestamp is within DUR of the last event of the
 *                   source.
 *
 * The first and last events are found before reading by a first pass over
 * each file (its own cursor, timestamps only).  A live source (--follow, a
 * command) has no last event yet: --last is refused there; and its first
 * event is the earliest of that first pass, or, when the file has none
 * yet, the first event read.
 *
 * Two kinds of report are context rather than events, and pass --event,
 * --kind and the times (not --domain): a loss (lost_events), which tells
 * an analysis that the events around it are not whole, and the
 * thread-switch markers of a shared slot, without which an analysis
 * cannot put a thread's events on its track.  A marker is held back until
 * the next kept event of its domain and given just before it (and dropped
 * when a loss comes first, after which the thread is unknown anyway); with
 * --kind thread, markers are events like any other.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "input/input.h"

enum fkind {
  F_BEGIN, F_END, F_COUNTER, F_ALLOC, F_LIFECYCLE, F_USER_INT, F_USER_SPAN,
  F_USER_UNIT, F_USER_CUSTOM, F_THREAD, F_KINDS
};
static const char *const fkind_names[F_KINDS] = {
    "runtime_begin", "runtime_end", "runtime_counter", "alloc",
    "lifecycle",     "user_int",    "user_span",       "user_unit",
    "user_custom",   "thread"};

#define MAX_LIST 64

/* A time bound as given. */
struct tbound {
  int set;
  int wall;      /* a time of day (wall ns in `value`) */
  int tod;       /* a time of day without a date: ns since midnight UTC */
  int64_t value; /* relative ns, or wall ns since the epoch */
};

struct marker {
  int early; /* events before the time window were left out */
  int pending;
  uint64_t ts;
  int64_t thread;
  uint64_t tid;
  size_t len;
  char name[64];
};

struct fproc {
  int ready;
  /* Per domain, whether its holder's name is one of --domain's names:
   * 0 not looked up yet (or a new holder since), 1 yes, 2 no. */
  unsigned char *named;
  int bad; /* no wall clock for a time of day: nothing kept */
  uint64_t lo, hi;
  int ndomains;
  struct marker *markers;
};

/* Room for a thread name given to --domain (the file keeps 23 bytes). */
#define DNAME_BYTES 64

struct tool_filter {
  int domains[MAX_LIST], ndomains;
  char dnames[MAX_LIST][DNAME_BYTES];
  int ndnames;
  unsigned char dname_hit[MAX_LIST]; /* the name matched a domain */
  char *events[MAX_LIST];
  int nevents;
  unsigned kinds; /* bit per enum fkind; 0: every kind */
  struct tbound since, until;
  int has_last;
  uint64_t last;
  /* While reading. */
  int t0_known, tmax_known;
  uint64_t t0, tmax;
  const struct tool_handlers *h;
  void *data;
  struct tool_source *src;
  struct fproc *procs;
  int nprocs;
  int failed;
  /* The events the time bounds were tested on, their first and last
   * timestamps, and how many passed: for the note of bounds outside
   * the trace. */
  uint64_t timed, timed_kept, timed_lo, timed_hi;
};

/* The tool reads one source per run: its filters live here, so that a
 * usage error after a filter option has nothing to free. */
static struct tool_filter the_filter;

static struct tool_filter *get(struct tool_source *src) {
  src->filter = &the_filter;
  return src->filter;
}

/* "HH:MM[:SS[.frac]]", with "YYYY-MM-DDT" before it or not, and "Z" or
 * "+HH:MM"/"-HH:MM" after it or not (UTC). */
static int parse_wall(const char *s, struct tbound *b) {
  int y = 0, mo = 0, d = 0, hh, mm, ss = 0, n = 0;
  int64_t frac = 0;
  const char *p = s;
  int dated = 0;
  if (sscanf(p, "%4d-%2d-%2dT%n", &y, &mo, &d, &n) == 3 && n > 0) {
    dated = 1;
    p += n;
  }
  n = 0;
  if (sscanf(p, "%2d:%2d%n", &hh, &mm, &n) != 2 || n != 5) return -1;
  p += n;
  if (*p == ':') {
    if (!isdigit((unsigned char)p[1]) || !isdigit((unsigned char)p[2]))
      return -1;
    ss = (p[1] - '0') * 10 + (p[2] - '0');
    p += 3;
    if (*p == '.') {
      p++;
      int digits = 0;
      while (isdigit((unsigned char)*p)) {
        if (digits < 9) frac = frac * 10 + (*p - '0'), digits++;
        p++;
      }
      if (!digits) return -1;
      while (digits++ < 9) frac *= 10;
    }
  }
  int64_t off = 0;
  if (*p == 'Z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int oh, om;
    if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5) return -1;
    off = (int64_t)(oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
    p += 6;
  }
  if (*p || hh > 23 || mm > 59 || ss > 60) return -1;
  int64_t day_ns = ((int64_t)hh * 3600 + mm * 60 + ss - off) * 1000000000 + frac;
  b->set = 1;
  b->wall = 1;
  if (dated) {
    struct tm tm = {0};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || mo < 1 || mo > 12 || d < 1 || d > 31) return -1;
    b->value = (int64_t)t * 1000000000 + day_ns;
  } else {
    b->tod = 1;
    b->value = day_ns;
  }
  return 0;
}

static int parse_bound(const char *arg, struct tbound *b, char *why,
                       size_t size) {
  memset(b, 0, sizeof *b);
  if (strchr(arg, ':')) {
    if (parse_wall(arg, b) == 0) return 0;
    snprintf(why, size, "'%s' is not a time of day (ISO 8601: 05:50:42.5, "
             "2026-11-24T05:50:42Z)", arg);
    return -1;
  }
  uint64_t ns;
  if (tool_parse_duration(arg, &ns, why, size) != 0) return -1;
  b->set = 1;
  b->value = (int64_t)ns;
  return 0;
}

int tool_filter_option(struct tool_source *src, int c, const char *arg,
                       char *why, size_t size) {
  if (c < TOOL_OPT_F_DOMAIN || c > TOOL_OPT_F_LAST) return 0;
  struct tool_filter *f = get(src);
  switch (c) {
  case TOOL_OPT_F_DOMAIN:
  case TOOL_OPT_F_KIND: {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", arg);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
      if (c == TOOL_OPT_F_DOMAIN) {
        if (f->ndomains + f->ndnames == MAX_LIST) {
          snprintf(why, size, "--domain: at most %d domains", MAX_LIST);
          return -1;
        }
        /* Digits are a number; anything else is a thread's name. */
        if (strspn(tok, "0123456789") != strlen(tok)) {
          if (strlen(tok) >= DNAME_BYTES) {
            snprintf(why, size, "--domain: thread name '%.20s...' too long "
                     "(at most %d bytes)", tok, DNAME_BYTES - 1);
            return -1;
          }
          snprintf(f->dnames[f->ndnames++], DNAME_BYTES, "%s", tok);
          continue;
        }
        char *end;
        errno = 0;
        long v = strtol(tok, &end, 10);
        if (*end || end == tok || errno || v < 0 || v > 100000) {
          snprintf(why, size, "--domain: '%s' is not a domain number", tok);
          return -1;
        }
        f->domains[f->ndomains++] = (int)v;
      } else {
        int k = 0;
        while (k < F_KINDS && strcmp(tok, fkind_names[k])) k++;
        if (k == F_KINDS) {
          snprintf(why, size, "--kind: unknown kind '%s' (runtime_begin, "
                   "runtime_end, runtime_counter, alloc, lifecycle, "
                   "user_unit, user_int, user_span, user_custom, thread)",
                   tok);
          return -1;
        }
        f->kinds |= 1u << k;
      }
    }
    return 1;
  }
  case TOOL_OPT_F_EVENT:
    if (f->nevents == MAX_LIST) {
      snprintf(why, size, "--event: at most %d names", MAX_LIST);
      return -1;
    }
    f->events[f->nevents++] = (char *)arg;
    return 1;
  case TOOL_OPT_F_SINCE:
  case TOOL_OPT_F_UNTIL: {
    char w[200];
    if (parse_bound(arg, c == TOOL_OPT_F_SINCE ? &f->since : &f->until, w,
                    sizeof w) != 0) {
      snprintf(why, size, "%s: %s",
               c == TOOL_OPT_F_SINCE ? "--since" : "--until", w);
      return -1;
    }
    return 1;
  }
  case TOOL_OPT_F_LAST: {
    char w[200];
    if (tool_parse_duration(arg, &f->last, w, sizeof w) != 0) {
      snprintf(why, size, "--last: %s", w);
      return -1;
    }
    f->has_last = 1;
    return 1;
  }
  }
  return 0;
}

int tool_filter_check(const struct tool_source *src, const char *help) {
  const struct tool_filter *f = src->filter;
  if (!f) return TOOL_EXIT_OK;
  if (f->has_last && (src->follow || src->cmd))
    return tool_usage_error(help, "--last needs the end of the recording: "
                                  "not with --follow or a COMMAND (use "
                                  "--since)");
  if (f->has_last && (f->since.set || f->until.set))
    return tool_usage_error(help, "--last and --since/--until contradict "
                                  "each other (give one)");
  return TOOL_EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* The first pass: the earliest and latest timestamps of a file.        */

struct span_ts {
  int any;
  uint64_t lo, hi;
};

static void note(struct span_ts *s, uint64_t ts) {
  if (!s->any || ts < s->lo) s->lo = ts;
  if (!s->any || ts > s->hi) s->hi = ts;
  s->any = 1;
}
static int pre_phase(void *d, int dom, uint64_t ts, int ph) {
  (void)dom, (void)ph;
  note(d, ts);
  return 1;
}
static int pre_counter(void *d, int dom, uint64_t ts, int id, uint64_t v) {
  (void)dom, (void)id, (void)v;
  note(d, ts);
  return 1;
}
static int pre_alloc(void *d, int dom, uint64_t ts, const uint64_t *b) {
  (void)dom, (void)b;
  note(d, ts);
  return 1;
}
static int pre_life(void *d, int dom, uint64_t ts, int k, int64_t v, int h) {
  (void)dom, (void)k, (void)v, (void)h;
  note(d, ts);
  return 1;
}
static int pre_unit(void *d, int dom, uint64_t ts, int id, const char *n) {
  (void)dom, (void)id, (void)n;
  note(d, ts);
  return 1;
}
static int pre_int(void *d, int dom, uint64_t ts, int id, const char *n,
                   int64_t v) {
  (void)dom, (void)id, (void)n, (void)v;
  note(d, ts);
  return 1;
}
static int pre_span(void *d, int dom, uint64_t ts, int id, const char *n,
                    int e) {
  (void)dom, (void)id, (void)n, (void)e;
  note(d, ts);
  return 1;
}
static int pre_custom(void *d, int dom, uint64_t ts, int id, const char *n,
                      const void *b, size_t l) {
  (void)dom, (void)id, (void)n, (void)b, (void)l;
  note(d, ts);
  return 1;
}

static int pre_thread(void *d, int dom, uint64_t ts, int64_t t, uint64_t tid,
                      const char *n, size_t l) {
  (void)dom, (void)t, (void)tid, (void)n, (void)l;
  note(d, ts);
  return 1;
}

static void prescan(const char *path, struct span_ts *s) {
  eventring_cursor *c;
  if (!path[0] || eventring_cursor_open_file(&c, path) != 0) return;
  static const struct tool_handlers h = {
      pre_phase, pre_phase, pre_counter, pre_alloc, pre_life, pre_unit,
      pre_int,   pre_span,  pre_custom,  NULL,      pre_thread, NULL};
  eventring_callbacks *cb = tool_callbacks_new(&h);
  if (cb) {
    while (eventring_cursor_poll(c, cb, s, 0) > 0) {
    }
    eventring_callbacks_free(cb);
  }
  eventring_cursor_free(c);
}

int tool_source_time_span(const struct tool_source *src, uint64_t *lo,
                          uint64_t *hi) {
  struct span_ts s = {0, 0, 0};
  if (src->multi)
    for (int i = 0; i < src->nprocs; i++) {
      const struct tool_proc *p = src->procs[i];
      if (!p->nsegs) prescan(p->path, &s);
      for (int k = 0; k < p->nsegs; k++)
        if (!p->segs[k].copy) prescan(p->segs[k].path, &s);
    }
  else
    prescan(src->path, &s);
  if (s.any) {
    *lo = s.lo;
    *hi = s.hi;
  }
  return s.any;
}

/* ------------------------------------------------------------------ */
/* Filtering.                                                           */

static struct fproc *proc(struct tool_filter *f) {
  struct tool_source *src = f->src;
  int i = src->multi ? src->proc : 0;
  if (i >= f->nprocs) {
    int n = i + 8;
    struct fproc *v = realloc(f->procs, (size_t)n * sizeof *v);
    if (!v) return NULL;
    memset(v + f->nprocs, 0, (size_t)(n - f->nprocs) * sizeof *v);
    f->procs = v;
    f->nprocs = n;
  }
  struct fproc *p = &f->procs[i];
  if (!p->ready) {
    /* The process's cursor: of joined files, the widest of them. */
    p->ndomains = eventring_cursor_max_domains(
        src->multi && src->proc < src->nprocs ? src->procs[src->proc]->cursor
                                              : src->cursor);
    p->markers = calloc((size_t)p->ndomains + 1, sizeof *p->markers);
    p->named = calloc((size_t)p->ndomains + 1, 1);
    if (!p->markers || !p->named) return NULL;
    p->ready = 1;
    p->lo = 0;
    p->hi = UINT64_MAX;
  }
  return p;
}

/* A bound in this process's timestamps. */
static int bound_ts(struct tool_filter *f, const struct tbound *b,
                    uint64_t *out) {
  int64_t v = b->value;
  if (!b->wall) {
    *out = f->t0 + (uint64_t)v;
    return 0;
  }
  int64_t offset;
  int e = tool_wall_offset(f->src->cursor, &offset);
  if (e) {
    tool_wall_unknown(f->src->path, e);
    return -1;
  }
  if (b->tod) {
    /* On the day of the first event, or the next when the first event is
     * more than 12 hours later in the day (a run across midnight). */
    const int64_t day = INT64_C(86400000000000);
    int64_t first = (int64_t)f->t0 + offset;
    int64_t midnight = first - ((first % day) + day) % day;
    v += midnight;
    if (v < first - day / 2) v += day;
  }
  v -= offset;
  *out = v < 0 ? 0 : (uint64_t)v;
  return 0;
}

/* The time bounds of the process being read, on its first event. */
static int bounds(struct tool_filter *f, struct fproc *p, uint64_t ts) {
  if (p->ready == 2) return 0;
  p->ready = 2;
  if (!f->t0_known) {
    f->t0 = ts;
    f->t0_known = 1;
  }
  if (f->since.set && bound_ts(f, &f->since, &p->lo) < 0) p->bad = 1;
  if (f->until.set && bound_ts(f, &f->until, &p->hi) < 0) p->bad = 1;
  if (f->has_last && f->tmax_known)
    p->lo = f->tmax >= f->last ? f->tmax - f->last : 0;
  if (p->bad) f->failed = 1;
  return 0;
}

/* Which of --domain's names the holder of `domain` in file `c` has, as a
 * bit mask (bit i: dnames[i]); 0 when the file names no holder. */
static uint64_t holder_matches(const struct tool_filter *f,
                               const eventring_cursor *c, int domain) {
  eventring_slot_thread th;
  if (!c || eventring_cursor_slot_thread(c, domain, &th) != 1 || !th.name[0])
    return 0;
  uint64_t m = 0;
  for (int i = 0; i < f->ndnames; i++)
    if (fnmatch(f->dnames[i], th.name, 0) == 0) m |= UINT64_C(1) << i;
  return m;
}

static int domain_ok(struct tool_filter *f, struct fproc *p, int domain) {
  if (!f->ndomains && !f->ndnames) return 1;
  for (int i = 0; i < f->ndomains; i++)
    if (f->domains[i] == domain) return 1;
  if (!f->ndnames || !p || domain < 0 || domain >= p->ndomains) return 0;
  if (!p->named[domain]) {
    uint64_t m = holder_matches(f, f->src->cursor, domain);
    for (int i = 0; i < f->ndnames; i++)
      if (m >> i & 1) f->dname_hit[i] = 1;
    p->named[domain] = m ? 1 : 2;
  }
  return p->named[domain] == 1;
}

/* Whether an event passes; `name` may be NULL (none to match). */
static int keep(struct tool_filter *f, struct fproc *p, int domain,
                uint64_t ts, enum fkind k, const char *name) {
  if (!p || !domain_ok(f, p, domain)) return 0;
  if (f->kinds && !(f->kinds & (1u << k))) return 0;
  if (f->nevents) {
    if (!name) return 0;
    int ok = 0;
    for (int i = 0; i < f->nevents && !ok; i++)
      ok = fnmatch(f->events[i], name, 0) == 0;
    if (!ok) return 0;
  }
  bounds(f, p, ts);
  if (p->bad) return 0;
  if (ts < p->lo && domain >= 0 && domain < p->ndomains)
    p->markers[domain].early = 1;
  if (!f->timed++ || ts < f->timed_lo) f->timed_lo = ts;
  if (ts > f->timed_hi) f->timed_hi = ts;
  if (ts < p->lo || ts >= p->hi) return 0;
  f->timed_kept++;
  return 1;
}

/* Before the first event kept after events left out for being before
 * the time window: what was open then is cut by the window's start, as
 * at the start of a ring that wrapped (a window of no overwritten
 * event).  Returns the callback's answer. */
static int window_start(struct tool_filter *f, struct fproc *p, int domain) {
  if (domain < 0 || domain >= p->ndomains || !p->markers[domain].early)
    return 1;
  p->markers[domain].early = 0;
  return f->h->window ? f->h->window(f->data, domain, 0) : 1;
}

/* Gives the held-back marker of `domain` before a kept event. */
static int flush_marker(struct tool_filter *f, struct fproc *p, int domain) {
  if (domain < 0 || domain >= p->ndomains) return 1;
  struct marker *m = &p->markers[domain];
  if (!m->pending) return 1;
  m->pending = 0;
  if (!f->h->thread) return 1;
  return f->h->thread(f->data, domain, m->ts, m->thread, m->tid, m->name,
                      m->len);
}

#define PASS(k, name)                                                       \
  struct tool_filter *f = data;                                             \
  struct fproc *p = proc(f);                                                \
  if (!keep(f, p, domain, ts, (k), (name))) return !f->failed;              \
  if (!window_start(f, p, domain)) return 0;                                \
  if (!flush_marker(f, p, domain)) return 0

static int f_begin(void *data, int domain, uint64_t ts, int phase) {
  char buf[TOOL_NAME_BUF];
  PASS(F_BEGIN, tool_event_name(f->src->cursor, TOOL_NAME_PHASE, phase, buf));
  return f->h->runtime_begin ? f->h->runtime_begin(f->data, domain, ts, phase)
                             : 1;
}

static int f_end(void *data, int domain, uint64_t ts, int phase) {
  char buf[TOOL_NAME_BUF];
  PASS(F_END, tool_event_name(f->src->cursor, TOOL_NAME_PHASE, phase, buf));
  return f->h->runtime_end ? f->h->runtime_end(f->data, domain, ts, phase)
                           : 1;
}

static int f_counter(void *data, int domain, uint64_t ts, int id,
                     uint64_t v) {
  char buf[TOOL_NAME_BUF];
  PASS(F_COUNTER, tool_event_name(f->src->cursor, TOOL_NAME_COUNTER, id, buf));
  return f->h->runtime_counter
             ? f->h->runtime_counter(f->data, domain, ts, id, v)
             : 1;
}

static int f_alloc(void *data, int domain, uint64_t ts, const uint64_t *b) {
  PASS(F_ALLOC, "alloc_buckets");
  return f->h->alloc ? f->h->alloc(f->data, domain, ts, b) : 1;
}

static int f_lifecycle(void *data, int domain, uint64_t ts, int kind,
                       int64_t v, int has) {
  /* A new holder of the slot: its name is looked up again. */
  struct tool_filter *ff = data;
  struct fproc *fp = ff->ndnames ? proc(ff) : NULL;
  if (fp && kind == EVENTRING_LIFECYCLE_DOMAIN_SPAWN && domain >= 0 &&
      domain < fp->ndomains)
    fp->named[domain] = 0;
  /* The end of a file with no pid is its ring_stop, filtered out or not. */
  tool_source_lifecycle(((struct tool_filter *)data)->src, kind);
  char buf[TOOL_NAME_BUF];
  PASS(F_LIFECYCLE,
       tool_event_name(f->src->cursor, TOOL_NAME_LIFECYCLE, kind, buf));
  return f->h->lifecycle ? f->h->lifecycle(f->data, domain, ts, kind, v, has)
                         : 1;
}

static const char *uname(struct tool_filter *f, int id, const char *name,
                         char *buf) {
  (void)f;
  return tool_name_or(buf, name, tool_name_fallback[TOOL_NAME_USER], id);
}

static int f_unit(void *data, int domain, uint64_t ts, int id,
                  const char *name) {
  char buf[TOOL_NAME_BUF];
  PASS(F_USER_UNIT, uname(data, id, name, buf));
  return f->h->user_unit ? f->h->user_unit(f->data, domain, ts, id, name) : 1;
}

static int f_int(void *data, int domain, uint64_t ts, int id,
                 const char *name, int64_t v) {
  char buf[TOOL_NAME_BUF];
  PASS(F_USER_INT, uname(data, id, name, buf));
  return f->h->user_int ? f->h->user_int(f->data, domain, ts, id, name, v)
                        : 1;
}

static int f_span(void *data, int domain, uint64_t ts, int id,
                  const char *name, int is_end) {
  char buf[TOOL_NAME_BUF];
  PASS(F_USER_SPAN, uname(data, id, name, buf));
  return f->h->user_span
             ? f->h->user_span(f->data, domain, ts, id, name, is_end)
             : 1;
}

static int f_custom(void *data, int domain, uint64_t ts, int id,
                    const char *name, const void *b, size_t len) {
  char buf[TOOL_NAME_BUF];
  PASS(F_USER_CUSTOM, uname(data, id, name, buf));
  return f->h->user_custom
             ? f->h->user_custom(f->data, domain, ts, id, name, b, len)
             : 1;
}

static int f_thread(void *data, int domain, uint64_t ts, int64_t thread,
                    uint64_t tid, const char *name, size_t len) {
  struct tool_filter *f = data;
  struct fproc *p = proc(f);
  if (!p || !domain_ok(f, p, domain)) return 1;
  if (f->kinds & (1u << F_THREAD)) {
    /* Asked for: an event like the others. */
    char buf[80];
    size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
    memcpy(buf, name, n);
    buf[n] = '\0';
    if (!keep(f, p, domain, ts, F_THREAD, buf)) return !f->failed;
    if (!window_start(f, p, domain)) return 0;
    return f->h->thread ? f->h->thread(f->data, domain, ts, thread, tid, name,
                                       len)
                        : 1;
  }
  if (domain < 0 || domain >= p->ndomains) return 1;
  struct marker *m = &p->markers[domain];
  m->pending = 1;
  m->ts = ts;
  m->thread = thread;
  m->tid = tid;
  m->len = len < sizeof m->name ? len : sizeof m->name;
  memcpy(m->name, name, m->len);
  return 1;
}

static int f_lost(void *data, int domain, uint64_t count) {
  struct tool_filter *f = data;
  struct fproc *p = proc(f);
  if (!p || !domain_ok(f, p, domain)) return 1;
  if (domain >= 0 && domain < p->ndomains) p->markers[domain].pending = 0;
  if (f->h->lost_events) return f->h->lost_events(f->data, domain, count);
  /* A subcommand without a lost callback still counts losses. */
  tool_source_lost(f->src, domain, count);
  return 1;
}

static int f_window(void *data, int domain, uint64_t before) {
  struct tool_filter *f = data;
  struct fproc *p = proc(f);
  if (!p || !domain_ok(f, p, domain)) return 1;
  if (f->h->window) return f->h->window(f->data, domain, before);
  if (f->h->lost_events) return f->h->lost_events(f->data, domain, before);
  tool_source_window(f->src, domain, before);
  return 1;
}

/* `ns` as a duration that --since takes: seconds, to the nanosecond,
 * without trailing zeros. */
static void format_seconds(char *buf, size_t size, uint64_t ns) {
  int n = snprintf(buf, size, "%llu.%09llu",
                   (unsigned long long)(ns / 1000000000),
                   (unsigned long long)(ns % 1000000000));
  if (n < 0 || (size_t)n + 2 > size) return;
  char *end = buf + n;
  while (end[-1] == '0') end--;
  if (end[-1] == '.') end--;
  strcpy(end, "s");
}

/* When --since/--until kept nothing of a trace that has events, says
 * where its events are, in the form the bounds were given in. */
static void note_outside(const struct tool_filter *f) {
  const char *opts = f->since.set && f->until.set ? "--since and --until"
                     : f->since.set               ? "--since"
                                                  : "--until";
  struct tool_source *src = f->src;
  const eventring_cursor *c =
      src->multi && src->nprocs > 0 ? src->procs[0]->cursor : src->cursor;
  int64_t offset;
  if ((f->since.wall || f->until.wall) && tool_wall_offset(c, &offset) == 0) {
    char lo[TOOL_WALL_BYTES], hi[TOOL_WALL_BYTES];
    tool_wall_format(lo, sizeof lo, (int64_t)f->timed_lo + offset);
    tool_wall_format(hi, sizeof hi, (int64_t)f->timed_hi + offset);
    tool_error("no event within %s: the trace's events run from %s to %s",
               opts, lo, hi);
    return;
  }
  char lo[48], hi[48];
  /* A live source's first event read may not be its earliest. */
  format_seconds(lo, sizeof lo, f->timed_lo > f->t0 ? f->timed_lo - f->t0 : 0);
  format_seconds(hi, sizeof hi, f->timed_hi > f->t0 ? f->timed_hi - f->t0 : 0);
  tool_error("no event within %s: the trace's events run from %s to %s "
             "(counted from its first event)",
             opts, lo, hi);
}

/* The cursors of every process of `src`: n of them into v (at most
 * `cap`); returns 0 when one is not open yet. */
static int all_cursors(struct tool_source *src, eventring_cursor **v, int cap,
                       int *n) {
  *n = 0;
  if (!src->multi) {
    v[(*n)++] = src->cursor;
    return src->cursor != NULL;
  }
  int all = src->nprocs <= cap;
  for (int i = 0; i < src->nprocs && *n < cap; i++) {
    if (src->procs[i]->cursor) v[(*n)++] = src->procs[i]->cursor;
    else all = 0;
  }
  return all;
}

/* check_names() cannot tell before reading. */
#define NAMES_LATER (-1)

/* Whether every --domain name names a thread the files record (`after`
 * reading: or matched one while reading); when one does not, says so
 * with the names there are and returns TOOL_EXIT_USAGE.  Before reading,
 * returns NAMES_LATER when some file is not open. */
static int check_names(struct tool_filter *f, struct tool_source *src,
                       int after) {
  if (!f->ndnames) return TOOL_EXIT_OK;
  eventring_cursor *cs[256];
  int n;
  if (!all_cursors(src, cs, 256, &n) && !after) return NAMES_LATER;
  uint64_t seen = 0;
  char known[1024] = "";
  size_t len = 0;
  int nknown = 0;
  for (int k = 0; k < n; k++) {
    int max = eventring_cursor_max_domains(cs[k]);
    for (int d = 0; d < max; d++) {
      eventring_slot_thread th;
      if (eventring_cursor_slot_thread(cs[k], d, &th) != 1 || !th.name[0])
        continue;
      seen |= holder_matches(f, cs[k], d);
      /* Each name once, in the order of the slots. */
      char shown[TOOL_TEXT_BUF(sizeof th.name)], quoted[sizeof shown + 4];
      snprintf(quoted, sizeof quoted, "'%s'",
               tool_text(shown, sizeof shown, th.name, TOOL_TEXT_UTF8));
      if (!strstr(known, quoted) && len + strlen(quoted) + 3 < sizeof known) {
        len += (size_t)snprintf(known + len, sizeof known - len, "%s%s",
                                nknown++ ? ", " : "", quoted);
      }
    }
  }
  for (int i = 0; i < f->ndnames; i++) {
    if (seen >> i & 1 || f->dname_hit[i]) continue;
    char shown[TOOL_TEXT_BUF(DNAME_BYTES)];
    tool_text(shown, sizeof shown, f->dnames[i], TOOL_TEXT_UTF8);
    if (nknown)
      tool_error("--domain: no thread named '%s' (threads: %s); give one "
                 "of those or a domain number", shown, known);
    else
      tool_error("--domain: no thread named '%s': the file names no "
                 "thread; give a domain number", shown);
    return TOOL_EXIT_USAGE;
  }
  return TOOL_EXIT_OK;
}

int tool_filter_read(struct tool_source *src, const eventring_callbacks *cb,
                     void *data) {
  struct tool_filter *f = src->filter;
  f->h = tool_callbacks_handlers(cb);
  if (!f->h) return tool_source_read_raw(src, cb, data);
  f->data = data;
  f->src = src;
  /* A live source's threads come and go: a name is wrong only when no
   * thread had it by the end. */
  int later = src->follow || src->cmd;
  if (!later) {
    int nrc = check_names(f, src, 0);
    if (nrc == NAMES_LATER) later = 1;
    else if (nrc != TOOL_EXIT_OK) return nrc;
  }
  /* The first and last events of what is there now. */
  if (f->since.set || f->until.set || f->has_last) {
    if (tool_source_time_span(src, &f->t0, &f->tmax)) {
      f->t0_known = 1;
      f->tmax_known = 1;
    }
  }
  static const struct tool_handlers fh = {
      f_begin, f_end,  f_counter, f_alloc,  f_lifecycle, f_unit,
      f_int,   f_span, f_custom,  f_lost,   f_thread, f_window};
  eventring_callbacks *fcb = tool_callbacks_new(&fh);
  if (!fcb) {
    tool_error("out of memory");
    return TOOL_EXIT_INPUT;
  }
  int rc = tool_source_read_raw(src, fcb, f);
  eventring_callbacks_free(fcb);
  if (rc == TOOL_EXIT_OK && f->failed) rc = TOOL_EXIT_INPUT;
  if (rc == TOOL_EXIT_OK && (f->since.set || f->until.set) && f->timed &&
      !f->timed_kept)
    note_outside(f);
  if (rc == TOOL_EXIT_OK && later) rc = check_names(f, src, 1);
  return rc;
}

int tool_filter_first_ts(const struct tool_source *src, uint64_t *ts) {
  const struct tool_filter *f = src->filter;
  if (!f || !f->t0_known) return 0;
  *ts = f->t0;
  return 1;
}

int tool_filter_has_time(const struct tool_source *src) {
  const struct tool_filter *f = src->filter;
  return f && (f->since.set || f->until.set || f->has_last);
}

void tool_filter_free(struct tool_source *src) {
  struct tool_filter *f = src->filter;
  if (!f) return;
  for (int i = 0; i < f->nprocs; i++) {
    free(f->procs[i].markers);
    free(f->procs[i].named);
  }
  free(f->procs);
  memset(f, 0, sizeof *f);
  src->filter = NULL;
}
