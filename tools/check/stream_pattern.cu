// stream_pattern.cu: how fast a 8192 x 8192 bf16 matrix (128 MiB, the decode GEMMs' b) can be read
// with different warp access shapes: a warp instruction (32 lanes x 16 bytes = 512 B) covers R rows x
// 512/R contiguous bytes, and a warp walks its R rows along k with U such instructions in flight.
// R = 1 is the GEMV path's shape (one row, 512 B), R = 16 the mma.sync register path's (16 rows x 32 B
// per instruction). Each warp reads 16 KiB in all (R rows x 16/R KiB), so every shape launches the same
// number of warps. L2 is flushed (memset of 256 MiB) before every timed launch; CUDA events; median of 15.
// Build: nvcc -arch=sm_90a -O3 -std=c++17 tools/check/stream_pattern.cu -o stream_pattern
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

constexpr size_t kRowBytes = 8192 * 2, kRows = 8192, kWarpBytes = 16384;

__device__ __forceinline__ uint4 ld_stream16(const void *p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// ORDER 0: the warps of a block take consecutive row groups (k split outer);
// ORDER 1: the splits of one row group are consecutive warps (a row read by neighbouring warps at once).
template <int R, int U, int ORDER>
__global__ void __launch_bounds__(256) stream(const unsigned char *__restrict__ b, unsigned *__restrict__ sink) {
  constexpr int kSeg = 512 / R;                       // bytes of one row per instruction
  constexpr size_t kSplitBytes = kWarpBytes / R;      // bytes of each row this warp reads
  constexpr int kSplits = kRowBytes / kSplitBytes;
  constexpr int kGroups = kRows / R;
  const int warp = (int)(blockIdx.x * 8 + (threadIdx.x >> 5)), lane = threadIdx.x & 31;
  const int group = ORDER == 0 ? warp % kGroups : warp / kSplits;
  const int split = ORDER == 0 ? warp / kGroups : warp % kSplits;
  const int row = group * R + lane / (32 / R), pos = lane % (32 / R);
  const unsigned char *p = b + (size_t)row * kRowBytes + split * kSplitBytes + pos * 16;
  unsigned x = 0;
  for (size_t off = 0; off < kSplitBytes; off += (size_t)kSeg * U) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = ld_stream16(p + off + u * kSeg);
#pragma unroll
    for (int u = 0; u < U; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (x == 0x12345678u) sink[warp] = x;  // never true for random data; keeps the loads
}

struct Case {
  const char *name;
  void (*k)(const unsigned char *, unsigned *);
};
#define C(R, U, O) {"R=" #R " U=" #U " order=" #O, stream<R, U, O>}

int main() {
  unsigned char *b, *flush;
  unsigned *sink;
  const size_t bytes = kRows * kRowBytes, flush_bytes = 256u << 20;
  CK(cudaMalloc(&b, bytes));
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMalloc(&sink, 1 << 20));
  std::vector<unsigned> h(bytes / 4);
  unsigned s = 12345;
  for (auto &w : h) { s = s * 1664525u + 1013904223u; w = s | 0x01010101u; }
  CK(cudaMemcpy(b, h.data(), bytes, cudaMemcpyHostToDevice));
  const int blocks = (int)(bytes / kWarpBytes / 8);
  Case cases[] = {C(1, 2, 0),  C(1, 4, 0),  C(1, 8, 0),  C(2, 4, 0),  C(4, 4, 0),  C(4, 8, 0),
                  C(8, 4, 0),  C(8, 8, 0),  C(16, 4, 0), C(16, 8, 0), C(32, 4, 0), C(32, 8, 0),
                  C(1, 4, 1),  C(4, 8, 1),  C(16, 8, 1), C(32, 8, 1)};
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  printf("%-22s %10s %10s\n", "shape", "median us", "GB/s");
  for (auto &c : cases) {
    std::vector<float> t;
    for (int rep = 0; rep < 16; ++rep) {
      CK(cudaMemsetAsync(flush, rep, flush_bytes));
      CK(cudaEventRecord(e0));
      c.k<<<blocks, 256>>>(b, sink);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      CK(cudaGetLastError());
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (rep) t.push_back(ms * 1000.f);
    }
    std::sort(t.begin(), t.end());
    const float us = t[t.size() / 2];
    printf("%-22s %10.2f %10.0f\n", c.name, us, bytes / (us * 1e-6) / 1e9);
  }
  return 0;
}
