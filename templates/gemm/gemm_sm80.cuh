// gemm_sm80.cuh: PATH 0 of gemm.cuh, the Ampere-style tensor-core GEMM (runs on sm_80 .. sm_90a).
//
// One block computes one BLOCK_M x BLOCK_N tile of c (or, with SPLIT_K > 1, its partial sum over one
// K / SPLIT_K slice, grid.y = split). WARPS_M x WARPS_N warps each own a (BLOCK_M / WARPS_M) x
// (BLOCK_N / WARPS_N) sub-tile: MT = rows / 16 m16 tiles by NT = cols / 8 n8 tiles of fp32
// accumulators (MT * NT * 4 registers per thread).
//
// Stages of one tile: tile_setup (tile order, per-thread copy addresses), load_stage (cp.async of one
// BLOCK_K slice of a and b into a STAGES-deep ring, one commit group per slice), compute_stage
// (ldmatrix fragments, mma.sync m16n8k16), epilogue (bf16 through shared memory to 16-byte stores, or
// fp32 partials straight to ws).
//
// Shared-memory tiles (bf16): a [BLOCK_M][BLOCK_K] k-contiguous; b [BLOCK_N][BLOCK_K] (B_COL = 1,
// k-contiguous, read with ldmatrix) or [BLOCK_K][BLOCK_N] (B_COL = 0, n-contiguous, read with
// ldmatrix.trans). SWIZZLE 0 pads every row by 16 bytes; SWIZZLE 1 keeps rows dense and stores
// 16-byte chunk c of row r at c ^ (r % 8) (rows of >= 8 chunks) or c ^ ((r / 2) % 4) (rows of 4
// chunks, BLOCK_K = 32): the 8 rows an ldmatrix reads land in 8 different bank groups either way.
//
// Tunables: BLOCK_M 16..256, BLOCK_N 32..256, BLOCK_K 32 | 64, WARPS_M, WARPS_N (1..8 warps in all),
// STAGES 2..5, SWIZZLE 0 | 1, RASTER (tile order group), SPLIT_K.
// Tails: any M; N and K multiples of 8 (16-byte rows). Chunks past M, N or K are zero-filled on load
// (cp.async with a zero source size) and not stored; split s takes k in [s * kSplit, (s + 1) * kSplit)
// with kSplit = ceil(K / (SPLIT_K * BLOCK_K)) * BLOCK_K, so splits past K only add zeros.
// Launch: grid = (ceil(M / BLOCK_M) * ceil(N / BLOCK_N), SPLIT_K), block = 32 * WARPS_M * WARPS_N,
// dynamic shared memory = kSmemBytes below (recipes/gemm.lua: smem_sm80).
#include "common/cp_async.cuh"
#include "common/cp_async_zfill.cuh"
#include "common/mma.cuh"
#include "common/tile_order.cuh"

#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(BLOCK_K) || !defined(WARPS_M) || !defined(WARPS_N) || \
    !defined(STAGES) || !defined(SWIZZLE)
#error "gemm_sm80.cuh needs -D BLOCK_M BLOCK_N BLOCK_K WARPS_M WARPS_N STAGES SWIZZLE"
#endif

namespace gemm80 {

constexpr int kBM = BLOCK_M, kBN = BLOCK_N, kBK = BLOCK_K;
constexpr int kWarps = WARPS_M * WARPS_N;
constexpr int kThreads = kWarps * 32;
constexpr int kStages = STAGES;
constexpr int kWarpM = kBM / WARPS_M;  // rows of a warp's sub-tile
constexpr int kWarpN = kBN / WARPS_N;  // columns of a warp's sub-tile
constexpr int kMT = kWarpM / 16;       // m16 tiles per warp
constexpr int kNT = kWarpN / 8;        // n8 tiles per warp
constexpr int kKS = kBK / 16;          // k16 steps per BLOCK_K slice
constexpr int kPad = SWIZZLE ? 0 : 8;  // elements of padding per shared-memory row

// a tile [kBM][kBK]
constexpr int kAChunks = kBK / 8;  // 16-byte chunks per row
constexpr int kAPitch = kBK + kPad;
constexpr int kAElems = kBM * kAPitch;
// b tile: [kBN][kBK] (B_COL) or [kBK][kBN]
constexpr int kBRows = B_COL ? kBN : kBK;
constexpr int kBRowElems = B_COL ? kBK : kBN;
constexpr int kBChunks = kBRowElems / 8;
constexpr int kBPitch = kBRowElems + kPad;
constexpr int kBElems = kBRows * kBPitch;
constexpr int kStageElems = kAElems + kBElems;
constexpr int kPipeBytes = kStages * kStageElems * 2;
// epilogue staging of the bf16 tile (SPLIT_K == 1): rows padded by 16 bytes
constexpr int kCPitch = kBN + 8;
constexpr int kCBytes = SPLIT_K > 1 ? 0 : kBM * kCPitch * 2;
constexpr int kSmemBytes = kPipeBytes > kCBytes ? kPipeBytes : kCBytes;

static_assert(kBM % (16 * WARPS_M) == 0 && kMT >= 1, "BLOCK_M must be a multiple of 16 * WARPS_M");
static_assert(kBN % (16 * WARPS_N) == 0 && kNT % 2 == 0, "BLOCK_N / WARPS_N must be a multiple of 16");
static_assert(kBK == 32 || kBK == 64, "BLOCK_K must be 32 or 64");
static_assert(kWarps >= 1 && kWarps <= 8, "1..8 warps");
static_assert(kStages >= 2 && kStages <= 5, "STAGES must be 2..5");
static_assert(SWIZZLE == 0 || SWIZZLE == 1, "SWIZZLE must be 0 or 1");
static_assert(kMT * kNT * 4 <= 128, "at most 128 fp32 accumulators per thread");
static_assert(kSmemBytes <= 227 * 1024, "shared memory over the 227 KiB per-block limit of sm_90");

// Physical 16-byte chunk of logical chunk `chunk` in row `row` of a tile with CHUNKS chunks per row.
template <int CHUNKS> __device__ __forceinline__ int swz(int row, int chunk) {
  if constexpr (!SWIZZLE) return chunk;
  else if constexpr (CHUNKS >= 8) return chunk ^ (row & 7);
  else {
    static_assert(CHUNKS == 4, "swizzled rows have 4 or >= 8 chunks");
    return chunk ^ ((row >> 1) & 3);
  }
}
// The swizzle term of a lane whose ldmatrix row is 8 * x + (lane % 8): rows start at multiples of 8.
template <int CHUNKS> __device__ __forceinline__ int lane_swz(int lane) { return swz<CHUNKS>(lane & 7, 0); }

// Byte offset of (row, chunk) in a tile with PITCH elements per row.
template <int CHUNKS, int PITCH> __device__ __forceinline__ unsigned tile_off(int row, int chunk) {
  return (unsigned)(row * PITCH + swz<CHUNKS>(row, chunk) * 8) * 2u;
}

// ---------------------------------------------------------------------------------------------
// tile_setup: per-thread copy assignments, fixed for the whole tile. Copy i of a thread moves chunk
// (tid + i * kThreads) of the tile: row = id / CHUNKS, chunk = id % CHUNKS.
template <int ROWS, int CHUNKS> struct CopyPlan {
  static constexpr int kTotal = ROWS * CHUNKS;
  static constexpr int kIters = (kTotal + kThreads - 1) / kThreads;
  static constexpr bool kEven = kTotal % kThreads == 0;
};
using APlan = CopyPlan<kBM, kAChunks>;
using BPlan = CopyPlan<kBRows, kBChunks>;

struct Tile {
  int m0, n0;     // first row and column of the output tile
  int k_begin;    // first k of this block's split
  int k_tiles;    // BLOCK_K slices in the split
  int split;      // grid.y
};

__device__ __forceinline__ Tile tile_setup(int M, int N, int K) {
  const int tiles_m = (M + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN;
  const tune::tile_rc rc = tune::tile_order_grouped((int)blockIdx.x, tiles_m, tiles_n, RASTER);
  Tile t;
  t.m0 = rc.m * kBM;
  t.n0 = rc.n * kBN;
  t.split = (int)blockIdx.y;
  const int k_split = (K + SPLIT_K * kBK - 1) / (SPLIT_K * kBK) * kBK;  // a multiple of kBK
  t.k_begin = t.split * k_split;
  const int k_len = min(k_split, K - t.k_begin);
  t.k_tiles = k_len > 0 ? (k_len + kBK - 1) / kBK : 0;
  return t;
}

// ---------------------------------------------------------------------------------------------
// load_stage: the BLOCK_K slice starting at k0 -> ring slot at shared byte address `slot`.
__device__ __forceinline__ void load_stage(unsigned slot, const bf16 *__restrict__ a, const bf16 *__restrict__ b,
                                           const Tile &t, int k0, int M, int N, int K, int tid) {
#pragma unroll
  for (int i = 0; i < APlan::kIters; ++i) {
    const int id = tid + i * kThreads;
    if (APlan::kEven || id < APlan::kTotal) {
      const int r = id / kAChunks, ch = id % kAChunks;
      const int gm = t.m0 + r, gk = k0 + ch * 8;
      const bool ok = gm < M && gk < K;
      const bf16 *src = ok ? a + (size_t)gm * K + gk : a;
      tune::g2s_copy16_zfill(slot + tile_off<kAChunks, kAPitch>(r, ch), src, ok);
    }
  }
  const unsigned sB = slot + kAElems * 2;
#pragma unroll
  for (int i = 0; i < BPlan::kIters; ++i) {
    const int id = tid + i * kThreads;
    if (BPlan::kEven || id < BPlan::kTotal) {
      const int r = id / kBChunks, ch = id % kBChunks;
      const int gn = B_COL ? t.n0 + r : t.n0 + ch * 8, gk = B_COL ? k0 + ch * 8 : k0 + r;
      const bool ok = gn < N && gk < K;
      const bf16 *src = !ok ? b : B_COL ? b + (size_t)gn * K + gk : b + (size_t)gk * N + gn;
      tune::g2s_copy16_zfill(sB + tile_off<kBChunks, kBPitch>(r, ch), src, ok);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// compute_stage: acc += a_slice * b_slice for this warp's sub-tile, from one ring slot.
// ldmatrix lane roles (i = lane / 8 selects the 8x8 matrix, r8 = lane % 8 its row):
//   a (non-trans):       rows 8 * (i & 1) + r8 of the m16 tile, k chunk 2 * ks + (i >> 1)
//   b, B_COL (non-trans): rows (n) 8 * (i >> 1) + r8 of an n16 pair, k chunk 2 * ks + (i & 1)
//   b, row-major (trans): rows (k) 16 * ks + 8 * (i & 1) + r8, n chunk 2 * pair + (i >> 1)
// giving b[0], b[1] of n8 tile 2p and b[2], b[3] of tile 2p + 1.
struct Frag {
  unsigned a_row;  // byte offset of this lane's a row (swizzle excluded)
  unsigned b_row;  // byte offset of this lane's b row (swizzle excluded)
  int a_sw, b_sw;  // lane swizzle terms (XORed into chunk indices)
  int a_hi, b_hi;  // lane's extra chunk (0 | 1)
  int b_chunk0;    // row-major b: first n chunk of this warp
};

__device__ __forceinline__ Frag frag_setup(int warp, int lane) {
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int r8 = lane & 7, i = lane >> 3;
  Frag f;
  f.a_row = (unsigned)((wm * kWarpM + r8 + 8 * (i & 1)) * kAPitch * 2);
  f.a_hi = i >> 1;
  f.a_sw = lane_swz<kAChunks>(lane);
  f.b_sw = lane_swz<kBChunks>(lane);
  if constexpr (B_COL) {
    f.b_row = (unsigned)((wn * kWarpN + r8 + 8 * (i >> 1)) * kBPitch * 2);
    f.b_hi = i & 1;
    f.b_chunk0 = 0;
  } else {
    f.b_row = (unsigned)((r8 + 8 * (i & 1)) * kBPitch * 2);
    f.b_hi = i >> 1;
    f.b_chunk0 = wn * kWarpN / 8;
  }
  return f;
}

__device__ __forceinline__ void compute_stage(float (&acc)[kMT][kNT][4], unsigned slot, const Frag &f) {
  const unsigned sA = slot, sB = slot + kAElems * 2;
#pragma unroll
  for (int ks = 0; ks < kKS; ++ks) {
    unsigned af[kMT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      const int ch = (2 * ks + f.a_hi) ^ f.a_sw;
      tune::ldmatrix_x4(af[mt], sA + f.a_row + (unsigned)(mt * 16 * kAPitch * 2) + (unsigned)(ch << 4));
    }
    unsigned bfr[kNT][2];
#pragma unroll
    for (int p = 0; p < kNT / 2; ++p) {
      unsigned r[4];
      if constexpr (B_COL) {
        const int ch = (2 * ks + f.b_hi) ^ f.b_sw;
        tune::ldmatrix_x4(r, sB + f.b_row + (unsigned)(p * 16 * kBPitch * 2) + (unsigned)(ch << 4));
      } else {
        const int ch = (f.b_chunk0 + 2 * p + f.b_hi) ^ f.b_sw;
        tune::ldmatrix_x4_trans(r, sB + f.b_row + (unsigned)(ks * 16 * kBPitch * 2) + (unsigned)(ch << 4));
      }
      bfr[2 * p][0] = r[0];
      bfr[2 * p][1] = r[1];
      bfr[2 * p + 1][0] = r[2];
      bfr[2 * p + 1][1] = r[3];
    }
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) tune::mma_bf16_16816(acc[mt][nt], af[mt], bfr[nt][0], bfr[nt][1]);
  }
}

// ---------------------------------------------------------------------------------------------
// epilogue. SPLIT_K == 1: bf16 into the (drained) ring's shared memory, then 16-byte coalesced rows
// of c. SPLIT_K > 1: fp32 pairs straight to ws[split] (each quad of lanes writes 32 contiguous bytes).
__device__ __forceinline__ void epilogue(const float (&acc)[kMT][kNT][4], const Tile &t, bf16 *__restrict__ c,
                                         float *__restrict__ ws, int M, int N, unsigned char *smem, int tid) {
  const int warp = tid >> 5, lane = tid & 31;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int g = lane >> 2, q = lane & 3;
  if constexpr (SPLIT_K > 1) {
    float *out = ws + (size_t)t.split * M * N;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = t.m0 + wm * kWarpM + mt * 16 + g + 8 * h;
        if (row < M) {
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            const int col = t.n0 + wn * kWarpN + nt * 8 + 2 * q;
            if (col < N) *reinterpret_cast<float2 *>(out + (size_t)row * N + col) = make_float2(acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]);
          }
        }
      }
  } else {
    bf16 *sC = reinterpret_cast<bf16 *>(smem);
    tune::cp_async_wait<0>();  // only empty groups can be pending; drain them before reusing the ring
    __syncthreads();           // every warp is done reading the ring
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wm * kWarpM + mt * 16 + g + 8 * h;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const int col = wn * kWarpN + nt * 8 + 2 * q;
          *reinterpret_cast<unsigned *>(sC + row * kCPitch + col) =
              tune::pack_bf16x2(acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]);
        }
      }
    __syncthreads();
    constexpr int kRowChunks = kBN / 8;
    constexpr int kTotal = kBM * kRowChunks;
#pragma unroll
    for (int i = 0; i < (kTotal + kThreads - 1) / kThreads; ++i) {
      const int id = tid + i * kThreads;
      if (kTotal % kThreads == 0 || id < kTotal) {
        const int r = id / kRowChunks, ch = id % kRowChunks;
        if (t.m0 + r < M && t.n0 + ch * 8 < N)
          *reinterpret_cast<uint4 *>(c + (size_t)(t.m0 + r) * N + t.n0 + ch * 8) =
              *reinterpret_cast<const uint4 *>(sC + r * kCPitch + ch * 8);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The whole tile: prologue fills STAGES - 1 slots; iteration kt waits for slice kt, refills the slot
// that slice kt - 1 used (every warp is past it after the barrier) with slice kt + STAGES - 1, then
// computes slice kt. One commit group per iteration, empty past the end, so the wait count is fixed.
__device__ __forceinline__ void run(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c,
                                    float *__restrict__ ws, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const Tile t = tile_setup(M, N, K);
  const unsigned ring = tune::smem_u32(smem);
  constexpr unsigned kSlotBytes = kStageElems * 2;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < t.k_tiles) load_stage(ring + s * kSlotBytes, a, b, t, t.k_begin + s * kBK, M, N, K, tid);
    tune::cp_async_commit();
  }

  float acc[kMT][kNT][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.f;

  const Frag f = frag_setup(warp, lane);
  int read_slot = 0, write_slot = kStages - 1;
  for (int kt = 0; kt < t.k_tiles; ++kt) {
    tune::cp_async_wait<kStages - 2>();
    __syncthreads();
    const int nk = kt + kStages - 1;
    if (nk < t.k_tiles) load_stage(ring + write_slot * kSlotBytes, a, b, t, t.k_begin + nk * kBK, M, N, K, tid);
    tune::cp_async_commit();
    compute_stage(acc, ring + read_slot * kSlotBytes, f);
    read_slot = read_slot + 1 == kStages ? 0 : read_slot + 1;
    write_slot = write_slot + 1 == kStages ? 0 : write_slot + 1;
  }
  epilogue(acc, t, c, ws, M, N, smem, tid);
}

}  // namespace gemm80
