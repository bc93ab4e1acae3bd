// grouped_fp8_sm90.cuh: the FP8 grouped GEMM of Mixture-of-Experts on Hopper (sm_90a), one launch over
// all experts on gemm/fp8_mainloop_sm90.cuh (wgmma e4m3, TMA ring, the three scalings, its tunables):
//
//   c[row][n] = bf16( sum_k sa(row, k) * sw(e, n, k) * a[row][k] * w[e][n][k] )  for every row of expert e,
//   w [E][N][K] e4m3 (nn.Linear weights per expert), a e4m3, c bf16; LAYOUT as gemm/expert_tiles.cuh:
//   0 contiguous: a [M][K], c [M][N] sorted by expert, groups = offsets [E + 1];
//   1 masked: a [E][M][K], c [E][M][N], groups = counts [E]; with ZERO_PAD [1] the rows past a count
//     are written with zeros (the producer warpgroup's warps 1-3 store them while the mainloop runs).
// Scales (f32, device memory), over the rows of a's 2-D view (M or E * M) and per expert for w:
//   SCALE_MODE 0 tensor  scale_a [1], scale_w [E]                  (an expert's weight scale)
//              1 row     scale_a [rows] per token, scale_w [E][N] per expert and channel
//              2 block   scale_a [rows][KB] (1 x 128), scale_w [E][ceil(N / 128)][KB] (128 x 128 per
//                        expert), KB = ceil(K / 128): DeepGEMM's grouped scales
// So a tile of expert e is fp8_mainloop's tile with b = w[e] and scale_b = scale_w + e * (1 | N | NB * KB).
//
// The tile source, ExpertTiles: every block first builds the prefix sums of the experts' m tiles in
// shared memory (expert_tiles.cuh), so that tile t of the flattened list (all experts' m tiles x the
// n tiles, ordered by RASTER) maps to its expert by a binary search. The grid depends on the dims only
// (one CUDA graph serves every routing): the upper bound (M // BLOCK_M + min(E, M)) * ceil(N /
// BLOCK_N) (contiguous) or E * ceil(M / BLOCK_M) * ceil(N / BLOCK_N) (masked) of the tiles, or one wave with
// PERSISTENT; blocks past the real tile count only zero padding. A tile that runs past its expert's
// rows reads the next expert's rows of a (TMA zero fill past the tensor); those rows are never stored.
// b's map views w as [E * N][K] (a box at row e * N + n0; rows past N feed columns never stored).
//
// Kernel: grouped_gemm_fp8(a, w, c, groups, scale_a, scale_w, E, M, N, K, tmA, tmW)
// (recipes/moe/grouped_fp8.lua). Shapes: E 1..256, N % 16 == 0, K % 16 == 0, K >= 128.
// Launch: block = 128 * (CONSUMERS + 1); dynamic shared memory = fp8gemm::kSmemBytes +
// tune::kTileTableBytes (the table after the mainloop's row scales).
#include "gemm/expert_tiles.cuh"
#include "gemm/fp8_mainloop_sm90.cuh"

#if !defined(LAYOUT)
#error "grouped_fp8_sm90.cuh needs -D LAYOUT=0 (contiguous) | 1 (masked)"
#endif
#ifndef ZERO_PAD
#define ZERO_PAD 1
#endif

namespace fp8gemm {

constexpr bool kMasked = LAYOUT == 1;
static_assert(LAYOUT == 0 || LAYOUT == 1, "LAYOUT must be 0 (contiguous) or 1 (masked)");
static_assert(kThreads >= tune::kMaxExperts, "one thread per expert builds the tile table");
static_assert(kSmemBytes + tune::kTileTableBytes <= 227 * 1024, "shared memory over the 227 KiB per-block limit of sm_90");

struct ExpertTiles {
  tune::ExpertRows<kMasked> er;
  const int *tile0;
  const float *scale_w;
  size_t sw_expert;  // scale_w floats per expert
  int N, tiles_m, tiles_n, tiles, k_blocks, a_rows, b_rows;
  __device__ __forceinline__ ExpertTiles(const tune::ExpertRows<kMasked> &r, const int *t0, const float *sw, int N_,
                                         int K)
      : er(r), tile0(t0), scale_w(sw), N(N_) {
    tiles_m = tile0[er.E];
    tiles_n = (N + kBN - 1) / kBN;
    tiles = tiles_m * tiles_n;
    k_blocks = (K + kBK - 1) / kBK;
    a_rows = er.rows();
    b_rows = er.E * N;
    sw_expert = kMode == kScaleBlock ? (size_t)((N + 127) / 128) * k_blocks : kMode == kScaleRow ? (size_t)N : 1;
  }
  __device__ __forceinline__ int step() const { return PERSISTENT ? (int)gridDim.x : tiles; }
  __device__ __forceinline__ Tile at(int tile) const {
    const tune::tile_rc rc = tune::tile_order_grouped(tile, tiles_m, tiles_n, RASTER);
    const int e = tune::expert_of_tile(tile0, er.E, rc.m);
    const int r0 = er.row0(e);
    Tile t;
    t.m0 = r0 + (rc.m - tile0[e]) * kBM;
    t.n0 = rc.n * kBN;
    t.row_end = r0 + er.count(e);
    t.b_row = e * N + t.n0;
    t.sb = scale_w + e * sw_expert;
    return t;
  }
};

// The producer warpgroup's idle warps (fp8_mainloop_sm90.cuh roles): the masked layout's padding
// rows of c, zeroed (ZERO_PAD).
template <bool kZero> struct PadRows {
  bf16 *c;
  tune::ExpertRows<kMasked> er;
  int N;
  __device__ __forceinline__ void operator()(int t, int nt) const {
    if constexpr (kZero) tune::zero_padding(c, er, N, t, nt);
  }
};

}  // namespace fp8gemm

// a, w: e4m3 bytes (read through tmA and tmW only); scale_a, scale_w: f32 (SCALE_MODE's shapes).
extern "C" __global__ void __launch_bounds__(fp8gemm::kThreads, 1)
grouped_gemm_fp8(const unsigned char *__restrict__ a, const unsigned char *__restrict__ w, bf16 *__restrict__ c,
                 const int *__restrict__ groups, const float *__restrict__ scale_a, const float *__restrict__ scale_w,
                 int E, int M, int N, int K, const __grid_constant__ tune::tensormap tmA,
                 const __grid_constant__ tune::tensormap tmW) {
  (void)a;
  (void)w;
  using namespace fp8gemm;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const Smem s = smem_layout(smem_raw);
  const unsigned base = tune::smem_u32(smem_raw);
  int *tile0 = reinterpret_cast<int *>(smem_raw + (s.extra - base));
  const tune::ExpertRows<kMasked> er{groups, E, M};
  tune::build_tile_table<kBM>(er, tile0, tile0 + tune::kMaxExperts + 1);
  init_barriers(s);
  __syncthreads();  // the barriers and the tile table
  roles(ExpertTiles(er, tile0, scale_w, N, K), s, scale_a, c, tmA, tmW, PadRows<kMasked && ZERO_PAD>{c, er, N});
}
