/* ranktest.h -- the Mann-Whitney rank test (Wilcoxon rank-sum test) that
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
#ifndef EVENTRING_TOOL_RANKTEST_H
#define EVENTRING_TOOL_RANKTEST_H

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

#endif /* EVENTRING_TOOL_RANKTEST_H */
