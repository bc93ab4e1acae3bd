/* bundle_verify.c: the written bundle opened by libtunert (no device needed) and every tuned
 * problem selected: the variant, its launch geometry and its tensor maps must be the tuner's. */
#include <stdlib.h>
#include <string.h>

#include "bundle_int.h"
#include "tunert.h"

/* The cluster libtunert selected (NULL: a library without clusters, read as 1x1x1) against the tuner's. */
static int same_cluster(const unsigned *got, const unsigned want[3]) {
  for (int k = 0; k < 3; ++k)
    if ((got ? got[k] : 1) != (want[k] ? want[k] : 1)) return 0;
  return 1;
}

/* Every tuned problem of a family with fallback entries: libtunert finds one of them able to serve it. */
static int verify_fallbacks(bstate *s, tunert_ctx *ctx, tune_err *err) {
  tunert_candidate *cand = calloc(BUNDLE_MAX_ENTRIES, sizeof *cand);
  if (!cand) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  int rc = TUNE_OK;
  for (int i = 0; i < s->n_entries && !rc; ++i) {
    bentry *be = &s->ent[i];
    bfamily *f = &s->fam[be->family];
    if (be->kind == BUNDLE_FALLBACK || !f->r->has_fallback) continue;
    tunert_xval env[TUNERT_MAX_DIMS + 65];
    char why[256];
    int64_t dims[TUNERT_MAX_DIMS];
    bundle_make_env(f, be->p, f->r, s->var[be->variant].vi, env, why, sizeof why);
    for (int d = 0; d < f->n_dims; ++d) dims[d] = env[d].i;
    tunert_err te;
    int n = 0, ok = 0;
    cand[0].struct_size = sizeof cand[0];
    if (tunert_select_candidates(ctx, f->name, dims, f->n_dims, cand, BUNDLE_MAX_ENTRIES, &n, &te))
      rc = tune_fail(err, TUNE_EINTERNAL, "bundle check: %s", te.msg);
    for (int k = 0; k < n; ++k) ok |= cand[k].ok && !strcmp(cand[k].kind, "fallback");
    if (!rc && !ok) rc = tune_fail(err, TUNE_EINTERNAL, "bundle check: %s / %s: no fallback entry serves it in libtunert", f->name, be->p->name);
  }
  free(cand);
  return rc;
}

int bundle_verify(bstate *s, tune_err *err) {
  tunert_options opt;
  tunert_options_init(&opt);
  opt.arch = s->archs[0];
  opt.flags = TUNERT_OPEN_NO_DEVICE;
  tunert_ctx *ctx = NULL;
  tunert_err te;
  if (tunert_open(s->verify_path ? s->verify_path : s->o->out, &opt, &ctx, &te)) return tune_fail(err, TUNE_EINTERNAL, "the bundle does not open: %s", te.msg);
  int rc = TUNE_OK;
  for (int i = 0; i < s->n_entries && !rc; ++i) {
    bentry *be = &s->ent[i];
    bfamily *f = &s->fam[be->family];
    if (be->kind == BUNDLE_FALLBACK) continue; /* the tuned entry wins its problem: fallbacks are checked by verify_fallbacks */
    tunert_xval env[TUNERT_MAX_DIMS + 65];
    char why[256];
    int64_t dims[TUNERT_MAX_DIMS];
    bundle_make_env(f, be->p, f->r, s->var[be->variant].vi, env, why, sizeof why);
    for (int d = 0; d < f->n_dims; ++d) dims[d] = env[d].i;
    const tunert_selection *sel;
    if (tunert_select(ctx, f->name, dims, f->n_dims, &sel, &te)) { rc = tune_fail(err, TUNE_EINTERNAL, "bundle check: %s", te.msg); break; }
    tunert_selection_info info = {.struct_size = sizeof info};
    tunert_selection_info_get(sel, &info);
    if (!info.exact || strcmp(info.variant, s->var[be->variant].params_json)) {
      rc = tune_fail(err, TUNE_EINTERNAL, "bundle check: %s / %s selects %s, want %s", f->name, be->p->name, info.variant, s->var[be->variant].params_json);
      break;
    }
    for (int l = 0; l < info.n_launches; ++l) {
      const tune_launch *x = &be->var.launch[l];
      if (memcmp(info.launches[l].grid, x->grid, sizeof x->grid) || memcmp(info.launches[l].block, x->block, sizeof x->block) ||
          info.launches[l].shared != x->shared || !same_cluster(info.clusters ? info.clusters[l] : NULL, x->cluster)) {
        rc = tune_fail(err, TUNE_EINTERNAL, "bundle check: %s / %s: launch %d geometry differs from the tuner's", f->name, be->p->name, l);
        break;
      }
    }
    for (int a = 0; a < f->r->n_args && !rc; ++a) {
      if (!f->r->args[a].is_tmap) continue;
      const tune_tmap_var *tv = &be->var.tmap[a];
      const tunert_tensormap_info *ti = info.tensormaps ? &info.tensormaps[a] : NULL;
      int same = ti && ti->tensor == f->r->args[a].tmap.tensor && ti->rank == tv->rank;
      for (int k = 0; same && k < tv->rank; ++k)
        same = ti->dims[k] == tv->dims[k] && ti->box[k] == tv->box[k] && (k + 1 == tv->rank || ti->strides[k] == tv->strides[k]);
      if (!same) rc = tune_fail(err, TUNE_EINTERNAL, "bundle check: %s / %s: tensor map %s differs from the tuner's", f->name, be->p->name, f->r->args[a].name);
    }
  }
  if (!rc) rc = verify_fallbacks(s, ctx, err);
  tunert_close(ctx);
  return rc;
}
