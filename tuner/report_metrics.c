/* report_metrics.c: flops and bytes of the best variants from recipe files (report_int.h).
 *
 * The database records no work per problem: a recipe's `metrics` (flops, bytes per launch) are
 * Lua in its file. Given --metrics FILE, the page evaluates them for each best row whose recipe
 * name and problem hash the file has, with the facts of the row's device, and says which
 * source they came from (the file's source hash may differ from the one the results ran). */
#include "report_int.h"

#include <string.h>

#include "recipe.h"

/* The device facts recipe functions see (`d`), from the devices row of id. */
static void device_facts(const tune_report_data *d, int64_t id, tune_device_facts *out) {
  size_t i;
  const json_t *dev;
  memset(out, 0, sizeof *out);
  json_array_foreach(d->devices, i, dev) {
    if (json_integer_value(json_object_get(dev, "id")) != id) continue;
    out->sm_count = (int)json_integer_value(json_object_get(dev, "sm_count"));
    out->smem_per_block = (int)json_integer_value(json_object_get(dev, "smem_per_block_optin"));
    out->l2_bytes = (int)json_integer_value(json_object_get(dev, "l2_bytes"));
    snprintf(out->arch, sizeof out->arch, "%s", tune_report_str(dev, "arch"));
  }
}

/* The problem of set with this recipe name and problem hash, NULL when none. */
static tune_problem *find_problem(tune_recipes *set, const char *recipe, const char *hash, tune_recipe **r) {
  for (int i = 0; i < set->n; ++i) {
    if (strcmp(set->r[i].name, recipe)) continue;
    for (int j = 0; j < set->r[i].n_problems; ++j)
      if (!strcmp(set->r[i].problems[j].hash, hash)) { *r = &set->r[i]; return &set->r[i].problems[j]; }
  }
  return NULL;
}

/* Evaluate the metrics of every best row this set has a problem for. */
static int add_from_set(tune_recipes *set, const char *file, tune_report_data *d, tune_err *err) {
  size_t i;
  json_t *row, *names = json_array();
  if (!names) return tune_fail(err, TUNE_ENOMEM, "report: out of memory");
  for (int k = 0; k < set->n; ++k)
    json_array_append_new(names, json_pack("{s:s, s:s}", "name", set->r[k].name, "source_hash", set->r[k].source_hash));
  json_array_append_new(d->metrics, json_pack("{s:s, s:o}", "file", file, "recipes", names));
  json_array_foreach(d->best, i, row) {
    tune_recipe *r = NULL;
    tune_problem *p = find_problem(set, tune_report_str(row, "recipe"), tune_report_str(row, "problem_hash"), &r);
    if (!p || json_object_get(row, "bytes")) continue;
    tune_device_facts facts;
    tune_problem_setup setup;
    device_facts(d, json_integer_value(json_object_get(row, "device_id")), &facts);
    if (tune_recipe_eval_problem(r, p, &facts, &setup, err)) return err->code;
    json_object_set_new(row, "flops", json_real(setup.flops));
    json_object_set_new(row, "bytes", json_real(setup.bytes));
    json_object_set_new(row, "metrics_source_hash", json_string(r->source_hash));
  }
  return TUNE_OK;
}

int tune_report_add_metrics(const tune_report_opts *o, tune_report_data *d, tune_err *err) {
  for (int i = 0; i < o->n_metrics_files; ++i) {
    tune_recipes *set = NULL;
    int rc = tune_recipes_load(o->metrics_files[i], &set, err);
    if (!rc) rc = add_from_set(set, o->metrics_files[i], d, err);
    if (set) tune_recipes_free(set);
    if (rc) return rc;
  }
  return TUNE_OK;
}
