// softmax_limit.cu: what keeps a tuned softmax under the copy bandwidth at 64-128 MiB of traffic.
// Times, on the same rows x COLS bf16 buffers, (1) softmax.cuh's softmax_row built with the -D
// config given (the recorded best), (2) a one-shot 16-byte copy of the same bytes, (3) "rowmax": the
// softmax's thread map with the exponentials taken out (warp per row, the lane's slice loaded into
// registers, one shuffle max reduction, the slice stored with the max added), warp-per-row configs
// only. L2 flushed (memset of 256 MiB) before every timed launch; CUDA events; median of 30.
// For ncu: the kernels are named softmax_row, copy16, rowmax.
// Build: nvcc -arch=sm_90a -O3 -std=c++17 -I templates -D COLS=1024 -D ROWS=16384 -D ROW_MODE=0
//        -D BLOCK=128 ... tools/check/softmax_limit.cu -o softmax_limit
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "softmax/softmax.cuh"

#include "cuda_check.h"

#ifndef ROWS
#error "needs -D ROWS"
#endif
constexpr long long kElems = (long long)ROWS * COLS;

// a block copies 4 x 256 consecutive 16-byte vectors, each warp instruction 512 contiguous bytes
extern "C" __global__ void __launch_bounds__(256) copy16(const uint4 *__restrict__ x, uint4 *__restrict__ y, long long n) {
  const long long i = (long long)blockIdx.x * 1024 + threadIdx.x;
  uint4 v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if (i + k * 256 < n) v[k] = __ldg(x + i + k * 256);
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if (i + k * 256 < n) __stcs(y + i + k * 256, v[k]);
}

// warp per row of COLS bf16, 16-byte vectors, lane slice kept in registers
constexpr int kRowVecs = COLS / 8 / 32;
extern "C" __global__ void __launch_bounds__(128) rowmax(const uint4 *__restrict__ x, uint4 *__restrict__ y, int rows) {
  const long long row = (long long)blockIdx.x * 4 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows || kRowVecs < 1 || kRowVecs > 16) return;
  const uint4 *xr = x + row * (COLS / 8);
  uint4 *yr = y + row * (COLS / 8);
  uint4 v[kRowVecs > 16 ? 1 : (kRowVecs < 1 ? 1 : kRowVecs)];
  unsigned m = 0;
#pragma unroll
  for (int j = 0; j < kRowVecs; ++j) {
    v[j] = __ldg(xr + j * 32 + lane);
    m = max(m, max(max(v[j].x, v[j].y), max(v[j].z, v[j].w)));
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
#pragma unroll
  for (int j = 0; j < kRowVecs; ++j) {
    uint4 o = v[j];
    o.x ^= m & 1u;  // depends on the row's max, changes nothing worth a store of its own
    __stcs(yr + j * 32 + lane, o);
  }
}

static int sm_count() {
  int d, n;
  CK(cudaGetDevice(&d));
  CK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, d));
  return n;
}

template <class F> static float time_median(F launch, void *flush, size_t flush_bytes) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int r = 0; r < 33; ++r) {
    CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes));
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 3) t.push_back(ms * 1000.f);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  const size_t bytes = kElems * 2, flush_bytes = 256u << 20;
  bf16 *x, *y;
  void *flush;
  CK(cudaMalloc(&x, bytes));
  CK(cudaMalloc(&y, bytes));
  CK(cudaMalloc(&flush, flush_bytes));
  std::vector<uint16_t> h(kElems);
  unsigned s = 12345;
  for (auto &e : h) {  // bf16 of a value in [-4, 4): sign, exponent 125..128, random mantissa
    s = s * 1664525u + 1013904223u;
    e = (uint16_t)(((s >> 31) << 15) | ((125 + ((s >> 20) & 3)) << 7) | ((s >> 8) & 0x7f));
  }
  CK(cudaMemcpy(x, h.data(), bytes, cudaMemcpyHostToDevice));
  const int sms = sm_count();
  long long groups = ROW_MODE == 0 ? (ROWS + BLOCK / 32 - 1) / (BLOCK / 32) : ROWS;
  if (PERSIST > 0) groups = std::min<long long>(groups, (long long)sms * PERSIST);
  const double traffic = 2.0 * bytes;
  auto soft = [&] { softmax_row<<<(unsigned)groups, BLOCK>>>(x, y, ROWS); };
  const long long vecs = bytes / 16;
  auto copy = [&] { copy16<<<(unsigned)((vecs + 1023) / 1024), 256>>>((const uint4 *)x, (uint4 *)y, vecs); };
  auto rmax = [&] { rowmax<<<(unsigned)((ROWS + 3) / 4), 128>>>((const uint4 *)x, (uint4 *)y, ROWS); };
  const size_t big = 1u << 30;
  void *bx, *by;
  CK(cudaMalloc(&bx, big));
  CK(cudaMalloc(&by, big));
  CK(cudaMemset(bx, 1, big));
  auto copy_big = [&] { copy16<<<(unsigned)(big / 16 / 1024), 256>>>((const uint4 *)bx, (uint4 *)by, big / 16); };
  const float tb = time_median(copy_big, flush, flush_bytes);
  const double peak = 2.0 * big / tb / 1e3;
  CK(cudaFree(bx));
  CK(cudaFree(by));
  printf("copy16 1 GiB %8.2f us %6.0f GB/s (the copy bandwidth below)\n", tb, peak);
  const float ts = time_median(soft, flush, flush_bytes);
  const float tc = time_median(copy, flush, flush_bytes);
  printf("rows %d cols %d: traffic %.1f MiB\n", ROWS, COLS, traffic / (1 << 20));
  printf("softmax_row %8.2f us %6.0f GB/s %5.1f %% of copy\n", ts, traffic / ts / 1e3, 100 * traffic / ts / 1e3 / peak);
  printf("copy16      %8.2f us %6.0f GB/s %5.1f %% of copy; softmax / same-size copy %.3f\n", tc, traffic / tc / 1e3,
         100 * traffic / tc / 1e3 / peak, tc / ts);
  if (kRowVecs >= 1 && kRowVecs <= 16) {
    const float tr = time_median(rmax, flush, flush_bytes);
    printf("rowmax      %8.2f us %6.0f GB/s %5.1f %% of copy\n", tr, traffic / tr / 1e3, 100 * traffic / tr / 1e3 / peak);
  }
  return 0;
}
