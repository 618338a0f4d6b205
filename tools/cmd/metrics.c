/* metrics.c -- `eventring metrics`: a Prometheus exporter for ring files.
 *
 *   eventring metrics --listen ADDR:PORT --pid PID [--dir DIR]
 *   eventring metrics --listen ADDR:PORT --dir DIR
 *   eventring metrics --listen ADDR:PORT -- CMD ARGS...
 *
 * serves the text exposition format (version 0.0.4) on /metrics while
 * reading the rings continuously.  Two threads share the state under one
 * mutex: the main thread reads (polls the cursors), and libmicrohttpd's
 * own thread answers requests by rendering a snapshot.  The HTTP side,
 * and what keeps scrapes answered whatever other clients do, is
 * metrics_http.c's.
 *
 * Sources.  --pid and -- CMD go through source.c like every subcommand
 * (tool_source_read follows the writer until it is gone, then the
 * exporter ends: with a command, with the command's exit status).  A
 * command's whole tree is read (src->multi, procs.c): each of its
 * processes gets a target at its first event (target_of).  The
 * callbacks then take the mutex for each event, because source.c polls
 * with no limit.  --dir alone is ours: the directory is scanned every
 * SCAN_NS for files named <pid>.events, each gets a cursor and a target
 * (a set of series labelled with its pid and program), and each poll
 * reads at most POLL_BATCH events under the mutex so that a scrape never
 * waits long.  A file that disappears (its process exited and removed
 * it) is drained one last time and keeps its final values for --keep
 * seconds, so that at least one scrape can see how the process ended.  A
 * process that stops tracing and starts again writes a new file for the
 * same pid: the same process (pid, start time and program) keeps its
 * target, which reads the new file after the rest of the old one, so
 * that its counters and histograms are sums over its sessions and never
 * go back (rebind()); another process given the pid is a new target.
 * Files that cannot be read (another user's, a
 * half-written one that stays malformed) are reported once each, and
 * cost next to nothing afterwards (dirscan.c).  A file whose process is
 * dead is read to its end and closed at once, its series kept while the
 * file stays: only the files of live processes hold a descriptor, so a
 * directory of more stale files than descriptors does not keep a live
 * process's file from being read.
 *
 * What is exported (every series has the labels pid and program; the
 * program is /proc/PID/comm, or the spawned command's name):
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
 * (analysis.h) in its live mode, with the one difference a live exporter
 * cannot avoid: after a cut (lost events, ring_pause) it cannot wait to
 * learn whether what looks outermost really is, so it takes it at face
 * value; ends without a begin are ignored.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"

#define HELP_REF "eventring metrics --help"

static void help(void) {
  printf(
      "Usage: eventring metrics --listen ADDR:PORT --pid PID [--dir DIR]\n"
      "   or: eventring metrics --listen ADDR:PORT --dir DIR\n"
      "   or: eventring metrics --listen ADDR:PORT -- COMMAND [ARG]...\n"
      "Serve the events of running processes (a COMMAND's whole process\n"
      "tree) as Prometheus metrics on\n"
      "http://ADDR:PORT/metrics: GC pause and phase time histograms, the\n"
      "runtime counters, user events, lost and read events.\n"
      "\n"
      "Options:\n"
      "  --listen ADDR:PORT  the address to serve on, e.g. 127.0.0.1:9464\n"
      "                      or [::1]:9464 (port 0: any free port)\n"
      "  --pid PID           follow the ring file of process PID until it "
      "exits\n"
      "  --dir DIR           with --pid: where that file is; alone: follow\n"
      "                      every PID.events file that appears in DIR\n"
      "  --keep SECONDS      with --dir alone: how long a process's series\n"
      "                      stay after its file is gone (default 60)\n"
      "  --header-timeout SECONDS\n"
      "                      a connection that has not sent a request's\n"
      "                      headers this long after it opened (or after "
      "its\n"
      "                      previous request) is closed (default 10)\n"
      "  --ocaml50           number phases as OCaml 5.0-5.2 did\n"
      "  --ocaml53           number phases as OCaml 5.3+ does (default:\n"
      "                      inferred from the file)\n"
      "  --domain N|NAME, --event GLOB, --kind KIND\n"
      "                      with --pid or COMMAND: export only those "
      "events\n"
      "                      (see eventring(1), FILTERS)\n"
      "  -h, --help          print this help and exit\n"
      "\n"
      "Runs until the process (or COMMAND) exits, or with --dir alone until\n"
      "interrupted.  Exit status: 0 success (COMMAND's status when one is "
      "run),\n"
      "1 unreadable input or no libmicrohttpd, 2 bad usage.\n");
}

#ifndef EVENTRING_HAVE_MICROHTTPD

int tool_metrics(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      help();
      return tool_output_finish();
    }
  tool_error("metrics: this eventring was built without libmicrohttpd "
             "(Debian: libmicrohttpd-dev; install it, configure and build "
             "again)");
  return TOOL_EXIT_INPUT;
}

#else /* EVENTRING_HAVE_MICROHTTPD */

#include <arpa/inet.h>
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "starttime.h"

/* How often --dir is scanned for files that appeared or vanished. */
#define SCAN_NS 250000000ULL
/* How long the reader sleeps when no ring had anything new. */
#define IDLE_NS 10000000L
/* Events read per poll under the mutex in --dir mode. */
#define POLL_BATCH 65536
/* Phase and counter ids we keep series for; the format has 49 and 26. */
#define MAX_PHASES 64
#define MAX_COUNTERS 64
#define NAME_MAX_BYTES 48

/* ------------------------------------------------------------------ */
/* Histograms with Prometheus's usual bounds for latencies, from 1 us to */
/* 10 s.  Bucket i counts values <= bound i that are above bound i-1; */
/* the exposition makes them cumulative.                               */

#define N_BOUNDS 22
static const uint64_t bound_ns[N_BOUNDS] = {
    1000ULL,       2500ULL,       5000ULL,       10000ULL,
    25000ULL,      50000ULL,      100000ULL,     250000ULL,
    500000ULL,     1000000ULL,    2500000ULL,    5000000ULL,
    10000000ULL,   25000000ULL,   50000000ULL,   100000000ULL,
    250000000ULL,  500000000ULL,  1000000000ULL, 2500000000ULL,
    5000000000ULL, 10000000000ULL};
/* The same bounds in seconds, written as Prometheus's own clients do. */
static const char *const bound_le[N_BOUNDS] = {
    "1e-06",  "2.5e-06", "5e-06", "1e-05", "2.5e-05", "5e-05",
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
    "0.01",   "0.025",   "0.05",  "0.1",   "0.25",    "0.5",
    "1",      "2.5",     "5",     "10"};

struct prom_hist {
  uint64_t bucket[N_BOUNDS + 1]; /* the last one: above every bound */
  uint64_t count;
  uint64_t sum_ns;
};

static void prom_hist_add(struct prom_hist *h, uint64_t ns) {
  int i = 0;
  while (i < N_BOUNDS && ns > bound_ns[i]) i++;
  h->bucket[i]++;
  h->count++;
  h->sum_ns += ns;
}

/* ------------------------------------------------------------------ */
/* State of one ring file.                                             */

struct user_state {
  int id;
  char name[EVENTRING_MAX_NAME + 1]; /* as in the file */
  /* eventring_user_ + sanitised (where words may gain an 's'). */
  char metric[2 * EVENTRING_MAX_NAME + 32];
  /* Latest int per domain (allocated on the first int). */
  int64_t *ival;
  unsigned char *iset;
  /* Span durations; open[d] is the begin's timestamp + 1, 0 when none. */
  struct prom_hist *span;
  uint64_t *open;
  /* Unit events. */
  uint64_t units;
  int has_unit;
};

struct target {
  struct target *next;
  eventring_cursor *cursor; /* NULL once closed (--dir: ended) */
  int own_cursor; /* ours to free (--dir), else source.c's */
  char path[PATH_MAX];
  dev_t dev;
  ino_t ino;
  pid_t pid;
  char program[64];
  int nd; /* domain slots of the file */
  int lost_words;
  uint64_t events, lost;
  int paused;
  int gone;          /* the file vanished, or reading ended */
  uint64_t gone_ns;  /* when */
  int failed;        /* a read error: no more polls */
  int ended;         /* its process is dead, its file read and closed */
  int stopped;       /* ring_stop read: this session is over */
  /* Dropped and malformed events of the sessions closed so far (their
   * files' last word), to which the open file's own are added. */
  int unrec_ok;      /* `unrec` holds something */
  struct tool_unrecorded unrec;
  uint64_t start_time; /* the process's (starttime.c), when start_known */
  int start_known;
  int seen;          /* found by the current scan */
  struct pauses pauses;  /* analysis.c's tracker, live */
  struct prom_hist pause;
  struct prom_hist *phase[MAX_PHASES];
  char phase_name[MAX_PHASES][NAME_MAX_BYTES];
  uint64_t *counter; /* nd * MAX_COUNTERS latest values */
  unsigned char *counter_set;
  char counter_name[MAX_COUNTERS][NAME_MAX_BYTES];
  struct user_state **user_by_id; /* EVENTRING_MAX_USER_EVENTS, lazily */
  struct user_state **users;      /* those seen, in order */
  int nusers, capusers;
};

static struct {
  pthread_mutex_t lock;
  struct target *targets; /* under lock */
  int lock_per_event;     /* single source: callbacks take the lock */
  /* A command's tree: a target per process of `tree` (procs.c's
   * src->procs), made when its first event comes, by_proc[i] that of
   * src->procs[i]. */
  struct tool_source *tree;
  struct target **by_proc;
  int nby_proc;
  int numbering; /* --ocaml50/--ocaml53: EVENTRING_NUMBERING_* */
} M = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void lock_ev(void) {
  if (M.lock_per_event) pthread_mutex_lock(&M.lock);
}
static void unlock_ev(void) {
  if (M.lock_per_event) pthread_mutex_unlock(&M.lock);
}

static void copy_name(char *dst, const char *src, size_t n) {
  snprintf(dst, n, "%s", src ? src : "");
}

/* A pause, from the tracker: `arg` is the target. */
static void on_pause(void *arg, int domain, uint64_t duration) {
  (void)domain;
  struct target *t = arg;
  prom_hist_add(&t->pause, duration);
}

static struct target *target_new(eventring_cursor *c, int own,
                                 const char *path, pid_t pid,
                                 const char *program) {
  struct target *t = calloc(1, sizeof *t);
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
  /* A tree's cursors are source.c's, which set the numbering itself. */
  if (!M.tree) eventring_cursor_set_numbering(c, M.numbering);
  return t;
}

static void target_free(struct target *t) {
  if (t->own_cursor && t->cursor) eventring_cursor_free(t->cursor);
  pauses_free(&t->pauses);
  for (int i = 0; i < MAX_PHASES; i++) free(t->phase[i]);
  free(t->counter);
  free(t->counter_set);
  for (int i = 0; i < t->nusers; i++) {
    struct user_state *u = t->users[i];
    free(u->ival);
    free(u->iset);
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

/* Closes `t`'s file, which nothing more will be read from: what its
 * writer dropped and its reader skipped joins the counts of the
 * sessions before it, and its descriptor goes.  Needs M.lock. */
static void close_session(struct target *t) {
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
static void cut_spans(struct target *t, int d) {
  for (int i = 0; i < t->nusers; i++)
    if (t->users[i]->open && d >= 0 && d < t->nd) t->users[i]->open[d] = 0;
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

static struct user_state *user_of(struct target *t, int id,
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
    struct user_state **p = realloc(t->users, (size_t)cap * sizeof *p);
    if (!p) return NULL;
    t->users = p;
    t->capusers = cap;
  }
  struct user_state *u = calloc(1, sizeof *u);
  if (!u) return NULL;
  u->id = id;
  copy_name(u->name, shown, sizeof u->name);
  sanitise(u->metric, sizeof u->metric, "eventring_user_", u->name);
  t->users[t->nusers++] = u;
  t->user_by_id[id] = u;
  return u;
}

/* ------------------------------------------------------------------ */
/* Callbacks: `data` is the target, or with a command's tree, NULL and  */
/* the target that of the process whose event it is (target_of).        */

/* The target of the event being delivered: `data`, or that of the
 * tree's process src->proc, made (and listed, under the lock) at its
 * first event.  NULL when out of memory: the event is then not counted. */
static struct target *target_of(void *data) {
  if (!M.tree) return data;
  const struct tool_source *src = M.tree;
  int i = src->proc;
  if (i < 0 || i >= src->nprocs) return NULL;
  if (i < M.nby_proc && M.by_proc[i]) return M.by_proc[i];
  if (i >= M.nby_proc) {
    int n = src->nprocs + 16;
    struct target **v = realloc(M.by_proc, (size_t)n * sizeof *v);
    if (!v) return NULL;
    memset(v + M.nby_proc, 0, (size_t)(n - M.nby_proc) * sizeof *v);
    M.by_proc = v;
    M.nby_proc = n;
  }
  const struct tool_proc *p = src->procs[i];
  /* Named after the program that writes the file: an exec'd program is
   * a process of its own, named after its new image. */
  char prog[64];
  snprintf(prog, sizeof prog, "%s", p->name);
  if (!prog[0]) tool_process_name(p->pid, prog, sizeof prog);
  if (!prog[0] && i == 0) snprintf(prog, sizeof prog, "%s", src->name);
  struct target *t = target_new(p->cursor, 0, p->path, p->pid, prog);
  if (!t) return NULL;
  pthread_mutex_lock(&M.lock);
  t->next = M.targets;
  M.targets = t;
  pthread_mutex_unlock(&M.lock);
  M.by_proc[i] = t;
  return t;
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  struct target *t = target_of(data);
  if (!t) return 1;
  lock_ev();
  t->events++;
  pauses_begin(&t->pauses, domain, ts, phase);
  unlock_ev();
  return 1;
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  struct target *t = target_of(data);
  if (!t) return 1;
  lock_ev();
  t->events++;
  uint64_t start;
  /* A pause (the outermost phase) goes to on_pause() from in here. */
  if (pauses_end(&t->pauses, domain, ts, phase, &start) && phase >= 0 &&
      phase < MAX_PHASES) {
    uint64_t d = ts >= start ? ts - start : 0;
    if (!t->phase[phase]) {
      t->phase[phase] = calloc(1, sizeof(struct prom_hist));
      char buf[TOOL_NAME_BUF];
      copy_name(t->phase_name[phase],
                tool_event_name(t->cursor, TOOL_NAME_PHASE, phase, buf),
                NAME_MAX_BYTES);
    }
    if (t->phase[phase]) prom_hist_add(t->phase[phase], d);
  }
  unlock_ev();
  return 1;
}

static int on_counter(void *data, int domain, uint64_t ts, int counter,
                      uint64_t value) {
  (void)ts;
  struct target *t = target_of(data);
  if (!t) return 1;
  lock_ev();
  t->events++;
  if (counter >= 0 && counter < MAX_COUNTERS && domain >= 0 &&
      domain < t->nd) {
    if (!t->counter) {
      t->counter = calloc((size_t)t->nd * MAX_COUNTERS, sizeof *t->counter);
      t->counter_set = calloc((size_t)t->nd * MAX_COUNTERS, 1);
      if (!t->counter || !t->counter_set) {
        free(t->counter), free(t->counter_set);
        t->counter = NULL, t->counter_set = NULL;
      }
    }
    if (t->counter) {
      size_t k = (size_t)domain * MAX_COUNTERS + (size_t)counter;
      if (!t->counter_name[counter][0]) {
        char buf[TOOL_NAME_BUF];
        copy_name(t->counter_name[counter],
                  tool_event_name(t->cursor, TOOL_NAME_COUNTER, counter, buf),
                  NAME_MAX_BYTES);
      }
      t->counter[k] = value;
      t->counter_set[k] = 1;
    }
  }
  unlock_ev();
  return 1;
}

static int on_alloc(void *data, int domain, uint64_t ts,
                    const uint64_t *buckets) {
  (void)domain, (void)ts, (void)buckets;
  struct target *t = target_of(data);
  if (!t) return 1;
  lock_ev();
  t->events++;
  unlock_ev();
  return 1;
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  (void)ts, (void)value, (void)has_data;
  struct target *t = target_of(data);
  if (!t) return 1;
  lock_ev();
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
  unlock_ev();
  return 1;
}

static int on_user_unit(void *data, int domain, uint64_t ts, int id,
                        const char *name) {
  (void)domain, (void)ts;
  struct target *t = target_of(data);
  if (!t) return 1;
  lock_ev();
  t->events++;
  struct user_state *u = user_of(t, id, name);
  if (u) u->units++, u->has_unit = 1;
  unlock_ev();
  return 1;
}

static int on_user_int(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t value) {
  (void)ts;
  struct target *t = target_of(data);
  if (!t) return 1;
  lock_ev();
  t->events++;
  struct user_state *u = user_of(t, id, name);
  if (u && domain >= 0 && domain < t->nd) {
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
  unlock_ev();
  return 1;
}

static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  struct target *t = target_of(data);
  if (!t) return 1;
  lock_ev();
  t->events++;
  struct user_state *u = user_of(t, id, name);
  if (u && domain >= 0 && domain < t->nd) {
    if (!u->span) {
      u->span = calloc(1, sizeof *u->span);
      u->open = calloc((size_t)t->nd, sizeof *u->open);
      if (!u->span || !u->open) {
        free(u->span), free(u->open);
        u->span = NULL, u->open = NULL;
      }
    }
    if (u->span) {
      /* Spans of one event do not nest: a second begin restarts it. */
      if (!is_end) {
        u->open[domain] = ts + 1;
      } else if (u->open[domain]) {
        uint64_t b = u->open[domain] - 1;
        prom_hist_add(u->span, ts >= b ? ts - b : 0);
        u->open[domain] = 0;
      }
    }
  }
  unlock_ev();
  return 1;
}

static int on_user_custom(void *data, int domain, uint64_t ts, int id,
                          const char *name, const void *bytes, size_t len) {
  (void)domain, (void)ts, (void)id, (void)name, (void)bytes, (void)len;
  struct target *t = target_of(data);
  if (!t) return 1;
  lock_ev();
  t->events++;
  unlock_ev();
  return 1;
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct target *t = target_of(data);
  if (!t) return 1;
  lock_ev();
  t->lost += count;
  pauses_cut(&t->pauses, domain);
  cut_spans(t, domain);
  unlock_ev();
  return 1;
}

static eventring_callbacks *make_callbacks(void) {
  static const struct tool_handlers handlers = {
      on_begin,     on_end,      on_counter,   on_alloc,       on_lifecycle,
      on_user_unit, on_user_int, on_user_span, on_user_custom, on_lost,
      NULL /* thread-switch markers: not shown */, NULL};
  return tool_callbacks_new(&handlers);
}

/* ------------------------------------------------------------------ */
/* The exposition.  Everything below runs in the HTTP thread under the  */
/* lock.                                                                */

/* A label value: \\, \" and \n escaped, as the format requires, and any
 * byte sequence that is not UTF-8 replaced by U+FFFD, which Prometheus
 * would otherwise reject (names come from files and need not be UTF-8). */
static void put_label_value(FILE *o, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned c = *p;
    if (c == '\\') fputs("\\\\", o), p++;
    else if (c == '"') fputs("\\\"", o), p++;
    else if (c == '\n') fputs("\\n", o), p++;
    else if (c < 0x80) fputc((int)c, o), p++;
    else {
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
        fwrite(p, 1, (size_t)n, o);
        p += n;
      } else {
        fputs("\xef\xbf\xbd", o);
        p++;
      }
    }
  }
}

/* `{pid="..",program=".."` -- the caller adds its own labels and '}'. */
static void put_target_labels(FILE *o, const struct target *t) {
  fprintf(o, "{pid=\"%ld\",program=\"", (long)t->pid);
  put_label_value(o, t->program);
  fputc('"', o);
}

static void put_family(FILE *o, const char *name, const char *type,
                       const char *help) {
  fprintf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_seconds(FILE *o, uint64_t ns) {
  fprintf(o, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

/* A histogram's samples; `extra` is a label pair such as phase="minor"
 * written before le (or NULL), `escaped` its raw value. */
static void put_hist(FILE *o, const char *name, const struct target *t,
                     const char *extra_key, const char *extra_value,
                     const struct prom_hist *h) {
  uint64_t cum = 0;
  for (int i = 0; i <= N_BOUNDS; i++) {
    cum += h->bucket[i];
    fprintf(o, "%s_bucket", name);
    put_target_labels(o, t);
    if (extra_key) {
      fprintf(o, ",%s=\"", extra_key);
      put_label_value(o, extra_value);
      fputc('"', o);
    }
    fprintf(o, ",le=\"%s\"} %" PRIu64 "\n",
            i < N_BOUNDS ? bound_le[i] : "+Inf", cum);
  }
  const char *suffix[2] = {"_sum", "_count"};
  for (int k = 0; k < 2; k++) {
    fprintf(o, "%s%s", name, suffix[k]);
    put_target_labels(o, t);
    if (extra_key) {
      fprintf(o, ",%s=\"", extra_key);
      put_label_value(o, extra_value);
      fputc('"', o);
    }
    fputs("} ", o);
    if (k == 0)
      put_seconds(o, h->sum_ns);
    else
      fprintf(o, "%" PRIu64, h->count);
    fputc('\n', o);
  }
}

/* The families named after events, gathered from every target and
 * sorted, so that each family's HELP and TYPE come once, followed by all
 * of its samples. */
enum fam_kind { F_COUNTER, F_INT, F_SPAN, F_UNIT };

struct entry {
  char family[2 * EVENTRING_MAX_NAME + 48];
  enum fam_kind kind;
  const struct target *t;
  int idx;                     /* counter id */
  const struct user_state *u;  /* user events */
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

static void put_entry(FILE *o, const struct entry *e) {
  const struct target *t = e->t;
  if (e->kind == F_COUNTER) {
    for (int d = 0; d < t->nd; d++) {
      size_t k = (size_t)d * MAX_COUNTERS + (size_t)e->idx;
      if (!t->counter_set[k]) continue;
      fputs(e->family, o);
      put_target_labels(o, t);
      fprintf(o, ",domain=\"%d\"} %" PRIu64 "\n", d, t->counter[k]);
    }
  } else if (e->kind == F_INT) {
    for (int d = 0; d < t->nd; d++) {
      if (!e->u->iset[d]) continue;
      fputs(e->family, o);
      put_target_labels(o, t);
      fputs(",event=\"", o);
      put_label_value(o, e->u->name);
      fprintf(o, "\",domain=\"%d\"} %" PRId64 "\n", d, e->u->ival[d]);
    }
  } else if (e->kind == F_SPAN) {
    put_hist(o, e->family, t, "event", e->u->name, e->u->span);
  } else {
    fputs(e->family, o);
    put_target_labels(o, t);
    fputs(",event=\"", o);
    put_label_value(o, e->u->name);
    fprintf(o, "\"} %" PRIu64 "\n", e->u->units);
  }
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

static void render_named(FILE *o) {
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
  for (const struct target *t = M.targets; t; t = t->next) {
    size_t first_counter = n;
    for (int c = 0; c < MAX_COUNTERS && t->counter; c++) {
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
      const struct user_state *u = t->users[i];
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
    put_entry(o, &es[i]);
  }
out:
  free(es);
}

/* What the writer dropped and the reader skipped: from the file while it
 * is open, then as it last said.  Returns 0 when nothing is known. */
static int unrecorded(const struct target *t, struct tool_unrecorded *u) {
  *u = t->unrec;
  struct tool_unrecorded now;
  if (!t->cursor || tool_unrecorded(t->cursor, &now) != 0) return t->unrec_ok;
  unrec_add(u, &now);
  return 1;
}

enum unrecorded_kind { DROPPED, MALFORMED };

/* The samples of `name`: each target's dropped or malformed events, read
 * from the file at each scrape (eventring_cursor_dropped may be called
 * while another thread polls); a file that no longer gives them has no
 * sample. */
static void put_unrecorded(FILE *o, const char *name,
                           enum unrecorded_kind kind) {
  for (const struct target *t = M.targets; t; t = t->next) {
    struct tool_unrecorded u;
    if (!unrecorded(t, &u)) continue;
    fputs(name, o);
    put_target_labels(o, t);
    fprintf(o, "} %" PRIu64 "\n",
            kind == MALFORMED ? u.malformed : u.dropped);
  }
}

static void render(FILE *o) {
  const struct target *t;
  int ntargets = 0, any_words = 0, any_events = 0;
  for (t = M.targets; t; t = t->next) {
    ntargets++;
    if (t->lost_words) any_words = 1;
    else any_events = 1;
  }
  put_family(o, "eventring_rings", "gauge",
             "Ring files this exporter is reading.");
  fprintf(o, "eventring_rings %d\n", ntargets);

  put_family(o, "eventring_events_read_total", "counter",
             "Events read from the ring file.");
  for (t = M.targets; t; t = t->next) {
    fputs("eventring_events_read_total", o);
    put_target_labels(o, t);
    fprintf(o, "} %" PRIu64 "\n", t->events);
  }
  if (any_events) {
    put_family(o, "eventring_lost_events_total", "counter",
               "Events overwritten by the writer before they were read.");
    for (t = M.targets; t; t = t->next) {
      if (t->lost_words) continue;
      fputs("eventring_lost_events_total", o);
      put_target_labels(o, t);
      fprintf(o, "} %" PRIu64 "\n", t->lost);
    }
  }
  if (any_words) {
    put_family(o, "eventring_lost_ring_words_total", "counter",
               "Ring words of events overwritten before they were read "
               "(OCaml 5's files count words, not events).");
    for (t = M.targets; t; t = t->next) {
      if (!t->lost_words) continue;
      fputs("eventring_lost_ring_words_total", o);
      put_target_labels(o, t);
      fprintf(o, "} %" PRIu64 "\n", t->lost);
    }
  }
  put_family(o, "eventring_dropped_events_total", "counter",
             "Events the writer could not record: threads without a domain "
             "slot, probes in signal handlers, events longer than the ring.");
  put_unrecorded(o, "eventring_dropped_events_total", DROPPED);
  put_family(o, "eventring_malformed_events_total", "counter",
             "Malformed events the reader skipped.");
  put_unrecorded(o, "eventring_malformed_events_total", MALFORMED);
  put_family(o, "eventring_ring_paused", "gauge",
             "1 while recording is paused (after ring_pause), else 0.");
  for (t = M.targets; t; t = t->next) {
    fputs("eventring_ring_paused", o);
    put_target_labels(o, t);
    fprintf(o, "} %d\n", t->paused);
  }
  put_family(o, "eventring_gc_pause_seconds", "histogram",
             "GC pauses (outermost runtime phases of a domain), in seconds.");
  for (t = M.targets; t; t = t->next)
    put_hist(o, "eventring_gc_pause_seconds", t, NULL, NULL, &t->pause);
  put_family(o, "eventring_gc_phase_seconds", "histogram",
             "Durations of each runtime phase, nested ones included, in "
             "seconds.");
  for (t = M.targets; t; t = t->next)
    for (int p = 0; p < MAX_PHASES; p++)
      if (t->phase[p])
        put_hist(o, "eventring_gc_phase_seconds", t, "phase",
                 t->phase_name[p], t->phase[p]);
  render_named(o);
}

/* A scrape's page (metrics_http.c calls it in the server's thread). */
static void render_locked(FILE *o, void *arg) {
  (void)arg;
  pthread_mutex_lock(&M.lock);
  render(o);
  pthread_mutex_unlock(&M.lock);
}


/* ------------------------------------------------------------------ */
/* --dir alone: following every ring file of a directory (dirscan.c    */
/* finds them).                                                         */

static struct tool_dirscan D;

/* Reads `t`'s file to its current end, a batch at a time under M.lock
 * so that scrapes go on between batches.  Needs M.lock not held. */
static void drain(struct target *t, const eventring_callbacks *cb) {
  int r;
  do {
    pthread_mutex_lock(&M.lock);
    r = eventring_cursor_poll(t->cursor, cb, t, POLL_BATCH);
    pthread_mutex_unlock(&M.lock);
  } while (r > 0);
}

/* Reads what is left in `t`'s file and closes it: its process is dead,
 * so nothing more will come.  Its series stay (until the file goes and
 * --keep has passed); it no longer holds a descriptor. */
static void end_target(struct target *t, const eventring_callbacks *cb) {
  drain(t, cb);
  pthread_mutex_lock(&M.lock);
  close_session(t);
  t->ended = 1;
  pthread_mutex_unlock(&M.lock);
}

/* Grows `t`'s per-domain arrays to `nd` domains (a later session's file
 * may have more slots).  Returns 0, or -1 when out of memory (then the
 * domains above t->nd are not exported).  Needs M.lock. */
static int grow_domains(struct target *t, int nd) {
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
  GROW(t->counter, MAX_COUNTERS * sizeof *t->counter);
  GROW(t->counter_set, MAX_COUNTERS);
  for (int i = 0; i < t->nusers; i++) {
    struct user_state *u = t->users[i];
    GROW(u->ival, sizeof *u->ival);
    GROW(u->iset, 1);
    GROW(u->open, sizeof *u->open);
  }
#undef GROW
  t->nd = nd;
  return 0;
}

/* Makes cursor `c` on `path` the file of `t`, whose process started
 * tracing again: what the earlier file holds is read first and joins
 * the totals, which go on from there (counters stay monotonic); the
 * gauges keep their latest values until the new file sets them.
 * Returns 0, or -1 when out of memory (`t` is then unchanged but for
 * its earlier file, closed). */
static int rebind(struct target *t, eventring_cursor *c, const char *path,
                  const struct stat *st, const eventring_callbacks *cb) {
  if (t->cursor && !t->failed) drain(t, cb);
  pthread_mutex_lock(&M.lock);
  close_session(t);
  struct pauses fresh;
  int nd = eventring_cursor_max_domains(c);
  if (nd < 1) nd = 1;
  if (grow_domains(t, nd) < 0 ||
      pauses_init(&fresh, c, t->nd, on_pause, t) < 0) {
    pauses_free(&fresh);
    pthread_mutex_unlock(&M.lock);
    return -1;
  }
  pauses_free(&t->pauses);
  t->pauses = fresh;
  t->pauses.live = 1;
  eventring_cursor_set_numbering(c, M.numbering);
  t->cursor = c;
  t->own_cursor = 1;
  copy_name(t->path, path, sizeof t->path);
  t->dev = st->st_dev;
  t->ino = st->st_ino;
  t->lost_words = eventring_cursor_lost_unit(c) == EVENTRING_LOST_WORDS;
  /* Ids are the file's: the new one maps them again, by name. */
  if (t->user_by_id)
    memset(t->user_by_id, 0,
           EVENTRING_MAX_USER_EVENTS * sizeof *t->user_by_id);
  for (int d = 0; d < t->nd; d++) cut_spans(t, d);
  t->paused = t->stopped = t->ended = t->failed = t->gone = 0;
  pthread_mutex_unlock(&M.lock);
  return 0;
}

/* Whether the file `t` read is still at its path (not removed, not
 * replaced by another). */
static int file_still_there(const struct target *t) {
  struct stat st;
  return lstat(t->path, &st) == 0 && st.st_dev == t->dev &&
         st.st_ino == t->ino;
}

/* The target is the file's handle for dirscan.c: it is freed only after
 * a scan that no longer sees the file (scan() marks it gone). */
static void scan_still(void *arg, void *handle) {
  (void)arg;
  struct target *t = handle;
  t->seen = 1;
}

static void *scan_found(void *arg, eventring_cursor *c, const char *path,
                        pid_t pid, const struct stat *st) {
  const eventring_callbacks *cb = arg;
  uint64_t start = 0;
  int start_known = er_proc_start_time(pid, &start) == 0;
  char prog[64];
  tool_process_name(pid, prog, sizeof prog);
  /* A file of a process we already follow is its next tracing session
   * (stop, then start again, makes a new file): it goes on feeding the
   * same series, so that their counters stay monotonic.  While the
   * earlier file is still there and its session not over, the new one
   * is another name for the same writer (a leading 0): declined. */
  for (struct target *t = M.targets; t; t = t->next) {
    if (t->pid != pid || t->ended || t->start_known != start_known ||
        (start_known && t->start_time != start) ||
        strcmp(t->program, prog) != 0)
      continue;
    if (!t->gone && !t->stopped && file_still_there(t)) return NULL;
    if (rebind(t, c, path, st, cb) < 0) return NULL;
    t->seen = 1;
    if (tool_process_gone(pid)) end_target(t, cb);
    return t;
  }
  /* Another process's file under this pid must not give a second series
   * with the same labels either: while a file of the earlier one is
   * there under another name, the new one waits. */
  for (struct target *t = M.targets; t; t = t->next)
    if (t->pid == pid && !t->gone && strcmp(t->path, path) != 0)
      return NULL;
  struct target *t = target_new(c, 1, path, pid, prog);
  if (!t) return NULL;
  t->dev = st->st_dev;
  t->ino = st->st_ino;
  t->start_time = start;
  t->start_known = start_known;
  t->seen = 1;
  pthread_mutex_lock(&M.lock);
  for (struct target **tp = &M.targets; *tp;) {
    struct target *old = *tp;
    if (old->pid == pid) {
      *tp = old->next;
      target_free(old);
    } else {
      tp = &old->next;
    }
  }
  t->next = M.targets;
  M.targets = t;
  pthread_mutex_unlock(&M.lock);
  /* A dead process's file is read now and closed, so that a directory
   * of them never holds more than one descriptor at a time. */
  if (tool_process_gone(pid)) end_target(t, cb);
  return t;
}

static void scan(uint64_t now, uint64_t keep_ns,
                 const eventring_callbacks *cb) {
  static const struct tool_dirscan_ops ops = {scan_still, scan_found};
  struct target *t;
  for (t = M.targets; t; t = t->next) t->seen = 0;
  tool_dirscan(&D, &ops, (void *)cb);
  /* Processes that died since the last scan: their files are complete. */
  for (t = M.targets; t; t = t->next)
    if (t->seen && t->cursor && !t->failed && tool_process_gone(t->pid))
      end_target(t, cb);
  /* Files that vanished keep their last values for keep_ns. */
  pthread_mutex_lock(&M.lock);
  for (struct target **tp = &M.targets; *tp;) {
    t = *tp;
    if (!t->gone && !t->seen) {
      t->gone = 1;
      t->gone_ns = now;
    }
    if (t->gone && now - t->gone_ns >= keep_ns) {
      *tp = t->next;
      target_free(t);
    } else {
      tp = &t->next;
    }
  }
  pthread_mutex_unlock(&M.lock);
}

static int follow_dir(const char *dir, uint64_t keep_ns,
                      const eventring_callbacks *cb) {
  int rc = tool_dirscan_check(dir, "metrics");
  if (rc != TOOL_EXIT_OK) return rc;
  D.dir = dir;
  D.who = "metrics";
  tool_signals_install();
  uint64_t next_scan = 0;
  while (!tool_signal_pending()) {
    uint64_t now = tool_now_ns();
    if (now >= next_scan) {
      /* Read what is there before a vanished file is marked gone, so
       * that its final events count. */
      for (struct target *t = M.targets; t; t = t->next) {
        if (t->gone || t->failed || !t->cursor) continue;
        int r;
        do {
          pthread_mutex_lock(&M.lock);
          r = eventring_cursor_poll(t->cursor, cb, t, POLL_BATCH);
          pthread_mutex_unlock(&M.lock);
        } while (r > 0);
      }
      scan(now, keep_ns, cb);
      next_scan = now + SCAN_NS;
    }
    int any = 0;
    for (struct target *t = M.targets; t; t = t->next) {
      if (t->gone || t->failed || !t->cursor) continue;
      pthread_mutex_lock(&M.lock);
      int r = eventring_cursor_poll(t->cursor, cb, t, POLL_BATCH);
      pthread_mutex_unlock(&M.lock);
      if (r > 0) any = 1;
      if (r < 0) {
        t->failed = 1;
        tool_error("metrics: %s: %s (no longer read)", t->path,
                   eventring_strerror(r));
        /* Nothing more will be read from it: its descriptor goes. */
        pthread_mutex_lock(&M.lock);
        close_session(t);
        pthread_mutex_unlock(&M.lock);
      }
    }
    if (!any) {
      struct timespec ts = {0, IDLE_NS};
      nanosleep(&ts, NULL);
    }
  }
  /* Interrupted, as the other subcommands report it. */
  int sig = tool_signal_pending();
  tool_signals_restore();
  return 128 + sig;
}

/* ------------------------------------------------------------------ */

int tool_metrics(int argc, char **argv) {
  enum { OPT_LISTEN = TOOL_OPT_OWN, OPT_KEEP, OPT_HEADER_TIMEOUT };
  /* The source options but --follow, which is always on. */
  static const struct option longopts[] = {
      {"listen", required_argument, NULL, OPT_LISTEN},
      {"dir", required_argument, NULL, TOOL_OPT_DIR},
      {"pid", required_argument, NULL, TOOL_OPT_PID},
      {"keep", required_argument, NULL, OPT_KEEP},
      {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
      {"ocaml50", no_argument, NULL, TOOL_OPT_OCAML50},
      {"ocaml53", no_argument, NULL, TOOL_OPT_OCAML53},
      {"help", no_argument, NULL, 'h'},
      TOOL_FILTER_OPTIONS,
      {NULL, 0, NULL, 0},
  };
  struct tool_source src;
  memset(&src, 0, sizeof src);
  const char *listen_arg = NULL;
  double keep_s = 60, header_s = METRICS_HEADER_TIMEOUT;
  int c;
  while ((c = tool_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == OPT_LISTEN) {
      listen_arg = optarg;
    } else if (c == OPT_KEEP) {
      char *end;
      errno = 0;
      keep_s = strtod(optarg, &end);
      if (end == optarg || *end || errno || !(keep_s >= 0) || keep_s > 1e6)
        return tool_usage_error(HELP_REF, "invalid --keep '%s' (seconds)",
                                optarg);
    } else if (c == OPT_HEADER_TIMEOUT) {
      char *end;
      errno = 0;
      header_s = strtod(optarg, &end);
      if (end == optarg || *end || errno || !(header_s > 0) || header_s > 1e6)
        return tool_usage_error(HELP_REF,
                                "invalid --header-timeout '%s' (seconds, "
                                "above 0)",
                                optarg);
    } else {
      int rc = tool_source_other(&src, c, argv, HELP_REF, help);
      if (rc >= 0) return rc;
    }
  }
  if (!listen_arg)
    return tool_usage_error(HELP_REF, "--listen ADDR:PORT is required");
  if (optind < argc)
    return tool_usage_error(HELP_REF, "unexpected argument '%s' (ring files "
                            "are followed with --pid or --dir)",
                            argv[optind]);
  int dir_mode = src.dir && !src.pid_arg;
  /* The figures are live: a time window has no meaning for them.  The
   * other filters choose what is exported, by the source layer, which
   * --dir alone does not read through. */
  if (tool_filter_has_time(&src)) {
    tool_filter_free(&src);
    return tool_usage_error(HELP_REF, "--since, --until and --last are not "
                            "for a live exporter (--domain, --event and "
                            "--kind are)");
  }
  if (dir_mode && src.filter) {
    tool_filter_free(&src);
    return tool_usage_error(HELP_REF, "--domain, --event and --kind need "
                            "--pid or a COMMAND, not --dir alone");
  }
  M.numbering = tool_source_numbering(&src);

  /* Listen first: a port in use is reported before a command is run. */
  int usage;
  char shown[INET6_ADDRSTRLEN + 16];
  int fd = metrics_http_listen(listen_arg, &usage, shown, sizeof shown);
  if (fd < 0) {
    if (usage)
      return tool_usage_error(HELP_REF, "invalid --listen '%s' (ADDR:PORT, "
                              "e.g. 127.0.0.1:9464 or [::1]:9464)",
                              listen_arg);
    return TOOL_EXIT_INPUT;
  }

  eventring_callbacks *cb = make_callbacks();
  if (!cb) {
    close(fd);
    tool_error("out of memory");
    return TOOL_EXIT_INPUT;
  }
  int rc;
  struct metrics_http *server = NULL;
  if (!dir_mode) {
    /* --pid or a command: source.c opens it (and says what is wrong); a
     * command with every process of its tree, as stats reads it. */
    src.follow = 1;
    src.multi = tool_source_command_given();
    rc = tool_source_open(&src, 0, argv + optind, HELP_REF);
    if (rc != TOOL_EXIT_OK) goto done;
    M.lock_per_event = 1;
    if (src.multi) M.tree = &src;
    struct target *t =
        src.multi ? NULL : target_new(src.cursor, 0, src.path, src.pid,
                                      src.name);
    if (!t && !src.multi) {
      tool_error("out of memory");
      tool_source_close(&src);
      rc = TOOL_EXIT_INPUT;
      goto done;
    }
    M.targets = t;
  }
  server = metrics_http_start(fd, header_s, render_locked, NULL);
  if (!server) {
    tool_error("metrics: cannot start the HTTP server on %s", shown);
    rc = TOOL_EXIT_INPUT;
    if (!dir_mode) tool_source_close(&src);
    goto done;
  }
  fd = -1; /* the server's now */
  tool_error("serving metrics on http://%s/metrics", shown);

  if (dir_mode) {
    rc = follow_dir(src.dir, (uint64_t)(keep_s * 1e9), cb);
  } else {
    rc = tool_source_read(&src, cb, M.tree ? NULL : M.targets);
    /* The server stops before the cursor goes. */
    metrics_http_stop(server);
    server = NULL;
    tool_source_close(&src);
    M.tree = NULL;
    free(M.by_proc);
  }

done:
  if (server) metrics_http_stop(server);
  if (fd >= 0) close(fd);
  while (M.targets) {
    struct target *t = M.targets;
    M.targets = t->next;
    target_free(t);
  }
  tool_dirscan_free(&D);
  eventring_callbacks_free(cb);
  return rc;
}

#endif /* EVENTRING_HAVE_MICROHTTPD */
