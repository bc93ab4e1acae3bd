// decode.cuh: split-KV decode attention over a paged KV cache (one query token per sequence), with
// the arguments serving engines (vLLM, SGLang) pass: per-sequence lengths in device memory, a block
// table, a runtime page size and strided q, o and caches.
//
//   o[b,hq,:] = sum_{j < len_b} softmax_j(q[b,hq,:] . k[b,j,hkv,:] * scale) v[b,j,hkv,:],
//   hkv = hq / GQA_RATIO,  len_b = seq_lens[b]
//
// Arguments (both kernels and the reference take the same list, recipes/attention/decode.lua):
//   q, o          bf16, element (b, hq, d) at b * q_stride_b + hq * q_stride_h + d (o: o_stride_*),
//                 d contiguous: q may be a view of a fused QKV projection, o any [B, HQ, D] layout.
//   k_cache,      bf16 [num_pages, page_size, HKV, D] by default: element (page, row, hkv, d) at
//   v_cache       page * kv_stride_page + row * kv_stride_row + hkv * kv_stride_h + d (K and V share
//                 the strides: vLLM's NHD caches, FlashInfer's HND ones, K and V interleaved per page).
//   block_table   int32 [B, max_pages]: KV row j of sequence b is row j % page_size of page
//                 block_table[b * max_pages + j / page_size]. Only the first ceil(len_b / page_size)
//                 entries of a row are read.
//   seq_lens      int32 [B] in device memory: len_b, clamped to [0, max_pages * page_size].
//   page_size     any size >= 1 (a runtime value; rows are split by a multiply-shift division).
// Alignment: q, o, k_cache, v_cache 16-byte aligned and every stride a multiple of 8 elements
// (KV_FP8: the K/V strides a multiple of 16 elements).
// A sequence of length 0 gets o = 0 (no keys: the empty sum, never NaN).
//
// KV_FP8 1 (recipes/attention/decode_fp8.lua): k_cache and v_cache hold fp8 e4m3 (1 byte per
// element, same layout and strides in elements), and two more arguments follow v_cache:
//   k_scale, v_scale  f32 [HKV]: the cache holds k / k_scale[hkv] and v / v_scale[hkv] (vLLM's and
//                     FlashInfer's per-head scales; a per-tensor scale is HKV equal values).
// The elements are dequantized in registers (common/fp8_unpack.cuh) and the scales never touch them: the
// K scale is folded into q's pre-scaling (s = (q * scale_log2 * k_scale) . k), the V scale into the
// split's output (acc * v_scale, before the normalisation or the partial), so the combine is the
// same. q, o and the partials stay bf16 / fp32. Default 0: bf16 caches and no scale arguments.
// KV_SCALE_PAGE 1 (KV_FP8 only; a problem constant: attention.decode_fp8's dim kv_scale = "page"):
// the scales are per page and KV head instead, k_scale, v_scale f32 [num_pages, HKV] (element
// page * HKV + hkv, page the block table's page number), so an engine can quantize each page as it
// fills. A key's K scale multiplies its fp32 score (q is pre-scaled by scale_log2 only), its V scale
// its weight in P V relative to the V scale of the split's first page, and the split's output is
// multiplied by that one (as by the per-head scale): weights entering the tensor-core path's fp16
// product stay near 1 whatever the scales' magnitude. l sums the weights without V scales. The
// scales travel with their rows: loaded with the tile's K/V (the ring: copied into it beside them).
//
// CUDA graphs: the grid depends only on B, HQ, HKV and the config (SPLITS, GQA_PACK); lengths and
// the block table are read on the device, so one captured launch serves every step of a batch.
// Split s of sequence b takes tiles [s * per, (s + 1) * per) of that sequence's own length,
// per = ceil(ceil(len_b / BLOCK_N) / SPLITS): every split of a long sequence works, and a split past
// a short sequence's end writes the empty partial (m = -inf, l = 0, acc = 0) that the combine
// weighs 0. The last tile of a split may be partial: its rows past the end are loaded from the
// last valid row (never out of the sequence's pages) and get the score -inf.
// Math is fp32. Scores are in log2 units, s = (q . k) * scale_log2 with scale_log2 = scale * log2(e),
// so every exponential is a single exp2. Every online-softmax step shifts by 0 instead of a max of
// -inf (a row group that has seen only masked rows), so empty states stay (m = -inf, l = 0, acc = 0).
//
// Tunables (recipes/attention/decode.lua):
//   SPLITS     1 | 2 | 4 | 8 | 16 | 32  chunks of each sequence per (sequence, KV head): more blocks
//                                      for small B * HKV, one more fp32 partial per chunk to merge
//   BLOCK_N    16 | 32 | 64 | 128       KV rows per block tile (all loaded before any is used)
//   WARPS      2 | 4 | 8                warps per block of the split kernel
//   VEC_BYTES  8 | 16 (KV_FP8: 4 too)    bytes per K/V load instruction per thread; a KV row
//                                      (HEAD_DIM * kKvBytes bytes) is read by HEAD_DIM * kKvBytes /
//                                      VEC_BYTES lanes
//   GQA_PACK   0 | 1                    1: one block serves all GQA_RATIO query heads of its KV head,
//                                      so each K/V tile is read once; 0: one query head per block
//                                      (GQA_RATIO blocks read the same K/V, adjacent in launch order)
//   STAGES     1 | 2 (default 1)        register tiles in flight: 2 issues tile t+1's loads before
//                                      computing tile t (register double buffer)
//   KV_RING    0 | 2 | 3 | 4 (default 0) 0: K/V tiles in registers (STAGES above). k >= 2: each thread
//                                      streams its K/V vectors through its own k-deep ring in dynamic
//                                      shared memory with cp.async.cg (16-byte loads only, STAGES 1):
//                                      k - 1 tiles in flight without holding them in registers. A
//                                      thread reads back only what it copied, so cp.async.wait_group
//                                      orders it; no barrier. Dynamic shared memory: kRingBytes.
//   KV_HINT    0 | 1 | 2 (default 1)    K/V loads: 0 plain ld.global; 1 ld.global.nc.L1::no_allocate
//                                      (read-only, streams past L1); 2 as 1 plus .L2::256B prefetch
//   BLOCK_ORDER 0 | 1 (default 1)       launch order of the split kernel's blocks: 0 y = split * HKV + hkv
//                                      (adjacent blocks read the other heads' rows of the same pages at
//                                      about the same time), 1 y = hkv * SPLITS + split (adjacent blocks
//                                      walk one head's sequence). Same blocks when SPLITS == 1.
//   COMBINE_WARPS (default 4)           warps per block of the combine kernel
//   DEQUANT    0 | 1 (KV_FP8, default 0) e4m3 -> fp32: 0 the hardware cvt.rn.f16x2.e4m3x2 (sm_89+),
//                                      1 integer bit moves into fp16 (value * 2^-8, the 2^8 folded
//                                      into the scales); either way exact, then fp16 -> fp32
//   MMA        0 | 1 (default 0)          1: the split kernel computes q . k and P V on tensor cores (fp16 mma
//                                      for the fp8 cache, bf16 mma for the bf16 one)
//                                      (attention/decode_mma.cuh: its thread map, fragments and
//                                      numerics); VEC_BYTES and the row groups aside, the knobs above
//                                      keep their meaning. Needs GQA_PACK 1, VEC_BYTES 16 and
//                                      BLOCK_N / WARPS a multiple of 16.
//   KV_TMA     0 | 1 (default 0)        1 (MMA 1, KV_RING k >= 2, an fp8 cache's scales per head): one
//                                      more warp fills the k-deep ring with bulk tensor copies through
//                                      the maps k_map and v_map, two more kernel arguments
//                                      (attention/decode_tma.cuh).
// Problem constants (recipe `defines`): HEAD_DIM (64 | 128 | 256), GQA_RATIO (= HQ / HKV).
//
// Two kernels, both always launched, in this order (the launch list is the same for every config):
//   attn_decode_split    grid (GQA_PACK ? 1 : GQA_RATIO, SPLITS * HKV, B), block WARPS * 32, dynamic
//                        shared memory kRingBytes. Block (x, y, b) takes KV head hkv and split from y
//                        by BLOCK_ORDER, and query heads hkv * GQA_RATIO + {0 .. GQA_RATIO - 1}
//                        (GQA_PACK) or hkv * GQA_RATIO + x.
//                        SPLITS > 1: writes its unnormalised fp32 partial (m, l, acc) to `partial`.
//                        SPLITS == 1: normalises and writes o itself; `partial` is not touched.
//   attn_decode_combine  grid (ceil(B * HQ / COMBINE_WARPS)), block COMBINE_WARPS * 32; one warp per
//                        (b, hq) merges the SPLITS partials by the log-sum-exp rule and writes o.
//                        SPLITS == 1: returns at once (the recipe gives it a zero grid: not launched).
// Scratch (floats; R = B * HQ * SPLITS records, record (b * HQ + hq) * SPLITS + split; R * (D + 2)):
//   partial[0, R*D)          acc = sum_j 2^(s_j - m) v_j (unnormalised), D floats per record
//   partial[R*D, R*D + R)    m   = max_j s_j over the split (log2 units; -inf: an empty split)
//   partial[R*D + R, R*D+2R) l   = sum_j 2^(s_j - m)
// Requirements (recipe `requires`): BLOCK_N a multiple of the block's row groups (static_assert),
// HQ == HKV * GQA_RATIO. A tile inside one page (page_size % BLOCK_N == 0, a runtime test) looks its
// page up once, otherwise each row looks up its own.
//
// Thread map of the split kernel: the kLanesPerRow lanes of a row group read one KV row (K and V),
// each lane kVecElems consecutive head-dim elements; a warp holds kRowsPerWarp groups, the block
// kGroups. Tile row i * kGroups + g belongs to group g (i < kRows), so a warp's groups read adjacent
// rows. Each group keeps its own online-softmax state (m, l, acc slice) per query head; q . k is
// reduced across the group by xor shuffles, so every lane of a group holds the same scores.
//
// Stages: tile_setup (length, split rows, q into registers, pre-scaled); per tile page_stage
// (block-table look-up, one tile ahead), load_stage (16/8-byte K and V loads into registers),
// compute_stage (scores, mask, online softmax, P V); epilogue (merge groups by shuffles, warps
// through shared memory, write partial or o). Combine kernel: combine_stage.
#include <cuda_bf16.h>
#include "common/bf16.cuh"
#include "common/cp_async.cuh"
#include "common/reduce.cuh"
#include "common/smem_io.cuh"

#if !defined(SPLITS) || !defined(BLOCK_N) || !defined(WARPS) || !defined(VEC_BYTES) || !defined(GQA_PACK) || \
    !defined(HEAD_DIM) || !defined(GQA_RATIO)
#error "decode.cuh needs -D SPLITS BLOCK_N WARPS VEC_BYTES GQA_PACK HEAD_DIM GQA_RATIO"
#endif
#ifndef STAGES
#define STAGES 1
#endif
#ifndef KV_HINT
#define KV_HINT 1
#endif
#ifndef KV_RING
#define KV_RING 0
#endif
#ifndef BLOCK_ORDER
#define BLOCK_ORDER 1
#endif
#ifndef COMBINE_WARPS
#define COMBINE_WARPS 4
#endif
#ifndef KV_FP8
#define KV_FP8 0
#endif
#ifndef DEQUANT
#define DEQUANT 0
#endif
#ifndef MMA
#define MMA 0
#endif
#ifndef KV_SCALE_PAGE
#define KV_SCALE_PAGE 0
#endif
#ifndef KV_TMA
#define KV_TMA 0
#endif
#if KV_TMA
#include "common/tma.cuh"
#endif

typedef __nv_bfloat16 bf16;
#if KV_FP8
#include "common/fp8_unpack.cuh"
typedef unsigned char kv_t;  // e4m3 bytes
#else
typedef bf16 kv_t;
#endif

namespace decode {

constexpr int kD = HEAD_DIM;
constexpr int kKvBytes = KV_FP8 ? 1 : 2;             // bytes per K/V element
constexpr int kVecElems = VEC_BYTES / kKvBytes;      // K/V elements per load
constexpr int kWords = VEC_BYTES / 4;                // 32-bit words per K/V load
constexpr int kLanesPerRow = HEAD_DIM / kVecElems;   // lanes reading one KV row
constexpr int kRowsPerWarp = 32 / kLanesPerRow;      // row groups per warp
constexpr int kThreads = WARPS * 32;                 // threads that compute (KV_TMA: plus one producer warp)
constexpr int kGroups = WARPS * kRowsPerWarp;        // row groups per block
constexpr int kRows = BLOCK_N / kGroups;             // rows per group per tile
constexpr int kHeads = GQA_PACK ? GQA_RATIO : 1;     // query heads per block
constexpr int kChunks = HEAD_DIM / 4;                // float4 chunks of one output row
constexpr int kSmemBytes = WARPS * kHeads * (kD + 2) * 4;
constexpr int kKvRegs = 2 * kRows * kWords * STAGES; // registers holding K/V tiles
constexpr int kRingKvBytes = KV_RING * 2 * kRows * kThreads * 16;  // the ring's K/V vectors (KV_RING >= 2)
// dynamic shared memory (KV_RING >= 2): K/V, then (KV_SCALE_PAGE) each row's two scales per thread
constexpr int kRingBytes = kRingKvBytes + KV_SCALE_PAGE * KV_RING * 2 * kRows * kThreads * 4;

static_assert(HEAD_DIM == 64 || HEAD_DIM == 128 || HEAD_DIM == 256, "HEAD_DIM must be 64, 128 or 256");
static_assert(VEC_BYTES == 8 || VEC_BYTES == 16 || (KV_FP8 && VEC_BYTES == 4),
              "VEC_BYTES must be 8 or 16 (KV_FP8: 4, 8 or 16)");
static_assert(KV_FP8 == 0 || KV_FP8 == 1, "KV_FP8 must be 0 or 1");
static_assert(DEQUANT == 0 || DEQUANT == 1, "DEQUANT must be 0 or 1");
static_assert(MMA == 0 || MMA == 1, "MMA must be 0 or 1");
static_assert(KV_SCALE_PAGE == 0 || (KV_SCALE_PAGE == 1 && KV_FP8), "KV_SCALE_PAGE must be 0, or 1 with KV_FP8");
static_assert(kLanesPerRow >= 1 && kLanesPerRow <= 32 && 32 % kLanesPerRow == 0,
              "a KV row must be read by one warp or a power-of-two part of one: HEAD_DIM * kKvBytes / VEC_BYTES <= 32");
static_assert(SPLITS >= 1 && SPLITS <= 32, "SPLITS must be 1..32 (the combine gives each split one lane)");
static_assert(BLOCK_N == 16 || BLOCK_N == 32 || BLOCK_N == 64 || BLOCK_N == 128, "BLOCK_N must be 16..128");
static_assert(WARPS == 1 || WARPS == 2 || WARPS == 4 || WARPS == 8, "WARPS must be 1, 2, 4 or 8");
static_assert(BLOCK_N % kGroups == 0 && kRows >= 1,
              "every row group needs whole rows: BLOCK_N must be a multiple of WARPS * 32 / lanes-per-row");
static_assert(GQA_PACK == 0 || GQA_PACK == 1, "GQA_PACK must be 0 or 1");
static_assert(GQA_RATIO >= 1 && GQA_RATIO <= 8, "GQA_RATIO must be 1..8");
static_assert(STAGES == 1 || STAGES == 2, "STAGES must be 1 or 2");
static_assert(KV_HINT >= 0 && KV_HINT <= 2, "KV_HINT must be 0, 1 or 2");
static_assert(KV_RING == 0 || (KV_RING >= 2 && KV_RING <= 8), "KV_RING must be 0 or 2..8");
static_assert(KV_RING == 0 || (VEC_BYTES == 16 && STAGES == 1),
              "KV_RING needs 16-byte loads (cp.async.cg) and STAGES 1 (the ring replaces the register buffer)");
static_assert(BLOCK_ORDER == 0 || BLOCK_ORDER == 1, "BLOCK_ORDER must be 0 or 1");
static_assert(KV_TMA == 0 || (KV_TMA == 1 && MMA == 1 && !KV_SCALE_PAGE && KV_RING >= 2),
              "KV_TMA must be 0, or 1 with MMA 1, KV_RING >= 2 and no per-page scales");
static_assert(COMBINE_WARPS >= 1 && COMBINE_WARPS <= 32, "COMBINE_WARPS must be 1..32");
static_assert(kSmemBytes <= 48 * 1024, "epilogue shared memory over the 48 KiB static limit");
static_assert(kKvRegs <= 128, "K/V register tiles over 128 registers per thread: smaller BLOCK_N or more WARPS");

// ---------------------------------------------------------------------------------------------
// Helpers: K/V vector loads with cache hints, bf16 stores (unpacking, exp2 and warp reductions:
// templates/common).

struct kv_vec { unsigned w[kWords]; };  // kVecElems K/V elements in memory order, little-endian

#if KV_HINT == 1
#define DECODE_LD "ld.global.nc.L1::no_allocate"
#elif KV_HINT == 2
#define DECODE_LD "ld.global.nc.L1::no_allocate.L2::256B"
#endif

// VEC_BYTES of K or V at p (VEC_BYTES-aligned), global -> registers.
__device__ __forceinline__ kv_vec g2r_load_kv(const kv_t *p) {
  kv_vec r;
#if KV_HINT == 0
  if constexpr (kWords == 4) {
    const uint4 t = *reinterpret_cast<const uint4 *>(p);
    r.w[0] = t.x; r.w[1] = t.y; r.w[2] = t.z; r.w[3] = t.w;
  } else if constexpr (kWords == 2) {
    const uint2 t = *reinterpret_cast<const uint2 *>(p);
    r.w[0] = t.x; r.w[1] = t.y;
  } else {
    r.w[0] = *reinterpret_cast<const unsigned *>(p);
  }
#else
  if constexpr (kWords == 4)
    asm(DECODE_LD ".v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.w[0]), "=r"(r.w[1]), "=r"(r.w[2]), "=r"(r.w[3]) : "l"(p));
  else if constexpr (kWords == 2)
    asm(DECODE_LD ".v2.u32 {%0, %1}, [%2];" : "=r"(r.w[0]), "=r"(r.w[1]) : "l"(p));
  else
    asm(DECODE_LD ".u32 %0, [%1];" : "=r"(r.w[0]) : "l"(p));
#endif
  return r;
}

// The kVecElems K/V elements of x as fp32, in memory order. KV_FP8: each value times
// 1 / kDequantScale (exactly; the scales carry kDequantScale back).
#if KV_FP8
constexpr float kDequantScale = DEQUANT ? tune::kE4m3ShiftScale : 1.f;
__device__ __forceinline__ void unpack_kv(const kv_vec &x, float (&f)[kVecElems]) {
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    if constexpr (DEQUANT) tune::e4m3x4_to_f32_shifted(x.w[w], f[4 * w], f[4 * w + 1], f[4 * w + 2], f[4 * w + 3]);
    else tune::e4m3x4_to_f32(x.w[w], f[4 * w], f[4 * w + 1], f[4 * w + 2], f[4 * w + 3]);
  }
}
#else
__device__ __forceinline__ void unpack_kv(const kv_vec &x, float (&f)[kVecElems]) {
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    f[2 * w] = tune::bf16_lo(x.w[w]);
    f[2 * w + 1] = tune::bf16_hi(x.w[w]);
  }
}
#endif

using tune::bf16_hi;
using tune::bf16_lo;
using tune::exp2_approx;
using tune::neg_inf;
using tune::warp_reduce_max;
using tune::warp_reduce_sum;

// Four floats -> four bf16 (round to nearest even), stored as 8 bytes at p (8-byte aligned).
__device__ __forceinline__ void r2g_store_bf16x4(bf16 *p, float a, float b, float c, float d) {
  *reinterpret_cast<uint2 *>(p) = make_uint2(tune::pack_bf16x2(a, b), tune::pack_bf16x2(c, d));
}

// n / d and n % d for 0 <= n < 2^31 and a divisor d >= 1 known only at run time, as a multiply-high
// and a shift (Granlund-Montgomery, as CUTLASS's FastDivmod): mul = ceil(2^p / d), p = 31 + ceil(log2 d).
struct fast_div {
  int d;
  unsigned mul, shr;
  __device__ __forceinline__ int div(int n) const { return d > 1 ? (int)(__umulhi((unsigned)n, mul) >> shr) : n; }
};

__device__ __forceinline__ fast_div make_fast_div(int d) {
  fast_div f{d, 0u, 0u};
  if (d > 1) {
    const unsigned p = 31 + (32 - __clz(d - 1));
    f.mul = (unsigned)(((1ull << p) + (unsigned)d - 1) / (unsigned)d);
    f.shr = p - 32;
  }
  return f;
}

// ---------------------------------------------------------------------------------------------
// Split kernel stages.

struct split_ctx {
  int b;                 // sequence
  int hq0;               // first query head of the block
  int split;             // KV chunk index
  int warp, lane;
  int group;             // row group of this thread in the block (0 .. kGroups-1; tile_setup)
  int row0;              // first KV row (within the sequence) of the split
  int row_end;           // one past the split's last row (<= the sequence's length)
  int n_tiles;           // BLOCK_N tiles in the split, the last one possibly partial (0: empty split)
  bool tile_in_page;     // page_size % BLOCK_N == 0: a tile's rows share one page
  fast_div page;         // row -> (page index, row in page)
  long long page_stride; // kv_stride_page [elements]
  long long row_stride;  // kv_stride_row [elements]
  const int *bt;         // block_table row of sequence b
  const kv_t *k;         // k_cache + hkv * kv_stride_h + this lane's head-dim offset (page 0, row 0)
  const kv_t *v;         // same for v_cache
  float q_scale;         // scale_log2 (KV_FP8: times kDequantScale, and k_scale[hkv] unless KV_SCALE_PAGE)
#if KV_FP8
  float v_scale;         // v_scale[hkv] (KV_SCALE_PAGE: v_ref) * kDequantScale: applied to the split's acc
#endif
#if KV_SCALE_PAGE
  const float *ks, *vs;  // k_scale + hkv, v_scale + hkv: a page's scales at page * scale_stride
  int scale_stride;      // HKV
  float v_ref_inv;       // 1 / v_ref, v_ref the V scale of the split's first page (1: an empty split)
#endif
};

// Online-softmax state of one row group, per query head: running max m (log2 units), running
// sum l = sum 2^(s - m), and this lane's kVecElems slice of acc = sum 2^(s - m) v.
struct softmax_state {
  float m[kHeads];
  float l[kHeads];
  float acc[kHeads][kVecElems];
};

#if KV_FP8
// This lane's kVecElems bf16 of q at p (2 * VEC_BYTES bytes, aligned to that or 16) as fp32 times qs.
__device__ __forceinline__ void load_q_slice(const bf16 *p, float qs, float (&f)[kVecElems]) {
  constexpr int kQWords = kVecElems / 2;
  unsigned w[kQWords];
  if constexpr (kQWords % 4 == 0) {
#pragma unroll
    for (int j = 0; j < kQWords / 4; ++j) {
      const uint4 t = reinterpret_cast<const uint4 *>(p)[j];
      w[4 * j] = t.x; w[4 * j + 1] = t.y; w[4 * j + 2] = t.z; w[4 * j + 3] = t.w;
    }
  } else {  // kQWords == 2 (kVecElems 4)
    const uint2 t = *reinterpret_cast<const uint2 *>(p);
    w[0] = t.x; w[1] = t.y;
  }
#pragma unroll
  for (int j = 0; j < kQWords; ++j) {
    f[2 * j] = bf16_lo(w[j]) * qs;
    f[2 * j + 1] = bf16_hi(w[j]) * qs;
  }
}
#define DECODE_SCALE_ARGS const float *__restrict__ k_scale, const float *__restrict__ v_scale,
#define DECODE_SCALE_VALS k_scale, v_scale,
#else
#define DECODE_SCALE_ARGS
#define DECODE_SCALE_VALS
#endif
#if KV_TMA
#define DECODE_TMA_ARGS , const __grid_constant__ tune::tensormap k_map, const __grid_constant__ tune::tensormap v_map
#else
#define DECODE_TMA_ARGS
#endif

// Block -> (b, KV head, first query head, split, rows of this sequence's length). d_off: this
// lane's head-dim offset into the K/V rows.
__device__ __forceinline__ split_ctx split_setup(const kv_t *__restrict__ k_cache, const kv_t *__restrict__ v_cache,
                                                 DECODE_SCALE_ARGS const int *__restrict__ block_table,
                                                 const int *__restrict__ seq_lens, int HKV, int max_pages,
                                                 int page_size, long long kv_stride_page, long long kv_stride_row,
                                                 long long kv_stride_h, float scale_log2, int d_off) {
  split_ctx c;
  c.page = make_fast_div(page_size);
  c.b = blockIdx.z;
  const int hkv = BLOCK_ORDER == 0 ? blockIdx.y % HKV : blockIdx.y / SPLITS;
  c.split = BLOCK_ORDER == 0 ? blockIdx.y / HKV : blockIdx.y % SPLITS;
  c.hq0 = hkv * GQA_RATIO + (GQA_PACK ? 0 : (int)blockIdx.x);
  c.warp = threadIdx.x / 32;
  c.lane = threadIdx.x % 32;
  const int len = max(0, min(__ldg(seq_lens + c.b), max_pages * page_size));
  const int tiles = (len + BLOCK_N - 1) / BLOCK_N;
  const int per_split = (tiles + SPLITS - 1) / SPLITS;
  c.row0 = min(c.split * per_split, tiles) * BLOCK_N;
  c.row_end = min(c.row0 + per_split * BLOCK_N, len);
  c.n_tiles = max(0, (c.row_end - c.row0 + BLOCK_N - 1) / BLOCK_N);
  c.tile_in_page = page_size % BLOCK_N == 0;
  c.page_stride = kv_stride_page;
  c.row_stride = kv_stride_row;
  c.bt = block_table + (long long)c.b * max_pages;
  c.k = k_cache + (long long)hkv * kv_stride_h + d_off;
  c.v = v_cache + (long long)hkv * kv_stride_h + d_off;
#if KV_SCALE_PAGE
  c.ks = k_scale + hkv;
  c.vs = v_scale + hkv;
  c.scale_stride = HKV;
  const float v_ref = c.n_tiles > 0 ? __ldg(c.vs + (long long)__ldg(c.bt + c.page.div(c.row0)) * HKV) : 1.f;
  c.v_ref_inv = 1.f / v_ref;
  c.q_scale = scale_log2 * kDequantScale;
  c.v_scale = v_ref * kDequantScale;
#elif KV_FP8
  c.q_scale = scale_log2 * (__ldg(k_scale + hkv) * kDequantScale);
  c.v_scale = __ldg(v_scale + hkv) * kDequantScale;
#else
  c.q_scale = scale_log2;
#endif
  return c;
}

// split_setup for the row-group thread map; this lane's q slice of every head into qf, times q_scale.
__device__ __forceinline__ split_ctx tile_setup(const bf16 *__restrict__ q, const kv_t *__restrict__ k_cache,
                                                const kv_t *__restrict__ v_cache, DECODE_SCALE_ARGS
                                                const int *__restrict__ block_table,
                                                const int *__restrict__ seq_lens, int HKV, int max_pages,
                                                int page_size, long long q_stride_b, long long q_stride_h,
                                                long long kv_stride_page, long long kv_stride_row,
                                                long long kv_stride_h, float scale_log2,
                                                float (&qf)[kHeads][kVecElems]) {
  const int lane = threadIdx.x % 32;
  const int d_off = (lane % kLanesPerRow) * kVecElems;
  split_ctx c = split_setup(k_cache, v_cache, DECODE_SCALE_VALS
                            block_table, seq_lens, HKV, max_pages, page_size, kv_stride_page, kv_stride_row,
                            kv_stride_h, scale_log2, d_off);
  c.group = c.warp * kRowsPerWarp + lane / kLanesPerRow;
#if KV_FP8
#pragma unroll
  for (int h = 0; h < kHeads; ++h)
    load_q_slice(q + c.b * q_stride_b + (c.hq0 + h) * q_stride_h + d_off, c.q_scale, qf[h]);
#else
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    const kv_vec qv = *reinterpret_cast<const kv_vec *>(q + c.b * q_stride_b + (c.hq0 + h) * q_stride_h + d_off);
#pragma unroll
    for (int w = 0; w < kWords; ++w) {
      qf[h][2 * w] = bf16_lo(qv.w[w]) * c.q_scale;
      qf[h][2 * w + 1] = bf16_hi(qv.w[w]) * c.q_scale;
    }
  }
#endif
  return c;
}

// Row i of this thread in tile t, clamped to the split's last row: the masked rows of a partial
// tile read a row of the sequence's own pages (their scores are -inf, compute_stage).
__device__ __forceinline__ int tile_row(const split_ctx &c, int t, int i) {
  return min(c.row0 + t * BLOCK_N + i * kGroups + c.group, c.row_end - 1);
}

// Element offset from c.k / c.v of the sequence's row r, its page being `page`.
__device__ __forceinline__ long long row_offset(const split_ctx &c, int r, int page) {
  const int in_page = r - c.page.div(r) * c.page.d;
  return page * c.page_stride + in_page * c.row_stride;
}

// A row's K and V scale pointers (KV_SCALE_PAGE), its page being `page`.
#if KV_SCALE_PAGE
__device__ __forceinline__ const float *k_scale_of(const split_ctx &c, int page) { return c.ks + (long long)page * c.scale_stride; }
__device__ __forceinline__ const float *v_scale_of(const split_ctx &c, int page) { return c.vs + (long long)page * c.scale_stride; }
#endif

// Block-table entries of this thread's rows of a tile, and its K/V (with KV_SCALE_PAGE, their
// scales) once loaded.
struct row_pages { int p[kRows]; };
struct row_tile {
  kv_vec k[kRows], v[kRows];
#if KV_SCALE_PAGE
  float ks[kRows], vs[kRows];
#endif
};

// Block-table entries of this thread's rows of tile t (t < n_tiles): one look-up for a tile inside a
// page, else one per row.
__device__ __forceinline__ void page_stage(const split_ctx &c, int t, row_pages &pages) {
  if (c.tile_in_page) {
    const int p = __ldg(c.bt + c.page.div(c.row0 + t * BLOCK_N));
#pragma unroll
    for (int i = 0; i < kRows; ++i) pages.p[i] = p;
  } else {
#pragma unroll
    for (int i = 0; i < kRows; ++i) pages.p[i] = __ldg(c.bt + c.page.div(tile_row(c, t, i)));
  }
}

// Issue this thread's K and V loads of tile t (kRows rows each); nothing waits here.
__device__ __forceinline__ void load_stage(const split_ctx &c, int t, const row_pages &pages, row_tile &x) {
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const long long off = row_offset(c, tile_row(c, t, i), pages.p[i]);
    x.k[i] = g2r_load_kv(c.k + off);
    x.v[i] = g2r_load_kv(c.v + off);
#if KV_SCALE_PAGE
    x.ks[i] = __ldg(k_scale_of(c, pages.p[i]));
    x.vs[i] = __ldg(v_scale_of(c, pages.p[i]));
#endif
  }
}

#if KV_RING >= 2
// KV_RING: slot `slot` of this thread's ring holds its kRows K vectors then its kRows V vectors,
// 16 bytes each, at stride kThreads * 16 (consecutive threads, consecutive 16-byte words); with
// KV_SCALE_PAGE, the rows' K then V scales of the slot follow all slots, 4 bytes each, same order.
__device__ __forceinline__ unsigned ring_addr(unsigned ring, int slot, int j) {
  return ring + ((slot * 2 * kRows + j) * kThreads + threadIdx.x) * 16;
}
__device__ __forceinline__ unsigned ring_scale_addr(unsigned ring, int slot, int j) {
  return ring + kRingKvBytes + ((slot * 2 * kRows + j) * kThreads + threadIdx.x) * 4;
}

// Issue cp.async copies of this thread's K and V vectors of tile t into ring slot `slot`.
__device__ __forceinline__ void ring_load_stage(const split_ctx &c, int t, const row_pages &pages, unsigned ring,
                                                int slot) {
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const long long off = row_offset(c, tile_row(c, t, i), pages.p[i]);
    tune::g2s_copy16(ring_addr(ring, slot, i), c.k + off);
    tune::g2s_copy16(ring_addr(ring, slot, kRows + i), c.v + off);
#if KV_SCALE_PAGE
    tune::g2s_copy4(ring_scale_addr(ring, slot, i), k_scale_of(c, pages.p[i]));
    tune::g2s_copy4(ring_scale_addr(ring, slot, kRows + i), v_scale_of(c, pages.p[i]));
#endif
  }
}

// Ring slot -> registers (the copies of that slot must have completed: cp_async_wait).
__device__ __forceinline__ void ring_read_stage(unsigned ring, int slot, row_tile &x) {
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    tune::s2r_load16(ring_addr(ring, slot, i), x.k[i].w);
    tune::s2r_load16(ring_addr(ring, slot, kRows + i), x.v[i].w);
#if KV_SCALE_PAGE
    x.ks[i] = tune::s2r_load_f32(ring_scale_addr(ring, slot, i));
    x.vs[i] = tune::s2r_load_f32(ring_scale_addr(ring, slot, kRows + i));
#endif
  }
}
#endif

// The shift of an online-softmax step: the running max, or 0 while it is -inf (nothing seen), so
// that 2^(-inf - shift) = 0 and empty states stay (m = -inf, l = 0, acc = 0) instead of NaN.
__device__ __forceinline__ float safe_shift(float m) { return m == neg_inf() ? 0.f : m; }

// Scores of the tile's rows for every head (-inf for this thread's rows i with i * kGroups >=
// valid: past the split's end), online-softmax update, acc += P V. valid = rows of the tile left
// in the split minus this thread's group.
__device__ __forceinline__ void compute_stage(const split_ctx &c, const float (&qf)[kHeads][kVecElems],
                                              const row_tile &x, int valid, softmax_state &st) {
  float s[kHeads][kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    float kf[kVecElems];
    unpack_kv(x.k[i], kf);
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
      float acc = 0.f;
#pragma unroll
      for (int e = 0; e < kVecElems; ++e) acc = fmaf(qf[h][e], kf[e], acc);
      s[h][i] = acc;
    }
  }
  // Sum the partial dots over the lanes of the row group (xor stays inside aligned lane groups).
#pragma unroll
  for (int off = kLanesPerRow / 2; off > 0; off >>= 1)
#pragma unroll
    for (int h = 0; h < kHeads; ++h)
#pragma unroll
      for (int i = 0; i < kRows; ++i) s[h][i] += __shfl_xor_sync(0xffffffffu, s[h][i], off);
#pragma unroll
  for (int h = 0; h < kHeads; ++h)
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
#if KV_SCALE_PAGE
      s[h][i] *= x.ks[i];
#endif
      if (i * kGroups >= valid) s[h][i] = neg_inf();
    }

#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    float m_tile = s[h][0];
#pragma unroll
    for (int i = 1; i < kRows; ++i) m_tile = fmaxf(m_tile, s[h][i]);
    const float m_new = fmaxf(st.m[h], m_tile);
    const float shift = safe_shift(m_new);
    const float alpha = exp2_approx(st.m[h] - shift);  // 0 on the first tile (m = -inf)
    st.m[h] = m_new;
    float l = st.l[h] * alpha;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      s[h][i] = exp2_approx(s[h][i] - shift);
      l += s[h][i];
    }
    st.l[h] = l;
#pragma unroll
    for (int e = 0; e < kVecElems; ++e) st.acc[h][e] *= alpha;
  }
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    float vf[kVecElems];
    unpack_kv(x.v[i], vf);
#if KV_SCALE_PAGE
    const float v_rel = x.vs[i] * c.v_ref_inv;
#else
    constexpr float v_rel = 1.f;
#endif
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
      const float p = s[h][i] * v_rel;
#pragma unroll
      for (int e = 0; e < kVecElems; ++e) st.acc[h][e] = fmaf(p, vf[e], st.acc[h][e]);
    }
  }
}

// The block's warps, each with its per-head (m, l, acc) in shared memory (s_m, s_l: WARPS * kHeads;
// s_acc: WARPS * kHeads rows of kD floats; the caller's barrier done), merged and written as the
// split's partial (SPLITS > 1) or the normalised output (SPLITS == 1).
__device__ __forceinline__ void block_merge_store(const split_ctx &c, const float *__restrict__ s_acc,
                                                  const float *__restrict__ s_m, const float *__restrict__ s_l,
                                                  bf16 *__restrict__ o, float *__restrict__ partial, int B, int HQ,
                                                  long long o_stride_b, long long o_stride_h) {
  const long long R = (long long)B * HQ * SPLITS;
  for (int idx = threadIdx.x; idx < kHeads * kChunks; idx += kThreads) {
    const int h = idx / kChunks, ch = idx % kChunks;
    float m = neg_inf();
#pragma unroll
    for (int w = 0; w < WARPS; ++w) m = fmaxf(m, s_m[w * kHeads + h]);
    const float shift = safe_shift(m);
    float l = 0.f;
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      const float sc = exp2_approx(s_m[w * kHeads + h] - shift);
      l = fmaf(s_l[w * kHeads + h], sc, l);
      const float4 x = *reinterpret_cast<const float4 *>(s_acc + (w * kHeads + h) * kD + ch * 4);
      a.x = fmaf(x.x, sc, a.x); a.y = fmaf(x.y, sc, a.y); a.z = fmaf(x.z, sc, a.z); a.w = fmaf(x.w, sc, a.w);
    }
    const long long bh = (long long)c.b * HQ + c.hq0 + h;
#if KV_FP8
    a.x *= c.v_scale; a.y *= c.v_scale; a.z *= c.v_scale; a.w *= c.v_scale;
#endif
    if constexpr (SPLITS == 1) {
      const float inv = l > 0.f ? 1.f / l : 0.f;  // l = 0: an empty sequence, o = 0
      r2g_store_bf16x4(o + c.b * o_stride_b + (c.hq0 + h) * o_stride_h + ch * 4, a.x * inv, a.y * inv, a.z * inv,
                       a.w * inv);
    } else {
      const long long rec = bh * SPLITS + c.split;
      *reinterpret_cast<float4 *>(partial + rec * kD + ch * 4) = a;
      if (ch == 0) {
        partial[R * kD + rec] = m;
        partial[R * kD + R + rec] = l;
      }
    }
  }
}

// Merge the block's row groups (lanes of a warp by shuffles, then warps through shared memory)
// and write the split's partial (SPLITS > 1) or the normalised output (SPLITS == 1).
__device__ __forceinline__ void epilogue(const split_ctx &c, softmax_state &st, float *__restrict__ s_acc,
                                         float *__restrict__ s_m, float *__restrict__ s_l, bf16 *__restrict__ o,
                                         float *__restrict__ partial, int B, int HQ, long long o_stride_b,
                                         long long o_stride_h) {
  // Groups of one warp: lanes lane and lane ^ off (off a multiple of kLanesPerRow) hold the same slice.
#pragma unroll
  for (int off = kLanesPerRow; off < 32; off <<= 1) {
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
      const float m_o = __shfl_xor_sync(0xffffffffu, st.m[h], off);
      const float l_o = __shfl_xor_sync(0xffffffffu, st.l[h], off);
      const float m_new = fmaxf(st.m[h], m_o);  // -inf when neither group saw a row
      const float shift = safe_shift(m_new);
      const float a = exp2_approx(st.m[h] - shift), b = exp2_approx(m_o - shift);
      st.m[h] = m_new;
      st.l[h] = st.l[h] * a + l_o * b;
#pragma unroll
      for (int e = 0; e < kVecElems; ++e) {
        const float acc_o = __shfl_xor_sync(0xffffffffu, st.acc[h][e], off);
        st.acc[h][e] = st.acc[h][e] * a + acc_o * b;
      }
    }
  }
  if (c.lane < kLanesPerRow) {
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
      float *dst = s_acc + (c.warp * kHeads + h) * kD + c.lane * kVecElems;
#pragma unroll
      for (int e = 0; e < kVecElems; e += 4)
        *reinterpret_cast<float4 *>(dst + e) = make_float4(st.acc[h][e], st.acc[h][e + 1], st.acc[h][e + 2], st.acc[h][e + 3]);
      if (c.lane == 0) {
        s_m[c.warp * kHeads + h] = st.m[h];
        s_l[c.warp * kHeads + h] = st.l[h];
      }
    }
  }
  __syncthreads();
  block_merge_store(c, s_acc, s_m, s_l, o, partial, B, HQ, o_stride_b, o_stride_h);
}

// ---------------------------------------------------------------------------------------------
// The tile loop of the split kernel, for either thread map. Path names its block-table and tile
// types (pages_t, tile_t) and stages (static page_stage, load_stage, ring_load_stage,
// ring_read_stage, as the row-group path's above); compute(t, tile) consumes tile t.
template <class Path, class Compute>
__device__ __forceinline__ void run_tiles(const split_ctx &c, Compute compute) {
  typename Path::pages_t pages;
  if (c.n_tiles > 0) Path::page_stage(c, 0, pages);
#if KV_RING >= 2
  // Tile t goes to slot t % KV_RING; KV_RING - 1 tiles are in flight while one is computed. One
  // group is committed per tile, empty past the end, so at tile t the KV_RING - 1 newer groups may
  // stay in flight (cp_async_wait<KV_RING - 1>).
  extern __shared__ __align__(16) unsigned char ring_smem[];
  const unsigned ring = tune::smem_u32(ring_smem);
#pragma unroll
  for (int t = 0; t < KV_RING - 1; ++t) {
    if (t < c.n_tiles) {
      Path::ring_load_stage(c, t, pages, ring, t);
      if (t + 1 < c.n_tiles) Path::page_stage(c, t + 1, pages);
    }
    tune::cp_async_commit();
  }
#pragma unroll 1
  for (int t = 0; t < c.n_tiles; ++t) {
    const int ahead = t + KV_RING - 1;
    if (ahead < c.n_tiles) {  // its slot held tile t - 1, already read into registers
      Path::ring_load_stage(c, ahead, pages, ring, ahead % KV_RING);
      if (ahead + 1 < c.n_tiles) Path::page_stage(c, ahead + 1, pages);
    }
    tune::cp_async_commit();
    tune::cp_async_wait<KV_RING - 1>();
    typename Path::tile_t x;
    Path::ring_read_stage(ring, t % KV_RING, x);
    compute(t, x);
  }
#elif STAGES == 1
#pragma unroll 1
  for (int t = 0; t < c.n_tiles; ++t) {
    typename Path::tile_t x;
    Path::load_stage(c, t, pages, x);
    if (t + 1 < c.n_tiles) Path::page_stage(c, t + 1, pages);
    compute(t, x);
  }
#else
  // Register double buffer: tile t + 1 is loaded into `next` before tile t is computed from `cur`.
  typename Path::tile_t cur;
  if (c.n_tiles > 0) Path::load_stage(c, 0, pages, cur);
  if (c.n_tiles > 1) Path::page_stage(c, 1, pages);
#pragma unroll 1
  for (int t = 0; t < c.n_tiles; ++t) {
    typename Path::tile_t next;
    if (t + 1 < c.n_tiles) {
      Path::load_stage(c, t + 1, pages, next);
      if (t + 2 < c.n_tiles) Path::page_stage(c, t + 2, pages);
    }
    compute(t, cur);
    cur = next;
  }
#endif
}

// The row-group thread map's stages, for run_tiles.
struct row_path {
  typedef row_pages pages_t;
  typedef row_tile tile_t;
  static __device__ __forceinline__ void page_stage(const split_ctx &c, int t, pages_t &p) { decode::page_stage(c, t, p); }
  static __device__ __forceinline__ void load_stage(const split_ctx &c, int t, const pages_t &p, tile_t &x) {
    decode::load_stage(c, t, p, x);
  }
#if KV_RING >= 2
  static __device__ __forceinline__ void ring_load_stage(const split_ctx &c, int t, const pages_t &p, unsigned ring,
                                                         int slot) {
    decode::ring_load_stage(c, t, p, ring, slot);
  }
  static __device__ __forceinline__ void ring_read_stage(unsigned ring, int slot, tile_t &x) {
    decode::ring_read_stage(ring, slot, x);
  }
#endif
};

// ---------------------------------------------------------------------------------------------
// Combine kernel stage: one warp merges the SPLITS partials of record (b * HQ + hq).
// Splits past a sequence's end have m = -inf and l = 0: weight 0; all empty (length 0): o = 0.
__device__ __forceinline__ void combine_stage(bf16 *__restrict__ o, const float *__restrict__ partial, int B, int HQ,
                                              long long o_stride_b, long long o_stride_h) {
  const int lane = threadIdx.x % 32;
  const long long bh = (long long)blockIdx.x * COMBINE_WARPS + threadIdx.x / 32;
  if (bh >= (long long)B * HQ) return;
  const long long R = (long long)B * HQ * SPLITS;
  const float *acc = partial + bh * SPLITS * kD;
  const float *pm = partial + R * kD + bh * SPLITS;
  const float *pl = pm + R;
  const float m = lane < SPLITS ? __ldcg(pm + lane) : neg_inf();
  const float m_all = warp_reduce_max(m);
  const float w = lane < SPLITS ? exp2_approx(m - safe_shift(m_all)) : 0.f;
  const float l_all = warp_reduce_sum(lane < SPLITS ? __ldcg(pl + lane) * w : 0.f);
  const float inv = l_all > 0.f ? 1.f / l_all : 0.f;
  bf16 *out = o + (bh / HQ) * o_stride_b + (bh % HQ) * o_stride_h;
  // every lane runs every shuffle (a lane past kChunks, as with HEAD_DIM 64, only skips the loads):
  // a __shfl_sync whose source lane is not executing it reads garbage
  for (int ch0 = 0; ch0 < kChunks; ch0 += 32) {
    const int ch = ch0 + lane;
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int s = 0; s < SPLITS; ++s) {
      const float ws = __shfl_sync(0xffffffffu, w, s);
      if (ch < kChunks) {
        const float4 x = __ldcg(reinterpret_cast<const float4 *>(acc + s * kD) + ch);
        a.x = fmaf(x.x, ws, a.x); a.y = fmaf(x.y, ws, a.y); a.z = fmaf(x.z, ws, a.z); a.w = fmaf(x.w, ws, a.w);
      }
    }
    if (ch < kChunks) r2g_store_bf16x4(out + ch * 4, a.x * inv, a.y * inv, a.z * inv, a.w * inv);
  }
}

}  // namespace decode

// ---------------------------------------------------------------------------------------------
// Kernels. Both take the same parameters (recipe args ABI).

#define DECODE_PARAMS                                                                                              \
  const bf16 *__restrict__ q, const kv_t *__restrict__ k_cache, const kv_t *__restrict__ v_cache,                 \
      DECODE_SCALE_ARGS const int *__restrict__ block_table, const int *__restrict__ seq_lens,                     \
      bf16 *__restrict__ o, float *__restrict__ partial, int B, int HQ, int HKV, int max_pages, int page_size,    \
      long long q_stride_b, long long q_stride_h, long long o_stride_b, long long o_stride_h,                     \
      long long kv_stride_page, long long kv_stride_row, long long kv_stride_h, float scale_log2

#if MMA
#include "attention/decode_mma.cuh"
#endif
#if KV_TMA
#include "attention/decode_tma.cuh"
#endif

extern "C" __global__ void __launch_bounds__(decode::kThreads + 32 * KV_TMA) attn_decode_split(DECODE_PARAMS DECODE_TMA_ARGS) {
  using namespace decode;
  __shared__ __align__(16) float s_acc[WARPS * kHeads * kD];
  __shared__ float s_m[WARPS * kHeads], s_l[WARPS * kHeads];
#if KV_TMA
  tma::split(q, k_cache, v_cache, DECODE_SCALE_VALS block_table, seq_lens, o, partial, B, HQ, HKV, max_pages, page_size, q_stride_b,
             q_stride_h, o_stride_b, o_stride_h, kv_stride_page, kv_stride_row, kv_stride_h, scale_log2, k_map, v_map,
             s_acc, s_m, s_l);
#elif MMA
  mma::split(q, k_cache, v_cache, DECODE_SCALE_VALS block_table, seq_lens, o, partial, B, HQ, HKV, max_pages, page_size,
             q_stride_b, q_stride_h, o_stride_b, o_stride_h, kv_stride_page, kv_stride_row, kv_stride_h, scale_log2,
             s_acc, s_m, s_l);
#else

  float qf[kHeads][kVecElems];
  const split_ctx c = tile_setup(q, k_cache, v_cache, DECODE_SCALE_VALS
                                 block_table, seq_lens, HKV, max_pages, page_size, q_stride_b,
                                 q_stride_h, kv_stride_page, kv_stride_row, kv_stride_h, scale_log2, qf);
  softmax_state st;
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    st.m[h] = neg_inf();
    st.l[h] = 0.f;
#pragma unroll
    for (int e = 0; e < kVecElems; ++e) st.acc[h][e] = 0.f;
  }
  // rows of tile t left in the split, minus this thread's group (compute_stage masks the rest)
  const int valid0 = c.row_end - c.row0 - c.group;
  run_tiles<row_path>(c, [&](int t, const row_tile &x) { compute_stage(c, qf, x, valid0 - t * BLOCK_N, st); });
  epilogue(c, st, s_acc, s_m, s_l, o, partial, B, HQ, o_stride_b, o_stride_h);
#endif
}

extern "C" __global__ void __launch_bounds__(COMBINE_WARPS * 32) attn_decode_combine(DECODE_PARAMS DECODE_TMA_ARGS) {
  if constexpr (SPLITS > 1) decode::combine_stage(o, partial, B, HQ, o_stride_b, o_stride_h);
}
