/* retime.c: preparing and timing stored results again (retime.h). */
#include "retime.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "search.h"
#include "variant_job.h"

#define RETIME_MAX 8

/* The config's parameter indexes from its stored JSON (a param it lacks: its absent value); -1
 * when a value is not (any longer) one of the recipe's. */
static int config_indexes(const tune_recipe *r, const char *params_json, int *vi) {
  json_error_t je;
  json_t *obj = json_loads(params_json, 0, &je);
  int rc = obj ? tune_recipe_config_indexes(r, obj, vi) : -1;
  json_decref(obj);
  return rc;
}

int tune_retime_prepare(db_conn *db, tune_recipe *r, tune_problem *p, const tune_device_facts *facts,
                        const char *arch, tune_retimed *cv, int n, tune_err *err) {
  char templates[PATH_MAX + 16];
  snprintf(templates, sizeof templates, "%s/templates", r->root);
  if (n <= 0) return TUNE_OK;
  if (n > RETIME_MAX) return tune_fail(err, TUNE_EINVAL, "retime: %d candidates, at most %d", n, RETIME_MAX);
  tune_compile_job *jobs = calloc((size_t)n, sizeof *jobs);
  int todo[RETIME_MAX], n_todo = 0, rc = TUNE_OK;
  if (!jobs) return tune_fail(err, TUNE_ENOMEM, "retime: out of memory");
  for (int i = 0; i < n; ++i) {
    int vi[SEARCH_MAX_PARAMS];
    if (config_indexes(r, cv[i].top.params_json, vi)) {
      printf("  %s: not a config of the current recipe, left out\n", cv[i].top.params_json);
      continue;
    }
    if ((rc = tune_recipe_eval_variant(r, vi, p, facts, &cv[i].v, err))) goto done;
    if (cv[i].v.skip) continue;
    tune_variant_job(&jobs[i], r->template_path, templates, arch, &cv[i].v);
    int hit = 0;
    if ((rc = tune_compile_key(&jobs[i], err)) || (rc = tune_compile_from_cache(db, &jobs[i], &hit, err))) goto done;
    if (!hit) {
      todo[n_todo++] = i;
      continue;
    }
    cv[i].bin = jobs[i].bin; /* now the candidate's */
    memset(&jobs[i].bin, 0, sizeof jobs[i].bin);
    cv[i].ready = cv[i].bin.ok;
  }
  for (int t = 0; t < n_todo; ++t) { /* compiled in parallel below: gather the misses first */
    if (t != todo[t]) { tune_compile_job tmp = jobs[t]; jobs[t] = jobs[todo[t]]; jobs[todo[t]] = tmp; }
  }
  if (n_todo && (rc = tune_compile_batch(jobs, n_todo, n_todo, err))) goto done;
  for (int t = 0; t < n_todo; ++t) {
    if ((rc = db_binary_put(db, &jobs[t].bin, err))) goto done;
    tune_retimed *v = &cv[todo[t]];
    v->bin = jobs[t].bin;
    memset(&jobs[t].bin, 0, sizeof jobs[t].bin); /* now the candidate's */
    v->ready = v->bin.ok;
    if (!v->ready) printf("  %s: does not compile from the current source, left out\n", v->top.params_json);
  }
  for (int i = 0; i < n; ++i)
    if (cv[i].ready) tune_lowered_names(&cv[i].bin, cv[i].lowered);
done:
  for (int i = 0; i < n; ++i) db_binary_release(&jobs[i].bin);
  free(jobs);
  return rc;
}

void tune_retime_release(tune_retimed *cv, int n) {
  for (int i = 0; i < n; ++i) db_binary_release(&cv[i].bin);
}

int tune_retime_once(tune_backend *be, tune_recipe *r, tune_problem *p, const tune_problem_setup *setup,
                     const tune_retimed *cv, int sustained, db_result *res, tune_err *err) {
  tune_measure_req q = {.recipe = r, .problem = p, .setup = setup, .variant = &cv->v, .bin = &cv->bin,
                        .lowered = (const char(*)[512])cv->lowered, .config_hash = cv->top.config_hash,
                        .sustained = sustained};
  memset(res, 0, sizeof *res);
  return be->measure(be, &q, res, err);
}

int tune_retime_submit(tune_backend *be, tune_recipe *r, tune_problem *p, const tune_problem_setup *setup,
                       const tune_retimed *cv, int sustained, int card, db_result *res, int tag, tune_err *err) {
  tune_measure_req q = {.recipe = r, .problem = p, .setup = setup, .variant = &cv->v, .bin = &cv->bin,
                        .lowered = (const char(*)[512])cv->lowered, .config_hash = cv->top.config_hash,
                        .sustained = sustained, .card = card};
  memset(res, 0, sizeof *res);
  return be->submit(be, &q, res, tag, err);
}

void tune_measurement_from_result(db_measurement *m, const db_result *res) {
  m->status = res->status;
  m->median_ns = res->median_ns;
  m->min_ns = res->min_ns;
  m->max_ns = res->max_ns;
  m->samples = res->samples;
  m->rel_ci = res->rel_ci;
  snprintf(m->timer, sizeof m->timer, "%s", res->timer);
  m->sm_mhz = res->sm_mhz;
  m->mem_mhz = res->mem_mhz;
  m->power_w = res->power_w;
  m->clock_reasons = res->clock_reasons;
  snprintf(m->error_text, sizeof m->error_text, "%.500s", res->error_text);
}
