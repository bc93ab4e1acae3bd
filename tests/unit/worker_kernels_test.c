/* worker_kernels_test.c: tune's own worker kernels (tuner/worker_kernels.c: input checksum,
 * scratch zeroing, output comparison, input fill) compile with NVRTC for the architectures tune runs on, and
 * each entry point is in the cubin. NVRTC needs no GPU; tests/gpu/faults_test.sh runs them.
 * Exit status: 0 when every CHECK passed. */
#define _GNU_SOURCE /* memmem */
#include <string.h>

#include "check.h"
#include "worker_int.h"

int main(void) {
  const char *archs[] = {"sm_80", "sm_90"};
  for (int a = 0; a < 2; ++a) {
    tune_compile_job job;
    tune_err err;
    tune_err_clear(&err);
    int rc = tune_wk_kernels_compile(archs[a], &job, &err);
    CHECK(rc == TUNE_OK);
    if (rc) { fprintf(stderr, "%s: %s\n", archs[a], err.msg); continue; }
    CHECK(job.bin.ok && job.bin.cubin && job.bin.cubin_size > 0 && job.n_names == 4);
    for (int k = 0; k < job.n_names; ++k)
      CHECK(memmem(job.bin.cubin, job.bin.cubin_size, job.names[k], strlen(job.names[k])) != NULL);
    CHECK(memmem(job.bin.cubin, job.bin.cubin_size, "tune_fill", 9) != NULL); /* loaded by name, not listed */
    db_binary_release(&job.bin);
  }
  printf("worker_kernels_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
