// fp8_mainloop_sm90.cuh: the mainloop of Hopper's FP8 GEMMs (sm_90a): wgmma e4m3 x e4m3 -> fp32 from
// 128-byte-swizzled shared memory that a TMA producer fills, scaled to a bf16 output. Its kernels:
// gemm/fp8_sm90.cuh (one GEMM) and gemm/grouped_fp8_sm90.cuh (one per expert, Mixture-of-Experts), each
// with a tile source (Tile, below) that says where a tile's rows, weights and scales are.
//
//   c[m][n] = bf16( sum_k sa(m, k) * sb(n, k) * a[m][k] * b[n][k] ),  a [M][K], b [N][K] e4m3 (K-major,
//   the only layout fp8 wgmma reads: b is stored as nn.Linear keeps its weight), c [M][N] bf16.
// SCALE_MODE picks sa and sb (f32, device memory, so that an engine's scales never leave the GPU):
//   0 tensor  sa = scale_a[0], sb = scale_b[0]                               (applied in the epilogue)
//   1 row     sa = scale_a[m] ([M]), sb = scale_b[n] ([N]), per token / channel (epilogue)
//   2 block   sa = scale_a[m * KB + k / 128] ([M][KB], 1 x 128 blocks), sb = scale_b[(n / 128) * KB +
//             k / 128] ([ceil(N / 128)][KB], 128 x 128 blocks), KB = ceil(K / 128): DeepGEMM's scales,
//             applied between K blocks (below)
//
// A ring slot holds one 128-wide K block: an a tile [BLOCK_M][128] and a b tile [BLOCK_N][128], rows
// of 128 bytes whose 16-byte chunk c lies at c ^ (row % 8) (the maps' 128-byte swizzle), so a k32
// step is 32 bytes along a row, as a bf16 k16 step is in gemm_sm90.cuh (common/wgmma.cuh descriptors).
// Warp roles: warpgroup CONSUMERS is the producer (one thread issues the TMA of a slot once its
// `empty` barrier says the consumers released it; the slot's `full` barrier completes on the bytes),
// warpgroups 0 .. CONSUMERS - 1 compute BLOCK_M / CONSUMERS rows each (MT = 1 or 2 m64 tiles).
// setmaxnreg moves registers from the producer to the consumers.
//
// Accumulation. FP8 wgmma does not accumulate in full fp32 (the DeepSeek-V3 report measures ~14
// bits kept), so by default (FAST_ACCUM 0) each K block is accumulated in a fresh wgmma accumulator
// `part` (4 k32 steps), then promoted into the fp32 register accumulator `acc`:
//   acc += part (tensor, row: their scales do not depend on k) or acc += sa * sb * part (block).
// PART_BUFFERS 1: the consumer waits for each block's wgmma before promoting it (wgmma_wait<0>);
// with CONSUMERS 2 the other warpgroup's wgmma fill that gap. Two accumulator sets per thread: MT *
// BLOCK_N fp32 registers (at most 192, recipes/gemm/shared/fp8.lua). PART_BUFFERS 2: two `part` sets used in
// turn, so that block kb + 1's batch is issued before block kb's is waited for and promoted: the
// tensor cores keep working through the promotion, at the cost of a third set (3 * MT * BLOCK_N / 2
// registers: 128-column tiles of one m64 tile per warpgroup). Block mode loads a block's scales one
// block (PART_BUFFERS 1) or two to three blocks (2) before it is promoted, from row pointers set
// per tile, so their latency is not waited for either.
// Row scales reach the epilogue through shared memory: when a warpgroup starts a tile it copies the
// tile's BLOCK_N scale_b and its own rows' scale_a there with 4-byte cp.async, which complete while
// the tile's K loop runs; the epilogue then reads them without waiting on global loads.
// FAST_ACCUM 1 (tensor and row only): one accumulator
// over all of K, one batch kept in flight, as cuBLAS's "fast accumulation" (torch._scaled_mm
// use_fast_accum=True): MT * BLOCK_N / 2 registers, fewer waits, less precision at large K (the
// recipe's tolerance is what says whether it is good enough).
//
// Tunables: BLOCK_M 64 | 128, BLOCK_N 32 | 64 | 128 | 160 | 192 | 256, CONSUMERS 1 | 2, STAGES 2..6,
// FAST_ACCUM 0 | 1 [0], PART_BUFFERS 1 | 2 [1], PERSISTENT 0 | 1 [0] (a grid of at most one wave;
// block i takes tiles i, i + gridDim.x, ...), RASTER [1] (tile order, common/tile_order.cuh),
// RING_POS 0 | 1 [0] (how a K block's ring slot and parity are found: RingCursor below).
// Tails: N % 16 == 0, K % 16 == 0 (16-byte rows for TMA), K >= 128. The maps' boxes are
// {128, min(BLOCK_M, a_rows)} (a) and {128, min(BLOCK_N, b_rows)} (b): TMA zero-fills what lies past
// the tensor in a box and the transaction counts the box whole; rows of a slot past a clipped box
// keep stale bytes, which reach only rows (columns) of c that are never stored. A K % 128 tail is the
// last block's zero-filled columns (block mode: the last scale column).
#pragma once

#include <cuda_bf16.h>

#include "common/bf16.cuh"
#include "common/cp_async.cuh"
#include "common/frag_store.cuh"
#include "common/mbarrier.cuh"
#include "common/smem_io.cuh"
#include "common/tile_order.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"
#include "common/wgmma_ops_fp8.cuh"

#if !defined(SCALE_MODE) || !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(CONSUMERS) || !defined(STAGES)
#error "fp8_mainloop_sm90.cuh needs -D SCALE_MODE BLOCK_M BLOCK_N CONSUMERS STAGES"
#endif
#ifndef FAST_ACCUM
#define FAST_ACCUM 0
#endif
#ifndef PART_BUFFERS
#define PART_BUFFERS 1
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif
#ifndef RASTER
#define RASTER 1
#endif
#ifndef RING_POS
#define RING_POS 0
#endif

typedef __nv_bfloat16 bf16;


namespace fp8gemm {

enum { kScaleTensor = 0, kScaleRow = 1, kScaleBlock = 2 };

constexpr int kMode = SCALE_MODE;
constexpr int kBM = BLOCK_M, kBN = BLOCK_N, kBK = 128;  // kBK: e4m3 per 128-byte row = the scale block
constexpr int kCons = CONSUMERS;
constexpr int kThreads = (kCons + 1) * 128;
constexpr int kStages = STAGES;
constexpr int kWgRows = kBM / kCons;  // rows per consumer warpgroup
constexpr int kMT = kWgRows / 64;     // wgmma m64 tiles per consumer warpgroup
constexpr int kAcc = kBN / 2;         // fp32 accumulators per thread per m64 tile
constexpr bool kFast = FAST_ACCUM != 0;
constexpr int kParts = PART_BUFFERS;  // wgmma part accumulator sets (FAST_ACCUM 0)
constexpr bool kOneScaleBlock = 128 % kBN == 0;  // a tile's columns lie in one 128-column scale block
constexpr int kABytes = kBM * 128;
constexpr int kBBytes = kBN * 128;
constexpr int kStageBytes = kABytes + kBBytes;
constexpr int kBarBytes = 2 * kStages * 8;                             // full, empty
constexpr int kRowScaleFloats = kBN + kWgRows;  // per consumer warpgroup: scale_b of the tile, scale_a of its rows
constexpr int kRowScaleBytes = kCons * kRowScaleFloats * 4;  // allocated in every mode, used in row mode
constexpr int kSmemBytes = 1024 + kStages * kStageBytes + kBarBytes + kRowScaleBytes;  // + alignment slack
// setmaxnreg budgets: (kCons + 1) * 128 threads x the register cap at entry hold the totals after
constexpr int kConsumerRegs = kCons == 1 ? 240 : 232;
constexpr int kProducerRegs = kCons == 1 ? 56 : 40;

static_assert(kMode == kScaleTensor || kMode == kScaleRow || kMode == kScaleBlock, "SCALE_MODE must be 0, 1 or 2");
static_assert(kBM == 64 || kBM == 128, "BLOCK_M must be 64 or 128");
static_assert(kBN == 32 || kBN == 64 || kBN == 128 || kBN == 160 || kBN == 192 || kBN == 256,
              "BLOCK_N must be 32, 64, 128, 160, 192 or 256");
static_assert(kCons == 1 || kCons == 2, "CONSUMERS must be 1 or 2");
static_assert(kWgRows % 64 == 0 && (kMT == 1 || kMT == 2), "each consumer warpgroup owns 64 or 128 rows");
static_assert(kStages >= 2 && kStages <= 6, "STAGES must be 2..6");
static_assert(FAST_ACCUM == 0 || FAST_ACCUM == 1, "FAST_ACCUM must be 0 or 1");
static_assert(!(kFast && kMode == kScaleBlock), "block scales are applied per K block: FAST_ACCUM needs SCALE_MODE 0 or 1");
static_assert(kParts == 1 || kParts == 2, "PART_BUFFERS must be 1 or 2");
static_assert(!(kFast && kParts == 2), "FAST_ACCUM has no part accumulators: PART_BUFFERS 1");
static_assert((kFast ? 1 : 1 + kParts) * kMT * kAcc <= 192, "accumulators over 192 fp32 registers per thread");
static_assert(kBN % 32 == 0, "the epilogue stores groups of four 8-column chunks");
static_assert(kSmemBytes <= 227 * 1024, "shared memory over the 227 KiB per-block limit of sm_90");
static_assert(RING_POS == 0 || RING_POS == 1, "RING_POS must be 0 or 1");

// A K block's place in the ring: its slot and the parity of the slot's use.
struct RingPos {
  int slot;
  unsigned phase;
};

// RingCursor: where the K blocks of all of a block's tiles sit in the ring, in one of two forms
// (RING_POS), each call site naming a block both ways: by `it`, its index over the block's K
// blocks, and by c, its distance from the cursor (|c| <= kStages).
//   0: from the index, slot it % kStages and parity (it / kStages) & 1; the cursor holds nothing.
//   1: carried: the cursor keeps the slot and parity of a block (step() moves it on), and a block c
//      away wraps at most once: no division.
// ptxas schedules the two forms differently around the promotion, and which one is faster depends
// on the scale mode and the tile, hence a tunable.
struct RingCursor {
  int s = 0;
  unsigned ph = 0;
  __device__ __forceinline__ RingPos at(int it, int c) const {
    if constexpr (RING_POS == 0) {
      return RingPos{it % kStages, (unsigned)(it / kStages) & 1u};
    } else {
      const int t = s + c;
      if (t >= kStages) return RingPos{t - kStages, ph ^ 1u};
      if (t < 0) return RingPos{t + kStages, ph ^ 1u};
      return RingPos{t, ph};
    }
  }
  __device__ __forceinline__ void step(int n) {  // n <= kStages
    if constexpr (RING_POS == 1) {
      s += n;
      if (s >= kStages) {
        s -= kStages;
        ph ^= 1u;
      }
    }
  }
};

// One output tile, as a tile source names it. A tile source (the kernel file's: DenseTiles in
// fp8_sm90.cuh, ExpertTiles in grouped_fp8_sm90.cuh) has
//   tiles, k_blocks   the tiles of the launch and the 128-wide K blocks of each (the last may be partial)
//   a_rows, b_rows    the rows of the tensor maps' views of a and b (the boxes are clipped to them)
//   N                 the columns of c
//   step()            the distance between a block's tiles (gridDim.x with PERSISTENT, else tiles)
//   at(tile)          the Tile of index tile < tiles
struct Tile {
  int m0, n0;       // first row of a and c, first column of c
  int row_end;      // rows from here on are not stored (M; a grouped tile: its expert's end)
  int b_row;        // first row of the tile's b box in the b map's view
  const float *sb;  // scale_b of the tile's operand b (a grouped tile: its expert's scales)
};

// The tile row of consumer thread ctid's accumulators acc[mt][4 j + 2 h + {0, 1}] (columns
// 8 j + 2 (lane % 4) + {0, 1}): common/wgmma.cuh's fragment layout.
__device__ __forceinline__ int frag_row(int ctid, int mt, int h) {
  const int wg = ctid >> 7, w = (ctid >> 5) & 3, lane = ctid & 31;
  return wg * kWgRows + mt * 64 + w * 16 + (lane >> 2) + 8 * h;
}

// ---------------------------------------------------------------------------------------------
// load_stage (the producer's one thread): K block kb of tile (m0, n0) -> slot, completing on `full`.
// The transaction is the two boxes, counted whole (docs/tensormap-args.md).
__device__ __forceinline__ void load_stage(unsigned slot, unsigned full, const tune::tensormap &tmA,
                                           const tune::tensormap &tmB, const Tile &t, int kb, unsigned tx) {
  tune::mbar_arrive_expect_tx(full, tx);
  tune::tma_load_2d(slot, tmA, kb * kBK, t.m0, full);
  tune::tma_load_2d(slot + kABytes, tmB, kb * kBK, t.b_row, full);
}

template <class Tiles>
__device__ __forceinline__ void producer(const Tiles &ts, unsigned ring, unsigned full, unsigned empty,
                                         const tune::tensormap &tmA, const tune::tensormap &tmB) {
  tune::tma_prefetch_desc(tmA);
  tune::tma_prefetch_desc(tmB);
  const unsigned tx = (unsigned)((min(kBM, ts.a_rows) + min(kBN, ts.b_rows)) * kBK);
  int it = 0;  // k iteration over all tiles of the block
  RingCursor cur;
  for (int tile = (int)blockIdx.x; tile < ts.tiles; tile += ts.step()) {
    const Tile t = ts.at(tile);
    for (int kb = 0; kb < ts.k_blocks; ++kb, ++it, cur.step(1)) {
      const RingPos p = cur.at(it, 0);
      // the slot's previous use released it (none before the first kStages)
      if (it >= kStages) tune::mbar_wait(empty + p.slot * 8, p.phase ^ 1u);
      load_stage(ring + p.slot * kStageBytes, full + p.slot * 8, tmA, tmB, t, kb, tx);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// compute_stage: issue (not wait for) the 4 k32 steps x MT m64 tiles of one slot for warpgroup wg;
// accumulate onto d when `accumulate`, else start from the slot's first product. Descriptors move
// by adding bytes >> 4 to their low word (common/wgmma.cuh).
__device__ __forceinline__ void compute_stage(float (&d)[kMT][kAcc], unsigned slot, int wg, bool accumulate) {
  const unsigned long long da0 = tune::wgmma_desc(slot + wg * kWgRows * 128, 16, 1024, tune::kWgmmaSwizzle128B);
  const unsigned long long db0 = tune::wgmma_desc(slot + kABytes, 16, 1024, tune::kWgmmaSwizzle128B);
  const unsigned alo = (unsigned)da0, ahi = (unsigned)(da0 >> 32);
  const unsigned blo = (unsigned)db0, bhi = (unsigned)(db0 >> 32);
#pragma unroll
  for (int kk = 0; kk < kBK / 32; ++kk) {
    const unsigned long long db = tune::wgmma_desc_words(blo + kk * 32 / 16, bhi);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      const unsigned long long da = tune::wgmma_desc_words(alo + (mt * 64 * 128 + kk * 32) / 16, ahi);
      tune::wgmma_ss_e4m3<kBN>(d[mt], da, db, (accumulate || kk > 0) ? 1 : 0);
    }
  }
}

template <int R> __device__ __forceinline__ void fence_acc(float (&d)[R][kAcc]) {
#pragma unroll
  for (int mt = 0; mt < R; ++mt) tune::wgmma_fence_acc(d[mt]);
}

__device__ __forceinline__ void zero_acc(float (&d)[kMT][kAcc]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int i = 0; i < kAcc; ++i) d[mt][i] = 0.f;
}

// Block scales of K block kb for this thread's fragments: sa of its 2 MT rows, sb of the (at most
// two) 128-column blocks the tile touches.
struct BlockScales {
  float a[kMT][2];
  float b0, b1;  // blocks n0 / 128 and n0 / 128 + 1
};

// The scale rows of a tile, set once per tile so that a K block's scales are three loads at offset kb
// (no address arithmetic per block): this thread's rows of scale_a, the tile's one or two rows of
// scale_b. Rows past a's last take its last, a second block past N the first: they scale only
// outputs that are never stored.
struct ScaleRows {
  const float *a[kMT][2];
  const float *b0, *b1;
};

__device__ __forceinline__ ScaleRows scale_rows(const float *__restrict__ scale_a, const Tile &t, int a_rows, int N,
                                                int k_blocks, int ctid) {
  ScaleRows r{};
  if constexpr (kMode == kScaleBlock) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        r.a[mt][h] = scale_a + (size_t)min(t.m0 + frag_row(ctid, mt, h), a_rows - 1) * k_blocks;
    const int nb = t.n0 / 128, n_blocks = (N + 127) / 128;
    r.b0 = t.sb + (size_t)nb * k_blocks;
    r.b1 = !kOneScaleBlock && nb + 1 < n_blocks ? r.b0 + k_blocks : r.b0;
  }
  return r;
}

// block_scales: K block kb's scales in block mode, nothing to load in the others.
__device__ __forceinline__ BlockScales block_scales(const ScaleRows &r, int kb) {
  BlockScales s{};
  if constexpr (kMode == kScaleBlock) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) s.a[mt][h] = __ldg(r.a[mt][h] + kb);
    s.b0 = __ldg(r.b0 + kb);
    s.b1 = kOneScaleBlock ? 0.f : __ldg(r.b1 + kb);
  }
  return s;
}

// promote: acc += part (tensor, row) or acc += sa * sb * part (block). Column chunk j (8 columns,
// never across a 128-column block) lies in block n0 / 128 while 8 j < 128 - n0 % 128; a tile of a
// width that divides 128 never crosses a block (n0 is a multiple of its width), so all of it takes
// b0. The products sa * sb are formed once per row and block, not per chunk.
__device__ __forceinline__ void promote(float (&acc)[kMT][kAcc], const float (&part)[kMT][kAcc], const BlockScales &s,
                                        int n0) {
  const int split = 128 - n0 % 128;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float f0 = s.a[mt][h] * s.b0, f1 = s.a[mt][h] * s.b1;
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        float *d = &acc[mt][4 * j + 2 * h];
        const float *p = &part[mt][4 * j + 2 * h];
        if constexpr (kMode == kScaleBlock) {
          const float f = kOneScaleBlock || 8 * j < split ? f0 : f1;
          d[0] = fmaf(f, p[0], d[0]);
          d[1] = fmaf(f, p[1], d[1]);
        } else {
          d[0] += p[0];
          d[1] += p[1];
        }
      }
    }
}

// warpgroup_sync: a named barrier of the 128 threads of consumer warpgroup wg (ids 1 and 2, constants,
// so that ptxas reserves three hardware barriers rather than all sixteen)
__device__ __forceinline__ void warpgroup_sync(int wg) {
  if (wg == 0)
    tune::named_bar_sync(1, 128);
  else
    tune::named_bar_sync(2, 128);
}

// stage_row_scales (row mode, warpgroup wg at the start of tile t): the tile's scale_b and the
// warpgroup's rows of scale_a into its area of shared memory (`rs`: kBN then kWgRows floats), by
// cp.async; columns and rows past N and a's last row copy the last element (their outputs are never
// stored).
// The named barrier first waits until every thread of the warpgroup has left the previous tile's
// epilogue, which read the same area.
__device__ __forceinline__ void stage_row_scales(unsigned rs, const float *__restrict__ scale_a, const Tile &t,
                                                 int a_rows, int N, int wg, int wtid) {
  warpgroup_sync(wg);
  for (int i = wtid; i < kBN; i += 128) tune::g2s_copy4(rs + i * 4, t.sb + min(t.n0 + i, N - 1));
  for (int i = wtid; i < kWgRows; i += 128)
    tune::g2s_copy4(rs + (kBN + i) * 4, scale_a + min(t.m0 + wg * kWgRows + i, a_rows - 1));
  tune::cp_async_commit();
}

// ---------------------------------------------------------------------------------------------
// epilogue: acc (scaled here in tensor and row modes) -> bf16 c. Each quad's words are transposed so
// that a lane stores one 8-column chunk's 16 bytes (common/frag_store.cuh); rows from t.row_end on and
// chunks past N (N % 16 == 0: a chunk is whole or out) are skipped.
__device__ __forceinline__ void epilogue(const float (&acc)[kMT][kAcc], const float *__restrict__ scale_a, const Tile &t,
                                         unsigned rs, bf16 *__restrict__ c, int N, int ctid) {
  const int q = ctid & 3, m0 = t.m0, n0 = t.n0;
  const float st = kMode == kScaleTensor ? __ldg(scale_a) * __ldg(t.sb) : 1.f;
  if constexpr (kMode == kScaleRow) {
    tune::cp_async_wait<0>();
    warpgroup_sync(ctid >> 7);  // every thread's copies of stage_row_scales are done
  }
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + frag_row(ctid, mt, h);
      const float sr = kMode == kScaleRow ? tune::s2r_load_f32(rs + (kBN + frag_row(ctid, mt, h) % kWgRows) * 4) : st;
      bf16 *out = c + (size_t)row * N + n0 + 8 * q;
#pragma unroll
      for (int j0 = 0; j0 < kBN / 8; j0 += 4) {
        unsigned v[4];
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const int j = j0 + p, col = n0 + 8 * j + 2 * q;
          float2 sc = make_float2(sr, sr);
          if constexpr (kMode == kScaleRow) {
            const float2 sb = make_float2(tune::s2r_load_f32(rs + (col - n0) * 4), tune::s2r_load_f32(rs + (col - n0 + 1) * 4));
            sc = make_float2(sr * sb.x, sr * sb.y);
          }
          v[p] = tune::pack_bf16x2(sc.x * acc[mt][4 * j + 2 * h], sc.y * acc[mt][4 * j + 2 * h + 1]);
        }
        tune::quad_transpose(v, q);  // every lane shuffles: rows not stored only skip the store
        if (row < t.row_end && n0 + 8 * (j0 + q) < N) *reinterpret_cast<uint4 *>(out + j0 * 8) = make_uint4(v[0], v[1], v[2], v[3]);
      }
    }
}

// issue_block: once slot p holds its K block, issue the block's wgmma batch into part (a fresh
// accumulation) for warpgroup wg and commit it; not waited for.
__device__ __forceinline__ void issue_block(float (&part)[kMT][kAcc], unsigned ring, unsigned full, RingPos p, int wg) {
  tune::mbar_wait(full + p.slot * 8, p.phase);
  fence_acc(part);
  tune::wgmma_arrive();
  compute_stage(part, ring + p.slot * kStageBytes, wg, false);
  tune::wgmma_commit();
}

// retire_block: wait until at most kPending batches of this warpgroup run (so that part's is done),
// release part's slot p and promote part with its block's scales s.
template <int kPending>
__device__ __forceinline__ void retire_block(float (&acc)[kMT][kAcc], float (&part)[kMT][kAcc], const BlockScales &s,
                                             unsigned empty, RingPos p, int n0, int lane) {
  tune::wgmma_wait<kPending>();
  fence_acc(part);
  if (lane == 0) tune::mbar_arrive(empty + p.slot * 8);
  promote(acc, part, s, n0);
}

// ---------------------------------------------------------------------------------------------
// consumer: warpgroup wg's rows of each of the block's tiles. K iteration `it` (over all tiles of the
// block) lies at cur.at(it, c) (c: its distance from the cursor); its slot's full barrier completes
// in that parity, and each consumer warp arrives on the slot's empty barrier once it no longer
// reads it.
template <class Tiles>
__device__ __forceinline__ void consumer(const Tiles &ts, const float *__restrict__ scale_a, bf16 *__restrict__ c,
                                         unsigned ring, unsigned full, unsigned empty, unsigned row_scales) {
  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
  const int k_blocks = ts.k_blocks, N = ts.N;
  const unsigned rs = row_scales + wg * kRowScaleFloats * 4;  // this warpgroup's row scales (row mode)
  float acc[kMT][kAcc];
  int it = 0;
  RingCursor cur;
  for (int tile = (int)blockIdx.x; tile < ts.tiles; tile += ts.step()) {
    const Tile t = ts.at(tile);
    const int n0 = t.n0;
    if constexpr (kMode == kScaleRow) stage_row_scales(rs, scale_a, t, ts.a_rows, N, wg, tid & 127);
    if constexpr (kFast) {
      // one accumulator over K; the batch of block kb - 1 is waited for (and its slot released)
      // while block kb's runs
      for (int kb = 0; kb < k_blocks; ++kb, ++it, cur.step(1)) {
        const RingPos p = cur.at(it, 0);
        tune::mbar_wait(full + p.slot * 8, p.phase);
        fence_acc(acc);
        tune::wgmma_arrive();
        compute_stage(acc, ring + p.slot * kStageBytes, wg, kb > 0);
        tune::wgmma_commit();
        tune::wgmma_wait<1>();
        fence_acc(acc);
        if (kb > 0 && lane == 0) tune::mbar_arrive(empty + cur.at(it - 1, -1).slot * 8);
      }
      tune::wgmma_wait<0>();
      fence_acc(acc);
      if (lane == 0) tune::mbar_arrive(empty + cur.at(it - 1, -1).slot * 8);
    } else if constexpr (kParts == 1) {
      float part[kMT][kAcc];
      zero_acc(acc);
      const ScaleRows rows = scale_rows(scale_a, t, ts.a_rows, N, k_blocks, tid);
      BlockScales bs = block_scales(rows, 0);
      for (int kb = 0; kb < k_blocks; ++kb, ++it, cur.step(1)) {
        issue_block(part, ring, full, cur.at(it, 0), wg);
        const BlockScales now = bs;
        if (kb + 1 < k_blocks) bs = block_scales(rows, kb + 1);
        retire_block<0>(acc, part, now, empty, cur.at(it, 0), n0, lane);
      }
    } else {
      // block kb + 1's batch is issued before block kb's is retired: part0 holds the even blocks,
      // part1 the odd ones. Straight-line pairs and a separate tail (no runtime choice of which
      // wait follows an issue), so that ptxas can tell which accumulators a wait frees; otherwise it
      // serializes every wgmma. Block scales are loaded a pair of blocks before the pair that uses
      // them (s: this pair's, n: the next pair's), as ptxas forms the products sa * sb soon after
      // the loads and would wait there for them (ordering fences do not reach ptxas); an index past
      // the last block loads the last block's again.
      float part0[kMT][kAcc], part1[kMT][kAcc];
      zero_acc(acc);
      const ScaleRows rows = scale_rows(scale_a, t, ts.a_rows, N, k_blocks, tid);
      const int last = k_blocks - 1;
      BlockScales s0 = block_scales(rows, 0), s1 = block_scales(rows, min(1, last));
      BlockScales n0s = block_scales(rows, min(2, last)), n1s = block_scales(rows, min(3, last));
      issue_block(part0, ring, full, cur.at(it, 0), wg);
      int kb = 0;
      for (; kb + 2 < k_blocks; kb += 2, cur.step(2)) {  // the cursor at block kb
        issue_block(part1, ring, full, cur.at(it + kb + 1, 1), wg);
        retire_block<1>(acc, part0, s0, empty, cur.at(it + kb, 0), n0, lane);
        issue_block(part0, ring, full, cur.at(it + kb + 2, 2), wg);
        retire_block<1>(acc, part1, s1, empty, cur.at(it + kb + 1, 1), n0, lane);
        s0 = n0s;
        s1 = n1s;
        n0s = block_scales(rows, min(kb + 4, last));
        n1s = block_scales(rows, min(kb + 5, last));
      }
      if (kb + 1 < k_blocks) {  // two blocks left
        issue_block(part1, ring, full, cur.at(it + kb + 1, 1), wg);
        retire_block<1>(acc, part0, s0, empty, cur.at(it + kb, 0), n0, lane);
        retire_block<0>(acc, part1, s1, empty, cur.at(it + kb + 1, 1), n0, lane);
        cur.step(2);
      } else {
        retire_block<0>(acc, part0, s0, empty, cur.at(it + kb, 0), n0, lane);
        cur.step(1);
      }
      it += k_blocks;
    }
    epilogue(acc, scale_a, t, rs, c, N, tid);
  }
}

// The dynamic shared memory: the ring (aligned by hand: 128-byte swizzled tiles need 1024-byte
// alignment), its full and empty barriers, the row scales (kRowScaleBytes), then `extra`: what the
// kernel file keeps after them (its launch adds those bytes to kSmemBytes).
struct Smem {
  unsigned ring, full, empty, row_scales, extra;
};

__device__ __forceinline__ Smem smem_layout(const unsigned char *smem_raw) {
  Smem s;
  s.ring = (tune::smem_u32(smem_raw) + 1023u) & ~1023u;
  s.full = s.ring + kStages * kStageBytes;
  s.empty = s.full + kStages * 8;
  s.row_scales = s.empty + kStages * 8;
  s.extra = s.row_scales + kRowScaleBytes;
  return s;
}

// init_barriers (thread 0; the block's __syncthreads follows before any use)
__device__ __forceinline__ void init_barriers(const Smem &s) {
  if (threadIdx.x != 0) return;
  for (int i = 0; i < kStages; ++i) {
    tune::mbar_init(s.full + i * 8, 1);           // the producer's arrive.expect_tx
    tune::mbar_init(s.empty + i * 8, kCons * 4);  // one arrival per consumer warp
  }
  tune::fence_mbar_init();
}

struct NoIdle {
  __device__ __forceinline__ void operator()(int, int) const {}
};

// roles (every thread, after the block's __syncthreads): the producer warpgroup's first thread
// issues every copy and its warps 1 .. 3 call idle(t, 96) with t = 0 .. 95 (work that needs no
// registers, such as zeroing padding); the consumer warpgroups compute. The rest of warp 0 leaves at
// once: a diverged warp runs its paths in turn, so idle work there would hold up the copies.
template <class Tiles, class Idle>
__device__ __forceinline__ void roles(const Tiles &ts, const Smem &s, const float *__restrict__ scale_a,
                                      bf16 *__restrict__ c, const tune::tensormap &tmA, const tune::tensormap &tmB,
                                      Idle idle) {
  if (threadIdx.x >= kCons * 128) {
    tune::setmaxnreg_dec<kProducerRegs>();
    const int t = (int)threadIdx.x - kCons * 128;
    if (t == 0) producer(ts, s.ring, s.full, s.empty, tmA, tmB);
    else if (t >= 32) idle(t - 32, 96);
  } else {
    tune::setmaxnreg_inc<kConsumerRegs>();
    consumer(ts, scale_a, c, s.ring, s.full, s.empty, s.row_scales);
  }
}

}  // namespace fp8gemm
