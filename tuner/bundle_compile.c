/* bundle_compile.c: every binary a bundle holds, compiled now on the compile pool: per variant a
 * cubin for each requested architecture and (unless --no-ptx) portable PTX for the driver's JIT.
 * A variant that does not compile for an architecture is skipped there, not the bundle: only the
 * architecture it was measured on must compile. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle_int.h"
#include "compile_ptx.h"

/* The compiler's first error line of log into out ("Instruction 'wgmma.fence' not supported on
 * .target 'sm_80'"), without ptxas' "file, line N; error   : " prefix. */
static void first_error(const char *log, char *out, size_t n) {
  snprintf(out, n, "does not compile (no compiler log)");
  if (!log) return;
  const char *e = strstr(log, "error");
  if (!e) e = log;
  const char *line = e;
  while (line > log && line[-1] != '\n') --line;
  const char *colon = strstr(e, ": ");
  const char *nl = strchr(line, '\n');
  if (colon && (!nl || colon < nl)) line = colon + 2;
  while (*line == ' ') ++line;
  size_t len = nl ? (size_t)(nl - line) : strlen(line);
  while (len && isspace((unsigned char)line[len - 1])) --len;
  if (len) snprintf(out, n, "%.*s", (int)len, line);
}

/* An arch-specific target ("sm_90a"): its generic name ("sm_90") into out, 1; else 0. */
static int generic_arch(const char *arch, char *out, size_t n) {
  size_t len = strlen(arch);
  if (len < 4 || !isalpha((unsigned char)arch[len - 1])) return 0;
  snprintf(out, n, "%.*s", (int)(len - 1), arch);
  return 1;
}

/* The jobs of every variant: cubin k < n_archs for s->archs[k], PTX n_archs + a (its arch is set
 * once the cubins say which it gets); compile keys of the cubins. */
static int make_jobs(bstate *s, tune_err *err) {
  int per = bundle_jobs_per_variant(s);
  s->jobs = calloc((size_t)s->n_variants * (size_t)per, sizeof *s->jobs);
  if (!s->jobs) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  s->n_jobs = s->n_variants * per;
  for (int fi = 0; fi < s->n_families; ++fi)
    snprintf(s->templates[fi], sizeof s->templates[fi], "%s/templates", s->fam[fi].r->root);
  for (int v = 0; v < s->n_variants; ++v) {
    bvariant *bv = &s->var[v];
    bv->job0 = v * per;
    for (int k = 0; k < per; ++k) {
      tune_compile_job *j = &s->jobs[v * per + k];
      int ptx = k >= s->n_archs;
      j->source_path = s->fam[bv->family].r->template_path;
      if (bv->source_text) { j->source_text = bv->source_text; j->text_of_template = 1; }
      j->include_root = s->templates[bv->family];
      j->arch = ptx ? bv->ptx_arch[k - s->n_archs] : s->archs[k];
      j->n_defines = bv->var.n_defines;
      j->defines = (const char(*)[160])bv->var.defines;
      j->n_names = bv->var.n_launches;
      for (int l = 0; l < bv->var.n_launches; ++l) { j->names[l] = bv->var.launch[l].kernel; j->is_expr[l] = bv->var.launch[l].is_expr; }
      if (!ptx && tune_compile_key(j, err)) return err->code;
    }
  }
  return TUNE_OK;
}

/* Compile the jobs pick[0..n) (indexes into s->jobs) as one batch of kind ptx or cubin. */
static int compile_picked(bstate *s, const int *pick, int n, int ptx, tune_err *err) {
  if (!n) return TUNE_OK;
  tune_compile_job *batch = calloc((size_t)n, sizeof *batch);
  if (!batch) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  for (int i = 0; i < n; ++i) batch[i] = s->jobs[pick[i]];
  int rc = ptx ? tune_compile_ptx_batch(batch, n, s->o->jobs, err) : tune_compile_batch(batch, n, s->o->jobs, err);
  for (int i = 0; i < n; ++i) s->jobs[pick[i]] = batch[i];
  free(batch);
  return rc;
}

/* The cubins: each variant's for each arch; a failure skips the variant there, except on the
 * arch it was measured on. */
static int compile_cubins(bstate *s, int *pick, tune_err *err) {
  int per = bundle_jobs_per_variant(s), n = 0;
  for (int v = 0; v < s->n_variants; ++v)
    for (int a = 0; a < s->n_archs; ++a) pick[n++] = v * per + a;
  if (compile_picked(s, pick, n, 0, err)) return err->code;
  for (int v = 0; v < s->n_variants; ++v) {
    bvariant *bv = &s->var[v];
    const bfamily *f = &s->fam[bv->family];
    for (int a = 0; a < s->n_archs; ++a) {
      const tune_compile_job *j = &s->jobs[v * per + a];
      if (j->bin.ok) continue;
      if (!strcmp(s->archs[a], f->measured_arch))
        return tune_fail(err, TUNE_ERECIPE, "%s variant %s does not compile for %s, the architecture it was measured on:\n%.2000s",
                         f->name, bv->params_json, s->archs[a], j->bin.log ? j->bin.log : "");
      first_error(j->bin.log, bv->skip_why[a], sizeof bv->skip_why[a]);
    }
  }
  return TUNE_OK;
}

/* Which variants may have portable PTX for an arch-specific target: those whose source also
 * compiles for the generic arch (sm_90 for sm_90a), compiled here as probes and dropped. Sets
 * ptx_arch (compute_90) or ptx_why. */
static int probe_portable(bstate *s, tune_err *err) {
  int per = bundle_jobs_per_variant(s), n = 0;
  char generic[TUNE_BUNDLE_MAX_ARCHS][16];
  int specific[TUNE_BUNDLE_MAX_ARCHS];
  for (int a = 0; a < s->n_archs; ++a) specific[a] = generic_arch(s->archs[a], generic[a], sizeof generic[a]);
  tune_compile_job *probe = calloc((size_t)s->n_variants * (size_t)s->n_archs, sizeof *probe);
  int *owner = calloc((size_t)s->n_variants * (size_t)s->n_archs, sizeof *owner);
  if (!probe || !owner) { free(probe); free(owner); return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory"); }
  for (int v = 0; v < s->n_variants; ++v)
    for (int a = 0; a < s->n_archs; ++a) {
      bvariant *bv = &s->var[v];
      const tune_compile_job *cub = &s->jobs[v * per + a];
      if (!cub->bin.ok) continue;
      if (!specific[a]) { tune_compute_arch(s->archs[a], bv->ptx_arch[a], sizeof bv->ptx_arch[a]); continue; }
      probe[n] = *cub;
      memset(&probe[n].bin, 0, sizeof probe[n].bin);
      probe[n].arch = generic[a];
      owner[n++] = v * s->n_archs + a;
    }
  int rc = n ? tune_compile_batch(probe, n, s->o->jobs, err) : TUNE_OK;
  for (int i = 0; i < n; ++i) {
    bvariant *bv = &s->var[owner[i] / s->n_archs];
    int a = owner[i] % s->n_archs;
    if (!rc && probe[i].bin.ok) tune_compute_arch(generic[a], bv->ptx_arch[a], sizeof bv->ptx_arch[a]);
    else if (!rc) {
      char why[140];
      first_error(probe[i].bin.log, why, sizeof why);
      snprintf(bv->ptx_why[a], sizeof bv->ptx_why[a], "%s-only code (for %s: %s)", s->archs[a], generic[a], why);
    }
    db_binary_release(&probe[i].bin);
  }
  free(probe);
  free(owner);
  return rc;
}

/* The PTX of every (variant, arch) that has a portable virtual arch. */
static int compile_ptx(bstate *s, int *pick, tune_err *err) {
  int per = bundle_jobs_per_variant(s), n = 0;
  for (int v = 0; v < s->n_variants; ++v)
    for (int a = 0; a < s->n_archs; ++a)
      if (s->var[v].ptx_arch[a][0]) pick[n++] = v * per + s->n_archs + a;
  if (compile_picked(s, pick, n, 1, err)) return err->code;
  for (int v = 0; v < s->n_variants; ++v)
    for (int a = 0; a < s->n_archs; ++a) {
      bvariant *bv = &s->var[v];
      const tune_compile_job *j = &s->jobs[v * per + s->n_archs + a];
      if (!bv->ptx_arch[a][0] || j->bin.ok) continue;
      char why[140];
      first_error(j->bin.log, why, sizeof why);
      if (!strcmp(s->archs[a], s->fam[bv->family].measured_arch))
        return tune_fail(err, TUNE_ERECIPE, "%s variant %s: PTX for %s, the architecture it was measured on, does not compile: %s",
                         s->fam[bv->family].name, bv->params_json, bv->ptx_arch[a], why);
      char target[24];
      snprintf(target, sizeof target, "%s", bv->ptx_arch[a]);
      snprintf(bv->ptx_why[a], sizeof bv->ptx_why[a], "%s does not compile: %s", target, why);
      bv->ptx_arch[a][0] = 0;
    }
  return TUNE_OK;
}

int bundle_compile(bstate *s, tune_err *err) {
  if (make_jobs(s, err)) return err->code;
  int *pick = calloc((size_t)s->n_variants * (size_t)s->n_archs, sizeof *pick);
  if (!pick) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  int rc = compile_cubins(s, pick, err);
  if (!rc && !s->o->no_ptx) rc = probe_portable(s, err);
  if (!rc && !s->o->no_ptx) rc = compile_ptx(s, pick, err);
  free(pick);
  if (rc) return rc;
  int per = bundle_jobs_per_variant(s);
  for (int v = 0; v < s->n_variants; ++v) {
    bvariant *bv = &s->var[v];
    const tune_compile_job *src = NULL;
    for (int k = 0; k < per && !src; ++k)
      if (s->jobs[v * per + k].bin.ok) src = &s->jobs[v * per + k];
    /* no binary at all: never launched, so the names as the recipe gives them */
    for (int l = 0; l < bv->var.n_launches; ++l)
      snprintf(bv->lowered[l], sizeof bv->lowered[l], "%s", src ? src->lowered[l] : bv->var.launch[l].kernel);
  }
  return TUNE_OK;
}
