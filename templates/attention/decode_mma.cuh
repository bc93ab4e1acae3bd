// decode_mma.cuh: decode.cuh's split kernel on tensor cores (MMA 1) at GQA ratios where the row-group
// path is bound by its arithmetic: every K and V element costs it one fp32 FMA per query head, and
// every score a share of a shuffle reduction. fp8 KV cache (KV_FP8 1): fp16 mma, K and V converted;
// bf16 KV cache: bf16 mma on K and V as loaded. Included by decode.cuh only (after its stages): same
// arguments, partials, combine kernel and serving contract.
//
// The warp takes kWarpKeys = BLOCK_N / WARPS consecutive keys of the block's tile, in key steps of 16.
// Lane (g, t) = (lane / 4, lane % 4) reads keys 16 s + g and 16 s + 8 + g of step s, 16 bytes of K and
// of V at head-dim C h + (C / 4) t for each chunk h < D / C, C = kChunkDims (64 fp8, 32 bf16: four
// lanes cover a C-wide chunk of a row). Below, "64 h + 16 t" is the fp8 case.
//   S = Q K^T  mma m16n8k16, A = the block's GQA_RATIO query heads as rows 0..7 (rows 8..15 zero:
//              the rows8 mma keeps half the accumulators), B = an n-tile of 8 keys. Word j of a
//              lane's 16 bytes gives the B pair of k-step (h, j) (bf16: words 2 j and 2 j + 1), so within
//              a k-step the head dims are permuted; q's A fragments follow the same permutation, so S is
//              the plain dot product.
//   softmax    lane (g, t) holds head g's scores of keys 2 t, 2 t + 1 of each n-tile; the running max
//              is made common to the four lanes of a head by two shuffles per tile, l is summed per
//              lane and reduced once at the end.
//   O += P V   A = P in fp16, built from the score fragments (the C of a step's two n-tiles is the A
//              of its 16 keys), B = V^T: each e4m3 pair becomes an fp16 pair and movmatrix transposes
//              the 8x8 block it belongs to. Column n of output n-tile (h, p) is head-dim
//              64 h + 16 (n / 2) + 2 p + n % 2, so lane (g, t) ends with head g's acc at head-dims
//              64 h + 16 t + 0 .. 15 and stores them contiguously (bf16: 32 h + 8 t + 0 .. 7). bf16: P as
//              two bf16 terms, hi = bf16(P) and lo = bf16(P - hi), two mma on the same V fragments, so
//              that P keeps about 16 bits (one bf16 P would round it to 8, the size of the output's own
//              rounding).
// Numerics (fp8): e4m3 -> fp16 exactly (DEQUANT 1: times 2^-8, folded into the scales as on the
// row-group path); q bf16 -> fp16 exactly for 2^-14 <= |q| < 65520 (smaller values lose low bits,
// larger become inf), unscaled: scale_log2 and the K scale multiply the fp32 scores; P rounded to fp16
// (relative 2^-11; l sums the fp32 values); fp32 accumulators. bf16: q and K as given, every product
// exact in the fp32 accumulator; P to ~2^-16 relative (above).
// K/V reach the registers as on the row-group path (decode.cuh run_tiles): loaded per tile (STAGES
// 1), one tile ahead (STAGES 2), or through a per-lane cp.async ring in shared memory (KV_RING k >= 2).
// KV_SCALE_PAGE: lane (g, t) loads the scales of its rows (keys 16 s + 8 r + g) with them; a score
// column (key 16 s + 8 r + 2 t + e) takes its K and V scale from lane 4 (2 t + e) by a shuffle.
// Requirements (static_asserts; recipes/attention/decode.lua and decode_fp8.lua): GQA_PACK 1, VEC_BYTES
// 16 (the loads above), BLOCK_N / WARPS a multiple of 16.
#pragma once

#include "common/mma_frag.cuh"

namespace decode {
namespace mma {

constexpr int kWarpKeys = BLOCK_N / WARPS;  // keys of one warp per tile
constexpr int kSteps = kWarpKeys / 16;      // 16-key steps per warp and tile
constexpr int kChunkDims = 64 / kKvBytes;   // head dims four lanes read with one 16-byte load each
constexpr int kLaneDims = kChunkDims / 4;   // head dims of a lane's 16 bytes
constexpr int kDChunks = kD / kChunkDims;   // chunks of a row
constexpr int kKSteps = kLaneDims / 4;      // k16 steps per chunk (a lane's 4 dims of each)
constexpr int kOutPerChunk = kChunkDims / 8;  // 8-column output n-tiles per chunk
constexpr int kOutTiles = kD / 8;           // 8-column n-tiles of the output

static_assert(GQA_PACK == 1 && VEC_BYTES == 16, "MMA 1 needs GQA_PACK 1 and VEC_BYTES 16");
static_assert(kWarpKeys % 16 == 0 && kSteps >= 1, "MMA 1 needs BLOCK_N / WARPS to be a multiple of 16");
static_assert(HEAD_DIM % kChunkDims == 0, "MMA 1 reads head-dim chunks of 64 (fp8) or 32 (bf16)");
static_assert(kHeads <= 8, "MMA 1 holds the query heads in fragment rows 0..7");

// This lane's K and V bytes of one tile: [step][half r: key 16 s + 8 r + g][chunk h]; KV_SCALE_PAGE:
// the scales of those rows, [step][half].
struct tile_regs {
  kv_vec k[kSteps][2][kDChunks];
  kv_vec v[kSteps][2][kDChunks];
#if KV_SCALE_PAGE
  float ks[kSteps][2], vs[kSteps][2];
#endif
};

// Block-table entries of this lane's rows of a tile, [step][half].
struct tile_pages { int p[kSteps][2]; };

// Query head g's A fragments, k-step (h, j): a0 = head dims kChunkDims h + kLaneDims t + 4 j + {0, 1},
// a2 = + {2, 3}.
struct q_frags {
  unsigned a0[kDChunks][kKSteps], a2[kDChunks][kKSteps];
};

struct softmax_lane {
  float m;                      // running max of head g (log2 units), common to the lane's quad
  float l;                      // this lane's share of sum 2^(s - m)
  float acc[kOutTiles][2];      // head g's acc at head-dims kChunkDims h + kLaneDims t + 2 p + {0, 1},
                                // tile h * kOutPerChunk + p
};

#if KV_FP8
__device__ __forceinline__ void dequant(unsigned w, unsigned &h01, unsigned &h23) {
  if constexpr (DEQUANT) tune::e4m3x4_to_f16x2_shifted(w, h01, h23);
  else tune::e4m3x4_to_f16x2(w, h01, h23);
}
#endif

// A q pair as the mma reads it: fp16 for the fp8 path's fp16 mma, bf16 as given otherwise.
__device__ __forceinline__ unsigned q_pair(unsigned w) {
  if constexpr (KV_FP8) return tune::pack_f16x2(bf16_lo(w), bf16_hi(w));
  else return w;
}

// c += A B on 8 rows, in the cache's mma type.
__device__ __forceinline__ void mma_rows8(float (&c)[2], unsigned a0, unsigned a2, unsigned b0, unsigned b1) {
  if constexpr (KV_FP8) tune::mma_f16_16816_rows8(c, a0, a2, b0, b1);
  else tune::mma_bf16_16816_rows8(c, a0, a2, b0, b1);
}

// The B pairs of k-step j of a lane's 16 bytes: (dims 4 j, 4 j + 1) and (4 j + 2, 4 j + 3).
__device__ __forceinline__ void k_pairs(const kv_vec &x, int j, unsigned &b0, unsigned &b1) {
#if KV_FP8
  dequant(x.w[j], b0, b1);
#else
  b0 = x.w[2 * j];
  b1 = x.w[2 * j + 1];
#endif
}

// Query head g of the block (zeros for g >= kHeads: rows that only pad the fragment).
__device__ __forceinline__ q_frags load_q(const bf16 *__restrict__ q, const split_ctx &c, long long q_stride_b,
                                          long long q_stride_h) {
  const int g = c.lane / 4, t = c.lane % 4;
  q_frags f;
#pragma unroll
  for (int h = 0; h < kDChunks; ++h) {
    unsigned w[kLaneDims / 2] = {};  // q's bf16 pairs at head dims kChunkDims h + kLaneDims t + 0 ..
    if (g < kHeads) {
      const uint4 *p = reinterpret_cast<const uint4 *>(q + c.b * q_stride_b + (c.hq0 + g) * q_stride_h +
                                                       kChunkDims * h + kLaneDims * t);
#pragma unroll
      for (int i = 0; i < kLaneDims / 8; ++i) {
        const uint4 v = p[i];
        w[4 * i] = v.x; w[4 * i + 1] = v.y; w[4 * i + 2] = v.z; w[4 * i + 3] = v.w;
      }
    }
#pragma unroll
    for (int j = 0; j < kKSteps; ++j) {
      f.a0[h][j] = q_pair(w[2 * j]);
      f.a2[h][j] = q_pair(w[2 * j + 1]);
    }
  }
  return f;
}

// First key (within the sequence) of this warp's part of tile t.
__device__ __forceinline__ int warp_key0(const split_ctx &c, int t) { return c.row0 + t * BLOCK_N + c.warp * kWarpKeys; }

// Key 16 s + 8 r + g of this warp's part of tile t, clamped to the split's last row (the rows past
// the end are loaded from a row of the sequence's own pages; their scores are -inf).
__device__ __forceinline__ int lane_row(const split_ctx &c, int t, int s, int r) {
  return min(warp_key0(c, t) + 16 * s + 8 * r + c.lane / 4, c.row_end - 1);
}

// Block-table entries of this lane's rows of tile t: one look-up for a tile inside a page.
__device__ __forceinline__ void page_stage(const split_ctx &c, int t, tile_pages &pages) {
  if (c.tile_in_page) {
    const int p = __ldg(c.bt + c.page.div(c.row0 + t * BLOCK_N));
#pragma unroll
    for (int s = 0; s < kSteps; ++s) pages.p[s][0] = pages.p[s][1] = p;
  } else {
#pragma unroll
    for (int s = 0; s < kSteps; ++s)
#pragma unroll
      for (int r = 0; r < 2; ++r) pages.p[s][r] = __ldg(c.bt + c.page.div(lane_row(c, t, s, r)));
  }
}

// f(s, r, off) for each of this lane's rows (step s, half r) of tile t, off the row's element
// offset from c.k / c.v (its head-dim chunk h at off + kChunkDims h).
template <typename F>
__device__ __forceinline__ void for_each_row(const split_ctx &c, int t, const tile_pages &pages, F f) {
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int r = 0; r < 2; ++r) f(s, r, row_offset(c, lane_row(c, t, s, r), pages.p[s][r]));
}

// Issue this lane's K and V loads of tile t into registers; nothing waits here.
__device__ __forceinline__ void load_stage(const split_ctx &c, int t, const tile_pages &pages, tile_regs &x) {
  for_each_row(c, t, pages, [&](int s, int r, long long off) {
#pragma unroll
    for (int h = 0; h < kDChunks; ++h) {
      x.k[s][r][h] = g2r_load_kv(c.k + off + kChunkDims * h);
      x.v[s][r][h] = g2r_load_kv(c.v + off + kChunkDims * h);
    }
#if KV_SCALE_PAGE
    x.ks[s][r] = __ldg(k_scale_of(c, pages.p[s][r]));
    x.vs[s][r] = __ldg(v_scale_of(c, pages.p[s][r]));
#endif
  });
}

#if KV_RING >= 2
// KV_RING: slot `slot` of this lane's ring holds its K vectors, then its V vectors, of one tile,
// 16 bytes each at stride kThreads * 16 (as the row-group path's ring: a lane reads back only what
// it copied, so cp.async.wait_group orders it and no barrier is needed). KV_SCALE_PAGE: the rows'
// K, then V scales of every slot follow, 4 bytes each, same order.
constexpr int kVecsPerTile = kSteps * 2 * kDChunks;  // K (or V) vectors of a lane per tile
constexpr int kRingKvBytes = KV_RING * 2 * kVecsPerTile * kThreads * 16;

__device__ __forceinline__ unsigned ring_vec_addr(unsigned ring, int slot, int kv, int s, int r, int h) {
  const int j = (slot * 2 + kv) * kVecsPerTile + (s * 2 + r) * kDChunks + h;
  return ring + (j * kThreads + threadIdx.x) * 16;
}
__device__ __forceinline__ unsigned ring_scale_addr(unsigned ring, int slot, int kv, int s, int r) {
  const int j = (slot * 2 + kv) * kSteps * 2 + s * 2 + r;
  return ring + kRingKvBytes + (j * kThreads + threadIdx.x) * 4;
}

__device__ __forceinline__ void ring_load_stage(const split_ctx &c, int t, const tile_pages &pages, unsigned ring,
                                                int slot) {
  for_each_row(c, t, pages, [&](int s, int r, long long off) {
#pragma unroll
    for (int h = 0; h < kDChunks; ++h) {
      tune::g2s_copy16(ring_vec_addr(ring, slot, 0, s, r, h), c.k + off + kChunkDims * h);
      tune::g2s_copy16(ring_vec_addr(ring, slot, 1, s, r, h), c.v + off + kChunkDims * h);
    }
#if KV_SCALE_PAGE
    tune::g2s_copy4(ring_scale_addr(ring, slot, 0, s, r), k_scale_of(c, pages.p[s][r]));
    tune::g2s_copy4(ring_scale_addr(ring, slot, 1, s, r), v_scale_of(c, pages.p[s][r]));
#endif
  });
}

// Ring slot -> registers (the copies of that slot must have completed: cp_async_wait).
__device__ __forceinline__ void ring_read_stage(unsigned ring, int slot, tile_regs &x) {
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int h = 0; h < kDChunks; ++h) {
        tune::s2r_load16(ring_vec_addr(ring, slot, 0, s, r, h), x.k[s][r][h].w);
        tune::s2r_load16(ring_vec_addr(ring, slot, 1, s, r, h), x.v[s][r][h].w);
      }
#if KV_SCALE_PAGE
      x.ks[s][r] = tune::s2r_load_f32(ring_scale_addr(ring, slot, 0, s, r));
      x.vs[s][r] = tune::s2r_load_f32(ring_scale_addr(ring, slot, 1, s, r));
#endif
    }
}
#endif

// KV_SCALE_PAGE: the scale of this lane's score column e of half r (key 8 r + 2 t + e of a step),
// given each lane's row scale (key 8 r + g): lane 4 (2 t + e) holds it.
__device__ __forceinline__ float column_scale(float row_scale, int e) {
  return __shfl_sync(0xffffffffu, row_scale, 4 * (2 * (threadIdx.x % 4) + e));
}

// Head g's scores of step s of the tile in log2 units, [half][column e: key 16 s + 8 r + 2 t + e];
// -inf for keys at or past `valid` (the warp's keys left in the split). Reads only step s of x.
__device__ __forceinline__ void score_step(const split_ctx &c, const q_frags &qf, const tile_regs &x, int s, int valid,
                                           float (&sc)[2][2]) {
  const int t = c.lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float d[2] = {0.f, 0.f};
#pragma unroll
    for (int h = 0; h < kDChunks; ++h)
#pragma unroll
      for (int j = 0; j < kKSteps; ++j) {
        unsigned b0, b1;
        k_pairs(x.k[s][r][h], j, b0, b1);
        mma_rows8(d, qf.a0[h][j], qf.a2[h][j], b0, b1);
      }
#pragma unroll
    for (int e = 0; e < 2; ++e) {
#if KV_SCALE_PAGE
      const float qk_scale = c.q_scale * column_scale(x.ks[s][r], e);
#else
      const float qk_scale = c.q_scale;
#endif
      sc[r][e] = 16 * s + 8 * r + 2 * t + e < valid ? d[e] * qk_scale : neg_inf();
    }
  }
}

// The tile's scores, [step][half][column]: score_step of every step.
__device__ __forceinline__ void score_stage(const split_ctx &c, const q_frags &qf, const tile_regs &x, int valid,
                                            float (&sc)[kSteps][2][2]) {
#pragma unroll
  for (int s = 0; s < kSteps; ++s) score_step(c, qf, x, s, valid, sc[s]);
}

// Online-softmax step of head g over the tile's scores (turned into weights 2^(s - m) in place).
__device__ __forceinline__ void softmax_stage(float (&sc)[kSteps][2][2], softmax_lane &st) {
  float m_tile = neg_inf();
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int r = 0; r < 2; ++r) m_tile = fmaxf(m_tile, fmaxf(sc[s][r][0], sc[s][r][1]));
  m_tile = fmaxf(m_tile, __shfl_xor_sync(0xffffffffu, m_tile, 1));
  m_tile = fmaxf(m_tile, __shfl_xor_sync(0xffffffffu, m_tile, 2));
  const float m_new = fmaxf(st.m, m_tile);
  const float shift = safe_shift(m_new);
  const float alpha = exp2_approx(st.m - shift);  // 0 on the first tile (m = -inf)
  st.m = m_new;
  float l = st.l * alpha;
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        sc[s][r][e] = exp2_approx(sc[s][r][e] - shift);
        l += sc[s][r][e];
      }
  st.l = l;
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n) {
    st.acc[n][0] *= alpha;
    st.acc[n][1] *= alpha;
  }
}

// acc += P V over step s of the tile, p its weights [half][column] (KV_SCALE_PAGE: each key's
// weight times its V scale / v_ref). Reads only step s of x.
__device__ __forceinline__ void pv_step(const split_ctx &c, const float (&p)[2][2], const tile_regs &x, int s,
                                        softmax_lane &st) {
  float w[2][2];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
#if KV_SCALE_PAGE
      w[r][e] = p[r][e] * (column_scale(x.vs[s][r], e) * c.v_ref_inv);
#else
      w[r][e] = p[r][e];
#endif
    }
#if KV_FP8
  const unsigned a0 = tune::pack_f16x2(w[0][0], w[0][1]);
  const unsigned a2 = tune::pack_f16x2(w[1][0], w[1][1]);
#pragma unroll
  for (int h = 0; h < kDChunks; ++h)
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      unsigned lo0, hi0, lo1, hi1;  // pairs 2 w and 2 w + 1 of keys g (half 0) and 8 + g (half 1)
      dequant(x.v[s][0][h].w[w], lo0, hi0);
      dequant(x.v[s][1][h].w[w], lo1, hi1);
      tune::mma_f16_16816_rows8(st.acc[h * 8 + 2 * w], a0, a2, tune::movmatrix_trans(lo0), tune::movmatrix_trans(lo1));
      tune::mma_f16_16816_rows8(st.acc[h * 8 + 2 * w + 1], a0, a2, tune::movmatrix_trans(hi0),
                                tune::movmatrix_trans(hi1));
    }
#else
  unsigned a0[2], a2[2];  // P's bf16 terms [hi, lo] of half 0 and of half 1
  tune::split_bf16x2(w[0][0], w[0][1], a0[0], a0[1]);
  tune::split_bf16x2(w[1][0], w[1][1], a2[0], a2[1]);
#pragma unroll
  for (int h = 0; h < kDChunks; ++h)
#pragma unroll
    for (int w = 0; w < 4; ++w) {  // pair w of keys g (half 0) and 8 + g (half 1): output tile h * 4 + w
      const unsigned b0 = tune::movmatrix_trans(x.v[s][0][h].w[w]), b1 = tune::movmatrix_trans(x.v[s][1][h].w[w]);
      tune::mma_bf16_16816_rows8(st.acc[h * kOutPerChunk + w], a0[0], a2[0], b0, b1);
      tune::mma_bf16_16816_rows8(st.acc[h * kOutPerChunk + w], a0[1], a2[1], b0, b1);
    }
#endif
}

// acc += P V over the tile: pv_step of every step.
__device__ __forceinline__ void pv_stage(const split_ctx &c, const float (&p)[kSteps][2][2], const tile_regs &x,
                                         softmax_lane &st) {
#pragma unroll
  for (int s = 0; s < kSteps; ++s) pv_step(c, p[s], x, s, st);
}

__device__ __forceinline__ void compute_stage(const split_ctx &c, const q_frags &qf, const tile_regs &x, int valid,
                                              softmax_lane &st) {
  float sc[kSteps][2][2];
  score_stage(c, qf, x, valid, sc);
  softmax_stage(sc, st);
  pv_stage(c, sc, x, st);
}

// Head g's state of this warp into shared memory (l summed over the quad first), then the block merge.
__device__ __forceinline__ void epilogue(const split_ctx &c, softmax_lane &st, float *__restrict__ s_acc,
                                         float *__restrict__ s_m, float *__restrict__ s_l, bf16 *__restrict__ o,
                                         float *__restrict__ partial, int B, int HQ, long long o_stride_b,
                                         long long o_stride_h) {
  const int g = c.lane / 4, t = c.lane % 4;
  st.l += __shfl_xor_sync(0xffffffffu, st.l, 1);
  st.l += __shfl_xor_sync(0xffffffffu, st.l, 2);
  if (g < kHeads) {
    float *dst = s_acc + (c.warp * kHeads + g) * kD + kLaneDims * t;
#pragma unroll
    for (int h = 0; h < kDChunks; ++h)
#pragma unroll
      for (int p = 0; p < kOutPerChunk; ++p)
        *reinterpret_cast<float2 *>(dst + kChunkDims * h + 2 * p) =
            make_float2(st.acc[h * kOutPerChunk + p][0], st.acc[h * kOutPerChunk + p][1]);
    if (t == 0) {
      s_m[c.warp * kHeads + g] = st.m;
      s_l[c.warp * kHeads + g] = st.l;
    }
  }
  __syncthreads();
  block_merge_store(c, s_acc, s_m, s_l, o, partial, B, HQ, o_stride_b, o_stride_h);
}

// This thread map's stages, for decode.cuh's run_tiles.
struct path {
  typedef tile_pages pages_t;
  typedef tile_regs tile_t;
  static __device__ __forceinline__ void page_stage(const split_ctx &c, int t, pages_t &p) { mma::page_stage(c, t, p); }
  static __device__ __forceinline__ void load_stage(const split_ctx &c, int t, const pages_t &p, tile_t &x) {
    mma::load_stage(c, t, p, x);
  }
#if KV_RING >= 2
  static __device__ __forceinline__ void ring_load_stage(const split_ctx &c, int t, const pages_t &p, unsigned ring,
                                                         int slot) {
    mma::ring_load_stage(c, t, p, ring, slot);
  }
  static __device__ __forceinline__ void ring_read_stage(unsigned ring, int slot, tile_t &x) {
    mma::ring_read_stage(ring, slot, x);
  }
#endif
};

// The split kernel's body (attn_decode_split with MMA 1); s_acc, s_m, s_l as the row-group path's.
__device__ __forceinline__ void split(DECODE_PARAMS, float *__restrict__ s_acc, float *__restrict__ s_m,
                                      float *__restrict__ s_l) {
  const split_ctx c = split_setup(k_cache, v_cache, DECODE_SCALE_VALS block_table, seq_lens, HKV, max_pages, page_size,
                                  kv_stride_page, kv_stride_row, kv_stride_h, scale_log2, kLaneDims * (threadIdx.x % 4));
  const q_frags qf = load_q(q, c, q_stride_b, q_stride_h);
  softmax_lane st;
  st.m = neg_inf();
  st.l = 0.f;
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n) st.acc[n][0] = st.acc[n][1] = 0.f;
  const int valid0 = c.row_end - warp_key0(c, 0);  // keys of the warp's tile 0 left in the split
  run_tiles<path>(c, [&](int t, const tile_regs &x) { compute_stage(c, qf, x, valid0 - t * BLOCK_N, st); });
  epilogue(c, st, s_acc, s_m, s_l, o, partial, B, HQ, o_stride_b, o_stride_h);
}

}  // namespace mma
}  // namespace decode
