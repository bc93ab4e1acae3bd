/* reference_job.c: a problem's reference binary, cached (reference_job.h). */
#include "reference_job.h"

#include <string.h>

int tune_reference_binary(db_conn *db, const tune_recipe *r, const tune_problem_setup *setup, const char *templates,
                          const char *arch, tune_compile_job *ref, tune_err *err) {
  memset(ref, 0, sizeof *ref);
  ref->source_path = r->ref_source;
  ref->include_root = templates;
  ref->arch = arch;
  ref->n_defines = setup->n_ref_defines;
  ref->defines = (const char(*)[160])setup->ref_defines;
  ref->n_names = 1;
  ref->names[0] = setup->ref_launch.kernel;
  ref->is_expr[0] = setup->ref_launch.is_expr;
  int hit = 0;
  if (tune_compile_key(ref, err) || tune_compile_from_cache(db, ref, &hit, err)) return err->code;
  if (!hit && (tune_compile_batch(ref, 1, 1, err) || db_binary_put(db, &ref->bin, err))) return err->code;
  if (!ref->bin.ok)
    return tune_fail(err, TUNE_ERECIPE, "%s: the reference %s does not compile:\n%s", r->file, r->ref_source,
                     ref->bin.log ? ref->bin.log : "");
  return TUNE_OK;
}
