// tcgemv_check.cu: standalone correctness check and timing of PATH 3 of templates/gemm/gemm.cuh
// (templates/gemm/tcgemv.cuh: decode shapes on mma.sync, b streamed into registers; B_COL = 1).
//
// Compiled per configuration: -D TC_M TC_WARPS TC_UNROLL SPLIT_K. Problem from the command line:
// tcgemv_check --N 8192 --K 8192 [--iters 40] [--tag NAME] (M = TC_M). Seeded normal bf16 inputs; c
// poisoned with NaN, then compared with templates/gemm/reference.cuh (tolerances of recipes/gemm.lua);
// then `iters` runs (gemm_bf16 and, with SPLIT_K > 1, gemm_splitk_reduce) between cudaEvents (median).
// One line: PASS|FAIL tag MxNxK rel_l2= max_abs= nan= median_us= GBps=
// Exit status: 0 PASS, 1 FAIL, 2 CUDA or usage error.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define PATH 3
#define B_COL 1
#define TMA_ARGS 0
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

static float bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int main(int argc, char **argv) {
  const int M = TC_M;
  int N = 8192, K = 8192, iters = 40;
  const char *tag = "tcgemv";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--N")) N = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--K")) K = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--tag")) tag = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  if (N % (16 * TC_WARPS) || (K / SPLIT_K) % (32 * TC_UNROLL) || K % SPLIT_K || iters < 1) {
    fprintf(stderr, "need N %% (16 TC_WARPS) == 0, (K / SPLIT_K) %% (32 TC_UNROLL) == 0\n");
    return 2;
  }
  bf16 *a, *b, *c, *ref;
  float *ws;
  CK(cudaMalloc(&a, (size_t)M * K * 2));
  CK(cudaMalloc(&b, (size_t)K * N * 2));
  CK(cudaMalloc(&c, (size_t)M * N * 2));
  CK(cudaMalloc(&ref, (size_t)M * N * 2));
  CK(cudaMalloc(&ws, (size_t)SPLIT_K * M * N * 4));
  fill_normal<<<1024, 256>>>(a, (size_t)M * K, 1);
  fill_normal<<<1024, 256>>>(b, (size_t)K * N, 2);
  CK(cudaGetLastError());
  gemm_reference<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(a, b, ref, ws, M, N, K);
  CK(cudaGetLastError());
  const dim3 grid(N / (16 * TC_WARPS), SPLIT_K), block(32 * TC_WARPS);
  const int rgrid = (int)(((size_t)M * N / 8 + 255) / 256);
  auto launch = [&]() {
    gemm_bf16<<<grid, block>>>(a, b, c, ws, M, N, K);
    if (SPLIT_K > 1) gemm_splitk_reduce<<<rgrid, 256>>>(a, b, c, ws, M, N, K);
  };
  CK(cudaMemset(c, 0xff, (size_t)M * N * 2));  // NaN
  CK(cudaMemset(ws, 0xff, (size_t)SPLIT_K * M * N * 4));
  launch();
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
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms(iters);
  for (int i = 0; i < 3; ++i) launch();
  for (int i = 0; i < iters; ++i) {
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms[i], e0, e1));
  }
  CK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  const double us = ms[iters / 2] * 1e3;
  const bool pass = nan == 0 && rel <= kTolRelL2 && max_abs <= kTolMaxAbs;
  printf("%s %s m%dn%dk%d rel_l2=%.3g max_abs=%.3g nan=%lld median_us=%.1f GBps=%.0f\n", pass ? "PASS" : "FAIL", tag, M, N, K,
         rel, max_abs, nan, us, ((double)N * K + (double)M * K + (double)M * N) * 2 / us / 1e3);
  return pass ? 0 : 1;
}
