// elementwise.cuh: fused y = silu(x * scale + bias), a typical memory-bound epilogue of LLM inference.
//
//   y[r, c] = t / (1 + e^-t),  t = x[r, c] * scale[c] + bias[c]
//
// x, y [rows, cols] bf16 row-major; scale, bias [cols] bf16; math in fp32, y rounded once to bf16.
// The tensor is walked as flat vectors of VEC_BYTES (kVecElems bf16); cols % kVecElems == 0, so a
// vector never straddles two rows, and its column is (vector index % vectors per row).
//
// Tunables (recipes/elementwise.lua):
//   VEC_BYTES   4 | 8 | 16      bytes per x load / y store instruction (2, 4 or 8 bf16)
//   ILP         1 .. 8          independent x vectors loaded per thread before the first is used
//   BLOCK       threads per block, multiple of 32, <= 1024 (also the __launch_bounds__ maximum)
//   MIN_BLOCKS  1 | 2           __launch_bounds__ minimum resident blocks per SM (caps registers)
//   GRID_STRIDE 0 | 1           1: persistent grid-stride loop over tiles, 0: one tile per block
//   CACHE_HINT  0 | 1           1: x through ld.global.nc, y through st.global.cs (streaming);
//                               scale and bias are always read through the read-only path (reused)
// Requirements (recipe `applies`): cols % kVecElems == 0, rows * cols / kVecElems < 2^31.
//
// Stages: tile_setup (first vector and its column), load_stage (ILP x vectors), compute_stage
// (scale, bias, silu in fp32), epilogue (pack to bf16, store). Tile = BLOCK * ILP vectors; vector i
// of a thread is tile_base + i * BLOCK + threadIdx.x, so each load instruction of a warp is coalesced.
#include "common/vec.cuh"

#if !defined(VEC_BYTES) || !defined(ILP) || !defined(BLOCK) || !defined(MIN_BLOCKS) || !defined(GRID_STRIDE) || \
    !defined(CACHE_HINT)
#error "elementwise.cuh needs -D VEC_BYTES ILP BLOCK MIN_BLOCKS GRID_STRIDE CACHE_HINT"
#endif

static_assert(VEC_BYTES == 4 || VEC_BYTES == 8 || VEC_BYTES == 16, "VEC_BYTES must be 4, 8 or 16");
static_assert(ILP >= 1 && ILP <= 8, "ILP must be 1..8");
static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(MIN_BLOCKS >= 1 && BLOCK * MIN_BLOCKS <= 2048, "BLOCK * MIN_BLOCKS over 2048 resident threads per SM");
static_assert(CACHE_HINT == 0 || CACHE_HINT == 1, "CACHE_HINT must be 0 or 1");

typedef __nv_bfloat16 bf16;

namespace ew {

constexpr int kVecElems = VEC_BYTES / 2;      // bf16 per vector
constexpr unsigned kTile = BLOCK * ILP;       // vectors per block-step
typedef tune::words<VEC_BYTES> vec;

struct tile_ctx {
  unsigned v0;    // this thread's first vector of the tile
  unsigned col0;  // its column, in vectors
};

// Vector index and column of this thread's first vector of tile t.
__device__ __forceinline__ tile_ctx tile_setup(unsigned t, unsigned vpr) {
  tile_ctx c;
  c.v0 = t * kTile + threadIdx.x;
  c.col0 = c.v0 % vpr;
  return c;
}

// ILP x vectors; with GUARD, vectors at or past n_vec are not read.
template <bool GUARD>
__device__ __forceinline__ void load_stage(const bf16 *__restrict__ x, const tile_ctx &c, unsigned n_vec, vec (&r)[ILP]) {
#pragma unroll
  for (int i = 0; i < ILP; ++i) {
    const unsigned v = c.v0 + i * BLOCK;
    if (!GUARD || v < n_vec) r[i] = tune::load_words<CACHE_HINT, VEC_BYTES>(x + (size_t)v * kVecElems);
  }
}

// y = silu(x * scale + bias) for one vector at column vector col; fp32, then packed to bf16.
__device__ __forceinline__ vec compute_stage(const vec &xv, const bf16 *__restrict__ scale,
                                             const bf16 *__restrict__ bias, unsigned col) {
  float xf[kVecElems], sf[kVecElems], bf[kVecElems], yf[kVecElems];
  tune::unpack_bf16<VEC_BYTES>(xv, xf);
  tune::unpack_bf16<VEC_BYTES>(tune::load_words<1, VEC_BYTES>(scale + (size_t)col * kVecElems), sf);
  tune::unpack_bf16<VEC_BYTES>(tune::load_words<1, VEC_BYTES>(bias + (size_t)col * kVecElems), bf);
#pragma unroll
  for (int e = 0; e < kVecElems; ++e) {
    const float t = fmaf(xf[e], sf[e], bf[e]);
    yf[e] = __fdividef(t, 1.f + __expf(-t));  // t -> -inf: t / inf = -0, the limit
  }
  return tune::pack_bf16<VEC_BYTES>(yf);
}

// Compute and store the tile's ILP vectors. col steps by BLOCK vectors modulo vpr (step = BLOCK % vpr).
template <bool GUARD>
__device__ __forceinline__ void epilogue(bf16 *__restrict__ y, const bf16 *__restrict__ scale,
                                         const bf16 *__restrict__ bias, const tile_ctx &c, const vec (&r)[ILP],
                                         unsigned n_vec, unsigned vpr, unsigned step) {
  unsigned col = c.col0;
#pragma unroll
  for (int i = 0; i < ILP; ++i) {
    const unsigned v = c.v0 + i * BLOCK;
    if (!GUARD || v < n_vec)
      tune::store_words<CACHE_HINT, VEC_BYTES>(y + (size_t)v * kVecElems, compute_stage(r[i], scale, bias, col));
    col += step;
    if (col >= vpr) col -= vpr;
  }
}

__device__ __forceinline__ void run_tile(const bf16 *__restrict__ x, const bf16 *__restrict__ scale,
                                         const bf16 *__restrict__ bias, bf16 *__restrict__ y, unsigned t,
                                         unsigned n_vec, unsigned vpr, unsigned step) {
  const tile_ctx c = tile_setup(t, vpr);
  vec r[ILP];
  if ((t + 1) * kTile <= n_vec) {  // full tile: no guards
    load_stage<false>(x, c, n_vec, r);
    epilogue<false>(y, scale, bias, c, r, n_vec, vpr, step);
  } else {
    load_stage<true>(x, c, n_vec, r);
    epilogue<true>(y, scale, bias, c, r, n_vec, vpr, step);
  }
}

}  // namespace ew

// grid: one tile per block (GRID_STRIDE 0: ceil(n_vec / kTile) blocks), or fewer blocks looping.
extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
silu_scale_bias(const bf16 *__restrict__ x, const bf16 *__restrict__ scale, const bf16 *__restrict__ bias,
                bf16 *__restrict__ y, int rows, int cols) {
  const unsigned vpr = (unsigned)cols / ew::kVecElems;
  const unsigned n_vec = (unsigned)rows * vpr;
  const unsigned n_tiles = (n_vec + ew::kTile - 1) / ew::kTile;
  const unsigned step = BLOCK % vpr;
#if GRID_STRIDE
  for (unsigned t = blockIdx.x; t < n_tiles; t += gridDim.x) ew::run_tile(x, scale, bias, y, t, n_vec, vpr, step);
#else
  if (blockIdx.x < n_tiles) ew::run_tile(x, scale, bias, y, blockIdx.x, n_vec, vpr, step);
#endif
}
