/* report_svg.h: the pieces of tune report's charts: XML-escaped text, axes with linear or
 * logarithmic scales and their ticks, and a frame per chart.
 *
 * Everything is printed to a FILE as XML that an XHTML page can hold inline (numeric character
 * references only, every element closed). Owns no memory. */
#ifndef TUNE_REPORT_SVG_H
#define TUNE_REPORT_SVG_H

#include <stdio.h>

/* Text with &, <, >, " escaped. NULL prints nothing. */
void tune_xml_text(FILE *f, const char *s);

/* One axis: data values [lo, hi] onto pixels [px_lo, px_hi] (px_hi < px_lo for a y axis). */
typedef struct tune_svg_axis {
  double lo, hi;        /* data range, lo < hi; both > 0 on a log axis */
  int log;              /* 1: logarithmic (base 10) */
  double px_lo, px_hi;  /* pixels of lo and hi */
  const char *label;    /* with its unit, e.g. "best median [us]" */
  double step;          /* linear tick step (tune_svg_axis_fit sets it); 0: about 5 ticks */
} tune_svg_axis;

/* Fit the axis to values in [lo, hi] (any order; a single value gets a margin): log when
 * allow_log, both are positive and they span more than a factor of want_log_ratio; the range
 * is widened to round numbers. */
void tune_svg_axis_fit(tune_svg_axis *a, double lo, double hi, int allow_log, double want_log_ratio);

/* The pixel of value v (clamped to the axis). */
double tune_svg_map(const tune_svg_axis *a, double v);

/* <svg> of w x h pixels with an accessible title (escaped). Closed by tune_svg_close. */
void tune_svg_open(FILE *f, int w, int h, const char *title);
void tune_svg_close(FILE *f);

/* The x axis alone: ticks, labels, vertical grid lines, the frame and its label. */
void tune_svg_xaxis(FILE *f, const tune_svg_axis *x, const tune_svg_axis *y);

/* Both axes with ticks, tick labels, grid lines and axis labels. */
void tune_svg_axes(FILE *f, const tune_svg_axis *x, const tune_svg_axis *y);

/* A number for a tick label or a table: 3 significant digits, no exponent for 1e-3..1e6. */
void tune_svg_num(char *buf, size_t n, double v);

/* A color of the chart palette (cycled). */
const char *tune_svg_color(int i);

#endif
