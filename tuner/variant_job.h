/* variant_job.h: the compile job of a recipe variant (template, include root, arch, the variant's
 * defines and kernel names), as problem_run.c builds it for a proposal and speculate.c and
 * lookahead.c for a guess. The job points into *v: keep v alive while the job compiles. */
#ifndef TUNE_VARIANT_JOB_H
#define TUNE_VARIANT_JOB_H

#include <string.h>

#include "compile.h"
#include "recipe.h"

static inline void tune_variant_job(tune_compile_job *j, const char *template_path, const char *templates,
                                    const char *arch, const tune_variant *v) {
  memset(j, 0, sizeof *j);
  j->source_path = template_path;
  j->include_root = templates;
  j->arch = arch;
  j->n_defines = v->n_defines;
  j->defines = (const char(*)[160])v->defines;
  j->n_names = v->n_launches;
  for (int k = 0; k < v->n_launches; ++k) {
    j->names[k] = v->launch[k].kernel;
    j->is_expr[k] = v->launch[k].is_expr;
  }
}

/* Variant vi of problem p evaluated into *v and, unless it is skipped (v->skip), its job into *j
 * with the compile key computed: what a guess of config vi compiles. */
static inline int tune_variant_job_for(tune_recipe *r, const int *vi, const tune_problem *p,
                                       const tune_device_facts *facts, const char *templates, const char *arch,
                                       tune_variant *v, tune_compile_job *j, tune_err *err) {
  int rc = tune_recipe_eval_variant(r, vi, p, facts, v, err);
  if (rc || v->skip) return rc;
  tune_variant_job(j, r->template_path, templates, arch, v);
  return tune_compile_key(j, err);
}

/* Is `key` the compile key of one of jobs[0..n)? */
static inline int tune_job_key_in(const char *key, const tune_compile_job *jobs, int n) {
  for (int i = 0; i < n; ++i)
    if (!strcmp(key, jobs[i].bin.key)) return 1;
  return 0;
}

#endif
