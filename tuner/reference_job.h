/* reference_job.h: a problem's reference kernel (the recipe's `reference`) as a binary, for
 * tune run (problem_run.c) and tune compare (compare.c) to hand the worker with the problem.
 * The problems of a recipe often share their reference's defines, so the binary comes from the
 * compile cache (the database's binaries, keyed like a variant's) when an earlier problem or run
 * compiled the same one; otherwise it is compiled now and cached. */
#ifndef TUNE_REFERENCE_JOB_H
#define TUNE_REFERENCE_JOB_H

#include "compile.h"
#include "db.h"
#include "recipe.h"

/* The reference of the problem set up in `setup` for `arch`, templates under `templates`, into
 * ref (zeroed first): ref->bin holds the binary and ref->lowered[0] its kernel's lowered name; the
 * caller releases ref->bin (db_binary_release), also on failure. TUNE_ERECIPE with the compiler's
 * log when the reference does not compile. */
int tune_reference_binary(db_conn *db, const tune_recipe *r, const tune_problem_setup *setup, const char *templates,
                          const char *arch, tune_compile_job *ref, tune_err *err);

#endif
