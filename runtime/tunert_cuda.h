/* tunert_cuda.h: the CUDA driver API for libtunert, opened with dlopen.
 *
 * One table per context (no globals): tunert_cuda_open dlopens libcuda.so.1
 * (refcounted by the loader) and resolves the few functions the runtime
 * calls; tunert_cuda_close drops it. Internal to libtunert. */
#ifndef TUNERT_CUDA_H
#define TUNERT_CUDA_H

#include <cuda.h>
#include <stddef.h>

#define TUNERT_CU_FUNCS(X)                                                                      \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetAttribute)    \
  X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent) \
  X(cuCtxSetCurrent) X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleUnload)                \
  X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuGetErrorName)              \
  X(cuGetErrorString)

typedef struct tunert_cu {
  void *lib;                     /* dlopen handle, NULL when not open */
#define TUNERT_CU_FIELD(f) __typeof__(&f) f;
  TUNERT_CU_FUNCS(TUNERT_CU_FIELD)
#undef TUNERT_CU_FIELD
  /* optional (driver >= 12.0): only tensor-map args need it; NULL otherwise */
  __typeof__(&cuTensorMapEncodeTiled) cuTensorMapEncodeTiled;
  /* optional (driver >= 12.0): only thread-block cluster launches need it; NULL otherwise */
  __typeof__(&cuLaunchKernelEx) cuLaunchKernelEx;
} tunert_cu;

/* Open libcuda and cuInit(0). Returns 0, or -1 with the reason in msg (no
 * library, a function missing, cuInit failing, no device). */
int tunert_cuda_open(tunert_cu *cu, char *msg, size_t msg_n);
void tunert_cuda_close(tunert_cu *cu);
/* "CUDA_ERROR_X (code): text" into buf. */
const char *tunert_cuda_error(const tunert_cu *cu, CUresult r, char *buf, size_t n);

#endif
