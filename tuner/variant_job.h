/* variant_job.h: the compile job of a recipe variant (template, include root, arch, the variant's
 * defines and kernel names), as problem_run.c builds it for a proposal and speculate.c for a guess.
 * The job points into *v: keep v alive while the job compiles. */
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

#endif
