/* bars.c -- power-of-two bins of a histogram, and their bar chart in
 * text (render.h). */
#include <inttypes.h>
#include <string.h>

#include "render/render.h"

static int exponent(uint64_t v) { return v ? 63 - __builtin_clzll(v) : 0; }

void bars_bin(const struct histogram *h, struct bars *b) {
  memset(b, 0, sizeof *b);
  uint64_t total = hist_count(h);
  if (total == 0) return;
  int e0 = exponent(hist_min(h)), e1 = exponent(hist_max(h));
  uint64_t below = 0;
  for (int e = e0; e <= e1; e++) {
    int i = b->n++;
    b->lo[i] = e == e0 && hist_min(h) == 0 ? 0 : UINT64_C(1) << e;
    /* The last bin takes the rest: 2^(e1+1) may not fit in 64 bits. */
    uint64_t upto =
        e == e1 ? total : hist_count_below(h, UINT64_C(1) << (e + 1));
    b->count[i] = upto - below;
    below = upto;
    if (b->count[i] > b->peak) b->peak = b->count[i];
  }
}

uint64_t bars_hi(const struct bars *b, int i) {
  uint64_t lo = b->lo[i] ? b->lo[i] : 1;
  return lo >> 63 ? UINT64_MAX : lo << 1;
}

void bars_print(FILE *out, const struct histogram *h, const char *what,
                int width) {
  struct bars b;
  bars_bin(h, &b);
  if (b.n == 0) return;
  char lo[32], hi[32];
  fprintf(out, "\n  %-23s  count\n", what);
  for (int i = 0; i < b.n; i++) {
    int len = (int)((double)b.count[i] * width / (double)b.peak + 0.5);
    if (len == 0 && b.count[i] > 0) len = 1;
    analysis_duration(lo, b.lo[i]);
    analysis_duration(hi, bars_hi(&b, i));
    fprintf(out, "  %10s .. %-10s  ", lo, hi);
    for (int k = 0; k < len; k++) fputc('#', out);
    fprintf(out, "%*s %" PRIu64 "\n", width - len, "", b.count[i]);
  }
}
