// prefill.cuh: attention forward (prefill), FlashAttention-2 style, on mma.sync tensor cores.
//
//   o[b,h,i,:] = sum_j softmax_j(q[b,h,i,:] . k[b,kvh,j,:] * scale) v[b,kvh,j,:]
//   (causal: only j <= i), kvh = h / (HQ / HKV) (GQA; HQ a multiple of HKV).
//
// Layout: q, o [B, HQ, S, D]; k, v [B, HKV, S, D]; contiguous bf16. Softmax statistics and the
// output accumulator are fp32 in registers. Requires S % BLOCK_M == 0 and S % BLOCK_N == 0
// (recipe `applies` skips other problems); SCHED == 2 also needs (S / BLOCK_M) even.
//
// Tunables (recipes/attention/prefill.lua):
//   BLOCK_M   64 | 128       query rows per block (one block = one query tile of one (b, h))
//   BLOCK_N   32 | 64 | 128  keys per K/V tile
//   WARPS     4 | 8          warps per block; each warp owns M_TILES = BLOCK_M / (16 * WARPS) m16 row
//                            tiles (1 or 2), so BLOCK_M % (16 * WARPS) == 0, M_TILES <= 2
//   STAGES    1 | 2 | 3      K/V shared-memory ring depth. K and V tiles are separate cp.async groups;
//                            1 is FlashAttention-2's split pipeline (V_j loads during Q*K_j^T,
//                            K_j+1 during softmax and P*V_j), deeper rings prefetch STAGES-1 more tiles.
//   SWIZZLE   0 | 1          0: rows padded by 16 bytes; 1: 16-byte chunk c of row r stored at c ^ (r % 8)
//   SCHED     0 | 1 | 2      0: grid.x = query tile in natural order; 1: longest (causal) query tiles
//                            first within each head; 2: each block does the pair of tiles (i, T-1-i),
//                            equal work per block (grid.x = T / 2)
//   Q_IN_REGS 0 | 1 (optional; default 1 when M_TILES * HEAD_DIM <= 128): Q fragments loaded once into
//                            registers, else re-read from shared memory with ldmatrix every K/V tile.
// Problem constants: HEAD_DIM 64 | 128, IS_CAUSAL 0 | 1.
//
// Launch (must match the recipe):
//   grid  = (S / BLOCK_M / (SCHED == 2 ? 2 : 1), HQ, B), block = WARPS * 32,
//   dynamic shared memory = (BLOCK_M + 2 * STAGES * BLOCK_N) * (HEAD_DIM + (SWIZZLE ? 0 : 8)) * 2 bytes
//   (attn_prefill_smem_bytes below).
//
// Stages of one query tile: load_q, then per K/V tile: load_kv_stage (prefetch), compute_scores
// (S = Q K^T), apply_causal_mask (diagonal tiles only), online_softmax, pack_p, accumulate_pv (O += P V);
// finally epilogue (O / l, bf16, through shared memory to 16-byte coalesced stores).
#include <cuda_bf16.h>
#include "common/cp_async.cuh"
#include "common/fast_math.cuh"
#include "common/mma.cuh"

#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(WARPS) || !defined(STAGES) || !defined(SWIZZLE) || \
    !defined(SCHED) || !defined(HEAD_DIM) || !defined(IS_CAUSAL)
#error "prefill.cuh needs -D BLOCK_M BLOCK_N WARPS STAGES SWIZZLE SCHED HEAD_DIM IS_CAUSAL"
#endif

typedef __nv_bfloat16 bf16;

namespace prefill {

constexpr int kBM = BLOCK_M;
constexpr int kBN = BLOCK_N;
constexpr int kD = HEAD_DIM;
constexpr int kWarps = WARPS;
constexpr int kThreads = WARPS * 32;
constexpr int kStages = STAGES;
constexpr int kMT = BLOCK_M / (16 * WARPS);  // m16 row tiles per warp
constexpr int kWarpRows = 16 * kMT;          // query rows per warp
constexpr int kNT = BLOCK_N / 8;             // n8 tiles of the score row block
constexpr int kDT = HEAD_DIM / 8;            // n8 tiles of the output row block
constexpr int kKD = HEAD_DIM / 16;           // k16 steps of Q K^T
constexpr int kKN = BLOCK_N / 16;            // k16 steps of P V
constexpr int kChunks = HEAD_DIM / 8;        // 16-byte chunks per tile row
constexpr int kPitch = HEAD_DIM + (SWIZZLE ? 0 : 8);  // elements per shared-memory row
constexpr int kQElems = BLOCK_M * kPitch;
constexpr int kKVElems = BLOCK_N * kPitch;
constexpr int kSmemBytes = (kQElems + 2 * kStages * kKVElems) * 2;

#ifdef Q_IN_REGS
constexpr bool kQInRegs = Q_IN_REGS;
#else
constexpr bool kQInRegs = kMT * HEAD_DIM <= 128;
#endif

static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "HEAD_DIM must be 64 or 128");
static_assert(BLOCK_M == 64 || BLOCK_M == 128, "BLOCK_M must be 64 or 128");
static_assert(BLOCK_N == 32 || BLOCK_N == 64 || BLOCK_N == 128, "BLOCK_N must be 32, 64 or 128");
static_assert(WARPS == 4 || WARPS == 8, "WARPS must be 4 or 8");
static_assert(BLOCK_M % (16 * WARPS) == 0 && (kMT == 1 || kMT == 2),
              "each warp owns 16 or 32 query rows: BLOCK_M = 16 * WARPS * (1 | 2)");
static_assert(STAGES >= 1 && STAGES <= 3, "STAGES must be 1..3");
static_assert(SWIZZLE == 0 || SWIZZLE == 1, "SWIZZLE must be 0 or 1");
static_assert(SCHED >= 0 && SCHED <= 2, "SCHED must be 0, 1 or 2");
static_assert(kNT % 2 == 0 && kDT % 2 == 0, "ldmatrix.x4 loads n8 tiles in pairs");
static_assert((BLOCK_M * kChunks) % kThreads == 0 && (BLOCK_N * kChunks) % kThreads == 0,
              "tile loads: every thread copies the same number of 16-byte chunks");
static_assert((kWarpRows * kChunks) % 32 == 0, "epilogue: every lane stores the same number of chunks");
static_assert(kSmemBytes <= 227 * 1024, "shared memory over the 227 KiB per-block limit of sm_90");

using tune::neg_inf;

// Element offset of 16-byte chunk `chunk` of row `row` in a tile (padded or XOR-swizzled).
__device__ __forceinline__ int tile_off(int row, int chunk) {
  return row * kPitch + (SWIZZLE ? (chunk ^ (row & 7)) : chunk) * 8;
}

// Byte offset of k16 step kk from a lane's ldmatrix base offset. ldmatrix rows used here always
// start at multiples of 8, so row % 8 == lane % 8: the lane's swizzled chunk (c ^ row%8) is folded into
// its base offset once, and stepping to column chunk 2*kk + c is an XOR of the chunk bits (rows are
// 128 or 256 bytes, so row * pitch has those bits clear). Padded rows: a plain add.
__device__ __forceinline__ unsigned frag_off(unsigned lane_off, int kk) {
  return SWIZZLE ? (lane_off ^ (unsigned)(kk << 5)) : (lane_off + (unsigned)(kk << 5));
}

// Copy a ROWS x HEAD_DIM tile (global row stride HEAD_DIM) into shared memory, 16 bytes per cp.async.
// Thread tid copies chunk tid % kChunks of rows tid / kChunks + i * kRowStep; kRowStep is a multiple of
// 8, so the swizzled column is the same for all i and every address is a base plus an immediate.
constexpr int kRowStep = kThreads / kChunks;
static_assert(kThreads % kChunks == 0 && kRowStep % 8 == 0, "tile loads: row step must keep row % 8");
template <int ROWS>
__device__ __forceinline__ void load_tile(unsigned dst, const bf16 *__restrict__ src, int tid) {
  const int row = tid / kChunks, chunk = tid % kChunks;
  const unsigned s_off = (unsigned)tile_off(row, chunk) * 2;
  const bf16 *g = src + row * kD + chunk * 8;
#pragma unroll
  for (int i = 0; i < ROWS / kRowStep; ++i)
    tune::g2s_copy16(dst + s_off + i * kRowStep * kPitch * 2, g + i * kRowStep * kD);
}

// Stage: the block's BLOCK_M x D query tile -> shared memory (not committed here).
__device__ __forceinline__ void load_q(unsigned sQ, const bf16 *__restrict__ q_tile, int tid) {
  load_tile<kBM>(sQ, q_tile, tid);
}

// Stage: one BLOCK_N x D tile of K or V (kv_head base + tile index) -> one ring slot; commits a group.
// Called with valid == false it commits an empty group, so the wait counts stay fixed.
__device__ __forceinline__ void load_kv_stage(unsigned slot, const bf16 *__restrict__ kv_head, int n_blk,
                                              bool valid, int tid) {
  if (valid) load_tile<kBN>(slot, kv_head + (size_t)n_blk * kBN * kD, tid);
  tune::cp_async_commit();
}

// Per-lane ldmatrix byte offsets inside a tile (swizzle term included), fixed for the whole kernel.
// Q (A, non-trans): matrix i = lane/8 covers rows 8*(i&1).., k chunk i>>1.
// K (B, non-trans): rows (keys) 8*(i>>1).., k chunk i&1 -> b0,b1 of n-tile 2p, then 2p+1.
// V (B, trans):     rows (keys) 8*(i&1)..,  d chunk i>>1 -> b0,b1 of d-tile 2p, then 2p+1.
struct LaneAddr {
  unsigned q, k, v;
};
__device__ __forceinline__ LaneAddr lane_addr(int warp, int lane) {
  const int r8 = lane & 7, i = lane >> 3;
  LaneAddr a;
  a.q = (unsigned)tile_off(warp * kWarpRows + r8 + (i & 1) * 8, i >> 1) * 2;
  a.k = (unsigned)tile_off(r8 + (i >> 1) * 8, i & 1) * 2;
  a.v = (unsigned)tile_off(r8 + (i & 1) * 8, i >> 1) * 2;
  return a;
}

// Q fragments for one k16 step of m-tile mt, from shared memory.
__device__ __forceinline__ void load_q_frag(unsigned (&a)[4], unsigned sQ, const LaneAddr &la, int mt, int kk) {
  tune::ldmatrix_x4(a, sQ + frag_off(la.q, kk) + mt * 16 * kPitch * 2);
}

// Stage: s = Q K^T for this warp's rows and one K tile (raw dot products, unscaled).
__device__ __forceinline__ void compute_scores(float (&s)[kMT][kNT][4], const unsigned (&qf)[kMT][kKD][4],
                                               const LaneAddr &la, unsigned sQ, unsigned sK) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
#pragma unroll
  for (int kk = 0; kk < kKD; ++kk) {
    unsigned a[kMT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      if constexpr (kQInRegs) {
#pragma unroll
        for (int e = 0; e < 4; ++e) a[mt][e] = qf[mt][kk][e];
      } else {
        load_q_frag(a[mt], sQ, la, mt, kk);
      }
    }
    const unsigned k_addr = sK + frag_off(la.k, kk);
#pragma unroll
    for (int np = 0; np < kNT / 2; ++np) {
      unsigned b[4];
      tune::ldmatrix_x4(b, k_addr + np * 16 * kPitch * 2);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        tune::mma_bf16_16816(s[mt][2 * np], a[mt], b[0], b[1]);
        tune::mma_bf16_16816(s[mt][2 * np + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

// Stage (diagonal K/V tiles only): s = -inf where key > query.
__device__ __forceinline__ void apply_causal_mask(float (&s)[kMT][kNT][4], int row0, int key0, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = row0 + mt * 16 + g + (e >> 1) * 8;
        const int key = key0 + nt * 8 + 2 * t + (e & 1);
        if (key > row) s[mt][nt][e] = neg_inf();
      }
}

// Stage: online softmax over one score tile. m: running row max (raw score units), l: this thread's
// partial row sum (the quad sum is taken in the epilogue). Rescales o by 2^((m_old - m_new) * scale_log2)
// and overwrites s with p = 2^(s * scale_log2 - m_new * scale_log2). Row r of m-tile mt is
// [mt][0] (row g) and [mt][1] (row g + 8).
__device__ __forceinline__ void online_softmax(float (&s)[kMT][kNT][4], float (&o)[kMT][kDT][4],
                                               float (&m)[kMT][2], float (&l)[kMT][2], float scale_log2) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = m[mt][h];
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // A row with no unmasked key so far keeps m = -inf; use 0 so that exp2(-inf - 0) = 0, not NaN.
      const float m_scaled = (mx == neg_inf()) ? 0.f : mx * scale_log2;
      const float alpha = tune::exp2_approx(m[mt][h] * scale_log2 - m_scaled);
      m[mt][h] = mx;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float p = tune::exp2_approx(fmaf(s[mt][nt][2 * h + e], scale_log2, -m_scaled));
          s[mt][nt][2 * h + e] = p;
          sum += p;
        }
      l[mt][h] = l[mt][h] * alpha + sum;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        o[mt][dt][2 * h] *= alpha;
        o[mt][dt][2 * h + 1] *= alpha;
      }
    }
}

// P as bf16 A fragments: the C layout of two adjacent n8 score tiles is the A layout of one k16 step
// of P V. Packing right after the softmax frees the fp32 scores before the barrier.
__device__ __forceinline__ void pack_p(unsigned (&pf)[kMT][kKN][4], const float (&p)[kMT][kNT][4]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int kk = 0; kk < kKN; ++kk) {
      pf[mt][kk][0] = tune::pack_bf16x2(p[mt][2 * kk][0], p[mt][2 * kk][1]);
      pf[mt][kk][1] = tune::pack_bf16x2(p[mt][2 * kk][2], p[mt][2 * kk][3]);
      pf[mt][kk][2] = tune::pack_bf16x2(p[mt][2 * kk + 1][0], p[mt][2 * kk + 1][1]);
      pf[mt][kk][3] = tune::pack_bf16x2(p[mt][2 * kk + 1][2], p[mt][2 * kk + 1][3]);
    }
}

// Stage: o += P V for one V tile (P in bf16 A fragments from pack_p).
__device__ __forceinline__ void accumulate_pv(float (&o)[kMT][kDT][4], const unsigned (&pf)[kMT][kKN][4],
                                              const LaneAddr &la, unsigned sV) {
#pragma unroll
  for (int kk = 0; kk < kKN; ++kk) {
#pragma unroll
    for (int dp = 0; dp < kDT / 2; ++dp) {
      unsigned b[4];
      tune::ldmatrix_x4_trans(b, sV + frag_off(la.v, dp) + kk * 16 * kPitch * 2);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        tune::mma_bf16_16816(o[mt][2 * dp], pf[mt][kk], b[0], b[1]);
        tune::mma_bf16_16816(o[mt][2 * dp + 1], pf[mt][kk], b[2], b[3]);
      }
    }
  }
}

// Stage: o / l -> bf16 -> this warp's own rows of the Q tile in shared memory (no other warp reads
// them) -> 16-byte coalesced global stores of rows [warp_row0, warp_row0 + kWarpRows).
__device__ __forceinline__ void epilogue(const float (&o)[kMT][kDT][4], float (&l)[kMT][2], bf16 *sQ,
                                         bf16 *__restrict__ o_tile, int warp, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const int row0 = warp * kWarpRows;
  __syncwarp();  // this warp's last ldmatrix reads of its Q rows are done
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[mt][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = 1.f / sum;  // sum >= 1: the row max contributes 2^0
      const int row = row0 + mt * 16 + g + 8 * h;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const unsigned v = tune::pack_bf16x2(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);
        *reinterpret_cast<unsigned *>(sQ + tile_off(row, dt) + 2 * t) = v;
      }
    }
  __syncwarp();
  constexpr int kIters = kWarpRows * kChunks / 32;
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int idx = lane + i * 32;
    const int r = idx / kChunks, c = idx % kChunks;
    const uint4 v = *reinterpret_cast<const uint4 *>(sQ + tile_off(row0 + r, c));
    *reinterpret_cast<uint4 *>(o_tile + (size_t)(row0 + r) * kD + c * 8) = v;
  }
}

// One K/V tile j of the main loop. Ring invariant on entry: issued groups end with K_{j+S-1}
// (the prologue issued [Q+K_0], V_0, K_1, ..., V_{S-2}, K_{S-1}). sK, sV: shared addresses of slot 0.
template <bool MASK>
__device__ __forceinline__ void kv_step(int j, int n_end, float (&o)[kMT][kDT][4], float (&m)[kMT][2],
                                        float (&l)[kMT][2], const unsigned (&qf)[kMT][kKD][4],
                                        const LaneAddr &la, unsigned sQ, unsigned sK, unsigned sV,
                                        const bf16 *k_head, const bf16 *v_head, int q_row0, float scale_log2,
                                        int tid, int lane) {
  constexpr unsigned kSlotBytes = kKVElems * 2;
  // K_j has landed when at most 2S-2 later groups (V_j .. K_{j+S-1}) are pending.
  tune::cp_async_wait<2 * kStages - 2>();
  __syncthreads();  // K_j visible to all; every warp is past P V_{j-1}, so V slot (j-1) % S is free
  const int jv = j + kStages - 1;
  load_kv_stage(sV + (jv % kStages) * kSlotBytes, v_head, jv, jv < n_end, tid);

  // Make the lane offsets opaque once per tile, so that the compiler recomputes each swizzled
  // fragment address (one LOP3) next to its ldmatrix instead of keeping one register per k-step
  // alive through the loop (costs ~24 registers at D=128, which then spill).
  LaneAddr lo = la;
  if constexpr (SWIZZLE) asm volatile("" : "+r"(lo.q), "+r"(lo.k), "+r"(lo.v));

  unsigned pf[kMT][kKN][4];
  // Causal: a warp whose rows all lie above this tile's first key has nothing to do here
  // (warp-uniform; block-wide barriers stay outside).
  const bool warp_live = !MASK || (j * kBN <= q_row0 + kWarpRows - 1);
  if (warp_live) {
    float s[kMT][kNT][4];
    compute_scores(s, qf, lo, sQ, sK + (j % kStages) * kSlotBytes);
    if constexpr (MASK) apply_causal_mask(s, q_row0, j * kBN, lane);
    online_softmax(s, o, m, l, scale_log2);
    pack_p(pf, s);
  }

  // V_j has landed when at most 2S-2 later groups (K_{j+1} .. V_{j+S-1}) are pending.
  tune::cp_async_wait<2 * kStages - 2>();
  __syncthreads();  // V_j visible; every warp is past Q K_j^T, so K slot j % S is free
  const int jk = j + kStages;
  load_kv_stage(sK + (jk % kStages) * kSlotBytes, k_head, jk, jk < n_end, tid);

  if (warp_live) accumulate_pv(o, pf, lo, sV + (j % kStages) * kSlotBytes);
}

// All stages for query tile m_blk of head (b, h). smem: Q tile, then S K slots, then S V slots.
__device__ __forceinline__ void process_tile(const bf16 *__restrict__ q, const bf16 *__restrict__ k,
                                             const bf16 *__restrict__ v, bf16 *__restrict__ o_out, int b,
                                             int h, int m_blk, int HQ, int HKV, int S, float scale_log2,
                                             bf16 *smem) {
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const unsigned sQ = tune::smem_u32(smem);
  const unsigned sK = sQ + kQElems * 2;
  const unsigned sV = sK + kStages * kKVElems * 2;
  const int kvh = h / (HQ / HKV);
  const size_t q_off = ((size_t)(b * HQ + h) * S + (size_t)m_blk * kBM) * kD;
  const bf16 *k_head = k + (size_t)(b * HKV + kvh) * S * kD;
  const bf16 *v_head = v + (size_t)(b * HKV + kvh) * S * kD;

  const int m0 = m_blk * kBM;
  const int n_total = S / kBN;
  // Causal: tiles entirely at or below the diagonal need no mask; the rest up to the last row do.
  const int n_end = IS_CAUSAL ? min(n_total, (m0 + kBM + kBN - 1) / kBN) : n_total;
  const int n_full = IS_CAUSAL ? min(n_end, (m0 + 1) / kBN) : n_total;

  // Prologue: [Q + K_0], then V_0, K_1, ..., V_{S-2}, K_{S-1}.
  load_q(sQ, q + q_off, tid);
  load_kv_stage(sK, k_head, 0, true, tid);
#pragma unroll
  for (int t = 0; t + 1 < kStages; ++t) {
    load_kv_stage(sV + t * kKVElems * 2, v_head, t, t < n_end, tid);
    load_kv_stage(sK + (t + 1) * kKVElems * 2, k_head, t + 1, t + 1 < n_end, tid);
  }

  const LaneAddr la = lane_addr(warp, lane);
  unsigned qf[kMT][kKD][4];
  if constexpr (kQInRegs) {
    tune::cp_async_wait<2 * kStages - 2>();
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int kk = 0; kk < kKD; ++kk) load_q_frag(qf[mt][kk], sQ, la, mt, kk);
  }

  float o[kMT][kDT][4], m[kMT][2], l[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][dt][e] = 0.f;
    m[mt][0] = m[mt][1] = neg_inf();
    l[mt][0] = l[mt][1] = 0.f;
  }

  const int q_row0 = m0 + warp * kWarpRows;  // first query row of this warp
  int j = 0;
  for (; j < n_full; ++j)
    kv_step<false>(j, n_end, o, m, l, qf, la, sQ, sK, sV, k_head, v_head, q_row0, scale_log2, tid, lane);
  if constexpr (IS_CAUSAL)
    for (; j < n_end; ++j)
      kv_step<true>(j, n_end, o, m, l, qf, la, sQ, sK, sV, k_head, v_head, q_row0, scale_log2, tid, lane);
  tune::cp_async_wait<0>();  // only empty groups remain; drain them before the ring is reused

  epilogue(o, l, smem, o_out + q_off, warp, lane);
}

}  // namespace prefill

// Bytes of dynamic shared memory the kernel needs (host code that includes this header may use it).
constexpr int attn_prefill_smem_bytes = prefill::kSmemBytes;

extern "C" __global__ void __launch_bounds__(WARPS * 32)
attn_prefill(const bf16 *__restrict__ q, const bf16 *__restrict__ k, const bf16 *__restrict__ v,
             bf16 *__restrict__ o, int B, int HQ, int HKV, int S, float scale_log2) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  bf16 *smem = reinterpret_cast<bf16 *>(smem_raw);
  (void)B;
  const int h = blockIdx.y, b = blockIdx.z;
#if SCHED == 0
  prefill::process_tile(q, k, v, o, b, h, blockIdx.x, HQ, HKV, S, scale_log2, smem);
#else
  const int n_m = S / BLOCK_M;  // query tiles per head
  const int longest = n_m - 1 - (int)blockIdx.x;
#if SCHED == 1
  prefill::process_tile(q, k, v, o, b, h, longest, HQ, HKV, S, scale_log2, smem);
#else
  // Pair (T-1-x, x): one loop, not two inlined copies, to keep code size and registers down.
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
    if (pass) __syncthreads();  // every warp is done with the ring and its epilogue rows
    prefill::process_tile(q, k, v, o, b, h, pass ? (int)blockIdx.x : longest, HQ, HKV, S, scale_log2, smem);
  }
#endif
#endif
}
