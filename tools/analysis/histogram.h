/* histogram.h -- a histogram of durations with bounded relative error.
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
#ifndef EVENTRING_TOOL_HISTOGRAM_H
#define EVENTRING_TOOL_HISTOGRAM_H

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

#endif /* EVENTRING_TOOL_HISTOGRAM_H */
