/* report_progress.c: the page's section on each search's progress (report_int.h).
 *
 * Per recipe and problem, one chart: for every run, the best median so far against the
 * evaluations, in result id order (the order the run evaluated them). An evaluation is a result
 * with a final status: skipped and not_recorded rows are not measurements and are not counted;
 * any other status counts and improves nothing unless ok. */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_svg.h"

#define MAX_RUNS 8

typedef struct series {
  int64_t run_id;
  int n;            /* evaluations */
  int n_pts;        /* points with a best so far */
  double *x, *y;    /* evaluation (1-based), best so far [us] */
} series;

typedef struct panel {
  const char *recipe, *problem;
  series s[MAX_RUNS];
  int n_runs, runs_left_out;
  double best_ns;   /* over the runs shown, INFINITY none */
} panel;

static int counts(const char *status) { return strcmp(status, "skipped") && strcmp(status, "not_recorded"); }

/* Rows [from, to) of one (recipe, problem) into p's series. */
static void fill(panel *p, const json_t *rows, size_t from, size_t to) {
  p->best_ns = INFINITY;
  for (size_t i = from; i < to; ++i) {
    const json_t *r = json_array_get(rows, i);
    int64_t run = json_integer_value(json_object_get(r, "run_id"));
    series *s = p->n_runs ? &p->s[p->n_runs - 1] : NULL;
    if (!s || s->run_id != run) {
      if (p->n_runs == MAX_RUNS) { p->runs_left_out++; while (i + 1 < to && json_integer_value(json_object_get(json_array_get(rows, i + 1), "run_id")) == run) ++i; continue; }
      s = &p->s[p->n_runs++];
      s->run_id = run;
      s->x = calloc(to - from, sizeof *s->x);
      s->y = calloc(to - from, sizeof *s->y);
      if (!s->x || !s->y) { p->n_runs--; free(s->x); free(s->y); return; }
    }
    if (!counts(tune_report_str(r, "status"))) continue;
    s->n++;
    double ns = tune_report_num(r, "median_ns"), prev = s->n_pts ? s->y[s->n_pts - 1] * 1e3 : INFINITY;
    int ok = !strcmp(tune_report_str(r, "status"), "ok") && ns > 0;
    double best = ok && ns < prev ? ns : prev;
    if (!isfinite(best)) continue;
    s->x[s->n_pts] = s->n;
    s->y[s->n_pts++] = best / 1e3;
    if (best < p->best_ns) p->best_ns = best;
  }
}

static void free_panel(panel *p) {
  for (int i = 0; i < p->n_runs; ++i) free(p->s[i].x), free(p->s[i].y);
}

static void draw(FILE *f, const panel *p) {
  double xmax = 1, ylo = INFINITY, yhi = 0;
  for (int i = 0; i < p->n_runs; ++i)
    for (int j = 0; j < p->s[i].n_pts; ++j) {
      if (p->s[i].x[j] > xmax) xmax = p->s[i].x[j];
      ylo = fmin(ylo, p->s[i].y[j]), yhi = fmax(yhi, p->s[i].y[j]);
    }
  for (int i = 0; i < p->n_runs; ++i) if (p->s[i].n > xmax) xmax = p->s[i].n;
  tune_svg_axis x = {.px_lo = 50, .px_hi = 290, .label = "evaluations"};
  tune_svg_axis y = {.px_lo = 150, .px_hi = 10, .label = "best median [us]"};
  tune_svg_axis_fit(&x, 0, xmax, 0, 0);
  tune_svg_axis_fit(&y, isfinite(ylo) ? ylo : 1, yhi > 0 ? yhi : 1, 1, 3);
  char title[256];
  snprintf(title, sizeof title, "%s %s: best median so far against evaluations", p->recipe, p->problem);
  tune_svg_open(f, 300, 185, title);
  tune_svg_axes(f, &x, &y);
  for (int i = 0; i < p->n_runs; ++i) {
    const series *s = &p->s[i];
    if (!s->n_pts) continue;
    fprintf(f, "<polyline class=\"series\" stroke=\"%s\" points=\"", tune_svg_color(i));
    for (int j = 0; j < s->n_pts; ++j) { /* a step: the best holds until the next improvement */
      if (j) fprintf(f, "%.1f,%.1f ", tune_svg_map(&x, s->x[j]), tune_svg_map(&y, s->y[j - 1]));
      fprintf(f, "%.1f,%.1f ", tune_svg_map(&x, s->x[j]), tune_svg_map(&y, s->y[j]));
    }
    fprintf(f, "%.1f,%.1f\"><title>run %lld: %d evaluations, best %.2f us</title></polyline>\n",
            tune_svg_map(&x, s->n), tune_svg_map(&y, s->y[s->n_pts - 1]), (long long)s->run_id, s->n, s->y[s->n_pts - 1]);
    fprintf(f, "<text class=\"legend\" x=\"%d\" y=\"%d\" fill=\"%s\">run %lld</text>", 286, 22 + 11 * i, tune_svg_color(i),
            (long long)s->run_id);
  }
  tune_svg_close(f);
}

static void caption(FILE *f, const panel *p) {
  fputs("<figcaption><b>", f);
  tune_xml_text(f, p->problem);
  fputs("</b>: ", f);
  if (isfinite(p->best_ns)) fprintf(f, "best %.2f us", p->best_ns / 1e3);
  else fputs("no verified result", f);
  for (int i = 0; i < p->n_runs; ++i) fprintf(f, "%s run %lld: %d", i ? "," : ";", (long long)p->s[i].run_id, p->s[i].n);
  fputs(" evaluations", f);
  if (p->runs_left_out) fprintf(f, "; %d more runs not drawn", p->runs_left_out);
  fputs("</figcaption>", f);
}

static void figure(FILE *f, const json_t *rows, size_t from, size_t to) {
  panel p;
  memset(&p, 0, sizeof p);
  const json_t *first = json_array_get(rows, from);
  p.recipe = tune_report_str(first, "recipe");
  p.problem = tune_report_str(first, "problem");
  fill(&p, rows, from, to);
  fputs("<figure class=\"chart\" data-recipe=\"", f);
  tune_xml_text(f, p.recipe);
  fputs("\" data-problem=\"", f);
  tune_xml_text(f, p.problem);
  if (isfinite(p.best_ns)) fprintf(f, "\" data-best-ns=\"%.1f", p.best_ns);
  fputs("\">\n", f);
  draw(f, &p);
  caption(f, &p);
  fputs("</figure>\n", f);
  free_panel(&p);
}

void tune_report_progress(FILE *f, const tune_report_data *d) {
  const json_t *rows = d->progress;
  size_t n = json_array_size(rows), i = 0;
  fputs("<section id=\"progress\"><h2>Search progress</h2>\n"
        "<p>Per problem, each run's best verified median so far against its evaluations, in the order the run "
        "evaluated them (result id). Skipped and not-recorded results are not evaluations; peers are left out.</p>\n", f);
  if (!n) fputs("<p class=\"none\">none: the database holds no results of a run on a GPU.</p>\n", f);
  const char *recipe = NULL;
  while (i < n) {
    const json_t *first = json_array_get(rows, i);
    int64_t problem = json_integer_value(json_object_get(first, "problem_id"));
    if (!recipe || strcmp(recipe, tune_report_str(first, "recipe"))) {
      if (recipe) fputs("</div>\n", f);
      recipe = tune_report_str(first, "recipe");
      fputs("<h3>", f);
      tune_xml_text(f, recipe);
      fputs("</h3><div class=\"grid\">\n", f);
    }
    size_t j = i;
    while (j < n && json_integer_value(json_object_get(json_array_get(rows, j), "problem_id")) == problem &&
           !strcmp(tune_report_str(json_array_get(rows, j), "recipe"), recipe))
      ++j;
    figure(f, rows, i, j);
    i = j;
  }
  if (recipe) fputs("</div>\n", f);
  fputs("</section>\n", f);
}
