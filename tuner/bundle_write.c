/* bundle_write.c: the bundle file: meta (tool, compiler, device, archs, source databases),
 * families with their args, variants with their binaries, and per tuned problem its entry (launch
 * geometry, argument shapes and values, tensor maps, provenance), all through db/db_bundle.h in
 * one transaction, into a temporary of this process's own that is verified and then renamed over
 * the output: a failure leaves no file and removes nothing another writer made. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle_int.h"
#include "version.h"

static const char *role_of(const tune_arg_def *a) {
  return a->is_tmap ? "tensormap" : !a->is_tensor ? "scalar" : a->scratch ? "scratch" : a->output ? "output" : "input";
}

/* The bundle's targets for meta `archs`: the requested archs (cubins), then each virtual arch
 * that some variant's PTX has ("sm_90a,sm_80,compute_90,compute_80"). */
static void target_list(const bstate *s, char *out, size_t n) {
  const char *ptx[TUNE_BUNDLE_MAX_ARCHS * 2];
  int n_ptx = 0;
  size_t len = 0;
  out[0] = 0;
  for (int a = 0; a < s->n_archs && len < n; ++a) len += (size_t)snprintf(out + len, n - len, "%s%s", a ? "," : "", s->archs[a]);
  for (int a = 0; a < s->n_archs; ++a)
    for (int v = 0; v < s->n_variants; ++v) {
      const char *p = s->var[v].ptx_arch[a];
      int k = 0;
      while (k < n_ptx && strcmp(ptx[k], p)) ++k;
      if (!p[0] || k < n_ptx || n_ptx == (int)(sizeof ptx / sizeof ptx[0])) continue;
      ptx[n_ptx++] = p;
      if (len < n) len += (size_t)snprintf(out + len, n - len, ",%s", p);
    }
}

/* meta: what made the bundle, from what, for which GPU and archs (device_*: the first model, what
 * readers before format 1.5 know of the bundle's GPU); then one models row per GPU model. */
static int write_meta(bstate *s, db_bundle_writer *w, tune_err *err) {
  char all_archs[520];
  target_list(s, all_archs, sizeof all_archs);
  const db_device *d0 = &s->models[0].device;
  char smc[32];
  snprintf(smc, sizeof smc, "%d", d0->sm_count);
  struct { const char *k, *v; } meta[] = {
      {"tool_version", TUNE_VERSION}, {"nvrtc_version", tune_nvrtc_version()}, {"device_name", s->models[0].name},
      {"device_arch", d0->arch}, {"device_uuid", d0->uuid},
      {"device_driver", d0->driver}, {"device_sm_count", smc}, {"archs", all_archs},
      {"source_db", s->db_list}, {"made_by", "tune bundle"}};
  for (size_t i = 0; i < sizeof meta / sizeof meta[0]; ++i)
    if (db_bundle_meta(w, meta[i].k, meta[i].v, err)) return err->code;
  for (int m = 0; m < s->n_models; ++m) {
    const db_device *d = &s->models[m].device;
    db_bundle_model dm = {.name = s->models[m].name, .arch = d->arch, .sm_count = d->sm_count, .driver = d->driver, .uuid = d->uuid};
    if (db_bundle_model_put(w, &dm, &s->models[m].id, err)) return err->code;
  }
  return TUNE_OK;
}

/* families: name, sources, dims and params; their args with roles and dtypes. */
static int write_families(bstate *s, db_bundle_writer *w, tune_err *err) {
  for (int fi = 0; fi < s->n_families; ++fi) {
    bfamily *f = &s->fam[fi];
    tune_recipe *r = f->r;
    const char *tpl = r->template_path;
    size_t rl = strlen(r->root);
    if (!strncmp(tpl, r->root, rl) && tpl[rl] == '/') tpl += rl + 1;
    db_bundle_family df = {.name = f->name, .source_hash = r->source_hash, .recipe_file = f->recipe_file,
                           .recipe_source = r->set->file_text ? r->set->file_text : "", .template_path = tpl,
                           .dims = f->dims, .params = f->params, .domain = f->domain};
    if (db_bundle_family_put(w, &df, &f->id, err)) return err->code;
    for (int a = 0; a < r->n_args; ++a)
      if (db_bundle_arg_put(w, f->id, a, r->args[a].name, role_of(&r->args[a]), tune_dtype_name(r->args[a].dtype), err))
        return err->code;
  }
  return TUNE_OK;
}

/* A variant's param values as the runtime's expression environment takes them (strings: 0). */
static void param_values(const tune_recipe *r, const bvariant *bv, char *values, size_t n) {
  values[0] = 0;
  for (int k = 0; k < r->n_params; ++k) {
    const tune_value *x = &r->params[k].values[bv->vi[k]];
    char item[64];
    if (x->kind == 'b') snprintf(item, sizeof item, "%s", x->i ? "true" : "false");
    else if (x->kind == 'i') snprintf(item, sizeof item, "%lld", x->i);
    else snprintf(item, sizeof item, "0");
    snprintf(values + strlen(values), n - strlen(values), "%s%s", k ? ", " : "", item);
  }
}

/* variants: config, defines, lowered kernel names, and their binaries (s->jobs). */
static int write_variants(bstate *s, db_bundle_writer *w, tune_err *err) {
  int per = bundle_jobs_per_variant(s);
  for (int v = 0; v < s->n_variants; ++v) {
    bvariant *bv = &s->var[v];
    if (!bundle_variant_compiled(s, v)) continue; /* left out with its entries */
    char values[2048], kernels[2100] = "";
    param_values(s->fam[bv->family].r, bv, values, sizeof values);
    for (int l = 0; l < bv->var.n_launches; ++l)
      snprintf(kernels + strlen(kernels), sizeof kernels - strlen(kernels), "%s%s", l ? " " : "", bv->lowered[l]);
    db_bundle_variant dv = {.family_id = s->fam[bv->family].id, .config_hash = bv->config_hash, .params_json = bv->params_json,
                            .param_values = values, .defines = bv->defines_text, .kernels = kernels};
    if (db_bundle_variant_put(w, &dv, &bv->id, err)) return err->code;
    for (int k = 0; k < per; ++k) {
      tune_compile_job *j = &s->jobs[v * per + k];
      int ptx = k >= s->n_archs;
      if (!j->bin.ok) continue; /* skipped for that arch (bundle_compile) */
      db_bundle_binary b = {.variant_id = bv->id, .kind = ptx ? "ptx" : "cubin", .arch = j->arch,
                            .compile_key = j->bin.key[0] ? j->bin.key : "-",
                            .data = ptx ? (const void *)j->bin.ptx : (const void *)j->bin.cubin,
                            .size = ptx ? j->bin.ptx_size : j->bin.cubin_size, .registers = j->bin.registers,
                            .shared_bytes = j->bin.shared_bytes, .local_bytes = j->bin.local_bytes,
                            .spill_stores = j->bin.spill_stores, .spill_loads = j->bin.spill_loads};
      if (db_bundle_binary_put(w, &b, err)) return err->code;
    }
  }
  return TUNE_OK;
}

/* An entry's launches and args (tensor maps with their spec). */
static int write_entry_parts(const bfamily *f, const bentry *be, int64_t eid, db_bundle_writer *w, tune_err *err) {
  for (int l = 0; l < be->ex.n_launches; ++l)
    if (db_bundle_launch_put(w, eid, l, be->ex.grid[l].text, be->ex.block[l].text, be->ex.shared[l].text, err) ||
        (strcmp(be->ex.cluster[l].text, "1, 1, 1") && /* a cluster: readers before 1.2 must not take it */
         (db_bundle_launch_cluster_put(w, eid, l, be->ex.cluster[l].text, err) || db_bundle_meta(w, "min_reader_minor", "2", err))))
      return err->code;
  for (int a = 0; a < f->r->n_args; ++a) {
    const tune_arg_def *ad = &f->r->args[a];
    int t = ad->is_tensor;
    if (!ad->is_tmap) {
      if (db_bundle_entry_arg_put(w, eid, a, t ? be->ex.shape[a].text : "", t ? "" : be->ex.value[a].text, err)) return err->code;
      continue;
    }
    char estr[64] = "";
    for (int k = 0; k < ad->tmap.n_estr; ++k) snprintf(estr + strlen(estr), sizeof estr - strlen(estr), "%s%u", k ? ", " : "", ad->tmap.estr[k]);
    db_bundle_tensormap tm = {.entry_id = eid, .idx = a, .tensor = ad->tmap.tensor, .dtype = tune_dtype_name(f->r->args[ad->tmap.tensor].dtype),
                              .dims = be->tm[a].dims.text, .strides = be->tm[a].strides.text, .box = be->tm[a].box.text,
                              .swizzle = ad->tmap.swizzle, .l2_promotion = ad->tmap.l2_promotion, .oob_nan = ad->tmap.oob_nan,
                              .element_strides = estr};
    if (db_bundle_entry_arg_put(w, eid, a, "", "", err) || db_bundle_tensormap_put(w, &tm, err)) return err->code;
  }
  return TUNE_OK;
}

/* entries: per tuned problem, the variant, its expressions and where its time came from. */
static int write_entries(bstate *s, db_bundle_writer *w, tune_err *err) {
  for (int i = 0; i < s->n_entries; ++i) {
    bentry *be = &s->ent[i];
    if (!bundle_variant_compiled(s, be->variant)) continue;
    bfamily *f = &s->fam[be->family];
    const db_bundle_best *b = be->best;
    const db_bundle_result *res = &be->result;
    db_bundle_entry de = {
        .family_id = f->id, .variant_id = s->var[be->variant].id, .problem_name = be->p->name, .problem_hash = be->p->hash,
        .dims = be->dims_text, .dims_json = be->p->dims_json, .portable = be->portable, .exact_why = be->exact_why,
        .requires = be->ex.requires, .define_exprs = be->ex.define_exprs, .define_values = be->define_values,
        .median_ns = b->median_ns, .min_ns = b->min_ns, .stddev_ns = b->stddev_ns, .samples = b->samples,
        .err_rel_l2 = res->err_rel_l2, .result_id = b->result_id, .measured_at = b->created_at,
        .device_name = be->model >= 0 ? s->models[be->model].name : s->models[0].name, .device_uuid = res->device.uuid,
        .driver = res->device.driver, .model_id = be->model >= 0 ? s->models[be->model].id : 0,
        .backend = res->backend, .seed = res->seed, .measured_source_hash = b->source_hash,
        .same_binary = be->same_binary, .kind = be->kind == BUNDLE_FALLBACK ? "fallback" : be->kind == BUNDLE_VENDOR ? "vendor" : "tuned",
        .vendor = be->kind == BUNDLE_VENDOR ? be->vendor : NULL, .vendor_ns = be->vendor_ns};
    int64_t eid;
    if (db_bundle_entry_put(w, &de, &eid, err) || write_entry_parts(f, be, eid, w, err)) return err->code;
  }
  return TUNE_OK;
}

/* A domain or a fallback entry: a 1.2 reader would serve problems outside the domain and take
 * fallback entries for tuned ones (tunert_format.h), so such a bundle needs a 1.3 reader; an fp8
 * (e4m3) arg one of 1.4, which knows its size; entries of several GPU models one of 1.5, which
 * takes the entries of the GPU it runs on; tensor-map strides naming a row-stride scalar one of 1.6,
 * which knows those names. */
static int write_min_reader(bstate *s, db_bundle_writer *w, tune_err *err) {
  int need = 0;
  for (int fi = 0; fi < s->n_families; ++fi) {
    if (s->fam[fi].domain[0]) need = need > 3 ? need : 3;
    for (int a = 0; a < s->fam[fi].r->n_args; ++a)
      if (s->fam[fi].r->args[a].dtype == TUNE_E4M3) need = 4;
  }
  for (int i = 0; i < s->n_entries; ++i)
    if (s->ent[i].kind == BUNDLE_FALLBACK) need = need > 3 ? need : 3;
  if (s->n_models > 1) need = 5;
  for (int i = 0; i < s->n_entries; ++i)
    if (s->ent[i].tm_row_stride) need = 6;
  char v[12];
  snprintf(v, sizeof v, "%d", need);
  return need ? db_bundle_meta(w, "min_reader_minor", v, err) : TUNE_OK;
}

/* The bundle's tables into the file at path (db_bundle_create: through path.tmp, renamed on commit). */
static int write_tables(bstate *s, const char *path, tune_err *err) {
  db_bundle_writer *w = NULL;
  if (db_bundle_create(path, &w, err)) return err->code;
  if (write_meta(s, w, err) || write_families(s, w, err) || write_variants(s, w, err) || write_entries(s, w, err) ||
      write_min_reader(s, w, err)) {
    db_bundle_abort(w);
    return err->code;
  }
  return db_bundle_commit(w, err);
}

int bundle_write(bstate *s, tune_err *err) {
  const char *out = s->o->out;
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", out) >= (int)sizeof tmp)
    return tune_fail(err, TUNE_EINVAL, "bundle %s: path too long", out);
  /* mkstemp reserves a name no other writer has: concurrent bundles to one path never share a
     temporary, and each removes only its own */
  int fd = mkstemp(tmp);
  if (fd < 0) return tune_fail(err, TUNE_EIO, "bundle %s: cannot create a temporary beside it: %s", out, strerror(errno));
  close(fd);
  s->verify_path = tmp;
  int rc = write_tables(s, tmp, err);
  if (!rc) rc = bundle_verify(s, err);
  s->verify_path = NULL;
  if (!rc && rename(tmp, out)) rc = tune_fail(err, TUNE_EIO, "bundle %s: cannot rename %s over it: %s", out, tmp, strerror(errno));
  if (rc) unlink(tmp);
  return rc;
}
