/* report_svg.c: escaped text, scales, axes and frames of tune report's charts (report_svg.h). */
#include "report_svg.h"

#include <math.h>
#include <string.h>

void tune_xml_text(FILE *f, const char *s) {
  for (; s && *s; ++s) {
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default:
      /* control characters are not allowed in XML 1.0 text */
      if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t') fputc(' ', f);
      else fputc(*s, f);
    }
  }
}

/* The largest of 1, 2, 5 times a power of ten not above v (v > 0). */
static double nice_below(double v) {
  double p = pow(10, floor(log10(v)));
  return v >= 5 * p ? 5 * p : v >= 2 * p ? 2 * p : p;
}

/* The linear tick step that gives about 5 ticks over [lo, hi]. */
static double lin_step(double lo, double hi) {
  return nice_below((hi - lo) / 4);
}

void tune_svg_axis_fit(tune_svg_axis *a, double lo, double hi, int allow_log, double want_log_ratio) {
  if (lo > hi) { double t = lo; lo = hi; hi = t; }
  if (!isfinite(lo) || !isfinite(hi)) lo = 0, hi = 1;
  a->log = allow_log && lo > 0 && hi / lo > want_log_ratio;
  a->step = 0;
  if (a->log) {
    a->lo = pow(10, floor(log10(lo)));
    a->hi = pow(10, ceil(log10(hi)));
    if (a->hi <= a->lo) a->hi = a->lo * 10;
    return;
  }
  if (hi == lo) {
    double m = lo ? fabs(lo) * 0.1 : 1;
    lo -= m, hi += m;
  }
  double step = lin_step(lo, hi);
  a->lo = floor(lo / step) * step;
  a->hi = ceil(hi / step) * step;
  a->step = step; /* ticks on multiples of it, which the snapped range starts at */
}

double tune_svg_map(const tune_svg_axis *a, double v) {
  double t;
  if (a->log) t = v > 0 ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : 0;
  else t = (v - a->lo) / (a->hi - a->lo);
  if (!(t >= 0)) t = 0; /* also NaN */
  if (t > 1) t = 1;
  return a->px_lo + t * (a->px_hi - a->px_lo);
}

void tune_svg_open(FILE *f, int w, int h, const char *title) {
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">"
             "<title>", w, h, w, h);
  tune_xml_text(f, title);
  fputs("</title>\n", f);
}

void tune_svg_close(FILE *f) { fputs("</svg>\n", f); }

void tune_svg_num(char *buf, size_t n, double v) {
  double a = fabs(v);
  if (v == 0) snprintf(buf, n, "0");
  else if (a >= 1000 && a < 1e6) snprintf(buf, n, "%.0f", v);
  else if (a >= 1e-3 && a < 1e6) snprintf(buf, n, "%.3g", v);
  else snprintf(buf, n, "%.2g", v);
}

/* A tick's label: on a linear axis with as many decimals as its step needs. */
static void tick_label(const tune_svg_axis *a, double v, char *buf, size_t n) {
  double step = a->log ? 0 : a->step > 0 ? a->step : lin_step(a->lo, a->hi);
  int decimals = step > 0 && step < 1 ? (int)ceil(-log10(step) - 1e-9) : 0;
  if (a->log || fabs(v) >= 1e6) tune_svg_num(buf, n, v);
  else snprintf(buf, n, "%.*f", decimals, v);
}

/* The ticks of an axis into t[max]; returns how many. */
static int ticks(const tune_svg_axis *a, double *t, int max) {
  int n = 0;
  if (a->log) {
    int decades = (int)lround(log10(a->hi / a->lo));
    int every = decades > 8 ? 2 : 1;
    for (double v = a->lo; v <= a->hi * 1.0001 && n < max; v *= pow(10, every)) t[n++] = v;
    return n;
  }
  double step = a->step > 0 ? a->step : lin_step(a->lo, a->hi);
  for (double v = a->lo; v <= a->hi + step * 1e-6 && n < max; v += step) t[n++] = fabs(v) < step * 1e-9 ? 0 : v;
  return n;
}

void tune_svg_xaxis(FILE *f, const tune_svg_axis *x, const tune_svg_axis *y) {
  double t[32];
  char num[32];
  int n = ticks(x, t, 32);
  fputs("<g class=\"axis\">", f);
  for (int i = 0; i < n; ++i) {
    double px = tune_svg_map(x, t[i]);
    tick_label(x, t[i], num, sizeof num);
    fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
            px, y->px_lo, px, y->px_hi, px, y->px_lo + 12, num);
  }
  fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", x->px_lo, y->px_hi,
          x->px_hi - x->px_lo, y->px_lo - y->px_hi);
  fprintf(f, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x->px_lo + x->px_hi) / 2, y->px_lo + 26);
  tune_xml_text(f, x->label);
  fputs("</text></g>\n", f);
}

void tune_svg_axes(FILE *f, const tune_svg_axis *x, const tune_svg_axis *y) {
  double t[32];
  char num[32];
  tune_svg_xaxis(f, x, y);
  fputs("<g class=\"axis\">", f);
  int n = ticks(y, t, 32);
  for (int i = 0; i < n; ++i) {
    double py = tune_svg_map(y, t[i]);
    tick_label(y, t[i], num, sizeof num);
    fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
            x->px_lo, py, x->px_hi, py, x->px_lo - 3, py + 3, num);
  }
  fprintf(f, "<text class=\"label\" transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">",
          x->px_lo - 38, (y->px_lo + y->px_hi) / 2);
  tune_xml_text(f, y->label);
  fputs("</text></g>\n", f);
}

const char *tune_svg_color(int i) {
  static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
  return palette[(i % 8 + 8) % 8];
}
