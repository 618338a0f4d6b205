/* ranktest.c -- the Mann-Whitney rank test of analysis.h.
 *
 * The command links no libm (histogram.c takes its square roots by
 * Newton's iteration), so the exponential and the normal tail are
 * computed here from their series: exp by range reduction to [0, ln 2)
 * and Taylor's series; the normal tail by the series of the integral
 * below z = 3 and by Laplace's continued fraction above, where the
 * series would lose the tail to cancellation against 1/2.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

#define LN2 0.693147180559945309417232121458
#define SQRT_2PI 2.50662827463100050241576528481

/* e^x for x <= 0 (0 below the smallest double). */
static double exp_neg(double x) {
  if (!(x <= 0)) return 1; /* not used above 0; NaN too */
  if (x < -746) return 0;
  /* x = -k ln2 + r with r in [0, ln 2): e^x = e^r / 2^k. */
  int k = 0;
  while (x + (double)k * LN2 < 0) k++;
  double r = x + (double)k * LN2;
  double term = 1, sum = 1;
  for (int i = 1; i < 30; i++) {
    term *= r / i;
    sum += term;
  }
  for (int i = 0; i < k; i++) sum *= 0.5;
  return sum;
}

/* The density of the standard normal distribution. */
/* The square root of `x` (> 0) by Newton's iteration from above (no
 * libm): the iterates decrease to the root and stop when they no longer
 * do. */
static long double root(long double x) {
  long double r = x > 1 ? x : 1;
  for (int k = 0; k < 2000; k++) {
    long double next = 0.5L * (r + x / r);
    if (!(next < r)) break;
    r = next;
  }
  return r;
}

static double phi(double z) { return exp_neg(-0.5 * z * z) / SQRT_2PI; }

double rank_normal_tail(double z) {
  if (z != z) return 1;
  if (z < 0) return 1 - rank_normal_tail(-z);
  if (z > 40) return 0;
  if (z < 3) {
    /* P(0 < Z < z) = phi(z) (z + z^3/3 + z^5/(3 5) + ...); every term
     * is positive, and they shrink once 2n + 1 > z^2. */
    double term = z, sum = z;
    for (int n = 1; n < 500 && term > 1e-18 * sum; n++) {
      term *= z * z / (2 * n + 1);
      sum += term;
    }
    return 0.5 - phi(z) * sum;
  }
  /* P(Z > z) = phi(z) / (z + 1/(z + 2/(z + 3/(z + ...)))), evaluated
   * from the inside out; 300 levels are ample from z = 3 on. */
  double f = z;
  for (int k = 300; k >= 1; k--) f = z + k / f;
  return phi(z) / f;
}

/* The number of arrangements giving each U, c[0 .. na nb], for samples
 * of na and nb values without ties: the coefficients of the Gaussian
 * binomial [na + nb choose na]_q = prod_{i=1..na} (1 - q^(nb+i)) / (1 -
 * q^i).  Each partial product is [nb + i choose i]_q, whose coefficients
 * are whole numbers below C(50, 25) < 2^53: exact in doubles.  NULL when
 * out of memory. */
static double *exact_counts(unsigned na, unsigned nb) {
  size_t size = (size_t)na * nb + na + nb + 1;
  double *c = calloc(size, sizeof *c);
  if (!c) return NULL;
  c[0] = 1;
  size_t deg = 0;
  for (unsigned i = 1; i <= na; i++) {
    size_t k = nb + i;
    for (size_t d = deg + k; d >= k; d--) c[d] -= c[d - k];
    deg += k;
    /* Dividing by (1 - q^i): the quotient's coefficients are the
     * dividend's plus the quotient's i places lower. */
    for (size_t d = i; d <= deg; d++) c[d] += c[d - i];
    deg -= i;
  }
  return c;
}

double rank_exact_cdf(unsigned na, unsigned nb, double u) {
  if (na + nb > RANK_EXACT_MAX || na == 0 || nb == 0) return -1;
  double *c = exact_counts(na, nb);
  if (!c) return -1;
  size_t top = (size_t)na * nb;
  double below = 0, all = 0;
  for (size_t d = 0; d <= top; d++) {
    all += c[d];
    if ((double)d <= u + 1e-9) below += c[d];
  }
  free(c);
  return below / all;
}

int rank_test(const struct rank_sample *a, const struct rank_sample *b,
              struct rank_result *r) {
  r->na = r->nb = 0;
  r->u = r->z = r->shift = 0;
  r->p = 1;
  r->exact = 0;
  for (size_t i = 0; i < a->n; i++) r->na += a->count[i];
  for (size_t i = 0; i < b->n; i++) r->nb += b->count[i];
  if (r->na == 0 || r->nb == 0) return -1;

  /* Walk both samples in ascending order: each distinct value takes the
   * next ca + cb ranks, and each of its values the middle one. */
  long double seen = 0, rank_sum = 0, ties = 0;
  int tied = 0;
  size_t i = 0, j = 0;
  while (i < a->n || j < b->n) {
    uint64_t v;
    if (j >= b->n || (i < a->n && a->value[i] <= b->value[j]))
      v = a->value[i];
    else
      v = b->value[j];
    uint64_t ca = i < a->n && a->value[i] == v ? a->count[i++] : 0;
    uint64_t cb = j < b->n && b->value[j] == v ? b->count[j++] : 0;
    long double t = (long double)ca + (long double)cb;
    rank_sum += (long double)ca * (seen + (t + 1) / 2);
    seen += t;
    if (t > 1) {
      tied = 1;
      ties += t * t * t - t;
    }
  }
  long double na = (long double)r->na, nb = (long double)r->nb, n = na + nb;
  long double u = rank_sum - na * (na + 1) / 2;
  long double mean = na * nb / 2;
  r->u = (double)u;
  r->shift = (double)(u / (na * nb) - 0.5L);

  long double var = na * nb / 12 * ((n + 1) - ties / (n * (n - 1)));
  if (var > 0) {
    long double sd = root(var);
    long double d = u - mean;
    d = d > 0.5L ? d - 0.5L : d < -0.5L ? d + 0.5L : 0;
    r->z = (double)(d / sd);
  }

  if (!tied && r->na + r->nb <= RANK_EXACT_MAX) {
    /* U is then a whole number; the distribution is symmetric about the
     * mean, so the far side's tail is the near side's. */
    double near = u <= mean ? (double)u : (double)(na * nb - u);
    double lo = rank_exact_cdf((unsigned)r->na, (unsigned)r->nb, near);
    if (lo < 0) return -1;
    r->exact = 1;
    r->p = 2 * lo > 1 ? 1 : 2 * lo;
    return 0;
  }
  if (var <= 0) {
    r->p = 1; /* every value the same: nothing tells the samples apart */
    return 0;
  }
  double zabs = r->z < 0 ? -r->z : r->z;
  double p = 2 * rank_normal_tail(zabs);
  r->p = p > 1 ? 1 : p;
  return 0;
}

int quantile_test(const struct rank_sample *a, const struct rank_sample *b,
                  double q, struct quantile_result *r) {
  return quantile_test_scaled(a, b, q, 1, r);
}

int quantile_test_scaled(const struct rank_sample *a,
                         const struct rank_sample *b, double q, double scale,
                         struct quantile_result *r) {
  memset(r, 0, sizeof *r);
  if (!(scale > 0)) scale = 1;
  long double div = scale;
  r->p = 1;
  uint64_t na = 0, nb = 0;
  for (size_t i = 0; i < a->n; i++) na += a->count[i];
  for (size_t i = 0; i < b->n; i++) nb += b->count[i];
  if (na == 0 || nb == 0) return -1;
  uint64_t n = na + nb;
  /* The rank of the pooled quantile, nearest-rank style as
   * analysis.h's percentiles (a hair below an integer product counts
   * as that integer). */
  double x = q * (double)n - 1e-9;
  uint64_t k = x < 1 ? 1 : (uint64_t)x + ((double)(uint64_t)x < x);
  if (k > n) k = n;
  /* Walk both samples in ascending order to the value of rank k, then
   * count what lies above it on each side. */
  size_t i = 0, j = 0;
  uint64_t seen = 0, below_a = 0, below_b = 0, at_a = 0, at_b = 0;
  while (seen < k) {
    /* B's values divided by `scale`, compared exactly as long doubles. */
    long double va = i < a->n ? (long double)a->value[i] : 0;
    long double vb = j < b->n ? (long double)b->value[j] / div : 0;
    long double v = j >= b->n || (i < a->n && va <= vb) ? va : vb;
    uint64_t ca = i < a->n && va == v ? a->count[i++] : 0;
    uint64_t cb = j < b->n && vb == v ? b->count[j++] : 0;
    seen += ca + cb;
    below_a += ca;
    below_b += cb;
    at_a = ca;
    at_b = cb;
    r->value = (uint64_t)(v + 0.5L);
  }
  r->above_a = na - below_a;
  r->above_b = nb - below_b;
  /* Values tied at the quantile go above it when nothing would be above
   * it otherwise (many durations of one value at the top make it the
   * quantile), or when that brings the count above nearer to (1 - q) N,
   * unless everything would then be above.  The choice looks at the
   * pooled sample alone, never at which sample a value came from, so
   * the test stays exact. */
  double target = (1 - q) * (double)n;
  double gt = (double)(r->above_a + r->above_b);
  double ge = gt + (double)(at_a + at_b);
  double dgt = gt - target < 0 ? target - gt : gt - target;
  double dge = ge - target < 0 ? target - ge : ge - target;
  if (ge < (double)n && (gt == 0 || dge < dgt)) {
    r->above_a += at_a;
    r->above_b += at_b;
    r->at_included = 1;
  }
  uint64_t above = r->above_a + r->above_b;
  r->excess = (double)r->above_b - (double)nb * (double)above / (double)n;
  r->p_slower = r->p_faster = 1;
  if (above == 0 || above == n) return 0;

  /* The hypergeometric probabilities of B's share of the `above` values,
   * relative to the most likely share (1 there, so nothing overflows;
   * the far tails underflow to 0, which they practically are), built by
   * the ratio of neighbours P(t + 1) / P(t) = (K - t)(nB - t) / ((t + 1)
   * (N - K - nB + t + 1)). */
  uint64_t lo = nb > n - above ? nb - (n - above) : 0;
  uint64_t hi = above < nb ? above : nb;
  size_t len = (size_t)(hi - lo + 1);
  double *pr = malloc(len * sizeof *pr);
  if (!pr) {
    /* Without room for the distribution: no verdict, as if no test. */
    return -1;
  }
  uint64_t mode = (uint64_t)(((double)above + 1) * ((double)nb + 1) /
                             ((double)n + 2));
  if (mode < lo) mode = lo;
  if (mode > hi) mode = hi;
  double K = (double)above, NB = (double)nb, N = (double)n;
  pr[mode - lo] = 1;
  for (uint64_t t = mode; t < hi; t++) {
    double td = (double)t;
    pr[t + 1 - lo] = pr[t - lo] * (K - td) * (NB - td) /
                     ((td + 1) * (N - K - NB + td + 1));
  }
  for (uint64_t t = mode; t > lo; t--) {
    double td = (double)(t - 1);
    pr[t - 1 - lo] = pr[t - lo] * ((td + 1) * (N - K - NB + td + 1)) /
                     ((K - td) * (NB - td));
  }
  double all = 0, tail = 0, obs = pr[r->above_b - lo], up = 0, down = 0;
  for (size_t t = 0; t < len; t++) {
    all += pr[t];
    /* Ties in probability count as "as extreme" (Fisher), within the
     * rounding of the products above. */
    if (pr[t] <= obs * (1 + 1e-7)) tail += pr[t];
    if (t + lo >= r->above_b) up += pr[t];
    if (t + lo <= r->above_b) down += pr[t];
  }
  free(pr);
  r->p = tail / all > 1 ? 1 : tail / all;
  r->p_slower = up / all > 1 ? 1 : up / all;
  r->p_faster = down / all > 1 ? 1 : down / all;
  return 0;
}

/* The sample's size, mean and variance (n - 1 in the denominator). */
static void moments(const struct rank_sample *s, long double *n,
                    long double *mean, long double *var) {
  long double cnt = 0, sum = 0;
  for (size_t i = 0; i < s->n; i++) {
    cnt += (long double)s->count[i];
    sum += (long double)s->count[i] * (long double)s->value[i];
  }
  long double m = cnt > 0 ? sum / cnt : 0, ss = 0;
  for (size_t i = 0; i < s->n; i++) {
    long double d = (long double)s->value[i] - m;
    ss += (long double)s->count[i] * d * d;
  }
  *n = cnt;
  *mean = m;
  *var = cnt > 1 ? ss / (cnt - 1) : 0;
}

int mean_test(const struct rank_sample *a, const struct rank_sample *b,
              double scale, struct mean_result *r) {
  memset(r, 0, sizeof *r);
  r->p = r->p_slower = r->p_faster = 1;
  long double na, ma, va, nb, mb, vb;
  moments(a, &na, &ma, &va);
  moments(b, &nb, &mb, &vb);
  r->na = (uint64_t)na;
  r->nb = (uint64_t)nb;
  if (na < 2 || nb < 2) return -1;
  long double s = scale > 0 ? scale : 1;
  long double diff = mb - s * ma;
  long double var = vb / nb + s * s * va / na;
  r->excess = (double)diff;
  if (!(var > 0)) {
    r->p = diff == 0 ? 1 : 0;
    r->p_slower = diff > 0 ? 0 : 1;
    r->p_faster = diff < 0 ? 0 : 1;
    return 0;
  }
  long double sd = root(var);
  r->z = (double)(diff / sd);
  double zabs = r->z < 0 ? -r->z : r->z;
  double p = 2 * rank_normal_tail(zabs);
  r->p = p > 1 ? 1 : p;
  r->p_slower = rank_normal_tail(r->z);
  r->p_faster = rank_normal_tail(-r->z);
  return 0;
}
