/* bundle_fallback.c: the generic entries of a bundle (docs/runtime.md, "Selection policy"). A recipe's
 * `fallback` config must run every problem of its domain; tune bundle checks that it runs every tuned
 * problem of its family (its requires hold, its expressions give Lua's values there) and ships one
 * fallback entry per distinct set of compile-time defines over those problems (a `b_layout` define
 * of "row" and "col" gives two), each compiled and written like a tuned entry. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle_int.h"
#include "problem_space.h"

static void defines_text(const tune_variant *v, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (int k = 0; k < v->n_defines && len < n; ++k)
    len += (size_t)snprintf(buf + len, n - len, "%s%s", k ? " " : "", v->defines[k]);
}

/* A fallback entry of family fi for tuned problem p (its result's device), not yet checked. */
static int fallback_entry(bstate *s, int fi, const bentry *tuned, bentry *fe, db_bundle_best *best, tune_err *err) {
  bfamily *f = &s->fam[fi];
  tune_recipe *r = f->r;
  memset(fe, 0, sizeof *fe);
  memset(best, 0, sizeof *best);
  best->recipe = r->name;
  best->problem = tuned->p->name;
  best->problem_hash = tuned->p->hash;
  best->device = s->models[tuned->model].name;
  best->arch = tuned->best->arch;
  best->source_hash = r->source_hash;
  best->created_at = "";
  tune_recipe_config_hash(r, r->fallback_vi, fe->fallback_hash);
  best->config_hash = fe->fallback_hash;
  best->min_ns = best->stddev_ns = NAN;
  fe->family = fi;
  fe->model = -1; /* serves every GPU model */
  fe->kind = BUNDLE_FALLBACK;
  fe->p = tuned->p;
  fe->best = best;
  fe->result = (db_bundle_result){.recipe_path = "", .binary_key = "", .origin = "", .backend = "", .err_rel_l2 = NAN,
                                  .device = tuned->result.device, .proposal_kind = "", .proposal_region = "", .proposal_code = ""};
  tune_device_facts facts;
  tune_device_facts_from(&tuned->result.device, &facts);
  tune_variant v;
  if (tune_recipe_eval_variant_runs(r, r->fallback_vi, tuned->p, &facts, &v, err)) return err->code;
  if (v.skip)
    return tune_fail(err, TUNE_ERECIPE, "%s: the fallback config does not run tuned problem %s: %s (a fallback must run every "
                     "problem of the domain)", r->name, tuned->p->name, v.skip_reason);
  return bundle_entry_eval(s, fe, r->fallback_vi, err);
}

int bundle_add_fallbacks(bstate *s, tune_err *err) {
  int n_tuned = s->n_entries;
  for (int fi = 0; fi < s->n_families; ++fi) {
    if (!s->fam[fi].r->has_fallback) continue;
    bentry *probe = calloc(1, sizeof *probe);
    db_bundle_best probe_best;
    if (!probe) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
    int rc = TUNE_OK;
    for (int i = 0; i < n_tuned && !rc; ++i) {
      bentry *tuned = &s->ent[i];
      if (tuned->family != fi) continue;
      /* the fallback on this tuned problem: runs, and its expressions give Lua's values here */
      if ((rc = fallback_entry(s, fi, tuned, probe, &probe_best, err))) break;
      char defs[4096];
      defines_text(&probe->var, defs, sizeof defs);
      int have = -1;
      for (int k = n_tuned; k < s->n_entries; ++k)
        if (s->ent[k].family == fi && !strcmp(s->var[s->ent[k].variant].defines_text, defs)) have = k;
      if (have >= 0) {
        probe->variant = s->ent[have].variant;
        rc = bundle_check_entry(s, probe, err);
      } else if (s->n_entries == BUNDLE_MAX_ENTRIES || s->n_fallback_bests == BUNDLE_MAX_FALLBACKS) {
        rc = tune_fail(err, TUNE_EINVAL, "bundle: too many entries");
      } else { /* a new set of defines: an entry of its own, its variant compiled with the others */
        bentry *fe = &s->ent[s->n_entries];
        db_bundle_best *fb = &s->fallback_bests[s->n_fallback_bests];
        if (!(rc = fallback_entry(s, fi, tuned, fe, fb, err)) && !(rc = bundle_entry_variant(s, fe, s->fam[fi].r->fallback_vi, err))) {
          fe->best = fb;
          s->n_entries++;
          s->n_fallback_bests++;
        } else free(fe->tm);
      }
      free(probe->tm);
      probe->tm = NULL;
    }
    free(probe->tm);
    free(probe);
    if (rc) return rc;
  }
  return TUNE_OK;
}
