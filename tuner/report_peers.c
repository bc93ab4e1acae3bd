/* report_peers.c: the page's section on the ratios against the peers (report_int.h).
 *
 * From the latest comparison of kind 'compare' per recipe, per problem and timing mode, as the
 * text table of tune compare --report computes them (compare_report.h): tune's variant and the
 * peer with the lowest median over the rounds, and their ratio round by round (peer / tune,
 * above 1 tune is faster) as a median with its min-max range; "faster" only when the whole range
 * is above 1, "launch-bound" where a sustained ratio measures launch rates (tune_cmp_verdict). */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare_report.h"
#include "report_svg.h"

#define MAX_GROUPS 128

typedef tune_cmp_group group; /* read by tune_cmp_group_read, as the text table reads them */

static void ratio_chart(FILE *f, const json_t *info, const group *g, const char *const *verdict, int n) {
  double lo = 1, hi = 1;
  int shown = 0;
  for (int i = 0; i < n; ++i)
    if (g[i].ratio.n) lo = fmin(lo, g[i].ratio.lo), hi = fmax(hi, g[i].ratio.hi), shown++;
  if (!shown) return;
  int h = 52 + 16 * shown;
  tune_svg_axis x = {.px_lo = 270, .px_hi = 620, .label = "peer time / tune time (above 1: tune faster)"};
  tune_svg_axis y = {.lo = 0, .hi = shown, .px_lo = h - 36, .px_hi = 8, .label = ""};
  tune_svg_axis_fit(&x, lo, hi, 0, 0);
  char title[256];
  snprintf(title, sizeof title, "%s: ratio against the peers, median and min-max over the rounds", tune_report_str(info, "recipe"));
  tune_svg_open(f, 640, h, title);
  tune_svg_xaxis(f, &x, &y);
  fprintf(f, "<line class=\"one\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", tune_svg_map(&x, 1), y.px_lo,
          tune_svg_map(&x, 1), y.px_hi);
  int k = 0;
  for (int i = 0; i < n; ++i) {
    const tune_ratio *r = &g[i].ratio;
    if (!r->n) continue;
    double py = tune_svg_map(&y, shown - k++ - 0.5);
    const char *cls = strcmp(g[i].timing, "sustained") ? "burst" : "sustained";
    fprintf(f, "<g class=\"%s\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"/>"
               "<title>%.3f (%.3f-%.3f, %d rounds): %s</title></g><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
            cls, tune_svg_map(&x, r->lo), py, tune_svg_map(&x, r->hi), py, tune_svg_map(&x, r->median), py, r->median, r->lo,
            r->hi, r->n, verdict[i], x.px_lo - 4, py + 3);
    tune_xml_text(f, g[i].problem);
    fputs(" (", f);
    tune_xml_text(f, g[i].timing);
    fputs(")</text>\n", f);
  }
  tune_svg_close(f);
}

static void ratio_table(FILE *f, const group *g, const char *const *verdict, int n) {
  fputs("<table class=\"ratios\"><tr><th>problem</th><th>timing</th><th>tune [us]</th><th>peer</th><th>peer [us]</th>"
        "<th>ratio (min-max, rounds)</th><th>verdict</th></tr>\n", f);
  for (int i = 0; i < n; ++i) {
    const tune_ratio *r = &g[i].ratio;
    double tm = g[i].best_tune ? tune_median(g[i].best_tune->ns, g[i].rounds) : 0;
    double pm = g[i].best_peer ? tune_median(g[i].best_peer->ns, g[i].rounds) : 0;
    fputs("<tr><td>", f);
    tune_xml_text(f, g[i].problem);
    fputs("</td><td>", f);
    tune_xml_text(f, g[i].timing);
    if (tm > 0) fprintf(f, "</td><td class=\"num\">%.2f", tm / 1e3); else fputs("</td><td class=\"num\">-", f);
    fputs("</td><td>", f);
    tune_xml_text(f, g[i].best_peer ? g[i].best_peer->label : "-");
    if (pm > 0) fprintf(f, "</td><td class=\"num\">%.2f", pm / 1e3); else fputs("</td><td class=\"num\">-", f);
    if (r->n)
      fprintf(f, "</td><td class=\"num\" data-ratio=\"%.3f\" data-lo=\"%.3f\" data-hi=\"%.3f\">%.3f (%.3f-%.3f, %d)</td>"
                 "<td class=\"%s\">%s</td></tr>\n", r->median, r->lo, r->hi, r->median, r->lo, r->hi, r->n, verdict[i],
              verdict[i]);
    else fputs("</td><td>-</td><td>-</td></tr>\n", f);
  }
  fputs("</table>\n", f);
}

static void comparison(FILE *f, const json_t *info, const json_t *rows) {
  group *g = calloc(MAX_GROUPS, sizeof *g);
  int n = 0;
  size_t i = 0;
  if (!g) { fputs("<p class=\"none\">out of memory drawing this comparison</p>\n", f); return; }
  while (i < json_array_size(rows) && n < MAX_GROUPS) tune_cmp_group_read(rows, &i, &g[n++]);
  fputs("<h3>", f);
  tune_xml_text(f, tune_report_str(info, "recipe"));
  fputs(" on ", f);
  tune_xml_text(f, tune_report_str(info, "device"));
  fprintf(f, "</h3>\n<p>Comparison %lld, %s to %s UTC, %lld rounds; command <code>", (long long)json_integer_value(json_object_get(info, "id")),
          tune_report_str(info, "started_at"), tune_report_str(info, "ended_at"), (long long)json_integer_value(json_object_get(info, "rounds")));
  tune_xml_text(f, tune_report_str(info, "command"));
  fputs("</code></p>\n", f);
  if (!n) fputs("<p class=\"none\">none: this comparison has no measurements.</p>\n", f);
  else {
    fputs("<figure class=\"wide\">", f);
    const char *verdict[MAX_GROUPS]; /* tune_cmp_verdict scans the rows: once per group */
    for (int k = 0; k < n; ++k) verdict[k] = tune_cmp_verdict(rows, &g[k]);
    ratio_chart(f, info, g, verdict, n);
    fputs("<figcaption>Dot: median ratio over the rounds; bar: its min-max range; blue burst, orange sustained.</figcaption></figure>\n", f);
    ratio_table(f, g, verdict, n);
  }
  free(g);
}

void tune_report_peers(FILE *f, const tune_report_data *d) {
  fputs("<section id=\"peers\"><h2>Against the peers</h2>\n"
        "<p>The latest <code>tune compare</code> of each recipe: per problem and timing mode, peer time / tune time of tune's "
        "and the peer's fastest (median over the interleaved rounds), as the median and min-max range of the round-by-round "
        "ratios. \"faster\" needs the whole range above 1, \"slower\" below; otherwise \"parity\".</p>\n", f);
  size_t i;
  const json_t *c;
  if (!json_array_size(d->comparisons)) fputs("<p class=\"none\">none: the database holds no comparison of kind compare.</p>\n", f);
  json_array_foreach(d->comparisons, i, c) comparison(f, json_object_get(c, "info"), json_object_get(c, "rows"));
  fputs("</section>\n", f);
}
