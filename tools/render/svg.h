/* svg.h -- chart primitives for `eventring report`: an inline SVG picture
 * with a plot area mapped to data coordinates, its axes with ticks, bars,
 * lines and marks, and the escaping of text for HTML and SVG.
 *
 * Every chart is an <svg class="chart"> whose data-points attribute
 * counts the data points drawn in it (bars with a count, line vertices),
 * so that a test reading the page's DOM can tell an empty chart.  Bars
 * are <rect class="bar">, lines <polyline class="line"> (a point alone:
 * <circle class="dot">), marks <line
 * class="mark">; each has a <title> (a tooltip) where it helps.
 */
#ifndef EVENTRING_TOOL_SVG_H
#define EVENTRING_TOOL_SVG_H

#include <stdio.h>

/* A number as a tick label: writes into buf (32 bytes). */
typedef void (*svg_label_fn)(char *buf, double v);

struct svg_plot {
  FILE *out;
  int w, h;                      /* the picture, in px */
  int left, right, top, bottom;  /* margins around the plot area */
  double x0, x1, y0, y1;         /* the data ranges of the plot area */
  long points;                   /* data points drawn so far */
  long at;                       /* offset of the data-points placeholder */
};

/* Writes `s` with & < > " ' escaped: safe in HTML text, in attribute
 * values and in SVG, for a page in UTF-8.  The names come from a file
 * and need not be UTF-8: what tool_put_text() shows as it is (printable
 * ASCII, well-formed UTF-8 characters) is written as it is, every other
 * byte as the text \DDD, as the tool's other output writes it. */
void svg_escape(FILE *out, const char *s);

/* Opens a chart of w x h px whose plot area shows [x0, x1] x [y0, y1]
 * (a degenerate range is widened), titled `title` (escaped).  `out` must
 * be seekable: svg_close() fills in the count of data points. */
void svg_open(struct svg_plot *p, FILE *out, int w, int h, double x0,
              double x1, double y0, double y1, const char *title);

double svg_x(const struct svg_plot *p, double x);
double svg_y(const struct svg_plot *p, double y);

/* The axes, with about five ticks each at round values, labelled by
 * `xl` and `yl` (NULL: no x ticks, for a chart that labels its own; a
 * label left empty: no tick there), and the axes' names. */
void svg_axes(struct svg_plot *p, svg_label_fn xl, svg_label_fn yl,
              const char *xname, const char *yname);

/* A bar over [xa, xb] from 0 to y, with tooltip `tip` (escaped; NULL for
 * none).  A bar of height 0 is not drawn and not counted. */
void svg_bar(struct svg_plot *p, double xa, double xb, double y,
             const char *tip);

/* A label under the x axis at x (escaped), for a chart of categories. */
void svg_xlabel(struct svg_plot *p, double x, const char *text);

/* A line through the n points (x[i], y[i]), in colour `colour` (an index
 * into a fixed palette); a NaN y breaks the line there. */
void svg_line(struct svg_plot *p, const double *x, const double *y, int n,
              int colour);

/* The legend: entry i names the lines of colour colours[i] (names
 * escaped), laid out in rows under the title, each entry as wide as its
 * text so that none overlaps the next; the plot area moves down by the
 * rows it takes.  Called before svg_axes(). */
void svg_legend(struct svg_plot *p, const char *const *names,
                const int *colours, int n);

/* A vertical mark at x across the plot area (lost events), with tooltip
 * `tip`. */
void svg_mark(struct svg_plot *p, double x, const char *tip);

void svg_close(struct svg_plot *p);

#endif /* EVENTRING_TOOL_SVG_H */
