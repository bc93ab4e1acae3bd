/* report_selections.c: the page's section on the selections (report_int.h): which result the end
 * of each problem chose after re-timing its fastest few, by which rule and why (schema 7). */
#include "report_int.h"

#include <math.h>

#include "report_svg.h"

static void cell(FILE *f, const char *text) {
  fputs("<td>", f);
  tune_xml_text(f, text);
  fputs("</td>", f);
}

/* The candidates' medians of the rounds with their ranges, as "result: median (lo-hi) us". */
static void candidates(FILE *f, const json_t *cands) {
  size_t i;
  const json_t *c;
  fputs("<td class=\"small\">", f);
  json_array_foreach(cands, i, c) {
    fprintf(f, "%s%lld: ", i ? "; " : "", (long long)json_integer_value(json_object_get(c, "result_id")));
    double m = tune_report_num(c, "median_ns");
    if (m > 0) fprintf(f, "%.2f (%.2f-%.2f) us", m / 1e3, tune_report_num(c, "lo_ns") / 1e3, tune_report_num(c, "hi_ns") / 1e3);
    else fputs("not timed", f);
  }
  fputs("</td>", f);
}

void tune_report_selections(FILE *f, const tune_report_data *d) {
  fputs("<section id=\"selections\"><h2>Selections</h2>\n"
        "<p>The latest selection per recipe source, problem and GPU: the result <code>tune run</code> chose after re-timing "
        "its fastest few in interleaved rounds (<code>tune db best</code> and bundles rank it first).</p>\n", f);
  if (!json_array_size(d->selections)) {
    fputs("<p class=\"none\">none: the database holds no selections (they come from <code>tune run</code> on a GPU, "
          "schema 7 and later).</p>\n</section>\n", f);
    return;
  }
  fputs("<table class=\"selections\"><tr><th>recipe</th><th>problem</th><th>device</th><th>timing</th><th>chosen result</th>"
        "<th>median [us]</th><th>rule</th><th>why</th><th>candidates: median of the rounds (min-max)</th></tr>\n", f);
  size_t i;
  const json_t *s;
  json_array_foreach(d->selections, i, s) {
    fputs("<tr>", f);
    cell(f, tune_report_str(s, "recipe"));
    cell(f, tune_report_str(s, "problem"));
    cell(f, tune_report_str(s, "device"));
    cell(f, tune_report_str(s, "timing"));
    fprintf(f, "<td class=\"num\" data-result=\"%lld\">%lld</td>", (long long)json_integer_value(json_object_get(s, "result_id")),
            (long long)json_integer_value(json_object_get(s, "result_id")));
    double m = tune_report_num(s, "median_ns");
    if (m > 0) fprintf(f, "<td class=\"num\">%.2f</td>", m / 1e3); else fputs("<td class=\"num\">-</td>", f);
    cell(f, tune_report_str(s, "rule"));
    cell(f, tune_report_str(s, "why"));
    candidates(f, json_object_get(s, "candidates"));
    fputs("</tr>\n", f);
  }
  fputs("</table>\n</section>\n", f);
}
