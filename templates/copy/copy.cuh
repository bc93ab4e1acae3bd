// copy.cuh: device-to-device copy of n floats.
//
// Tunables (recipes/copy.lua):
//   VEC_BYTES   4 | 8 | 16      bytes moved per load/store instruction
//   ILP         1 .. 8          independent vectors loaded before the first store
//   BLOCK       threads per block (also the __launch_bounds__ maximum)
//   GRID_STRIDE 0 | 1           1: persistent grid-stride loop, 0: one tile per block
//   MIN_BLOCKS  1 | 2           __launch_bounds__ minimum resident blocks per SM
//   CACHE_HINT  0 | 1 (default 0) 1: ld.global.nc + st.global.cs streaming hints
#include "common/vec.cuh"

#ifndef CACHE_HINT
#define CACHE_HINT 0
#endif

static_assert(VEC_BYTES == 4 || VEC_BYTES == 8 || VEC_BYTES == 16, "VEC_BYTES must be 4, 8 or 16");
static_assert(ILP >= 1 && ILP <= 16, "ILP must be 1..16");
static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");

typedef typename tune::vec_of_bytes<VEC_BYTES>::type vec_t;
constexpr int kElems = VEC_BYTES / 4;              // floats per vector
constexpr long long kTile = (long long)BLOCK * ILP * kElems; // floats per block-step

// One block-step: ILP vectors per thread, all loads issued before any store.
__device__ __forceinline__ void copy_tile(const vec_t *__restrict__ src, vec_t *__restrict__ dst,
                                          long long tile) {
  vec_t r[ILP];
  const long long base = tile * BLOCK * ILP + threadIdx.x;
#pragma unroll
  for (int i = 0; i < ILP; ++i) r[i] = tune::load_g<CACHE_HINT>(src + base + i * BLOCK);
#pragma unroll
  for (int i = 0; i < ILP; ++i) tune::store_g<CACHE_HINT>(dst + base + i * BLOCK, r[i]);
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
copy_kernel(const float *__restrict__ src, float *__restrict__ dst, long long n) {
  const long long full_tiles = n / kTile;
  const vec_t *vs = reinterpret_cast<const vec_t *>(src);
  vec_t *vd = reinterpret_cast<vec_t *>(dst);
#if GRID_STRIDE
  for (long long t = blockIdx.x; t < full_tiles; t += gridDim.x) copy_tile(vs, vd, t);
#else
  if (blockIdx.x < full_tiles) copy_tile(vs, vd, blockIdx.x);
#endif
  // Tail (n not a multiple of the tile): element by element, spread over the grid.
  for (long long i = full_tiles * kTile + (long long)blockIdx.x * BLOCK + threadIdx.x; i < n;
       i += (long long)gridDim.x * BLOCK)
    dst[i] = src[i];
}
