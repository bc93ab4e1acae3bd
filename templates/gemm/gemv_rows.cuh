// gemv_rows.cuh: a CUDA-core GEMV for decode shapes with b row-major (b[K][N], n contiguous), K split
// over the CTAs of a thread-block cluster and summed through distributed shared memory: one launch,
// no fp32 workspace, no second kernel (gemv.cuh's row-major path needs gemm.splitk's reduce kernel to
// spread a 1 x 8192 output over the GPU).
//
//   c[m][n] = bf16( sum_k a[m][k] * b[k][n] ),  m < M <= GEMV_M <= 8, fp32 accumulation.
//
// Block: GR_WARPS warps own a tile of kTileN = 16 * GR_VEC * GR_SEGS consecutive columns: per k row a
// lane loads GR_SEGS vectors of GR_VEC bytes, 32 * GR_VEC bytes apart, so each warp load is one row
// segment of 256 or 512 contiguous bytes (whole 128-byte lines: loads covering 8 or 16 rows per
// instruction stream at 2.1-2.9 TB/s on an H200 against ~3.6 for one or two rows, CUDA events,
// tools/check/stream_pattern.cu) and a warp reads GR_SEGS of them side by side. CTA `rank` of a cluster of CLUSTER
// takes k in [rank * K / CLUSTER, (rank + 1) * K / CLUSTER), split evenly over its warps in contiguous
// ranges; each warp keeps one or two steps of GR_UNROLL k rows of loads in flight.
// End: the warps' sums meet in shared memory (a fixed order), then, after a cluster barrier, CTA rank
// r adds the CLUSTER CTAs' sums of its 1 / CLUSTER of the columns (ranks 0..CLUSTER-1 in order: the
// result does not depend on timing) and stores them as bf16; a second barrier keeps every CTA's shared
// memory alive until it has been read.
//
// Defines: B_COL (must be 0), GEMV_M (1..8, >= M), GR_WARPS (4 | 8 | 16), GR_VEC (8 | 16), GR_SEGS
// (1 | 2 | 4), GR_UNROLL (4 | 8 | 16), CLUSTER (1 | 2 | 4 | 8). Launch: grid (ceil(N / kTileN) * CLUSTER), cluster (CLUSTER, 1, 1)
// (consecutive blocks: one tile's k ranges), block 32 * GR_WARPS, no dynamic shared memory.
// Needs N % 8 == 0 (a lane's vector of a segment is then all below N or all past it: past it, it
// reads column 0 and stores nothing; grid ceil(N / kTileN) * CLUSTER) and
// K % (CLUSTER * GR_WARPS * GR_UNROLL) == 0.
// Arguments as gemm.cuh's kernels with TMA_ARGS 2 (ws and the tensor maps are taken, not read), so
// that recipes/gemm.lua's reference and argument list serve this recipe too.
#include <cuda_bf16.h>
#include "common/cluster.cuh"
#include "common/ld_stream.cuh"
#include "common/tma.cuh"

#if !defined(B_COL) || !defined(GEMV_M) || !defined(GR_WARPS) || !defined(GR_VEC) || !defined(GR_UNROLL) || !defined(GR_SEGS) || !defined(CLUSTER)
#error "gemv_rows.cuh needs -D B_COL GEMV_M GR_WARPS GR_VEC GR_UNROLL GR_SEGS CLUSTER"
#endif

typedef __nv_bfloat16 bf16;

namespace gvr {

constexpr int kM = GEMV_M;
constexpr int kWarps = GR_WARPS;
constexpr int kThreads = 32 * kWarps;
constexpr int kVec = GR_VEC;
constexpr int kUnroll = GR_UNROLL;
constexpr int kCluster = CLUSTER;
constexpr int kSegs = GR_SEGS;
constexpr int kColsLane = kVec / 2 * kSegs;  // a lane's columns: kSegs vectors, 32 * kVec bytes apart
constexpr int kTileN = 32 * kColsLane;
constexpr int kWords = kVec / 4 * kSegs;

static_assert(B_COL == 0, "gemv_rows.cuh is the row-major b path (b[K][N])");
static_assert(kM >= 1 && kM <= 8, "GEMV_M must be 1..8");
static_assert(kWarps == 4 || kWarps == 8 || kWarps == 16, "GR_WARPS must be 4, 8 or 16");
static_assert(kVec == 8 || kVec == 16, "GR_VEC must be 8 or 16 bytes");
static_assert(kSegs == 1 || kSegs == 2 || kSegs == 4, "GR_SEGS must be 1, 2 or 4");
static_assert(kUnroll == 4 || kUnroll == 8 || kUnroll == 16, "GR_UNROLL must be 4, 8 or 16");
static_assert(kCluster == 1 || kCluster == 2 || kCluster == 4 || kCluster == 8, "CLUSTER must be 1, 2, 4 or 8");

__device__ __forceinline__ float lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }

// kSegs vectors of kVec bytes of one k row of b (32 * kVec bytes apart: each is one warp-wide
// segment of 32 * kVec contiguous bytes), read once: streamed past L1. col[g]: segment g's first
// column of this lane (0 past N).
__device__ __forceinline__ void ld_b(const bf16 *row, const int (&col)[kSegs], unsigned (&w)[kWords]) {
#pragma unroll
  for (int g = 0; g < kSegs; ++g) {
    const bf16 *q = row + col[g];
    unsigned *o = w + g * (kVec / 4);
    if constexpr (kVec == 16) {
      const uint4 v = tune::ld_stream16(q);
      o[0] = v.x, o[1] = v.y, o[2] = v.z, o[3] = v.w;
    } else {
      const uint2 v = tune::ld_stream8(q);
      o[0] = v.x, o[1] = v.y;
    }
  }
}

// kUnroll consecutive k of one a row (2 * kUnroll bytes, aligned: k is a multiple of kUnroll).
__device__ __forceinline__ void ld_a(const bf16 *p, float (&f)[kUnroll]) {
  const uint4 *q = reinterpret_cast<const uint4 *>(p);
  if constexpr (kUnroll == 4) {
    const uint2 v = __ldg(reinterpret_cast<const uint2 *>(p));
    f[0] = lo(v.x), f[1] = hi(v.x), f[2] = lo(v.y), f[3] = hi(v.y);
  } else {
#pragma unroll
    for (int i = 0; i < kUnroll / 8; ++i) {
      const uint4 v = __ldg(q + i);
      const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) f[8 * i + 2 * e] = lo(w[e]), f[8 * i + 2 * e + 1] = hi(w[e]);
    }
  }
}

}  // namespace gvr

extern "C" __global__ void __launch_bounds__(gvr::kThreads)
gemv_rows(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c, float *__restrict__ ws,
          int M, int N, int K, const __grid_constant__ tune::tensormap tmA,
          const __grid_constant__ tune::tensormap tmB, const __grid_constant__ tune::tensormap tmC) {
  using namespace gvr;
  (void)ws;
  __shared__ __align__(16) float red[kWarps][kTileN];  // one a row's per-warp sums
  __shared__ __align__(16) float part[kM][kTileN];     // this CTA's sums, read by the whole cluster
  // launched without clusters of CLUSTER CTAs the k ranges cannot be combined: store nothing (the
  // output stays poisoned and verification fails; uniform over the grid, so no barrier waits)
  if (kCluster > 1 && tune::cluster_size() != (unsigned)kCluster) return;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rank = kCluster > 1 ? (int)tune::cluster_rank() : 0;
  const int tile = (int)blockIdx.x / kCluster;
  const int k_len = K / kCluster / kWarps;
  const int k0 = rank * (K / kCluster) + warp * k_len;
  const int col = tile * kTileN + lane * (kVec / 2);  // + g * 16 * kVec for segment g
  int seg_col[kSegs];
#pragma unroll
  for (int g = 0; g < kSegs; ++g) seg_col[g] = col + g * 16 * kVec < N ? col + g * 16 * kVec : 0;

  float acc[kM][kColsLane];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int j = 0; j < kColsLane; ++j) acc[m][j] = 0.f;

  // Software-pipelined by hand: the loads of step i + 1 are issued before the FMAs of step i, so a
  // warp keeps GR_UNROLL (up to 2 GR_UNROLL) row loads in flight; written as one loop over a single
  // buffer, ptxas interleaved loads and FMAs so that only 2-3 loads were outstanding (SASS, 16:50).
  const bf16 *bp = b + (size_t)k0 * N;
  unsigned bw[kUnroll][kWords], bn[kUnroll][kWords] = {};  // bn, an: zero if there is one step only
  float af[kM][kUnroll], an[kM][kUnroll] = {};
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) ld_b(bp + (size_t)u * N, seg_col, bw[u]);
#pragma unroll
  for (int m = 0; m < kM; ++m) ld_a(a + (size_t)min(m, M - 1) * K + k0, af[m]);  // rows past M: never stored
  for (int k = 0; k < k_len; k += kUnroll) {
    if (k + kUnroll < k_len) {  // a branch, not a clamped address: ptxas then issues every load first
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) ld_b(bp + (size_t)(k + kUnroll + u) * N, seg_col, bn[u]);
#pragma unroll
      for (int m = 0; m < kM; ++m) ld_a(a + (size_t)min(m, M - 1) * K + k0 + k + kUnroll, an[m]);
    }
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int x = 0; x < kWords; ++x) {
          acc[m][2 * x] = fmaf(af[m][u], lo(bw[u][x]), acc[m][2 * x]);
          acc[m][2 * x + 1] = fmaf(af[m][u], hi(bw[u][x]), acc[m][2 * x + 1]);
        }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int x = 0; x < kWords; ++x) bw[u][x] = bn[u][x];
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) af[m][u] = an[m][u];
  }

  // the warps' sums, warp 0 first, into part[m]
#pragma unroll
  for (int m = 0; m < kM; ++m) {
#pragma unroll
    for (int j = 0; j < kColsLane; j += 4)  // acc column j: segment j / (kVec / 2), element j % (kVec / 2)
      *reinterpret_cast<float4 *>(&red[warp][(j / (kVec / 2)) * 16 * kVec + lane * (kVec / 2) + j % (kVec / 2)]) =
          make_float4(acc[m][j], acc[m][j + 1], acc[m][j + 2], acc[m][j + 3]);
    __syncthreads();
    for (int n = threadIdx.x; n < kTileN; n += kThreads) {
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) s += red[w][n];
      part[m][n] = s;
    }
    __syncthreads();
  }

  constexpr int kSlice = kTileN / kCluster;  // columns this CTA sums and stores
  if constexpr (kCluster > 1) tune::cluster_sync();
  for (int i = threadIdx.x; i < kM * kSlice; i += kThreads) {
    const int m = i / kSlice, n = rank * kSlice + i % kSlice;
    float s = part[m][n];
    if constexpr (kCluster > 1) {
      s = 0.f;
#pragma unroll
      for (int q = 0; q < kCluster; ++q) s += tune::ld_dsmem_f32(&part[m][n], (unsigned)q);
    }
    if (m < M && tile * kTileN + n < N) c[(size_t)m * N + tile * kTileN + n] = __float2bfloat16(s);
  }
  if constexpr (kCluster > 1) tune::cluster_sync();  // no CTA leaves while its part is still read
}
