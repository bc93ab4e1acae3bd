// burst_start_cost.cu: what a memory-bound kernel pays when it starts right after the burst
// protocol's L2 flush (docs/measurement.md), split into its causes. One streaming kernel reads a
// buffer of B bytes once (16-byte loads, as a decode GEMM's weights); it is timed by CUDA events
// around single launches, each after one of:
//   none       the same kernel just before (back to back, nothing between)
//   memset     a cuMemsetD8Async of twice the L2 (tune's burst flush: L2 left full of dirty lines)
//   readflush0 the streaming kernel over twice the L2 with no dynamic shared memory (L2 left full
//              of clean lines)
//   readflushS the same, asking for as much dynamic shared memory as the timed launch
// with the timed kernel asking for 0 or SMEM_KIB of dynamic shared memory (unused: only the SMs'
// shared-memory carveout differs; one block of 1024 threads per SM either way, so the occupancy is
// the same). Prints the median and minimum of REPS launches per case, microseconds.
//
// The read order (PATTERN, third argument... see main): 0 grid-stride (a warp's load is 512
// contiguous bytes, the GPU sweeps the buffer front to back); 1 rows of 8 KiB (a GEMV's columns of b
// [N][K] at K 4096): a warp reads one row front to back, 512 bytes a load, four in flight; 2 boxes
// (a TMA ring's 128-byte box rows): a block owns 4 rows per warp and reads them 128 bytes of each
// row at a time (a warp's load: 4 rows x 128 bytes), the next 128 bytes of the same rows a slice
// later; 3 rows as 1, by many short blocks (8 warps, one 8 KiB row each, a block per 64 KiB: the
// CUDA-core GEMV's grid at N 14336, K 4096) instead of one block of 32 warps per SM. 132 MiB makes
// whole rounds of rows (1) and of row groups (2) on 132 SMs.
//
// Build: nvcc -O3 -arch=sm_90a -o burst_start_cost tools/bench/burst_start_cost.cu -lcuda
// Run:   ./burst_start_cost [MiB=117] [reps=50] [smem_kib=200] [pattern=0]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                  \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      return 1;                                                                   \
    }                                                                             \
  } while (0)

// The xor of four 16-byte loads at p + j * stride (j < 4), all four in flight before any is used;
// through the non-coherent path without L1 allocation, as a decode GEMM reads its weights.
__device__ __forceinline__ unsigned xor4(const uint4 *p, size_t stride) {
  uint4 v[4];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w)
                 : "l"(p + j * stride));
  unsigned acc = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  return acc;
}

// Keeps the loads (and the dynamic shared memory) in the kernel: never true for the buffer's bytes.
__device__ __forceinline__ void keep(unsigned acc, unsigned *out) {
  extern __shared__ unsigned char smem[];
  if (acc == 0x12345678u) {
    smem[threadIdx.x] = 1;
    out[0] = acc + smem[0];
  }
}

// Pattern 0. n: 16-byte elements, a multiple of 4 * gridDim.x * blockDim.x.
__global__ void stream_read(const uint4 *__restrict__ p, size_t n, unsigned *out) {
  unsigned acc = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += 4 * stride) acc ^= xor4(p + i, stride);
  keep(acc, out);
}

constexpr size_t kRow = 8192 / 16;  // 16-byte elements per 8 KiB row

// Patterns 1 and 3: warp gw of the grid reads rows gw, gw + W, ... each front to back, 4 loads of
// 512 bytes in flight (pattern 3 launches one warp per row, in blocks of 8 warps).
__global__ void stream_rows(const uint4 *__restrict__ p, size_t n, unsigned *out) {
  const int lane = threadIdx.x & 31;
  const size_t warps = (size_t)gridDim.x * (blockDim.x >> 5);
  unsigned acc = 0;
  for (size_t row = blockIdx.x * (size_t)(blockDim.x >> 5) + (threadIdx.x >> 5); row < n / kRow; row += warps)
    for (size_t k = lane; k < kRow; k += 4 * 32) acc ^= xor4(p + row * kRow + k, 32);
  keep(acc, out);
}

// Pattern 2: block b reads a group of 4 rows per warp (groups b, b + grid, ...) slice by slice:
// slice s is bytes 128 s .. 128 s + 127 of each row; warp w loads rows 4 w .. 4 w + 3 of the group
// (8 lanes a row); 4 slices in flight per warp.
__global__ void stream_boxes(const uint4 *__restrict__ p, size_t n, unsigned *out) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned acc = 0;
  const size_t rows_per_group = 4 * (blockDim.x >> 5);
  for (size_t group = blockIdx.x; group < n / (rows_per_group * kRow); group += gridDim.x) {
    const size_t row = group * rows_per_group + 4 * warp + (lane >> 3);
    for (size_t s = 0; s < kRow / 8; s += 4) acc ^= xor4(p + row * kRow + s * 8 + (lane & 7), 8);
  }
  keep(acc, out);
}

typedef void (*stream_fn)(const uint4 *, size_t, unsigned *);

int main(int argc, char **argv) {
  const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 117;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  const int smem_kib = argc > 3 ? std::atoi(argv[3]) : 200;
  const int pattern = argc > 4 ? std::atoi(argv[4]) : 0;
  if (pattern < 0 || pattern > 3) {
    std::fprintf(stderr, "pattern must be 0 (grid-stride), 1 (rows), 2 (boxes) or 3 (rows, short blocks)\n");
    return 2;
  }
  const stream_fn timed = pattern == 0 ? stream_read : pattern == 2 ? stream_boxes : stream_rows;
  int dev = 0, l2 = 0, sms = 0;
  CHECK(cudaSetDevice(dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const size_t bytes = mib << 20, flush_bytes = 2 * (size_t)l2;
  void *buf = nullptr, *flush = nullptr;
  unsigned *out = nullptr;
  CHECK(cudaMalloc(&buf, bytes));
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMalloc(&out, 16));
  CHECK(cudaMemset(buf, 0x5a, bytes));
  for (stream_fn f : {stream_read, stream_rows, stream_boxes})
    CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_kib * 1024));
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  const int threads = 1024, blocks = sms;
  const size_t chunk = 4 * (size_t)threads * blocks;
  // a whole number of the grid-stride chunk (and for pattern 2 of its row groups, one a multiple of the other)
  const size_t group = 4 * (threads / 32) * kRow, unit = chunk > group ? chunk : group;
  const size_t n = bytes / 16 / unit * unit, nflush = flush_bytes / 16 / chunk * chunk;
  // the timed launch's grid: pattern 3 a block of 8 warps per 8 rows, the others one block per SM
  const int tthreads = pattern == 3 ? 256 : threads;
  const int tblocks = pattern == 3 ? (int)(n / kRow / 8) : blocks;
  std::printf("device L2 %d B, %d SMs; stream %zu MiB in pattern %d, %d blocks x %d threads, median of %d launches (us)\n",
              l2, sms, n * 16 >> 20, pattern, tblocks, tthreads, reps);
  const char *befores[] = {"none", "memset", "readflush0", "readflushS"};
  for (int shm : {0, smem_kib * 1024}) {
    for (int b = 0; b < 4; ++b) {
      std::vector<float> t;
      for (int r = 0; r < reps + 3; ++r) {
        if (b == 0) timed<<<tblocks, tthreads, shm>>>((const uint4 *)buf, n, out);
        if (b == 1 && cuMemsetD8Async((CUdeviceptr)flush, (unsigned char)r, flush_bytes, 0) != CUDA_SUCCESS) return 1;
        if (b >= 2) stream_read<<<blocks, threads, b == 3 ? shm : 0>>>((const uint4 *)flush, nflush, out);
        CHECK(cudaEventRecord(t0));
        timed<<<tblocks, tthreads, shm>>>((const uint4 *)buf, n, out);
        CHECK(cudaEventRecord(t1));
        CHECK(cudaEventSynchronize(t1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, t0, t1));
        if (r >= 3) t.push_back(ms * 1000.f);
      }
      CHECK(cudaGetLastError());
      std::sort(t.begin(), t.end());
      std::printf("dyn smem %3d KiB  before %-10s  median %8.2f  min %8.2f  GB/s %7.0f\n", shm / 1024, befores[b],
                  t[t.size() / 2], t[0], n * 16.0 / (t[t.size() / 2] * 1e3));
    }
  }
  return 0;
}
