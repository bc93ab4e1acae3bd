// transpose.cuh: out = in^T for a row-major [R, C] matrix of any 2- or 4-byte element (bits moved
// exactly: fp32, bf16, fp16), through a shared-memory tile.
//
//   out[c, r] = in[r, c],  in [R, C], out [C, R], R % TILE == 0, C % TILE == 0 (recipe `applies`)
//
// Block (bx, by) moves the TILE x TILE tile at rows by * TILE, columns bx * TILE of `in`. It loads
// the tile row by row (coalesced along C) into shared memory, then writes it column by column
// (coalesced along R). Each global access is one vector of VEC_BYTES (kVecElems consecutive
// elements); the shared-memory side is element by element, at a layout chosen by BANK:
//   0 none     s[r][c] at r * TILE + c: the column reads of the store stage hit one bank
//              (up to 32-way conflicts, fewer for 2-byte elements and wider vectors)
//   1 padding  rows padded by one 32-bit word, so consecutive rows start one bank apart
//   2 swizzle  no padding; the 32-bit word w of row r sits at w ^ f(r) with f(r) = (r / kRowsPerCycle)
//              % kSwzMod: the rows that share a bank cycle get distinct words, in both stages
//
// Tunables (recipes/transpose.lua):
//   TILE       32 | 64             tile edge, elements
//   BANK       0 | 1 | 2           shared-memory layout against bank conflicts (above)
//   THREADS    128 | 256 | 512     threads per tile (block size, __launch_bounds__ maximum)
//   VEC_BYTES  4 | 8 | 16          bytes per global load/store instruction per thread
// Derived: elements per thread (ILP) kElemsPerThread = TILE * TILE / THREADS, moved as kPasses
// vectors per stage, all loads of a stage issued before the first use.
// Problem constants (recipe `defines`): ELEM_BYTES 2 | 4.
//
// Stages: tile_setup (tile origin, thread coordinates), load_stage (global -> registers, kPasses
// vectors), smem_store (registers -> shared), __syncthreads, smem_load (shared -> registers, one
// column run per vector), epilogue (registers -> global).
#include "common/vec.cuh"

#if !defined(TILE) || !defined(BANK) || !defined(THREADS) || !defined(VEC_BYTES) || !defined(ELEM_BYTES)
#error "transpose.cuh needs -D TILE BANK THREADS VEC_BYTES ELEM_BYTES"
#endif

namespace tr {

template <int B> struct elem_of_bytes;
template <> struct elem_of_bytes<2> { typedef unsigned short type; };
template <> struct elem_of_bytes<4> { typedef unsigned type; };
typedef typename elem_of_bytes<ELEM_BYTES>::type elem;
typedef tune::words<VEC_BYTES> vec;

constexpr int kVecElems = VEC_BYTES / ELEM_BYTES;        // elements per vector
constexpr int kEpw = 4 / ELEM_BYTES;                     // elements per 32-bit word
constexpr int kThreadsPerRow = TILE / kVecElems;         // threads covering one tile row
constexpr int kRowsPerPass = THREADS / kThreadsPerRow;   // tile rows one pass of the block covers
constexpr int kPasses = TILE / kRowsPerPass;             // vectors per thread per stage
constexpr int kElemsPerThread = TILE * TILE / THREADS;
constexpr int kPitch = TILE + (BANK == 1 ? kEpw : 0);    // elements per shared-memory row
constexpr int kWordsPerRow = TILE / kEpw;                // unpadded row, 32-bit words
constexpr int kSwzMod = kWordsPerRow < 32 ? kWordsPerRow : 32;
constexpr int kRowsPerCycle = kWordsPerRow < 32 ? 32 / kWordsPerRow : 1;  // rows per 32-bank cycle
constexpr int kSmemBytes = TILE * kPitch * ELEM_BYTES;

static_assert(ELEM_BYTES == 2 || ELEM_BYTES == 4, "ELEM_BYTES must be 2 or 4");
static_assert(TILE == 32 || TILE == 64, "TILE must be 32 or 64");
static_assert(BANK >= 0 && BANK <= 2, "BANK must be 0 (none), 1 (padding) or 2 (swizzle)");
static_assert(VEC_BYTES == 4 || VEC_BYTES == 8 || VEC_BYTES == 16, "VEC_BYTES must be 4, 8 or 16");
static_assert(THREADS % 32 == 0 && THREADS <= 1024, "THREADS must be a multiple of 32, at most 1024");
static_assert(THREADS % kThreadsPerRow == 0, "THREADS must cover whole tile rows");
static_assert(kRowsPerPass <= TILE && TILE % kRowsPerPass == 0,
              "a pass must cover a divisor of TILE rows: THREADS * VEC_BYTES <= TILE * TILE * ELEM_BYTES");
static_assert(kSmemBytes <= 48 * 1024, "tile over the 48 KiB static shared-memory limit");

// Element offset of (r, c) of the tile in shared memory.
__device__ __forceinline__ int smem_off(int r, int c) {
  if constexpr (BANK == 2) {
    const int w = (c / kEpw) ^ ((r / kRowsPerCycle) % kSwzMod);
    return r * kPitch + w * kEpw + c % kEpw;
  } else {
    return r * kPitch + c;
  }
}

// Element e (0 .. kVecElems-1) of a vector, and the inverse.
__device__ __forceinline__ elem vec_get(const vec &v, int e) {
  if constexpr (ELEM_BYTES == 4) return v.w[e];
  else return (elem)(v.w[e / 2] >> (16 * (e % 2)));
}
__device__ __forceinline__ void vec_set(vec &v, int e, elem x) {
  if constexpr (ELEM_BYTES == 4) v.w[e] = x;
  else if (e % 2 == 0) v.w[e / 2] = x;                  // low half first: clears the high half
  else v.w[e / 2] |= (unsigned)x << 16;
}

struct tile_ctx {
  long long r0, c0;  // tile origin in `in` (rows, columns)
  int tx;            // vector index along the contiguous dimension
  int ty;            // first row of this thread within each pass
};

__device__ __forceinline__ tile_ctx tile_setup() {
  tile_ctx t;
  t.r0 = (long long)blockIdx.y * TILE;
  t.c0 = (long long)blockIdx.x * TILE;
  t.tx = threadIdx.x % kThreadsPerRow;
  t.ty = threadIdx.x / kThreadsPerRow;
  return t;
}

// Rows ty + p * kRowsPerPass of the tile, columns tx * kVecElems .. + kVecElems, global -> registers.
__device__ __forceinline__ void load_stage(const elem *__restrict__ in, int C, const tile_ctx &t, vec (&v)[kPasses]) {
  const elem *p = in + (t.r0 + t.ty) * C + t.c0 + t.tx * kVecElems;
#pragma unroll
  for (int i = 0; i < kPasses; ++i) v[i] = tune::load_words<0, VEC_BYTES>(p + (long long)i * kRowsPerPass * C);
}

__device__ __forceinline__ void smem_store(elem *s, const tile_ctx &t, const vec (&v)[kPasses]) {
#pragma unroll
  for (int i = 0; i < kPasses; ++i)
#pragma unroll
    for (int e = 0; e < kVecElems; ++e) s[smem_off(t.ty + i * kRowsPerPass, t.tx * kVecElems + e)] = vec_get(v[i], e);
}

// Output row (tile column) c = ty + p * kRowsPerPass: tile rows tx * kVecElems .. + kVecElems.
__device__ __forceinline__ void smem_load(const elem *s, const tile_ctx &t, vec (&v)[kPasses]) {
#pragma unroll
  for (int i = 0; i < kPasses; ++i)
#pragma unroll
    for (int e = 0; e < kVecElems; ++e) vec_set(v[i], e, s[smem_off(t.tx * kVecElems + e, t.ty + i * kRowsPerPass)]);
}

__device__ __forceinline__ void epilogue(elem *__restrict__ out, int R, const tile_ctx &t, const vec (&v)[kPasses]) {
  elem *p = out + (t.c0 + t.ty) * R + t.r0 + t.tx * kVecElems;
#pragma unroll
  for (int i = 0; i < kPasses; ++i) tune::store_words<0, VEC_BYTES>(p + (long long)i * kRowsPerPass * R, v[i]);
}

}  // namespace tr

// grid (C / TILE, R / TILE), block THREADS.
extern "C" __global__ void __launch_bounds__(THREADS)
transpose_kernel(const tr::elem *__restrict__ in, tr::elem *__restrict__ out, int R, int C) {
  __shared__ tr::elem s[TILE * tr::kPitch];
  const tr::tile_ctx t = tr::tile_setup();
  tr::vec v[tr::kPasses];
  tr::load_stage(in, C, t, v);
  tr::smem_store(s, t, v);
  __syncthreads();
  tr::smem_load(s, t, v);
  tr::epilogue(out, R, t, v);
}
