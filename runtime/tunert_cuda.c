/* tunert_cuda.c: dlopen of libcuda for libtunert (a table per context). */
#include "tunert_cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define TUNERT_STR_(x) #x
#define TUNERT_STR(x) TUNERT_STR_(x)

int tunert_cuda_open(tunert_cu *cu, char *msg, size_t msg_n) {
  memset(cu, 0, sizeof *cu);
  const char *names[] = {"libcuda.so.1", "libcuda.so"};
  for (unsigned i = 0; i < 2 && !cu->lib; ++i) cu->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!cu->lib) {
    const char *why = dlerror();
    snprintf(msg, msg_n, "no NVIDIA driver: libcuda.so.1 cannot be opened (%s)", why ? why : "?");
    return -1;
  }
  /* the header's versioned names (cuDevicePrimaryCtxRelease_v2...) are the symbols */
#define TUNERT_CU_RESOLVE(f)                                                         \
  cu->f = (__typeof__(cu->f))dlsym(cu->lib, TUNERT_STR(f));                          \
  if (!cu->f) {                                                                      \
    snprintf(msg, msg_n, "libcuda lacks %s: driver too old?", TUNERT_STR(f));        \
    tunert_cuda_close(cu);                                                           \
    return -1;                                                                       \
  }
  TUNERT_CU_FUNCS(TUNERT_CU_RESOLVE)
#undef TUNERT_CU_RESOLVE
  cu->cuTensorMapEncodeTiled = (__typeof__(cu->cuTensorMapEncodeTiled))dlsym(cu->lib, "cuTensorMapEncodeTiled");
  cu->cuLaunchKernelEx = (__typeof__(cu->cuLaunchKernelEx))dlsym(cu->lib, TUNERT_STR(cuLaunchKernelEx));
  char e[256];
  CUresult r = cu->cuInit(0);
  if (r != CUDA_SUCCESS) {
    snprintf(msg, msg_n, "no usable GPU: cuInit: %s", tunert_cuda_error(cu, r, e, sizeof e));
    tunert_cuda_close(cu);
    return -1;
  }
  int n = 0;
  r = cu->cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS || n == 0) {
    snprintf(msg, msg_n, "the driver reports no CUDA device");
    tunert_cuda_close(cu);
    return -1;
  }
  return 0;
}

void tunert_cuda_close(tunert_cu *cu) {
  if (cu->lib) dlclose(cu->lib);
  memset(cu, 0, sizeof *cu);
}

const char *tunert_cuda_error(const tunert_cu *cu, CUresult r, char *buf, size_t n) {
  const char *name = NULL, *text = NULL;
  if (cu->cuGetErrorName) cu->cuGetErrorName(r, &name);
  if (cu->cuGetErrorString) cu->cuGetErrorString(r, &text);
  snprintf(buf, n, "%s (%d)%s%s", name ? name : "CUDA_ERROR", (int)r, text ? ": " : "", text ? text : "");
  return buf;
}
