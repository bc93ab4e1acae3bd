// tcgemv.cuh: a tensor-core GEMV for decode shapes, M <= 16 rows of a against a column-major b
// (stored b[N][K], the layout of nn.Linear weights), streamed like the CUDA-core GEMV streams it.
//
//   c[m][n] = bf16( sum_k a[m][k] * b[n][k] ),  M <= 16, fp32 accumulation (mma.sync m16n8k16).
//
// Why: at decode shapes the kernel is the b stream. On an H200 a warp load that covers one or two
// rows (256-512 contiguous bytes) streams 128 MiB at 3.5-3.6 TB/s, loads that cover 8 or 16 rows per
// instruction (what mma fragments loaded straight from global memory need) at 2.1-2.9, and
// cp.async rings of 128-row tiles at 3.1-3.3 (CUDA events, no math, tools/check/stream_pattern.cu).
// So each warp here owns 16 rows of b (16 outputs n) and reads them as the GEMV does, one or two rows
// per load instruction, into registers, TC_AHEAD chunks of TC_CHUNK k ahead of the one it multiplies; it
// stores the chunk to its own shared-memory buffer (no block barrier) and multiplies it with
// ldmatrix + mma.sync, b as the A operand (16 n x 16 k) and a as the B operand (16 k x 8 m, twice).
// a is small: each CTA copies its k range of all 16 rows (rows past M as zeros) to shared memory
// once, up front.
//
// K is split over the CLUSTER CTAs of a thread-block cluster (rank r takes k in [r K / CLUSTER,
// (r + 1) K / CLUSTER)); their sums meet through distributed shared memory in a fixed order (the
// result does not depend on timing), one launch, no workspace.
//
// Defines: B_COL (must be 1), TC_WARPS (4 | 8; a CTA owns 16 * TC_WARPS outputs n), TC_CHUNK (128 |
// 256 k per chunk: a load covers two rows x 256 bytes or one row x 512 bytes), CLUSTER (1 | 2 | 4 |
// 8), TC_AHEAD (1 | 2). Launch: grid (N / (16 TC_WARPS) * CLUSTER), cluster (CLUSTER, 1, 1), block 32 * TC_WARPS,
// dynamic shared memory kSmemBytes(K) = 32 * K / CLUSTER + TC_WARPS * 32 * TC_CHUNK bytes.
// Needs M <= 16, N % (16 * TC_WARPS) == 0, K % (CLUSTER * TC_CHUNK) == 0.
// Arguments as gemm.cuh's kernels with TMA_ARGS 2 (ws and the tensor maps are taken, not read).
#include <cuda_bf16.h>
#include "common/cluster.cuh"
#include "common/cp_async.cuh"
#include "common/cp_async_zfill.cuh"
#include "common/mma.cuh"
#include "common/tma.cuh"

#if !defined(B_COL) || !defined(TC_WARPS) || !defined(TC_CHUNK) || !defined(CLUSTER)
#error "tcgemv.cuh needs -D B_COL TC_WARPS TC_CHUNK CLUSTER"
#endif
#ifndef TC_AHEAD
#define TC_AHEAD 1
#endif

typedef __nv_bfloat16 bf16;

namespace tcg {

constexpr int kWarps = TC_WARPS;
constexpr int kThreads = 32 * kWarps;
constexpr int kChunk = TC_CHUNK;              // k per chunk
constexpr int kRowChunks = kChunk / 8;        // 16-byte pieces of one b row per chunk (16 | 32)
constexpr int kRowsPerLoad = 32 / kRowChunks; // rows one warp load covers (2 | 1)
constexpr int kLoads = 16 / kRowsPerLoad;     // loads per lane per chunk (8 | 16)
constexpr int kCluster = CLUSTER;
constexpr int kAhead = TC_AHEAD;              // chunks loaded ahead of the one multiplied
constexpr int kBufBytes = 16 * kChunk * 2;    // one warp's chunk of b in shared memory

static_assert(B_COL == 1, "tcgemv.cuh is the column-major b path (b[N][K])");
static_assert(kWarps == 4 || kWarps == 8, "TC_WARPS must be 4 or 8");
static_assert(kChunk == 128 || kChunk == 256, "TC_CHUNK must be 128 or 256");
static_assert(kAhead == 1 || kAhead == 2, "TC_AHEAD must be 1 or 2");
static_assert(kCluster == 1 || kCluster == 2 || kCluster == 4 || kCluster == 8, "CLUSTER must be 1, 2, 4 or 8");

// 16-byte piece `piece` of row `row` in a buffer of rows with `pieces` pieces: pieces XOR-swizzled by
// row % 8, so that the 8 rows one ldmatrix reads fall in 8 different bank groups.
__device__ __forceinline__ unsigned sw(int row, int piece, int pieces) {
  return (unsigned)((row * pieces + (piece ^ (row & 7))) * 16);
}

__device__ __forceinline__ uint4 ld_stream16(const void *p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

}  // namespace tcg

extern "C" __global__ void __launch_bounds__(tcg::kThreads)
tcgemv(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c, float *__restrict__ ws, int M,
       int N, int K, const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmB,
       const __grid_constant__ tune::tensormap tmC) {
  using namespace tcg;
  (void)ws;
  extern __shared__ __align__(128) unsigned char smem[];      // a slice, then the warps' b buffers
  __shared__ __align__(16) float part[16][16 * kWarps];        // CLUSTER > 1: this CTA's sums c^T
  // launched without clusters of CLUSTER CTAs the k ranges cannot be combined: store nothing (the
  // output stays poisoned and verification fails; uniform over the grid, so no barrier waits)
  if (kCluster > 1 && tune::cluster_size() != (unsigned)kCluster) return;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int rank = kCluster > 1 ? (int)tune::cluster_rank() : 0;
  const int tile = (int)blockIdx.x / kCluster;
  const int kc = K / kCluster, k0 = rank * kc;  // this CTA's k range
  const int a_pieces = kc / 8;                   // 16-byte pieces of one a row in the slice
  const unsigned s_a = tune::smem_u32(smem);
  const unsigned s_buf = s_a + 32u * (unsigned)kc + (unsigned)(warp * kBufBytes);

  // 1. a[0..15][k0, k0 + kc) -> shared memory (rows >= M as zeros), one cp.async group
  for (int i = tid; i < 16 * a_pieces; i += kThreads) {
    const int m = i / a_pieces, p = i % a_pieces;
    const bool ok = m < M;
    tune::g2s_copy16_zfill(s_a + sw(m, p, a_pieces), a + (size_t)(ok ? m : 0) * K + k0 + p * 8, ok);
  }
  tune::cp_async_commit();

  // 2. this warp's 16 rows of b, chunk by chunk: registers one chunk ahead
  const int n0 = tile * 16 * kWarps + warp * 16;
  const int ld_row = lane / kRowChunks, ld_piece = lane % kRowChunks;  // of each load
  const bf16 *bp = b + (size_t)(n0 + ld_row) * K + k0 + ld_piece * 8;
  const int chunks = kc / kChunk;
  uint4 ring[kAhead + 1][kLoads] = {};  // ring[0]: the chunk multiplied next; zero past the last chunk
#pragma unroll
  for (int d = 0; d < kAhead; ++d)
    if (d < chunks)
#pragma unroll
      for (int i = 0; i < kLoads; ++i) ring[d][i] = ld_stream16(bp + (size_t)i * kRowsPerLoad * K + (size_t)d * kChunk);
  tune::cp_async_wait<0>();
  __syncthreads();  // the a slice is complete

  float acc[2][4] = {};  // c^T: rows n0 + (g | g + 8), columns m = 8 j + 2 q (+1)
  const int r8 = lane & 7, mat = lane >> 3;
  const int b_row = r8 + ((mat & 1) << 3), b_hi = mat >> 1;  // ldmatrix roles for b (A operand)
  const int a_row = r8 + ((mat >> 1) << 3), a_hi = mat & 1;  // and for a (B operand)
  for (int ch = 0; ch < chunks; ++ch) {
    if (ch + kAhead < chunks) {  // a branch: ptxas then issues all those loads first
#pragma unroll
      for (int i = 0; i < kLoads; ++i)
        ring[kAhead][i] = ld_stream16(bp + (size_t)i * kRowsPerLoad * K + (size_t)(ch + kAhead) * kChunk);
    }
    __syncwarp();  // every lane is done reading the buffer (previous chunk)
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const unsigned addr = s_buf + sw(i * kRowsPerLoad + ld_row, ld_piece, kRowChunks);
      asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(ring[0][i].x), "r"(ring[0][i].y),
                   "r"(ring[0][i].z), "r"(ring[0][i].w)
                   : "memory");
    }
    __syncwarp();
#pragma unroll
    for (int ks = 0; ks < kChunk / 16; ++ks) {
      unsigned fb[4], fa[4];
      tune::ldmatrix_x4(fb, s_buf + sw(b_row, 2 * ks + b_hi, kRowChunks));
      tune::ldmatrix_x4(fa, s_a + sw(a_row, ch * kRowChunks + 2 * ks + a_hi, a_pieces));
      tune::mma_bf16_16816(acc[0], fb, fa[0], fa[1]);  // m 0..7
      tune::mma_bf16_16816(acc[1], fb, fa[2], fa[3]);  // m 8..15
    }
#pragma unroll
    for (int d = 0; d < kAhead; ++d)
#pragma unroll
      for (int i = 0; i < kLoads; ++i) ring[d][i] = ring[d + 1][i];
  }

  // 3. sums to c: acc[j][e] is c^T[n0 + g + 8 (e >> 1)][8 j + 2 q + (e & 1)]
  const int g = lane >> 2, q = lane & 3;
  if constexpr (kCluster == 1) {
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int m = 8 * j + 2 * q + (e & 1), n = n0 + g + 8 * (e >> 1);
        if (m < M) c[(size_t)m * N + n] = __float2bfloat16(acc[j][e]);
      }
  } else {
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) part[8 * j + 2 * q + (e & 1)][warp * 16 + g + 8 * (e >> 1)] = acc[j][e];
    tune::cluster_sync();  // every CTA's part is complete
    constexpr int kCols = 16 * kWarps, kSlice = 16 * kCols / kCluster;
    for (int i = tid; i < kSlice; i += kThreads) {
      const int idx = rank * kSlice + i, m = idx / kCols, n = idx % kCols;
      if (m < M) {
        float s = 0.f;
#pragma unroll
        for (int r = 0; r < kCluster; ++r) s += tune::ld_dsmem_f32(&part[m][n], (unsigned)r);
        c[(size_t)m * N + tile * kCols + n] = __float2bfloat16(s);
      }
    }
    tune::cluster_sync();  // no CTA leaves while its part is still read
  }
}
