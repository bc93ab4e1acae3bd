// decode_stream.cu: how fast the K/V bytes of a decode step can be read, without the attention math,
// by the ways a decode kernel can move them: the paged cache [pages][page_size][HKV][D] bf16 (vLLM's
// layout, what attention.decode reads; one (page, head) is page_size rows of D * 2 bytes, HKV * D * 2
// bytes apart) against the contiguous [B][HKV][L][D] cache an SDPA call reads. A block reads the rows
// of one (sequence, KV head, split) in tiles of BN rows of K and of V:
//   reg      16-byte loads per lane into registers, tile t + 1 issued before tile t is folded (the
//            register path of templates/attention/decode.cuh, STAGES 2);
//   bulk     one producer warp issues a 1-D cp.async.bulk per row (D * 2 bytes) into an S-deep ring of
//            shared-memory tiles completing on mbarriers; CW consumer warps fold each tile;
//   tma      the same ring filled by 3-D tensor copies, one box of page_size rows per page.
// Every sequence has the full length L (no tails), pages in a random permutation. L2 is flushed
// before every timed launch (argument: memset, the default, writes 256 MiB as tune's burst flush
// does; read reads them, leaving clean lines; none times launches back to back); CUDA events; median
// of 15. GB/s counts K + V once; "copy" is a 1 GiB device-to-device cudaMemcpy counted as read + write.
// Build: nvcc -arch=sm_90a -O3 -std=c++17 -I templates -I tools/check tools/check/decode_stream.cu -lcuda
// [-D ELEM_BYTES=1] (an e4m3 cache: rows of D bytes) [-D STREAM_B=1 -D STREAM_L=131072] (the step's shape)
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "common/ld_stream.cuh"
#include "common/mbarrier.cuh"
#include "common/tma.cuh"
#include "cuda_check.h"

// The step's shape: -D ELEM_BYTES (2 bf16, 1 e4m3: a row of D bytes), STREAM_B sequences of STREAM_L keys.
#ifndef ELEM_BYTES
#define ELEM_BYTES 2
#endif
#ifndef STREAM_B
#define STREAM_B 32
#endif
#ifndef STREAM_L
#define STREAM_L 4096
#endif
constexpr int kB = STREAM_B, kHKV = 8, kD = 128, kL = STREAM_L, kRowBytes = kD * ELEM_BYTES;

struct geo {
  const unsigned char *k, *v;
  const int *table;  // [B][max_pages], paged layout only
  int page_size, max_pages, splits;
  bool contiguous;
};

__device__ __forceinline__ const unsigned char *row_ptr(const geo &g, const unsigned char *base, int b, int h, int r) {
  if (g.contiguous) return base + (((size_t)b * kHKV + h) * kL + r) * kRowBytes;
  const int page = g.table[b * g.max_pages + r / g.page_size];
  return base + (((size_t)page * g.page_size + r % g.page_size) * kHKV + h) * kRowBytes;
}

__device__ __forceinline__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

template <int BN, int WARPS> struct reg_tile {
  static constexpr int kPer = BN * (kRowBytes / 16) / (WARPS * 32);  // chunks of K (and of V) per thread
  uint4 k[kPer], v[kPer];
};

template <int BN, int WARPS>
__device__ __forceinline__ void reg_load(reg_tile<BN, WARPS> &t, const geo &g, int b, int h, int r0) {
#pragma unroll
  for (int i = 0; i < reg_tile<BN, WARPS>::kPer; ++i) {
    const int c = i * WARPS * 32 + threadIdx.x, r = r0 + c / (kRowBytes / 16), off = (c % (kRowBytes / 16)) * 16;
    t.k[i] = tune::ld_stream16(row_ptr(g, g.k, b, h, r) + off);
    t.v[i] = tune::ld_stream16(row_ptr(g, g.v, b, h, r) + off);
  }
}

template <int BN, int WARPS> __global__ void __launch_bounds__(WARPS * 32) reg_kernel(geo g, unsigned *sink) {
  const int h = blockIdx.x % kHKV, s = blockIdx.x / kHKV, b = blockIdx.y;
  const int rows = kL / g.splits, r0 = s * rows, tiles = rows / BN;
  unsigned x = 0;
  reg_tile<BN, WARPS> cur, nxt;
  reg_load(cur, g, b, h, r0);
  for (int t = 0; t < tiles; ++t) {
    if (t + 1 < tiles) reg_load(nxt, g, b, h, r0 + (t + 1) * BN);
#pragma unroll
    for (int i = 0; i < reg_tile<BN, WARPS>::kPer; ++i) x ^= fold(cur.k[i]) ^ fold(cur.v[i]);
    cur = nxt;
  }
  if (x == 0x12345678u) sink[blockIdx.y * gridDim.x + blockIdx.x] = x;
}

// All kHKV heads of a sequence's rows in one block, warp w reading head w (a block reads whole
// pages: page_size * kHKV * D * 2 contiguous bytes per page, at about the same time).
template <int BN> __global__ void __launch_bounds__(kHKV * 32) heads_kernel(geo g, unsigned *sink) {
  const int h = threadIdx.x / 32, lane = threadIdx.x % 32, s = blockIdx.x, b = blockIdx.y;
  const int rows = kL / g.splits, r0 = s * rows, tiles = rows / BN;
  constexpr int kPer = BN * (kRowBytes / 16) / 32;
  unsigned x = 0;
  uint4 cur[2 * kPer], nxt[2 * kPer];
  auto load = [&](uint4 (&t)[2 * kPer], int rt) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int r = rt + i * 32 / (kRowBytes / 16) + lane / (kRowBytes / 16), off = (lane % (kRowBytes / 16)) * 16;
      t[i] = tune::ld_stream16(row_ptr(g, g.k, b, h, r) + off);
      t[kPer + i] = tune::ld_stream16(row_ptr(g, g.v, b, h, r) + off);
    }
  };
  load(cur, r0);
  for (int t = 0; t < tiles; ++t) {
    if (t + 1 < tiles) load(nxt, r0 + (t + 1) * BN);
#pragma unroll
    for (int i = 0; i < 2 * kPer; ++i) x ^= fold(cur[i]);
#pragma unroll
    for (int i = 0; i < 2 * kPer; ++i) cur[i] = nxt[i];
  }
  if (x == 0x12345678u) sink[blockIdx.y * gridDim.x + blockIdx.x] = x;
}

__device__ __forceinline__ void bulk_load(unsigned dst, const void *src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

struct tma_maps {
  tune::tensormap k, v;
};

// MODE 0: bulk per row; MODE 1: tensor copy per page.
template <int MODE, int BN, int CW, int S>
__global__ void __launch_bounds__((CW + 1) * 32) ring_kernel(geo g, const __grid_constant__ tma_maps maps, unsigned *sink) {
  extern __shared__ __align__(1024) unsigned char ring[];
  __shared__ __align__(8) unsigned long long full[S], empty[S];
  constexpr unsigned kTileBytes = BN * kRowBytes;  // of K; V follows
  const int h = blockIdx.x % kHKV, s = blockIdx.x / kHKV, b = blockIdx.y;
  const int rows = kL / g.splits, r0 = s * rows, tiles = rows / BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned ring0 = (unsigned)__cvta_generic_to_shared(ring);
  const unsigned full0 = (unsigned)__cvta_generic_to_shared(full), empty0 = (unsigned)__cvta_generic_to_shared(empty);
  if (threadIdx.x == 0) {
    for (int i = 0; i < S; ++i) {
      tune::mbar_init(full0 + 8 * i, 1);
      tune::mbar_init(empty0 + 8 * i, CW);
    }
    tune::fence_mbar_init();
  }
  __syncthreads();
  if (warp == CW) {  // producer
    for (int t = 0; t < tiles; ++t) {
      const int st = t % S;
      tune::mbar_wait(empty0 + 8 * st, ((t / S) & 1) ^ 1);
      const unsigned kdst = ring0 + st * 2 * kTileBytes, vdst = kdst + kTileBytes, bar = full0 + 8 * st;
      if (lane == 0) tune::mbar_arrive_expect_tx(bar, 2 * kTileBytes);
      __syncwarp();
      if constexpr (MODE == 0) {
        for (int r = lane; r < BN; r += 32) {
          const int row = r0 + t * BN + r;
          bulk_load(kdst + r * kRowBytes, row_ptr(g, g.k, b, h, row), kRowBytes, bar);
          bulk_load(vdst + r * kRowBytes, row_ptr(g, g.v, b, h, row), kRowBytes, bar);
        }
      } else {
        for (int p = lane; p < BN / g.page_size; p += 32) {
          const int row = r0 + t * BN + p * g.page_size;
          const int page = g.table[b * g.max_pages + row / g.page_size];
          asm volatile(
              "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
                  kdst + p * g.page_size * kRowBytes),
              "l"(tune::tensormap_addr(maps.k)), "r"(0), "r"(h), "r"(page * g.page_size), "r"(bar)
              : "memory");
          asm volatile(
              "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
                  vdst + p * g.page_size * kRowBytes),
              "l"(tune::tensormap_addr(maps.v)), "r"(0), "r"(h), "r"(page * g.page_size), "r"(bar)
              : "memory");
        }
      }
    }
    return;
  }
  unsigned x = 0;
  for (int t = 0; t < tiles; ++t) {
    const int st = t % S;
    tune::mbar_wait(full0 + 8 * st, (t / S) & 1);
    const uint4 *tile = reinterpret_cast<const uint4 *>(ring + st * 2 * kTileBytes);
#pragma unroll 4
    for (int c = threadIdx.x; c < 2 * (int)kTileBytes / 16; c += CW * 32) x ^= fold(tile[c]);
    __syncwarp();
    if (lane == 0) tune::mbar_arrive(empty0 + 8 * st);
  }
  if (x == 0x12345678u) sink[blockIdx.y * gridDim.x + blockIdx.x] = x;
}

// Reads the flush buffer (clean lines in L2 afterwards, nothing to write back).
__global__ void read_flush_kernel(const uint4 *p, size_t n, unsigned *sink) {
  unsigned x = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) x ^= fold(p[i]);
  if (x == 0x12345678u) *sink = x;
}
// Before each timed launch: kMemset writes 256 MiB (L2 left full of dirty lines, as tune's burst
// samples), kRead reads them (clean lines), kNone nothing (back to back, the previous launch's lines).
enum flush_mode { kMemset, kRead, kNone };
struct bench {
  unsigned char *flush;
  unsigned *sink;
  flush_mode mode;
  cudaEvent_t e0, e1;
  template <class F> float median_us(F launch) {
    std::vector<float> t;
    for (int i = 0; i < 17; ++i) {
      if (mode == kMemset) CK(cudaMemset(flush, i, 256u << 20));
      if (mode == kRead)
        read_flush_kernel<<<1024, 256>>>(reinterpret_cast<const uint4 *>(flush), (256u << 20) / 16, sink);
      CK(cudaEventRecord(e0));
      launch();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      CK(cudaGetLastError());
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (i >= 2) t.push_back(ms * 1000.f);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

static double g_copy_gbs;
static const double kBytes = 2.0 * kB * kHKV * (double)kL * kRowBytes;

static void report(const char *layout, const char *name, int splits, float us) {
  const double gbs = kBytes / us / 1e3;
  printf("%-10s %-28s splits %2d  %8.2f us  %7.1f GB/s  %5.1f %% of copy\n", layout, name, splits, us, gbs,
         100.0 * gbs / g_copy_gbs);
}

static CUtensorMap make_map(const void *base, int rows) {
  CUtensorMap m;
  const cuuint64_t dims[3] = {kD, kHKV, (cuuint64_t)rows};
  const cuuint64_t strides[2] = {kRowBytes, (cuuint64_t)kHKV * kRowBytes};
  const cuuint32_t box[3] = {kD, 1, 16}, elem[3] = {1, 1, 1};
  const CUtensorMapDataType type = ELEM_BYTES == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  CUresult r = cuTensorMapEncodeTiled(&m, type, 3, const_cast<void *>(base), dims, strides,
                                      box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "cuTensorMapEncodeTiled: %d\n", (int)r);
    exit(1);
  }
  return m;
}

template <int BN, int WARPS> static void run_reg(bench &bh, geo g, unsigned *sink, const char *layout) {
  const dim3 grid(kHKV * g.splits, kB);
  const float us = bh.median_us([&] { reg_kernel<BN, WARPS><<<grid, WARPS * 32>>>(g, sink); });
  char name[64];
  snprintf(name, sizeof name, "reg BN%d W%d", BN, WARPS);
  report(layout, name, g.splits, us);
}

template <int BN> static void run_heads(bench &bh, geo g, unsigned *sink, const char *layout) {
  const dim3 grid(g.splits, kB);
  const float us = bh.median_us([&] { heads_kernel<BN><<<grid, kHKV * 32>>>(g, sink); });
  char name[64];
  snprintf(name, sizeof name, "heads BN%d W8", BN);
  report(layout, name, g.splits, us);
}

template <int MODE, int BN, int CW, int S>
static void run_ring(bench &bh, geo g, const tma_maps &maps, unsigned *sink, const char *layout) {
  const int smem = S * 2 * BN * kRowBytes;
  auto kern = ring_kernel<MODE, BN, CW, S>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(kHKV * g.splits, kB);
  const float us = bh.median_us([&] { kern<<<grid, (CW + 1) * 32, smem>>>(g, maps, sink); });
  char name[64];
  snprintf(name, sizeof name, "%s BN%d CW%d S%d (%dK)", MODE ? "tma" : "bulk", BN, CW, S, smem / 1024);
  report(layout, name, g.splits, us);
}

int main(int argc, char **argv) {
  const char *flush_name = argc > 1 ? argv[1] : "memset";
  const flush_mode mode = !strcmp(flush_name, "read") ? kRead : !strcmp(flush_name, "none") ? kNone : kMemset;
  if (argc > 2 || (mode == kMemset && strcmp(flush_name, "memset"))) {
    fprintf(stderr, "usage: decode_stream [memset|read|none]   (the L2 flush before each timed launch)\n");
    return 2;
  }
  const int page_size = 16, max_pages = kL / page_size, pages = kB * max_pages;
  const size_t cache_bytes = (size_t)pages * page_size * kHKV * kRowBytes;
  unsigned char *k, *v, *copy_src;
  int *table;
  unsigned *sink;
  bench bh;
  CK(cudaMalloc(&k, cache_bytes));
  CK(cudaMalloc(&v, cache_bytes));
  CK(cudaMalloc(&bh.flush, 256u << 20));
  bh.mode = mode;
  CK(cudaMalloc(&copy_src, 2u << 30));
  CK(cudaMalloc(&table, pages * sizeof(int)));
  CK(cudaMalloc(&sink, 1 << 20));
  bh.sink = sink;
  CK(cudaMemset(k, 0x3c, cache_bytes));
  CK(cudaMemset(v, 0x3d, cache_bytes));
  CK(cudaMemset(copy_src, 1, 2u << 30));
  std::vector<int> perm(pages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(1));
  CK(cudaMemcpy(table, perm.data(), pages * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaEventCreate(&bh.e0));
  CK(cudaEventCreate(&bh.e1));

  const float copy_us = bh.median_us([&] { CK(cudaMemcpyAsync(copy_src + (1u << 30), copy_src, 1u << 30, cudaMemcpyDeviceToDevice)); });
  g_copy_gbs = 2.0 * (1u << 30) / copy_us / 1e3;
  printf("copy 1 GiB: %.1f us, %.1f GB/s (read + write); K+V bytes %.1f MB; flush %s\n", copy_us, g_copy_gbs,
         kBytes / 1e6, flush_name);

  tma_maps maps;
  {
    CUtensorMap mk = make_map(k, pages * page_size), mv = make_map(v, pages * page_size);
    static_assert(sizeof(CUtensorMap) == sizeof(tune::tensormap), "tensor map size");
    memcpy(&maps.k, &mk, sizeof mk);
    memcpy(&maps.v, &mv, sizeof mv);
  }
  // a single sequence needs splits to fill the SMs (heads: one block per split, reg and ring: kHKV)
  for (int splits : kB == 1 ? std::vector<int>{16, 32, 128} : std::vector<int>{1, 4, 16}) {
    geo paged{k, v, table, page_size, max_pages, splits, false};
    geo contig{k, v, table, page_size, max_pages, splits, true};
    run_reg<64, 4>(bh, contig, sink, "contig");
    run_reg<64, 4>(bh, paged, sink, "paged");
    run_reg<32, 4>(bh, paged, sink, "paged");
    run_reg<128, 8>(bh, paged, sink, "paged");
    run_reg<64, 8>(bh, paged, sink, "paged");
    run_heads<16>(bh, paged, sink, "paged");
    run_heads<32>(bh, paged, sink, "paged");
    run_heads<16>(bh, contig, sink, "contig");
    run_ring<0, 64, 4, 3>(bh, contig, maps, sink, "contig");
    run_ring<0, 64, 4, 3>(bh, paged, maps, sink, "paged");
    run_ring<0, 64, 2, 3>(bh, paged, maps, sink, "paged");
    run_ring<0, 32, 2, 6>(bh, paged, maps, sink, "paged");
    run_ring<0, 32, 4, 4>(bh, paged, maps, sink, "paged");
    run_ring<0, 64, 4, 6>(bh, paged, maps, sink, "paged");
    run_ring<0, 128, 4, 3>(bh, paged, maps, sink, "paged");
    run_ring<1, 64, 4, 3>(bh, paged, maps, sink, "paged");
    run_ring<1, 32, 2, 6>(bh, paged, maps, sink, "paged");
    run_ring<1, 64, 4, 6>(bh, paged, maps, sink, "paged");
  }
  return 0;
}
