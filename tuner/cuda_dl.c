/* cuda_dl.c: dlopen of libcuda and the driver function table. */
#include "cuda_dl.h"

#include <dlfcn.h>

tune_cu_api tune_cu;
static void *cuda_lib;
static int cuda_loaded;

#define TUNE_STR_(x) #x
#define TUNE_STR(x) TUNE_STR_(x)

int tune_cuda_load(tune_err *err) {
  if (cuda_loaded) return TUNE_OK;
  const char *names[] = {"libcuda.so.1", "libcuda.so"};
  for (unsigned i = 0; i < 2 && !cuda_lib; ++i) cuda_lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!cuda_lib)
    return tune_fail(err, TUNE_ENOGPU,
                     "no NVIDIA driver: libcuda.so.1 cannot be opened (%s); measuring needs a GPU, "
                     "use --compile-only or --device replay:FILE here",
                     dlerror());
#define TUNE_CU_RESOLVE(f)                                                                    \
  tune_cu.f = (__typeof__(tune_cu.f))dlsym(cuda_lib, TUNE_STR(f));                           \
  if (!tune_cu.f) return tune_fail(err, TUNE_ENOGPU, "libcuda lacks %s: driver too old?", TUNE_STR(f));
  TUNE_CU_FUNCS(TUNE_CU_RESOLVE)
#undef TUNE_CU_RESOLVE
  CUresult r = tune_cu.cuInit(0);
  if (r != CUDA_SUCCESS)
    return tune_fail(err, TUNE_ENOGPU, "cuInit failed: %s (no usable GPU)", tune_cuda_error_name(r));
  int n = 0;
  r = tune_cu.cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS || n == 0)
    return tune_fail(err, TUNE_ENOGPU, "the driver reports no CUDA device");
  cuda_loaded = 1;
  return TUNE_OK;
}

const char *tune_cuda_error_name(CUresult r) {
  static __thread char buf[256];
  const char *name = NULL, *text = NULL;
  if (tune_cu.cuGetErrorName) tune_cu.cuGetErrorName(r, &name);
  if (tune_cu.cuGetErrorString) tune_cu.cuGetErrorString(r, &text);
  snprintf(buf, sizeof buf, "%s (%d)%s%s", name ? name : "CUDA_ERROR", (int)r, text ? ": " : "",
           text ? text : "");
  return buf;
}
