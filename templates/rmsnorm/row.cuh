// row.cuh: the stages of a row-wise RMSNorm that rmsnorm.cuh and rmsnorm_fp8.cuh share: the thread
// map of a row (tile_ctx, tile_setup, vec_elem, slice_iters), the loads of x and r (load_vec,
// load_stage) and the residual add with the sum of squares (compute_stage). See rmsnorm.cuh for
// the tunables they read (ROW_MODE, BLOCK, VEC_BYTES, CACHE_ROW, CACHE_HINT, MIN_BLOCKS, ITERS,
// RESIDUAL).
//
// Included inside `namespace rn`, after common/reduce.cuh and common/vec.cuh and the including
// template's checks of its defines, with `bf16` declared: it is that template's text, kept in one
// place (rmsnorm.cuh's source, as the tuner hashes it, is the same as before the split).
constexpr int kVecElems = VEC_BYTES / 2;
constexpr int kWarps = BLOCK / 32;
constexpr int kThreads = ROW_MODE == 0 ? 32 : BLOCK;   // threads sharing one row
constexpr int kIters = ITERS > 0 ? ITERS : 1;         // cached vectors per thread (capacity)
constexpr int kBatchMax = 64 / VEC_BYTES;              // re-reading passes: 64 B of x in flight
constexpr int kBatch = CACHE_ROW ? kIters : kBatchMax;
constexpr int kCache = CACHE_ROW ? kIters : 1;
typedef tune::words<VEC_BYTES> vec;

static_assert(VEC_BYTES == 4 || VEC_BYTES == 8 || VEC_BYTES == 16, "VEC_BYTES must be 4, 8 or 16");
static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(ROW_MODE == 0 || ROW_MODE == 1, "ROW_MODE must be 0 (warp per row) or 1 (block per row)");
static_assert(RESIDUAL == 0 || RESIDUAL == 1, "RESIDUAL must be 0 or 1");
static_assert(CACHE_ROW == 0 || CACHE_ROW == 1, "CACHE_ROW must be 0 or 1");
static_assert(CACHE_HINT == 0 || CACHE_HINT == 1, "CACHE_HINT must be 0 or 1");
static_assert(MIN_BLOCKS >= 1 && BLOCK * MIN_BLOCKS <= 2048, "BLOCK * MIN_BLOCKS over 2048 threads per SM");
static_assert(!CACHE_ROW || ITERS >= 1, "ITERS must be at least 1 with CACHE_ROW 1");
static_assert(!CACHE_ROW || kIters * VEC_BYTES <= 512, "cached row slice over 128 registers per thread");

struct tile_ctx {
  long long off;  // element offset of the row: row * H
  int n;          // H: elements in the row
  int t;          // thread index within the row
  bool aligned;   // H % kVecElems == 0: the vector path; else the scalar path
  bool active;    // false: a warp past the last row (warp mode)
};

__device__ __forceinline__ tile_ctx tile_setup(int T, int H) {
  long long row;
  int t;
  if constexpr (ROW_MODE == 0) {
    row = (long long)blockIdx.x * kWarps + threadIdx.x / 32;
    t = threadIdx.x % 32;
  } else {
    row = blockIdx.x;
    t = threadIdx.x;
  }
  return {row * H, H, t, H % kVecElems == 0, row < T};
}

// Element offset in the row of vector j of the thread's slice; it is whole when < n, else past the end.
__device__ __forceinline__ int vec_elem(const tile_ctx &c, int j) { return (j * kThreads + c.t) * kVecElems; }

// Vector loops of the thread's slice that reach into the row (uniform over the row's threads).
__device__ __forceinline__ int slice_iters(const tile_ctx &c) {
  return ((c.n + kVecElems - 1) / kVecElems + kThreads - 1) / kThreads;
}

template <int HINT> __device__ __forceinline__ vec load_vec(const bf16 *__restrict__ p, int e, int n) {
  if (e < n) return tune::load_words<HINT, VEC_BYTES>(p + e);
  vec z;
#pragma unroll
  for (int w = 0; w < vec::kN; ++w) z.w[w] = 0u;
  return z;
}

// N vectors of x from vector j0 of the slice (and of r with RESIDUAL).
template <int N>
__device__ __forceinline__ void load_stage(const bf16 *__restrict__ x, const bf16 *__restrict__ r, const tile_ctx &c,
                                           int j0, vec (&xv)[N], vec (&rv)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    xv[j] = load_vec<CACHE_HINT>(x + c.off, vec_elem(c, j0 + j), c.n);
    if constexpr (RESIDUAL) rv[j] = load_vec<CACHE_HINT>(r + c.off, vec_elem(c, j0 + j), c.n);
  }
}

// With RESIDUAL: xv <- h = bf16(x + r), stored to h. Returns ss + the sum of squares of xv.
template <int N>
__device__ __forceinline__ float compute_stage(vec (&xv)[N], const vec (&rv)[N], bf16 *__restrict__ h,
                                               const tile_ctx &c, int j0, float ss) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if constexpr (RESIDUAL) {
#pragma unroll
      for (int w = 0; w < vec::kN; ++w)
        xv[j].w[w] = tune::pack_bf16x2(tune::bf16_lo(xv[j].w[w]) + tune::bf16_lo(rv[j].w[w]),
                                       tune::bf16_hi(xv[j].w[w]) + tune::bf16_hi(rv[j].w[w]));
      if (vec_elem(c, j0 + j) < c.n) tune::store_words<CACHE_HINT, VEC_BYTES>(h + c.off + vec_elem(c, j0 + j), xv[j]);
    }
#pragma unroll
    for (int w = 0; w < vec::kN; ++w) {
      const float a = tune::bf16_lo(xv[j].w[w]), b = tune::bf16_hi(xv[j].w[w]);
      ss = fmaf(a, a, fmaf(b, b, ss));
    }
  }
  return ss;
}
