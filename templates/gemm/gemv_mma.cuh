// gemv_mma.cuh: decode-shape GEMM on tensor cores with b loaded straight into mma.sync fragments,
// recipes/gemm/gemv_mma.lua.
//
//   c[M][N] = a[M][K] @ B,  B(k, n) = b[n * K + k] (b [N][K], nn.Linear), M <= 16 * ROW_TILES,
//   bf16 in, fp32 accumulation, bf16 out.
//
// Why: at decode sizes the GEMM is a stream of b, and the CUDA-core GEMV (gemv.cuh), whose lanes load
// 16 bytes each straight from global memory, streams it faster than a TMA ring of 128-byte box rows
// (skinny.cuh, and cuBLAS's kernels at these shapes) does. This keeps the GEMV's loads and does the
// math on tensor cores, so that M is not limited by CUDA-core FMAs.
//
// The k permutation: a dot product may sum its k in any order, so each lane's 16-byte load of a
// column of b (8 consecutive k) becomes the B fragments of two m16n8k16 steps when the A fragments
// take a's k in the same order. Lane (g = lane / 4, t = lane % 4) loads b column n0 + g at physical
// k = k0 + 8 t .. 8 t + 7 (words w0..w3, two k each) and uses w0, w1 as b[0], b[1] of step 0 and w2, w3
// of step 1: logical k 2t, 2t + 1, 2t + 8, 2t + 9 of step 0 are physical k0 + 8t .. 8t + 3. Its A
// fragment takes the same words of a's rows g and g + 8 at the same k (a[0], a[2] from row g,
// a[1], a[3] from row g + 8). A warp's load covers 64 contiguous bytes of each of 8 columns; UNROLL
// such 32-k chunks (at k0 + 32 u) are in flight per n8 tile, so a column is read in runs of 64 * UNROLL
// bytes.
//
// a lives in shared memory: each block first copies the M rows of a over its k range there (cp.async,
// rows padded), while its warps' first chunks of b are already in flight; a lane then
// reads its A words with one 16-byte shared load per row and chunk. (Read from global memory through
// L1 instead, a costs as many bytes per n8 tile as b does and holds the stream of b back.)
//
// Block: WARPS_N x WARPS_K warps. Warp (wn, wk) owns N_TILES n8 tiles (8 * N_TILES consecutive
// columns) and 1 / WARPS_K of the block's k range; b is read once (ld.global.nc, no L1 allocation).
// Rows: ROW_TILES m16 tiles; rows past M read zeros and are not stored (ROWS_8 1: M <= 8, rows g + 8
// are not read at all). Epilogue: the WARPS_K partial sums meet in shared memory (fp32 atomics), then
// the SPLIT_K blocks of a cluster (1, SPLIT_K, 1) sum each other's tiles through distributed shared
// memory, each block storing 1 / SPLIT_K of the outputs.
//
// Defines: N_TILES (1 | 2 | 4), ROW_TILES (1..4), ROWS_8 (0 | 1, only with ROW_TILES 1), UNROLL (2 | 4 |
// 8), WARPS_N, WARPS_K, SPLIT_K (cluster size 1..8). Arguments as templates/gemm/gemm.cuh without
// tensor maps: a, b, c, ws (unused), M, N, K. Launch: grid (N / (8 N_TILES WARPS_N), SPLIT_K), cluster
// (1, SPLIT_K, 1), block 32 WARPS_N WARPS_K, dynamic shared memory smem_bytes(M, K) (a's rows, then
// the reduction tile). Needs N % (8 N_TILES WARPS_N) == 0, K % (32 UNROLL WARPS_K SPLIT_K) == 0.
#include <cuda_bf16.h>

#include "common/cluster.cuh"
#include "common/cp_async.cuh"
#include "common/ld_stream.cuh"
#include "common/mma.cuh"
#include "common/smem_io.cuh"

#if !defined(N_TILES) || !defined(ROW_TILES) || !defined(ROWS_8) || !defined(UNROLL) || !defined(WARPS_N) || \
    !defined(WARPS_K) || !defined(SPLIT_K)
#error "gemv_mma.cuh needs -D N_TILES ROW_TILES ROWS_8 UNROLL WARPS_N WARPS_K SPLIT_K"
#endif

typedef __nv_bfloat16 bf16;

namespace gemv_mma {

constexpr int kNT = N_TILES, kMT = ROW_TILES, kU = UNROLL, kWN = WARPS_N, kWK = WARPS_K;
constexpr bool kRows8 = ROWS_8;
constexpr int kThreads = 32 * kWN * kWK;
constexpr int kBN = 8 * kNT * kWN;        // columns per block
constexpr int kBM = kRows8 ? 8 : 16 * kMT;  // rows of the reduction tile
constexpr int kChunkK = 32;               // k per warp-wide load (8 per lane, 4 lanes per column)
constexpr int kRedPitch = kBN + 4;        // fp32 per row of the reduction tile (16-byte rows)

static_assert(kNT == 1 || kNT == 2 || kNT == 4, "N_TILES must be 1, 2 or 4");
static_assert(kMT >= 1 && kMT <= 4, "ROW_TILES must be 1..4");
static_assert(!kRows8 || kMT == 1, "ROWS_8 needs ROW_TILES 1");
static_assert(kU == 2 || kU == 4 || kU == 8, "UNROLL must be 2, 4 or 8");
static_assert(kWN * kWK >= 1 && kWN * kWK <= 16, "1..16 warps");
static_assert(SPLIT_K >= 1 && SPLIT_K <= 8, "SPLIT_K is a cluster size, 1..8");

// acc[mt][nt] += one 32-k chunk: bv[nt] this lane's 16 bytes of column g of tile nt, av[mt][h] its 16
// bytes of row 16 mt + g + 8 h of a at the same k (zeros past M); two m16n8k16 steps.
__device__ __forceinline__ void mma_chunk(float (&acc)[kMT][kNT][4], const uint4 (&av)[kMT][2], const uint4 (&bv)[kNT]) {
#pragma unroll
  for (int step = 0; step < 2; ++step)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      const uint4 &lo = av[mt][0], &hi = av[mt][1];
      const unsigned af[4] = {step ? lo.z : lo.x, step ? hi.z : hi.x, step ? lo.w : lo.y, step ? hi.w : hi.y};
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
        tune::mma_bf16_16816(acc[mt][nt], af, step ? bv[nt].z : bv[nt].x, step ? bv[nt].w : bv[nt].y);
    }
}

// Shared memory: a's first min(M, kBM) rows over the block's k range (k_block), each row padded by
// 64 bytes (k_block is a multiple of 64, so rows start alternately at bytes 0 and 64 of a 128-byte
// bank line: the two rows of a quarter-warp's 16-byte loads never share a bank); then the fp32
// reduction tile. smem_bytes is the launch's dynamic shared memory (recipes/gemm/gemv_mma.lua says the same).
__host__ __device__ constexpr int slab_pitch(int k_block) { return 2 * k_block + 64; }
__device__ __forceinline__ int slab_rows(int M) { return M < kBM ? M : kBM; }

// Copy rows [0, slab_rows) of a over [k0, k0 + k_block) into the slab (16-byte cp.async, one group).
__device__ __forceinline__ void stage_a(unsigned slab, const bf16 *__restrict__ a, int M, int K, int k0, int k_block,
                                        int tid) {
  const int chunks = k_block / 8, total = slab_rows(M) * chunks;
  for (int i = tid; i < total; i += kThreads) {
    const int row = i / chunks, c = i - row * chunks;
    tune::g2s_copy16(slab + (unsigned)(row * slab_pitch(k_block) + 16 * c), a + (size_t)row * K + k0 + 8 * c);
  }
  tune::cp_async_commit();
}

// This lane's a words for one chunk at slab offset kk (k minus the block's first k): rows 16 mt + g
// (+ 8), zeros past M (and for rows g + 8 with ROWS_8).
__device__ __forceinline__ void load_a(uint4 (&av)[kMT][2], unsigned slab, int pitch, int M, int g, int kk) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = 16 * mt + g + 8 * h;
      uint4 v = make_uint4(0u, 0u, 0u, 0u);
      if (!(kRows8 && h) && row < M) {
        unsigned w[4];
        tune::s2r_load16(slab + (unsigned)(row * pitch + 2 * kk), w);
        v = make_uint4(w[0], w[1], w[2], w[3]);
      }
      av[mt][h] = v;
    }
}

__device__ __forceinline__ void load_b(uint4 (&bv)[kU][kNT], const bf16 *const (&bp)[kNT], int k0) {
#pragma unroll
  for (int u = 0; u < kU; ++u)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) bv[u][nt] = tune::ld_stream16(bp[nt] + k0 + kChunkK * u);
}

// Warp's sums over k in [k_begin, k_end) (a non-empty multiple of UNROLL chunks): UNROLL chunks of b
// loaded (all in flight), then a's words and the mma steps chunk by chunk. The first chunks are
// loaded before the block waits for its slab of a (every thread of the block calls this once).
__device__ __forceinline__ void stream(float (&acc)[kMT][kNT][4], unsigned slab, int pitch, int k_slab0,
                                       const bf16 *__restrict__ b, int M, int K, int n_warp, int k_begin, int k_end,
                                       int lane) {
  const int g = lane >> 2, t = lane & 3;
  const bf16 *bp[kNT];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) bp[nt] = b + (size_t)(n_warp + 8 * nt + g) * K + 8 * t;
  uint4 bv[kU][kNT];
  load_b(bv, bp, k_begin);
  tune::cp_async_wait<0>();
  __syncthreads();  // the slab is complete
  for (int k0 = k_begin;;) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      uint4 av[kMT][2];
      load_a(av, slab, pitch, M, g, k0 - k_slab0 + kChunkK * u + 8 * t);
      mma_chunk(acc, av, bv[u]);
    }
    k0 += kChunkK * kU;
    if (k0 >= k_end) break;
    load_b(bv, bp, k0);
  }
}

__device__ __forceinline__ void run(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c,
                                    int M, int N, int K) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wn = warp % kWN, wk = warp / kWN;
  const int n0 = (int)blockIdx.x * kBN;
  const int split = SPLIT_K > 1 ? (int)tune::cluster_rank() : 0;
  const int k_block = K / SPLIT_K, k_warp = k_block / kWK;
  const int k_slab0 = split * k_block, k_begin = k_slab0 + wk * k_warp;
  const int pitch = slab_pitch(k_block);
  const unsigned slab = tune::smem_u32(smem);
  float *red = reinterpret_cast<float *>(smem + slab_rows(M) * pitch);

  stage_a(slab, a, M, K, k_slab0, k_block, tid);
  for (int i = tid; i < kBM * kRedPitch; i += kThreads) red[i] = 0.f;
  float acc[kMT][kNT][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.f;
  stream(acc, slab, pitch, k_slab0, b, M, K, n0 + wn * 8 * kNT, k_begin, k_begin + k_warp, lane);

  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = 16 * mt + g + 8 * h;
      if (row >= M || row >= kBM) continue;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        float *dst = red + row * kRedPitch + wn * 8 * kNT + 8 * nt + 2 * t;
        if constexpr (kWK > 1) {
          atomicAdd(dst, acc[mt][nt][2 * h]);
          atomicAdd(dst + 1, acc[mt][nt][2 * h + 1]);
        } else {
          *reinterpret_cast<float2 *>(dst) = make_float2(acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]);
        }
      }
    }

  // outputs in groups of 4 columns; with SPLIT_K > 1 block `split` sums groups split, split + S, ...
  // over the cluster's tiles (distributed shared memory) and stores them
  const int rows = M < kBM ? M : kBM;
  constexpr int kGroupsPerRow = kBN / 4;
  const int groups = rows * kGroupsPerRow;
#if SPLIT_K > 1
  tune::cluster_sync();  // every block's tile is complete
  const unsigned red_addr = (unsigned)__cvta_generic_to_shared(red);
  for (int gi = split * kThreads + tid; gi < groups; gi += kThreads * SPLIT_K) {
#else
  __syncthreads();
  for (int gi = tid; gi < groups; gi += kThreads) {
#endif
    const int row = gi / kGroupsPerRow, col = (gi % kGroupsPerRow) * 4;
    float4 v = *reinterpret_cast<const float4 *>(red + row * kRedPitch + col);
#if SPLIT_K > 1
#pragma unroll
    for (int r = 1; r < SPLIT_K; ++r) {
      const float4 w = tune::ld_dsmem_f4(red_addr + (unsigned)((row * kRedPitch + col) * 4),
                                         (unsigned)((split + r) % SPLIT_K));
      v.x += w.x;
      v.y += w.y;
      v.z += w.z;
      v.w += w.w;
    }
#endif
    *reinterpret_cast<uint2 *>(c + (size_t)row * N + n0 + col) =
        make_uint2(tune::pack_bf16x2(v.x, v.y), tune::pack_bf16x2(v.z, v.w));
  }
#if SPLIT_K > 1
  tune::cluster_sync();  // no block leaves while another still reads its tile
#endif
}

}  // namespace gemv_mma

extern "C" __global__ void __launch_bounds__(gemv_mma::kThreads)
gemm_gemv_mma(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c, float *__restrict__ ws,
              int M, int N, int K) {
  (void)ws;
  gemv_mma::run(a, b, c, M, N, K);
}
