/* analysis.h -- the analysis layer of the `eventring` command
 * (analysis/): what the reports compute from events, independent of how
 * they are shown.
 *   analysis.c  what latency, stats and metrics share: the command line,
 *               the tracker of GC pauses, durations in readable units;
 *   spans.c     the durations of every kind of span (stats, report);
 *   histogram.c a histogram of durations with bounded relative error;
 *   ranktest.c  the rank tests of `eventring diff`;
 *   jsonread.c  a JSON reader, for saved `stats --json` outputs;
 *   metricset.c the series of `eventring metrics`: what each ring file's
 *               events add up to, listed as Prometheus families;
 *   rules.c     the rules of `watch --when`: parsed, and evaluated over
 *               the events of a process in trace time.
 * It builds on input/ (and base/).
 */
#ifndef EVENTRING_TOOLS_ANALYSIS_H
#define EVENTRING_TOOLS_ANALYSIS_H

#include "input/input.h"

/* ================================================================== */
/* histogram.c                                                          */
/* ================================================================== */

/* A histogram of durations with bounded relative error.
 *
 * Debian packages no C HdrHistogram library (only Java and Go ones), so
 * the `eventring` command has this small one in the same spirit: a
 * log-linear layout that records any 64-bit value (nanoseconds here, from
 * 1 ns to centuries) in constant time and memory, and answers percentile
 * queries with a relative error that is bounded whatever the range.
 *
 * Layout.  Values below 2^HIST_SUB_BITS (2048) have a bucket each and are
 * kept exactly.  Above that, every power-of-two range [2^e, 2^(e+1)) is
 * cut into 2^(HIST_SUB_BITS - 1) = 1024 equal buckets of width
 * 2^(e - HIST_SUB_BITS + 1), which is 1/1024 of the range's lower end.
 * That is 2048 + 53 * 1024 = 56320 counters for the whole of uint64_t
 * (440 KiB of zeroed memory, of which only the pages of the buckets in
 * use are ever touched).
 *
 * Error bound.  A percentile is answered with the midpoint of the bucket
 * that holds the value of that rank, clamped to the exact minimum and
 * maximum.  Since a bucket's half-width is at most 2^-HIST_SUB_BITS of
 * any value in it:
 *
 *     |reported - true| <= true / 2048     (0.049 %; exact below 2048)
 *
 * where `true` is the recorded value of that rank (nearest-rank
 * definition below).  This is better than HdrHistogram's setting of 3
 * significant decimal digits (0.1 %): 1.234 ms is reported within
 * +-0.6 us.  The count, minimum, maximum, mean and standard deviation are
 * exact (they are kept apart from the buckets).
 *
 * Percentile definition: for p in (0, 100] and n recorded values, the
 * value of rank k = ceil(p / 100 * n) (at least 1) in ascending order;
 * p = 100 is the maximum, exactly.  An empty histogram answers 0.
 */

#include <stddef.h>
#include <stdint.h>

#define HIST_SUB_BITS 11
/* The documented bound on the relative error of a percentile. */
#define HIST_RELATIVE_ERROR (1.0 / (1 << HIST_SUB_BITS))

struct histogram;

/* Returns an empty histogram, or NULL when out of memory. */
struct histogram *hist_create(void);
void hist_free(struct histogram *h);

/* Records one value.  Never fails. */
void hist_record(struct histogram *h, uint64_t value);

uint64_t hist_count(const struct histogram *h);
/* Exact minimum and maximum; 0 when empty. */
uint64_t hist_min(const struct histogram *h);
uint64_t hist_max(const struct histogram *h);
/* Exact arithmetic mean and population standard deviation; 0 when
 * empty. */
double hist_mean(const struct histogram *h);
double hist_stddev(const struct histogram *h);

/* The value at percentile `p` (0 < p <= 100; smaller p count as the
 * minimum's rank, larger as 100), within the bound above. */
uint64_t hist_percentile(const struct histogram *h, double p);

/* How many recorded values are below `v`: exact when `v` is below 2048
 * or a power of two (bucket boundaries), else counted to the bucket that
 * holds `v`, excluded.  The charts of latency and report bin by powers
 * of two, so theirs are exact. */
uint64_t hist_count_below(const struct histogram *h, uint64_t v);

/* Adds every value recorded in `src` to `dst`, as if each had been
 * recorded there (the mean and standard deviation combine exactly, up to
 * rounding), so that a total's percentiles keep the bound above. */
void hist_add(struct histogram *dst, const struct histogram *src);

/* Walks the buckets that hold values, in ascending order, for a test
 * that needs the whole sample (`eventring diff`'s rank test): start with
 * *i = 0; each call sets *value to the next such bucket's midpoint
 * (clamped to the exact minimum and maximum, so the values stay
 * ascending and within hist_percentile()'s bound of every value they
 * stand for) and *count to how many values it holds, and returns 1; 0
 * once every bucket has been seen. */
int hist_bucket_next(const struct histogram *h, size_t *i, uint64_t *value,
                     uint64_t *count);

/* The layout above with S = sub_bits (2 .. 32) instead of HIST_SUB_BITS,
 * for a caller that keeps its own counters (rules.c keeps one array per
 * time slice): how many buckets it has, the bucket of `v`, and the
 * midpoint of bucket `i`, within v / 2^sub_bits of every v it holds. */
size_t hist_layout_buckets(unsigned sub_bits);
size_t hist_layout_index(uint64_t v, unsigned sub_bits);
uint64_t hist_layout_mid(size_t i, unsigned sub_bits);

/* ================================================================== */
/* analysis.c, spans.c                                                  */
/* ================================================================== */

/* What `eventring latency` and `eventring stats` share:
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

#include <stdint.h>
#include <stdio.h>

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
 * count is 0; percentiles are within relative_error (analysis.h) of the
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

/* ================================================================== */
/* ranktest.c                                                           */
/* ================================================================== */

/* The Mann-Whitney rank test (Wilcoxon rank-sum test) that
 * `eventring diff` uses to tell a change from the noise of the samples.
 *
 * The question: are the durations of sample B drawn from the same
 * distribution as those of sample A, or do they tend to be larger (or
 * smaller)?  The test ranks the two samples together, from 1 for the
 * shortest to N = nA + nB; tied values all get the mean of the ranks
 * they span (midranks).  With R the sum of A's ranks,
 *
 *     U = R - nA (nA + 1) / 2
 *
 * counts the pairs (a, b) with a > b, a tie counting one half; it runs
 * from 0 (every a below every b) to nA nB, and U / (nA nB) estimates the
 * probability that a duration of A exceeds one of B.  When the samples
 * come from one distribution, U has mean nA nB / 2.  The p-value is the
 * probability, under that hypothesis, of a U at least as far from the
 * mean as the one found, on either side (two-sided):
 *
 *   - exact, when there are no ties and nA + nB <= RANK_EXACT_MAX: the
 *     number of arrangements of the ranks giving each U, as the
 *     coefficients of the Gaussian binomial coefficient [N choose nA]_q;
 *   - otherwise by the normal approximation, with the variance corrected
 *     for ties,
 *
 *         var U = nA nB / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1)))
 *
 *     (t the size of each group of tied values), and a continuity
 *     correction of 1/2 towards the mean.
 *
 * The test makes no assumption about the shape of the distribution
 * (durations are skewed, with long tails), and a few outliers cannot
 * make it: an extreme value is one rank whatever its size.  It sees a
 * shift of the bulk; a change confined to the far tail (p99 alone) moves
 * few ranks and is not flagged unless the samples are large.
 *
 * The samples are given as distinct values in ascending order, each with
 * how many times it occurs: raw durations, or a histogram's buckets (the
 * values of one bucket then count as ties, which the correction above
 * accounts for).
 */

#include <stddef.h>
#include <stdint.h>

/* Up to this many values in all, without ties, the p-value is exact. */
#define RANK_EXACT_MAX 50

struct rank_sample {
  const uint64_t *value; /* distinct, ascending */
  const uint64_t *count; /* how many of each, each > 0 */
  size_t n;              /* entries of value and count */
};

struct rank_result {
  uint64_t na, nb; /* the samples' sizes */
  double u;        /* U of sample A, as above */
  double z;        /* (U - mean) / sd with the continuity correction; 0
                    * when the variance is 0 */
  double p;        /* two-sided p-value, in [0, 1] */
  int exact;       /* p is exact (no ties, few values) */
  /* U / (nA nB) - 1/2: > 0 when A's durations tend to be the larger
   * (B faster), < 0 when B's are (B slower); 0 for empty samples. */
  double shift;
};

/* Runs the test.  Returns 0, or -1 when a sample is empty (r->p is then
 * 1) or out of memory (the exact distribution's table). */
int rank_test(const struct rank_sample *a, const struct rank_sample *b,
              struct rank_result *r);

/* The quantile test (Mood's median test for q = 1/2, extended to any
 * quantile): do B's durations exceed the q-quantile of both samples
 * together more or less often than A's?  With v the pooled q-quantile
 * (nearest rank, ceil(q N) of N), the K values above v fall into B as a
 * hypergeometric draw of nB out of N when the samples come from one
 * distribution; the values equal to v count as above when none would be
 * above otherwise (many equal durations at the top) or when that brings
 * K nearer to (1 - q) N, but never when all would be: a choice made from
 * the pooled values alone, so the test stays exact.  The p-value is Fisher's exact
 * two-sided one: the probability of every split of the K values no more
 * likely than the one found.  It answers for p50 and p99 what the rank
 * test answers for the bulk: a change at that quantile beyond noise (a
 * tail that moves while the bulk stays put, which the rank test does not
 * see). */
struct quantile_result {
  uint64_t above_a, above_b; /* durations above the pooled quantile */
  uint64_t value;            /* the pooled quantile */
  int at_included;           /* the values equal to it count as above */
  double p;                  /* two-sided, exact */
  /* One-sided, exact: the probability of B having as many durations
   * above it or more (p_slower), as few or fewer (p_faster). */
  double p_slower, p_faster;
  /* > 0 when B has more durations above it than its share (B slower). */
  double excess;
};

/* Runs the quantile test at q (0 < q < 1).  Returns 0, or -1 when a
 * sample is empty (r->p is then 1). */
int quantile_test(const struct rank_sample *a, const struct rank_sample *b,
                  double q, struct quantile_result *r);

/* The quantile test of A against B's durations divided by `scale` (> 0):
 * with scale 1 + e, whether B's q-quantile exceeds (1 + e) times A's
 * beyond noise (excess > 0 and a small p), the test of a change of at
 * least e rather than of any change.  quantile_test() is scale 1. */
int quantile_test_scaled(const struct rank_sample *a,
                         const struct rank_sample *b, double q, double scale,
                         struct quantile_result *r);

/* Welch's test of the means, against B's mean being `scale` times A's:
 *
 *     z = (mean B - scale mean A) / sqrt(var B / nB + scale^2 var A / nA)
 *
 * with the two-sided p-value of the standard normal distribution (the
 * means of a few hundred durations or more are near enough normal, even
 * of skewed durations; with a few dozen the p-value is too small).  A
 * mean follows the tail, so a rare long duration moves it: its variance
 * is in the denominator, and a run with one more outlier is not a change
 * of the mean beyond noise. */
struct mean_result {
  uint64_t na, nb;
  double z;      /* as above */
  double p;      /* two-sided */
  double p_slower, p_faster; /* one-sided: P(Z >= z), P(Z <= z) */
  double excess; /* mean B - scale mean A, in ns: > 0 when B is slower */
};

/* Runs the test.  Returns 0, or -1 when a sample has fewer than two
 * durations (r->p is then 1). */
int mean_test(const struct rank_sample *a, const struct rank_sample *b,
              double scale, struct mean_result *r);

/* P(U <= u) for samples of sizes na and nb without ties, from the exact
 * distribution (na + nb <= RANK_EXACT_MAX); -1 when out of range or out
 * of memory.  For the tests, and tables. */
double rank_exact_cdf(unsigned na, unsigned nb, double u);

/* The upper tail of the standard normal distribution, P(Z > z), with a
 * relative error below 1e-12 (the command links no libm). */
double rank_normal_tail(double z);

/* ================================================================== */
/* jsonread.c                                                           */
/* ================================================================== */

/* A small JSON reader, for `eventring diff`, which compares
 * saved `eventring stats --json` outputs.
 *
 * A document is parsed into a tree, or read one value at a time by a
 * json_reader (RFC 8259 either way: objects, arrays,
 * strings with every escape, numbers, true, false, null), nested at most
 * JSON_DEPTH_MAX deep.  A number keeps its text's exact value as an
 * unsigned 64-bit integer when it is one (nanosecond counts exceed a
 * double's 53 bits), and as a double in any case.  Strings are kept as
 * UTF-8 without their escapes; a \u0000 ends the string early (names
 * never contain one).
 */

#include <stddef.h>
#include <stdint.h>

#define JSON_DEPTH_MAX 64

enum json_type { JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING,
                 JSON_ARRAY, JSON_OBJECT };

struct json_value {
  enum json_type type;
  double num;           /* JSON_NUMBER */
  uint64_t u64;         /* JSON_NUMBER, when is_u64 */
  int is_u64;           /* a whole number in 0 .. 2^64 - 1, written so */
  char *str;            /* JSON_STRING */
  struct json_value *v; /* JSON_ARRAY, JSON_OBJECT: the n elements */
  char **key;           /* JSON_OBJECT: their keys */
  size_t n;
};

/* Parses `len` bytes at `text`.  Returns the tree (free it with
 * json_free), or NULL with a message such as "line 3, column 7: expected
 * ',' or '}'" or "out of memory" in `err` (`size` bytes). */
struct json_value *json_parse(const char *text, size_t len, char *err,
                              size_t size);
void json_free(struct json_value *v);

/* Reading a document one value at a time, for one too large to hold as
 * a tree: the caller walks its structure (json_reader_enter, then
 * json_reader_next for each member or element) and reads each value as
 * a tree, as a scalar, or skips it; nothing is allocated but the trees
 * asked for.  After an error every call returns 0 (or NULL), and the
 * message is in `err`, as json_parse() writes it. */
struct json_parser { /* internal to jsonread.c */
  const char *s, *end, *p;
  char *err;
  size_t errsize;
  int failed;
};
struct json_reader {
  struct json_parser ps;
  int depth; /* containers entered */
  unsigned char object[JSON_DEPTH_MAX], first[JSON_DEPTH_MAX];
};

/* Reads the `len` bytes at `text`; errors go to `err` (`size` bytes). */
void json_reader_init(struct json_reader *r, const char *text, size_t len,
                      char *err, size_t size);
/* The first byte of the next value ('{', '[', '"', a digit...), 0 at the
 * end of the text or after an error. */
int json_reader_peek(struct json_reader *r);
/* Enters the object or array that comes next: 1, or 0 after an error. */
int json_reader_enter(struct json_reader *r);
/* In the innermost container entered: 1 when a member (its key copied
 * into `key`, `size` bytes, cut if longer) or an element follows, which
 * the caller then reads or skips; 0 at its end (left) or after an
 * error. */
int json_reader_next(struct json_reader *r, char *key, size_t size);
/* The next value as a tree (json_free), or NULL after an error. */
struct json_value *json_reader_value(struct json_reader *r);
/* The next value, which must be a number, true, false or null, into `v`
 * without allocating: 1, or 0 after an error. */
int json_reader_scalar(struct json_reader *r, struct json_value *v);
/* Skips the next value, checking it, allocating nothing: 1, or 0. */
int json_reader_skip(struct json_reader *r);
/* Nonzero after an error. */
int json_reader_failed(struct json_reader *r);
/* Records an error of the caller's at the reader's position (the first
 * error only). */
void json_reader_error(struct json_reader *r, const char *what);
/* After the document: 0 when only white space follows it, else -1 with
 * the message in `err` (also for an earlier error). */
int json_reader_end(struct json_reader *r);

/* The member `key` of object `obj`, or NULL (also when obj is not an
 * object). */
const struct json_value *json_get(const struct json_value *obj,
                                  const char *key);

/* The value as an unsigned 64-bit integer: 1 and *out, or 0 when it is
 * not one (absent, null, negative, fractional). */
int json_u64(const struct json_value *v, uint64_t *out);

/* ================================================================== */
/* metricset.c                                                          */
/* ================================================================== */

/* The model of `eventring metrics`: one target per ring file (or per
 * process, across its tracing sessions), updated event by event, and
 * listed as families of samples that a renderer writes out (render/'s
 * text exposition, the remote-write encoder).  Nothing here locks: the
 * caller serialises the updates of a set with its listing. */

#include <limits.h>
#include <sys/types.h>

/* Prometheus's usual bounds for latencies, from 1 us to 10 s. */
#define METRICS_N_BOUNDS 22
#define METRICS_MAX_PHASES 64
#define METRICS_MAX_COUNTERS 64
#define METRICS_NAME_BYTES 48

/* An exemplar: one value of a bucket, labelled
 * METRICS_EXEMPLAR_LABEL="id" (a snapshot's file name), with its wall
 * time (0 when the file has no wall clock) and the time the exporter
 * attached it (CLOCK_REALTIME), which stands for the wall time where a
 * time is required (remote write). */
#define METRICS_EXEMPLAR_ID 120
#define METRICS_EXEMPLAR_LABEL "snapshot"
struct metrics_exemplar {
  char id[METRICS_EXEMPLAR_ID + 1]; /* "" when none */
  uint64_t value_ns;
  uint64_t wall_ns;
  uint64_t seen_ns;
};

/* Bucket i counts values <= bound i that are above bound i-1, the last
 * one those above every bound; a listing makes them cumulative.  ex,
 * allocated at the first exemplar, holds bucket i's latest in ex[i]. */
struct metrics_hist {
  uint64_t bucket[METRICS_N_BOUNDS + 1];
  uint64_t count;
  uint64_t sum_ns;
  struct metrics_exemplar *ex;
};

void metrics_hist_add(struct metrics_hist *h, uint64_t ns);

/* A user event's series. */
struct metrics_user {
  int id;
  char name[EVENTRING_MAX_NAME + 1]; /* as in the file */
  /* eventring_user_ + sanitised (where words may gain an 's'). */
  char metric[2 * EVENTRING_MAX_NAME + 32];
  /* Latest int per domain (allocated on the first int). */
  int64_t *ival;
  unsigned char *iset;
  /* Span durations; open[d] is the begin's timestamp + 1, 0 when none. */
  struct metrics_hist *span;
  uint64_t *open;
  /* Unit events. */
  uint64_t units;
  int has_unit;
};

/* The series of one process: its file now, the totals of its earlier
 * sessions, and what the scanning of a directory keeps about it. */
struct metrics_label {
  const char *name;
  const char *value;
};
/* The labels a target's file may give: ocaml_version and 16 of its own. */
#define METRICS_FILE_LABELS 17
struct metrics_target {
  struct metrics_target *next;
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
  /* What the file records of its writer (eventring_cursor_ocaml_version(),
   * eventring_cursor_label()): ocaml_version and its labels, put on the
   * target's series after pid and program, each unless a --label or a
   * label of metrics' own has its name. */
  struct metrics_label file_label[METRICS_FILE_LABELS];
  int nfile_labels;
  char file_text[640];
  int seen;          /* found by the current scan */
  struct pauses pauses;  /* analysis.c's tracker, live */
  struct metrics_hist pause;
  struct metrics_hist *phase[METRICS_MAX_PHASES];
  char phase_name[METRICS_MAX_PHASES][METRICS_NAME_BYTES];
  uint64_t *counter; /* nd * METRICS_MAX_COUNTERS latest values */
  unsigned char *counter_set;
  char counter_name[METRICS_MAX_COUNTERS][METRICS_NAME_BYTES];
  struct metrics_user **user_by_id; /* EVENTRING_MAX_USER_EVENTS, lazily */
  struct metrics_user **users;      /* those seen, in order */
  int nusers, capusers;
};

/* A label, as listed: `value` need not be UTF-8 (renderers make it so,
 * metrics_utf8()). */

/* What the pusher of remote write counts (cmd/metrics_push.c), in
 * samples but for `failed`; written and read with __atomic builtins,
 * since the pusher's threads update them while a listing reads them. */
struct metrics_push_stats {
  uint64_t collected; /* put in a request, to be sent */
  uint64_t sent;      /* accepted by the receiver */
  uint64_t dropped;   /* did not fit in the queue (the receiver was away) */
  uint64_t rejected;  /* refused by the receiver (a 4xx status) */
  uint64_t queued;    /* waiting to be sent, now */
  uint64_t failed;    /* requests that failed and were tried again */
};

/* The targets, the labels every series gets before its own (host, the
 * operator's), and the pusher's counts to list, or NULL. */
struct metrics_set {
  struct metrics_target *targets;
  const struct metrics_label *common;
  int ncommon;
  const struct metrics_push_stats *push;
};

/* A target reading cursor `c` (ours to free when `own`) of process
 * `pid`; `numbering` (EVENTRING_NUMBERING_*) is set on the cursor unless
 * it is negative.  Returns NULL when out of memory. */
struct metrics_target *metrics_target_new(eventring_cursor *c, int own,
                                          const char *path, pid_t pid,
                                          const char *program, int numbering);
void metrics_target_free(struct metrics_target *t);

/* Closes `t`'s file, which nothing more will be read from: what its
 * writer dropped and its reader skipped joins the counts of the sessions
 * before it, and its descriptor goes (when ours). */
void metrics_target_close(struct metrics_target *t);

/* Makes cursor `c` (ours) on `path` the file of `t`, whose process
 * started tracing again, after metrics_target_close(): the totals go on
 * (counters stay monotonic), the gauges keep their values until the new
 * file sets them.  Returns 0, or -1 when out of memory (`t` unchanged). */
int metrics_target_rebind(struct metrics_target *t, eventring_cursor *c,
                          const char *path, int numbering);

/* The events, as the callbacks of eventring.h deliver them. */
void metrics_on_begin(struct metrics_target *t, int domain, uint64_t ts,
                      int phase);
void metrics_on_end(struct metrics_target *t, int domain, uint64_t ts,
                    int phase);
void metrics_on_counter(struct metrics_target *t, int domain, int counter,
                        uint64_t value);
/* An event that only counts as read (allocations, custom events). */
void metrics_on_other(struct metrics_target *t);
void metrics_on_lifecycle(struct metrics_target *t, int domain, int kind);
void metrics_on_user_unit(struct metrics_target *t, int id,
                          const char *name);
void metrics_on_user_int(struct metrics_target *t, int domain, int id,
                         const char *name, int64_t value);
void metrics_on_user_span(struct metrics_target *t, int domain, uint64_t ts,
                          int id, const char *name, int is_end);
void metrics_on_lost(struct metrics_target *t, int domain, uint64_t count);

/* Attaches exemplar `id` (value `value_ns`, at `wall_ns`, read at
 * `seen_ns`) to the bucket it falls in of the histogram `source` (pause,
 * phase:NAME or span:NAME) of the target of process `pid`, replacing the
 * bucket's earlier one.  Returns 0; 1 when that histogram has no value
 * yet (the event may not have been read: try again later); -1 when
 * `source` is none of these, `id` is longer than METRICS_EXEMPLAR_ID
 * bytes, or out of memory. */
int metrics_exemplar_add(struct metrics_set *set, pid_t pid,
                         const char *source, uint64_t value_ns,
                         uint64_t wall_ns, uint64_t seen_ns, const char *id);

/* How a sample's value is written: an integer, or nanoseconds written
 * as seconds. */
enum metrics_value_kind { METRICS_UINT, METRICS_INT, METRICS_SECONDS };

struct metrics_sample {
  const char *name; /* the family's name and its suffix (_bucket...) */
  const struct metrics_label *labels;
  int nlabels;
  enum metrics_value_kind kind;
  uint64_t u; /* METRICS_UINT, METRICS_SECONDS (ns) */
  int64_t i;  /* METRICS_INT */
  /* A histogram's bucket sample: its histogram and bucket index (the
   * last label is le), else NULL and -1. */
  const struct metrics_hist *hist;
  int bucket;
};

/* What a listing is written to: each family's name, type and help once,
 * then its samples. */
struct metrics_sink {
  void (*family)(void *arg, const char *name, const char *type,
                 const char *help);
  void (*sample)(void *arg, const struct metrics_sample *s);
  void *arg;
};

/* Lists every family of `set` and its samples, in the order of the
 * exposition: the exporter's own, then each target's. */
void metrics_list(const struct metrics_set *set,
                  const struct metrics_sink *sink);

/* A sample's value as a double. */
double metrics_sample_value(const struct metrics_sample *s);

/* The exemplar of bucket sample `s`, or NULL when it has none: what
 * every renderer shows, the OpenMetrics page and remote write alike. */
const struct metrics_exemplar *
metrics_sample_exemplar(const struct metrics_sample *s);

/* The time of exemplar `x` in milliseconds since the epoch: its wall
 * time, or when it was attached if the file has no wall clock (a time
 * that does not change from one push to the next). */
int64_t metrics_exemplar_ms(const struct metrics_exemplar *x);

/* `s` with every byte sequence that is not UTF-8 replaced by U+FFFD,
 * written by `put` (Prometheus rejects label values that are not UTF-8;
 * names come from files). */
void metrics_utf8(const char *s, void (*put)(void *arg, const char *p,
                                              size_t n), void *arg);

/* The labels that series have already (pid, program, domain, event,
 * phase, le), NULL-terminated: no --label may be one of them (`host`
 * may, and replaces the host's name). */
extern const char *const metrics_reserved_labels[];

/* ================================================================== */
/* rules.c                                                              */
/* ================================================================== */

/* The conditions of `eventring watch --when`.
 *
 *   rule    := or
 *   or      := and { "or" and }
 *   and     := unary { "and" unary }
 *   unary   := "not" unary | primary [ "for" DURATION ]
 *   primary := "(" or ")" | simple | aggregate
 *   simple  := "pause>" DURATION | "phase:" NAME ">" DURATION
 *            | "span:" NAME ">" DURATION | "int:" NAME ">" INTEGER
 *            | "event:" NAME | "lost"
 *   aggregate := FN "(" SOURCE "," DURATION ")" CMP LIMIT
 *            | "gc_share(" DURATION ")" CMP PERCENT
 *   FN      := p50 | p90 | p99 | p999 | max | min | avg | count | rate
 *   SOURCE  := pause | phase:NAME | span:NAME | int:NAME | event:NAME | lost
 *   CMP     := > | >= | < | <=
 *
 * Words are separated by spaces or by ( ) , < > =, which names cannot
 * hold.  p50 ... avg take the durations of pauses, phases and spans
 * (LIMIT a duration) or the values of an int (LIMIT a number); count and
 * rate (per second; LIMIT a number, "/s" allowed) any source, lost
 * counting the events lost.  gc_share is the largest share of the window
 * that one domain spent in GC pauses (outermost runtime phases, counted
 * when they end), LIMIT a percentage such as 30%.  A percentile of an
 * int counts a negative value as 0.  An aggregate over no value (a
 * percentile, min, max or avg of an empty window) is false.
 *
 * A simple condition holds at the instant of its event; an aggregate, a
 * level, over the window that ends at the last boundary of its slices
 * (rules.c); `C for D` (C of aggregates only) when C has held at every
 * evaluation for at least D. */

/* Each window is cut into this many slices, its resolution. */
#define RULES_SLICES 20

struct rules;
struct rules_eval;

/* An empty set of rules, or NULL when out of memory. */
struct rules *rules_new(void);
void rules_free(struct rules *rs);

/* Parses `text` and adds it to `rs` as rule number rules_count() - 1.
 * Returns 0, or -1 with what was wrong or expected and ", at column N"
 * (1 for the first byte) in `err`, `size` bytes, or "out of memory". */
int rules_add(struct rules *rs, const char *text, char *err, size_t size);
int rules_count(const struct rules *rs);
/* Whether a rule of `rs` is on runtime phases by name (phase:NAME), so
 * that a caller may skip naming the phases when none is. */
int rules_on_phases(const struct rules *rs);
/* Rule `i` as written. */
const char *rules_text(const struct rules *rs, int i);
/* One word for snapshot names: the simple condition's kind (pause,
 * phase, span, int, event, lost), the aggregate's function (p99, count,
 * gc_share...), or "rule" for a compound rule. */
const char *rules_reason(const struct rules *rs, int i);
/* How many sources of rule `i` never appeared in any process evaluated
 * (lost and gc_share are not counted), listed in `buf` ("event:app.retry,
 * span:db"); 0 when every one did. */
int rules_unseen(const struct rules *rs, int i, char *buf, size_t size);

/* Called when rule `rule` fires: in `domain`, at trace time `at`, for an
 * anomaly that began at `start`, with what was measured. */
typedef void (*rules_fire_fn)(void *arg, int rule, int domain, uint64_t at,
                              uint64_t start, const char *measured);

/* The evaluation of `rs` for one process with domains 0 .. ndomains - 1,
 * losses counted in `lost_unit` (kept, not copied).  NULL when out of
 * memory. */
struct rules_eval *rules_eval_new(struct rules *rs, int ndomains,
                                  const char *lost_unit, rules_fire_fn fire,
                                  void *arg);
void rules_eval_free(struct rules_eval *e);

/* Feeding: every event's timestamp (rules_time), which moves trace time
 * and evaluates the rules at the boundaries it passes, and what the
 * conditions are about.  The others call rules_time() themselves. */
void rules_time(struct rules_eval *e, int domain, uint64_t ts);
/* A GC pause (pauses_init's callback) that ended at `ts`. */
void rules_pause(struct rules_eval *e, int domain, uint64_t ts,
                 uint64_t duration);
/* Runtime phase `name` from `start` to `ts`, at any depth. */
void rules_phase(struct rules_eval *e, int domain, const char *name,
                 uint64_t ts, uint64_t start);
enum rules_user_kind { RULES_UNIT, RULES_INT, RULES_SPAN_BEGIN,
                       RULES_SPAN_END, RULES_CUSTOM };
void rules_user(struct rules_eval *e, int domain, uint64_t ts,
                enum rules_user_kind kind, const char *name, int64_t value);
/* `count` events lost in `domain` after its event at `ts`. */
void rules_lost(struct rules_eval *e, int domain, uint64_t ts,
                uint64_t count);
/* The spans open in `domain` are cut (a loss, a thread leaving it). */
void rules_cut(struct rules_eval *e, int domain);
/* The process's events have ended: trace time moves to the end of the
 * current slices (no further), evaluating the rules at the boundaries
 * it passes, so that the last slices count. */
void rules_finish(struct rules_eval *e);

#endif /* EVENTRING_TOOLS_ANALYSIS_H */
