// gemm_sm90.cuh: PATH 1 of gemm.cuh, the Hopper GEMM: wgmma (sm_90a) reading both operands from
// 128-byte-swizzled shared memory that cp.async fills, optionally with warp specialization.
//
// A block computes BLOCK_M x BLOCK_N tiles of c (one, or with PERSISTENT=1 tiles blockIdx.x,
// blockIdx.x + gridDim.x, ...), each over one K / SPLIT_K slice (grid.y = split). CONSUMERS
// warpgroups split the tile's rows: warpgroup w owns rows [w * BLOCK_M / CONSUMERS, ...), i.e. MT =
// BLOCK_M / CONSUMERS / 64 wgmma m64 tiles of BLOCK_N columns (MT * BLOCK_N / 2 fp32 registers).
//
// Shared memory: 1024-byte-aligned ring of STAGES slots, each an a tile [BLOCK_M][64] and a b tile,
// then (USE_TMA, SPLIT_K 1) two 8 KiB epilogue boxes per consumer warpgroup, then 2 * STAGES
// mbarriers (WS >= 1). a and a B_COL b tile are k-major: row r (128 bytes) holds
// 16-byte chunk c at c ^ (r % 8). A row-major b tile ([64 k][BLOCK_N], n-major) is stored as
// BLOCK_N / 64 column blocks of 64 k rows x 128 bytes (8 KiB each), swizzled the same way.
// common/wgmma.cuh describes the matching descriptors.
//
// WS = 0: every thread copies and computes. cp.async groups + __syncthreads pipeline, STAGES - 2
//   slices ahead (a slot is refilled only after the wgmma batch that read it has been waited for).
// WS = 1: warpgroup CONSUMERS is the producer: PRODUCER_WARPS of its warps issue the cp.async of a
//   slot once its `empty` barrier says the consumers released it, and arm its `full` barrier with
//   cp.async.mbarrier.arrive.noinc; consumer warpgroups wait on `full`, run the wgmma batch, keep one
//   batch in flight and release the previous slot. SETMAXNREG = 1 moves registers from the producer
//   (kProducerRegs) to the consumers (kConsumerRegs).
// WS = 2 (ping-pong; CONSUMERS 2, USE_TMA 1, PERSISTENT 1): as WS = 1, but each consumer warpgroup
//   owns whole BLOCK_M x BLOCK_N tiles, the block's even tiles for warpgroup 0 and its odd ones for
//   warpgroup 1. The producer fills the ring in tile order, so the two warpgroups' main loops take
//   turns on the ring and one warpgroup's epilogue (its stores to c) runs while the other computes:
//   the tensor cores are not idle during epilogues, as they are with WS = 1. A warpgroup starts a
//   tile's main loop only once the other one has seen the last slice of the tile before it complete
//   (mbarrier `order`): an mbarrier wait tells phases apart by parity alone, so a warpgroup must
//   never wait on a slot more than one use ahead of where that slot is.
// USE_TMA = 1 (WS = 1 or 2 only; the worker builds the tensor maps the recipe describes,
//   docs/tensormap-args.md): one producer thread fills a slot with bulk tensor copies (TMA) that
//   complete on its `full` barrier (arrive.expect_tx of the slot's bytes); same shared-memory layout
//   (the maps use 128-byte swizzle, boxes of 64 x BLOCK_M (a), 64 x BLOCK_N (b, B_COL) or 64 x 64
//   (b row-major, one box per 64-column block)). With SPLIT_K 1 the epilogue is TMA too
//   (epilogue_tma): fragments to a 64 x 64 shared-memory box by stmatrix, one thread stores the box
//   through tmC while the warpgroup goes on. The kernels then take three more parameters,
//   `const __grid_constant__ tune::tensormap tmA, tmB, tmC`, after K (gemm.cuh's TMA_ARGS 2).
//
// Tunables: BLOCK_M 64 | 128 | 256, BLOCK_N 64 | 128 | 256, CONSUMERS 1 | 2, STAGES 3..5, WS 0 | 1 | 2,
// PRODUCER_WARPS 1..4 [1], SETMAXNREG 0 | 1 [0], PERSISTENT 0 | 1, RASTER, SPLIT_K, SPLIT_CLUSTER 0 | 1 [0].
// SPLIT_CLUSTER 1 (WS >= 1, SPLIT_K 2..8): the SPLIT_K blocks of a tile form a thread-block cluster
// (1, SPLIT_K, 1); each leaves its fp32 tile in its (drained) ring, and after a cluster barrier block
// `split` adds the SPLIT_K tiles' rows [split, split + 1) * BLOCK_M / SPLIT_K through distributed
// shared memory (blocks in order: the sums do not depend on timing) and stores them as bf16: no fp32
// partials in global memory (2 x 4 bytes per output and split), no gemm_splitk_reduce launch.
// Tails (any M; N, K multiples of 8): cp.async zero-fills chunks past M, N or K, TMA fills them by
// itself (the maps' dims are the real sizes; a box is always counted whole by expect_tx) and clips
// its stores; direct stores skip columns past N. Split s takes k in [s * kSplit, (s + 1) * kSplit),
// kSplit = ceil(K / (SPLIT_K * 64)) * 64, as many slices of it as reach below K.
// Launch: block = 128 * (CONSUMERS + WS); grid = (tiles, SPLIT_K) with tiles = ceil(M / BLOCK_M) *
// ceil(N / BLOCK_N), or (min(tiles, resident blocks), 1) with PERSISTENT (needs SPLIT_K = 1); dynamic shared
// memory = kSmemBytes (recipes/gemm.lua: smem_sm90).
#include "common/cluster.cuh"
#include "common/cp_async.cuh"
#include "common/cp_async_zfill.cuh"
#include "common/mbarrier.cuh"
#include "common/mma.cuh"
#include "common/tile_order.cuh"
#include "common/tma.cuh"
#include "common/tma_store.cuh"
#include "common/wgmma.cuh"

#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(CONSUMERS) || !defined(STAGES) || !defined(WS)
#error "gemm_sm90.cuh needs -D BLOCK_M BLOCK_N CONSUMERS STAGES WS"
#endif
#ifndef PRODUCER_WARPS
#define PRODUCER_WARPS 1
#endif
#ifndef SPLIT_CLUSTER
#define SPLIT_CLUSTER 0
#endif
#ifndef SETMAXNREG
#define SETMAXNREG 0
#endif
#ifndef USE_TMA
#define USE_TMA 0
#endif

namespace gemm90 {

constexpr int kBM = BLOCK_M, kBN = BLOCK_N, kBK = 64;
constexpr int kCons = CONSUMERS;
constexpr bool kWS = WS != 0;
constexpr int kThreads = (kCons + (kWS ? 1 : 0)) * 128;
constexpr int kStages = STAGES;
constexpr bool kPingPong = WS == 2;
constexpr int kWgRows = kPingPong ? kBM : kBM / kCons;  // rows per consumer warpgroup
constexpr int kWgRowStep = kPingPong ? 0 : kWgRows;     // row offset of warpgroup w's rows: w * kWgRowStep
constexpr int kTileStride = kPingPong ? 2 : 1;          // a consumer warpgroup takes every kTileStride-th tile
constexpr int kMT = kWgRows / 64;     // wgmma m64 tiles per consumer warpgroup
constexpr int kAcc = kBN / 2;         // fp32 accumulators per thread per m64 tile
constexpr int kABytes = kBM * 128;
constexpr int kBBytes = kBN * 128;
constexpr int kStageBytes = kABytes + kBBytes;
constexpr int kBarBytes = 2 * kStages * 8 + (WS == 2 ? 16 : 0);  // full, empty (, order: ping-pong)
// USE_TMA, SPLIT_K 1: the epilogue stages c through shared memory and stores it with TMA (tmC), two
// 64 x 64 bf16 boxes (8 KiB, 128-byte swizzled) per consumer warpgroup, after the ring
constexpr bool kEpiTma = USE_TMA && SPLIT_K == 1;
constexpr int kEpiBoxBytes = 64 * 128;
constexpr int kEpiBytes = kEpiTma ? kCons * 2 * kEpiBoxBytes : 0;
constexpr int kSmemBytes = 1024 + kStages * kStageBytes + kEpiBytes + kBarBytes;  // + alignment slack
// SPLIT_CLUSTER: the tile's fp32 sums in the ring, rows padded by 16 bytes
constexpr bool kClusterSplit = SPLIT_CLUSTER && SPLIT_K > 1;
constexpr int kRedPitch = kBN + 4;
constexpr int kProdThreads = USE_TMA ? 1 : PRODUCER_WARPS * 32;  // threads that arrive on `full`
// setmaxnreg budgets: at entry a block holds (kCons + 1) * 128 threads x its compiled register count
// (ptxas gives these builds 168 at 384 threads, 240 at 256); the totals after reallocation fit in it.
constexpr int kConsumerRegs = kCons == 1 ? 240 : 232;
constexpr int kProducerRegs = kCons == 1 ? 56 : 40;

static_assert(kBM == 64 || kBM == 128 || kBM == 256, "BLOCK_M must be 64, 128 or 256");
static_assert(kBN == 64 || kBN == 128 || kBN == 256, "BLOCK_N must be 64, 128 or 256");
static_assert(kCons == 1 || kCons == 2, "CONSUMERS must be 1 or 2");
static_assert(kWgRows % 64 == 0 && (kMT == 1 || kMT == 2), "each consumer warpgroup owns 64 or 128 rows");
static_assert(kMT * kAcc <= 128, "at most 128 fp32 accumulators per thread");
static_assert(WS == 0 || WS == 1 || WS == 2, "WS must be 0, 1 or 2");
static_assert(!kPingPong || (kCons == 2 && USE_TMA && PERSISTENT), "WS = 2 (ping-pong) needs CONSUMERS 2, USE_TMA, PERSISTENT");
static_assert(kStages >= 3 && kStages <= 5, "STAGES must be 3..5");
static_assert(PRODUCER_WARPS >= 1 && PRODUCER_WARPS <= 4, "PRODUCER_WARPS must be 1..4");
static_assert(SETMAXNREG == 0 || (SETMAXNREG == 1 && kWS), "SETMAXNREG needs WS >= 1");
static_assert(kSmemBytes <= 227 * 1024, "shared memory over the 227 KiB per-block limit of sm_90");
static_assert(!(PERSISTENT && SPLIT_K > 1), "PERSISTENT needs SPLIT_K = 1");
static_assert(!USE_TMA || WS >= 1, "USE_TMA needs the producer warpgroup (WS = 1 or 2)");
static_assert(SPLIT_CLUSTER == 0 || SPLIT_CLUSTER == 1, "SPLIT_CLUSTER must be 0 or 1");
static_assert(!kClusterSplit || (kWS && SPLIT_K <= 8 && !kPingPong), "SPLIT_CLUSTER needs WS = 1 and SPLIT_K <= 8");
static_assert(!kClusterSplit || kStages * kStageBytes >= kBM * kRedPitch * 4, "the fp32 tile must fit the ring");

struct Geometry {
  int tiles_m, tiles_n, tiles;  // output tiles
  int k_begin;                  // first k of this block's split (blockIdx.y)
  int k_tiles;                  // 64-wide k slices of this split (0 for a split past K)
};

__device__ __forceinline__ Geometry geometry(int M, int N, int K) {
  Geometry g;
  g.tiles_m = (M + kBM - 1) / kBM;
  g.tiles_n = (N + kBN - 1) / kBN;
  g.tiles = g.tiles_m * g.tiles_n;
  const int k_split = (K + SPLIT_K * kBK - 1) / (SPLIT_K * kBK) * kBK;
  g.k_begin = (int)blockIdx.y * k_split;
  const int k_len = min(k_split, K - g.k_begin);
  g.k_tiles = k_len > 0 ? (k_len + kBK - 1) / kBK : 0;
  return g;
}

// ---------------------------------------------------------------------------------------------
// load_stage: the 64-wide k slice at k0 of tile (m0, n0) -> slot (sA, sB), by NT threads (t < NT).
// Thread t copies one fixed 16-byte column chunk of every (NT / 8)-th row of a and b (k-major), or
// of every (NT / (BLOCK_N / 8))-th k row of a row-major b; pointers advance by a fixed step, and the
// loops are unrolled 4 deep only, so that a 1-warp producer on 40 registers (setmaxnreg) needs few of them.
template <int NT>
__device__ __forceinline__ void load_stage(unsigned sA, unsigned sB, const bf16 *__restrict__ a,
                                           const bf16 *__restrict__ b, int m0, int n0, int k0, int M, int N,
                                           int K, int t) {
  static_assert(NT % 8 == 0, "copy threads come in groups of 8 (one 128-byte row)");
  constexpr int kRows = NT / 8;  // rows advanced per copy of a k-major tile
  static_assert(kBM % kRows == 0 && kBN % kRows == 0, "tile rows must split evenly over the copy threads");
  const int ch = t & 7, r0 = t >> 3;
  const bool k_ok = k0 + ch * 8 < K;  // this thread's k chunk (of a and of a k-major b)
  {
    const bf16 *src = a + (size_t)(m0 + r0) * K + k0 + ch * 8;
    const size_t step = (size_t)kRows * K;
#pragma unroll 4
    for (int i = 0; i < kBM / kRows; ++i) {
      const int r = r0 + i * kRows;
      const bool ok = k_ok && m0 + r < M;
      tune::g2s_copy16_zfill(sA + r * 128 + ((ch ^ (r & 7)) << 4), ok ? src + i * step : a, ok);
    }
  }
  if constexpr (B_COL) {
    const bf16 *src = b + (size_t)(n0 + r0) * K + k0 + ch * 8;
    const size_t step = (size_t)kRows * K;
#pragma unroll 4
    for (int i = 0; i < kBN / kRows; ++i) {
      const int r = r0 + i * kRows;
      const bool ok = k_ok && n0 + r < N;
      tune::g2s_copy16_zfill(sB + r * 128 + ((ch ^ (r & 7)) << 4), ok ? src + i * step : b, ok);
    }
  } else {
    constexpr int kRowChunks = kBN / 8;         // 16-byte chunks per k row of the b tile
    constexpr int kKStep = NT / kRowChunks;     // k rows advanced per copy
    static_assert(NT % kRowChunks == 0 && kBK % kKStep == 0, "b tile chunks must split evenly over the copy threads");
    const int cc = t % kRowChunks, kr0 = t / kRowChunks;
    const unsigned dst = sB + (cc >> 3) * 8192;
    const bf16 *src = b + (size_t)(k0 + kr0) * N + n0 + cc * 8;
    const size_t step = (size_t)kKStep * N;
    const bool n_ok = n0 + cc * 8 < N;
#pragma unroll 4
    for (int i = 0; i < kBK / kKStep; ++i) {
      const int k = kr0 + i * kKStep;
      const bool ok = n_ok && k0 + k < K;
      tune::g2s_copy16_zfill(dst + k * 128 + (((cc & 7) ^ (k & 7)) << 4), ok ? src + i * step : b, ok);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// compute_stage: issue (not wait for) the wgmma of one slot for consumer warpgroup wg. Each operand's
// descriptor is built once; a k16 step or m64 tile moves it by adding bytes >> 4 to its low 32-bit
// word (the start address field; every operand lies below 256 KiB of shared memory).
__device__ __forceinline__ void compute_stage(float (&acc)[kMT][kAcc], unsigned sA, unsigned sB, int wg) {
  const unsigned long long da0 =
      tune::wgmma_desc(sA + wg * kWgRowStep * 128, 16, 1024, tune::kWgmmaSwizzle128B);
  const unsigned long long db0 = B_COL ? tune::wgmma_desc(sB, 16, 1024, tune::kWgmmaSwizzle128B)
                                       : tune::wgmma_desc(sB, 8192, 1024, tune::kWgmmaSwizzle128B);
  const unsigned alo = (unsigned)da0, ahi = (unsigned)(da0 >> 32);
  const unsigned blo = (unsigned)db0, bhi = (unsigned)(db0 >> 32);
#pragma unroll
  for (int kk = 0; kk < kBK / 16; ++kk) {
    const unsigned long long db = tune::wgmma_desc_words(blo + (B_COL ? kk * 32 : kk * 2048) / 16, bhi);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      const unsigned long long da = tune::wgmma_desc_words(alo + (mt * 64 * 128 + kk * 32) / 16, ahi);
      tune::wgmma_ss_bf16<kBN, B_COL ? 0 : 1>(acc[mt], da, db, 1);
    }
  }
}

__device__ __forceinline__ void fence_acc(float (&acc)[kMT][kAcc]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) tune::wgmma_fence_acc(acc[mt]);
}

__device__ __forceinline__ void zero_acc(float (&acc)[kMT][kAcc]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[mt][i] = 0.f;
}

// ---------------------------------------------------------------------------------------------
// Quad transpose: lane q (of 4) holds w[p] = word q of 8-column chunk p (columns 2q, 2q + 1); after
// it, w[p] = word p of chunk q, i.e. the lane holds chunk q's 8 columns (16 bytes). Two butterfly
// steps (lane bits 2 and 1), each swapping the 2 x 2 blocks off the diagonal: 4 shuffles.
__device__ __forceinline__ void quad_transpose(unsigned (&w)[4], int q) {
#pragma unroll
  for (int bit = 2; bit >= 1; bit >>= 1) {
    const bool hi = q & bit;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (i & bit) continue;  // pairs (i, i + bit)
      const unsigned r = __shfl_xor_sync(0xffffffffu, hi ? w[i] : w[i + bit], bit);
      if (hi) w[i] = r;
      else w[i + bit] = r;
    }
  }
}

// epilogue: a consumer thread stores its fragments (common/wgmma.cuh layout) to global memory:
// bf16 to c, four chunks of 8 columns at a time, each quad's words transposed so that a lane stores
// one chunk's 16 bytes (a warp's store covers 8 rows x 64 contiguous bytes, whole 32-byte sectors;
// storing the fragments' 4-byte pairs directly, 8 rows x 16 bytes per store, half-fills sectors and
// costs a visible share of a large GEMM: tools/check/gemm_tma_check); fp32 pairs to ws[split] when SPLIT_K > 1.
// The tile row of consumer thread ctid's accumulators acc[mt][4 j + 2 h + {0, 1}] (columns 8 j + 2 (lane % 4)
// + {0, 1}): common/wgmma.cuh's fragment layout.
__device__ __forceinline__ int frag_row(int ctid, int mt, int h) {
  const int wg = ctid >> 7, w = (ctid >> 5) & 3, lane = ctid & 31;
  return wg * kWgRowStep + mt * 64 + w * 16 + (lane >> 2) + 8 * h;
}

// kA: accumulators per m64 tile, of a tile 2 * kA columns wide (kAcc: BLOCK_N; a fused epilogue such as
// grouped_sm90.cuh's SWIGLU stores a narrower one in the same fragment layout).
template <int kA>
__device__ __forceinline__ void epilogue(const float (&acc)[kMT][kA], int m0, int n0, int split,
                                         bf16 *__restrict__ c, float *__restrict__ ws, int M, int N, int ctid) {
  constexpr int kW = 2 * kA;  // the tile's columns
  const int q = ctid & 3;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + frag_row(ctid, mt, h);
      if constexpr (SPLIT_K > 1) {
        if (row >= M) continue;
        float *out = ws + (size_t)split * M * N + (size_t)row * N + n0 + 2 * q;
#pragma unroll
        for (int j = 0; j < kW / 8; ++j)
          if (n0 + 8 * j < N)
            *reinterpret_cast<float2 *>(out + j * 8) = make_float2(acc[mt][4 * j + 2 * h], acc[mt][4 * j + 2 * h + 1]);
      } else {
        static_assert(kW % 32 == 0, "the epilogue stores groups of four 8-column chunks");
        bf16 *out = c + (size_t)row * N + n0 + 8 * q;
#pragma unroll
        for (int j0 = 0; j0 < kW / 8; j0 += 4) {
          unsigned v[4];
#pragma unroll
          for (int p = 0; p < 4; ++p)
            v[p] = tune::pack_bf16x2(acc[mt][4 * (j0 + p) + 2 * h], acc[mt][4 * (j0 + p) + 2 * h + 1]);
          quad_transpose(v, q);  // every lane shuffles: rows past M only skip the store
          if (row < M && n0 + 8 * (j0 + q) < N) *reinterpret_cast<uint4 *>(out + j0 * 8) = make_uint4(v[0], v[1], v[2], v[3]);
        }
      }
    }
}

#if USE_TMA
// stmatrix .x4: four 8 x 8 bf16 matrices; lane l gives the shared address of row l % 8 of matrix l / 8,
// and register i holds, like an mma accumulator pair, row lane / 4, columns 2 (lane % 4) + {0, 1} of matrix i.
__device__ __forceinline__ void stmatrix_x4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1), "r"(r2),
               "r"(r3)
               : "memory");
}

// epilogue_tma (kEpiTma): the warpgroup's rows of the tile go out as 64 x 64 boxes: the fragments
// are written to one of the warpgroup's two staging boxes with stmatrix (128-byte swizzle: 16-byte
// chunk c of row r at c ^ (r % 8), as tmC's box), then one thread stores the box with TMA and the
// warpgroup goes on; a box is rewritten only after the store issued two boxes earlier has read it
// (bulk_wait_group_read<1>). `box` counts the warpgroup's boxes across tiles (it picks the buffer).
// Rows past M are clipped by TMA. The stores run while the next tile's mainloop does: the consumers
// do not wait for 64 KiB of global stores per tile, which direct stores make them do.
// kA as epilogue's: the tile is 2 * kA columns, a multiple of the 64-column box.
template <int kA>
__device__ __forceinline__ void epilogue_tma(const float (&acc)[kMT][kA], int m0, int n0, const tune::tensormap *tmC,
                                             unsigned staging, int &box, int ctid) {
  static_assert(2 * kA % 64 == 0, "the TMA epilogue stores 64-column boxes");
  const int wg = ctid >> 7, w = (ctid >> 5) & 3, lane = ctid & 31;
  const bool elected = (ctid & 127) == 0;
  const unsigned bufs = staging + wg * 2 * kEpiBoxBytes;
  const int lrow = w * 16 + (lane & 7);  // the row (of the 64-row box) whose address this lane gives, + 8 h
  const int lmat = lane >> 3;            // the matrix (8-column chunk of a group of four) it gives it for
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int b = 0; b < 2 * kA / 64; ++b, ++box) {
      const unsigned buf = bufs + (box & 1) * kEpiBoxBytes;
      if (elected) tune::bulk_wait_group_read<1>();  // the store that read this buffer two boxes ago is done
      tune::named_bar_sync(1 + wg, 128);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = lrow + 8 * h;
#pragma unroll
        for (int jj = 0; jj < 8; jj += 4) {
          const int j = 8 * b + jj;  // the group's first 8-column chunk in the tile
          const unsigned addr = buf + r * 128 + (((jj + lmat) ^ (r & 7)) << 4);
          stmatrix_x4(addr, tune::pack_bf16x2(acc[mt][4 * j + 2 * h], acc[mt][4 * j + 2 * h + 1]),
                      tune::pack_bf16x2(acc[mt][4 * (j + 1) + 2 * h], acc[mt][4 * (j + 1) + 2 * h + 1]),
                      tune::pack_bf16x2(acc[mt][4 * (j + 2) + 2 * h], acc[mt][4 * (j + 2) + 2 * h + 1]),
                      tune::pack_bf16x2(acc[mt][4 * (j + 3) + 2 * h], acc[mt][4 * (j + 3) + 2 * h + 1]));
        }
      }
      tune::fence_proxy_async_smem();  // these generic-proxy writes, before the TMA (async proxy) reads them
      tune::named_bar_sync(1 + wg, 128);
      if (elected) {
        tune::tma_store_2d(*tmC, buf, n0 + 64 * b, m0 + wg * kWgRowStep + mt * 64);
        tune::bulk_commit_group();
      }
    }
}
#endif

// Tile index -> (m0, n0).
__device__ __forceinline__ void tile_origin(int tile, const Geometry &g, int &m0, int &n0) {
  const tune::tile_rc rc = tune::tile_order_grouped(tile, g.tiles_m, g.tiles_n, RASTER);
  m0 = rc.m * kBM;
  n0 = rc.n * kBN;
}

__device__ __forceinline__ int first_tile() { return (int)blockIdx.x; }
__device__ __forceinline__ int tile_step(const Geometry &g) { return PERSISTENT ? (int)gridDim.x : g.tiles; }

#if !WS
// ---------------------------------------------------------------------------------------------
// WS = 0: all warpgroups copy and compute.
__device__ __forceinline__ void run_plain(const bf16 *__restrict__ a, const bf16 *__restrict__ b,
                                          bf16 *__restrict__ c, float *__restrict__ ws, int M, int N, int K,
                                          unsigned ring) {
  const int tid = threadIdx.x, wg = tid >> 7;
  const Geometry g = geometry(M, N, K);
  const int split = (int)blockIdx.y;
  const int k_begin = g.k_begin;
  float acc[kMT][kAcc];
  for (int tile = first_tile(); tile < g.tiles; tile += tile_step(g)) {
    int m0, n0;
    tile_origin(tile, g, m0, n0);
#pragma unroll
    for (int s = 0; s < kStages - 2; ++s) {
      if (s < g.k_tiles)
        load_stage<kThreads>(ring + s * kStageBytes, ring + s * kStageBytes + kABytes, a, b, m0, n0, k_begin + s * kBK,
                             M, N, K, tid);
      tune::cp_async_commit();
    }
    zero_acc(acc);
    for (int kt = 0; kt < g.k_tiles; ++kt) {
      // slice kt has landed (this thread's copies), made visible to the async proxy, then to all
      tune::cp_async_wait<kStages - 3>();
      tune::fence_proxy_async_smem();
      __syncthreads();
      // every warpgroup has waited for the batch of slice kt - 2: its slot can be refilled
      const int nk = kt + kStages - 2;
      if (nk < g.k_tiles) {
        const unsigned slot = ring + (nk % kStages) * kStageBytes;
        load_stage<kThreads>(slot, slot + kABytes, a, b, m0, n0, k_begin + nk * kBK, M, N, K, tid);
      }
      tune::cp_async_commit();
      const unsigned slot = ring + (kt % kStages) * kStageBytes;
      fence_acc(acc);
      tune::wgmma_arrive();
      compute_stage(acc, slot, slot + kABytes, wg);
      tune::wgmma_commit();
      tune::wgmma_wait<1>();
      fence_acc(acc);
    }
    tune::wgmma_wait<0>();
    fence_acc(acc);
    epilogue(acc, m0, n0, split, c, ws, M, N, tid);
    if (PERSISTENT) {
      tune::cp_async_wait<0>();
      __syncthreads();  // no warpgroup still reads the ring when the next tile's prologue refills it
    }
  }
}

#else
// ---------------------------------------------------------------------------------------------
// WS = 1, 2: producer warpgroup kCons, consumer warpgroups 0 .. kCons - 1. Slot s of k iteration `it`
// (counted over all tiles of the block) is used for the (it / kStages)-th time: phase it / kStages
// of full[s] and empty[s].
__device__ __forceinline__ void producer(const bf16 *__restrict__ a, const bf16 *__restrict__ b, int M, int N, int K,
                                         unsigned ring, unsigned full, unsigned empty, const tune::tensormap *tmA,
                                         const tune::tensormap *tmB) {
  const int t = threadIdx.x - kCons * 128;
  if (t >= kProdThreads) return;  // idle threads of the producer warpgroup
  const Geometry g = geometry(M, N, K);
  const int k_begin = g.k_begin;
#if USE_TMA
  tune::tma_prefetch_desc(*tmA);
  tune::tma_prefetch_desc(*tmB);
#else
  (void)tmA;
  (void)tmB;
#endif
  int it = 0;
  for (int tile = first_tile(); tile < g.tiles; tile += tile_step(g)) {
    int m0, n0;
    tile_origin(tile, g, m0, n0);
    for (int kt = 0; kt < g.k_tiles; ++kt, ++it) {
      const int s = it % kStages;
      if (it >= kStages) tune::mbar_wait(empty + s * 8, ((it / kStages) - 1) & 1);
      const unsigned slot = ring + s * kStageBytes;
      const int k0 = k_begin + kt * kBK;
#if USE_TMA
      tune::mbar_arrive_expect_tx(full + s * 8, kStageBytes);
      tune::tma_load_2d(slot, *tmA, k0, m0, full + s * 8);
      if constexpr (B_COL) {
        tune::tma_load_2d(slot + kABytes, *tmB, k0, n0, full + s * 8);
      } else {
#pragma unroll
        for (int blk = 0; blk < kBN / 64; ++blk) tune::tma_load_2d(slot + kABytes + blk * 8192, *tmB, n0 + blk * 64, k0, full + s * 8);
      }
#else
      load_stage<kProdThreads>(slot, slot + kABytes, a, b, m0, n0, k0, M, N, K, t);
      tune::cp_async_mbar_arrive_noinc(full + s * 8);
#endif
    }
  }
  tune::cp_async_wait<0>();
}

// SPLIT_CLUSTER: the consumers' fp32 tile -> the ring (row-major, pitch kRedPitch), once every consumer
// warpgroup is done reading the ring (the producer has nothing left in flight: every slot it filled
// was consumed).
__device__ __forceinline__ void stash_tile(const float (&acc)[kMT][kAcc], unsigned ring, int ctid) {
  tune::named_bar_sync(3, kCons * 128);
  const int q = ctid & 3;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = frag_row(ctid, mt, h);
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        const unsigned addr = ring + (unsigned)((row * kRedPitch + 8 * j + 2 * q) * 4);
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(acc[mt][4 * j + 2 * h]),
                     "f"(acc[mt][4 * j + 2 * h + 1])
                     : "memory");
      }
    }
}

// SPLIT_CLUSTER, after a cluster barrier: this block's rows of the tile summed over the cluster's
// blocks (rank order), as bf16 to c; by the consumer threads.
__device__ __forceinline__ void cluster_reduce(bf16 *__restrict__ c, int M, int N, int K, unsigned ring, int ctid) {
  const Geometry g = geometry(M, N, K);
  int m0, n0;
  tile_origin(first_tile(), g, m0, n0);
  const unsigned split = tune::cluster_rank();
  constexpr int kRows = kBM / SPLIT_K, kVecs = kBN / 4;
  for (int i = ctid; i < kRows * kVecs; i += kCons * 128) {
    const int row = (int)split * kRows + i / kVecs, col = 4 * (i % kVecs);
    const unsigned addr = ring + (unsigned)((row * kRedPitch + col) * 4);
    float4 s = tune::ld_dsmem_f4(addr, 0);
#pragma unroll
    for (int r = 1; r < SPLIT_K; ++r) {
      const float4 v = tune::ld_dsmem_f4(addr, (unsigned)r);
      s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
    if (m0 + row < M && n0 + col < N)
      *reinterpret_cast<uint2 *>(c + (size_t)(m0 + row) * N + n0 + col) =
          make_uint2(tune::pack_bf16x2(s.x, s.y), tune::pack_bf16x2(s.z, s.w));
  }
}

// tmC, staging: the epilogue's tensor map and shared-memory boxes (kEpiTma), else unused.
__device__ __forceinline__ void consumer(bf16 *__restrict__ c, float *__restrict__ ws, int M, int N, int K,
                                         unsigned ring, unsigned full, unsigned empty, unsigned order,
                                         const tune::tensormap *tmC, unsigned staging) {
  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
  const Geometry g = geometry(M, N, K);
  const int split = (int)blockIdx.y;
  float acc[kMT][kAcc];
  int box = 0;  // epilogue_tma's boxes so far
  (void)tmC;
  (void)staging;
  (void)box;
  // i: the tile's place in the block's sequence, whose k slices are ring iterations i * k_tiles ..
  const int first = kPingPong ? wg : 0;
  for (int i = first, tile = first_tile() + first * tile_step(g); tile < g.tiles;
       i += kTileStride, tile += kTileStride * tile_step(g)) {
    int m0, n0;
    tile_origin(tile, g, m0, n0);
    zero_acc(acc);
    // ping-pong: warpgroup wg's j-th tile (i = 2 j + wg) waits for phase j - (wg == 0) of order[wg]
    if (kPingPong && i > 0) tune::mbar_wait(order + wg * 8, ((i >> 1) - (wg == 0)) & 1);
    int it = i * g.k_tiles;
    for (int kt = 0; kt < g.k_tiles; ++kt, ++it) {
      const int s = it % kStages;
      tune::mbar_wait(full + s * 8, (it / kStages) & 1);
      // ping-pong: the last slice of this tile is in: the other warpgroup may wait on the next tile's
      if (kPingPong && kt == g.k_tiles - 1 && (tid & 127) == 0) tune::mbar_arrive(order + (wg ^ 1) * 8);
      // the producers' cp.async data (generic proxy), seen complete, -> wgmma; TMA data is async-proxy
      // already and visible once the barrier completes (the fence is a MEMBAR.ALL.CTA per slot)
      if constexpr (!USE_TMA) tune::fence_proxy_async_smem();
      const unsigned slot = ring + s * kStageBytes;
      fence_acc(acc);
      tune::wgmma_arrive();
      compute_stage(acc, slot, slot + kABytes, wg);
      tune::wgmma_commit();
      tune::wgmma_wait<1>();  // the batch of iteration it - 1 is done: release its slot
      fence_acc(acc);
      if (kt > 0 && lane == 0) tune::mbar_arrive(empty + ((it - 1) % kStages) * 8);
    }
    tune::wgmma_wait<0>();
    fence_acc(acc);
    if (g.k_tiles > 0 && lane == 0) tune::mbar_arrive(empty + ((it - 1) % kStages) * 8);
#if USE_TMA
    if constexpr (kEpiTma) {
      epilogue_tma(acc, m0, n0, tmC, staging, box, tid);
      continue;
    }
#endif
    if constexpr (kClusterSplit) {
      stash_tile(acc, ring, tid);
      continue;
    }
    epilogue(acc, m0, n0, split, c, ws, M, N, tid);
  }
#if USE_TMA
  // the last boxes' stores: written before the block exits (and its shared memory with it)
  if (kEpiTma && (tid & 127) == 0) tune::bulk_wait_group<0>();
#endif
}
#endif

// tmA, tmB, tmC: the tensor map parameters (USE_TMA), else unused.
__device__ __forceinline__ void run(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c,
                                    float *__restrict__ ws, int M, int N, int K, const tune::tensormap *tmA = nullptr,
                                    const tune::tensormap *tmB = nullptr, const tune::tensormap *tmC = nullptr) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // 128-byte swizzled operands need 1024-byte aligned tiles: align the ring by hand
  const unsigned ring = (tune::smem_u32(smem_raw) + 1023u) & ~1023u;
#if !WS
  (void)tmA;
  (void)tmB;
  (void)tmC;
  run_plain(a, b, c, ws, M, N, K, ring);
#else
  {
    // shared memory: the ring, the epilogue's boxes (kEpiTma), the barriers
    const unsigned staging = ring + kStages * kStageBytes;
    const unsigned full = staging + kEpiBytes, empty = full + kStages * 8, order = empty + kStages * 8;
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        tune::mbar_init(full + s * 8, kProdThreads);
        tune::mbar_init(empty + s * 8, (kPingPong ? 1 : kCons) * 4);  // one arrival per warp that read the slot
      }
      if (kPingPong) {
        tune::mbar_init(order, 1);
        tune::mbar_init(order + 8, 1);
      }
      tune::fence_mbar_init();
    }
    __syncthreads();
    if (threadIdx.x >= kCons * 128) {
#if SETMAXNREG
      tune::setmaxnreg_dec<kProducerRegs>();
#endif
      producer(a, b, M, N, K, ring, full, empty, tmA, tmB);
    } else {
#if SETMAXNREG
      tune::setmaxnreg_inc<kConsumerRegs>();
#endif
      consumer(c, ws, M, N, K, ring, full, empty, order, tmC, staging);
    }
    if constexpr (kClusterSplit) {  // every thread of every block of the cluster, producers included
      tune::cluster_sync();         // every block's fp32 tile is in its ring
      if (threadIdx.x < kCons * 128) cluster_reduce(c, M, N, K, ring, threadIdx.x);
      tune::cluster_sync();         // no block exits while its tile is still read
    }
  }
#endif
}

}  // namespace gemm90
