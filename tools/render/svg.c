/* svg.c -- the chart primitives of render.h. */
#include <stdio.h>
#include <string.h>

#include "render/render.h"

/* Colours told apart by most readers, colour-blind ones included. */
static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73",
                                      "#cc79a7", "#e69f00", "#56b4e9",
                                      "#000000", "#999999"};
#define N_COLOURS (int)(sizeof palette / sizeof palette[0])

void svg_escape(FILE *out, const char *s) {
  const unsigned char *c = (const unsigned char *)s;
  size_t left = strlen(s);
  while (left) {
    size_t n = tool_text_char(c, left, TOOL_TEXT_UTF8);
    if (n == 0) {
      /* Not shown as it is, as in the tool's other output: a control
       * (not even allowed as a reference in XML) or a byte that is no
       * part of a well-formed UTF-8 character. */
      fprintf(out, "\\%03u", *c);
      n = 1;
    } else if (n > 1) {
      fwrite(c, 1, n, out); /* the page is UTF-8 */
    } else {
      switch (*c) {
      case '&': fputs("&amp;", out); break;
      case '<': fputs("&lt;", out); break;
      case '>': fputs("&gt;", out); break;
      case '"': fputs("&quot;", out); break;
      case '\'': fputs("&#39;", out); break;
      default: putc(*c, out);
      }
    }
    c += n;
    left -= n;
  }
}

void svg_open(struct svg_plot *p, FILE *out, int w, int h, double x0,
              double x1, double y0, double y1, const char *title) {
  memset(p, 0, sizeof *p);
  p->out = out;
  p->w = w;
  p->h = h;
  p->left = 64;
  p->right = 16;
  p->top = 34;
  p->bottom = 40;
  if (!(x1 > x0)) x1 = x0 + 1;
  if (!(y1 > y0)) y1 = y0 + 1;
  p->x0 = x0, p->x1 = x1, p->y0 = y0, p->y1 = y1;
  fprintf(out, "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "data-points=\"",
          w, h, w, h);
  /* Room for the count, filled in by svg_close(). */
  fflush(out);
  p->at = ftell(out);
  fputs("          \">\n<text class=\"title\" x=\"", out);
  fprintf(out, "%d\" y=\"16\">", p->left);
  svg_escape(out, title);
  fputs("</text>\n", out);
}

double svg_x(const struct svg_plot *p, double x) {
  return p->left + (x - p->x0) / (p->x1 - p->x0) * (p->w - p->left - p->right);
}

double svg_y(const struct svg_plot *p, double y) {
  return p->h - p->bottom -
         (y - p->y0) / (p->y1 - p->y0) * (p->h - p->top - p->bottom);
}

/* The command links without libm (histogram.c says why): the few
 * roundings the ticks need are done here. */
static double floor_of(double x) {
  if (!(x > -9e15 && x < 9e15)) return x;
  double t = (double)(long long)x;
  return t > x ? t - 1 : t;
}
static double ceil_of(double x) { return -floor_of(-x); }
static double abs_of(double x) { return x < 0 ? -x : x; }

/* A round step (1, 2 or 5 times a power of ten) giving about five ticks
 * over `range` (positive). */
static double tick_step(double range) {
  double raw = range / 5, mag = 1;
  while (mag > raw) mag /= 10;
  while (mag * 10 <= raw) mag *= 10;
  double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

void svg_axes(struct svg_plot *p, svg_label_fn xl, svg_label_fn yl,
              const char *xname, const char *yname) {
  FILE *out = p->out;
  double bx = svg_y(p, p->y0), lx = p->left, rx = p->w - p->right;
  fprintf(out, "<g class=\"axes\"><path d=\"M%.1f %.1fV%.1fH%.1f\"/>\n", lx,
          (double)p->top, bx, rx);
  char buf[32];
  if (yl) {
    double step = tick_step(p->y1 - p->y0);
    for (double v = ceil_of(p->y0 / step) * step; v <= p->y1 + step * 1e-9;
         v += step) {
      double y = svg_y(p, v);
      yl(buf, abs_of(v) < step * 1e-9 ? 0 : v);
      if (!buf[0]) continue;
      fprintf(out, "<path class=\"grid\" d=\"M%.1f %.1fH%.1f\"/>"
                   "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"end\">%s</text>\n",
              lx, y, rx, lx - 4, y + 4, buf);
    }
  }
  if (xl) {
    double step = tick_step(p->x1 - p->x0);
    for (double v = ceil_of(p->x0 / step) * step; v <= p->x1 + step * 1e-9;
         v += step) {
      double x = svg_x(p, v);
      xl(buf, abs_of(v) < step * 1e-9 ? 0 : v);
      fprintf(out, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"middle\">%s</text>\n",
              x, bx + 14, buf);
    }
  }
  if (xname) {
    fprintf(out, "<text class=\"name\" x=\"%.1f\" y=\"%d\" "
                 "text-anchor=\"end\">", rx, p->h - 4);
    svg_escape(out, xname);
    fputs("</text>\n", out);
  }
  if (yname) {
    /* Up the left edge, clear of the tick labels and the title. */
    double mid = (p->top + svg_y(p, p->y0)) / 2;
    fprintf(out, "<text class=\"name\" x=\"12\" y=\"%.1f\" "
                 "text-anchor=\"middle\" transform=\"rotate(-90 12 %.1f)\">",
            mid, mid);
    svg_escape(out, yname);
    fputs("</text>\n", out);
  }
  fputs("</g>\n", out);
}

void svg_bar(struct svg_plot *p, double xa, double xb, double y,
             const char *tip) {
  if (!(y > p->y0)) return;
  double x = svg_x(p, xa), w = svg_x(p, xb) - x, top = svg_y(p, y);
  fprintf(p->out, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                  "height=\"%.1f\">", x + 0.5, top, w > 1 ? w - 1 : w,
          svg_y(p, p->y0) - top);
  if (tip) {
    fputs("<title>", p->out);
    svg_escape(p->out, tip);
    fputs("</title>", p->out);
  }
  fputs("</rect>\n", p->out);
  p->points++;
}

void svg_xlabel(struct svg_plot *p, double x, const char *text) {
  fprintf(p->out, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
                  "text-anchor=\"middle\">", svg_x(p, x),
          svg_y(p, p->y0) + 14);
  svg_escape(p->out, text);
  fputs("</text>\n", p->out);
}

void svg_line(struct svg_plot *p, const double *x, const double *y, int n,
              int colour) {
  const char *c = palette[colour % N_COLOURS];
  int open = 0;
  for (int i = 0; i < n; i++) {
    if (y[i] != y[i]) {
      if (open) fputs("\"/>\n", p->out);
      open = 0;
      continue;
    }
    /* A point alone between gaps is a dot: a line of one point does not
     * show. */
    if (!open && (i + 1 == n || y[i + 1] != y[i + 1])) {
      fprintf(p->out, "<circle class=\"dot\" fill=\"%s\" cx=\"%.1f\" "
                      "cy=\"%.1f\" r=\"2.5\"/>\n",
              c, svg_x(p, x[i]), svg_y(p, y[i]));
      p->points++;
      continue;
    }
    if (!open)
      fprintf(p->out, "<polyline class=\"line\" stroke=\"%s\" points=\"", c);
    fprintf(p->out, "%s%.1f,%.1f", open ? " " : "", svg_x(p, x[i]),
            svg_y(p, y[i]));
    open = 1;
    p->points++;
  }
  if (open) fputs("\"/>\n", p->out);
}

/* The width of `s` in the legend's 11 px font, over-estimated: 7 px a
 * character (a digit of DejaVu Sans is 7 px at 11 px). */
static double text_width(const char *s) {
  double w = 0;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    if ((*c & 0xc0) != 0x80) w += 7;
  return w;
}

void svg_legend(struct svg_plot *p, const char *const *names,
                const int *colours, int n) {
  double x = p->left, y = 30;
  int rows = n > 0;
  for (int i = 0; i < n; i++) {
    double w = 14 + text_width(names[i]);
    if (x > p->left && x + w > p->w - p->right) {
      x = p->left;
      y += 14;
      rows++;
    }
    fprintf(p->out, "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" "
                    "width=\"10\" height=\"10\" fill=\"%s\"/>"
                    "<text x=\"%.1f\" y=\"%.1f\">", x, y - 9,
            palette[colours[i] % N_COLOURS], x + 14, y);
    svg_escape(p->out, names[i]);
    fputs("</text></g>\n", p->out);
    x += w + 18;
  }
  p->top += 14 * rows;
}

void svg_mark(struct svg_plot *p, double x, const char *tip) {
  double sx = svg_x(p, x);
  fprintf(p->out, "<line class=\"mark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" "
                  "y2=\"%.1f\"><title>", sx, sx, p->top, svg_y(p, p->y0));
  svg_escape(p->out, tip);
  fputs("</title></line>\n", p->out);
}

void svg_close(struct svg_plot *p) {
  fputs("</svg>\n", p->out);
  /* The count goes into the placeholder; a stream that cannot seek
   * (never the case for report's -o FILE) keeps the blanks. */
  long end = ftell(p->out);
  if (end >= 0 && p->at >= 0 && fseek(p->out, p->at, SEEK_SET) == 0) {
    fprintf(p->out, "%ld", p->points);
    fseek(p->out, end, SEEK_SET);
  }
}
