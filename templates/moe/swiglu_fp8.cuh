// swiglu_fp8.cuh: SwiGLU + fp8 e4m3 quantization in one pass, the step of an FP8 MoE layer between
// the gate/up expert GEMM (bf16 output) and the down expert GEMM (e4m3 activations, f32 scales):
//
//   x [T][2N] bf16: gate = x[:, :N], up = x[:, N:]  (vLLM's silu_and_mul layout)
//   h = silu(gate) * up                              fp32 from the bf16 inputs, never rounded to bf16
//   QUANT 1 (group):  scale[row][k] = max(amax(|h| of columns 128k .. 128k + 127) / 448, 1 / (448 * 512))
//                     scale [T][ceil(N / 128)], the last group partial (DeepSeek-V3's 1 x 128 activation
//                     blocks: moe.grouped_fp8's scale_a with scale 'block')
//   QUANT 2 (token):  scale[row] = max(amax(|h| of the row) / 448, 1 / (448 * 512))  (scale 'row')
//   QUANT 3 (static): scale[0] given, read                                           (scale 'tensor')
//   y [T][N] = e4m3(h * (1 / scale))                 nearest even, saturated to +-448
//
// The floor keeps a group of zeros finite (y = 0 there), as vLLM's dynamic quantization does. The
// reciprocal is taken once per scale (an IEEE division) and multiplied in: y differs from
// e4m3(h / scale) only where h / scale lies within ~1 ulp of fp32 of a rounding midpoint.
//
// Thread map (rmsnorm.cuh's): a row per warp (ROW_MODE 0, BLOCK / 32 rows a block) or per block
// (ROW_MODE 1). A pass of the row's threads covers kThreads * kVec consecutive columns, thread t the
// kVec from (pass * kThreads + t) * kVec: the gate vector and the up vector N columns after it. A
// pass's width is a multiple of 128 and a group's 128 columns are the vectors of kGroupLanes
// aligned lanes of one warp, so the group mode reduces each group with shuffles alone and makes one
// pass over the row; the token mode needs the row's amax before its first store: it keeps h in
// registers (CACHE_ROW 1) or reads the row twice, recomputing h (CACHE_ROW 0; the second read comes
// from L2 for all but the longest rows); the static mode makes one pass.
//
// Tunables (the recipe's space, recipes/moe/swiglu_fp8.lua):
//   ROW_MODE   0 | 1        a row per warp | per block
//   BLOCK      128 .. 1024  threads per block (warp mode: at most 512)
//   VEC_BYTES  8 | 16       bytes of one bf16 load (4 | 8 columns); y is stored half as many bytes
//   LOADS      1 | 2 | 4    passes whose gate and up vectors are loaded before the first is used
//                           (the loads in flight per thread, what hides DRAM latency)
//   CACHE_ROW  0 | 1        token mode: h of the whole row held in registers (ITERS vectors a thread)
//   SPLIT      1 .. 64      group and static modes: blocks per row along N (grid.y), each taking a run
//                           of its passes: a few rows (decode) still spread over the SMs, as these
//                           modes need no row-wide reduction
// Problem constants: QUANT; ITERS (CACHE_ROW 1: ceil(N / (kThreads * kVec)), from the recipe).
// Domain: N % 8 == 0, so that every vector of gate, up and y is aligned for either width (no scalar
// path); T >= 1 and any N: the last pass is masked per vector.
// x is only read and never written by the kernel: its loads take the non-coherent path.
#include "common/activation.cuh"
#include "common/fp8_pack.cuh"
#include "common/reduce.cuh"
#include "common/vec.cuh"

#if !defined(QUANT) || !defined(ROW_MODE) || !defined(BLOCK) || !defined(VEC_BYTES) || !defined(LOADS) || \
    !defined(CACHE_ROW)
#error "swiglu_fp8.cuh needs -D QUANT ROW_MODE BLOCK VEC_BYTES LOADS CACHE_ROW"
#endif
#ifndef SPLIT
#define SPLIT 1
#endif
#if CACHE_ROW && !defined(ITERS)
#error "swiglu_fp8.cuh needs -D ITERS (vectors per thread held in registers) with CACHE_ROW 1"
#endif
#ifndef ITERS
#define ITERS 0
#endif

typedef __nv_bfloat16 bf16;

namespace sg {

static_assert(QUANT == 1 || QUANT == 2 || QUANT == 3, "QUANT must be 1 (group), 2 (token) or 3 (static)");
static_assert(ROW_MODE == 0 || ROW_MODE == 1, "ROW_MODE must be 0 (warp per row) or 1 (block per row)");
static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(VEC_BYTES == 8 || VEC_BYTES == 16, "VEC_BYTES must be 8 or 16");
static_assert(LOADS == 1 || LOADS == 2 || LOADS == 4, "LOADS must be 1, 2 or 4");
static_assert(CACHE_ROW == 0 || QUANT == 2, "CACHE_ROW 1 is the token mode's (the others make one pass)");
static_assert(SPLIT >= 1 && (SPLIT == 1 || QUANT != 2), "SPLIT > 1 needs a mode without a row reduction (group, static)");
// h in registers: ITERS * kVec floats, plus the raw vectors while they are converted
static_assert(!CACHE_ROW || (ITERS >= 1 && ITERS * VEC_BYTES / 2 <= 64), "cached row slice over 64 floats per thread");

constexpr int kVec = VEC_BYTES / 2;                    // columns of a vector (bf16 in, e4m3 bytes out)
constexpr int kWarps = BLOCK / 32;
constexpr int kThreads = ROW_MODE == 0 ? 32 : BLOCK;  // threads sharing one row
constexpr int kGroup = 128;                            // columns of a group's scale (QUANT 1)
constexpr int kGroupLanes = kGroup / kVec;             // lanes whose vectors make one group: 16 or 32
constexpr int kIters = ITERS > 0 ? ITERS : 1;          // cached vectors per thread (CACHE_ROW 1)
constexpr float kE4m3Max = 448.f;
constexpr float kMinScale = 1.f / (448.f * 512.f);
typedef tune::words<VEC_BYTES> vec;
typedef tune::words<kVec> out_vec;                     // kVec e4m3 bytes

static_assert((kThreads * kVec) % kGroup == 0 && kGroupLanes <= 32, "a pass must cover whole groups of one warp");

struct row_ctx {
  const bf16 *gate;  // the row's gate columns: x + row * 2N (its up columns follow N after)
  unsigned char *y;  // the row's output: y + row * N
  long long row;     // row index: the slot of its scales
  int n;             // N: columns of h
  int end;           // one past the last column this block handles (n, or its split's end)
  int pass0, pass1;  // the passes over the row this block makes: [pass0, pass1)
  int t;             // thread index within the row
  bool active;       // false: a warp past the last row (warp mode)
};

__device__ __forceinline__ row_ctx tile_setup(const bf16 *x, unsigned char *y, int T, int N) {
  long long row;
  int t;
  if constexpr (ROW_MODE == 0) {
    row = (long long)blockIdx.x * kWarps + threadIdx.x / 32;
    t = threadIdx.x % 32;
  } else {
    row = blockIdx.x;
    t = threadIdx.x;
  }
  // split blockIdx.y of SPLIT takes its share of the row's passes (the same for all its threads)
  const int passes = (N + kThreads * kVec - 1) / (kThreads * kVec);
  const int split = SPLIT == 1 ? 0 : (int)blockIdx.y;  // a constant 0 unsplit: no live registers for it
  const int pass0 = (int)((long long)passes * split / SPLIT), pass1 = (int)((long long)passes * (split + 1) / SPLIT);
  const int end = SPLIT == 1 ? N : min(N, pass1 * kThreads * kVec);
  return {x + row * 2 * N, y + row * N, row, N, end, pass0, pass1, t, row < T};
}

// First column of the thread's vector in pass j; the vector is whole when < end, else not this
// block's (past the row or in the next split's passes).
__device__ __forceinline__ int vec_col(const row_ctx &c, int j) { return (j * kThreads + c.t) * kVec; }

// The gate and up vectors of NV passes from pass j0 (zeros past the row's end: h = 0 there, which
// raises no maximum and is never stored).
template <int NV>
__device__ __forceinline__ void load_stage(const row_ctx &c, int j0, vec (&g)[NV], vec (&u)[NV]) {
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = vec_col(c, j0 + j);
    if (e < c.end) {
      g[j] = tune::load_words<1, VEC_BYTES>(c.gate + e);
      u[j] = tune::load_words<1, VEC_BYTES>(c.gate + c.n + e);
    } else {
#pragma unroll
      for (int w = 0; w < vec::kN; ++w) g[j].w[w] = u[j].w[w] = 0u;
    }
  }
}

// h = silu(g) * u in fp32 for NV vectors; m[j] = max |h| of vector j.
template <int NV>
__device__ __forceinline__ void compute_stage(const vec (&g)[NV], const vec (&u)[NV], float (&h)[NV][kVec],
                                              float (&m)[NV]) {
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    m[j] = 0.f;
#pragma unroll
    for (int w = 0; w < vec::kN; ++w) {
      h[j][2 * w] = tune::silu(tune::bf16_lo(g[j].w[w])) * tune::bf16_lo(u[j].w[w]);
      h[j][2 * w + 1] = tune::silu(tune::bf16_hi(g[j].w[w])) * tune::bf16_hi(u[j].w[w]);
      m[j] = fmaxf(m[j], fmaxf(fabsf(h[j][2 * w]), fabsf(h[j][2 * w + 1])));
    }
  }
}

// y = e4m3(h * q) of the vector at column e, if it is this block's.
__device__ __forceinline__ void epilogue(const row_ctx &c, int e, const float (&h)[kVec], float q) {
  if (e >= c.end) return;
  out_vec o;
#pragma unroll
  for (int i = 0; i < out_vec::kN; ++i)
    o.w[i] = tune::f32x4_to_e4m3x4(h[4 * i] * q, h[4 * i + 1] * q, h[4 * i + 2] * q, h[4 * i + 3] * q);
  tune::store_words<0, kVec>(c.y + e, o);
}

__device__ __forceinline__ float scale_of(float amax) { return fmaxf(amax / kE4m3Max, kMinScale); }

// QUANT 1: one pass; each vector's group maximum from its kGroupLanes lanes, whose first writes the
// group's scale (a pass covers whole groups, so a split never cuts one). Passes past the block's
// (LOADS > 1) shuffle zeros and store nothing.
__device__ __forceinline__ void group_row(const row_ctx &c, float *__restrict__ scale) {
  const int groups = (c.n + kGroup - 1) / kGroup;
  for (int j0 = c.pass0; j0 < c.pass1; j0 += LOADS) {
    vec g[LOADS], u[LOADS];
    float h[LOADS][kVec], m[LOADS];
    load_stage(c, j0, g, u);
    compute_stage(g, u, h, m);
#pragma unroll
    for (int j = 0; j < LOADS; ++j) {
      const float s = scale_of(tune::warp_reduce_max<kGroupLanes>(m[j]));
      const int e = vec_col(c, j0 + j);
      if (c.t % kGroupLanes == 0 && e < c.end) scale[c.row * groups + e / kGroup] = s;
      epilogue(c, e, h[j], 1.f / s);
    }
  }
}

__device__ __forceinline__ float row_max(float m, float *smem) {
  if constexpr (ROW_MODE == 0) return tune::warp_reduce_max(m);
  else return tune::block_reduce_max<kWarps>(m, smem);
}

// QUANT 2: the row's scale, written by its first thread; returns 1 / scale.
__device__ __forceinline__ float token_factor(const row_ctx &c, float m, float *__restrict__ scale, float *smem) {
  const float s = scale_of(row_max(m, smem));
  if (c.t == 0) scale[c.row] = s;
  return 1.f / s;
}

// QUANT 2: h held in registers (CACHE_ROW 1) or recomputed from a second read of the row.
__device__ __forceinline__ void token_row(const row_ctx &c, float *__restrict__ scale, float *smem) {
  if constexpr (CACHE_ROW) {
    vec g[kIters], u[kIters];
    float h[kIters][kVec], m[kIters];
    load_stage(c, 0, g, u);
    compute_stage(g, u, h, m);
    float mx = 0.f;
#pragma unroll
    for (int j = 0; j < kIters; ++j) mx = fmaxf(mx, m[j]);
    const float q = token_factor(c, mx, scale, smem);
#pragma unroll
    for (int j = 0; j < kIters; ++j) epilogue(c, vec_col(c, j), h[j], q);
  } else {
    float mx = 0.f;
    for (int j0 = 0; j0 < c.pass1; j0 += LOADS) {
      vec g[LOADS], u[LOADS];
      float h[LOADS][kVec], m[LOADS];
      load_stage(c, j0, g, u);
      compute_stage(g, u, h, m);
#pragma unroll
      for (int j = 0; j < LOADS; ++j) mx = fmaxf(mx, m[j]);
    }
    const float q = token_factor(c, mx, scale, smem);
    for (int j0 = 0; j0 < c.pass1; j0 += LOADS) {  // the same loads and arithmetic: the same h
      vec g[LOADS], u[LOADS];
      float h[LOADS][kVec], m[LOADS];
      load_stage(c, j0, g, u);
      compute_stage(g, u, h, m);
#pragma unroll
      for (int j = 0; j < LOADS; ++j) epilogue(c, vec_col(c, j0 + j), h[j], q);
    }
  }
}

// QUANT 3: one pass with the given scale's reciprocal.
__device__ __forceinline__ void static_row(const row_ctx &c, float q) {
  for (int j0 = c.pass0; j0 < c.pass1; j0 += LOADS) {
    vec g[LOADS], u[LOADS];
    float h[LOADS][kVec], m[LOADS];
    load_stage(c, j0, g, u);
    compute_stage(g, u, h, m);
#pragma unroll
    for (int j = 0; j < LOADS; ++j) epilogue(c, vec_col(c, j0 + j), h[j], q);
  }
}

}  // namespace sg

// grid: (ROW_MODE 0: ceil(T / (BLOCK / 32)); ROW_MODE 1: T, SPLIT). block BLOCK.
// scale: QUANT 1 [T][ceil(N / 128)] written, QUANT 2 [T] written, QUANT 3 [1] read.
extern "C" __global__ void __launch_bounds__(BLOCK)
swiglu_fp8_kernel(const bf16 *__restrict__ x, unsigned char *__restrict__ y, float *__restrict__ scale, int T, int N) {
  __shared__ float red_smem[sg::kWarps];
  const sg::row_ctx c = sg::tile_setup(x, y, T, N);
  if (!c.active) return;  // warp mode only: whole warps, no block-wide synchronization follows
  if constexpr (QUANT == 1) sg::group_row(c, scale);
  else if constexpr (QUANT == 2) sg::token_row(c, scale, red_smem);
  else sg::static_row(c, 1.f / __ldg(scale));
}
