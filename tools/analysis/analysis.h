/* analysis.h -- what `eventring latency` and `eventring stats` share:
 * their command line, the tracking of GC pauses (which `eventring
 * metrics` uses too), durations in readable units and JSON strings.
 *
 * A pause is an outermost runtime phase of a domain: it starts with a
 * begin event at nesting depth 0 and ends with the end event that brings
 * the depth back to 0.  One exception: an outermost span of
 * major_gc_cycle_domains, major_gc_phase_change or major_finish_cycle
 * with no phase nested in it is a marker, not a pause.  The OCaml 4.13
 * bindings' GC hooks on the normal runtime write these phases as empty
 * spans (a begin and its end back to back) to mark an instant: the start
 * of a major cycle, the end of marking, the end of the cycle
 * (doc/ocaml4-mapping.md); outside a slice, after Gc.full_major for
 * instance, they are outermost, and their few nanoseconds between two
 * clock reads would read as the shortest GC pauses.  OCaml 5 writes the
 * same phases as real work, but always nested in stw_leader, stw_handler
 * or major_slice (its test vectors never have one outermost), so the rule
 * leaves its pauses alone.  The phase is recognised by its name in the
 * file's numbering (eventring_cursor_phase_name), not by its id, which
 * means something else in OCaml 5.0-5.2's files.  Markers are counted
 * apart.
 *
 * The tracker follows the nesting of each domain with a stack of open
 * phases and deals with what a flight recorder does to it:
 *
 *   - A cut (lost events, which include the oldest events of a wrapped
 *     ring, and ring_pause, after which nothing is recorded until
 *     ring_resume): a pause in progress has lost its middle or its end.
 *     It is dropped and counted as cut.  What follows starts at an
 *     unknown depth: the phases that were open at the cut end without a
 *     begin.  Until such an end shows up, a phase that looks outermost
 *     may really be nested in the pause that the cut opened, so the
 *     tracker keeps the pauses of that stretch aside (provisional) and
 *     drops them if an unmatched end follows (counting that cut pause
 *     once, or not at all when a pause in progress was cut, whose ends
 *     they most likely are); they are confirmed at the next cut, at the
 *     end of reading,
 *     or after PAUSES_PROVISIONAL_MAX of them, a number of nested phases
 *     no single GC pause comes near.
 *   - An end that matches no begin where the depth is known (no cut
 *     before it): counted as unmatched and ignored.  An end of a phase
 *     below the top of the stack closes the phases above it too, which
 *     are then never counted.
 *   - domain_spawn and domain_terminate: a thread leaves its slot and
 *     another takes it, at depth 0; a pause left open is unfinished.
 *   - The end of reading: pauses still open are counted as unfinished
 *     and not included.
 *
 * A live reader (`eventring metrics`) cannot wait to learn whether a
 * pause after a cut really was outermost: with `live` set, the tracker
 * takes what looks outermost at face value and reports it at once, and
 * an end without a begin after a cut counts as unmatched.
 *
 * Pauses as the program sees them (`merge`, latency's default): outermost
 * phases of a domain with no mutator time between them are one pause,
 * from the first's begin to the last's end.  OCaml 4.13's normal runtime
 * runs a major slice right after the minor collection that asked for it,
 * within one call: the GC hooks write the minor's end and the
 * major_slice's begin some 100 ns apart (87 ns, 115 ns, 341 ns measured)
 * while the program waits for both; a slice that the mutator triggers
 * later comes tens of microseconds or more after (it allocated half the
 * minor heap meanwhile).  So the next outermost phase joins the pause
 * when it begins less than PAUSES_MERGE_GAP_NS after the pause's end with
 * no event of the program between (pauses_activity: user events, thread
 * switches, lifecycle events); a loss, a restart or the end of reading
 * ends the pause too.  A machine so loaded that the hooks of one call
 * land further apart shows the phases as separate pauses, as without
 * merge.
 *
 * ring_pause stops recording in every domain, but only the domain that
 * called it has the event: in the others, a pause that straddles a
 * ring_pause/ring_resume interval is seen whole and includes it.
 */
#ifndef EVENTRING_TOOL_ANALYSIS_H
#define EVENTRING_TOOL_ANALYSIS_H

#include <stdint.h>
#include <stdio.h>

#include "tool.h"

#define PAUSES_PROVISIONAL_MAX 4096
#define PAUSES_MERGE_GAP_NS 1000

/* Called for each pause once it is certain: its domain and duration in
 * nanoseconds (0 when the end's timestamp is below the begin's). */
typedef void (*pause_fn)(void *arg, int domain, uint64_t duration);

struct pauses {
  /* Counts, for the reports. */
  uint64_t count;      /* pauses passed to the callback */
  uint64_t cut;        /* pauses dropped because of a cut */
  uint64_t unfinished; /* pauses open at the end of reading or of a thread */
  uint64_t unmatched;  /* ends that matched no begin, outside a cut */
  uint64_t markers;    /* outermost marker spans, which are no pauses */
  uint64_t merged;     /* with merge: outermost phases joined to the one
                          before (count counts the pauses they make) */
  /* Set after pauses_init() for a live reader (see above). */
  int live;
  /* Set after pauses_init(): pauses as the program sees them (below). */
  int merge;
  /* Internal. */
  pause_fn on_pause;
  void *arg;
  const eventring_cursor *names; /* names the phases, for markers */
  int ndomains;
  struct pause_domain **domains; /* allocated on first use */
  int oom;                       /* an allocation failed */
};

/* Sets up a tracker for domains 0 .. ndomains - 1 of the file that
 * `names` reads, which names the phases (whatever numbering is set on it
 * when the events come).  Returns 0, or -1 when out of memory. */
int pauses_init(struct pauses *p, const eventring_cursor *names, int ndomains,
                pause_fn on_pause, void *arg);
void pauses_free(struct pauses *p);

void pauses_begin(struct pauses *p, int domain, uint64_t ts, int phase);
/* Returns 1 and the begin's timestamp in *start when this end closes a
 * phase that began in the events read (whether or not it ends a pause),
 * else 0. */
int pauses_end(struct pauses *p, int domain, uint64_t ts, int phase,
               uint64_t *start);
/* Events were lost in `domain`, or it paused recording. */
void pauses_cut(struct pauses *p, int domain);
/* A thread left or took the slot `domain`. */
void pauses_restart(struct pauses *p, int domain);
/* The program did something in `domain` (a user event, a thread switch,
 * a lifecycle event): with merge, the next phase is another pause. */
void pauses_activity(struct pauses *p, int domain);
/* A lifecycle event of `domain`: ring_pause cuts, domain_spawn and
 * domain_terminate restart, the others change nothing. */
void pauses_lifecycle(struct pauses *p, int domain, int kind);
/* Reading is over. */
void pauses_finish(struct pauses *p);

/* ------------------------------------------------------------------ */
/* Spans: the durations of user spans (`latency --span`, `stats`) or of  */
/* one runtime phase at any depth (`latency --phase`).                  */
/*                                                                      */
/* A span begins with a begin event and ends with the next end event of  */
/* the same name on the same track that is not taken by a span begun     */
/* later: spans of one name nest (an end closes the innermost open span  */
/* of its name), spans of different names may overlap freely.  A track   */
/* is a domain, or, in a slot shared by threads (OCaml 4's threads, see  */
/* FORMAT.md "Thread switches"), one thread of it: each thread-switch    */
/* marker moves the domain's later events to its thread's track, and a   */
/* span begun by one thread is ended only by that thread's end.  After a */
/* loss the thread is unknown until the next marker: the events go to   */
/* the domain's own track.                                              */
/*                                                                      */
/* What is not a whole span is counted apart, per name:                 */
/*   cut         open when events of its domain were lost (or recording */
/*               paused), or an end whose begin was lost: after a cut,  */
/*               an end with no open begin is the end of a span cut     */
/*               there (counted once: a span counted cut at the loss    */
/*               is not counted again at its end);                      */
/*   unfinished  open at the end of reading, or when its slot was left  */
/*               (domain_terminate, domain_spawn);                      */
/*   unmatched   an end with no open begin and no cut before it.        */

/* What is known of one name's spans in one domain, or in all. */
struct span_stat {
  struct histogram *hist; /* completed spans' durations; NULL: none yet */
  uint64_t total;         /* their sum, exact, in nanoseconds */
  uint64_t cut, unfinished, unmatched;
};

/* One name's spans: in total and per domain (dom[d] for domain d). */
#define SPAN_NAME_BYTES 80
struct span_stats {
  char name[SPAN_NAME_BYTES];
  struct span_stat all;
  struct span_stat *dom;
  int ndom;
};

struct span_track;
struct span_domain;

/* A tracker of one file's spans, and what it found (by name, in order of
 * first appearance). */
struct spans {
  struct span_stats *v;
  size_t n, cap;
  /* Internal. */
  const eventring_cursor *names;
  int phases;           /* track runtime phases instead of user spans */
  char *const *globs;   /* names to track (fnmatch); NULL: every one */
  int nglobs;
  int ndomains;
  struct span_domain **domains;
  int *entry_of;        /* id -> index in v, -1 unknown, -2 not tracked */
  int oom;
};

/* Sets up a tracker of user spans (phases 0) or runtime phases (1) of
 * the file that `names` reads, domains 0 .. ndomains - 1, for the names
 * that match one of `globs` (nglobs of them; none: every name).  `globs`
 * must outlive the tracker.  Returns 0, or -1 when out of memory. */
int spans_init(struct spans *s, const eventring_cursor *names, int ndomains,
               int phases, char *const *globs, int nglobs);
void spans_free(struct spans *s);
/* A span's begin or end: `id` its user event id or phase, `name` the
 * callback's name (NULL for a phase: the file names it). */
void spans_begin(struct spans *s, int domain, uint64_t ts, int id,
                 const char *name);
void spans_end(struct spans *s, int domain, uint64_t ts, int id,
               const char *name);
/* A thread-switch marker of `domain`. */
void spans_thread(struct spans *s, int domain, int64_t thread, uint64_t tid);
/* Events of `domain` were lost, or recording paused. */
void spans_cut(struct spans *s, int domain);
/* A thread left or took the slot `domain`. */
void spans_restart(struct spans *s, int domain);
/* As pauses_lifecycle(). */
void spans_lifecycle(struct spans *s, int domain, int kind);
/* Reading is over: open spans are unfinished. */
void spans_finish(struct spans *s);

/* Adds `src` into `dst` (the same name: a total over processes); domain
 * rows are added by domain number when `by_domain`, else left out.
 * Returns 0, or -1 when out of memory. */
int span_stats_add(struct span_stats *dst, const struct span_stats *src,
                   int by_domain);
void span_stats_free(struct span_stats *st);

/* The JSON form of one name's spans (documented in eventring(1) and
 * here), the object's fields without the braces:
 *
 *   "name": S, "count": N, "total_ns": N, "mean_ns": X, "min_ns": N,
 *   "p50_ns": N, "p90_ns": N, "p99_ns": N, "p999_ns": N, "max_ns": N,
 *   "relative_error": X, "cut": N, "unfinished": N, "unmatched_ends": N
 *
 * then (span_stats_json, in total only) "buckets": [[VALUE_NS, COUNT],
 * ...], the histogram's non-empty buckets, ascending, for `eventring
 * diff`'s rank test; then, with `domains`, "domains": [{"domain": D, and the same fields
 * but name}, ...] for the domains where the name had any span.  count
 * and total_ns are over the completed spans; the durations are null when
 * count is 0; percentiles are within relative_error (histogram.h) of the
 * true values, min, max, mean and total are exact. */
void span_stat_json(FILE *out, const struct span_stat *st);
void span_stats_json(FILE *out, const struct span_stats *st, int domains);

/* ------------------------------------------------------------------ */

/* The options of latency and stats beyond the source's. */
#define ANALYSIS_MAX_NAMES 64
struct analysis_opts {
  int json;                            /* --json */
  int spans_allowed;                   /* set by the caller: latency */
  char *span[ANALYSIS_MAX_NAMES];      /* --span NAME (globs) */
  int nspan;
  char *phase[ANALYSIS_MAX_NAMES];     /* --phase NAME (globs) */
  int nphase;
  int per_phase;                       /* --per-phase: pauses unmerged */
};

/* The command line of latency and stats: the source options of dump
 * (--pid, --dir, --follow, --ocaml50, the filters of filter.c),
 * -o/--output, --json and, with opts->spans_allowed, --span, --phase
 * and --per-phase;
 * then points standard output at the report's destination
 * (tool_output_open) and opens the source (tool_source_open) into `src`,
 * which it clears first.  Returns -1 when the source is open, or the
 * exit status when done (--help, a usage error, a source that cannot be
 * opened).  `help` prints the subcommand's help, `help_ref` names it in
 * usage errors. */
int analysis_open(int argc, char **argv, const char *help_ref,
                  void (*help)(void), struct tool_source *src,
                  struct analysis_opts *opts);

/* Prints the help of subcommand `name`: its usage lines, `what` it does
 * (lines ending in a newline), the options and the exit statuses. */
void analysis_help(const char *name, const char *what);

/* Writes `ns` in a readable unit with four significant digits ("812 ns",
 * "1.234 us", "56.78 ms", "3.000 s") into `buf` (at least 32 bytes);
 * returns buf. */
char *analysis_duration(char *buf, uint64_t ns);

/* Writes `s` as a JSON string: quotes, \" \\ and \uXXXX for control
 * characters, and every byte above 127 as \u00XX (the names come from a
 * file and need not be UTF-8; JSON output must be). */
void analysis_json_string(FILE *out, const char *s);

/* A double as JSON (finite; 0 for NaN or infinities). */
void analysis_json_double(FILE *out, double x);

/* The non-empty buckets of histogram `h` (NULL: none) as a JSON list
 * [[VALUE_NS, COUNT], ...], ascending (hist_bucket_next: each value
 * within the percentiles' bound of the durations it counts), so that
 * `eventring diff` can run its rank test on a saved `stats --json` as on
 * the ring file. */
struct histogram;
void analysis_json_buckets(FILE *out, const struct histogram *h);

#endif /* EVENTRING_TOOL_ANALYSIS_H */
