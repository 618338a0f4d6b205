/* trace.c -- `eventring trace`: a ring file as a trace for Perfetto.
 *
 * Each domain becomes one track of one process named after the program
 * (for a file too: the file records it; with several processes,
 * procs.c, each is a process of the trace with its pid, and its domains
 * tracks numbered after the first process's), and a track per thread
 * when several threads held the domain's slot one after the other (a
 * domain_spawn after the slot's events began starts the next thread's
 * track).  A domain's track is named after its thread, "NAME (domain N)",
 * with the thread's real id, when the file records that thread as the
 * slot's holder (doc/FORMAT.md, "Threads"); otherwise "domain N" (an
 * earlier holder of a reused slot: "domain N, thread K") with an id of
 * its own.  Each thread of a shared domain (an OCaml 4 program's
 * threads, all in domain 0) gets a track of its own after the domain's
 * thread-switch markers (doc/FORMAT.md, "Thread switches"): "NAME,
 * thread ID (domain N)", with its kernel thread id, which every event of
 * the thread goes to until the next marker.  Thread ids are unique in
 * the trace.  Runtime phases and user spans become
 * nested slices; runtime counters, user ints and allocation buckets
 * counter tracks (two for alloc events: small and large sizes); and
 * lifecycle, unit and custom events instants (a custom event's payload
 * is an argument, escaped as `dump` prints it).
 * The events go to a writer, fuchsia.c (the default) or json.c; see
 * render.h.
 *
 * Slices and cuts.  A ring is a flight recorder: it may have lost the
 * begin of a slice (the oldest events were overwritten, or tracing
 * started inside a phase) or the events between a begin and its end (a
 * lost-event gap).  A trace viewer shown a dangling begin, an end
 * without a begin or badly nested slices drops or misdraws them, so the
 * track's slices are kept well nested, and every boundary we had to
 * invent is marked with a "cut" argument that says why:
 *
 *   - An end whose begin is not open on its track had its begin cut off.
 *     It becomes a complete slice that opens at the cut ("ring start":
 *     the track's first event; "lost events": the first event after the
 *     gap; "domain start": the first event after the domain's previous
 *     thread terminated), marked with that reason.  Such slices enclose
 *     everything the track showed since the cut, and the k-th of them
 *     opens k nanoseconds before the cut (but after anything before the
 *     cut), so that they nest strictly inside one another and never tie
 *     with the cut's first event, whose order a viewer would then have to
 *     guess.
 *   - At a lost-event gap every open slice is closed at the track's last
 *     timestamp before the gap ("cut": "lost events"): what happened to
 *     it in the gap is unknown.  An instant "lost events" with the count
 *     marks the gap itself.
 *   - An end that does not match the innermost open slice closes the
 *     slices opened inside it first ("cut": "ended out of order"), as
 *     nesting requires; their own ends, when they come, become instants
 *     with the same mark.  Threads sharing a domain without markers (files
 *     of earlier versions) do this.
 *   - An end whose slice is open on another thread's track of the same
 *     domain (a span one thread began and another ended) cannot be drawn:
 *     the slice stays open where it began, the end is an instant marked
 *     "began on another thread", and standard error counts them.
 *   - Slices still open when the domain's thread terminates or when the
 *     trace ends are closed at the track's last timestamp ("cut": "domain
 *     terminated" or "end of trace").
 *
 * Events we invent (the closing ends and the "lost events" instants) also
 * carry "synthetic": true, so that every other event of the output stands
 * for exactly one event of the ring (but for an alloc event's second
 * sample, "alloc 10+ words"): the tests count them against `dump`.
 * Timestamps are the ring's, except that a timestamp below its track's
 * previous one (which a well-formed ring never has) is raised to it, as
 * a track's time must not run backwards.
 *
 * The output is written to a temporary file beside OUT and renamed to OUT
 * once complete, so OUT is never a partial trace; an interrupted run
 * (Ctrl-C, which makes the source stop reading) still completes the file
 * with what was read, closing the open slices as at the end of a trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"

#define HELP_REF "eventring trace --help"

/* Set once, before the writer's header (render.h). */
static struct trace_wallclock trace_wall;

/* The first thread track's number, unless a file has more slots: above
 * every slot eventring writes (its limit of 4096 domains). */
#define THREAD_TRACK_BASE 4096
/* The same when the trace may hold several processes, whose domains are
 * numbered below it (ring_of). */
#define MULTI_THREAD_TRACK_BASE (1 << 20)

/* Room for a name of the ring (127 bytes) with every byte escaped. */
#define NAME_MAX_ESCAPED (4 * 128 + 32)

/* One open slice: a runtime phase or a user span. */
struct slice {
  int user; /* 0: runtime phase, 1: user span */
  int id;
  const char *raw; /* the ring's name, valid for the cursor's life */
};

struct domain {
  int declared; /* its (current) track was given to the writer */
  int shared;   /* that track is a thread's and the domain's both */
  uint64_t first_ts; /* a domain's: its track's first event */
  char holder_name[24]; /* the holder's name the track was given */
  int out;      /* that track's number for the writer, in declaration order */
  uint64_t tid; /* its thread id in the output */
  /* A ring domain's own tracks: threads seen in the slot before the
   * current one, and the current one's domain_spawn (with stretch > 0). */
  unsigned stretch;
  uint64_t spawn_ts;
  int has_ts;
  uint64_t last_ts;
  struct slice *stack; /* open slices, innermost last */
  size_t depth, cap;
  /* Slices closed early by an end out of order, whose own end is still
   * to come (it then becomes an instant, not a second end). */
  struct slice *early;
  size_t nearly, capearly;
  /* The cut before the track's current stretch of events: why ends
   * without a begin have none, and where their slices open. */
  const char *cut_reason;
  int cut_pending;    /* cut_ts is the next event's timestamp */
  uint64_t cut_ts;
  int has_floor;      /* invented begins must come after floor_ts */
  uint64_t floor_ts;
  unsigned norphans;  /* ends without a begin since the cut */
  uint64_t lost;      /* lost events not yet marked by an instant */
  int lost_pending;
};

/* The track of one thread of a shared slot (doc/FORMAT.md, "Thread
 * switches"), known by its ring domain, its host id and kernel tid. */
struct thread_track {
  int domain;
  int64_t thread;
  uint64_t ktid;
  char name[64]; /* as the marker gives it: at most 63 bytes */
  struct domain st;
};

struct trace {
  struct tool_source *src;
  struct trace_writer w;
  void *wself;
  FILE *out;
  uint64_t pid;
  struct domain *doms;
  int ndoms;
  int failed; /* out of memory or a write error: stop reading */
  /* Threads of shared slots: track number base + i is thr[i]; below base
   * a track is the domain of that number.  cur[d] is domain d's track
   * since its last thread-switch marker (-1 or past ncur: its own). */
  int base;
  struct thread_track *thr;
  int nthr, capthr;
  int *cur;
  int ncur;
  uint64_t crossed; /* ends of spans begun on another thread's track */
  int ntracks;      /* tracks given to the writer */
  uint64_t *tids;   /* their thread ids, track by track */
  /* Several processes (procs.c): the ring domains above are virtual,
   * one per domain of each process: the first process's domains are
   * their own numbers, each domain of another gets the next number from
   * next_ring (below base).  vproc/vreal say whose domain a virtual one
   * is (nv entries); rings[p][d] is process p's domain d's (-1: none
   * yet).  cur_proc is the process the writer was last told about, and
   * pdecl says which it was told about at all. */
  int **rings;
  int *nrings;
  int nprocs_mapped;
  int next_ring;
  int *vproc, *vreal;
  int nv;
  int cur_proc;
  unsigned char *pdecl;
  int npdecl;
  uint64_t max_ts;
  char name[NAME_MAX_ESCAPED];     /* the current event's name */
  char name2[NAME_MAX_ESCAPED];    /* a second name (counter tracks) */
  char payload[4 * EVENTRING_MAX_CUSTOM_BYTES + 8];
};

/* ------------------------------------------------------------------ */
/* Names.                                                               */

/* A name of the ring into `buf` (NAME_MAX_ESCAPED bytes) as the tool
 * shows names (tool_put_text), well-formed UTF-8 as it is, spaces as
 * spaces.  An empty or missing name becomes `fallback` and the id. */
static const char *escape_name(char *buf, const char *raw,
                               const char *fallback, int id) {
  if (!raw || !*raw) {
    snprintf(buf, NAME_MAX_ESCAPED, "%s%d", fallback, id);
    return buf;
  }
  return tool_text(buf, NAME_MAX_ESCAPED, raw, TOOL_TEXT_UTF8);
}

/* escape_name() of the file's name for id `id` of kind `k`, or of `raw`
 * when the callback gave it. */
static const char *event_name(char *buf, const struct trace *t,
                              enum tool_name_kind k, int id,
                              const char *raw) {
  if (!raw) raw = tool_file_name(t->src->cursor, k, id);
  return escape_name(buf, raw, tool_name_fallback[k], id);
}

static const char *slice_name(char *buf, const struct slice *s) {
  return escape_name(
      buf, s->raw, tool_name_fallback[s->user ? TOOL_NAME_USER : TOOL_NAME_PHASE],
      s->id);
}

/* ------------------------------------------------------------------ */
/* Emitting.                                                            */

static void arg_str(struct trace_event *ev, const char *key, const char *s) {
  struct trace_arg *a = &ev->args[ev->nargs++];
  a->key = key;
  a->type = TRACE_ARG_STR;
  a->s = s;
  a->len = strlen(s);
}

static void arg_int(struct trace_event *ev, const char *key, int64_t v) {
  struct trace_arg *a = &ev->args[ev->nargs++];
  a->key = key;
  a->type = TRACE_ARG_INT;
  a->i = v;
}

static void arg_uint(struct trace_event *ev, const char *key, uint64_t v) {
  struct trace_arg *a = &ev->args[ev->nargs++];
  a->key = key;
  a->type = TRACE_ARG_UINT;
  a->u = v;
}

static void arg_synthetic(struct trace_event *ev, const char *reason) {
  arg_str(ev, "cut", reason);
  struct trace_arg *a = &ev->args[ev->nargs++];
  a->key = "synthetic";
  a->type = TRACE_ARG_BOOL;
  a->i = 1;
}

/* Sets everything but the writer's track and the thread id, which emit()
 * takes from the track's state. */
static void init_event(struct trace_event *ev, enum trace_ph ph, int domain,
                       uint64_t ts, const char *cat, const char *name) {
  ev->ph = ph;
  ev->track = domain;
  ev->ts = ts;
  ev->end_ts = ts;
  ev->cat = cat;
  ev->name = name;
  ev->nargs = 0;
}

/* The process and the domain in its file of virtual ring domain `v`. */
static int proc_of_ring(const struct trace *t, int v) {
  return v >= 0 && v < t->nv ? t->vproc[v] : 0;
}

static int real_of_ring(const struct trace *t, int v) {
  return v >= 0 && v < t->nv && t->vproc[v] > 0 ? t->vreal[v] : v;
}

/* The pid a process is shown with. */
static uint64_t proc_pid(const struct trace *t, int proc) {
  if (!t->src->multi || proc >= t->src->nprocs) return t->pid;
  pid_t pid = t->src->procs[proc]->pid;
  return pid ? (uint64_t)pid : (uint64_t)proc + 1;
}

static void process_label(const struct tool_source *src, int proc, char *buf,
                          size_t n);

/* Marks process `proc` declared to the writer; returns 1 when it was
 * not yet, 0 when it was, -1 when out of memory. */
static int mark_declared(struct trace *t, int proc) {
  if (proc >= t->npdecl) {
    int n = proc + 16;
    unsigned char *v = realloc(t->pdecl, (size_t)n);
    if (!v) {
      t->failed = 1;
      return -1;
    }
    memset(v + t->npdecl, 0, (size_t)(n - t->npdecl));
    t->pdecl = v;
    t->npdecl = n;
  }
  int first = !t->pdecl[proc];
  t->pdecl[proc] = 1;
  return first;
}

/* Makes process `proc` the writer's current one, declaring it the first
 * time: a track and its events belong to the process current when they
 * are written. */
static void use_proc(struct trace *t, int proc) {
  if (!t->src->multi || proc == t->cur_proc) return;
  int first = mark_declared(t, proc);
  if (first < 0) return;
  char name[NAME_MAX_ESCAPED];
  if (first) process_label(t->src, proc, name, sizeof name);
  t->w.process(t->wself, t->out, proc_pid(t, proc), first ? name : NULL);
  t->cur_proc = proc;
}

/* Records that begin() declared process `proc` and made it current. */
static void use_proc_declared(struct trace *t, int proc) {
  t->cur_proc = proc;
  if (t->src->multi) mark_declared(t, proc);
}

/* The virtual ring domain of `domain` of the process being read (see
 * struct trace); -1 when out of memory or out of numbers (the event is
 * then dropped). */
static int ring_of(struct trace *t, int domain) {
  int proc = t->src->multi ? t->src->proc : 0;
  if (proc == 0 || domain < 0) return domain;
  if (proc >= t->nprocs_mapped) {
    int n = proc + 8;
    int **v = realloc(t->rings, (size_t)n * sizeof *v);
    if (v) t->rings = v;
    int *c = v ? realloc(t->nrings, (size_t)n * sizeof *c) : NULL;
    if (!c) goto fail;
    t->nrings = c;
    for (int i = t->nprocs_mapped; i < n; i++) {
      t->rings[i] = NULL;
      t->nrings[i] = 0;
    }
    t->nprocs_mapped = n;
  }
  if (domain >= t->nrings[proc]) {
    int n = domain + 16;
    int *v = realloc(t->rings[proc], (size_t)n * sizeof *v);
    if (!v) goto fail;
    for (int i = t->nrings[proc]; i < n; i++) v[i] = -1;
    t->rings[proc] = v;
    t->nrings[proc] = n;
  }
  int r = t->rings[proc][domain];
  if (r >= 0) return r;
  if (t->next_ring >= t->base) return -1;
  r = t->next_ring++;
  if (r >= t->nv) {
    int n = r + 64;
    int *p = realloc(t->vproc, (size_t)n * sizeof *p);
    if (p) t->vproc = p;
    int *q = p ? realloc(t->vreal, (size_t)n * sizeof *q) : NULL;
    if (!q) goto fail;
    t->vreal = q;
    for (int i = t->nv; i < n; i++) t->vproc[i] = t->vreal[i] = 0;
    t->nv = n;
  }
  t->vproc[r] = proc;
  t->vreal[r] = domain;
  t->rings[proc][domain] = r;
  return r;
fail:
  t->failed = 1;
  return -1;
}

static int ring_domain(const struct trace *t, int track);

static struct domain *state(struct trace *t, int domain);

static void emit(struct trace *t, struct trace_event *ev) {
  if (t->failed) return;
  use_proc(t, proc_of_ring(t, ring_domain(t, ev->track)));
  /* The event's track is declared: its state is there. */
  const struct domain *d = state(t, ev->track);
  ev->track = d->out;
  ev->tid = d->tid;
  t->w.event(t->wself, t->out, ev);
  if (ferror(t->out)) t->failed = 1;
}

/* Whether thread id `tid` went to a track already. */
static int tid_used(const struct trace *t, uint64_t tid) {
  for (int i = 0; i < t->ntracks; i++)
    if (t->tids[i] == tid) return 1;
  return 0;
}

/* Gives `d` the writer's next track, named `name`, with thread id `tid`
 * unless another track has it (a thread that moved from slot to slot,
 * or 0), then `fallback`, else an id past every real one (at most 2^22
 * on Linux): ids are unique per track. */
static void give_track(struct trace *t, struct domain *d, uint64_t tid,
                       uint64_t fallback, const char *name) {
  /* A track named again (a thread's new name, its id once known) keeps
   * its number and thread id: viewers take the last name given. */
  if (d->declared) {
    t->w.track(t->wself, t->out, d->out, d->tid, name);
    return;
  }
  uint64_t *tids = realloc(t->tids, (size_t)(t->ntracks + 1) * sizeof *tids);
  if (!tids) {
    t->failed = 1;
    return;
  }
  t->tids = tids;
  if (!tid || tid_used(t, tid)) tid = fallback;
  for (uint64_t k = 1; tid_used(t, tid); k++)
    tid = (UINT64_C(1) << 32) + (fallback << 16) + k;
  d->declared = 1;
  d->out = t->ntracks;
  d->tid = tid;
  t->tids[t->ntracks++] = tid;
  t->w.track(t->wself, t->out, d->out, tid, name);
}

/* Makes `d` share the declared track `with`: one thread, one track. */
static void share_track(struct domain *d, struct domain *with) {
  d->shared = with->shared = 1;
  d->declared = 1;
  d->out = with->out;
  d->tid = with->tid;
}

static void declare_thread(struct trace *t, int track, struct thread_track *h) {
  char esc[NAME_MAX_ESCAPED], name[NAME_MAX_ESCAPED + 64];
  use_proc(t, proc_of_ring(t, h->domain));
  /* The slot's holder, whose track the domain's is (the thread that
   * started tracing, in an OCaml program the main one), keeps that
   * track and its real tid, renamed after the thread. */
  if (!h->st.declared && h->domain >= 0 && h->domain < t->ndoms &&
      t->doms[h->domain].declared && t->doms[h->domain].tid == h->ktid)
    share_track(&h->st, &t->doms[h->domain]);
  if (h->thread >= 0)
    snprintf(name, sizeof name, "%s%sthread %" PRId64 " (domain %d)",
             h->name[0] ? escape_name(esc, h->name, "", 0) : "",
             h->name[0] ? ", " : "", h->thread, real_of_ring(t, h->domain));
  else
    snprintf(name, sizeof name, "%s%stid %" PRIu64 " (domain %d)",
             h->name[0] ? escape_name(esc, h->name, "", 0) : "",
             h->name[0] ? ", " : "", h->ktid, real_of_ring(t, h->domain));
  give_track(t, &h->st, h->ktid, (uint64_t)track + 1, name);
}

/* Gives the current thread of ring domain `domain` its track, whose
 * first event is at `ts`: named after the thread the file records as the
 * slot's holder when that thread is this one (its domain_spawn is the
 * one that began this stretch, or, for the first stretch, came before
 * its first event), else after the domain. */
/* Whether the file records the thread of ring domain `domain`'s track
 * `d`, whose first event is at `ts`, as the slot's holder, into *th. */
static int holder(struct trace *t, int domain, const struct domain *d,
                  uint64_t ts, eventring_slot_thread *th) {
  int proc = proc_of_ring(t, domain), real = real_of_ring(t, domain);
  const eventring_cursor *c = t->src->multi && proc < t->src->nprocs
                                  ? t->src->procs[proc]->cursor
                                  : t->src->cursor;
  return c && eventring_cursor_slot_thread(c, real, th) == 1 &&
         th->since != UINT64_MAX &&
         (d->stretch ? th->since == d->spawn_ts : th->since <= ts);
}

static void declare_domain(struct trace *t, int domain, struct domain *d,
                           uint64_t ts) {
  int proc = proc_of_ring(t, domain), real = real_of_ring(t, domain);
  use_proc(t, proc);
  eventring_slot_thread th;
  int known = holder(t, domain, d, ts, &th);
  d->first_ts = ts;
  /* The holder known already by its own track (a marker came first):
   * the domain's events are its. */
  for (int i = 0; known && i < t->nthr; i++)
    if (t->thr[i].domain == domain && t->thr[i].ktid == (uint64_t)th.tid &&
        t->thr[i].st.declared) {
      share_track(d, &t->thr[i].st);
      return;
    }
  char name[NAME_MAX_ESCAPED + 32], esc[NAME_MAX_ESCAPED];
  if (known)
    snprintf(name, sizeof name, "%s (domain %d)",
             escape_name(esc, th.name, "thread ", (int)th.tid), real);
  else if (d->stretch)
    snprintf(name, sizeof name, "domain %d, thread %u", real,
             d->stretch + 1);
  else
    snprintf(name, sizeof name, "domain %d", real);
  if (known) memcpy(d->holder_name, th.name, sizeof d->holder_name);
  /* tid 0 means "no thread" to viewers: domain + 1 without a real one. */
  give_track(t, d, known ? (uint64_t)th.tid : 0, (uint64_t)domain + 1, name);
}

/* Names track `d` of ring domain `domain` again when its thread was
 * renamed since it was declared: the file names a slot's holder after
 * the thread's name at its exit or the file's end (a main thread named
 * in main() after tracing began before it), which a live trace reads
 * only at the end. */
static void rename_domain(struct trace *t, int domain, struct domain *d) {
  eventring_slot_thread th;
  if (d->shared || !holder(t, domain, d, d->first_ts, &th) ||
      d->tid != (uint64_t)th.tid ||
      !strncmp(th.name, d->holder_name, sizeof d->holder_name))
    return;
  memcpy(d->holder_name, th.name, sizeof d->holder_name);
  char name[NAME_MAX_ESCAPED + 32], esc[NAME_MAX_ESCAPED];
  snprintf(name, sizeof name, "%s (domain %d)",
           escape_name(esc, th.name, "thread ", (int)th.tid),
           real_of_ring(t, domain));
  use_proc(t, proc_of_ring(t, domain));
  give_track(t, d, 0, 0, name);
}

/* The state of track `domain` (a domain, or a thread's track), not
 * necessarily declared; NULL when out of memory. */
static struct domain *state(struct trace *t, int domain) {
  if (domain < 0) return NULL;
  struct domain *d;
  if (t->nthr && domain >= t->base) {
    d = &t->thr[domain - t->base].st;
  } else {
    if (domain >= t->ndoms) {
      int n = domain + 16;
      struct domain *v = realloc(t->doms, (size_t)n * sizeof *v);
      if (!v) {
        t->failed = 1;
        return NULL;
      }
      memset(v + t->ndoms, 0, (size_t)(n - t->ndoms) * sizeof *v);
      t->doms = v;
      t->ndoms = n;
    }
    d = &t->doms[domain];
  }
  if (!d->cut_reason) {
    d->cut_reason = "ring start";
    d->cut_pending = 1;
  }
  return d;
}

/* The state of track `domain`, declared, its first event at `ts`; NULL
 * when out of memory. */
static struct domain *dom(struct trace *t, int domain, uint64_t ts) {
  struct domain *d = state(t, domain);
  if (d && !d->declared) {
    if (t->nthr && domain >= t->base)
      declare_thread(t, domain, &t->thr[domain - t->base]);
    else
      declare_domain(t, domain, d, ts);
  }
  return t->failed ? NULL : d;
}

/* The track that ring domain `domain`'s events go to now: the track of
 * the thread named by its last marker, or its own. */
static int route(const struct trace *t, int domain) {
  return domain >= 0 && domain < t->ncur && t->cur[domain] >= 0
             ? t->cur[domain]
             : domain;
}

/* The ring domain whose events track `track` shows. */
static int ring_domain(const struct trace *t, int track) {
  return t->nthr && track >= t->base ? t->thr[track - t->base].domain : track;
}

static int push(struct trace *t, struct slice **v, size_t *n, size_t *cap,
                struct slice s) {
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 16;
    struct slice *p = realloc(*v, c * sizeof *p);
    if (!p) {
      t->failed = 1;
      return 0;
    }
    *v = p;
    *cap = c;
  }
  (*v)[(*n)++] = s;
  return 1;
}

/* Closes the innermost open slice at the track's last timestamp with an
 * invented end marked `reason`. */
static void close_top(struct trace *t, int domain, struct domain *d,
                      const char *reason) {
  struct slice *s = &d->stack[--d->depth];
  struct trace_event ev;
  init_event(&ev, TRACE_END, domain, d->last_ts,
             s->user ? "user" : "runtime", slice_name(t->name2, s));
  arg_synthetic(&ev, reason);
  emit(t, &ev);
}

static void close_all(struct trace *t, int domain, struct domain *d,
                      const char *reason) {
  while (d->depth > 0) close_top(t, domain, d, reason);
}

static void lost_instant(struct trace *t, int domain, struct domain *d,
                         uint64_t ts) {
  struct trace_event ev;
  init_event(&ev, TRACE_INSTANT, domain, ts, "eventring", "lost events");
  arg_uint(&ev, "count", d->lost);
  int proc = proc_of_ring(t, ring_domain(t, domain));
  arg_str(&ev, "unit",
          tool_lost_unit(t->src->multi && proc < t->src->nprocs
                             ? t->src->procs[proc]->cursor
                             : t->src->cursor));
  arg_synthetic(&ev, "lost events");
  emit(t, &ev);
  d->lost = 0;
  d->lost_pending = 0;
}

/* Called first for every event: declares the track, settles a pending
 * cut at this event, marks a pending gap, and returns the domain's state
 * with *ts made non-decreasing; NULL when the event is to be dropped. */
static struct domain *at(struct trace *t, int domain, uint64_t *ts) {
  struct domain *d = dom(t, domain, *ts);
  if (!d) return NULL;
  if (d->has_ts && *ts < d->last_ts) *ts = d->last_ts;
  d->has_ts = 1;
  d->last_ts = *ts;
  if (*ts > t->max_ts) t->max_ts = *ts;
  if (d->cut_pending) {
    d->cut_pending = 0;
    d->cut_ts = *ts;
    d->norphans = 0;
  }
  if (d->lost_pending) lost_instant(t, domain, d, *ts);
  return d;
}

static int go_on(struct trace *t) { return !t->failed; }

/* ------------------------------------------------------------------ */
/* Slices.                                                              */

static int on_slice_begin(struct trace *t, int domain, uint64_t ts,
                          struct slice s) {
  domain = route(t, ring_of(t, domain));
  struct domain *d = at(t, domain, &ts);
  if (!d) return go_on(t);
  if (!push(t, &d->stack, &d->depth, &d->cap, s)) return 0;
  struct trace_event ev;
  init_event(&ev, TRACE_BEGIN, domain, ts, s.user ? "user" : "runtime",
             slice_name(t->name, &s));
  emit(t, &ev);
  return go_on(t);
}

static int same(const struct slice *a, const struct slice *b) {
  return a->user == b->user && a->id == b->id;
}

/* Whether a slice like `s` is open on a track of another thread of the
 * same shared slot as thread track `track`. */
static int open_elsewhere(const struct trace *t, int track,
                          const struct slice *s) {
  if (!t->nthr || track < t->base) return 0;
  int ring = t->thr[track - t->base].domain;
  for (int i = 0; i < t->nthr; i++) {
    const struct thread_track *h = &t->thr[i];
    if (t->base + i == track || h->domain != ring) continue;
    for (size_t k = 0; k < h->st.depth; k++)
      if (same(&h->st.stack[k], s)) return 1;
  }
  return 0;
}

static int on_slice_end(struct trace *t, int domain, uint64_t ts,
                        struct slice s) {
  domain = route(t, ring_of(t, domain));
  struct domain *d = at(t, domain, &ts);
  if (!d) return go_on(t);
  const char *cat = s.user ? "user" : "runtime";
  struct trace_event ev;

  /* The innermost open slice of the same kind and id, if any. */
  size_t i = d->depth;
  while (i > 0 && !same(&d->stack[i - 1], &s)) i--;
  if (i > 0) {
    /* Slices opened inside it end first: nesting requires it. */
    while (d->depth > i) {
      struct slice inner = d->stack[d->depth - 1];
      close_top(t, domain, d, "ended out of order");
      if (!push(t, &d->early, &d->nearly, &d->capearly, inner)) return 0;
    }
    d->depth--;
    init_event(&ev, TRACE_END, domain, ts, cat, slice_name(t->name, &s));
    emit(t, &ev);
    return go_on(t);
  }

  /* The end of a slice closed early: an instant, with the mark. */
  for (size_t k = d->nearly; k > 0; k--) {
    if (!same(&d->early[k - 1], &s)) continue;
    d->early[k - 1] = d->early[--d->nearly];
    init_event(&ev, TRACE_INSTANT, domain, ts, cat,
               slice_name(t->name, &s));
    arg_str(&ev, "cut", "ended out of order");
    emit(t, &ev);
    return go_on(t);
  }

  /* It began on another thread's track: a thread cannot end what
   * another began, so the slice stays open there, and this end is an
   * instant here, marked and counted (reported at the end). */
  if (open_elsewhere(t, domain, &s)) {
    t->crossed++;
    init_event(&ev, TRACE_INSTANT, domain, ts, cat, slice_name(t->name, &s));
    arg_str(&ev, "cut", "began on another thread");
    emit(t, &ev);
    return go_on(t);
  }

  /* Its begin was cut off: the slice opens at the cut.  It began before
   * every slice still open, which therefore end here too. */
  while (d->depth > 0) {
    struct slice inner = d->stack[d->depth - 1];
    close_top(t, domain, d, "ended out of order");
    if (!push(t, &d->early, &d->nearly, &d->capearly, inner)) return 0;
  }
  d->norphans++;
  uint64_t begin = d->cut_ts >= d->norphans ? d->cut_ts - d->norphans : 0;
  if (d->has_floor && begin <= d->floor_ts)
    begin = d->floor_ts < d->cut_ts ? d->floor_ts + 1 : d->cut_ts;
  init_event(&ev, TRACE_COMPLETE, domain, begin, cat,
             slice_name(t->name, &s));
  ev.end_ts = ts;
  arg_str(&ev, "cut", d->cut_reason);
  emit(t, &ev);
  return go_on(t);
}

static struct slice phase_slice(const struct trace *t, int phase) {
  struct slice s = {0, phase,
                    tool_file_name(t->src->cursor, TOOL_NAME_PHASE, phase)};
  return s;
}

static int on_begin(void *data, int domain, uint64_t ts, int phase) {
  return on_slice_begin(data, domain, ts, phase_slice(data, phase));
}

static int on_end(void *data, int domain, uint64_t ts, int phase) {
  return on_slice_end(data, domain, ts, phase_slice(data, phase));
}

static int on_user_span(void *data, int domain, uint64_t ts, int id,
                        const char *name, int is_end) {
  struct slice s = {1, id, name};
  return is_end ? on_slice_end(data, domain, ts, s)
                : on_slice_begin(data, domain, ts, s);
}

/* ------------------------------------------------------------------ */
/* Counters and instants.                                               */

/* A counter track is per process in the output formats, so its name
 * says which domain's counter it is. */
static const char *counter_name(struct trace *t, const char *escaped,
                                int domain) {
  snprintf(t->name2, sizeof t->name2, "%s (domain %d)", escaped,
           real_of_ring(t, ring_domain(t, domain)));
  return t->name2;
}

static int on_counter(void *data, int domain, uint64_t ts, int counter,
                      uint64_t value) {
  struct trace *t = data;
  domain = route(t, ring_of(t, domain));
  if (!at(t, domain, &ts)) return go_on(t);
  struct trace_event ev;
  const char *n = event_name(t->name, t, TOOL_NAME_COUNTER, counter, NULL);
  init_event(&ev, TRACE_COUNTER, domain, ts, "counter",
             counter_name(t, n, domain));
  arg_uint(&ev, "value", value);
  emit(t, &ev);
  return go_on(t);
}

static int on_user_int(void *data, int domain, uint64_t ts, int id,
                       const char *name, int64_t value) {
  struct trace *t = data;
  domain = route(t, ring_of(t, domain));
  if (!at(t, domain, &ts)) return go_on(t);
  struct trace_event ev;
  init_event(&ev, TRACE_COUNTER, domain, ts, "user",
             counter_name(t, event_name(t->name, t, TOOL_NAME_USER, id, name),
                          domain));
  arg_int(&ev, "value", value);
  emit(t, &ev);
  return go_on(t);
}

/* The buckets' sizes, from the rule of doc/FORMAT.md. */
static const char *const bucket_names[EVENTRING_ALLOC_BUCKETS] = {
    "0 words",     "1 word",      "2 words",     "3 words",
    "4 words",     "5 words",     "6 words",     "7 words",
    "8 words",     "9 words",     "10-19 words", "20-29 words",
    "30-39 words", "40-49 words", "50-59 words", "60-69 words",
    "70-79 words", "80-89 words", "90-99 words", "100+ words"};

/* An alloc event is two counter samples, the small sizes and the large
 * ones, each a counter track of ten series: the Fuchsia format allows 15
 * arguments to an event, and two charts of ten read better than one of
 * twenty anyway. */
static int on_alloc(void *data, int domain, uint64_t ts,
                    const uint64_t *buckets) {
  struct trace *t = data;
  domain = route(t, ring_of(t, domain));
  if (!at(t, domain, &ts)) return go_on(t);
  static const char *const part[2] = {"alloc <10 words", "alloc 10+ words"};
  for (int p = 0; p < 2; p++) {
    struct trace_event ev;
    init_event(&ev, TRACE_COUNTER, domain, ts, "alloc",
               counter_name(t, part[p], domain));
    for (int i = 10 * p; i < 10 * p + 10; i++)
      arg_uint(&ev, bucket_names[i], buckets[i]);
    emit(t, &ev);
  }
  return go_on(t);
}

/* A domain_spawn at `ts` in ring domain `domain`: a thread takes the
 * slot.  When the slot's events began before it, they were another
 * thread's: its track ends here (what it left open closed, its pending
 * gap marked) and the new thread gets a track of its own; the threads
 * that shared the slot before are left behind with it. */
static void new_thread(struct trace *t, int domain, uint64_t ts) {
  struct domain *d = state(t, domain);
  if (!d) return;
  if (domain < t->ncur) t->cur[domain] = -1;
  if (!d->declared || !d->has_ts) {
    /* The slot's first stretch begins with this spawn. */
    if (!d->declared) d->spawn_ts = ts;
    return;
  }
  close_all(t, domain, d, "domain terminated");
  if (d->lost_pending) lost_instant(t, domain, d, d->last_ts);
  d->nearly = 0;
  d->cut_reason = "domain start";
  d->cut_pending = 1;
  d->has_floor = 1;
  d->floor_ts = d->last_ts;
  d->declared = 0;
  d->shared = 0;
  d->stretch++;
  d->spawn_ts = ts;
}

static int on_lifecycle(void *data, int domain, uint64_t ts, int kind,
                        int64_t value, int has_data) {
  struct trace *t = data;
  tool_source_lifecycle(t->src, kind);
  int ring = ring_of(t, domain);
  if (kind == EVENTRING_LIFECYCLE_DOMAIN_SPAWN && ring >= 0)
    new_thread(t, ring, ts);
  domain = route(t, ring);
  struct domain *d = at(t, domain, &ts);
  if (!d) return go_on(t);
  struct trace_event ev;
  init_event(&ev, TRACE_INSTANT, domain, ts, "lifecycle",
             event_name(t->name, t, TOOL_NAME_LIFECYCLE, kind, NULL));
  if (has_data) arg_int(&ev, "value", value);
  emit(t, &ev);
  if (kind == EVENTRING_LIFECYCLE_DOMAIN_TERMINATE) {
    /* The thread is gone; the next one to take the slot starts afresh. */
    close_all(t, domain, d, "domain terminated");
    d->nearly = 0;
    d->cut_reason = "domain start";
    d->cut_pending = 1;
    d->has_floor = 1;
    d->floor_ts = ts;
    /* The slot's next events are no thread's until a marker says. */
    if (ring >= 0 && ring < t->ncur) t->cur[ring] = -1;
  }
  return go_on(t);
}

static int on_user_unit(void *data, int domain, uint64_t ts, int id,
                        const char *name) {
  struct trace *t = data;
  domain = route(t, ring_of(t, domain));
  if (!at(t, domain, &ts)) return go_on(t);
  struct trace_event ev;
  init_event(&ev, TRACE_INSTANT, domain, ts, "user",
             event_name(t->name, t, TOOL_NAME_USER, id, name));
  emit(t, &ev);
  return go_on(t);
}

static int on_user_custom(void *data, int domain, uint64_t ts, int id,
                          const char *name, const void *bytes, size_t len) {
  struct trace *t = data;
  domain = route(t, ring_of(t, domain));
  if (!at(t, domain, &ts)) return go_on(t);
  /* The payload as `dump` prints it, without the quotes. */
  size_t n = tool_ocaml_string_str(t->payload, sizeof t->payload, bytes, len);
  struct trace_event ev;
  init_event(&ev, TRACE_INSTANT, domain, ts, "user",
             event_name(t->name, t, TOOL_NAME_USER, id, name));
  struct trace_arg *a = &ev.args[ev.nargs++];
  a->key = "payload";
  a->type = TRACE_ARG_STR;
  a->s = t->payload;
  a->len = n;
  emit(t, &ev);
  return go_on(t);
}

/* A gap on `track`: what was open may have ended in it.  Closes it where
 * the track's events stop, and opens what ends later at the first event
 * after. */
static void cut_by_loss(struct trace *t, int track, struct domain *d) {
  if (d->has_ts) close_all(t, track, d, "lost events");
  d->depth = 0;
  d->nearly = 0;
  d->cut_reason = "lost events";
  d->cut_pending = 1;
  d->has_floor = d->has_ts;
  d->floor_ts = d->last_ts;
}

static int on_lost(void *data, int domain, uint64_t count) {
  struct trace *t = data;
  tool_source_lost(t->src, domain, count);
  domain = ring_of(t, domain);
  /* The track is declared at the first event after the gap (or at the
   * end of the trace), when the thread it belongs to is known. */
  struct domain *d = state(t, domain);
  if (!d) return go_on(t);
  cut_by_loss(t, domain, d);
  d->lost += count;
  d->lost_pending = 1;
  /* The gap may hide thread switches: every thread of the slot is cut,
   * and its events are no thread's until the next marker. */
  for (int i = 0; i < t->nthr; i++)
    if (t->thr[i].domain == domain && t->thr[i].st.declared)
      cut_by_loss(t, t->base + i, &t->thr[i].st);
  if (domain < t->ncur) t->cur[domain] = -1;
  return go_on(t);
}

/* A thread-switch marker: the domain's events are now this thread's,
 * on a track of its own (declared at its first event). */
static int on_thread(void *data, int domain, uint64_t ts, int64_t thread,
                     uint64_t ktid, const char *name, size_t len) {
  struct trace *t = data;
  (void)ts;
  domain = ring_of(t, domain);
  if (domain < 0) return go_on(t);
  /* One thread, one track: a thread known first by its kernel tid alone
   * (id -1: its first events came before the host could tell its id, as
   * the instrumented OCaml runtime's may) is the same thread once its id
   * is known. */
  int i = 0;
  while (i < t->nthr &&
         !(t->thr[i].domain == domain && t->thr[i].ktid == ktid &&
           (t->thr[i].thread == thread || t->thr[i].thread < 0 || thread < 0)))
    i++;
  if (i == t->nthr) {
    if (t->nthr == t->capthr) {
      int c = t->capthr ? 2 * t->capthr : 8;
      struct thread_track *p = realloc(t->thr, (size_t)c * sizeof *p);
      if (!p) {
        t->failed = 1;
        return 0;
      }
      t->thr = p;
      t->capthr = c;
    }
    memset(&t->thr[i], 0, sizeof t->thr[i]);
    t->thr[i].domain = domain;
    t->thr[i].thread = thread;
    t->thr[i].ktid = ktid;
    t->nthr++;
  }
  /* The id once known, and the thread's latest name; a track declared
   * already is named again (viewers take the last name given). */
  struct thread_track *h = &t->thr[i];
  int renamed = 0;
  if (h->thread < 0 && thread >= 0) {
    h->thread = thread;
    renamed = 1;
  }
  if (len >= sizeof h->name) len = sizeof h->name - 1;
  if (len && (strlen(h->name) != len || memcmp(h->name, name, len) != 0)) {
    memcpy(h->name, name, len);
    h->name[len] = '\0';
    renamed = 1;
  }
  if (renamed && h->st.declared) declare_thread(t, t->base + i, h);
  if (domain >= t->ncur) {
    int n = domain + 16;
    int *p = realloc(t->cur, (size_t)n * sizeof *p);
    if (!p) {
      t->failed = 1;
      return 0;
    }
    for (int k = t->ncur; k < n; k++) p[k] = -1;
    t->cur = p;
    t->ncur = n;
  }
  t->cur[domain] = t->base + i;
  return go_on(t);
}

/* Closes what is still open, track by track, and marks the gaps no
 * event followed. */
static void finish_tracks(struct trace *t) {
  for (int i = 0; i < t->ndoms; i++) {
    struct domain *d = &t->doms[i];
    if (!d->declared && d->lost_pending) dom(t, i, t->max_ts);
    if (!d->declared) continue;
    if (d->has_ts) close_all(t, i, d, "end of trace");
    if (d->lost_pending)
      lost_instant(t, i, d, d->has_ts ? d->last_ts : t->max_ts);
    rename_domain(t, i, d);
  }
  for (int i = 0; i < t->nthr; i++) {
    struct domain *d = &t->thr[i].st;
    if (d->declared && d->has_ts) close_all(t, t->base + i, d, "end of trace");
  }
}

/* ------------------------------------------------------------------ */
/* The output file.                                                     */

/* The name the process is shown with: the program's (the spawned
 * command's, a live process's, or the one the file records), else
 * "pid N", else the file's name. */
static void process_name(const struct tool_source *src, char *buf,
                         size_t n) {
  if (src->name[0]) {
    escape_name(buf, src->name, "pid ", (int)src->pid);
    return;
  }
  const char *program = eventring_cursor_program(src->cursor);
  if (program && *program) {
    escape_name(buf, program, "pid ", (int)src->pid);
    return;
  }
  if (src->pid) {
    snprintf(buf, n, "pid %ld", (long)src->pid);
    return;
  }
  const char *base = strrchr(src->path, '/');
  escape_name(buf, base ? base + 1 : src->path, "trace", 0);
}

/* The name process `proc` of a multi source is shown with: its program's
 * as its file records it, else the spawned command's (for the first),
 * else "pid N", else the file's name. */
static void process_label(const struct tool_source *src, int proc, char *buf,
                          size_t n) {
  const struct tool_proc *p = src->procs[proc];
  if (p->name[0]) {
    escape_name(buf, p->name, "pid ", (int)p->pid);
    return;
  }
  if (proc == 0 && src->name[0]) {
    escape_name(buf, src->name, "pid ", (int)p->pid);
    return;
  }
  if (p->pid) {
    snprintf(buf, n, "pid %ld", (long)p->pid);
    return;
  }
  const char *base = strrchr(p->path, '/');
  escape_name(buf, base ? base + 1 : p->path, "trace", 0);
}

static void help(void) {
  printf(
      "Usage: eventring trace [OPTION]... -o OUT FILE.events...\n"
      "   or: eventring trace [OPTION]... -o OUT --pid PID [--dir DIR]\n"
      "   or: eventring trace [OPTION]... -o OUT --dir DIR\n"
      "   or: eventring trace [OPTION]... -o OUT -- COMMAND [ARG]...\n"
      "Write the events of a ring file as a trace that Perfetto opens\n"
      "(https://ui.perfetto.dev): one track per domain, GC phases and user\n"
      "spans as nested slices, counters as counter tracks, other events as\n"
      "instants.  Several files, a directory or a command's process tree "
      "give\n"
      "one process per file, each with its pid, on one time axis.\n"
      "\n"
      "Options:\n"
      "  -o OUT, --output OUT\n"
      "                 write the trace to OUT ('-': standard output, not "
      "with a\n"
      "                 COMMAND); every operand is a ring file to read\n"
      "  --format FMT   fuchsia (the compact binary Fuchsia trace format) or\n"
      "                 json (Chrome JSON trace events); by default the\n"
      "                 extension of OUT says: .fxt fuchsia, .json json\n"
      TOOL_HELP_PID_DIR "\n"
      "  -f, --follow   keep reading until the writing process has exited\n"
      TOOL_HELP_WAIT
      TOOL_HELP_DRAIN
      TOOL_HELP_OCAML5X
      TOOL_HELP_FILTERS_HEAD
      "                 (see eventring(1), FILTERS)\n"
      "  -h, --help     print this help and exit\n"
      "\n"
      "Another extension of OUT, or '-', needs --format; a binary trace is\n"
      "never written to a terminal, and OUT is never a ring file (it is\n"
      "written whole, or left as it was).  A COMMAND keeps standard output and\n"
      "error to itself.  Slices whose begin or end the ring lost are closed\n"
      "or opened at the cut and carry an argument \"cut\" that says why.\n"
      "Exit status: 0 success, 1 unreadable input or unwritable output, 2 "
      "bad usage.\n"
      "See eventring(1).\n");
}

enum format { FMT_NONE, FMT_FUCHSIA, FMT_JSON };
static const char *const format_names[] = {"", "fuchsia", "json"};

/* The trace format the extension of `path` stands for (output.c),
 * FMT_NONE for any other. */
static enum format format_of(const char *path) {
  switch (tool_format_of(path)) {
  case TOOL_FORMAT_FUCHSIA: return FMT_FUCHSIA;
  case TOOL_FORMAT_JSON: return FMT_JSON;
  default: return FMT_NONE;
  }
}

/* `trace` without -o, operands at argv[optind]...: the form that took
 * OUT as its first operand is refused with the command to type instead
 * (concrete when that operand cannot be a ring file to read). */
static int old_form(int argc, char **argv) {
  if (optind >= argc)
    return tool_usage_error(HELP_REF, "no output file given (-o OUT)");
  const char *first = argv[optind];
  if (format_of(first) == FMT_NONE || tool_output_is_ring(first))
    return tool_usage_error(HELP_REF, "no output file given: write "
                                      "'eventring trace -o OUT.fxt %s%s'",
                            first, optind + 1 < argc ? " ..." : "");
  return tool_usage_error(HELP_REF, "trace takes its output with -o, and "
                                    "reads every operand: write 'eventring "
                                    "trace -o %s %s%s'",
                          first,
                          optind + 1 < argc ? argv[optind + 1] : "FILE",
                          optind + 2 < argc ? " ..." : "");
}

int tool_trace(int argc, char **argv) {
  enum { OPT_FORMAT = TOOL_OPT_OWN };
  static const struct option longopts[] = {
      TOOL_SOURCE_OPTIONS,
      TOOL_FILTER_OPTIONS,
      TOOL_OUTPUT_OPTION,
      {"format", required_argument, NULL, OPT_FORMAT},
      {NULL, 0, NULL, 0},
  };
  struct tool_source src;
  memset(&src, 0, sizeof src);
  enum format format = FMT_NONE;
  const char *outpath = NULL;
  int c;
  while ((c = tool_getopt(argc, argv, ":fho:", longopts)) != -1) {
    if (c == OPT_FORMAT) {
      if (!strcmp(optarg, "json"))
        format = FMT_JSON;
      else if (!strcmp(optarg, "fuchsia"))
        format = FMT_FUCHSIA;
      else
        return tool_usage_error(HELP_REF,
                                "unknown format '%s' (fuchsia or json)",
                                optarg);
    } else if (c == 'o') {
      outpath = optarg;
    } else {
      int rc = tool_source_other(&src, c, argv, HELP_REF, help);
      if (rc >= 0) return rc;
    }
  }
  if (!outpath) return old_form(argc, argv);
  if (!*outpath) return tool_usage_error(HELP_REF, "empty output file name");
  int to_stdout = !strcmp(outpath, "-");

  /* The name says what the file holds: a .json that is Fuchsia inside
   * would mislead every tool that opens it. */
  enum format ext = to_stdout ? FMT_NONE : format_of(outpath);
  if (format == FMT_NONE && ext == FMT_NONE)
    return to_stdout ? tool_usage_error(HELP_REF,
                                        "standard output needs --format "
                                        "fuchsia or --format json")
                     : tool_usage_error(HELP_REF,
                                        "cannot tell the format of '%s' "
                                        "(give --format fuchsia or json, or "
                                        "name it .fxt or .json)",
                                        outpath);
  if (format != FMT_NONE && ext != FMT_NONE && format != ext)
    return tool_usage_error(HELP_REF,
                            "--format %s does not match the extension of "
                            "'%s' (%s)",
                            format_names[format], outpath, format_names[ext]);
  if (format == FMT_NONE) format = ext;
  int json = format == FMT_JSON;

  /* A regular file (or a new one) is written beside and renamed
   * (output.c); a ring file, which every operand is, is refused. */
  if (tool_output_is_input(outpath, argv + optind, argc - optind))
    return tool_usage_error(HELP_REF, "-o %s is one of the ring files read",
                            outpath);
  int rc = tool_output_open(outpath, json ? 0 : TOOL_OUTPUT_BINARY, HELP_REF);
  if (rc != TOOL_EXIT_OK) return rc;

  src.multi = 1;
  rc = tool_source_open(&src, argc - optind, argv + optind, HELP_REF);
  if (rc != TOOL_EXIT_OK) return rc;

  struct trace *t = calloc(1, sizeof *t);
  static const struct tool_handlers handlers = {
      on_begin,     on_end,      on_counter,   on_alloc,       on_lifecycle,
      on_user_unit, on_user_int, on_user_span, on_user_custom, on_lost,
      on_thread, NULL};
  eventring_callbacks *cb = tool_callbacks_new(&handlers);
  if (t) t->wself = json ? trace_json_new(&t->w, &trace_wall)
                    : trace_fuchsia_new(&t->w, &trace_wall);
  if (!t || !cb || !t->wself) {
    tool_error("out of memory");
    if (t && t->wself) t->w.free(t->wself);
    free(t);
    eventring_callbacks_free(cb);
    tool_source_close(&src);
    return TOOL_EXIT_INPUT;
  }
  t->src = &src;
  t->pid = src.pid ? (uint64_t)src.pid : 1;
  /* Thread tracks are numbered after every slot a file can have. */
  t->base = eventring_cursor_max_domains(src.cursor);
  if (t->base < THREAD_TRACK_BASE) t->base = THREAD_TRACK_BASE;
  if (src.nprocs) t->pid = proc_pid(t, 0);
  /* The domains of other processes come after every domain of the
   * first, and their thread tracks after all of them. */
  t->next_ring = eventring_cursor_max_domains(src.cursor);
  if (t->next_ring < 0) t->next_ring = 0;
  if (src.multi) t->base = MULTI_THREAD_TRACK_BASE;

  t->out = stdout;
  /* One process is named as it always was; in a trace of several each
   * is named after its program. */
  char pname[NAME_MAX_ESCAPED];
  if (src.nprocs > 1)
    process_label(&src, 0, pname, sizeof pname);
  else
    process_name(&src, pname, sizeof pname);
  /* One offset for the whole trace, the first file's (render.h). */
  eventring_wallclock wc;
  if (eventring_cursor_wallclock(src.cursor, EVENTRING_WALLCLOCK_START,
                                 &wc) == 0)
    trace_wall = (struct trace_wallclock){1, wc.wall - (int64_t)wc.ts,
                                          wc.wall};
  t->w.begin(t->wself, t->out, t->pid, pname);
  use_proc_declared(t, 0); /* begin() declared the first process */

  /* A read error keeps what was read: the trace up to the bad event is
   * still worth having, and the error line says it is incomplete. */
  rc = tool_source_read(&src, cb, t);
  finish_tracks(t);
  t->w.end(t->wself, t->out);
  tool_source_lost_summary(&src, stderr);
  if (t->crossed)
    fprintf(stderr,
            "eventring trace: %" PRIu64 " span%s ended on another thread than "
            "the one that began %s (shown as instants marked \"began on "
            "another thread\")\n",
            t->crossed, t->crossed == 1 ? "" : "s",
            t->crossed == 1 ? "it" : "them");

  /* A write error or no memory for the output leaves OUT as it was. */
  if (t->failed && !ferror(stdout)) {
    tool_error("%s: %s", to_stdout ? "standard output" : outpath,
               strerror(ENOMEM));
    rc = TOOL_EXIT_INPUT;
  } else {
    int out = tool_output_finish();
    if (rc == TOOL_EXIT_OK) rc = out;
  }

  for (int i = 0; i < t->ndoms; i++) {
    free(t->doms[i].stack);
    free(t->doms[i].early);
  }
  free(t->doms);
  for (int i = 0; i < t->nthr; i++) {
    free(t->thr[i].st.stack);
    free(t->thr[i].st.early);
  }
  free(t->thr);
  free(t->cur);
  for (int i = 0; i < t->nprocs_mapped; i++) free(t->rings[i]);
  free(t->rings);
  free(t->nrings);
  free(t->vproc);
  free(t->vreal);
  free(t->pdecl);
  free(t->tids);
  t->w.free(t->wself);
  free(t);
  eventring_callbacks_free(cb);
  tool_source_close(&src);
  return rc;
}
