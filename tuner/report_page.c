/* report_page.c: the page around tune report's sections (report.h): head, style, what the data
 * is, and the sections in order. */
#include "report_int.h"

#include "report_svg.h"
#include "version.h"

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1300px;padding:0 1em;color:#222}"
    "h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}h3{margin:1.2em 0 .4em}"
    "code{font-size:.9em;background:#f3f3f3;padding:0 .2em}"
    ".grid{display:flex;flex-wrap:wrap;gap:.5em}"
    "figure{margin:0}figure.chart{width:300px}figcaption{font-size:12px;color:#444}"
    "svg{display:block;background:#fff}svg text{font-size:10px;fill:#333}"
    "svg .grid{stroke:#e6e6e6;stroke-width:1}svg .frame{fill:none;stroke:#999}"
    "svg .label{font-size:11px}svg .legend{text-anchor:end;font-size:9px}"
    "svg .series{fill:none;stroke-width:1.6}svg .roof{fill:none;stroke:#555;stroke-width:2}"
    "svg .roof-label{text-anchor:end;font-size:10px}svg .point{stroke:#000;stroke-width:.5}"
    "svg .bar{fill:#1f77b4}svg .one{stroke:#000;stroke-dasharray:3 3}"
    "svg .burst line{stroke:#1f77b4;stroke-width:2}svg .burst circle{fill:#1f77b4}"
    "svg .sustained line{stroke:#ff7f0e;stroke-width:2}svg .sustained circle{fill:#ff7f0e}"
    "table{border-collapse:collapse;margin:.6em 0;font-size:13px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}"
    "th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}td.small{font-size:11px}"
    "td.faster{color:#1a7f37}td.slower{color:#b42318}.none,.note{color:#555;font-style:italic}";

static void head(FILE *f, const tune_report_opts *o) {
  fputs("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head><meta charset=\"utf-8\"/>"
        "<title>tune report: ", f);
  tune_xml_text(f, o->db_path);
  fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<h1>tune report: <code>", style);
  tune_xml_text(f, o->db_path);
  fputs("</code></h1>\n", f);
}

/* What the page is drawn from: the GPUs and the filters. */
static void about(FILE *f, const tune_report_opts *o, const tune_report_data *d) {
  size_t i;
  const json_t *dev;
  fputs("<p>Written by tune " TUNE_VERSION " from the database alone (no measurement was made for this page). GPUs:", f);
  if (!json_array_size(d->devices)) fputs(" none", f);
  json_array_foreach(d->devices, i, dev) {
    fprintf(f, "%s device %lld ", i ? ";" : "", (long long)json_integer_value(json_object_get(dev, "id")));
    tune_xml_text(f, tune_report_str(dev, "name"));
    fputs(" (", f);
    tune_xml_text(f, tune_report_str(dev, "arch"));
    fprintf(f, ", %lld SMs, driver ", (long long)json_integer_value(json_object_get(dev, "sm_count")));
    tune_xml_text(f, tune_report_str(dev, "driver"));
    fputs(")", f);
  }
  fputs(".", f);
  if (o->n_recipes) {
    fputs(" Recipes:", f);
    for (int k = 0; k < o->n_recipes; ++k) {
      fputs(k ? ", " : " ", f);
      tune_xml_text(f, o->recipes[k]);
    }
    fputs(".", f);
  }
  fputs("</p>\n<p>Sections: <a href=\"#progress\">search progress</a>, <a href=\"#roofline\">best variants against the "
        "device's limits</a>, <a href=\"#peers\">against the peers</a>, <a href=\"#selections\">selections</a>.</p>\n", f);
}

int tune_report_write(FILE *f, db_conn *db, const tune_report_opts *o, tune_err *err) {
  tune_report_data d;
  int rc = tune_report_gather(db, o, &d, err);
  if (!rc) {
    head(f, o);
    about(f, o, &d);
    tune_report_progress(f, &d);
    tune_report_roofline(f, &d);
    tune_report_peers(f, &d);
    tune_report_selections(f, &d);
    fputs("</body>\n</html>\n", f);
    if (ferror(f)) rc = tune_fail(err, TUNE_EIO, "report: writing the page failed");
  }
  tune_report_data_free(&d);
  return rc;
}
