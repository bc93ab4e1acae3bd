// softmax.cuh: row softmax of a [rows, cols] bf16 matrix, fp32 accumulation, bf16 output.
//
//   y[r, c] = e^(x[r, c] - m_r) / sum_j e^(x[r, j] - m_r),  m_r = max_j x[r, j]
//
// computed in log2 units (xl = x * log2 e, every exponential one ex2.approx). Two kernel sets:
//
//   softmax_row           (SPLITS == 1) one row per warp (ROW_MODE 0: BLOCK / 32 rows per block,
//                         shuffle reductions only) or one row per block (ROW_MODE 1: shuffles, then
//                         the warps' partials through shared memory)
//   softmax_split_stats + softmax_split_write   (SPLITS > 1) a row split across SPLITS blocks: the
//                         first kernel writes each block's (max, sum) of its slice (a SPLITS-th of the row) to
//                         `partial`, the second merges a row's SPLITS pairs and writes its slice
//                         (for few, long rows: vocabulary-sized logits)
//
// Tunables (recipes/softmax.lua):
//   ROW_MODE   0 | 1           softmax_row only: warp per row, block per row
//   BLOCK      128 .. 1024     threads per block (__launch_bounds__ maximum)
//   VEC_BYTES  4 | 8 | 16      bytes per x load / y store instruction (2, 4 or 8 bf16)
//   CACHE_ROW  0 | 1           1: the thread's slice of the row stays in registers (raw bf16)
//                              between the statistics and the write, so x is read once;
//                              0: every pass re-reads x from memory (L1/L2)
//   ONLINE     0 | 1           1: (max, sum) in one sweep, sum rescaled when the max grows, and one
//                              reduction of (max, sum) pairs; 0: max first (one sweep, one
//                              reduction), then the sum of exponentials (another of each)
//   MIN_BLOCKS 1 | 2 (default 1)  __launch_bounds__ minimum resident blocks per SM
//   SPLITS     1 (default) | 2 .. 32   blocks per row (split kernels when > 1)
//   EXP_ONCE   0 (default) | 1   softmax_row, CACHE_ROW 1 only: each exponential is computed once
//                              and kept in fp32 registers until the write (one ex2 per element
//                              instead of two: at 16 ex2 per clock per SM, two per element is
//                              ~40 % of a memory-bound run's time on the H200); with ONLINE 1
//                              against the thread's own max, rescaled by one ex2 per thread after
//                              the single (max, sum) reduction
//   PERSIST    0 (default) | k   softmax_row, EXP_ONCE 1 only: a persistent grid of k blocks per SM
//                              (the recipe sizes it; __launch_bounds__ minimum k) that loops over
//                              rows (warps or blocks strided by the grid) and loads the next row's
//                              slice before reducing and writing the current one, so loads stay in
//                              flight through the reductions and the SFU work
//   CLUSTER    1 (default) | 2 | 4 | 8   softmax_row in block mode, CACHE_ROW 1, ONLINE 1 only: a row
//                              is spread over the CLUSTER CTAs of a thread-block cluster (grid
//                              rows * CLUSTER, cluster dims {CLUSTER, 1, 1}); each CTA holds its
//                              slice (a CLUSTER-th of the row) in registers, the CTAs' (max, sum) pairs are
//                              exchanged through distributed shared memory (softmax/cluster.cuh).
//                              A launch without that cluster shape writes nothing
//   ITERS      CACHE_ROW 1: vectors of its segment a thread holds, a capacity: segments of up to
//                              ITERS * threads per row vectors fit (the recipe's `defines` sets it
//                              from cols, or softmax.cluster takes it as a parameter); unused with
//                              CACHE_ROW 0
// Sweeps of x per row: CACHE_ROW 1: 1. CACHE_ROW 0: ONLINE 1: 2 (stats, write); ONLINE 0: 3 (max,
// sum, write). The split write kernel always re-reads its slice (2 or 3 sweeps in all).
//
// The row length `cols` is a kernel argument, any value >= 1. A row is cut into kParts segments of
// whole vectors (segment p: vectors [p * sv, (p + 1) * sv) of the ceil(cols / kVecElems) vectors,
// sv = ceil(vectors / kParts); the last segments may be short or empty); vectors past a segment's
// end read as -inf and are not written. A cols that is no multiple of kVecElems puts row starts at
// 2-byte boundaries, where vector accesses would be misaligned: such rows take the scalar path
// (one element per access, (max, sum) online in one sweep, the write in a second), in every kernel.
//
// Loads of x use ld.global.nc (x is never written); stores of y use st.global.cs (never re-read).
// Thread map: vector j of a thread's slice is vector j * kThreads + t of its segment (t: lane or
// thread index), so every warp-wide load is contiguous. Re-reading passes load kBatch vectors
// before using any.
//
// Stages: tile_setup (row, segment, thread index), load_stage (raw vectors), stats_stage (thread
// partials of max / sum), the reductions (common/reduce.cuh), epilogue (exponentials, scale, store).
#include "common/reduce.cuh"
#include "common/vec.cuh"

#ifndef SPLITS
#define SPLITS 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef EXP_ONCE
#define EXP_ONCE 0
#endif
#ifndef PERSIST
#define PERSIST 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#if SPLITS == 1 && !defined(ROW_MODE)
#error "softmax.cuh needs -D ROW_MODE (0 warp, 1 block per row) when SPLITS == 1"
#endif
#if SPLITS > 1
#undef ROW_MODE
#define ROW_MODE 1
#endif
#if !defined(BLOCK) || !defined(VEC_BYTES) || !defined(CACHE_ROW) || !defined(ONLINE)
#error "softmax.cuh needs -D BLOCK VEC_BYTES CACHE_ROW ONLINE"
#endif
#if CACHE_ROW && !defined(ITERS)
#error "softmax.cuh needs -D ITERS (vectors per thread held in registers) with CACHE_ROW 1"
#endif
#ifndef ITERS
#define ITERS 0
#endif

typedef __nv_bfloat16 bf16;

namespace sm {

constexpr int kVecElems = VEC_BYTES / 2;                  // bf16 per vector
constexpr int kWarps = BLOCK / 32;
constexpr int kThreads = ROW_MODE == 0 ? 32 : BLOCK;      // threads sharing one row segment
constexpr int kParts = SPLITS > 1 ? SPLITS : CLUSTER;     // segments per row (blocks or cluster CTAs)
constexpr int kIters = ITERS > 0 ? ITERS : 1;             // cached vectors per thread (capacity)
constexpr int kBatchMax = 64 / VEC_BYTES;                 // re-reading passes: 64 B in flight
constexpr int kBatch = CACHE_ROW ? kIters : kBatchMax;
constexpr int kCache = CACHE_ROW ? kIters : 1;            // vectors held in registers
constexpr float kLog2e = 1.4426950408889634f;
typedef tune::words<VEC_BYTES> vec;

static_assert(VEC_BYTES == 4 || VEC_BYTES == 8 || VEC_BYTES == 16, "VEC_BYTES must be 4, 8 or 16");
static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(ROW_MODE == 0 || ROW_MODE == 1, "ROW_MODE must be 0 (warp per row) or 1 (block per row)");
static_assert(CACHE_ROW == 0 || CACHE_ROW == 1, "CACHE_ROW must be 0 or 1");
static_assert(ONLINE == 0 || ONLINE == 1, "ONLINE must be 0 or 1");
static_assert(MIN_BLOCKS >= 1 && BLOCK * MIN_BLOCKS <= 2048, "BLOCK * MIN_BLOCKS over 2048 threads per SM");
static_assert(SPLITS >= 1 && SPLITS <= 32, "SPLITS must be 1..32");
static_assert(!CACHE_ROW || ITERS >= 1, "ITERS must be at least 1 with CACHE_ROW 1");
static_assert(!CACHE_ROW || kIters * VEC_BYTES <= 256, "cached row slice over 64 registers per thread");
static_assert(EXP_ONCE == 0 || (EXP_ONCE == 1 && CACHE_ROW == 1 && SPLITS == 1),
              "EXP_ONCE 1 needs CACHE_ROW 1 and SPLITS 1");
static_assert(CLUSTER == 1 || ((CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8) && SPLITS == 1 && ROW_MODE == 1 &&
                                CACHE_ROW == 1 && ONLINE == 1 && PERSIST == 0),
              "CLUSTER 2, 4 or 8 needs SPLITS 1, ROW_MODE 1, CACHE_ROW 1, ONLINE 1, PERSIST 0");
static_assert(PERSIST >= 0 && (PERSIST == 0 || (EXP_ONCE == 1 && MIN_BLOCKS == 1 && BLOCK * PERSIST <= 2048)),
              "PERSIST k > 0 needs EXP_ONCE 1, MIN_BLOCKS 1 and k * BLOCK <= 2048");

struct tile_ctx {
  const bf16 *x;  // the segment's first element
  bf16 *y;
  int n;          // elements in the segment (<= 0: an empty segment)
  int t;          // thread (lane) index among the segment's kThreads
  bool aligned;   // cols % kVecElems == 0: the vector path; else the scalar path
  bool active;    // false: a warp past the last row (warp mode)
};

// Segment `part` of row `row` for thread t (kParts segments of whole vectors, the last ones short).
__device__ __forceinline__ tile_ctx tile_at(const bf16 *__restrict__ x, bf16 *__restrict__ y, long long row, int part,
                                            int t, int cols) {
  const long long vecs = ((long long)cols + kVecElems - 1) / kVecElems;
  const long long seg = (vecs + kParts - 1) / kParts * kVecElems;  // elements per segment
  const long long first = part * seg;
  const long long last = first + seg < cols ? first + seg : cols;
  const long long off = row * cols + first;
  return {x + off, y + off, (int)(last - first), t, cols % kVecElems == 0, true};
}

// Row (and segment) of this thread. Warp mode: warp w of block b owns row b * kWarps + w.
__device__ __forceinline__ tile_ctx tile_setup(const bf16 *__restrict__ x, bf16 *__restrict__ y, int rows, int cols) {
  long long row;
  int t;
  if constexpr (ROW_MODE == 0) {
    row = (long long)blockIdx.x * kWarps + threadIdx.x / 32;
    t = threadIdx.x % 32;
  } else {
    row = SPLITS > 1 ? blockIdx.y : blockIdx.x;
    t = threadIdx.x;
  }
  tile_ctx c = tile_at(x, y, row, SPLITS > 1 ? blockIdx.x : 0, t, cols);
  c.active = row < rows;
  return c;
}

// Vector loops of the thread's slice that reach into the segment (uniform over the segment).
__device__ __forceinline__ int slice_iters(const tile_ctx &c) {
  const int vecs = c.n > 0 ? (c.n + kVecElems - 1) / kVecElems : 0;
  return (vecs + kThreads - 1) / kThreads;
}

// Element offset of vector j of the thread's slice, and whether it lies in the segment (aligned
// rows: a vector is whole or past the end).
__device__ __forceinline__ int vec_elem(const tile_ctx &c, int j) { return (j * kThreads + c.t) * kVecElems; }

// Vectors j0 .. j0 + N - 1 of this thread's slice; past the segment's end: -inf.
template <int N> __device__ __forceinline__ void load_stage(const tile_ctx &c, int j0, vec (&v)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int e = vec_elem(c, j0 + j);
    if (e < c.n) {
      v[j] = tune::load_words<1, VEC_BYTES>(c.x + e);
    } else {
#pragma unroll
      for (int w = 0; w < vec::kN; ++w) v[j].w[w] = 0xff80ff80u;  // bf16 -inf pairs
    }
  }
}
__device__ __forceinline__ void store_vec(const tile_ctx &c, int j, const vec &o) {
  const int e = vec_elem(c, j);
  if (e < c.n) tune::store_words<1, VEC_BYTES>(c.y + e, o);
}

// The exponent base for a max ml (log2 units): ml itself, or 0 where nothing was seen (ml = -inf),
// so that masked elements give 2^-inf = 0 instead of 2^(-inf + inf) = NaN.
__device__ __forceinline__ float exp_base(float ml) { return ml == tune::neg_inf() ? 0.f : ml; }

// Reductions over the threads of one segment (a warp or the block); every thread gets the result.
struct reducer {
  float *smem;  // 2 * kWarps floats (block mode)
  __device__ __forceinline__ float max(float v) const {
    if constexpr (ROW_MODE == 0) return tune::warp_reduce_max(v);
    else return tune::block_reduce_max<kWarps>(v, smem);
  }
  __device__ __forceinline__ float sum(float v) const {
    if constexpr (ROW_MODE == 0) return tune::warp_reduce_sum(v);
    else return tune::block_reduce_sum<kWarps>(v, smem);
  }
  __device__ __forceinline__ void online(float &m, float &s) const {
    if constexpr (ROW_MODE == 0) tune::warp_reduce_online(m, s);
    else tune::block_reduce_online<kWarps>(m, s, smem);
  }
};

// Scalar path (rows not starting at vector boundaries): the segment's (max, sum) in log2 units,
// reduced over its threads; an empty segment gives (-inf, 0).
__device__ __forceinline__ void scalar_stats(const tile_ctx &c, const reducer &red, float &ml, float &s) {
  ml = tune::neg_inf();
  s = 0.f;
  for (int i = c.t; i < c.n; i += kThreads) {
    const float xl = __bfloat162float(__ldg(c.x + i)) * kLog2e;
    if (xl > ml) {
      s = s * tune::exp2_approx(ml - xl) + 1.f;
      ml = xl;
    } else {
      s += tune::exp2_approx(xl - exp_base(ml));
    }
  }
  red.online(ml, s);
}
// Scalar path: y = 2^(x * log2e - ml) * inv_s over the segment.
__device__ __forceinline__ void scalar_write(const tile_ctx &c, float ml, float inv_s) {
  for (int i = c.t; i < c.n; i += kThreads)
    __stcs(c.y + i, __float2bfloat16_rn(
                        tune::exp2_approx(fmaf(__bfloat162float(__ldg(c.x + i)), kLog2e, -ml)) * inv_s));
}

template <int N> __device__ __forceinline__ float max_of(const vec (&v)[N], float m) {
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int w = 0; w < vec::kN; ++w) m = fmaxf(m, fmaxf(tune::bf16_lo(v[j].w[w]), tune::bf16_hi(v[j].w[w])));
  return m;
}
// sum of 2^(x * log2e - ml), ml = m * log2e (finite: exp_base)
template <int N> __device__ __forceinline__ float sum_exp(const vec (&v)[N], float ml, float s) {
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int w = 0; w < vec::kN; ++w) {
      s += tune::exp2_approx(fmaf(tune::bf16_lo(v[j].w[w]), kLog2e, -ml));
      s += tune::exp2_approx(fmaf(tune::bf16_hi(v[j].w[w]), kLog2e, -ml));
    }
  return s;
}

// Statistics of the segment: ml = max_j x_j * log2e (log2 units) and s = sum_j 2^(x_j * log2e - ml);
// an empty segment gives (-inf, 0). With CACHE_ROW, `cache` holds the thread's slice (loaded here);
// without, x is swept 1 (ONLINE) or 2 times. Every exponent is one fma: x * log2e - ml.
__device__ __forceinline__ void stats_stage(const tile_ctx &c, const reducer &red, vec (&cache)[kCache], float &ml,
                                            float &s) {
  if constexpr (CACHE_ROW) {
    load_stage(c, 0, cache);
    ml = max_of(cache, tune::neg_inf()) * kLog2e;
    if constexpr (ONLINE) {
      s = sum_exp(cache, exp_base(ml), 0.f);  // thread-local two-pass, then one reduction of (max, sum) pairs
      red.online(ml, s);
    } else {
      ml = red.max(ml);
      s = red.sum(sum_exp(cache, exp_base(ml), 0.f));
    }
  } else if constexpr (ONLINE) {
    const int iters = slice_iters(c);
    ml = tune::neg_inf();  // running max
    s = 0.f;
    for (int j0 = 0; j0 < iters; j0 += kBatch) {
      vec v[kBatch];
      load_stage<kBatch>(c, j0, v);
      const float mn = fmaxf(ml, max_of(v, tune::neg_inf()) * kLog2e);
      const float b = exp_base(mn);
      s = sum_exp(v, b, s * tune::exp2_approx(ml - b));  // 2^-inf = 0 while nothing was seen
      ml = mn;
    }
    red.online(ml, s);
  } else {
    const int iters = slice_iters(c);
    float m = tune::neg_inf();
    for (int j0 = 0; j0 < iters; j0 += kBatch) {
      vec v[kBatch];
      load_stage<kBatch>(c, j0, v);
      m = max_of(v, m);
    }
    ml = red.max(m) * kLog2e;
    s = 0.f;
    for (int j0 = 0; j0 < iters; j0 += kBatch) {
      vec v[kBatch];
      load_stage<kBatch>(c, j0, v);
      s = sum_exp(v, exp_base(ml), s);
    }
    s = red.sum(s);
  }
}

// y = e^(x - m) * inv_s for N vectors starting at vector j0 of the slice.
template <int N> __device__ __forceinline__ void store_stage(const tile_ctx &c, int j0, const vec (&v)[N], float ml,
                                                             float inv_s) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    vec o;
#pragma unroll
    for (int w = 0; w < vec::kN; ++w)
      o.w[w] = tune::pack_bf16x2(tune::exp2_approx(fmaf(tune::bf16_lo(v[j].w[w]), kLog2e, -ml)) * inv_s,
                                 tune::exp2_approx(fmaf(tune::bf16_hi(v[j].w[w]), kLog2e, -ml)) * inv_s);
    store_vec(c, j0 + j, o);
  }
}

// Write the slice by re-reading x in batches (CACHE_ROW 0, and the split write kernel).
__device__ __forceinline__ void reread_write(const tile_ctx &c, float ml, float inv_s) {
  const int iters = slice_iters(c);
  for (int j0 = 0; j0 < iters; j0 += kBatchMax) {
    vec v[kBatchMax];
    load_stage<kBatchMax>(c, j0, v);
    store_stage<kBatchMax>(c, j0, v, ml, inv_s);
  }
}

// Write the thread's slice from the cache (CACHE_ROW) or by re-reading x.
__device__ __forceinline__ void epilogue(const tile_ctx &c, const vec (&cache)[kCache], float ml, float s) {
  const float inv_s = 1.f / s;
  if constexpr (CACHE_ROW) store_stage(c, 0, cache, ml, inv_s);
  else reread_write(c, ml, inv_s);
}

// EXP_ONCE: the whole softmax of the thread's cached slice v (already loaded), every exponential
// computed once into fp32 registers, then scaled and stored.
// N == kIters (a template only so that softmax_row's discarded EXP_ONCE 0 branch type-checks).
template <int N>
__device__ __forceinline__ void exp_once_stage(const tile_ctx &c, const reducer &red, const vec (&v)[N]) {
  constexpr int kE = 2 * vec::kN;  // bf16 per vector
  float e[N][kE];
  float ml = max_of(v, tune::neg_inf()) * kLog2e;  // the thread's max (log2 units)
  if constexpr (!ONLINE) ml = red.max(ml);          // the row's max
  const float b = exp_base(ml);
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int w = 0; w < vec::kN; ++w) {
      e[j][2 * w] = tune::exp2_approx(fmaf(tune::bf16_lo(v[j].w[w]), kLog2e, -b));
      e[j][2 * w + 1] = tune::exp2_approx(fmaf(tune::bf16_hi(v[j].w[w]), kLog2e, -b));
      s += e[j][2 * w] + e[j][2 * w + 1];
    }
  float f;
  if constexpr (ONLINE) {
    float m = ml;
    red.online(m, s);                          // the row's (max, sum)
    f = tune::exp2_approx(b - m) * (1.f / s);  // thread max -> row max, then 1 / sum
  } else {
    f = 1.f / red.sum(s);
  }
#pragma unroll
  for (int j = 0; j < N; ++j) {
    vec o;
#pragma unroll
    for (int w = 0; w < vec::kN; ++w) o.w[w] = tune::pack_bf16x2(e[j][2 * w] * f, e[j][2 * w + 1] * f);
    store_vec(c, j, o);
  }
}

// The scalar path for a whole segment that owns its row (kParts == 1).
__device__ __forceinline__ void scalar_row(const tile_ctx &c, const reducer &red) {
  float ml, s;
  scalar_stats(c, red, ml, s);
  scalar_write(c, ml, 1.f / s);
}

}  // namespace sm

#if CLUSTER > 1
#include "softmax/cluster.cuh"
#elif SPLITS == 1 && PERSIST > 0
// grid: min(row groups, SMs * PERSIST) blocks (row group: BLOCK / 32 rows in warp mode, one row
// in block mode), block BLOCK. Warp (block) g handles rows g, g + G, g + 2G, ... of the G warps
// (blocks) of the grid; the row condition is uniform over a warp (block), as the reductions need.
extern "C" __global__ void __launch_bounds__(BLOCK, PERSIST)
softmax_row(const bf16 *__restrict__ x, bf16 *__restrict__ y, int rows, int cols) {
  __shared__ float red_smem[2 * sm::kWarps];
  const sm::reducer red{red_smem};
  const int t = ROW_MODE == 0 ? threadIdx.x % 32 : threadIdx.x;
  long long row = ROW_MODE == 0 ? (long long)blockIdx.x * sm::kWarps + threadIdx.x / 32 : blockIdx.x;
  const long long stride = ROW_MODE == 0 ? (long long)gridDim.x * sm::kWarps : gridDim.x;
  if (row >= rows) return;
  if (cols % sm::kVecElems != 0) {
    for (; row < rows; row += stride) sm::scalar_row(sm::tile_at(x, y, row, 0, t, cols), red);
    return;
  }
  sm::vec cur[sm::kIters];
  sm::load_stage(sm::tile_at(x, y, row, 0, t, cols), 0, cur);
  for (;;) {
    const long long next = row + stride;
    const bool more = next < rows;
    sm::vec nxt[sm::kIters];
    if (more) sm::load_stage(sm::tile_at(x, y, next, 0, t, cols), 0, nxt);  // in flight during this row's work
    sm::exp_once_stage(sm::tile_at(x, y, row, 0, t, cols), red, cur);
    if (!more) break;
    row = next;
#pragma unroll
    for (int j = 0; j < sm::kIters; ++j) cur[j] = nxt[j];
  }
}
#elif SPLITS == 1
// grid: ROW_MODE 0: ceil(rows / (BLOCK / 32)); ROW_MODE 1: rows. block BLOCK.
extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
softmax_row(const bf16 *__restrict__ x, bf16 *__restrict__ y, int rows, int cols) {
  __shared__ float red_smem[2 * sm::kWarps];
  const sm::tile_ctx c = sm::tile_setup(x, y, rows, cols);
  const sm::reducer red{red_smem};
  if (!c.active) return;  // warp mode only: whole warps, no block-wide synchronization follows
  if (!c.aligned) {
    sm::scalar_row(c, red);
    return;
  }
  sm::vec cache[sm::kCache];
  if constexpr (EXP_ONCE) {
    sm::load_stage(c, 0, cache);
    sm::exp_once_stage(c, red, cache);
  } else {
    float ml, s;
    sm::stats_stage(c, red, cache, ml, s);
    sm::epilogue(c, cache, ml, s);
  }
}
#else
// partial: [rows, SPLITS, 2] floats, (max in log2 units, sum) of each slice, from the stats kernel.
// Both kernels: grid (SPLITS, rows), block BLOCK.
extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
softmax_split_stats(const bf16 *__restrict__ x, bf16 *__restrict__ y, float *__restrict__ partial, int rows,
                    int cols) {
  __shared__ float red_smem[2 * sm::kWarps];
  const sm::tile_ctx c = sm::tile_setup(x, y, rows, cols);
  const sm::reducer red{red_smem};
  sm::vec cache[sm::kCache];
  float ml, s;
  if (c.aligned) sm::stats_stage(c, red, cache, ml, s);
  else sm::scalar_stats(c, red, ml, s);
  if (threadIdx.x == 0)
    reinterpret_cast<float2 *>(partial)[(long long)blockIdx.y * SPLITS + blockIdx.x] = make_float2(ml, s);
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
softmax_split_write(const bf16 *__restrict__ x, bf16 *__restrict__ y, float *__restrict__ partial, int rows,
                    int cols) {
  const sm::tile_ctx c = sm::tile_setup(x, y, rows, cols);
  // merge the row's SPLITS (max, sum) pairs (log2 units); every thread does it (SPLITS <= 32 pairs,
  // the same addresses in every thread: broadcast loads)
  const float2 *p = reinterpret_cast<const float2 *>(partial) + (long long)blockIdx.y * SPLITS;
  float ml = tune::neg_inf(), s = 0.f;
#pragma unroll
  for (int i = 0; i < SPLITS; ++i) {
    const float2 q = __ldcg(p + i);
    tune::online_merge(ml, s, q.x, q.y);
  }
  if (c.aligned) sm::reread_write(c, ml, 1.f / s);
  else sm::scalar_write(c, ml, 1.f / s);
}
#endif
