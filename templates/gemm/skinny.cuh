// skinny.cuh: decode-shape GEMM (M <= 128 rows of a, all of B streamed once), recipes/gemm/skinny.lua.
//
//   c[M][N] = a[M][K] @ B,  B(k, n) = b[k * N + n] (B_COL = 0, b [K][N]) or b[n * K + k] (B_COL = 1,
//   b [N][K], nn.Linear), bf16 in, fp32 accumulation, bf16 out.
//
// The job is to keep B's read stream at copy speed: B is read exactly once, a (M x K, a few hundred
// KiB) is re-read per block from L2. One block owns BLOCK_N columns and 1 / SPLIT_K of the K range.
// Warp roles: WARPS_N x WARPS_K consumer warps and one producer warp whose lane 0 issues 2-D bulk
// tensor copies (TMA, 128-byte swizzle) into a STAGES-deep ring of shared-memory slots; each slot holds
// one BLOCK_K slice of a (BLOCK_M rows, rows >= M stay zero) and of b (BLOCK_N x BLOCK_K), so up to
// STAGES slices (STAGES * (BLOCK_M + BLOCK_N) * BLOCK_K * 2 bytes) are in flight per block with one
// thread issuing. Slot completion: `full` mbarrier (transaction bytes), release: a proxy fence, then
// the `empty` mbarrier (one arrival per consumer warp).
// Consumers: mma.sync m16n8k16 (ldmatrix from the swizzled slots; ldmatrix.trans for B_COL = 0). Warp
// (wn, wk) owns columns [wn * BLOCK_N / WARPS_N, +BLOCK_N / WARPS_N) for all BLOCK_M rows and the k16
// steps ks = wk, wk + WARPS_K, ... of every slice: BLOCK_M / 16 m16 tiles reuse each B fragment.
// Epilogue: the WARPS_K partial sums meet in shared memory (fp32, the drained ring), then the SPLIT_K
// blocks of a cluster (1, SPLIT_K, 1) sum each other's tiles through distributed shared memory, each
// block storing 1 / SPLIT_K of the bf16 outputs: no scratch, no second kernel.
//
// Defines: B_COL, BLOCK_M (16 * ceil(M / 16), from the problem), BLOCK_N (multiple of 64 for
// B_COL = 0: one tensor-map box per 64 columns), BLOCK_K (64 | 128 | 256), STAGES 2..16, WARPS_N,
// WARPS_K, SPLIT_K (cluster size 1..8). Kernel arguments as templates/gemm/gemm.cuh with TMA_ARGS: a,
// b, c, ws (unused), M, N, K, tmA (box {64, min(BLOCK_M, M)}), tmB (B_COL: box {64, BLOCK_N}; else
// {64, BLOCK_K}), both 128-byte swizzle.
// Launch: grid (N / BLOCK_N, SPLIT_K), cluster (1, SPLIT_K, 1) when SPLIT_K > 1, block kThreads,
// dynamic shared memory kSmemBytes (recipes/gemm/skinny.lua computes the same). Needs
// K % BLOCK_K == 0, K / BLOCK_K >= SPLIT_K, N % BLOCK_N == 0, M <= BLOCK_M.
//
// FP8 1 (recipes/gemm/fp8_skinny.lua): a and b e4m3 (b [N][K], B_COL 1), c bf16, the arguments of
// recipes/gemm/fp8.lua: a, b, c, scale_a, scale_b, M, N, K, tmA, tmB (boxes of 128 e4m3 = 128 bytes
// in k). The data path is the bf16 one byte for byte (a 128-byte box row, a 32-byte mma step:
// m16n8k32 e4m3 reads the fragments m16n8k16 bf16 does, common/mma_fp8.cuh); BLOCK_K counts e4m3.
// The tensor core's partial sums are promoted to the fp32 accumulators every 128 of K (one box),
// as gemm.fp8 does; SCALE_MODE 2 (1 x 128 and 128 x 128 block scales) applies the box's scales
// there, 0 (per tensor) and 1 (per row and column) at the store.
// MMA (default 0), the tensor-core op:
//   0  mma.sync from ldmatrix fragments: m16n8k16 bf16, or m16n8k32 e4m3 through the per-box partial
//      sums;
//   1  (FP8) fp16 mma.sync on fragments unpacked in registers (common/mma_fp8.cuh), summed straight
//      into the fp32 accumulators for SCALE_MODE 0 and 1 (exact products, fp32 sums; the promoted
//      path's adds of each box's sums are saved), through the partial sums for 2;
//   2  wgmma with the operands swapped, c^T = b a^T: b's slot is A (B_COL 1: K-major, BLOCK_N rows of
//      128 bytes per box; B_COL 0, bf16 only: MN-major, blocks of 64 columns by BLOCK_K rows), a's box
//      (BLOCK_M rows: wgmma N) is B, so the tensor cores read both from shared memory (FP8: with
//      nothing unpacked); the consumers are WARPS_N / 4 warpgroups (WARPS_N 4 or 8, WARPS_K 1), each
//      owning BLOCK_N / (WARPS_N / 4) columns: two warpgroups hold a 256-column block's accumulators at
//      BLOCK_M 128 (half the re-reads of a per column of c that 128-column blocks make). FP8: each
//      box's four k32 steps one batch into the partial sums, promoted (wgmma's fp8 sums, as
//      gemm.fp8's); bf16: a slice's k16 steps one batch into the accumulators.
#include <cuda_bf16.h>

#include "common/cluster.cuh"
#include "common/cp_async.cuh"
#include "common/mbarrier.cuh"
#include "common/mma.cuh"
#include "common/tma.cuh"

#ifndef FP8
#define FP8 0
#endif
#ifndef MMA
#define MMA 0
#endif
#if FP8
#include "common/mma_fp8.cuh"
#if !B_COL || !defined(SCALE_MODE)
#error "skinny.cuh with FP8 1 needs B_COL 1 and -D SCALE_MODE (0 tensor, 1 row, 2 block)"
#endif
#endif
#if MMA == 1 && !FP8
#error "skinny.cuh: MMA 1 needs FP8 1"
#endif
#if MMA == 2
#include "common/wgmma.cuh"
#include "common/wgmma_ops_swap.cuh"
#endif
#if !defined(B_COL) || !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(BLOCK_K) || !defined(STAGES) || \
    !defined(WARPS_N) || !defined(WARPS_K) || !defined(SPLIT_K)
#error "skinny.cuh needs -D B_COL BLOCK_M BLOCK_N BLOCK_K STAGES WARPS_N WARPS_K SPLIT_K"
#endif

typedef __nv_bfloat16 bf16;

namespace skinny {

constexpr int kBM = BLOCK_M, kBN = BLOCK_N, kBK = BLOCK_K, kStages = STAGES;
constexpr int kWN = WARPS_N, kWK = WARPS_K, kConsumers = kWN * kWK;
constexpr int kThreads = 32 * (kConsumers + 1);
constexpr int kElemBytes = FP8 ? 1 : 2;
constexpr int kBoxK = 128 / kElemBytes;  // k per 128-byte box row: 64 bf16, 128 e4m3
constexpr int kBoxes = kBK / kBoxK;      // boxes per slice
constexpr int kMT = kBM / 16;          // m16 tiles (every warp covers all rows)
constexpr int kWarpN = kBN / kWN;      // columns per warp
constexpr int kNT = kWarpN / 8;        // n8 tiles per warp
constexpr int kKS = kBoxes * 4;        // mma k steps per slice (32 bytes of k each: k16 bf16, k32 e4m3)
constexpr int kKSW = kKS / kWK;        // k steps per warp per slice
constexpr int kABox = kBM * 128;       // one box of a: kBM rows of 128 bytes
constexpr int kABytes = kBM * kBK * kElemBytes;
constexpr int kBBytes = kBN * kBK * kElemBytes;
constexpr int kStageBytes = kABytes + kBBytes;
constexpr int kRingBytes = kStages * kStageBytes;
constexpr int kRedPitch = kBN + 4;     // fp32 per row of the reduction tile (16-byte rows, fewer conflicts)
constexpr int kRedBytes = kBM * kRedPitch * 4;
constexpr int kBodyBytes = kRingBytes > kRedBytes ? kRingBytes : kRedBytes;
constexpr int kSmemBytes = 1024 + kBodyBytes + 2 * kStages * 8;  // + alignment slack, + barriers
// A ring that leaves room for a second block per SM (228 KiB, 1 KiB reserved per block) asks the
// compiler for registers that let two blocks fit too.
constexpr int kMinBlocks = kSmemBytes <= 113 * 1024 ? 2 : 1;
// FP8: whether the tensor core's sums go through per-box partial sums (block scales, or an e4m3 op)
#if FP8
constexpr bool kPartials = SCALE_MODE == 2 || MMA != 1;
#else
constexpr bool kPartials = false;
#endif
constexpr int kWarpgroups = kConsumers / 4 > 0 ? kConsumers / 4 : 1;  // MMA 2: consumer warpgroups,
constexpr int kWgTiles = kBN / 64 / kWarpgroups;  // the m64 tiles (64 columns of c each) of one ...
constexpr int kWgAcc = kBM / 2;                   // ... and the fp32 accumulators of each (wgmma N = BLOCK_M)

static_assert(kBM % 16 == 0 && kBM >= 16 && kBM <= 128, "BLOCK_M must be 16..128, a multiple of 16");
static_assert(kBK * kElemBytes == 128 || kBK * kElemBytes == 256 || kBK * kElemBytes == 512,
              "BLOCK_K must be 128, 256 or 512 bytes of k (64..256 bf16, 128..512 e4m3)");
static_assert(kBN % (16 * kWN) == 0, "BLOCK_N / WARPS_N must be a multiple of 16");
static_assert(B_COL || kBN % 64 == 0, "row-major b: BLOCK_N must be a multiple of 64 (one box per 64 columns)");
static_assert(B_COL || kBK <= 256, "row-major b: BLOCK_K rows per box, at most 256");
static_assert(kBN <= 256, "BLOCK_N at most 256 (tensor-map box)");
static_assert(4 % kWK == 0, "WARPS_K must divide a box's 4 k steps");
static_assert(kConsumers >= 1 && kConsumers <= 16, "1..16 consumer warps");
static_assert(kStages >= 2 && kStages <= 16, "STAGES must be 2..16");
static_assert(SPLIT_K >= 1 && SPLIT_K <= 8, "SPLIT_K is a cluster size, 1..8");
static_assert(kMT * kNT * 4 * (kPartials ? 2 : 1) <= 128, "at most 128 fp32 accumulators per thread (and the partial sums)");
static_assert(kSmemBytes <= 227 * 1024, "shared memory over the 227 KiB per-block limit of sm_90");

// A consumer warp's turn at slice it: wait until its slot is full, and the slot's address.
__device__ __forceinline__ unsigned slot_acquire(unsigned ring, unsigned bars, int it) {
  const int s = it % kStages, u = it / kStages;
  tune::mbar_wait(bars + 8u * s, (unsigned)(u & 1));
  return ring + (unsigned)(s * kStageBytes);
}

// A consumer warp is done with slice it's slot: this lane's reads of it (generic proxy) are ordered
// before the producer's next TMA write (async proxy) into it, then lane 0 counts the warp out. Without
// the fence a refill can land under reads still in flight (wrong sums in a few timed launches, seen
// with two 9-warp blocks per SM in clusters).
__device__ __forceinline__ void slot_release(unsigned bars, int it, int lane) {
  tune::fence_proxy_async_smem();
  __syncwarp();
  if (lane == 0) tune::mbar_arrive(bars + 8u * (kStages + it % kStages));
}

// Producer: lane 0 of the last warp fills slot it % STAGES with slice k_first + it.
__device__ __forceinline__ void produce(unsigned ring, unsigned bars, const tune::tensormap &tmA,
                                        const tune::tensormap &tmB, int M, int n0, int k_first, int nk) {
  const int arows = M < kBM ? M : kBM;
  const unsigned tx = (unsigned)(arows * 128 * kBoxes + kBBytes);
  for (int it = 0; it < nk; ++it) {
    const int s = it % kStages, u = it / kStages;
    const unsigned full = bars + 8u * s, empty = bars + 8u * (kStages + s);
    if (it >= kStages) tune::mbar_wait(empty, (unsigned)((u - 1) & 1));
    const unsigned slot = ring + (unsigned)(s * kStageBytes);
    const int k0 = (k_first + it) * kBK;
    tune::mbar_arrive_expect_tx(full, tx);
#pragma unroll
    for (int j = 0; j < kBoxes; ++j) tune::tma_load_2d(slot + j * kABox, tmA, k0 + kBoxK * j, 0, full);
    const unsigned sB = slot + kABytes;
#if B_COL
#pragma unroll
    for (int j = 0; j < kBoxes; ++j) tune::tma_load_2d(sB + j * kBN * 128, tmB, k0 + kBoxK * j, n0, full);
#else
#pragma unroll
    for (int j = 0; j < kBN / 64; ++j) tune::tma_load_2d(sB + j * kBK * 128, tmB, n0 + 64 * j, k0, full);
#endif
  }
}

// The scales of FP8 (gemm.fp8's layouts; unused for bf16): tensor [1] and [1], row [M] and [N],
// block [M][K / 128] and [N / 128][K / 128].
struct Scales {
  const float *a, *b;
};

#if FP8
// acc += part * (the scales of 128-wide K block kb, block mode): the tensor core's partial sums of
// one box promoted to fp32 (the box's first mma overwrites part). A warp's columns lie in one
// 128-column scale block (kWarpN <= 128, aligned); rows past M are zero in a and read no scale, and
// with M <= 8 the rows 8..15 of each m16 tile (h 1) are skipped.
__device__ __forceinline__ void promote(float (&acc)[kMT][kNT][4], float (&part)[kMT][kNT][4], Scales sc, int M,
                                        int K, int kb, int n_warp, int g) {
#if SCALE_MODE == 2
  const int kbs = K / 128;
  const float sb = sc.b[(n_warp >> 7) * kbs + kb];
#else
  (void)sc, (void)M, (void)K, (void)kb, (void)n_warp, (void)g;
#endif
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (kMT == 1 && h == 1 && M <= 8) continue;
#if SCALE_MODE == 2
      const int row = mt * 16 + g + 8 * h;
      const float s = row < M ? sc.a[row * kbs + kb] * sb : 0.f;
#else
      const float s = 1.f;
#endif
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; ++e) acc[mt][nt][e] += part[mt][nt][e] * s;
    }
}
#endif

#if FP8 && MMA == 1
// d (+)= one k step of e4m3 fragments (af: kMT A, bfr: kNT B) through fp16 mma.sync: each A unpacked
// once for every n tile, each B once for every m tile; fresh: d starts from zero (a box's first step).
__device__ __forceinline__ void mma_step_unpacked(float (&d)[kMT][kNT][4], const unsigned (&af)[kMT][4],
                                                  const unsigned (&bfr)[kNT][2], bool fresh) {
  unsigned ha[kMT][2][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) tune::unpack_a_e4m3(af[mt], ha[mt]);
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    unsigned hb[4];
    tune::unpack_b_e4m3(bfr[nt][0], bfr[nt][1], hb);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      if (fresh)
#pragma unroll
        for (int e = 0; e < 4; ++e) d[mt][nt][e] = 0.f;
      tune::mma_e4m3_16832_unpacked(d[mt][nt], ha[mt], hb);
    }
  }
}
#endif

// Consumer warp (wn, wk): acc += its k steps of every slice (FP8: through the promoted partial sums).
__device__ __forceinline__ void consume(float (&acc)[kMT][kNT][4], unsigned ring, unsigned bars, int nk, int wn,
                                        int wk, int lane, Scales sc, int M, int K, int n0, int k_first) {
#if FP8
  float part[kMT][kNT][4];  // kPartials: written by each box's first mma (else unused)
#else
  (void)sc, (void)M, (void)K, (void)n0, (void)k_first;
#endif
  const int r8 = lane & 7, i = lane >> 3;
  // a (ldmatrix, non-trans): row r8 + 8 (i & 1) of each m16 tile, k chunk 2 ksl + (i >> 1)
  const unsigned a_off = (unsigned)((r8 + 8 * (i & 1)) * 128);
  const int a_hi = i >> 1;
#if B_COL
  // b [n][k] rows: n = wn * kWarpN + 16 p + r8 + 8 (i >> 1), k chunk 2 ksl + (i & 1)
  const unsigned b_off = (unsigned)((wn * kWarpN + r8 + 8 * (i >> 1)) * 128);
  const int b_hi = i & 1;
#else
  // b [k][n] rows (trans): k = 16 ks + r8 + 8 (i & 1), n chunk of column wn * kWarpN + 16 p + 8 (i >> 1)
  const unsigned b_off = (unsigned)((r8 + 8 * (i & 1)) * 128);
  const int b_n = wn * kWarpN + 8 * (i >> 1);
#endif
  for (int it = 0; it < nk; ++it) {
    const unsigned sA = slot_acquire(ring, bars, it), sB = sA + kABytes;
#pragma unroll
    for (int kk = 0; kk < kKSW; ++kk) {
      const int ks = kk * kWK + wk;
      const int box = ks >> 2, ksl = ks & 3;
      unsigned af[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
        tune::ldmatrix_x4(af[mt], sA + (unsigned)(box * kABox + mt * 16 * 128) + a_off +
                                      (unsigned)(((2 * ksl + a_hi) ^ r8) << 4));
      unsigned bfr[kNT][2];
#pragma unroll
      for (int p = 0; p < kNT / 2; ++p) {
        unsigned r[4];
#if B_COL
        tune::ldmatrix_x4(r, sB + (unsigned)(box * kBN * 128 + p * 16 * 128) + b_off +
                                 (unsigned)(((2 * ksl + b_hi) ^ r8) << 4));
#else
        const int n = b_n + 16 * p;
        tune::ldmatrix_x4_trans(r, sB + (unsigned)((n >> 6) * kBK * 128 + ks * 16 * 128) + b_off +
                                       (unsigned)((((n & 63) >> 3) ^ r8) << 4));
#endif
        bfr[2 * p][0] = r[0];
        bfr[2 * p][1] = r[1];
        bfr[2 * p + 1][0] = r[2];
        bfr[2 * p + 1][1] = r[3];
      }
#if FP8
      constexpr int kBoxSteps = 4 / kWK;  // this warp's k steps per box
      const bool box_first = kk % kBoxSteps == 0;
#if MMA == 1
      if (kPartials) mma_step_unpacked(part, af, bfr, box_first);
      else mma_step_unpacked(acc, af, bfr, false);
#else
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          if (box_first)
            tune::mma_e4m3_16832_first(part[mt][nt], af[mt], bfr[nt][0], bfr[nt][1]);
          else
            tune::mma_e4m3_16832(part[mt][nt], af[mt], bfr[nt][0], bfr[nt][1]);
        }
#endif
      // the warp's last step of this box: promote (every 128 of K)
      if (kPartials && (kk + 1) % kBoxSteps == 0)
        promote(acc, part, sc, M, K, (k_first + it) * kBoxes + box, n0 + wn * kWarpN, lane >> 2);
#else
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) tune::mma_bf16_16816(acc[mt][nt], af[mt], bfr[nt][0], bfr[nt][1]);
#endif
    }
    slot_release(bars, it, lane);
  }
}

#if MMA == 2
static_assert((kWN == 4 || kWN == 8) && kWK == 1, "MMA 2: the consumers are one or two warpgroups (WARPS_N 4 or 8, WARPS_K 1)");
static_assert(kWgTiles >= 1 && kWgTiles * 64 * kWarpgroups == kBN, "MMA 2: BLOCK_N / 64 m64 tiles shared by the warpgroups");

// d (=|+)= one 32-byte k step: A 64 columns of b (tile mt of the block), B the kBM rows of a (K-major), k step
// ks of box `box` of the slot at sA (a) and sB (b); 128-byte swizzle. A is K-major for B_COL 1 (a row
// of 64 bf16 or 128 e4m3 per column, the step 32 bytes in), MN-major for B_COL 0 (common/wgmma.cuh:
// the k16 step 16 rows of 128 bytes further).
__device__ __forceinline__ void wgmma_step(float (&d)[kWgAcc], unsigned sA, unsigned sB, int box, int ks, int mt,
                                           int accumulate) {
  const unsigned long long db =
      tune::wgmma_desc(sA + (unsigned)(box * kABox + ks * 32), 16, 1024, tune::kWgmmaSwizzle128B);
#if B_COL
  const unsigned long long da =
      tune::wgmma_desc(sB + (unsigned)(box * kBN * 128 + mt * 64 * 128 + ks * 32), 16, 1024, tune::kWgmmaSwizzle128B);
#else
  const unsigned long long da = tune::wgmma_desc(sB + (unsigned)(mt * kBK * 128 + (box * 4 + ks) * 16 * 128),
                                                 kBK * 128, 1024, tune::kWgmmaSwizzle128B);
#endif
#if FP8
  tune::wgmma_ss_e4m3_narrow<kBM>(d, da, db, accumulate);
#else
  tune::wgmma_ss_bf16_ta<kBM, B_COL ? 0 : 1, 0>(d, da, db, accumulate);
#endif
}

// MMA 2's accumulators (wgmma m64nBLOCK_M, common/wgmma.cuh's layout with c^T's rows): element e of
// tile mt (of the block) in warp w of its warpgroup, lane (g, t) is c[m][n], m = 8 (e >> 2) + 2 t +
// (e & 1), n = 64 mt + 16 w + g + 8 ((e >> 1) & 1).
__device__ __forceinline__ int wg_row(int e, int t) { return 8 * (e >> 2) + 2 * t + (e & 1); }
__device__ __forceinline__ int wg_col(int mt, int e, int w, int g) { return 64 * mt + 16 * w + g + 8 * ((e >> 1) & 1); }

// acc += part (times the scales of 128-wide K block kb, block mode): one box's wgmma sums promoted;
// n0: the warpgroup's first column. A tile's 64 columns lie in one 128-column scale block; rows past M
// read no scale.
__device__ __forceinline__ void promote_wgmma(float (&acc)[kWgTiles][kWgAcc], const float (&part)[kWgTiles][kWgAcc],
                                              Scales sc, int M, int K, int kb, int n0, int t) {
#if FP8 && SCALE_MODE == 2
  const int kbs = K / 128;
  float sa[4];  // rows wg_row(e, t) for e & 1 = i, e >> 2 = j: sa[2 j + i]
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = wg_row(((r >> 1) << 2) | (r & 1), t);
    sa[r] = row < M ? sc.a[row * kbs + kb] : 0.f;
  }
#else
  (void)sc, (void)M, (void)K, (void)kb, (void)n0, (void)t;
#endif
#pragma unroll
  for (int mt = 0; mt < kWgTiles; ++mt) {
#if FP8 && SCALE_MODE == 2
    const float sb = sc.b[((n0 + 64 * mt) >> 7) * kbs + kb];
#endif
#pragma unroll
    for (int e = 0; e < kWgAcc; ++e) {
#if FP8 && SCALE_MODE == 2
      acc[mt][e] += part[mt][e] * (sa[2 * (e >> 2) + (e & 1)] * sb);
#else
      acc[mt][e] += part[mt][e];
#endif
    }
  }
}

// Consumer warpgroup wg: acc += every slice, four 32-byte k steps per box for each of its m64 tiles;
// FP8: each box one batch into the partial sums, waited for and promoted; bf16: the slice one batch.
__device__ __forceinline__ void consume_wgmma(float (&acc)[kWgTiles][kWgAcc], unsigned ring, unsigned bars, int nk,
                                              int wg, int lane, Scales sc, int M, int K, int n0, int k_first) {
  float part[kWgTiles][kWgAcc];  // kPartials (else unused)
  auto &dst = kPartials ? part : acc;
  const int tile0 = wg * kWgTiles;
  for (int it = 0; it < nk; ++it) {
    const unsigned sA = slot_acquire(ring, bars, it), sB = sA + kABytes;
#pragma unroll
    for (int box = 0; box < kBoxes; ++box) {
#pragma unroll
      for (int mt = 0; mt < kWgTiles; ++mt) tune::wgmma_fence_acc(dst[mt]);
      tune::wgmma_arrive();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
#pragma unroll
        for (int mt = 0; mt < kWgTiles; ++mt)
          wgmma_step(dst[mt], sA, sB, box, ks, tile0 + mt, kPartials && ks == 0 ? 0 : 1);
      if (kPartials || box == kBoxes - 1) {
        tune::wgmma_commit();
        tune::wgmma_wait<0>();
#pragma unroll
        for (int mt = 0; mt < kWgTiles; ++mt) tune::wgmma_fence_acc(dst[mt]);
      }
      if (kPartials) promote_wgmma(acc, part, sc, M, K, (k_first + it) * kBoxes + box, n0 + 64 * tile0, lane & 3);
    }
    // the warpgroup's reads of the slot are complete (wgmma_wait) before the release
    slot_release(bars, it, lane);
  }
}

// Consumer warp `warp`'s share of its warpgroup's sums into the reduction tile red[m][n] (rows m < rows).
__device__ __forceinline__ void stash_wgmma(float *red, const float (&acc)[kWgTiles][kWgAcc], int rows, int warp,
                                            int lane) {
  const int g = lane >> 2, t = lane & 3, tile0 = (warp >> 2) * kWgTiles;
#pragma unroll
  for (int mt = 0; mt < kWgTiles; ++mt)
#pragma unroll
    for (int e = 0; e < kWgAcc; ++e) {
      const int m = wg_row(e, t);
      if (m < rows) red[m * kRedPitch + wg_col(tile0 + mt, e, warp & 3, g)] = acc[mt][e];
    }
}
#endif

// c[row][n .. n + 3] = bf16(v), FP8 per tensor or per row and column: with the scales.
__device__ __forceinline__ void store4(bf16 *__restrict__ c, Scales sc, int row, int N, int n, float4 v) {
#if FP8 && SCALE_MODE == 0
  const float s = sc.a[0] * sc.b[0];
  v = make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
#elif FP8 && SCALE_MODE == 1
  // scalar loads: an f32 tensor need only be 4-byte aligned (a view of a larger one, say)
  const float sa = sc.a[row];
  v = make_float4(v.x * sa * sc.b[n], v.y * sa * sc.b[n + 1], v.z * sa * sc.b[n + 2], v.w * sa * sc.b[n + 3]);
#else
  (void)sc;
#endif
  *reinterpret_cast<uint2 *>(c + (size_t)row * N + n) = make_uint2(tune::pack_bf16x2(v.x, v.y), tune::pack_bf16x2(v.z, v.w));
}

__device__ __forceinline__ void run(bf16 *__restrict__ c, Scales sc, int M, int N, int K, const tune::tensormap &tmA,
                                    const tune::tensormap &tmB) {
  extern __shared__ unsigned char smem_raw[];
  const unsigned raw = tune::smem_u32(smem_raw);
  const unsigned ring = (raw + 1023u) & ~1023u;  // 128-byte swizzle: slots on 1024-byte boundaries
  unsigned char *body = smem_raw + (ring - raw);
  const unsigned bars = ring + kBodyBytes;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int n0 = (int)blockIdx.x * kBN;
  const int split = SPLIT_K > 1 ? (int)tune::cluster_rank() : 0;
  const int nk_all = K / kBK;
  const int k_first = split * nk_all / SPLIT_K;
  const int nk = (split + 1) * nk_all / SPLIT_K - k_first;

  // rows M..kBM-1 of every a box stay zero (the copies write M rows)
  if (M < kBM) {
    constexpr int kRingBoxes = kStages * kBoxes;
    const int zrows = kBM - M;
    for (int idx = tid; idx < kRingBoxes * zrows * 8; idx += kThreads) {
      const int box = idx / (zrows * 8), rem = idx % (zrows * 8);
      const int s = box / kBoxes, j = box % kBoxes;
      *reinterpret_cast<uint4 *>(body + s * kStageBytes + j * kABox + (M + rem / 8) * 128 + (rem % 8) * 16) =
          make_uint4(0u, 0u, 0u, 0u);
    }
    tune::fence_proxy_async_smem();  // before the copies (async proxy) write the same slots
  }
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      tune::mbar_init(bars + 8u * s, 1u);                              // full: the producer's arrival + bytes
      tune::mbar_init(bars + 8u * (kStages + s), (unsigned)kConsumers);  // empty: one per consumer warp
    }
    tune::fence_mbar_init();
  }
  __syncthreads();

  const int g = lane >> 2, q = lane & 3;
  const int wn = warp % kWN, wk = warp / kWN;
#if MMA == 2
  float acc[kWgTiles][kWgAcc];
#pragma unroll
  for (int mt = 0; mt < kWgTiles; ++mt)
#pragma unroll
    for (int e = 0; e < kWgAcc; ++e) acc[mt][e] = 0.f;
#else
  float acc[kMT][kNT][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.f;
#endif

  if (warp == kConsumers) {
    if (lane == 0) produce(ring, bars, tmA, tmB, M, n0, k_first, nk);
  } else {
#if MMA == 2
    (void)wk;
    consume_wgmma(acc, ring, bars, nk, warp >> 2, lane, sc, M, K, n0, k_first);
#else
    consume(acc, ring, bars, nk, wn, wk, lane, sc, M, K, n0, k_first);
#endif
  }

  // every slice has landed and been read: the ring becomes the fp32 reduction tile red[kBM][kRedPitch]
  __syncthreads();
  float *red = reinterpret_cast<float *>(body);
  const int rows = M < kBM ? M : kBM;
  if constexpr (kWK > 1) {
    for (int idx = tid; idx < rows * kRedPitch; idx += kThreads) red[idx] = 0.f;
    __syncthreads();
  }
#if MMA == 2
  if (warp < kConsumers) stash_wgmma(red, acc, rows, warp, lane);
#else
  if (warp < kConsumers) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = mt * 16 + g + 8 * h;
        if (row < rows) {
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            float *dst = red + row * kRedPitch + wn * kWarpN + nt * 8 + 2 * q;
            if constexpr (kWK > 1) {
              atomicAdd(dst, acc[mt][nt][2 * h]);
              atomicAdd(dst + 1, acc[mt][nt][2 * h + 1]);
            } else {
              *reinterpret_cast<float2 *>(dst) = make_float2(acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]);
            }
          }
        }
      }
  }
#endif
  // outputs in groups of 4 columns; with SPLIT_K > 1 block `split` sums groups split, split + S, ...
  // over the cluster's tiles (distributed shared memory) and stores them
  constexpr int kGroupsPerRow = kBN / 4;
  const int groups = rows * kGroupsPerRow;
#if SPLIT_K > 1
  tune::cluster_sync();  // every block's tile is complete
  const unsigned red_addr = ring;
  for (int gi = split * kThreads + tid; gi < groups; gi += kThreads * SPLIT_K) {
    const int row = gi / kGroupsPerRow, col = (gi % kGroupsPerRow) * 4;
    const unsigned off = red_addr + (unsigned)((row * kRedPitch + col) * 4);
    float4 v = *reinterpret_cast<const float4 *>(red + row * kRedPitch + col);
#pragma unroll
    for (int r = 1; r < SPLIT_K; ++r) {
      const float4 w = tune::ld_dsmem_f4(off, (unsigned)((split + r) % SPLIT_K));
      v.x += w.x;
      v.y += w.y;
      v.z += w.z;
      v.w += w.w;
    }
    store4(c, sc, row, N, n0 + col, v);
  }
  tune::cluster_sync();  // no block leaves while another still reads its tile
#else
  __syncthreads();
  for (int gi = tid; gi < groups; gi += kThreads) {
    const int row = gi / kGroupsPerRow, col = (gi % kGroupsPerRow) * 4;
    const float4 v = *reinterpret_cast<const float4 *>(red + row * kRedPitch + col);
    store4(c, sc, row, N, n0 + col, v);
  }
#endif
}

}  // namespace skinny

// a and b are read through the tensor maps only.
#if FP8
extern "C" __global__ void __launch_bounds__(skinny::kThreads, skinny::kMinBlocks)
gemm_skinny(const unsigned char *__restrict__ a, const unsigned char *__restrict__ b, bf16 *__restrict__ c,
            const float *__restrict__ scale_a, const float *__restrict__ scale_b, int M, int N, int K,
            const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmB) {
  (void)a, (void)b;
  skinny::run(c, skinny::Scales{scale_a, scale_b}, M, N, K, tmA, tmB);
}
#else
extern "C" __global__ void __launch_bounds__(skinny::kThreads, skinny::kMinBlocks)
gemm_skinny(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c, float *__restrict__ ws,
            int M, int N, int K, const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmB) {
  (void)a, (void)b, (void)ws;
  skinny::run(c, skinny::Scales{nullptr, nullptr}, M, N, K, tmA, tmB);
}
#endif
