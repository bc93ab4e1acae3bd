/* bundle_verify.c: the written bundle opened by libtunert (no device needed) as a GPU of each
 * requested arch and each GPU model, and every tuned problem of that model selected: where its
 * variant has a binary for that arch, the variant, its launch geometry and its tensor maps must be
 * the tuner's; where it has none, libtunert must pass it over (what it serves instead is kept for
 * the summary). */
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

/* Every tuned problem of a family whose fallback entries all have a binary for arch a: libtunert
 * finds one of them able to serve it. */
static int verify_fallbacks(bstate *s, tunert_ctx *ctx, int a, tune_err *err) {
  tunert_candidate *cand = calloc(BUNDLE_MAX_ENTRIES, sizeof *cand);
  if (!cand) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  int rc = TUNE_OK;
  for (int i = 0; i < s->n_entries && !rc; ++i) {
    bentry *be = &s->ent[i];
    bfamily *f = &s->fam[be->family];
    if (be->kind == BUNDLE_FALLBACK || !f->r->has_fallback) continue;
    int all_run = 1;
    for (int k = 0; k < s->n_entries; ++k)
      if (s->ent[k].kind == BUNDLE_FALLBACK && s->ent[k].family == be->family) all_run &= bundle_variant_runs_on(s, s->ent[k].variant, a, NULL);
    if (!all_run) continue;
    tunert_xval env[TUNERT_MAX_DIMS + 65];
    char why[256];
    int64_t dims[TUNERT_MAX_DIMS];
    bundle_make_env(f, be->p, f->r, s->var[be->variant].vi, be->result.device.sm_count, env, why, sizeof why);
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

/* The selection of an entry whose variant has no binary for arch a: anything but that entry, kept
 * in be->served for the summary. */
static int verify_passed_over(bstate *s, tunert_ctx *ctx, bentry *be, const int64_t *dims, int a, tune_err *err) {
  const bfamily *f = &s->fam[be->family];
  const tunert_selection *sel;
  tunert_err te;
  int rc = tunert_select(ctx, f->name, dims, f->n_dims, &sel, &te);
  if (rc == TUNERT_ENOVARIANT) {
    snprintf(be->served[a], sizeof be->served[a], "none: no entry of the family serves it there "
             "(tunert_inspect BUNDLE --arch %s --select %.40s ... --candidates says why)", s->archs[a], f->name);
    return TUNE_OK;
  }
  if (rc) return tune_fail(err, TUNE_EINTERNAL, "bundle check (%s): %s", s->archs[a], te.msg);
  tunert_selection_info info = {.struct_size = sizeof info};
  tunert_selection_info_get(sel, &info);
  if (info.exact && !strcmp(info.variant, s->var[be->variant].params_json)) /* another model's entry may serve it */
    return tune_fail(err, TUNE_EINTERNAL, "bundle check (%s): %s / %s selects its own variant %s, which has no binary for %s",
                     s->archs[a], f->name, be->p->name, info.variant, s->archs[a]);
  snprintf(be->served[a], sizeof be->served[a], "%s %.40s %.100s [%.40s]", info.kind, info.tuned_problem, info.variant, info.binary);
  return TUNE_OK;
}

/* A tuned entry whose variant has a binary for the arch: libtunert selects exactly it, with the
 * tuner's geometry and tensor maps. */
static int verify_exact(bstate *s, tunert_ctx *ctx, bentry *be, const int64_t *dims, int a, tune_err *err) {
  bfamily *f = &s->fam[be->family];
  const tunert_selection *sel;
  tunert_err te;
  if (tunert_select(ctx, f->name, dims, f->n_dims, &sel, &te)) return tune_fail(err, TUNE_EINTERNAL, "bundle check (%s): %s", s->archs[a], te.msg);
  tunert_selection_info info = {.struct_size = sizeof info};
  tunert_selection_info_get(sel, &info);
  if (!info.exact || strcmp(info.variant, s->var[be->variant].params_json))
    return tune_fail(err, TUNE_EINTERNAL, "bundle check (%s): %s / %s selects %s, want %s", s->archs[a], f->name, be->p->name,
                     info.variant, s->var[be->variant].params_json);
  for (int l = 0; l < info.n_launches; ++l) {
    const tune_launch *x = &be->var.launch[l];
    if (memcmp(info.launches[l].grid, x->grid, sizeof x->grid) || memcmp(info.launches[l].block, x->block, sizeof x->block) ||
        info.launches[l].shared != x->shared || !same_cluster(info.clusters ? info.clusters[l] : NULL, x->cluster))
      return tune_fail(err, TUNE_EINTERNAL, "bundle check: %s / %s: launch %d geometry differs from the tuner's", f->name, be->p->name, l);
  }
  for (int k = 0; k < f->r->n_args; ++k) {
    if (!f->r->args[k].is_tmap) continue;
    const tune_tmap_var *tv = &be->var.tmap[k];
    const tunert_tensormap_info *ti = info.tensormaps ? &info.tensormaps[k] : NULL;
    int same = ti && ti->tensor == f->r->args[k].tmap.tensor && ti->rank == tv->rank;
    for (int d = 0; same && d < tv->rank; ++d)
      same = ti->dims[d] == tv->dims[d] && ti->box[d] == tv->box[d] && (d + 1 == tv->rank || ti->strides[d] == tv->strides[d]);
    if (!same) return tune_fail(err, TUNE_EINTERNAL, "bundle check: %s / %s: tensor map %s differs from the tuner's", f->name, be->p->name, f->r->args[k].name);
  }
  return TUNE_OK;
}

/* Open the bundle as a GPU of arch a and model m: it must open unless a family has no variant there
 * (bundle_check_archs let that through with --allow-missing-arch), then it opens with
 * TUNERT_OPEN_ANY_ARCH; libtunert's TUNERT_EARCH and tune's view must agree. */
static int open_as(bstate *s, int a, int m, tunert_ctx **ctx, tune_err *err) {
  int missing = 0;
  for (int fi = 0; fi < s->n_families; ++fi) {
    int runs = 0;
    for (int v = 0; v < s->n_variants; ++v) runs |= s->var[v].family == fi && bundle_variant_runs_on(s, v, a, NULL);
    missing |= !runs;
  }
  tunert_options opt;
  tunert_options_init(&opt);
  opt.arch = s->archs[a];
  opt.device_name = s->models[m].name;
  opt.flags = TUNERT_OPEN_NO_DEVICE;
  tunert_err te;
  const char *path = s->verify_path ? s->verify_path : s->o->out;
  int rc = tunert_open(path, &opt, ctx, &te);
  if (rc == TUNERT_EARCH && missing) {
    opt.flags |= TUNERT_OPEN_ANY_ARCH;
    rc = tunert_open(path, &opt, ctx, &te);
  } else if (!rc && missing) {
    tunert_close(*ctx);
    *ctx = NULL;
    return tune_fail(err, TUNE_EINTERNAL, "bundle check: libtunert opens the bundle for %s although a family has no variant there", s->archs[a]);
  }
  if (rc) return tune_fail(err, TUNE_EINTERNAL, "the bundle does not open for %s: %s", s->archs[a], te.msg);
  return TUNE_OK;
}

/* The entries of model m on arch a (the fallbacks once per arch, with the first model). */
static int verify_model(bstate *s, int a, int m, tune_err *err) {
  tunert_ctx *ctx = NULL;
  int rc = open_as(s, a, m, &ctx, err);
  for (int i = 0; i < s->n_entries && !rc; ++i) {
    bentry *be = &s->ent[i];
    bfamily *f = &s->fam[be->family];
    if (be->model != m) continue; /* another model's; fallback entries are checked by verify_fallbacks */
    be->served[a][0] = 0;
    tunert_xval env[TUNERT_MAX_DIMS + 65];
    char why[256];
    int64_t dims[TUNERT_MAX_DIMS];
    bundle_make_env(f, be->p, f->r, s->var[be->variant].vi, be->result.device.sm_count, env, why, sizeof why);
    for (int d = 0; d < f->n_dims; ++d) dims[d] = env[d].i;
    rc = bundle_variant_runs_on(s, be->variant, a, NULL) ? verify_exact(s, ctx, be, dims, a, err)
                                                         : verify_passed_over(s, ctx, be, dims, a, err);
  }
  if (!rc && m == 0) rc = verify_fallbacks(s, ctx, a, err);
  tunert_close(ctx);
  return rc;
}

int bundle_verify(bstate *s, tune_err *err) {
  int rc = TUNE_OK;
  for (int a = 0; a < s->n_archs && !rc; ++a)
    for (int m = 0; m < s->n_models && !rc; ++m) rc = verify_model(s, a, m, err);
  return rc;
}
