// combine.cuh: the weighted un-permutation that ends a Mixture-of-Experts layer. The down projection
// leaves one row per (token, slot) in expert order; each token's top_k rows are gathered back and
// summed with their routing weights:
//
//   out[t, :] = bf16( sum_{j < top_k} weights[t, j] * y[pos[t * top_k + j], :] )
//
// y [T * top_k, H] bf16 (rows in expert order), pos i32 [T * top_k] (the row of y that holds token t's
// slot j: the inverse of the expert sort), weights f32 [T, top_k], out [T, H] bf16. Products and sums
// in fp32, the slots in order j = 0 .. top_k - 1, one rounding of the sum. No [T * top_k, H]
// intermediate: every y row is read once and every output row written once.
//
// Tunables (recipes/moe/combine.lua):
//   VEC_BYTES  8 | 16      bytes per load / store (4 or 8 bf16); y is read through
//                          ld.global.nc.L1::no_allocate (common/ld_stream.cuh): each row once
//   BLOCK      64 .. 512   threads per block (__launch_bounds__ maximum)
//   TOKENS     1 | 2       tokens per block: BLOCK / TOKENS threads share one token's slice
//   VECS       1 | 2 | 4   vectors per thread of the hidden slice (accumulators held in fp32)
//   LOADS      2 | 4 | 8   slots gathered before any is summed: LOADS * VECS loads in flight per
//                          thread (top_k is a kernel argument: the last group is predicated)
// A block covers TOKENS tokens x kSlice hidden elements (kSlice = BLOCK / TOKENS * VECS * VEC_BYTES /
// 2); grid (ceil(T / TOKENS), ceil(H / kSlice)). Thread map: vector i of a thread is vector
// i * kGroup + lane of the slice, so every warp-wide access is contiguous within a row. H must be a
// multiple of VEC_BYTES / 2 (the recipe's requires): vectors past H are neither read nor written.
#include "common/ld_stream.cuh"
#include "common/vec.cuh"

#if !defined(VEC_BYTES) || !defined(BLOCK) || !defined(TOKENS) || !defined(VECS) || !defined(LOADS)
#error "moe/combine.cuh needs -D VEC_BYTES BLOCK TOKENS VECS LOADS"
#endif

typedef __nv_bfloat16 bf16;

namespace mc {

constexpr int kVecElems = VEC_BYTES / 2;
constexpr int kGroup = BLOCK / TOKENS;                   // threads of one token
constexpr int kSlice = kGroup * VECS * kVecElems;        // hidden elements per block and token
typedef tune::words<VEC_BYTES> vec;

static_assert(VEC_BYTES == 8 || VEC_BYTES == 16, "VEC_BYTES must be 8 or 16 (common/ld_stream.cuh)");
static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(TOKENS >= 1 && BLOCK % TOKENS == 0 && kGroup % 32 == 0, "BLOCK / TOKENS must be whole warps");
static_assert(VECS >= 1 && VECS <= 8, "VECS must be 1 .. 8");
static_assert(LOADS >= 1 && LOADS <= 16, "LOADS must be 1 .. 16");

// One vector of a y row: read once, so through the non-coherent path without allocating in L1.
template <int B> __device__ __forceinline__ tune::words<B> load_row_vec(const bf16 *p) {
  tune::words<B> v;
  if constexpr (B == 16) tune::to_words(tune::ld_stream16(p), v);
  else tune::to_words(tune::ld_stream8(p), v);
  return v;
}

// Slots j0 .. j0 + LOADS - 1 of the token (those below top_k): all loads issued, then acc += w * y.
__device__ __forceinline__ void gather_stage(const bf16 *__restrict__ y, const int *__restrict__ tpos,
                                             const float *__restrict__ tw, int j0, int top_k, int H, int e0,
                                             float (&acc)[VECS][kVecElems]) {
  long long row[LOADS];
  float w[LOADS];
#pragma unroll
  for (int u = 0; u < LOADS; ++u) {
    const bool live = j0 + u < top_k;
    row[u] = live ? (long long)__ldg(tpos + j0 + u) * H : 0;
    w[u] = live ? __ldg(tw + j0 + u) : 0.f;
  }
  vec v[LOADS][VECS];
#pragma unroll
  for (int u = 0; u < LOADS; ++u)
#pragma unroll
    for (int i = 0; i < VECS; ++i) {
      const int e = e0 + i * kGroup * kVecElems;
      if (j0 + u < top_k && e < H) v[u][i] = load_row_vec<VEC_BYTES>(y + row[u] + e);
    }
#pragma unroll
  for (int u = 0; u < LOADS; ++u) {
    if (j0 + u >= top_k) break;  // uniform over the block: top_k is an argument
#pragma unroll
    for (int i = 0; i < VECS; ++i) {
      if (e0 + i * kGroup * kVecElems >= H) continue;
      float f[kVecElems];
      tune::unpack_bf16(v[u][i], f);
#pragma unroll
      for (int x = 0; x < kVecElems; ++x) acc[i][x] = fmaf(w[u], f[x], acc[i][x]);
    }
  }
}

}  // namespace mc

// grid (ceil(T / TOKENS), ceil(H / kSlice)), block BLOCK.
extern "C" __global__ void __launch_bounds__(BLOCK)
moe_combine(const bf16 *__restrict__ y, const int *__restrict__ pos, const float *__restrict__ weights,
            bf16 *__restrict__ out, int T, int H, int top_k) {
  using namespace mc;
  const int t = blockIdx.x * TOKENS + threadIdx.x / kGroup;
  if (t >= T) return;  // no block-wide synchronization follows
  const int e0 = blockIdx.y * kSlice + (threadIdx.x % kGroup) * kVecElems;
  const int *tpos = pos + (long long)t * top_k;
  const float *tw = weights + (long long)t * top_k;
  float acc[VECS][kVecElems];
#pragma unroll
  for (int i = 0; i < VECS; ++i)
#pragma unroll
    for (int x = 0; x < kVecElems; ++x) acc[i][x] = 0.f;
  for (int j0 = 0; j0 < top_k; j0 += LOADS) gather_stage(y, tpos, tw, j0, top_k, H, e0, acc);
  bf16 *orow = out + (long long)t * H;
#pragma unroll
  for (int i = 0; i < VECS; ++i) {
    const int e = e0 + i * kGroup * kVecElems;
    if (e < H) tune::store_words<0, VEC_BYTES>(orow + e, tune::pack_bf16<VEC_BYTES>(acc[i]));
  }
}
