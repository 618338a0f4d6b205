/* histogram.c -- the log-linear histogram of analysis.h.
 *
 * Bucket index of a value v:
 *   v < 2^S (S = HIST_SUB_BITS):  v itself;
 *   otherwise, with e = floor(log2 v) >= S:
 *     2^S + (e - S) * 2^(S-1) + ((v >> (e - S + 1)) - 2^(S-1)),
 *   i.e. the range of e, then v's top S bits less the leading one.
 * The index grows with v, so a walk over the buckets in index order is a
 * walk over the values in ascending order, which percentiles need.
 */
#include <stdlib.h>

#include "analysis/analysis.h"

#define LINEAR (UINT64_C(1) << HIST_SUB_BITS)     /* exact buckets */
#define HALF (UINT64_C(1) << (HIST_SUB_BITS - 1)) /* buckets per range */
#define N_BUCKETS (LINEAR + (64 - HIST_SUB_BITS) * HALF)

struct histogram {
  uint64_t count, min, max;
  /* Welford's running mean and sum of squared deviations: unlike sums of
   * values and of squares, they neither overflow nor cancel
   * catastrophically for nanosecond values. */
  double mean, m2;
  uint64_t buckets[N_BUCKETS];
};

/* The layout above for any S (`sub` bits), inline here so that the
 * histogram's own S costs no call. */
static inline size_t layout_index(uint64_t v, unsigned sub) {
  uint64_t linear = UINT64_C(1) << sub, half = linear >> 1;
  if (v < linear) return (size_t)v;
  unsigned e = 63u - (unsigned)__builtin_clzll(v);
  unsigned shift = e - sub + 1;
  return (size_t)(linear + (e - sub) * half + ((v >> shift) - half));
}

/* The midpoint of bucket `i`: the value that is within half a bucket's
 * width of every value the bucket holds. */
static inline uint64_t layout_mid(size_t i, unsigned sub) {
  uint64_t linear = UINT64_C(1) << sub, half = linear >> 1;
  if (i < linear) return i;
  uint64_t j = i - linear;
  unsigned shift = (unsigned)(j / half) + 1; /* e - sub + 1 */
  uint64_t lo = (half + j % half) << shift;
  return lo + (UINT64_C(1) << (shift - 1));
}

static size_t index_of(uint64_t v) { return layout_index(v, HIST_SUB_BITS); }
static uint64_t midpoint_of(size_t i) { return layout_mid(i, HIST_SUB_BITS); }

size_t hist_layout_buckets(unsigned sub_bits) {
  return ((size_t)1 << sub_bits) +
         (64 - sub_bits) * ((size_t)1 << (sub_bits - 1));
}

size_t hist_layout_index(uint64_t v, unsigned sub_bits) {
  return layout_index(v, sub_bits);
}

uint64_t hist_layout_mid(size_t i, unsigned sub_bits) {
  return layout_mid(i, sub_bits);
}

struct histogram *hist_create(void) {
  /* calloc of this size comes from fresh zero pages: the buckets no value
   * falls into cost no memory. */
  return calloc(1, sizeof(struct histogram));
}

void hist_free(struct histogram *h) { free(h); }

void hist_record(struct histogram *h, uint64_t v) {
  h->buckets[index_of(v)]++;
  if (h->count == 0 || v < h->min) h->min = v;
  if (h->count == 0 || v > h->max) h->max = v;
  h->count++;
  double d = (double)v - h->mean;
  h->mean += d / (double)h->count;
  h->m2 += d * ((double)v - h->mean);
}

uint64_t hist_count(const struct histogram *h) { return h->count; }
uint64_t hist_min(const struct histogram *h) { return h->min; }
uint64_t hist_max(const struct histogram *h) { return h->max; }
double hist_mean(const struct histogram *h) { return h->mean; }

/* The square root by Newton's iteration, so that the command needs no
 * libm: from any start above the root the iterates decrease to it, each
 * step at least halving the excess once near, and stop when they no
 * longer decrease (the root, to the last bit or one below). */
static double root(double x) {
  if (!(x > 0)) return 0;
  double r = x > 1 ? x : 1;
  for (int i = 0; i < 2000; i++) {
    double next = 0.5 * (r + x / r);
    if (!(next < r)) break;
    r = next;
  }
  return r;
}

double hist_stddev(const struct histogram *h) {
  if (h->count == 0) return 0;
  return root(h->m2 / (double)h->count);
}

uint64_t hist_percentile(const struct histogram *h, double p) {
  if (h->count == 0) return 0;
  if (!(p < 100)) return h->max; /* also NaN */
  /* The rank, nearest-rank style.  p / 100 * n is rarely an exact binary
   * number (99.9 is not), so a product that lands a hair above an integer
   * counts as that integer. */
  double x = p / 100.0 * (double)h->count;
  uint64_t k = 1;
  if (x > 1) {
    x -= 1e-9;
    k = (uint64_t)x; /* x < 2^64: p < 100 */
    if ((double)k < x) k++;
  }
  if (k > h->count) k = h->count;
  uint64_t seen = 0;
  for (size_t i = 0; i < N_BUCKETS; i++) {
    seen += h->buckets[i];
    if (seen >= k) {
      uint64_t v = midpoint_of(i);
      if (v < h->min) v = h->min;
      if (v > h->max) v = h->max;
      return v;
    }
  }
  return h->max; /* not reached: the buckets hold count values */
}

uint64_t hist_count_below(const struct histogram *h, uint64_t v) {
  if (h->count == 0 || v <= h->min) return 0;
  if (v > h->max) return h->count;
  size_t end = index_of(v);
  uint64_t n = 0;
  for (size_t i = 0; i < end; i++) n += h->buckets[i];
  return n;
}

void hist_add(struct histogram *dst, const struct histogram *src) {
  if (src->count == 0) return;
  if (dst->count == 0 || src->min < dst->min) dst->min = src->min;
  if (dst->count == 0 || src->max > dst->max) dst->max = src->max;
  /* Chan et al.'s pairwise combination of Welford's running figures. */
  double na = (double)dst->count, nb = (double)src->count, n = na + nb;
  double delta = src->mean - dst->mean;
  dst->mean += delta * nb / n;
  dst->m2 += src->m2 + delta * delta * na * nb / n;
  dst->count += src->count;
  for (size_t i = 0; i < N_BUCKETS; i++)
    if (src->buckets[i]) dst->buckets[i] += src->buckets[i];
}

int hist_bucket_next(const struct histogram *h, size_t *i, uint64_t *value,
                     uint64_t *count) {
  for (; *i < N_BUCKETS; (*i)++) {
    if (!h->buckets[*i]) continue;
    uint64_t v = midpoint_of(*i);
    if (v < h->min) v = h->min;
    if (v > h->max) v = h->max;
    *value = v;
    *count = h->buckets[*i];
    (*i)++;
    return 1;
  }
  return 0;
}
