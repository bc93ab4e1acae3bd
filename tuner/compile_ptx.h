/* compile_ptx.h: PTX for a bundle's JIT fallback.
 *
 * Owns: compiling a variant (same template, defines and kernel names as
 * tune_compile_batch) to PTX for a virtual architecture (compute_90a), which
 * the driver can JIT on a device that no cubin of the bundle matches. Same
 * options as the cubin build except the target and the ptxas report. Threads:
 * the compile pool of compile.h (and its compile servers). */
#ifndef TUNE_COMPILE_PTX_H
#define TUNE_COMPILE_PTX_H

#include "compile.h"

/* "sm_90a" -> "compute_90a" into out. */
void tune_compute_arch(const char *sm_arch, char *out, size_t n);

/* Compile jobs[0..n) to PTX: job->arch is the virtual arch ("compute_90a").
 * On success job->bin.ok = 1, bin.ptx (malloc'd, NUL-terminated) and
 * bin.ptx_size (without the NUL), job->lowered[] filled; a compile error is
 * bin.ok = 0 with bin.log. Returns TUNE_OK unless the pool itself failed.
 * Free with db_binary_release(&job->bin). */
int tune_compile_ptx_batch(tune_compile_job *jobs, int n, int n_threads, tune_err *err);

/* One job to PTX in this process (a pool thread or a compile server). */
void tune_compile_ptx_one(tune_compile_job *job);

#endif
