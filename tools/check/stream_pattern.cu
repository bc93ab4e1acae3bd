// stream_pattern.cu: how fast a 8192 x 8192 bf16 matrix (128 MiB, the decode GEMMs' b) can be read
// with different warp access shapes: a warp instruction (32 lanes x 16 bytes = 512 B) covers R rows x
// 512/R contiguous bytes, and a warp walks its R rows along k with U such instructions in flight.
// R = 1 is the GEMV path's shape (one row, 512 B), R = 16 the mma.sync register path's (16 rows x 32 B
// per instruction). Each warp reads 16 KiB in all (R rows x 16/R KiB), so every shape launches the same
// number of warps. L2 is flushed (memset of 256 MiB) before every timed launch; CUDA events; median of 15.
// Also tile pipelines (below): the same bytes read by 128-thread CTAs in 128-row tiles through a
// cp.async ring or a register ring, as the mma decode kernels do, without their math.
// Build: nvcc -arch=sm_90a -O3 -std=c++17 -I templates tools/check/stream_pattern.cu -o stream_pattern
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/ld_stream.cuh"
using tune::ld_stream16;

#include "cuda_check.h"

constexpr size_t kRowBytes = 8192 * 2, kRows = 8192, kWarpBytes = 16384;

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


// Tile pipelines as the decode GEMM kernels run them (without the math): a CTA of 128 threads owns
// TR rows and a 1/SPLIT share of their k; per step it reads a TR rows x RB bytes tile.
//   tile_cp<S>:  cp.async ring of S tiles in shared memory (wait S-2, barrier, read, refill), as
//                templates/gemm/gemm_sm80.cuh does;
//   tile_ldg<D>: a ring of D tiles in registers (16-byte loads), each stored to one of two
//                shared-memory buffers before the barrier and read after it.
// The "read" is one 16-byte ld.shared per chunk (as ldmatrix reads each byte once), folded into x.
__device__ __forceinline__ void cp16(unsigned s, const void *g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(g) : "memory");
}
template <int TR, int RB> struct TileGeo {
  static constexpr int kBytes = TR * RB, kChunksRow = RB / 16, kPer = TR * RB / 16 / 128;
  __device__ static int row(int c) { return c / kChunksRow; }
  __device__ static int ch(int c) { return c % kChunksRow; }
  __device__ static int soff(int c) { return row(c) * RB + ((ch(c) ^ (row(c) & 7)) << 4); }
};
template <int S, int SPLIT, int TR, int RB>
__global__ void __launch_bounds__(128) tile_cp(const unsigned char *__restrict__ b, unsigned *__restrict__ sink) {
  using G = TileGeo<TR, RB>;
  extern __shared__ __align__(128) unsigned char sm[];
  const int tile = blockIdx.x / SPLIT, split = blockIdx.x % SPLIT, t = threadIdx.x;
  constexpr int kSteps = kRowBytes / SPLIT / RB;
  const unsigned char *g = b + (size_t)tile * TR * kRowBytes + split * (kRowBytes / SPLIT);
  const unsigned s0 = (unsigned)__cvta_generic_to_shared(sm);
  auto issue = [&](int step) {
    if (step < kSteps)
#pragma unroll
      for (int i = 0; i < G::kPer; ++i) {
        const int c = t + 128 * i;
        cp16(s0 + (step % S) * G::kBytes + G::soff(c), g + (size_t)G::row(c) * kRowBytes + step * RB + G::ch(c) * 16);
      }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };
  for (int i = 0; i < S - 1; ++i) issue(i);
  unsigned x = 0;
  for (int step = 0; step < kSteps; ++step) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(S - 2) : "memory");
    __syncthreads();
#pragma unroll
    for (int i = 0; i < G::kPer; ++i) {
      const uint4 v = *reinterpret_cast<const uint4 *>(sm + (step % S) * G::kBytes + (t + 128 * i) * 16);
      x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    issue(step + S - 1);
  }
  if (x == 0x12345678u) sink[blockIdx.x] = x;
}
template <int D, int SPLIT, int TR, int RB>
__global__ void __launch_bounds__(128) tile_ldg(const unsigned char *__restrict__ b, unsigned *__restrict__ sink) {
  using G = TileGeo<TR, RB>;
  extern __shared__ __align__(128) unsigned char sm[];  // two tiles
  const int tile = blockIdx.x / SPLIT, split = blockIdx.x % SPLIT, t = threadIdx.x;
  constexpr int kSteps = kRowBytes / SPLIT / RB;
  static_assert(kSteps % D == 0, "steps a multiple of the ring depth");
  const unsigned char *g = b + (size_t)tile * TR * kRowBytes + split * (kRowBytes / SPLIT);
  uint4 r[D][G::kPer];
  auto load = [&](uint4 (&v)[G::kPer], int step) {
#pragma unroll
    for (int i = 0; i < G::kPer; ++i) {
      const int c = t + 128 * i;
      v[i] = ld_stream16(g + (size_t)G::row(c) * kRowBytes + step * RB + G::ch(c) * 16);
    }
  };
#pragma unroll
  for (int d = 0; d < D; ++d) load(r[d], d);
  unsigned x = 0;
  for (int step0 = 0; step0 < kSteps; step0 += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const int step = step0 + d;
      unsigned char *buf = sm + (step & 1) * G::kBytes;
#pragma unroll
      for (int i = 0; i < G::kPer; ++i) *reinterpret_cast<uint4 *>(buf + G::soff(t + 128 * i)) = r[d][i];
      if (step + D < kSteps) load(r[d], step + D);
      __syncthreads();
#pragma unroll
      for (int i = 0; i < G::kPer; ++i) {
        const uint4 v = *reinterpret_cast<const uint4 *>(buf + (t + 128 * i) * 16);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
      }
    }
  }
  if (x == 0x12345678u) sink[blockIdx.x] = x;
}

struct Case {
  const char *name;
  void (*k)(const unsigned char *, unsigned *);
  int blocks = 0, threads = 256, smem = 0;  // blocks 0: the stream kernels' grid
};
#define C(R, U, O) {"R=" #R " U=" #U " order=" #O, stream<R, U, O>}
#define TC(S, SP, TR, RB) {"cp.async S=" #S " sp=" #SP " " #TR "x" #RB "B", tile_cp<S, SP, TR, RB>, (int)(kRows / TR * SP), 128, S * TR * RB}
#define TL(D, SP, TR, RB) {"ldg D=" #D " sp=" #SP " " #TR "x" #RB "B", tile_ldg<D, SP, TR, RB>, (int)(kRows / TR * SP), 128, 2 * TR * RB}

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
                  C(1, 4, 1),  C(4, 8, 1),  C(16, 8, 1), C(32, 8, 1),
                  TC(5, 2, 128, 128), TC(5, 4, 128, 128), TC(4, 2, 64, 256), TC(4, 4, 64, 256),
                  TC(4, 4, 128, 256), TC(3, 4, 32, 512), TC(5, 4, 32, 512), TC(5, 8, 32, 512),
                  TC(4, 8, 64, 256), TC(8, 4, 64, 256),
                  TL(2, 4, 128, 128), TL(2, 4, 64, 256), TL(2, 8, 64, 256), TL(4, 8, 64, 256),
                  TL(2, 4, 32, 512), TL(2, 8, 32, 512), TL(4, 8, 32, 512)};
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  printf("%-22s %10s %10s\n", "shape", "median us", "GB/s");
  for (auto &c : cases) {
    std::vector<float> t;
    for (int rep = 0; rep < 16; ++rep) {
      CK(cudaMemsetAsync(flush, rep, flush_bytes));
      CK(cudaEventRecord(e0));
      if (rep == 0)
        CK(cudaFuncSetAttribute(c.k, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem));
      c.k<<<c.blocks ? c.blocks : blocks, c.threads, c.smem>>>(b, sink);
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
