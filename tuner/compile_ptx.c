/* compile_ptx.c: NVRTC to PTX (virtual architectures) for bundles. */
#include "compile_ptx.h"
#include "file_util.h"

#include <nvrtc.h>
#include <stdlib.h>
#include <string.h>

void tune_compute_arch(const char *sm_arch, char *out, size_t n) {
  if (!strncmp(sm_arch, "sm_", 3)) snprintf(out, n, "compute_%s", sm_arch + 3);
  else snprintf(out, n, "%s", sm_arch);
}


#define PTX_TRY(err, call)                                                                    \
  do {                                                                                        \
    nvrtcResult r_ = (call);                                                                  \
    if (r_ != NVRTC_SUCCESS) {                                                                \
      tune_fail((err), TUNE_ENVRTC, "%s:%d: %s: %s", __FILE__, __LINE__, #call, nvrtcGetErrorString(r_)); \
      goto fail;                                                                              \
    }                                                                                         \
  } while (0)

void tune_compile_ptx_one(tune_compile_job *job) {
  tune_err *err = &job->err;
  db_binary *b = &job->bin;
  nvrtcProgram prog = NULL;
  char *src = job->source_text ? strdup(job->source_text) : tune_read_file(job->source_path, NULL);
  if (!src) { tune_fail(err, TUNE_EIO, "%s: cannot read template", job->source_path); return; }
  char arch[64], inc[4200], cinc[4200];
  snprintf(arch, sizeof arch, "-arch=%s", job->arch);
  snprintf(inc, sizeof inc, "-I%s", job->include_root);
  const char *cdir = tune_cuda_include_dir();
  snprintf(cinc, sizeof cinc, "-I%s", cdir ? cdir : "/usr/local/cuda/include");
  const char *opts[TUNE_MAX_DEFINES + 8];
  int n = 0;
  opts[n++] = arch;
  opts[n++] = "-std=c++17";
  opts[n++] = inc;
  opts[n++] = cinc;
  opts[n++] = "-lineinfo";
  for (int i = 0; i < job->n_defines; ++i) opts[n++] = job->defines[i];
  size_t len = 0;
  for (int i = 0; i < n && len < sizeof b->options; ++i)
    len += (size_t)snprintf(b->options + len, sizeof b->options - len, "%s%s", i ? " " : "",
                            i == 2 ? "-I<templates>" : i == 3 ? "-I<cuda>" : opts[i]);
  snprintf(b->arch, sizeof b->arch, "%s", job->arch);
  snprintf(b->nvrtc_version, sizeof b->nvrtc_version, "%s", tune_nvrtc_version());
  b->registers = b->shared_bytes = b->local_bytes = b->spill_stores = b->spill_loads = -1;
  const char *base = strrchr(job->source_path, '/');
  PTX_TRY(err, nvrtcCreateProgram(&prog, src, base ? base + 1 : job->source_path, 0, NULL, NULL));
  for (int i = 0; i < job->n_names; ++i)
    if (job->is_expr[i]) PTX_TRY(err, nvrtcAddNameExpression(prog, job->names[i]));
  nvrtcResult cr = nvrtcCompileProgram(prog, n, opts);
  size_t log_n = 0;
  PTX_TRY(err, nvrtcGetProgramLogSize(prog, &log_n));
  b->log = malloc(log_n + 1);
  if (!b->log) { tune_fail(err, TUNE_ENOMEM, "compile: out of memory"); goto fail; }
  PTX_TRY(err, nvrtcGetProgramLog(prog, b->log));
  b->log[log_n] = 0;
  if (cr == NVRTC_SUCCESS) {
    size_t ptx_n = 0;
    PTX_TRY(err, nvrtcGetPTXSize(prog, &ptx_n));
    b->ptx = malloc(ptx_n + 1);
    if (!b->ptx) { tune_fail(err, TUNE_ENOMEM, "compile: out of memory"); goto fail; }
    PTX_TRY(err, nvrtcGetPTX(prog, b->ptx));
    b->ptx[ptx_n] = 0;
    b->ptx_size = strlen(b->ptx);
    for (int i = 0; i < job->n_names; ++i) {
      const char *low = job->names[i];
      if (job->is_expr[i]) PTX_TRY(err, nvrtcGetLoweredName(prog, job->names[i], &low));
      snprintf(job->lowered[i], sizeof job->lowered[i], "%s", low);
    }
    b->ok = 1;
  } else if (cr == NVRTC_ERROR_COMPILATION) {
    b->ok = 0;
  } else {
    tune_fail(err, TUNE_ENVRTC, "nvrtcCompileProgram: %s", nvrtcGetErrorString(cr));
  }
fail:
  if (prog) nvrtcDestroyProgram(&prog);
  free(src);
}

int tune_compile_ptx_batch(tune_compile_job *jobs, int n, int n_threads, tune_err *err) {
  return tune_compile_batch_kind(jobs, n, n_threads, TUNE_COMPILE_PTX, err);
}
