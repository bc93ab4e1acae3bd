// gemm.cuh: bf16 GEMM with fp32 accumulation and bf16 output, three paths selected by PATH.
//
//   c[M][N] = a[M][K] @ B,  B(k, n) = b[k * N + n] (B_COL = 0, b row-major [K][N])
//                                  or b[n * K + k] (B_COL = 1, b column-major, stored [N][K]).
//
// Kernels (extern "C"; both take the same arguments, recipes/gemm.lua packs them in this order):
//   gemm_bf16(a, b, c, ws, M, N, K)           the GEMM; with SPLIT_K > 1 it writes fp32 partial sums
//                                             ws[split][M][N] instead of c
//   gemm_splitk_reduce(a, b, c, ws, M, N, K)  c = bf16(sum over splits of ws); launched after gemm_bf16
//                                             when SPLIT_K > 1 (grid: ceil(M * N / 8 / 256), block 256)
//
// Paths and their tunables (defaults in brackets; ranges are static_asserted in each path's file):
//   PATH 0  templates/gemm/gemm_sm80.cuh: mma.sync m16n8k16 + ldmatrix + cp.async STAGES-deep ring
//           (sm_80+). BLOCK_M, BLOCK_N, BLOCK_K (32 | 64), WARPS_M x WARPS_N warp grid, STAGES 2..5,
//           SWIZZLE (0: rows padded by 16 bytes, 1: XOR-swizzled 16-byte chunks), RASTER.
//   PATH 1  templates/gemm/gemm_sm90.cuh: wgmma (sm_90a) from 128-byte-swizzled shared memory filled
//           by cp.async. BLOCK_M, BLOCK_N (64 | 128 | 256), BLOCK_K = 64, CONSUMERS (consumer
//           warpgroups), STAGES 3..5, WS (0: every warpgroup loads and computes; 1: one producer
//           warpgroup (PRODUCER_WARPS [1] of its warps copy) feeds the consumers through mbarriers;
//           2: the same, with the two consumer warpgroups on alternate tiles (ping-pong)),
//           SETMAXNREG (WS >= 1 only: producer 40 or 56 registers, consumers 232 or 240), PERSISTENT (grid of
//           at most one wave; each block walks tiles blockIdx.x, + gridDim.x, ...), RASTER.
//   PATH 2  templates/gemm/gemv.cuh: CUDA-core GEMV for decode shapes (M = GEMV_M <= 8, compile-time).
//           GEMV_WARPS, GEMV_COLS, GEMV_UNROLL.
// Common:   B_COL (problem layout), SPLIT_K [1] (K split over grid.y, needs the reduce kernel, except
//           PATH 1 with SPLIT_CLUSTER 1: the splits form a cluster and add their tiles, see gemm_sm90.cuh),
//           RASTER [1] (tile order: 1 = row-major, G = groups of G tile rows, common/tile_order.cuh).
//           USE_TMA [0] (PATH 1 with WS >= 1: bulk tensor copies instead of cp.async, and with
//           SPLIT_K 1 an epilogue of TMA stores from shared memory) and TMA_ARGS [USE_TMA ? 2 : 0]
//           (1: both kernels take `const __grid_constant__ tune::tensormap tmA, tmB` after K; 2: tmA,
//           tmB, tmC, the map of c that USE_TMA needs); recipes/gemm.lua passes three (the worker
//           builds them: docs/tensormap-args.md), recipes/gemm/skinny.lua two.
//
// Shapes: any M >= 1, N % 8 == 0 and K % 8 == 0 (rows of whole 16-byte chunks), on every path:
// tiles that hang over M, N or K are zero-filled on load (cp.async with a zero source size, or TMA's
// out-of-bounds fill) and clipped on store; split s of SPLIT_K takes a k range of ceil(K / SPLIT_K)
// rounded up to the path's slice (a split past K adds zeros). Grids are ceil-divided. Launch
// geometry is in recipes/gemm.lua.
#include <cuda_bf16.h>

#if !defined(PATH) || !defined(B_COL)
#error "gemm.cuh needs -D PATH=0|1|2 and B_COL=0|1"
#endif
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef RASTER
#define RASTER 1
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif
#ifndef USE_TMA
#define USE_TMA 0
#endif
#ifndef TMA_ARGS
#define TMA_ARGS (USE_TMA ? 2 : 0)
#endif

typedef __nv_bfloat16 bf16;

static_assert(SPLIT_K >= 1 && SPLIT_K <= 32, "SPLIT_K must be 1..32");
static_assert(RASTER >= 1, "RASTER is a group size >= 1");

#if USE_TMA && PATH != 1
#error "USE_TMA is a PATH 1 option"
#endif
#if USE_TMA && TMA_ARGS < 2
#error "USE_TMA needs TMA_ARGS 2 (the tensor maps of a, b and c)"
#endif
#if TMA_ARGS
#include "common/tma.cuh"
#endif

#if PATH == 0
#include "gemm/gemm_sm80.cuh"
namespace gemm_path = gemm80;
#elif PATH == 1
#include "gemm/gemm_sm90.cuh"
namespace gemm_path = gemm90;
#elif PATH == 2
#include "gemm/gemv.cuh"
namespace gemm_path = gemv;
#else
#error "PATH must be 0 (mma.sync), 1 (wgmma) or 2 (gemv)"
#endif

// gemm_path::kSmemBytes and gemm_path::kThreads are the dynamic shared memory and block size of
// gemm_bf16; recipes/gemm.lua computes the same numbers.
#if TMA_ARGS
// Tensor-map argument list (docs/tensormap-args.md): every kernel takes the two maps after K, so that
// a recipe that passes them has one argument list for all its variants and the reference; only
// USE_TMA builds read them.
#if TMA_ARGS >= 2
#define GEMM_TMA_PARAMS                                                                                        \
  , const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmB,                  \
      const __grid_constant__ tune::tensormap tmC
#else
#define GEMM_TMA_PARAMS , const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmB
#endif
#else
#define GEMM_TMA_PARAMS
#endif

extern "C" __global__ void __launch_bounds__(gemm_path::kThreads, 1)
gemm_bf16(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c, float *__restrict__ ws,
          int M, int N, int K GEMM_TMA_PARAMS) {
#if USE_TMA
  gemm_path::run(a, b, c, ws, M, N, K, &tmA, &tmB, &tmC);
#elif TMA_ARGS
  (void)tmA;
  (void)tmB;
  (void)tmC;
  gemm_path::run(a, b, c, ws, M, N, K);
#else
  gemm_path::run(a, b, c, ws, M, N, K);
#endif
}

// Split-K combine: thread i sums the SPLIT_K partials of elements 8i .. 8i+7 (N % 8 == 0) and
// stores them as one 16-byte bf16 vector. Grid-stride, so any grid works.
extern "C" __global__ void __launch_bounds__(256)
gemm_splitk_reduce(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c,
                   float *__restrict__ ws, int M, int N, int K GEMM_TMA_PARAMS) {
  (void)a;
  (void)b;
  (void)K;
  const size_t mn = (size_t)M * N;
  const size_t n8 = mn / 8;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += (size_t)gridDim.x * blockDim.x) {
    float s[8];
    const float4 *p = reinterpret_cast<const float4 *>(ws + i * 8);
    float4 lo = p[0], hi = p[1];
    s[0] = lo.x; s[1] = lo.y; s[2] = lo.z; s[3] = lo.w;
    s[4] = hi.x; s[5] = hi.y; s[6] = hi.z; s[7] = hi.w;
#pragma unroll
    for (int sp = 1; sp < SPLIT_K; ++sp) {
      const float4 *q = reinterpret_cast<const float4 *>(ws + sp * mn + i * 8);
      lo = q[0];
      hi = q[1];
      s[0] += lo.x; s[1] += lo.y; s[2] += lo.z; s[3] += lo.w;
      s[4] += hi.x; s[5] += hi.y; s[6] += hi.z; s[7] += hi.w;
    }
    uint4 o;
    o.x = tune::pack_bf16x2(s[0], s[1]);
    o.y = tune::pack_bf16x2(s[2], s[3]);
    o.z = tune::pack_bf16x2(s[4], s[5]);
    o.w = tune::pack_bf16x2(s[6], s[7]);
    *reinterpret_cast<uint4 *>(c + i * 8) = o;
  }
}
