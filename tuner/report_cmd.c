/* report_cmd.c: the command line of `tune report` (report.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "argv.h"
#include "report.h"

static const char usage_report[] =
    "usage: tune report [--db FILE] [-o FILE] [--recipe NAME]... [--metrics RECIPE_FILE]...\n"
    "\n"
    "Writes one self-contained HTML page (inline SVG and CSS, no script, nothing fetched) from a\n"
    "results database: per recipe and problem each run's best median so far against its\n"
    "evaluations; the best variants under the device's measured limits (the peaks table); the\n"
    "ratios against the peers in both timing modes from the latest tune compare of each recipe,\n"
    "with their min-max ranges over the rounds; and the selections of tune run. Reads the\n"
    "database only; no GPU needed. A section without data says \"none\".\n"
    "\n"
    "options:\n"
    "  --db FILE              results database (default tune.db), opened read-only\n"
    "  -o FILE                the page (default report.html; - for stdout)\n"
    "  --recipe NAME          only this recipe (NAME* : every recipe starting with NAME); repeatable\n"
    "  --metrics RECIPE_FILE  evaluate this recipe file's metrics (flops, bytes per launch) for its\n"
    "                         problems, to place the best variants on the roofline; the database\n"
    "                         records neither, so without it only the ceilings are drawn; repeatable\n";

/* 2: a usage error (printed), 1: --help printed, 0: go on. */
static int parse(int argc, char **argv, tune_report_opts *o, const char **out) {
  tune_argv ap;
  const char *v = NULL;
  tune_argv_init(&ap, "tune report", argc, argv);
  while (tune_argv_next(&ap)) {
    if (tune_argv_flag(&ap, "--help") || tune_argv_flag(&ap, "-h")) { fputs(usage_report, stdout); return 1; }
    else if (tune_argv_str(&ap, "--db", &o->db_path) || tune_argv_str(&ap, "-o", out)) {}
    else if (tune_argv_str(&ap, "--recipe", &v)) {
      if (!*v) tune_argv_bad(&ap, "want a recipe name");
      else if (o->n_recipes >= TUNE_REPORT_MAX_RECIPES) tune_argv_bad(&ap, "too many --recipe");
      else o->recipes[o->n_recipes++] = v;
    } else if (tune_argv_str(&ap, "--metrics", &v)) {
      if (o->n_metrics_files >= TUNE_REPORT_MAX_METRICS) tune_argv_bad(&ap, "too many --metrics");
      else o->metrics_files[o->n_metrics_files++] = v;
    } else tune_argv_unknown(&ap);
  }
  if (ap.failed) { fprintf(stderr, "%s\n", ap.msg); return 2; }
  return 0;
}

int tune_cmd_report(int argc, char **argv) {
  tune_report_opts o = {.db_path = "tune.db"};
  const char *out = "report.html";
  int p = parse(argc, argv, &o, &out);
  if (p) return p == 1 ? 0 : 2;
  tune_err err;
  tune_err_clear(&err);
  db_conn *db = NULL;
  if (db_open(o.db_path, 1, &db, &err)) {
    fprintf(stderr, "tune report: %s\n", err.msg);
    return 1;
  }
  int to_stdout = !strcmp(out, "-");
  FILE *f = to_stdout ? stdout : fopen(out, "w");
  int rc = 1;
  if (!f) fprintf(stderr, "tune report: %s: %s\n", out, strerror(errno));
  else if (tune_report_write(f, db, &o, &err)) fprintf(stderr, "tune report: %s\n", err.msg);
  else rc = 0;
  if (f && !to_stdout && fclose(f) && !rc) {
    fprintf(stderr, "tune report: %s: %s\n", out, strerror(errno));
    rc = 1;
  }
  db_close(db);
  if (rc && f && !to_stdout) remove(out); /* no half page left behind */
  if (!rc && !to_stdout) fprintf(stderr, "tune report: wrote %s\n", out);
  return rc;
}
