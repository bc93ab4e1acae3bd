/* report_data.c: the rows of tune report, gathered through db/ (report_int.h). */
#include "report_int.h"

#include <string.h>

#include "db_compare.h"
#include "db_report.h"

int tune_report_wants(const tune_report_opts *o, const char *name) {
  if (!o->n_recipes) return 1;
  for (int i = 0; i < o->n_recipes; ++i) {
    const char *p = o->recipes[i];
    size_t n = strlen(p);
    if (n && p[n - 1] == '*' ? !strncmp(name, p, n - 1) : !strcmp(name, p)) return 1;
  }
  return 0;
}

/* Drop the rows of arr whose `key` names a recipe the options do not ask for. */
static void keep_wanted(const tune_report_opts *o, json_t *arr, const char *key) {
  for (size_t i = json_array_size(arr); i-- > 0;)
    if (!tune_report_wants(o, tune_report_str(json_array_get(arr, i), key))) json_array_remove(arr, i);
}

/* The latest comparison of kind 'compare' of every recipe asked for, with its rounds. */
static int gather_comparisons(db_conn *db, const tune_report_opts *o, json_t *out, tune_err *err) {
  int64_t ids[256];
  int n = 0, rc, has = 0;
  if ((rc = db_report_has_table(db, "comparisons", &has, err)) || !has) return rc;
  if ((rc = db_comparison_latest(db, ids, 256, &n, err))) return rc;
  for (int i = 0; i < n; ++i) {
    json_t *info = NULL, *rows = NULL;
    if ((rc = db_comparison_info(db, ids[i], &info, err))) return rc;
    if (!tune_report_wants(o, tune_report_str(info, "recipe"))) { json_decref(info); continue; }
    if ((rc = db_comparison_rows(db, ids[i], &rows, err))) { json_decref(info); return rc; }
    if (json_array_append_new(out, json_pack("{s:o, s:o}", "info", info, "rows", rows)))
      return tune_fail(err, TUNE_ENOMEM, "report: out of memory");
  }
  return TUNE_OK;
}

int tune_report_gather(db_conn *db, const tune_report_opts *o, tune_report_data *d, tune_err *err) {
  int rc;
  memset(d, 0, sizeof *d);
  if ((rc = db_report_progress(db, NULL, &d->progress, err)) || (rc = db_query_best_where(db, NULL, &d->best, err)) ||
      (rc = db_report_peaks(db, &d->peaks, err)) || (rc = db_report_devices(db, &d->devices, err)) ||
      (rc = db_report_selections(db, NULL, &d->selections, err)))
    return rc;
  keep_wanted(o, d->progress, "recipe");
  keep_wanted(o, d->best, "recipe");
  keep_wanted(o, d->selections, "recipe");
  if (!(d->comparisons = json_array()) || !(d->metrics = json_array()))
    return tune_fail(err, TUNE_ENOMEM, "report: out of memory");
  if ((rc = gather_comparisons(db, o, d->comparisons, err))) return rc;
  return tune_report_add_metrics(o, d, err);
}

void tune_report_data_free(tune_report_data *d) {
  json_decref(d->progress);
  json_decref(d->best);
  json_decref(d->peaks);
  json_decref(d->devices);
  json_decref(d->selections);
  json_decref(d->comparisons);
  json_decref(d->metrics);
  memset(d, 0, sizeof *d);
}
