/* bundle_compile.c: every binary a bundle holds, compiled now: per variant a cubin for each
 * requested architecture and (unless --no-ptx) PTX for the driver's JIT, on the compile pool. */
#include <stdio.h>
#include <stdlib.h>

#include "bundle_int.h"
#include "compile_ptx.h"

int bundle_compile(bstate *s, tune_err *err) {
  int per = s->n_archs * (s->o->no_ptx ? 1 : 2);
  int n = s->n_variants * per;
  tune_compile_job *jobs = calloc((size_t)n, sizeof *jobs);
  char (*templates)[PATH_MAX + 16] = s->templates;
  char (*ptx_archs)[24] = s->ptx_archs;
  if (!jobs) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  s->jobs = jobs;
  s->n_jobs = n;
  for (int a = 0; a < s->n_archs; ++a) tune_compute_arch(s->archs[a], ptx_archs[a], sizeof ptx_archs[a]);
  for (int fi = 0; fi < s->n_families; ++fi) snprintf(templates[fi], sizeof templates[fi], "%s/templates", s->fam[fi].r->root);
  for (int v = 0; v < s->n_variants; ++v) {
    bvariant *bv = &s->var[v];
    bv->job0 = v * per;
    for (int k = 0; k < per; ++k) {
      tune_compile_job *j = &jobs[v * per + k];
      int ptx = k >= s->n_archs;
      j->source_path = s->fam[bv->family].r->template_path;
      if (bv->source_text) { j->source_text = bv->source_text; j->text_of_template = 1; }
      j->include_root = templates[bv->family];
      j->arch = ptx ? ptx_archs[k - s->n_archs] : s->archs[k];
      j->n_defines = bv->var.n_defines;
      j->defines = (const char(*)[160])bv->var.defines;
      j->n_names = bv->var.n_launches;
      for (int l = 0; l < bv->var.n_launches; ++l) { j->names[l] = bv->var.launch[l].kernel; j->is_expr[l] = bv->var.launch[l].is_expr; }
      if (!ptx && tune_compile_key(j, err)) return err->code;
    }
  }
  /* cubins then PTX, each batch on the pool; the jobs of one kind are contiguous per variant */
  tune_compile_job *cub = calloc((size_t)s->n_variants * (size_t)s->n_archs, sizeof *cub);
  tune_compile_job *px = s->o->no_ptx ? NULL : calloc((size_t)s->n_variants * (size_t)s->n_archs, sizeof *px);
  if (!cub || (!s->o->no_ptx && !px)) { free(cub); free(px); return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory"); }
  int nc = 0, np = 0;
  for (int v = 0; v < s->n_variants; ++v)
    for (int k = 0; k < per; ++k) {
      if (k < s->n_archs) cub[nc++] = jobs[v * per + k];
      else px[np++] = jobs[v * per + k];
    }
  int rc = tune_compile_batch(cub, nc, s->o->jobs, err);
  if (!rc && np) rc = tune_compile_ptx_batch(px, np, s->o->jobs, err);
  nc = np = 0;
  for (int v = 0; v < s->n_variants; ++v)
    for (int k = 0; k < per; ++k) jobs[v * per + k] = k < s->n_archs ? cub[nc++] : px[np++];
  free(cub);
  free(px);
  if (rc) return rc;
  for (int i = 0; i < n; ++i) {
    if (!jobs[i].bin.ok) {
      bvariant *bv = &s->var[i / per];
      return tune_fail(err, TUNE_ERECIPE, "%s variant %s does not compile for %s now:\n%.2000s", s->fam[bv->family].name,
                       bv->params_json, jobs[i].arch, jobs[i].bin.log ? jobs[i].bin.log : "");
    }
  }
  for (int v = 0; v < s->n_variants; ++v)
    for (int l = 0; l < s->var[v].var.n_launches; ++l)
      snprintf(s->var[v].lowered[l], sizeof s->var[v].lowered[l], "%s", jobs[v * per].lowered[l]);
  return TUNE_OK;
}
