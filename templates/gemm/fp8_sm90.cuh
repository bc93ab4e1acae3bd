// fp8_sm90.cuh: the FP8 GEMM of Hopper (sm_90a), one GEMM per launch on gemm/fp8_mainloop_sm90.cuh
// (wgmma e4m3 x e4m3 -> fp32 from TMA-filled shared memory, the three scalings, the tunables):
//
//   c[m][n] = bf16( sum_k sa(m, k) * sb(n, k) * a[m][k] * b[n][k] ),  a [M][K], b [N][K] e4m3, c [M][N] bf16,
// sa, sb as SCALE_MODE says (fp8_mainloop_sm90.cuh). The tile source: DenseTiles, the M x N output in
// tiles of BLOCK_M x BLOCK_N, ordered by RASTER (common/tile_order.cuh); b's map views [N][K].
// Tails: any M >= 1 (the maps' boxes are clipped to M and N: decode sizes build their maps).
// Launch: block = 128 * (CONSUMERS + 1); grid = tiles = ceil(M / BLOCK_M) * ceil(N / BLOCK_N), or
// min(tiles, sm_count) with PERSISTENT; dynamic shared memory = kSmemBytes.
// Kernel: gemm_fp8(a, b, c, scale_a, scale_b, M, N, K, tmA, tmB) (recipes/gemm/fp8.lua).
#include "gemm/fp8_mainloop_sm90.cuh"

namespace fp8gemm {

struct DenseTiles {
  const float *scale_b;
  int N, tiles_m, tiles_n, tiles, k_blocks, a_rows, b_rows;  // a_rows = M, b_rows = N
  __device__ __forceinline__ DenseTiles(const float *sb, int M, int N_, int K)
      : scale_b(sb), N(N_), a_rows(M), b_rows(N_) {
    tiles_m = (M + kBM - 1) / kBM;
    tiles_n = (N + kBN - 1) / kBN;
    tiles = tiles_m * tiles_n;
    k_blocks = (K + kBK - 1) / kBK;
  }
  __device__ __forceinline__ int step() const { return PERSISTENT ? (int)gridDim.x : tiles; }
  __device__ __forceinline__ Tile at(int tile) const {
    const tune::tile_rc rc = tune::tile_order_grouped(tile, tiles_m, tiles_n, RASTER);
    Tile t;
    t.m0 = rc.m * kBM;
    t.n0 = rc.n * kBN;
    t.row_end = a_rows;
    t.b_row = t.n0;
    t.sb = scale_b;
    return t;
  }
};

}  // namespace fp8gemm

// a, b: e4m3 bytes (read through tmA and tmB only); scale_a, scale_b: f32 (SCALE_MODE's shapes).
extern "C" __global__ void __launch_bounds__(fp8gemm::kThreads, 1)
gemm_fp8(const unsigned char *__restrict__ a, const unsigned char *__restrict__ b, bf16 *__restrict__ c,
         const float *__restrict__ scale_a, const float *__restrict__ scale_b, int M, int N, int K,
         const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmB) {
  (void)a;
  (void)b;
  using namespace fp8gemm;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const Smem s = smem_layout(smem_raw);
  init_barriers(s);
  __syncthreads();
  roles(DenseTiles(scale_b, M, N, K), s, scale_a, c, tmA, tmB, NoIdle{});
}
