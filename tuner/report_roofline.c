/* report_roofline.c: the page's section placing the best variants under the device's measured
 * limits (report_int.h).
 *
 * Ceilings are the latest peaks of the device: a limit in GB/s is the memory roof, each limit
 * in TFLOP/s a compute roof. A best variant is placed only where its flops and bytes are known
 * (tune report --metrics: the database records neither): at its arithmetic intensity and
 * achieved TFLOP/s when it does flops, by its achieved GB/s beside the memory roof when it only
 * moves bytes. Nothing is estimated. */
#include "report_int.h"

#include <math.h>
#include <string.h>

#include "report_svg.h"

typedef struct roofs {
  int64_t device_id;
  const char *device;
  double gbps;                 /* the highest limit in GB/s, 0 none */
  const char *gbps_kind;
  double tflops[8];            /* limits in TFLOP/s */
  const char *tflops_kind[8];
  int n_tflops;
} roofs;

static roofs roofs_of(const tune_report_data *d, int64_t device_id) {
  roofs r = {.device_id = device_id};
  size_t i;
  const json_t *k;
  json_array_foreach(d->peaks, i, k) {
    if (json_integer_value(json_object_get(k, "device_id")) != device_id) continue;
    r.device = tune_report_str(k, "device");
    const char *unit = tune_report_str(k, "unit");
    double v = tune_report_num(k, "value");
    if (!strncmp(unit, "GB/s", 4) && v > r.gbps) r.gbps = v, r.gbps_kind = tune_report_str(k, "kind");
    else if (!strncmp(unit, "TFLOP/s", 7) && r.n_tflops < 8 && v > 0) {
      r.tflops_kind[r.n_tflops] = tune_report_str(k, "kind");
      r.tflops[r.n_tflops++] = v;
    }
  }
  return r;
}

static int on_device(const json_t *row, int64_t id) { return json_integer_value(json_object_get(row, "device_id")) == id; }
static int placed(const json_t *row) { return tune_report_num(row, "flops") > 0 && tune_report_num(row, "bytes") > 0 && tune_report_num(row, "median_ns") > 0; }
static int bytes_only(const json_t *row) { return tune_report_num(row, "flops") <= 0 && tune_report_num(row, "bytes") > 0 && tune_report_num(row, "median_ns") > 0; }

static void roofline_chart(FILE *f, const tune_report_data *d, const roofs *r) {
  double tmax = 0, ai_lo = 0.1, ai_hi = 10, p_lo = INFINITY;
  for (int i = 0; i < r->n_tflops; ++i) tmax = fmax(tmax, r->tflops[i]);
  if (r->gbps > 0 && tmax > 0) ai_hi = fmax(ai_hi, 10 * tmax * 1e3 / r->gbps);
  size_t i;
  const json_t *row;
  json_array_foreach(d->best, i, row) {
    if (!on_device(row, r->device_id) || !placed(row)) continue;
    double ai = tune_report_num(row, "flops") / tune_report_num(row, "bytes");
    double tf = tune_report_num(row, "flops") / tune_report_num(row, "median_ns") / 1e3;
    ai_lo = fmin(ai_lo, ai), ai_hi = fmax(ai_hi, ai), p_lo = fmin(p_lo, tf), tmax = fmax(tmax, tf);
  }
  if (!isfinite(p_lo)) p_lo = r->gbps > 0 ? r->gbps * ai_lo / 1e3 : tmax / 1e3;
  tune_svg_axis x = {.px_lo = 60, .px_hi = 620, .label = "arithmetic intensity [FLOP/byte]"};
  tune_svg_axis y = {.px_lo = 330, .px_hi = 12, .label = "achieved [TFLOP/s]"};
  tune_svg_axis_fit(&x, ai_lo, ai_hi, 1, 1);
  tune_svg_axis_fit(&y, fmin(p_lo, r->gbps > 0 ? r->gbps * x.lo / 1e3 : p_lo), tmax > 0 ? tmax : 1, 1, 1);
  char title[256];
  snprintf(title, sizeof title, "roofline of %s (device %lld)", r->device ? r->device : "?", (long long)r->device_id);
  tune_svg_open(f, 640, 370, title);
  tune_svg_axes(f, &x, &y);
  for (int k = 0; k < r->n_tflops; ++k) {
    double ridge = r->gbps > 0 ? r->tflops[k] * 1e3 / r->gbps : x.lo;
    fprintf(f, "<polyline class=\"roof\" points=\"");
    if (r->gbps > 0) fprintf(f, "%.1f,%.1f ", tune_svg_map(&x, x.lo), tune_svg_map(&y, r->gbps * x.lo / 1e3));
    fprintf(f, "%.1f,%.1f %.1f,%.1f\"><title>", tune_svg_map(&x, fmax(ridge, x.lo)), tune_svg_map(&y, r->tflops[k]),
            tune_svg_map(&x, x.hi), tune_svg_map(&y, r->tflops[k]));
    tune_xml_text(f, r->tflops_kind[k]);
    fprintf(f, " %.1f TFLOP/s</title></polyline><text class=\"roof-label\" x=\"%.1f\" y=\"%.1f\">", r->tflops[k],
            tune_svg_map(&x, x.hi) - 4, tune_svg_map(&y, r->tflops[k]) - 3 - 11 * k);
    tune_xml_text(f, r->tflops_kind[k]);
    fprintf(f, " %.0f</text>\n", r->tflops[k]);
  }
  int n = 0;
  json_array_foreach(d->best, i, row) {
    if (!on_device(row, r->device_id) || !placed(row)) continue;
    double ai = tune_report_num(row, "flops") / tune_report_num(row, "bytes");
    double tf = tune_report_num(row, "flops") / tune_report_num(row, "median_ns") / 1e3;
    fprintf(f, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>", tune_svg_map(&x, ai),
            tune_svg_map(&y, tf), tune_svg_color(n++));
    tune_xml_text(f, tune_report_str(row, "recipe"));
    fputc(' ', f);
    tune_xml_text(f, tune_report_str(row, "problem"));
    fprintf(f, ": %.1f TFLOP/s at %.3g FLOP/byte</title></circle>\n", tf, ai);
  }
  tune_svg_close(f);
}

/* Variants that only move bytes: achieved GB/s against the memory roof, one row each. */
static void bandwidth_chart(FILE *f, const tune_report_data *d, const roofs *r) {
  size_t i;
  const json_t *row;
  int n = 0;
  double hi = r->gbps;
  json_array_foreach(d->best, i, row)
    if (on_device(row, r->device_id) && bytes_only(row)) ++n, hi = fmax(hi, tune_report_num(row, "bytes") / tune_report_num(row, "median_ns"));
  if (!n) return;
  int h = 50 + 14 * n;
  tune_svg_axis x = {.px_lo = 260, .px_hi = 620, .label = "achieved [GB/s]"};
  tune_svg_axis y = {.lo = 0, .hi = n, .px_lo = h - 34, .px_hi = 8, .label = ""};
  tune_svg_axis_fit(&x, 0, hi, 0, 0);
  tune_svg_open(f, 640, h, "achieved bandwidth of the variants that do no flops");
  int k = 0;
  json_array_foreach(d->best, i, row) {
    if (!on_device(row, r->device_id) || !bytes_only(row)) continue;
    double gbps = tune_report_num(row, "bytes") / tune_report_num(row, "median_ns"), py = tune_svg_map(&y, k++ + 0.5);
    fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"9\"><title>%.0f GB/s</title></rect>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x.px_lo, py - 4.5, tune_svg_map(&x, gbps) - x.px_lo, gbps,
            x.px_lo - 4, py + 3);
    tune_xml_text(f, tune_report_str(row, "recipe"));
    fputc(' ', f);
    tune_xml_text(f, tune_report_str(row, "problem"));
    fputs("</text>\n", f);
  }
  if (r->gbps > 0) {
    fprintf(f, "<line class=\"roof\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/><text class=\"roof-label\" x=\"%.1f\" y=\"%.1f\">",
            tune_svg_map(&x, r->gbps), y.px_lo, tune_svg_map(&x, r->gbps), y.px_hi, tune_svg_map(&x, r->gbps) - 3, y.px_lo + 12);
    tune_xml_text(f, r->gbps_kind);
    fprintf(f, " %.0f</text>", r->gbps);
  }
  tune_svg_xaxis(f, &x, &y);
  tune_svg_close(f);
}

static void peaks_table(FILE *f, const tune_report_data *d, int64_t device_id) {
  size_t i;
  const json_t *k;
  fputs("<table class=\"peaks\"><tr><th>limit</th><th>value</th><th>unit and how measured</th><th>measured at</th></tr>\n", f);
  json_array_foreach(d->peaks, i, k) {
    if (json_integer_value(json_object_get(k, "device_id")) != device_id) continue;
    fputs("<tr><td>", f);
    tune_xml_text(f, tune_report_str(k, "kind"));
    fprintf(f, "</td><td class=\"num\" data-peak=\"%.6g\">%.1f</td><td>", tune_report_num(k, "value"), tune_report_num(k, "value"));
    tune_xml_text(f, tune_report_str(k, "unit"));
    fputs("</td><td>", f);
    tune_xml_text(f, tune_report_str(k, "measured_at"));
    fputs("</td></tr>\n", f);
  }
  fputs("</table>\n", f);
}

/* The best variant of every (recipe source, problem) on the device, with what can be derived. */
static void best_table(FILE *f, const tune_report_data *d, int64_t device_id) {
  size_t i;
  const json_t *row;
  fputs("<table class=\"best\"><tr><th>recipe</th><th>problem</th><th>median [us]</th><th>timing</th>"
        "<th>TFLOP/s</th><th>GB/s</th><th>result</th></tr>\n", f);
  json_array_foreach(d->best, i, row) {
    if (!on_device(row, device_id)) continue;
    double ns = tune_report_num(row, "median_ns"), fl = tune_report_num(row, "flops"), by = tune_report_num(row, "bytes");
    fputs("<tr><td>", f);
    tune_xml_text(f, tune_report_str(row, "recipe"));
    fputs("</td><td>", f);
    tune_xml_text(f, tune_report_str(row, "problem"));
    fprintf(f, "</td><td class=\"num\" data-median-ns=\"%.1f\">%.2f</td><td>", ns, ns / 1e3);
    tune_xml_text(f, tune_report_str(row, "timing"));
    fputs("</td><td class=\"num\">", f);
    if (fl > 0 && ns > 0) fprintf(f, "%.1f", fl / ns / 1e3); else fputs("-", f);
    fputs("</td><td class=\"num\">", f);
    if (by > 0 && ns > 0) fprintf(f, "%.0f", by / ns); else fputs("-", f);
    fprintf(f, "</td><td class=\"num\">%lld</td></tr>\n", (long long)json_integer_value(json_object_get(row, "result_id")));
  }
  fputs("</table>\n", f);
}

static void metrics_note(FILE *f, const tune_report_data *d) {
  if (!json_array_size(d->metrics)) {
    fputs("<p class=\"note\">The database records no flops or bytes per problem (a recipe's <code>metrics</code> "
          "live in its file), so no variant is placed on the roofline: only the device's measured ceilings are drawn. "
          "<code>tune report --metrics recipes/NAME.lua</code> evaluates the recipe's metrics for its problems.</p>\n", f);
    return;
  }
  size_t i, j;
  const json_t *m, *r;
  fputs("<p class=\"note\">Flops and bytes per launch come from the <code>metrics</code> of ", f);
  json_array_foreach(d->metrics, i, m) {
    fputs(i ? ", <code>" : "<code>", f);
    tune_xml_text(f, tune_report_str(m, "file"));
    fputs("</code> (", f);
    json_array_foreach(json_object_get(m, "recipes"), j, r) {
      fputs(j ? ", " : "", f);
      tune_xml_text(f, tune_report_str(r, "name"));
      fputs(" source ", f);
      tune_xml_text(f, tune_report_str(r, "source_hash"));
    }
    fputs(")", f);
  }
  int stale = 0, missing = 0;
  const json_t *row;
  json_array_foreach(d->best, i, row) {
    if (!json_object_get(row, "bytes")) missing++;
    else if (strcmp(tune_report_str(row, "metrics_source_hash"), tune_report_str(row, "source_hash"))) stale++;
  }
  fprintf(f, " as they are now, not from the database. %d best variants ran another source of their recipe; "
             "%d have no problem in these files and are not placed.</p>\n", stale, missing);
}

void tune_report_roofline(FILE *f, const tune_report_data *d) {
  fputs("<section id=\"roofline\"><h2>Best variants against the device's limits</h2>\n", f);
  metrics_note(f, d);
  size_t i;
  const json_t *dev;
  int drawn = 0;
  json_array_foreach(d->devices, i, dev) {
    int64_t id = json_integer_value(json_object_get(dev, "id"));
    roofs r = roofs_of(d, id);
    int n_best = 0;
    size_t j;
    const json_t *row;
    json_array_foreach(d->best, j, row) n_best += on_device(row, id);
    if (!n_best && !r.device) continue;
    drawn++;
    fputs("<h3>", f);
    tune_xml_text(f, tune_report_str(dev, "name"));
    fprintf(f, " (device %lld, ", (long long)id);
    tune_xml_text(f, tune_report_str(dev, "uuid"));
    fputs(")</h3>\n", f);
    if (!r.device) fputs("<p class=\"none\">none: no measured limits (peaks) for this device, so no roofline.</p>\n", f);
    int n_bytes_only = 0;
    json_array_foreach(d->best, j, row) n_bytes_only += on_device(row, id) && bytes_only(row);
    if (r.device || n_bytes_only) {
      fputs("<figure class=\"wide\">", f);
      if (r.device) roofline_chart(f, d, &r);
      bandwidth_chart(f, d, &r);
      fputs("<figcaption>Ceilings: the latest measured limits of this device (peaks); bars: achieved bandwidth of the "
            "variants that do no flops.</figcaption></figure>\n", f);
    }
    if (r.device) peaks_table(f, d, id);
    if (n_best) best_table(f, d, id);
  }
  if (!drawn) fputs("<p class=\"none\">none: no verified results and no measured limits.</p>\n", f);
  fputs("</section>\n", f);
}
