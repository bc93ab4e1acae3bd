// decode_tma.cuh: decode_mma.cuh's split kernel fed by bulk tensor copies (KV_TMA 1). A paged cache
// read one head at a time is rows of D * kKvBytes bytes, HKV times that apart; per-lane 16-byte
// loads of that pattern (bf16) stream at 84-88 % of the copy bandwidth on an H200, tensor copies of
// one page's rows at 91-93 %, as fast as a contiguous cache (tools/check/decode_stream.cu,
// docs/benchmarks.md "Paged decode: what limits it"). Included by decode.cuh only (after
// decode_mma.cuh).
//
// Block: WARPS consumer warps (decode_mma.cuh's thread map and math), then one producer warp. The
// producer fills a KV_RING-deep ring of tiles in dynamic shared memory, slot = [K rows][V rows], each
// BLOCK_N rows of D elements (bf16 or e4m3) in key order. A tile is BLOCK_N / R boxes of
// R = min(page_size, BLOCK_N) rows of one page, one tensor copy of K and one of V per box (lane j
// issues box j), completing on the slot's `full` barrier. A consumer warp reads its keys of the slot
// step by step (16 keys, the lane pattern of decode_mma.cuh's loads, from shared memory) as its math
// needs them, K for the scores, then V for P V, and releases the slot on its `empty` barrier.
//
// The maps (k_map, v_map) are built by the caller over the cache as packed [B * max_pages][page_size]
// [HKV][D] (recipes/attention/decode_tma.lua). A cache they do not describe still gives the right
// result: the producer's lanes copy a tile with cp.async (16 bytes each, completing on the same
// barrier) when the strides are not the packed ones or when a page of the tile lies past the maps'
// B * max_pages pages (an engine's pool larger than the batch's pages).
// Requirements (static_asserts, recipe `requires`): decode_mma.cuh's, KV_RING >= 2, an fp8 cache's
// scales per head (KV_SCALE_PAGE 0: they stay in split_ctx, the ring holds K and V only),
// page_size % BLOCK_N == 0 or BLOCK_N % page_size == 0 (a box never leaves its page).
#pragma once

#include "common/mbarrier.cuh"

namespace decode {
namespace tma {

constexpr int kRowBytes = kD * kKvBytes;                // one K (or V) row of one head
constexpr int kTileBytes = BLOCK_N * kRowBytes;         // K (or V) rows of a tile
constexpr int kSlotBytes = 2 * kTileBytes;              // a ring slot: K rows, then V rows
constexpr int kChunksPerRow = kRowBytes / 16;

static_assert(KV_RING >= 2 && KV_RING * kSlotBytes <= 200 * 1024, "the ring must fit shared memory");

// The ring's barriers: full[s] passes when slot s holds its tile (one expect_tx arrival by lane 0,
// one cp.async arrival per producer lane, the tensor copies' bytes); empty[s] when every consumer
// warp has copied it out.
struct ring_bars {
  unsigned long long full[KV_RING], empty[KV_RING];
};

// Page and first row in it of box `box` (of `rows` rows) of the tile starting at sequence row r0.
// Boxes past the split's end are clamped to the box of its last row (a page of the sequence: the
// scores mask those rows).
struct box_src {
  int page, in_page;
};
__device__ __forceinline__ box_src box_of(const split_ctx &c, int r0, int box, int rows) {
  const int last = (c.row_end - 1) / rows * rows;
  const int r = min(r0 + box * rows, last);
  const int pi = c.page.div(r);
  return {__ldg(c.bt + pi), r - pi * c.page.d};
}

// Tile t into slot `slot` (its empty phase passed): tensor copies where the maps describe the cache
// (packed strides, every page of the tile below map_pages), else cp.async of every 16 bytes.
__device__ __forceinline__ void produce_tile(const split_ctx &c, int t, unsigned slot_addr, unsigned full, bool packed,
                                             int map_pages, int hkv, const tune::tensormap &k_map,
                                             const tune::tensormap &v_map) {
  const int rows = min(c.page.d, BLOCK_N), boxes = BLOCK_N / rows, r0 = c.row0 + t * BLOCK_N;
  bool mapped = packed;
  for (int box = c.lane; box < boxes && mapped; box += 32) mapped = box_of(c, r0, box, rows).page < map_pages;
  mapped = __all_sync(0xffffffffu, mapped);
  if (c.lane == 0) tune::mbar_arrive_expect_tx(full, mapped ? kSlotBytes : 0);
  __syncwarp();
  if (mapped) {
    for (int box = c.lane; box < boxes; box += 32) {
      const box_src src = box_of(c, r0, box, rows);
      const unsigned dst = slot_addr + box * rows * kRowBytes;
      tune::tma_load_4d(dst, k_map, 0, hkv, src.in_page, src.page, full);
      tune::tma_load_4d(dst + kTileBytes, v_map, 0, hkv, src.in_page, src.page, full);
    }
  } else {
    for (int i = c.lane; i < BLOCK_N * kChunksPerRow; i += 32) {
      const int row = i / kChunksPerRow, chunk = i % kChunksPerRow;
      const int r = min(r0 + row, c.row_end - 1);
      const long long off = row_offset(c, r, __ldg(c.bt + c.page.div(r))) + chunk * (16 / kKvBytes);
      const unsigned dst = slot_addr + row * kRowBytes + chunk * 16;
      tune::g2s_copy16(dst, c.k + off);
      tune::g2s_copy16(dst + kTileBytes, c.v + off);
    }
  }
  tune::cp_async_mbar_arrive_noinc(full);
}

// The producer warp's loop over the split's tiles.
__device__ __forceinline__ void produce(const split_ctx &c, unsigned ring, ring_bars &bars, bool packed, int map_pages,
                                        int hkv, const tune::tensormap &k_map, const tune::tensormap &v_map) {
#pragma unroll 1
  for (int t = 0; t < c.n_tiles; ++t) {
    const int slot = t % KV_RING;
    tune::mbar_wait(tune::smem_u32(&bars.empty[slot]), ((t / KV_RING) & 1) ^ 1);
    produce_tile(c, t, ring + slot * kSlotBytes, tune::smem_u32(&bars.full[slot]), packed, map_pages, hkv, k_map,
                 v_map);
  }
}

// This lane's K (KV 0) or V (KV 1) bytes of step s of a slot into x: as mma::load_stage reads them
// from the cache. Step by step, so that a warp holds one step's K or V in registers, not its tile.
template <int KV>
__device__ __forceinline__ void read_step(const split_ctx &c, unsigned slot_addr, int s, mma::tile_regs &x) {
  const int g = c.lane / 4, tq = c.lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = c.warp * mma::kWarpKeys + 16 * s + 8 * r + g;
    const unsigned row = slot_addr + KV * kTileBytes + key * kRowBytes + mma::kLaneDims * tq * kKvBytes;
#pragma unroll
    for (int h = 0; h < mma::kDChunks; ++h)
      tune::s2r_load16(row + mma::kChunkDims * h * kKvBytes, (KV ? x.v[s][r][h] : x.k[s][r][h]).w);
  }
}

// One tile of the consumer warp from its slot: scores step by step, the softmax step, P V step by
// step; then the slot is released.
__device__ __forceinline__ void consume_tile(const split_ctx &c, const mma::q_frags &qf, unsigned slot_addr,
                                             unsigned empty, int valid, mma::softmax_lane &st) {
  mma::tile_regs x;
  float sc[mma::kSteps][2][2];
#pragma unroll
  for (int s = 0; s < mma::kSteps; ++s) {
    read_step<0>(c, slot_addr, s, x);
    mma::score_step(c, qf, x, s, valid, sc[s]);
  }
  mma::softmax_stage(sc, st);
#pragma unroll
  for (int s = 0; s < mma::kSteps; ++s) {
    read_step<1>(c, slot_addr, s, x);
    mma::pv_step(c, sc[s], x, s, st);
  }
  __syncwarp();
  if (c.lane == 0) tune::mbar_arrive(empty);
}

// The split kernel's body (attn_decode_split with KV_TMA 1); s_acc, s_m, s_l as decode_mma.cuh's.
__device__ __forceinline__ void split(DECODE_PARAMS, const tune::tensormap &k_map, const tune::tensormap &v_map,
                                      float *__restrict__ s_acc, float *__restrict__ s_m, float *__restrict__ s_l) {
  extern __shared__ __align__(128) unsigned char tma_ring[];
  __shared__ __align__(8) ring_bars bars;
  const unsigned ring = tune::smem_u32(tma_ring);
  if (threadIdx.x == 0) {
    for (int s = 0; s < KV_RING; ++s) {
      tune::mbar_init(tune::smem_u32(&bars.full[s]), 1 + 32);
      tune::mbar_init(tune::smem_u32(&bars.empty[s]), WARPS);
    }
    tune::fence_mbar_init();
  }
  __syncthreads();
  const bool producer = threadIdx.x >= kThreads;
  const split_ctx c = split_setup(k_cache, v_cache, DECODE_SCALE_VALS block_table, seq_lens, HKV, max_pages, page_size,
                                  kv_stride_page, kv_stride_row, kv_stride_h, scale_log2,
                                  producer ? 0 : mma::kLaneDims * (threadIdx.x % 4));
  if (producer) {
    const int hkv = BLOCK_ORDER == 0 ? blockIdx.y % HKV : blockIdx.y / SPLITS;
    const bool packed = kv_stride_h == kD && kv_stride_row == (long long)HKV * kD &&
                        kv_stride_page == (long long)page_size * HKV * kD;
    produce(c, ring, bars, packed, B * max_pages, hkv, k_map, v_map);
    __syncthreads();  // the consumers' epilogue barrier; the merge is theirs
    return;
  }
  const mma::q_frags qf = mma::load_q(q, c, q_stride_b, q_stride_h);
  mma::softmax_lane st;
  st.m = neg_inf();
  st.l = 0.f;
#pragma unroll
  for (int n = 0; n < mma::kOutTiles; ++n) st.acc[n][0] = st.acc[n][1] = 0.f;
  const int valid0 = c.row_end - mma::warp_key0(c, 0);
#pragma unroll 1
  for (int t = 0; t < c.n_tiles; ++t) {
    const int slot = t % KV_RING;
    tune::mbar_wait(tune::smem_u32(&bars.full[slot]), (t / KV_RING) & 1);
    consume_tile(c, qf, ring + slot * kSlotBytes, tune::smem_u32(&bars.empty[slot]), valid0 - t * BLOCK_N, st);
  }
  mma::epilogue(c, st, s_acc, s_m, s_l, o, partial, B, HQ, o_stride_b, o_stride_h);
}

}  // namespace tma
}  // namespace decode
