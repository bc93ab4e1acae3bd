// cuda_check.h: CK(call) for the standalone CUDA checks in tools/check (programs, not the library:
// an error there ends the program with the call, file and line, exit status CK_EXIT: 1 unless the
// program defines it first; the prefill checks use 3, apart from their 1 for a wrong result).
#pragma once
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#ifndef CK_EXIT
#define CK_EXIT 1
#endif

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
      exit(CK_EXIT);                                                                            \
    }                                                                                           \
  } while (0)
