// gemm_tma_check.cu: standalone correctness smoke test and timing of one TMA configuration of
// templates/gemm/gemm.cuh (PATH 1, WS 1, USE_TMA 1), with its tensor maps built exactly as
// docs/tensormap-args.md specifies (and as the worker builds them: tuner/tensormap.c).
//
// Compiled per configuration (tools/check/gemm_tma_check.sh): -D BLOCK_M BLOCK_N CONSUMERS STAGES
// PERSISTENT RASTER B_COL. Problem from the command line: gemm_tma_check --M 4096 --N 4096 --K 4096
// [--iters 20] [--tag NAME]. Seeded normal bf16 inputs; c poisoned with NaN, then compared with
// templates/gemm/reference.cuh (tolerances of recipes/gemm.lua); then `iters` runs between cudaEvents
// (median). One line: PASS|FAIL tag MxNxK rel_l2= max_abs= nan= median_us= tflops=
// Exit status: 0 PASS, 1 FAIL, 2 CUDA or usage error.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define PATH 1
#ifndef WS
#define WS 1  // 2: ping-pong consumers
#endif
#define USE_TMA 1
#define SETMAXNREG 1
#define TMA_ARGS 2
#include "gemm/gemm.cuh"
#include "gemm/reference.cuh"

static const double kTolRelL2 = 1e-2, kTolMaxAbs = 8;  // recipes/gemm.lua

#define CK(call)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));    \
      return 2;                                                                                   \
    }                                                                                             \
  } while (0)

// bf16 N(0, 1) from a hash of (seed, i): Box-Muller.
__global__ void fill_normal(bf16 *p, size_t n, unsigned long long seed) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 27; x *= 0x94D049BB133111EBull; x ^= x >> 31;
    const float u1 = ((x >> 40) + 1) * (1.0f / 16777217.0f), u2 = ((x >> 16) & 0xffffff) * (1.0f / 16777216.0f);
    p[i] = __float2bfloat16(sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
  }
}

// The map of a [rows][cols] bf16 tensor, box {64, box_rows}, 128-byte swizzle.
static CUresult encode(tune::tensormap *m, const void *ptr, uint64_t cols, uint64_t rows, uint32_t box_rows) {
  cuuint64_t dims[2] = {cols, rows}, strides[1] = {cols * 2};
  cuuint32_t box[2] = {64, box_rows}, estr[2] = {1, 1};
  static_assert(sizeof(tune::tensormap) == sizeof(CUtensorMap), "tensormap layout");
  return cuTensorMapEncodeTiled(reinterpret_cast<CUtensorMap *>(m), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                                const_cast<void *>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

static float bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int main(int argc, char **argv) {
  int M = 4096, N = 4096, K = 4096, iters = 20;
  const char *tag = "gemm_tma";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--M")) M = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--N")) N = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--K")) K = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--tag")) tag = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  if (N % BLOCK_N || K % 64 || M < 1 || iters < 1) { fprintf(stderr, "need N %% BLOCK_N == 0, K %% 64 == 0\n"); return 2; }
  bf16 *a, *b, *c, *ref;
  float *ws;
  CK(cudaMalloc(&a, (size_t)M * K * 2));
  CK(cudaMalloc(&b, (size_t)K * N * 2));
  CK(cudaMalloc(&c, (size_t)M * N * 2));
  CK(cudaMalloc(&ref, (size_t)M * N * 2));
  CK(cudaMalloc(&ws, 16));
  fill_normal<<<1024, 256>>>(a, (size_t)M * K, 1);
  fill_normal<<<1024, 256>>>(b, (size_t)K * N, 2);
  CK(cudaGetLastError());
  tune::tensormap tmA, tmB, tmC;
  CUresult r = encode(&tmA, a, K, M, BLOCK_M);
  if (r == CUDA_SUCCESS) r = B_COL ? encode(&tmB, b, K, N, BLOCK_N) : encode(&tmB, b, N, K, 64);
  if (r == CUDA_SUCCESS) r = encode(&tmC, c, N, M, 64);  // the epilogue's 64 x 64 boxes of c
  if (r != CUDA_SUCCESS) { fprintf(stderr, "cuTensorMapEncodeTiled: error %d\n", (int)r); return 2; }
  // reference
  gemm_reference<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(a, b, ref, ws, M, N, K, tmA, tmB, tmC);
  CK(cudaGetLastError());
  // variant: the launch geometry of recipes/gemm.lua
  const int smem = gemm_path::kSmemBytes, threads = gemm_path::kThreads;
  CK(cudaFuncSetAttribute(gemm_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int tiles = ((M + BLOCK_M - 1) / BLOCK_M) * (N / BLOCK_N);
  int grid = tiles;
  if (PERSISTENT) {
    int per_sm = 0, sms = 0, dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemm_bf16, threads, smem));
    grid = std::min(tiles, std::max(1, per_sm) * sms);
  }
  CK(cudaMemset(c, 0xff, (size_t)M * N * 2));  // NaN
  gemm_bf16<<<grid, threads, smem>>>(a, b, c, ws, M, N, K, tmA, tmB, tmC);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> hc((size_t)M * N), hr((size_t)M * N);
  CK(cudaMemcpy(hc.data(), c, hc.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hr.data(), ref, hr.size() * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0, max_abs = 0;
  long long nan = 0;
  for (size_t i = 0; i < hc.size(); ++i) {
    const double x = bf2f(hc[i]), y = bf2f(hr[i]);
    if (!std::isfinite(x)) { ++nan; continue; }
    num += (x - y) * (x - y);
    den += y * y;
    max_abs = std::max(max_abs, std::fabs(x - y));
  }
  const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  // timing
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms(iters);
  for (int i = 0; i < 3; ++i) gemm_bf16<<<grid, threads, smem>>>(a, b, c, ws, M, N, K, tmA, tmB, tmC);
  for (int i = 0; i < iters; ++i) {
    CK(cudaEventRecord(e0));
    gemm_bf16<<<grid, threads, smem>>>(a, b, c, ws, M, N, K, tmA, tmB, tmC);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms[i], e0, e1));
  }
  CK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  const double us = ms[iters / 2] * 1e3;
  const bool pass = nan == 0 && rel <= kTolRelL2 && max_abs <= kTolMaxAbs;
  printf("%s %s m%dn%dk%d rel_l2=%.3g max_abs=%.3g nan=%lld median_us=%.1f tflops=%.1f grid=%d\n", pass ? "PASS" : "FAIL",
         tag, M, N, K, rel, max_abs, nan, us, 2.0 * M * N * K / us / 1e6, grid);
  return pass ? 0 : 1;
}
