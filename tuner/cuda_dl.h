/* cuda_dl.h: the CUDA driver API, opened at run time.
 *
 * libcuda is never linked: tune must start, compile and replay on a machine
 * with no driver. tune_cuda_load() dlopens libcuda.so.1 once and resolves
 * every function used by tune into the global table tune_cu; calls read
 * tune_cu.cuMemAlloc(...) (the header's versioned names, e.g. cuMemAlloc_v2,
 * apply to the fields too). Only the worker process and device probing call
 * the driver. Not thread-safe during the first load; read-only afterwards. */
#ifndef TUNE_CUDA_DL_H
#define TUNE_CUDA_DL_H

#include <cuda.h>

#include "tune_err.h"

#define TUNE_CU_FUNCS(X)                                                                    \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName)      \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDeviceGetUuid) X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuCtxGetLimit)       \
  X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemsetD32)  \
  X(cuMemsetD16) X(cuMemsetD8) X(cuMemsetD8Async) X(cuModuleLoadData) X(cuModuleUnload)      \
  X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel)       \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)              \
  X(cuEventDestroy) X(cuGetErrorName) X(cuGetErrorString) X(cuStreamCreate)                  \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuCtxGetDevice) X(cuLaunchKernelEx)           \
  X(cuOccupancyMaxActiveClusters)

typedef struct tune_cu_api {
#define TUNE_CU_FIELD(f) __typeof__(&f) f;
  TUNE_CU_FUNCS(TUNE_CU_FIELD)
#undef TUNE_CU_FIELD
} tune_cu_api;

extern tune_cu_api tune_cu;

/* Open libcuda and call cuInit(0). TUNE_ENOGPU with a clear message when the
 * driver library is absent or reports no device. Idempotent. */
int tune_cuda_load(tune_err *err);

/* "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access..." for a result code. */
const char *tune_cuda_error_name(CUresult r);

/* Check one driver call: records the call text, file:line and the driver's
 * error name, then jumps to fail:. */
#define CU_TRY(err, call)                                                                     \
  do {                                                                                        \
    CUresult cu_try_r_ = tune_cu.call;                                                        \
    if (cu_try_r_ != CUDA_SUCCESS) {                                                          \
      tune_fail((err), TUNE_ECUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call,                \
                tune_cuda_error_name(cu_try_r_));                                             \
      goto fail;                                                                              \
    }                                                                                         \
  } while (0)

#endif
