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
  /* Set after pauses_init() for a live reader (see above). */
  int live;
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
/* A lifecycle event of `domain`: ring_pause cuts, domain_spawn and
 * domain_terminate restart, the others change nothing. */
void pauses_lifecycle(struct pauses *p, int domain, int kind);
/* Reading is over. */
void pauses_finish(struct pauses *p);

/* ------------------------------------------------------------------ */

/* The command line of latency and stats: the source options of dump
 * (--pid, --dir, --follow, --ocaml50), -o/--output and --json; then
 * points standard output at the report's destination (tool_output_open)
 * and opens the source (tool_source_open) into `src`, which it clears
 * first.  Returns -1 when
 * the source is open, or the exit status when done (--help, a usage
 * error, a source that cannot be opened).  `help` prints the
 * subcommand's help, `help_ref` names it in usage errors. */
int analysis_open(int argc, char **argv, const char *help_ref,
                  void (*help)(void), struct tool_source *src, int *json);

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

#endif /* EVENTRING_TOOL_ANALYSIS_H */
