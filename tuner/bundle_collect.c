/* bundle_collect.c: what goes into a bundle: per kernel family (recipe), tuned problem and GPU
 * model, the best verified result the databases hold for it, the recipe it was measured with (found
 * again and loaded), the recipe's evaluation of that config, and the variants (config + defines)
 * the entries share. Entries of several families for one problem that were timed under different
 * yardsticks get a warning (bundle_yardstick.h). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bundle_int.h"
#include "bundle_yardstick.h"
#include "code_proposal.h"
#include "problem_space.h"

/* ---- finding and loading recipes -------------------------------------------------------- */

static int file_ok(const char *p) { return p && !access(p, R_OK); }

/* Resolve a recipe path as recorded in the db: as given, then next to this binary's repo. */
static int resolve_recipe(const bstate *s, const char *recorded, char *out, size_t n) {
  if (file_ok(recorded)) { snprintf(out, n, "%s", recorded); return 0; }
  char exe_dir[PATH_MAX];
  snprintf(exe_dir, sizeof exe_dir, "%s", s->o->exe ? s->o->exe : "");
  char *slash = strrchr(exe_dir, '/');
  if (slash) {
    *slash = 0;
    const char *ups[] = {"..", "."};
    for (int i = 0; i < 2; ++i) {
      if ((size_t)snprintf(out, n, "%s/%s/%s", exe_dir, ups[i], recorded) >= n) continue;
      if (file_ok(out)) return 0;
    }
  }
#ifdef TUNE_SOURCE_DIR
  snprintf(out, n, "%s/%s", TUNE_SOURCE_DIR, recorded);
  if (file_ok(out)) return 0;
#endif
  return -1;
}

static int load_set(bstate *s, const char *path, tune_recipes **out, tune_err *err) {
  char real[PATH_MAX];
  if (!realpath(path, real)) snprintf(real, sizeof real, "%s", path);
  for (int i = 0; i < s->n_sets; ++i)
    if (!strcmp(s->set_paths[i], real)) { *out = s->sets[i]; return TUNE_OK; }
  if (s->n_sets == BUNDLE_MAX_SETS) return tune_fail(err, TUNE_EINVAL, "bundle: too many recipe files");
  if (tune_recipes_load(path, &s->sets[s->n_sets], err)) return err->code;
  snprintf(s->set_paths[s->n_sets], PATH_MAX, "%s", real);
  *out = s->sets[s->n_sets++];
  return TUNE_OK;
}

int bundle_name_matches(const char *recipe, const char *want) {
  size_t n = strlen(want);
  return !strcmp(recipe, want) || (!strncmp(recipe, want, n) && recipe[n] == '.');
}

/* ---- the device and the entries --------------------------------------------------------------- */

static int wanted(const tune_bundle_opts *o, const char *recipe) {
  for (int k = 0; k < o->n_recipes; ++k)
    if (bundle_name_matches(recipe, o->recipes[k])) return 1;
  return 0;
}

/* The model (index into s->models) of a device name, -1 when the bundle does not take it. */
static int model_of(const bstate *s, const char *device) {
  for (int m = 0; m < s->n_models; ++m)
    if (!strcmp(s->models[m].name, device)) return m;
  return -1;
}

/* The GPU models the wanted recipes' results are of: every one, or those --device matches. Each gets
 * its own entries (format 1.5); results of different models are never pooled. */
static int choose_models(bstate *s, tune_err *err) {
  const tune_bundle_opts *o = s->o;
  for (int i = 0; i < s->bests.n; ++i) {
    const db_bundle_best *row = &s->bests.a[i];
    if (!wanted(o, row->recipe) || (o->device && !strcasestr(row->device, o->device)) || model_of(s, row->device) >= 0) continue;
    if (s->n_models == BUNDLE_MAX_MODELS)
      return tune_fail(err, TUNE_EINVAL, "%s has results of more than %d GPU models: choose with --device NAME", s->db_list, BUNDLE_MAX_MODELS);
    snprintf(s->models[s->n_models++].name, sizeof s->models[0].name, "%s", row->device);
  }
  if (s->n_models == 0) {
    char have[1024] = "";
    size_t len = 0;
    for (int i = 0; i < s->bests.n; ++i) {
      char item[300];
      snprintf(item, sizeof item, "%s on %s", s->bests.a[i].recipe, s->bests.a[i].device);
      if (!strstr(have, item) && len < sizeof have) len += (size_t)snprintf(have + len, sizeof have - len, "%s%s", len ? ", " : "", item);
    }
    return tune_fail(err, TUNE_ENOTFOUND, "%s: no verified (ok) result for %s%s%s (it has: %s)", s->db_list, o->recipes[0],
                     o->device ? " on a device matching " : "", o->device ? o->device : "", have[0] ? have : "nothing");
  }
  size_t len = 0;
  for (int m = 0; m < s->n_models && len < sizeof s->model_list; ++m)
    len += (size_t)snprintf(s->model_list + len, sizeof s->model_list - len, "%s'%s'", m ? ", " : "", s->models[m].name);
  return TUNE_OK;
}

/* The problems the databases hold for recipe r on the bundle's GPU models that its file does not list
 * (a run with --problems-from: a deployment's served shapes) join r's problems, so that their
 * results are entries like the recipe's own. Called when r's family opens, before any entry
 * points into r->problems. A problem with other dims than the recipe's is left to take_row's note. */
static int add_db_problems(bstate *s, tune_recipe *r, tune_err *err) {
  const char **names = calloc((size_t)s->bests.n + 1, sizeof *names), **dims = calloc((size_t)s->bests.n + 1, sizeof *dims);
  char **owned = calloc((size_t)s->bests.n + 1, sizeof *owned);
  int n = 0, rc = names && dims && owned ? TUNE_OK : tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  for (int i = 0; !rc && i < s->bests.n; ++i) {
    const db_bundle_best *row = &s->bests.a[i];
    if (strcmp(row->recipe, r->name) || model_of(s, row->device) < 0 || !json_is_object(row->problem_dims)) continue;
    int known = 0;
    for (int j = 0; j < r->n_problems && !known; ++j) known = !strcmp(r->problems[j].hash, row->problem_hash);
    for (int j = 0; j < n && !known; ++j) known = !strcmp(names[j], row->problem);
    if (known) continue;
    owned[n] = json_dumps(row->problem_dims, JSON_COMPACT | JSON_SORT_KEYS);
    if (!owned[n]) { rc = tune_fail(err, TUNE_ENOMEM, "bundle: out of memory"); break; }
    names[n] = row->problem;
    dims[n] = owned[n];
    ++n;
  }
  tune_err e;
  tune_err_clear(&e);
  /* dims foreign to the recipe: those rows stay "no longer in the recipe" */
  if (!rc && n && tune_recipe_add_problems(r, names, dims, n, &e) && e.code != TUNE_EINVAL) rc = tune_fail(err, e.code, "%s", e.msg);
  for (int i = 0; i < n; ++i) free(owned[i]);
  free(owned);
  free(names);
  free(dims);
  return rc;
}

/* The family of row (its result res): the one already open, else its recipe found and loaded. */
static int family_of(bstate *s, const db_bundle_best *row, const db_bundle_result *res, int *fi, tune_err *err) {
  for (int j = 0; j < s->n_families; ++j)
    if (!strcmp(s->fam[j].name, row->recipe)) { *fi = j; return TUNE_OK; }
  if (s->n_families == BUNDLE_MAX_FAMILIES) return tune_fail(err, TUNE_EINVAL, "bundle: too many families");
  const char *recorded = res->recipe_path;
  char path[PATH_MAX];
  if (resolve_recipe(s, recorded, path, sizeof path))
    return tune_fail(err, TUNE_EINVAL, "recipe %s: its file %s (as recorded in %s) is not found here or next to tune",
                     row->recipe, recorded, s->db_list);
  char real[PATH_MAX];
  if (realpath(path, real)) snprintf(path, sizeof path, "%s", real);
  tune_recipes *set = NULL;
  if (load_set(s, path, &set, err)) return err->code;
  tune_recipe *r = NULL;
  for (int j = 0; j < set->n; ++j)
    if (!strcmp(set->r[j].name, row->recipe)) r = &set->r[j];
  if (!r) return tune_fail(err, TUNE_EINVAL, "%s no longer defines recipe %s", path, row->recipe);
  if (add_db_problems(s, r, err)) return err->code;
  *fi = s->n_families++;
  bfamily *f = &s->fam[*fi];
  memset(f, 0, sizeof *f);
  f->r = r;
  snprintf(f->name, sizeof f->name, "%s", row->recipe);
  snprintf(f->measured_arch, sizeof f->measured_arch, "%s", row->arch);
  snprintf(f->recipe_file, sizeof f->recipe_file, "%s", recorded);
  if (bundle_family_layout(f, r, err)) return err->code;
  return TUNE_OK;
}

/* Row as the entry of its (family, problem, GPU model), unless the problem left the recipe or the
 * entry already holds a better row: the current source's, else the faster. Takes res either way. */
static int take_row(bstate *s, const db_bundle_best *row, db_bundle_result *res, tune_err *err) {
  int fi, model = model_of(s, row->device);
  if (family_of(s, row, res, &fi, err)) return err->code;
  bmodel *bm = &s->models[model];
  if (!bm->device.name[0]) bm->device = res->device; /* its models row: the first result's GPU */
  bfamily *f = &s->fam[fi];
  const tune_problem *p = NULL;
  for (int j = 0; j < f->r->n_problems; ++j)
    if (!strcmp(f->r->problems[j].hash, row->problem_hash)) p = &f->r->problems[j];
  int same_source = !strcmp(row->source_hash, f->r->source_hash);
  if (!p) {
    if (!s->o->quiet) printf("  note: %s / %s: problem no longer in the recipe: left out\n", row->recipe, row->problem);
    return TUNE_OK;
  }
  int prev = -1;
  for (int j = 0; j < s->n_entries; ++j)
    if (s->ent[j].family == fi && s->ent[j].p == p && s->ent[j].model == model) prev = j;
  if (prev >= 0) {
    bentry *q = &s->ent[prev];
    int keep_prev = (!q->mismatch_source && !same_source) ||
                    (q->mismatch_source == !same_source && q->best->median_ns <= row->median_ns);
    if (keep_prev) return TUNE_OK;
    db_bundle_result_free(&q->result);
  } else {
    if (s->n_entries == BUNDLE_MAX_ENTRIES) return tune_fail(err, TUNE_EINVAL, "bundle: too many entries");
    prev = s->n_entries++;
  }
  bentry *be = &s->ent[prev];
  memset(be, 0, sizeof *be);
  be->family = fi;
  be->model = model;
  be->p = p;
  be->best = row;
  be->result = *res;
  memset(res, 0, sizeof *res); /* the entry owns it now */
  be->mismatch_source = !same_source;
  return TUNE_OK;
}

int bundle_collect(bstate *s, tune_err *err) {
  const tune_bundle_opts *o = s->o;
  for (int d = 0; d < s->n_dbs; ++d)
    if (db_bundle_bests_add(&s->bests, s->dbs[d], d, err)) return err->code;
  if (choose_models(s, err)) return err->code;
  s->ent = calloc(BUNDLE_MAX_ENTRIES, sizeof *s->ent);
  s->var = calloc(BUNDLE_MAX_ENTRIES, sizeof *s->var);
  if (!s->ent || !s->var) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  for (int k = 0; k < o->n_recipes; ++k) {
    int found = 0;
    for (int i = 0; i < s->bests.n; ++i) {
      const db_bundle_best *row = &s->bests.a[i];
      if (!bundle_name_matches(row->recipe, o->recipes[k]) || model_of(s, row->device) < 0) continue;
      found = 1;
      db_bundle_result res;
      if (db_bundle_result_get(s->dbs[row->db_index], row->result_id, &res, err)) return err->code;
      int rc = take_row(s, row, &res, err);
      db_bundle_result_free(&res);
      if (rc) return rc;
    }
    if (!found)
      return tune_fail(err, TUNE_ENOTFOUND, "%s: no verified result for recipe %s on %s", s->db_list, o->recipes[k], s->model_list);
  }
  bundle_warn_yardsticks(s);
  return TUNE_OK;
}

/* ---- each entry as its recipe sees it, and the variants ------------------------------------ */

int bundle_entry_eval(bstate *s, bentry *be, const int *vi, tune_err *err) {
  tune_recipe *r = s->fam[be->family].r;
  tune_device_facts facts;
  tune_device_facts_from(&be->result.device, &facts);
  if (tune_recipe_eval_variant_runs(r, vi, be->p, &facts, &be->var, err)) return err->code;
  if (be->var.skip) return tune_fail(err, TUNE_ERECIPE, "%s / %s: the measured config no longer runs the problem: %s", r->name, be->p->name, be->var.skip_reason);
  if (tune_recipe_eval_problem(r, be->p, &facts, &be->setup, err)) return err->code;
  if (tune_recipe_exprs(r, &be->var, &be->setup, &be->ex, err)) return err->code;
  /* tensor maps (docs/tensormap-args.md): their spec as texts, checked in check_tmaps */
  for (int a = 0; a < r->n_args; ++a) {
    if (!r->args[a].is_tmap) continue;
    if (!be->tm && !(be->tm = calloc((size_t)r->n_args, sizeof *be->tm))) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
    if (tune_recipe_tmap_exprs(r, a, &be->var, &be->tm[a], err)) return err->code;
  }
  for (int a = 0; a < r->n_args; ++a)
    if (!r->args[a].is_tensor && !r->args[a].is_tmap && (r->args[a].dtype == TUNE_F16 || r->args[a].dtype == TUNE_BF16))
      return tune_fail(err, TUNE_ERECIPE, "%s: scalar %s of dtype %s: the tuner passes no half scalars, so none is bundled", r->name, r->args[a].name, tune_dtype_name(r->args[a].dtype));
  return TUNE_OK;
}

/* A code proposal's variant (docs/llm-hook.md) is rebuilt from its stored code into bv->source_text. */
static int code_variant(bvariant *bv, const bentry *be, const tune_recipe *r, tune_err *err) {
  const db_bundle_result *res = &be->result;
  char why[300];
  if (!res->has_proposal || strcmp(res->proposal_kind, "code") ||
      tune_code_splice_file(r->template_path, res->proposal_region, res->proposal_code, &bv->source_text, why, sizeof why))
    return tune_fail(err, TUNE_ERECIPE, "%s / %s: the best result is the code of proposal %s, which cannot be rebuilt: %s",
                     r->name, be->p->name, res->origin + strlen(TUNE_CODE_ORIGIN),
                     res->has_proposal ? why : "the proposal is not in the database");
  return TUNE_OK;
}

int bundle_entry_variant(bstate *s, bentry *be, const int *vi, tune_err *err) {
  tune_recipe *r = s->fam[be->family].r;
  char defs[4096];
  size_t len = 0;
  defs[0] = 0;
  for (int k = 0; k < be->var.n_defines; ++k)
    len += (size_t)snprintf(defs + len, len < sizeof defs ? sizeof defs - len : 0, "%s%s", k ? " " : "", be->var.defines[k]);
  const char *ch = be->best->config_hash;
  for (int k = 0; k < s->n_variants; ++k)
    if (s->var[k].family == be->family && !strcmp(s->var[k].config_hash, ch) && !strcmp(s->var[k].defines_text, defs)) {
      be->variant = k;
      return TUNE_OK;
    }
  be->variant = s->n_variants++;
  bvariant *bv = &s->var[be->variant];
  bv->family = be->family;
  memcpy(bv->vi, vi, sizeof bv->vi);
  snprintf(bv->config_hash, sizeof bv->config_hash, "%s", ch);
  tune_recipe_config_json(r, vi, bv->params_json, sizeof bv->params_json);
  bv->var = be->var;
  snprintf(bv->defines_text, sizeof bv->defines_text, "%s", defs);
  if (!strncmp(be->result.origin, TUNE_CODE_ORIGIN, strlen(TUNE_CODE_ORIGIN))) return code_variant(bv, be, r, err);
  return TUNE_OK;
}

/* Evaluate each entry, group them into variants (config + defines). */
int bundle_evaluate(bstate *s, tune_err *err) {
  for (int i = 0; i < s->n_entries; ++i) {
    bentry *be = &s->ent[i];
    tune_recipe *r = s->fam[be->family].r;
    int vi[64];
    if (r->n_params > 64 || tune_recipe_config_indexes(r, be->best->params, vi)) {
      char *pj = json_dumps(be->best->params, JSON_COMPACT);
      tune_fail(err, TUNE_EINVAL, "%s / %s: config %s is not in the recipe's space any more", r->name, be->p->name, pj ? pj : "?");
      free(pj);
      return err->code;
    }
    if (bundle_entry_eval(s, be, vi, err) || bundle_entry_variant(s, be, vi, err)) return err->code;
  }
  return TUNE_OK;
}
