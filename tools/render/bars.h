/* bars.h -- a distribution of durations in power-of-two bins, and its
 * bar chart on a terminal (`eventring latency`).  `eventring report`
 * draws the same bins in SVG, so both pictures agree.
 *
 * Bin i holds the durations in [2^(e0+i), 2^(e0+i+1)) nanoseconds, e0
 * being the exponent of the smallest duration (a duration of 0 counts in
 * the first bin); the bins run up to the one that holds the largest.
 * Powers of two are bucket boundaries of the histogram (histogram.h), so
 * the counts are exact.
 */
#ifndef EVENTRING_TOOL_BARS_H
#define EVENTRING_TOOL_BARS_H

#include <stdint.h>
#include <stdio.h>

#include "histogram.h"

#define BARS_MAX 64

struct bars {
  int n;                  /* bins in use; 0 for an empty histogram */
  uint64_t lo[BARS_MAX];  /* each bin's lower end, in nanoseconds */
  uint64_t count[BARS_MAX];
  uint64_t peak;          /* the largest count */
};

void bars_bin(const struct histogram *h, struct bars *b);

/* The upper end of bin i (its exclusive bound), or UINT64_MAX for a bin
 * that reaches 2^64. */
uint64_t bars_hi(const struct bars *b, int i);

/* Prints the chart of `h` to `out`: a line per bin, its range, a bar of
 * '#' as long as `width` times its share of the peak (at least one for a
 * bin that is not empty) and its count.  `what` heads the ranges'
 * column ("pause", "duration").  Prints nothing for an empty histogram. */
void bars_print(FILE *out, const struct histogram *h, const char *what,
                int width);

#endif /* EVENTRING_TOOL_BARS_H */
