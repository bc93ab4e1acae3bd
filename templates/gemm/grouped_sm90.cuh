// grouped_sm90.cuh: bf16 grouped GEMM for Mixture-of-Experts on Hopper, one launch over all experts:
//
//   c_e = a_e @ w[e]^T for every expert e,  w [E][N][K] bf16 (nn.Linear weights, K contiguous),
//   fp32 accumulation, bf16 output. LAYOUT selects where expert e's rows are:
//   LAYOUT 0 (contiguous): a [M][K] and c [M][N] hold the rows of all experts sorted by expert;
//     groups = offsets, i32 [E + 1]: expert e owns rows offsets[e] .. offsets[e + 1] (M = offsets[E]).
//   LAYOUT 1 (masked): a [E][M][K], c [E][M][N] with a capacity of M rows per expert; groups =
//     counts, i32 [E]: rows 0 .. counts[e] of expert e are valid (a count is clamped to 0 .. M).
//     With ZERO_PAD [1] the rows past the count are written with zeros (the producer warpgroup's
//     idle warps store them while the mainloop runs), so that every element of c is defined; with
//     ZERO_PAD 0 they are not written.
//
// SWIGLU [0] 1: the gate/up projection of an MoE layer with SwiGLU in the epilogue,
//   c_e = silu(a_e @ gate_e^T) * (a_e @ up_e^T), w [E][2N][K]: rows 0 .. N - 1 of expert e are its gate
//   projection, rows N .. 2N - 1 its up projection (vLLM's w13 as it is: gate first, up second), c
//   [rows][N]. A tile of BLOCK_N accumulator columns holds BLOCK_N / 2 gate columns and the same up
//   columns (two weight boxes per stage, from rows n0 and N + n0), and stores BLOCK_N / 2 output
//   columns computed from the fp32 accumulators (common/activation.cuh silu), rounded to bf16 once.
//   Needs USE_TMA 1. recipes/moe/swiglu.lua.
//
// Kernel (extern "C"; recipes/moe/grouped.lua and moe/swiglu.lua pack the arguments in this order):
//   grouped_gemm_bf16(a, w, c, groups, E, M, N, K, tmA, tmW, tmC)     (SWIGLU 1: grouped_swiglu_bf16)
// Both layouts are one 2-D view: a rows [rows][K] with rows = M (contiguous) or E * M (masked), w
// rows [E * N][K], c rows [rows][N]; expert e's rows are [row0(e), row0(e) + count(e)) of it. The
// tensor maps (`const __grid_constant__ tune::tensormap`, docs/tensormap-args.md) cover these 2-D
// views with 128-byte swizzle: tmA boxes of 64 k x min(BLOCK_M, rows), tmW 64 k x min(BLOCK_N, E * N)
// (a box at row e * N + n0: rows past N belong to the next expert and only feed columns that are
// never stored), tmC 64 x min(64, rows). Variants without USE_TMA take the maps and never read them.
// SWIGLU: w rows [E * 2N][K], tmW boxes of 64 k x min(BLOCK_N / 2, E * 2N) (a gate box past N reads up
// rows, an up box past 2N the next expert's: columns that are never stored either).
//
// Scheduling: the output tiles are (expert, m tile, n tile) with ceil(count(e) / BLOCK_M) m tiles per
// expert. Every block first builds the prefix sums of the experts' m tiles in shared memory (E <= 256,
// one scan over the counts), so that tile t of the flattened list (common/tile_order.cuh over
// total m tiles x n tiles, RASTER) maps to its expert by a binary search. The grid depends on the
// problem's dims only, never on the counts (one CUDA graph serves every routing): an upper bound of
// the tile count, (M // BLOCK_M + min(E, M)) * ceil(N / BLOCK_N) (contiguous: sum of ceil(c_e /
// BLOCK_M) <= M // BLOCK_M + the experts with rows; recipes/moe/shared/experts.lua) or E * ceil(M /
// BLOCK_M) * ceil(N / BLOCK_N) (masked); blocks past the real tile count do nothing. PERSISTENT 1: at most one wave of blocks, block b takes tiles b, b + gridDim.x, ...
// A tile that runs past its expert's rows reads the next expert's rows of a (or TMA zero fill past
// the tensor, cp.async zero fill past the expert); those rows of the accumulator are never stored.
//
// Mainloop and epilogues are templates/gemm/gemm_sm90.cuh's (WS 1 or 2: a producer warpgroup with
// TMA (USE_TMA 1) or cp.async (PRODUCER_WARPS copying warps), setmaxnreg, consumer warpgroups on
// wgmma; WS 2 is its ping-pong), with B_COL 1 and SPLIT_K 1. Epilogue: a tile whose BLOCK_M rows all
// belong to its expert goes out through gemm_sm90's TMA epilogue (USE_TMA, N >= 64); any other tile
// through its direct stores, which skip rows past the expert's last row and columns past N.
//
// Tunables: BLOCK_M 64 | 128, BLOCK_N 64 | 128 | 256, CONSUMERS 1 | 2, STAGES 3..5, WS 1 | 2,
// USE_TMA 0 | 1, PRODUCER_WARPS (cp.async copying warps), PERSISTENT 0 | 1, RASTER; ranges as
// gemm_sm90.cuh static_asserts them. Shapes: N % 8 == 0, K % 8 == 0 (USE_TMA: K >= 64), E 1..256.
// Launch: block = 128 * (CONSUMERS + 1); dynamic shared memory = gemm90::kSmemBytes + tune::kTileTableBytes (the
// expert table after the ring's barriers): recipes/moe/grouped.lua.
#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

#if !defined(LAYOUT)
#error "grouped_sm90.cuh needs -D LAYOUT=0 (contiguous) | 1 (masked)"
#endif
#ifndef ZERO_PAD
#define ZERO_PAD 1
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
#ifndef SWIGLU
#define SWIGLU 0
#endif
// gemm_sm90.cuh's knobs that the grouped kernel fixes: weights are stored [N][K], no split-K, and the
// producer warpgroup always hands its registers to the consumers
#define B_COL 1
#define SPLIT_K 1
#define SETMAXNREG 1

#include "common/activation.cuh"
#include "common/tma.cuh"
#include "gemm/expert_tiles.cuh"
#include "gemm/gemm_sm90.cuh"

namespace grouped90 {

using namespace gemm90;

constexpr bool kMasked = LAYOUT == 1;
constexpr int kLoadWarps = USE_TMA ? 1 : PRODUCER_WARPS;  // producer warps that fill the ring
constexpr bool kSwiglu = SWIGLU == 1;
constexpr int kOutN = kSwiglu ? kBN / 2 : kBN;  // output columns of a tile
constexpr int kWBoxRows = kOutN;                 // weight rows of one box (SWIGLU: two boxes per stage)

static_assert(LAYOUT == 0 || LAYOUT == 1, "LAYOUT must be 0 (contiguous) or 1 (masked)");
static_assert(kWS, "the grouped GEMM runs with a producer warpgroup (WS 1 or 2)");
static_assert(kBM <= 128, "BLOCK_M must be 64 or 128");
static_assert(kThreads >= tune::kMaxExperts, "one thread per expert builds the tile table");
static_assert(kSmemBytes + tune::kTileTableBytes <= 227 * 1024, "shared memory over the 227 KiB per-block limit of sm_90");
static_assert(SWIGLU == 0 || SWIGLU == 1, "SWIGLU must be 0 or 1");
static_assert(!kSwiglu || USE_TMA, "SWIGLU loads its gate and up boxes with TMA (USE_TMA 1)");

struct Tile {
  int m0, n0;     // first row (of the 2-D views) and first column of c
  int row_end;    // one past the expert's last row: rows from here on are not stored
  int w_row;      // first row of the tile's weights in the [E * N][K] view: e * N + n0 (SWIGLU: the gate
                  // box's in [E * 2N][K], e * 2N + n0; the up box's is N further)
};

// The experts' rows (gemm/expert_tiles.cuh) and the m tiles of each (tile0, in shared memory).
struct Sched {
  tune::ExpertRows<kMasked> er;
  const int *tile0;  // tile0[e]: the first m tile of expert e; tile0[E]: all m tiles
  int N, tiles_m, tiles_n, tiles;
  __device__ __forceinline__ Sched(const tune::ExpertRows<kMasked> &r, const int *t0, int N_) : er(r), tile0(t0), N(N_) {
    tiles_m = tile0[er.E];
    tiles_n = (N + kOutN - 1) / kOutN;
    tiles = tiles_m * tiles_n;
  }
  __device__ __forceinline__ int w_rows() const { return (kSwiglu ? 2 : 1) * N; }  // weight rows per expert
  __device__ __forceinline__ int step() const { return PERSISTENT ? (int)gridDim.x : tiles; }
  __device__ __forceinline__ Tile at(int tile) const {
    const tune::tile_rc rc = tune::tile_order_grouped(tile, tiles_m, tiles_n, RASTER);
    const int e = tune::expert_of_tile(tile0, er.E, rc.m);
    Tile t;
    const int r0 = er.row0(e);
    t.m0 = r0 + (rc.m - tile0[e]) * kBM;
    t.row_end = r0 + er.count(e);
    t.n0 = rc.n * kOutN;
    t.w_row = e * w_rows() + t.n0;
    return t;
  }
};

// The producer warpgroup: as gemm90::producer, over this block's tiles of the grouped list.
__device__ __forceinline__ void producer(const bf16 *__restrict__ a, const bf16 *__restrict__ w, bf16 *__restrict__ c,
                                         const Sched &s, int K, unsigned ring, unsigned full, unsigned empty,
                                         const tune::tensormap *tmA, const tune::tensormap *tmW) {
  const int t = threadIdx.x - kCons * 128;
  if constexpr (kMasked && ZERO_PAD) {
    // ZERO_PAD: rows count(e) .. M - 1 of every expert's c (gemm/expert_tiles.cuh zero_padding)
    if (kLoadWarps < 4 && t >= kLoadWarps * 32) {  // the warps that do not load
      tune::zero_padding(c, s.er, s.N, t - kLoadWarps * 32, 128 - kLoadWarps * 32);
      return;
    }
    if (kLoadWarps == 4) tune::zero_padding(c, s.er, s.N, t, 128);  // every warp loads: zero first
  }
  if (t >= kProdThreads) return;
  const int k_tiles = (K + kBK - 1) / kBK;
#if USE_TMA
  tune::tma_prefetch_desc(*tmA);
  tune::tma_prefetch_desc(*tmW);
  // boxes clipped to the tensors (the recipe's maps): what a slot's copies complete
  const unsigned slot_bytes =
      (unsigned)(min(kBM, s.er.rows()) + (kSwiglu ? 2 : 1) * min(kWBoxRows, s.er.E * s.w_rows())) * 128u;
#else
  (void)tmA;
  (void)tmW;
#endif
  int it = 0;
  for (int tile = (int)blockIdx.x; tile < s.tiles; tile += s.step()) {
    const Tile tl = s.at(tile);
    for (int kt = 0; kt < k_tiles; ++kt, ++it) {
      const int st = it % kStages;
      if (it >= kStages) tune::mbar_wait(empty + st * 8, ((it / kStages) - 1) & 1);
      const unsigned slot = ring + st * kStageBytes;
      const int k0 = kt * kBK;
#if USE_TMA
      tune::mbar_arrive_expect_tx(full + st * 8, slot_bytes);
      tune::tma_load_2d(slot, *tmA, k0, tl.m0, full + st * 8);
      tune::tma_load_2d(slot + kABytes, *tmW, k0, tl.w_row, full + st * 8);
      if constexpr (kSwiglu) tune::tma_load_2d(slot + kABytes + kWBoxRows * 128, *tmW, k0, tl.w_row + s.N, full + st * 8);
#else
      load_stage<kProdThreads>(slot, slot + kABytes, a, w + (size_t)(tl.w_row - tl.n0) * K, tl.m0, tl.n0, k0,
                               tl.row_end, s.N, K, t);
      tune::cp_async_mbar_arrive_noinc(full + st * 8);
#endif
    }
  }
  tune::cp_async_wait<0>();
}

#if SWIGLU
// h = silu(gate) * up from the accumulators of a [gate | up] tile. Tile column j < BLOCK_N / 2
// is gate column j and column BLOCK_N / 2 + j its up column; a thread holds both (chunks j / 8 and
// j / 8 + BLOCK_N / 16 of common/wgmma.cuh's fragment layout: indices i and i + kAcc / 2), so h has
// the fragment layout of a BLOCK_N / 2 wide tile, which gemm90's epilogues store.
__device__ __forceinline__ void swiglu(const float (&acc)[kMT][kAcc], float (&h)[kMT][kAcc / 2]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int i = 0; i < kAcc / 2; ++i) h[mt][i] = tune::silu(acc[mt][i]) * acc[mt][i + kAcc / 2];
}

// h (a BLOCK_N / 2 wide tile) to c, as the consumer stores a plain tile: a whole tile of the
// expert's rows as TMA boxes (64 columns each, clipped at N by tmC), any other tile, and tiles under 64
// columns wide, through direct stores that skip rows past the expert and columns past N.
__device__ __forceinline__ void store_swiglu(const float (&h)[kMT][kAcc / 2], const Tile &tl, const Sched &s,
                                             bf16 *__restrict__ c, const tune::tensormap *tmC, unsigned staging, int &box,
                                             int tid) {
#if USE_TMA
  if constexpr (kOutN >= 64) {
    if (s.N >= 64 && tl.m0 + kBM <= tl.row_end) {
      epilogue_tma(h, tl.m0, tl.n0, tmC, staging, box, tid);
      return;
    }
  }
#endif
  (void)tmC;
  (void)staging;
  (void)box;
  epilogue(h, tl.m0, tl.n0, 0, c, nullptr, tl.row_end, s.N, tid);
}
#endif

// The consumer warpgroups: as gemm90::consumer (WS 1 and ping-pong), with the grouped tiles and their
// row bound in the epilogue.
__device__ __forceinline__ void consumer(bf16 *__restrict__ c, const Sched &s, int K, unsigned ring, unsigned full,
                                         unsigned empty, unsigned order, const tune::tensormap *tmC,
                                         unsigned staging) {
  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
  const int k_tiles = (K + kBK - 1) / kBK;
  float acc[kMT][kAcc];
  int box = 0;  // epilogue_tma's boxes so far
  (void)tmC;
  (void)staging;
  (void)box;
  const int first = kPingPong ? wg : 0;
  for (int i = first, tile = (int)blockIdx.x + first * s.step(); tile < s.tiles;
       i += kTileStride, tile += kTileStride * s.step()) {
    const Tile tl = s.at(tile);
    zero_acc(acc);
    if (kPingPong && i > 0) tune::mbar_wait(order + wg * 8, ((i >> 1) - (wg == 0)) & 1);
    int it = i * k_tiles;
    for (int kt = 0; kt < k_tiles; ++kt, ++it) {
      const int st = it % kStages;
      tune::mbar_wait(full + st * 8, (it / kStages) & 1);
      if (kPingPong && kt == k_tiles - 1 && (tid & 127) == 0) tune::mbar_arrive(order + (wg ^ 1) * 8);
      if constexpr (!USE_TMA) tune::fence_proxy_async_smem();
      const unsigned slot = ring + st * kStageBytes;
      fence_acc(acc);
      tune::wgmma_arrive();
      compute_stage(acc, slot, slot + kABytes, wg);
      tune::wgmma_commit();
      tune::wgmma_wait<1>();
      fence_acc(acc);
      if (kt > 0 && lane == 0) tune::mbar_arrive(empty + ((it - 1) % kStages) * 8);
    }
    tune::wgmma_wait<0>();
    fence_acc(acc);
    if (k_tiles > 0 && lane == 0) tune::mbar_arrive(empty + ((it - 1) % kStages) * 8);
#if SWIGLU
    float h[kMT][kAcc / 2];
    swiglu(acc, h);
    store_swiglu(h, tl, s, c, tmC, staging, box, tid);
#else
#if USE_TMA
    // a whole tile of the expert's rows: TMA boxes (64 columns each, clipped at N by tmC)
    if (s.N >= 64 && tl.m0 + kBM <= tl.row_end) {
      epilogue_tma(acc, tl.m0, tl.n0, tmC, staging, box, tid);
      continue;
    }
#endif
    epilogue(acc, tl.m0, tl.n0, 0, c, nullptr, tl.row_end, s.N, tid);
#endif
  }
#if USE_TMA
  if ((tid & 127) == 0) tune::bulk_wait_group<0>();
#endif
}

__device__ __forceinline__ void run(const bf16 *__restrict__ a, const bf16 *__restrict__ w, bf16 *__restrict__ c,
                                    const int *__restrict__ groups, int E, int M, int N, int K,
                                    const tune::tensormap *tmA, const tune::tensormap *tmW,
                                    const tune::tensormap *tmC) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned base = tune::smem_u32(smem_raw);
  const unsigned ring = (base + 1023u) & ~1023u;
  const unsigned staging = ring + kStages * kStageBytes;
  const unsigned full = staging + kEpiBytes, empty = full + kStages * 8, order = empty + kStages * 8;
  // the tile table after the barriers (dynamic: static shared memory would be padded to the ring's
  // 1024-byte alignment)
  int *tile0 = reinterpret_cast<int *>(smem_raw + (full + kBarBytes - base));
  const tune::ExpertRows<kMasked> er{groups, E, M};
  tune::build_tile_table<kBM>(er, tile0, tile0 + tune::kMaxExperts + 1);
  if (threadIdx.x == 0) {
    for (int st = 0; st < kStages; ++st) {
      tune::mbar_init(full + st * 8, kProdThreads);
      tune::mbar_init(empty + st * 8, (kPingPong ? 1 : kCons) * 4);
    }
    if (kPingPong) {
      tune::mbar_init(order, 1);
      tune::mbar_init(order + 8, 1);
    }
    tune::fence_mbar_init();
  }
  __syncthreads();  // the barriers and the tile table
  const Sched s(er, tile0, N);
  if (threadIdx.x >= kCons * 128) {
    tune::setmaxnreg_dec<kProducerRegs>();
    producer(a, w, c, s, K, ring, full, empty, tmA, tmW);
  } else {
    tune::setmaxnreg_inc<kConsumerRegs>();
    consumer(c, s, K, ring, full, empty, order, tmC, staging);
  }
}

}  // namespace grouped90

#if SWIGLU
#define GROUPED_KERNEL grouped_swiglu_bf16
#else
#define GROUPED_KERNEL grouped_gemm_bf16
#endif

extern "C" __global__ void __launch_bounds__(gemm90::kThreads, 1)
GROUPED_KERNEL(const bf16 *__restrict__ a, const bf16 *__restrict__ w, bf16 *__restrict__ c,
                  const int *__restrict__ groups, int E, int M, int N, int K, const __grid_constant__ tune::tensormap tmA,
                  const __grid_constant__ tune::tensormap tmW, const __grid_constant__ tune::tensormap tmC) {
  grouped90::run(a, w, c, groups, E, M, N, K, &tmA, &tmW, &tmC);
}
