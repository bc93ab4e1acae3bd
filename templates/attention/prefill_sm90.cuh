// prefill_sm90.cuh: attention forward (prefill) for Hopper (sm_90a): warp-specialized, wgmma.
//
//   o[b,h,i,:] = sum_j softmax_j(q[b,h,i,:] . k[b,kvh,j,:] * scale) v[b,kvh,j,:]
//   (causal: only j <= i), kvh = h / (HQ / HKV) (GQA; HQ a multiple of HKV).
//
// Two entries over one mainloop (VARLEN picks the one a compile emits):
// attn_prefill_sm90 (VARLEN 0): q, o [B, HQ, S, D]; k, v [B, HKV, S, D]; contiguous bf16 (same
//   arguments as prefill.cuh).
// attn_varlen_sm90 (VARLEN 1): packed variable-length sequences (FlashAttention's varlen layout, THD):
//   q [T, HQ, D], k and v [T, HKV, D], o [T, HQ, D], sequence b is tokens [cu_seqlens[b],
//   cu_seqlens[b + 1]) (i32 [B + 1], the same for queries and keys: self-attention prefill), causal
//   within each sequence. Rows (tokens) are q_ld, k_ld, v_ld, o_ld elements apart (i64; heads are D
//   apart), so a view of an engine's fused QKV projection needs no copy; row strides and the base
//   pointers must be multiples of 8 elements (16-byte copies).
// Any length >= 1: rows past a sequence's end are zero-filled on load (cp.async) or read but masked
// (TMA) and never stored; keys past it are masked.
//
// Block: CONSUMERS consumer warpgroups (warpgroup w owns query rows [64 w, 64 w + 64) of the block's
// BLOCK_M = 64 * CONSUMERS rows) and one producer warpgroup (the last; PRODUCER_WARPS of its warps
// copy). The producer fills the Q tile once and a STAGES-deep ring of K and V tiles with cp.async
// (16-byte copies into the 128-byte-swizzled layout wgmma reads), each completing on an mbarrier
// (cp.async.mbarrier.arrive.noinc); consumers release K and V slots separately (one arrival per
// consumer warp), so the next K tile loads while P V of the current one runs.
//
// Consumer warpgroup, per K/V tile j:
//   S = Q K_j^T      wgmma m64 n BLOCK_N k16 (SS: Q and K from shared memory), fp32 accumulators
//   mask             causal diagonal tiles and the key tail (key >= S) only
//   online softmax   on the accumulator layout (2 rows per thread, quad shuffles), exp2 with the
//                    scale folded in; P -> bf16 registers, which are the A fragments of the next wgmma
//   O += P V_j       wgmma m64 n D k16 (RS: P from registers, V from shared memory, MN-major)
// OVERLAP = 1 (FlashAttention-3's intra-warpgroup overlap): S_{j+1} = Q K_{j+1}^T and O += P_j V_j are
//   in flight together; the softmax of S_{j+1} runs while P_j V_j finishes, O is rescaled after it.
// OVERLAP = 0: each wgmma batch is waited for before the next step (simpler, fewer registers).
//
// Shared memory (1024-byte aligned; every tile is stored as D / 64 column blocks of ROWS x 128 bytes,
// 16-byte chunk c of row r at c ^ (r % 8), common/wgmma.cuh): Q [BLOCK_M x D], STAGES K tiles,
// STAGES V tiles [BLOCK_N x D], then the mbarriers. Q K^T reads K as a K-major B operand; P V reads
// V as an MN-major B operand (LBO = the column-block stride BLOCK_N * 128, SBO = 1024).
// The epilogue writes O / l as bf16 over the warpgroup's own Q rows, then 16-byte coalesced stores.
//
// Tunables (recipes/attention/prefill_sm90.lua):
//   BLOCK_N     64 | 96 | 128 | 160 | 176 | 192   keys per K/V tile (n of Q K^T)
//   CONSUMERS   1 | 2 | 3       consumer warpgroups; BLOCK_M = 64 * CONSUMERS
//   STAGES      1 .. 4          K/V ring depth
//   OVERLAP     0 | 1           see above
//   SCHED       0 | 1 | 2       0: grid (tiles, HQ, B), tile = blockIdx.x; 1: same grid, longest causal
//                               tiles first within each head; 2: grid (tiles * HQ * B), heads taken
//                               in groups of about SCHED_WAVE / tiles, longest tiles of the group first
//                               (balances causal work across a wave, the group's K/V stay in L2)
//   PRODUCER_WARPS 1 | 2 | 4 [4]  producer warps that issue cp.async
//   SETMAXNREG  0 | 1 [1]       CONSUMERS >= 2: producer gives registers to the consumers
//   PV_SPLIT    0 | 1 [0]       1: P V as D / 64 wgmma n64 per k16 step (no LBO), 0: one n = D wgmma
//   PINGPONG    0 | 1 [0]       OVERLAP = 1, CONSUMERS >= 2: warpgroups take turns issuing their wgmma
//                               batches (FlashAttention-3's inter-warpgroup schedule), so that one
//                               softmax overlaps the other warpgroups' matmuls
//   SCHED_WAVE  [132]           blocks per wave assumed by SCHED 2 (the SM count of H100 / H200)
//   USE_TMA     0 | 1 [0]       1: one producer thread loads every tile with bulk tensor copies (TMA,
//                               4-D maps {D, S, heads, B} (the tensors' shapes reversed, the spec's
//                               default), box {64, rows, 1, 1}, 128-byte swizzle: rows past S of a head
//                               read as zeros) completing on the `full` barriers; the kernel
//                               then takes `const __grid_constant__ tune::tensormap tmQ, tmK, tmV` after
//                               scale_log2 (recipes/attention/prefill_sm90.lua's tmQ, tmK, tmV and
//                               tools/check/prefill_sm90_check.cu build them: docs/tensormap-args.md;
//                               a box must not exceed S). 0: cp.async.
//   TMA_ARGS    0 | 1 [USE_TMA] the kernel takes the three maps (used or not), so that one recipe arg
//                               list serves USE_TMA 0 and 1
//   MIN_BLOCKS  1 .. 4 [1]      >= 2 (CONSUMERS 1 only): __launch_bounds__ for that many blocks per SM;
//                               at 2 with a producer warpgroup, setmaxnreg moves its registers to the
//                               consumer (24 / 232 with TMA, 40 / 216 with cp.async);
//                               at 3 and 4 the consumer gets what is left (136 / 104 with TMA); the
//                               shared memory must fit MIN_BLOCKS times
//   LEAN_PRODUCER 0 | 1 [0]     1: the producer is one warp, not a warpgroup (block = 128 * CONSUMERS
//                               + 32 threads), no setmaxnreg: every thread keeps the launch bound's
//                               registers (65536 / (MIN_BLOCKS * threads): 204 at 2 blocks, 136 at 3,
//                               102 at 4), so that 3 or 4 one-consumer blocks share an SM
//   PERSISTENT  0 | 1 [0]       1: grid = (blocks, 1, 1) with blocks <= the tiles (one wave: the SM
//                               count); block i takes tiles i, i + blocks, ... in SCHED order (SCHED
//                               0 | 1: tile-major inside a head, heads, batches; 2: as below). The
//                               K/V ring and its barrier phases run on across tiles, so the next
//                               tile's K/V load while this one's last P V and epilogue run; the Q
//                               tile (which the epilogue reuses for O) is reloaded after every
//                               consumer warp has stored its rows (q_empty barrier).
// Problem constants: HEAD_DIM 64 | 128, IS_CAUSAL 0 | 1.
//
// Launch (must match the recipe): block = 128 * CONSUMERS + (LEAN_PRODUCER ? 32 : 128), grid = (T, HQ, B) for SCHED 0 | 1 or
// (T * HQ * B, 1, 1) for SCHED 2 with T = ceil(S / BLOCK_M), (any count <= T * HQ * B, 1, 1) when
// PERSISTENT; dynamic shared memory =
// attn_prefill_sm90_smem_bytes (kSmemBytes below).
//
// VARLEN 1 (recipes/attention/varlen.lua), what differs:
//   GQA_PACK    0 | 1 [0]       1: a tile packs the G = GQA_RATIO query heads of one KV head, row by
//                               row (row r: token r / G, head r % G), so that a short sequence fills
//                               G times more of the tile and its K/V are read once for G heads;
//                               G must divide 64 (TMA: the Q box is {64, G, BLOCK_M / G, 1}).
//   GQA_RATIO   HQ / HKV        (GQA_PACK only) compile-time G.
//   SCHED       0 | 1 | 2       0: grid (TILES, HQ / G, 1), blockIdx.x the tile in sequence order,
//                               tiles of a sequence first to last; 1: same, last (longest causal)
//                               tile of each sequence first; 2: grid (TILES * HQ / G, 1, 1), heads
//                               fastest, tiles of every sequence by index, highest first (the
//                               heaviest causal work of the whole batch starts first).
//   The grid depends on T and B only, never on the lengths (a CUDA graph replays it while they
//   change): TILES = T * G / BLOCK_M + B >= sum over sequences of ceil(len * G / BLOCK_M). Warp 0
//   maps the block to (sequence, tile) from cu_seqlens (a warp scan over per-lane chunks of the
//   sequences; SCHED 2 a binary search over the tile index) and the block exits past the last tile.
//   USE_TMA: 4-D maps {D, heads, T, 1} (token stride = the row stride; box {64, 1, rows, 1}, the Q
//   box {64, G, BLOCK_M / G, 1}); rows past T read as zeros, rows of the next sequence are masked.
//   PERSISTENT must be 0. Shared memory: 16 more bytes (the block's work, written by warp 0).
//
// VARLEN_KV 1 (with VARLEN; recipes/attention/varlen_kv.lua): keys longer than queries, as a chunked
//   prefill or a prompt continuing a cached prefix (flash_attn_varlen_func with cu_seqlens_q and
//   cu_seqlens_k). Entry attn_varlen_kv_sm90 takes cu_seqlens_q and cu_prefix (i32 [B + 1], prefix
//   sums of the per-sequence prefix lengths Lk - Lq >= 0, i.e. cu_seqlens_k - cu_seqlens_q): sequence
//   b's queries are q tokens [cu_seqlens_q[b], cu_seqlens_q[b + 1]), its keys k and v tokens
//   [cu_seqlens_q[b] + cu_prefix[b], cu_seqlens_q[b + 1] + cu_prefix[b + 1]). Causal is aligned at the
//   end: query j sees keys 0 .. j + Lk - Lq. The grid and the tile map are those of VARLEN over the
//   query tiles (T = the query tokens); the K/V loop runs over the sequence's Lk keys. USE_TMA: the K
//   and V maps span the key tokens {D, HKV, TK, 1}. Shared memory: 32 bytes of work, not 16.
#include <cuda_bf16.h>
#include "common/cp_async.cuh"
#include "common/cp_async_zfill.cuh"
#include "common/fast_math.cuh"
#include "common/mbarrier.cuh"
#include "common/mma.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

#if !defined(BLOCK_N) || !defined(CONSUMERS) || !defined(STAGES) || !defined(OVERLAP) || !defined(SCHED) || \
    !defined(HEAD_DIM) || !defined(IS_CAUSAL)
#error "prefill_sm90.cuh needs -D BLOCK_N CONSUMERS STAGES OVERLAP SCHED HEAD_DIM IS_CAUSAL"
#endif
#ifndef PRODUCER_WARPS
#define PRODUCER_WARPS 4
#endif
#ifndef SETMAXNREG
#define SETMAXNREG 1
#endif
#ifndef PV_SPLIT
#define PV_SPLIT 0
#endif
#ifndef SCHED_WAVE
#define SCHED_WAVE 132
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef USE_TMA
#define USE_TMA 0
#endif
#ifndef TMA_ARGS
#define TMA_ARGS USE_TMA
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef LEAN_PRODUCER
#define LEAN_PRODUCER 0
#endif
#if USE_TMA && !TMA_ARGS
#error "USE_TMA needs TMA_ARGS (the tensor map parameters)"
#endif
#ifndef VARLEN
#define VARLEN 0
#endif
#ifndef GQA_PACK
#define GQA_PACK 0
#endif
#ifndef VARLEN_KV
#define VARLEN_KV 0
#endif
#if GQA_PACK && !defined(GQA_RATIO)
#error "GQA_PACK needs -D GQA_RATIO (HQ / HKV)"
#endif

typedef __nv_bfloat16 bf16;

namespace pf90 {

constexpr int kD = HEAD_DIM;
constexpr int kBN = BLOCK_N;
constexpr int kCons = CONSUMERS;
constexpr int kBM = 64 * kCons;
constexpr int kStages = STAGES;
constexpr int kDB = kD / 64;                       // 64-column (128-byte) blocks of a tile
constexpr int kThreads = kCons * 128 + (LEAN_PRODUCER ? 32 : 128);
// threads that copy and arrive on `full` (a lean producer has one warp)
constexpr int kProdThreads = USE_TMA ? 1 : (LEAN_PRODUCER ? 32 : PRODUCER_WARPS * 32);
constexpr int kSAcc = kBN / 2;                     // score accumulators per thread
constexpr int kOAcc = kD / 2;                      // output accumulators per thread
constexpr int kPK = kBN / 16;                      // k16 steps of P V
constexpr int kQBytes = kBM * kD * 2;
constexpr int kKVBytes = kBN * kD * 2;
constexpr int kKOff = kQBytes;
constexpr int kVOff = kKOff + kStages * kKVBytes;
constexpr int kBarOff = kVOff + kStages * kKVBytes;
constexpr int kBarBytes = (1 + 4 * kStages + PERSISTENT) * 8;  // PERSISTENT: + q_empty
constexpr int kWorkOff = kBarOff + kBarBytes;      // VARLEN: the block's work (4 ints, VARLEN_KV 6)
constexpr int kSmemBytes = 1024 + kWorkOff + (VARLEN ? 16 + 16 * VARLEN_KV : 0);  // + slack to align the base to 1024
#if GQA_PACK
constexpr int kG = GQA_RATIO;                      // query heads per tile row group
#else
constexpr int kG = 1;
#endif
// MIN_BLOCKS 2 (one consumer warpgroup): two blocks share an SM, so one's prologue and epilogue
// overlap the other's matmuls; each starts with 65536 / (2 * 256) = 128 registers per thread.
// setmaxnreg acts on whole warpgroups: a lean producer (one warp) has none to give back.
constexpr bool kSetMaxNReg = SETMAXNREG && !LEAN_PRODUCER && (kCons >= 2 || MIN_BLOCKS >= 2);
// setmaxnreg budgets: the block starts with 65536 / kThreads registers per thread (ptxas caps the
// kernel there: 168 at 384 threads, 128 at 512); the consumers' increase must fit in what the
// producer warpgroup gives back: 128 * kProducerRegs + kCons * 128 * kConsumerRegs <= block total.
// A TMA producer is one thread issuing a few copies: 24 registers leave 240 to 2 consumers; its
// persistent tile loop spills at 24 (ptxas, sm_90a), hence 40 / 232 as for cp.async.
constexpr bool kTmaLean = USE_TMA && !PERSISTENT;
constexpr int kProducerRegs = kCons == 1 ? (kTmaLean ? 24 : 40) : kCons == 2 ? (kTmaLean ? 24 : 40) : 32;
// MIN_BLOCKS 3 | 4: whatever the block's entry budget leaves after the producer (136 | 104 with TMA)
constexpr int kEntryRegs = (65536 / (kThreads * MIN_BLOCKS)) & ~7;
constexpr int kConsumerRegs = MIN_BLOCKS >= 3 ? ((kEntryRegs * kThreads - 128 * kProducerRegs) / 128) & ~7
                              : kCons == 1 ? (kTmaLean ? 232 : 216) : kCons == 2 ? (kTmaLean ? 240 : 232) : 160;

static_assert(kD == 64 || kD == 128, "HEAD_DIM must be 64 or 128");
static_assert(kBN == 64 || kBN == 96 || kBN == 128 || kBN == 160 || kBN == 176 || kBN == 192,
              "BLOCK_N must be 64, 96, 128, 160, 176 or 192");
static_assert(kCons >= 1 && kCons <= 3, "CONSUMERS must be 1..3");
static_assert(kStages >= 1 && kStages <= 4, "STAGES must be 1..4");
static_assert(OVERLAP == 0 || OVERLAP == 1, "OVERLAP must be 0 or 1");
static_assert(PINGPONG == 0 || (PINGPONG == 1 && OVERLAP == 1 && kCons >= 2),
              "PINGPONG needs OVERLAP = 1 and at least 2 consumer warpgroups");
static_assert(SCHED >= 0 && SCHED <= 2, "SCHED must be 0, 1 or 2");
static_assert(PRODUCER_WARPS == 1 || PRODUCER_WARPS == 2 || PRODUCER_WARPS == 4, "PRODUCER_WARPS must be 1, 2 or 4");
constexpr int kCopyRowStep = kProdThreads >= 8 ? kProdThreads / 8 : 1;  // rows per cp.async pass
static_assert(USE_TMA || (kBN % kCopyRowStep == 0 && kBM % kCopyRowStep == 0),
              "tile rows must split evenly over the copy threads (8 per 128-byte row)");
static_assert(MIN_BLOCKS == 1 || (MIN_BLOCKS >= 2 && MIN_BLOCKS <= 4 && kCons == 1),
              "MIN_BLOCKS 2 .. 4 is for one consumer warpgroup");
static_assert(LEAN_PRODUCER == 0 || LEAN_PRODUCER == 1, "LEAN_PRODUCER must be 0 or 1");
// each block on an SM also holds 1 KiB reserved by the system; an SM has 228 KiB
static_assert((kSmemBytes + 1024) * MIN_BLOCKS <= 228 * 1024, "MIN_BLOCKS blocks' shared memory does not fit an SM");
static_assert(!kSetMaxNReg || 128 * kProducerRegs + kCons * 128 * kConsumerRegs <= ((65536 / (kThreads * MIN_BLOCKS)) & ~7) * kThreads,
              "setmaxnreg budgets exceed what the block holds at entry");
static_assert(USE_TMA == 0 || USE_TMA == 1, "USE_TMA must be 0 or 1");
static_assert(PERSISTENT == 0 || PERSISTENT == 1, "PERSISTENT must be 0 or 1");
static_assert(kSmemBytes <= 227 * 1024, "shared memory over the 227 KiB per-block limit of sm_90");
static_assert(VARLEN == 0 || VARLEN == 1, "VARLEN must be 0 or 1");
static_assert(!VARLEN || !PERSISTENT, "VARLEN has no persistent schedule");
static_assert(VARLEN_KV == 0 || (VARLEN_KV == 1 && VARLEN), "VARLEN_KV must be 0 or 1, and 1 needs VARLEN");
static_assert(kG == 1 || (VARLEN && kG >= 1 && 64 % kG == 0), "GQA_PACK: VARLEN only, GQA_RATIO dividing 64");

constexpr int kSchedBar = 4;  // PINGPONG named barriers 4 .. 3 + kCons (1 .. kCons: epilogues)

using tune::neg_inf;

// Shared-memory layout of one block (byte addresses; ring slot s of K at k + s * kKVBytes).
struct Smem {
  unsigned q, k, v;
  unsigned q_full, k_full, k_empty, v_full, v_empty;  // barrier arrays: + 8 * slot
  unsigned q_empty;                                   // PERSISTENT only
  unsigned work;  // VARLEN only: m_blk, head, first token, length (VARLEN_KV: then first key, keys)
};
__device__ __forceinline__ Smem smem_layout(unsigned base) {
  Smem s;
  s.q = base;
  s.k = base + kKOff;
  s.v = base + kVOff;
  s.q_full = base + kBarOff;
  s.k_full = s.q_full + 8;
  s.k_empty = s.k_full + 8 * kStages;
  s.v_full = s.k_empty + 8 * kStages;
  s.v_empty = s.v_full + 8 * kStages;
  s.q_empty = s.v_empty + 8 * kStages;
  s.work = base + kWorkOff;
  return s;
}

// The block's work: batch, query head and query tile. lin: the linear tile index (blockIdx.x, or
// the persistent loop's tile).
struct Work {
  int b, h, m_blk;
};
__device__ __forceinline__ Work block_work(int HQ, int B, int S, int lin) {
  Work w;
  const int n_m = (S + kBM - 1) / kBM;
#if SCHED == 2
  // Heads in groups of G; inside a group, tile-major from the longest (last) query tile down, so a
  // wave holds G heads' worth of mixed-length work and their K/V are read from L2.
  const int bh_total = HQ * B;
  const int G = max(1, min(bh_total, SCHED_WAVE / n_m));
  const int grp = lin / (n_m * G);
  const int g_heads = min(G, bh_total - grp * G);
  const int r = lin - grp * n_m * G;
  const int bh = grp * G + r % g_heads;
  w.m_blk = IS_CAUSAL ? n_m - 1 - r / g_heads : r / g_heads;
  w.h = bh % HQ;
  w.b = bh / HQ;
#elif PERSISTENT
  (void)B;
  const int m = lin % n_m, bh = lin / n_m;
  w.h = bh % HQ;
  w.b = bh / HQ;
  w.m_blk = (SCHED == 1 && IS_CAUSAL) ? n_m - 1 - m : m;
#else
  (void)B;
  (void)lin;
  w.h = (int)blockIdx.y;
  w.b = (int)blockIdx.z;
  w.m_blk = (SCHED == 1 && IS_CAUSAL) ? n_m - 1 - (int)blockIdx.x : (int)blockIdx.x;
#endif
  return w;
}

// What the mainloop sees of a block's work, in either layout: one sequence of S tokens and one query
// head (GQA_PACK: the kG query heads of one KV head, interleaved row by row: query row r is token
// r / kG, head r % kG), as base pointers at its first token and row strides in elements.
struct Tile {
  const bf16 *q, *k, *v;  // first token: q at its (first) query head, k and v at its KV head
  bf16 *o;                // first token at its (first) query head
  long long q_ld, k_ld, v_ld, o_ld;  // elements from one token to the next
  int S;                  // tokens (queries and keys; VARLEN_KV: queries)
  int m_blk;              // query tile: rows [m_blk * kBM, + kBM) of S * kG
  int row0, h, kvh, b;    // TMA coordinates: first token in the map, query head, KV head, batch
#if VARLEN_KV
  int Sk;                 // keys (>= S)
  int krow0;              // TMA: first key token in the K and V maps
#endif
};

// Keys of the tile's sequence, the first one's row in the K and V maps, and the causal shift: query
// token i sees keys up to i + shift (0 unless VARLEN_KV: the keys past the queries, aligned at the end).
#if VARLEN_KV
__device__ __forceinline__ int tile_keys(const Tile &w) { return w.Sk; }
__device__ __forceinline__ int tile_krow0(const Tile &w) { return w.krow0; }
#else
__device__ __forceinline__ int tile_keys(const Tile &w) { return w.S; }
__device__ __forceinline__ int tile_krow0(const Tile &w) { return w.row0; }
#endif
__device__ __forceinline__ int tile_shift(const Tile &w) { return tile_keys(w) - w.S; }

// The dense layout's tile: heads are S * D apart, tokens D.
__device__ __forceinline__ Tile dense_tile(const bf16 *q, const bf16 *k, const bf16 *v, bf16 *o, const Work &w, int HQ,
                                           int HKV, int S) {
  Tile t;
  const int kvh = w.h / (HQ / HKV);
  t.q = q + (size_t)(w.b * HQ + w.h) * S * kD;
  t.o = o + (size_t)(w.b * HQ + w.h) * S * kD;
  t.k = k + (size_t)(w.b * HKV + kvh) * S * kD;
  t.v = v + (size_t)(w.b * HKV + kvh) * S * kD;
  t.q_ld = t.k_ld = t.v_ld = t.o_ld = kD;
  t.S = S;
  t.m_blk = w.m_blk;
  t.row0 = 0;
  t.h = w.h;
  t.kvh = kvh;
  t.b = w.b;
  return t;
}

// K/V tiles the block visits: [0, n_end). m0: its first query row (token m0 / kG), n_keys: keys,
// shift: tile_shift.
__device__ __forceinline__ int block_n_end(int m0, int n_keys, int shift) {
  const int n_tiles = (n_keys + kBN - 1) / kBN;
  return IS_CAUSAL ? min(n_tiles, ((m0 + kBM - 1) / kG + shift + kBN) / kBN) : n_tiles;
}

// ---------------------------------------------------------------------------------------------
// Producer: ROWS rows starting at row0 -> a tile at dst, by thread t of kProdThreads. Row r is token
// r / G (ld elements apart), head r % G (D apart) from `head`. Thread t copies 16-byte chunk t % 8 of
// each 128-byte column block of rows t / 8 + i * (kProdThreads / 8); rows >= n_rows are zero-filled
// (they may not even be mapped).
template <int ROWS, int G>
__device__ __forceinline__ void load_rows(unsigned dst, const bf16 *__restrict__ head, long long ld, int row0,
                                          int n_rows, int t) {
  constexpr int kStep = kProdThreads / 8;
  const int ch = t & 7, r0 = t >> 3;
#pragma unroll
  for (int blk = 0; blk < kDB; ++blk) {
#pragma unroll 4
    for (int i = 0; i < ROWS / kStep; ++i) {
      const int r = r0 + i * kStep;
      const int row = row0 + r;
      const bool ok = row < n_rows;
      const bf16 *src = ok ? head + (row / G) * ld + (row % G) * kD + blk * 64 + ch * 8 : head;
      tune::g2s_copy16_zfill(dst + blk * ROWS * 128 + r * 128 + ((ch ^ (r & 7)) << 4), src, ok);
    }
  }
}

#if USE_TMA
// One 64-column block of a tile by TMA: the map's rows [row, + box rows) of head `head` (dense:
// batch b; the box spans heads too when GQA_PACK).
__device__ __forceinline__ void tma_rows(unsigned dst, const tune::tensormap &m, int col, int row, int head, int b,
                                         unsigned bar) {
#if VARLEN
  (void)b;
  tune::tma_load_4d(dst, m, col, head, row, 0, bar);  // map {D, heads, T, 1}
#else
  tune::tma_load_4d(dst, m, col, row, head, b, bar);  // map {D, S, heads, B}
#endif
}
#endif

// tmQ, tmK, tmV: the tensor map parameters (USE_TMA), else null. it: the block's tile count so far
// (0 unless PERSISTENT), ring: K/V ring slots used so far (the ring's phases run on across tiles).
__device__ __forceinline__ void producer(const Tile &w, const Smem &sm, int t, const tune::tensormap *tmQ,
                                         const tune::tensormap *tmK, const tune::tensormap *tmV, int it,
                                         int ring) {
  if (t >= kProdThreads) return;  // idle warps of the producer warpgroup
  const int Sk = tile_keys(w);  // keys (the queries are w.S)
  const int m0 = w.m_blk * kBM;
#if USE_TMA
  if (it == 0) {
    tune::tma_prefetch_desc(*tmQ);
    tune::tma_prefetch_desc(*tmK);
    tune::tma_prefetch_desc(*tmV);
  }
  const int n_end = block_n_end(m0, Sk, tile_shift(w));
  // PERSISTENT: the first kStages K/V tiles go before Q, so that they load while the previous tile's
  // epilogue runs (their slots are released before it); Q waits for that epilogue, which reads O
  // back from the Q tile. Not all of them: later slots are released only once Q has arrived.
  const auto load_q = [&]() {
    if (PERSISTENT && it > 0) tune::mbar_wait(sm.q_empty, (it - 1) & 1);
    tune::mbar_arrive_expect_tx(sm.q_full, kQBytes);
#pragma unroll
    for (int blk = 0; blk < kDB; ++blk)
      tma_rows(sm.q + blk * kBM * 128, *tmQ, blk * 64, w.row0 + m0 / kG, w.h, w.b, sm.q_full);
  };
#if PERSISTENT
  const int n_pre = min(kStages, n_end);
#else
  load_q();
#endif
  for (int jj = 0; jj < n_end; ++jj) {
#if PERSISTENT
    if (jj == n_pre) load_q();
#endif
    const int j = ring + jj;  // ring slot use
    const int s = j % kStages;
    const unsigned parity = ((j / kStages) - 1) & 1;  // phase of the slot's previous use
    if (j >= kStages) tune::mbar_wait(sm.k_empty + 8 * s, parity);
    tune::mbar_arrive_expect_tx(sm.k_full + 8 * s, kKVBytes);
#pragma unroll
    for (int blk = 0; blk < kDB; ++blk)
      tma_rows(sm.k + s * kKVBytes + blk * kBN * 128, *tmK, blk * 64, tile_krow0(w) + jj * kBN, w.kvh, w.b, sm.k_full + 8 * s);
    if (j >= kStages) tune::mbar_wait(sm.v_empty + 8 * s, parity);
    tune::mbar_arrive_expect_tx(sm.v_full + 8 * s, kKVBytes);
#pragma unroll
    for (int blk = 0; blk < kDB; ++blk)
      tma_rows(sm.v + s * kKVBytes + blk * kBN * 128, *tmV, blk * 64, tile_krow0(w) + jj * kBN, w.kvh, w.b, sm.v_full + 8 * s);
  }
#if PERSISTENT
  if (n_pre == n_end) load_q();  // every K/V tile went first (n_end <= kStages)
#endif
#else
  (void)tmQ;
  (void)tmK;
  (void)tmV;
  // PERSISTENT: the consumers' epilogue of the previous tile reads O from the Q tile
  if (PERSISTENT && it > 0) tune::mbar_wait(sm.q_empty, (it - 1) & 1);
  load_rows<kBM, kG>(sm.q, w.q, w.q_ld, m0, w.S * kG, t);
  tune::cp_async_mbar_arrive_noinc(sm.q_full);
  const int n_end = block_n_end(m0, Sk, tile_shift(w));
  for (int jj = 0; jj < n_end; ++jj) {
    const int j = ring + jj;  // ring slot use
    const int s = j % kStages;
    const unsigned parity = ((j / kStages) - 1) & 1;  // phase of the slot's previous use
    if (j >= kStages) tune::mbar_wait(sm.k_empty + 8 * s, parity);
    load_rows<kBN, 1>(sm.k + s * kKVBytes, w.k, w.k_ld, jj * kBN, Sk, t);
    tune::cp_async_mbar_arrive_noinc(sm.k_full + 8 * s);
    if (j >= kStages) tune::mbar_wait(sm.v_empty + 8 * s, parity);
    load_rows<kBN, 1>(sm.v + s * kKVBytes, w.v, w.v_ld, jj * kBN, Sk, t);
    tune::cp_async_mbar_arrive_noinc(sm.v_full + 8 * s);
  }
  tune::cp_async_wait<0>();
#endif
}

// ---------------------------------------------------------------------------------------------
// Consumer pieces. wg: consumer warpgroup (0 .. kCons - 1); its Q rows start at byte wg * 64 * 128
// of each Q column block.

__device__ __forceinline__ void fence_p(unsigned (&p)[kPK][4]) {
#pragma unroll
  for (int kk = 0; kk < kPK; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(p[kk][i])::"memory");
}

// High word shared by every operand here: SBO = 1024, 128-byte swizzle.
__device__ __forceinline__ unsigned desc_hi() {
  return (unsigned)(tune::wgmma_desc(0, 0, 1024, tune::kWgmmaSwizzle128B) >> 32);
}

// Issue S = Q K^T for one K slot (not waited for).
__device__ __forceinline__ void issue_qk(float (&s)[kSAcc], unsigned sq_wg, unsigned sk) {
  const unsigned hi = desc_hi();
  const unsigned qlo = (unsigned)tune::wgmma_desc(sq_wg, 16, 1024, tune::kWgmmaSwizzle128B);
  const unsigned klo = (unsigned)tune::wgmma_desc(sk, 16, 1024, tune::kWgmmaSwizzle128B);
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    const unsigned off = (kk & 3) << 5;  // k16 step inside the 128-byte swizzle atom
    const unsigned long long da = tune::wgmma_desc_words(qlo + (((kk >> 2) * (kBM * 128) + off) >> 4), hi);
    const unsigned long long db = tune::wgmma_desc_words(klo + (((kk >> 2) * (kBN * 128) + off) >> 4), hi);
    tune::wgmma_ss_bf16<kBN, 0>(s, da, db, kk > 0 ? 1 : 0);
  }
}

// Issue O += P V for one V slot (not waited for). V is MN-major: k16 step kk starts kk * 16 rows
// (2048 bytes) in; the 64-column blocks are kBN * 128 bytes apart (LBO).
__device__ __forceinline__ void issue_pv(float (&o)[kOAcc], const unsigned (&p)[kPK][4], unsigned sv) {
  const unsigned hi = desc_hi();
  const unsigned vlo = (unsigned)tune::wgmma_desc(sv, kBN * 128, 1024, tune::kWgmmaSwizzle128B);
#pragma unroll
  for (int kk = 0; kk < kPK; ++kk) {
#if PV_SPLIT
#pragma unroll
    for (int blk = 0; blk < kDB; ++blk) {
      const unsigned long long db = tune::wgmma_desc_words(vlo + ((blk * (kBN * 128) + kk * 2048) >> 4), hi);
      tune::wgmma_rs_bf16<64, 1>(*reinterpret_cast<float(*)[32]>(&o[32 * blk]), p[kk], db, 1);
    }
#else
    const unsigned long long db = tune::wgmma_desc_words(vlo + ((kk * 2048) >> 4), hi);
    tune::wgmma_rs_bf16<kD, 1>(o, p[kk], db, 1);
#endif
  }
}

// Scores -> -inf where key > the row's token + shift (causal) or key >= n_keys. row_g: the thread's
// row for h = 0 (row g of its warp's 16), key_t: the key of its first column (tile start + 2 t).
__device__ __forceinline__ void apply_mask(float (&s)[kSAcc], int row_g, int key_t, int n_keys, int shift) {
#pragma unroll
  for (int jj = 0; jj < kBN / 8; ++jj)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int tok = (row_g + 8 * (e >> 1)) / kG;
      const int key = key_t + 8 * jj + (e & 1);
      if ((IS_CAUSAL && key > tok + shift) || key >= n_keys) s[4 * jj + e] = neg_inf();
    }
}

// Online softmax over one score tile: new running max m (raw score units), p = 2^(s * scale_log2 -
// m * scale_log2) in place, l = l * alpha + this thread's partial row sum (the quad sum is taken in
// the epilogue), alpha = 2^((m_old - m_new) * scale_log2) returned for the caller to rescale O.
// Element 4 jj + e of s is row h = e / 2 (g or g + 8).
__device__ __forceinline__ void softmax_update(float (&s)[kSAcc], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                               float scale_log2) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = m[h];
#pragma unroll
    for (int jj = 0; jj < kBN / 8; ++jj) mx = fmaxf(mx, fmaxf(s[4 * jj + 2 * h], s[4 * jj + 2 * h + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // A row with no unmasked key so far keeps m = -inf; use 0 so that exp2(-inf - 0) = 0, not NaN.
    const float m_scaled = (mx == neg_inf()) ? 0.f : mx * scale_log2;
    alpha[h] = tune::exp2_approx(m[h] * scale_log2 - m_scaled);
    m[h] = mx;
    // four partial sums: a chain of kBN / 2 dependent adds would make the row sum latency-bound
    float sum[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int jj = 0; jj < kBN / 8; ++jj)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float p = tune::exp2_approx(fmaf(s[4 * jj + 2 * h + e], scale_log2, -m_scaled));
        s[4 * jj + 2 * h + e] = p;
        sum[2 * (jj & 1) + e] += p;
      }
    l[h] = l[h] * alpha[h] + ((sum[0] + sum[1]) + (sum[2] + sum[3]));
  }
}

__device__ __forceinline__ void rescale_o(float (&o)[kOAcc], const float (&alpha)[2]) {
#pragma unroll
  for (int jj = 0; jj < kD / 8; ++jj)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[4 * jj + e] *= alpha[e >> 1];
}

// P (fp32 accumulator layout) -> bf16 A fragments: k16 step kk is n8 chunks 2 kk and 2 kk + 1.
__device__ __forceinline__ void pack_p(unsigned (&p)[kPK][4], const float (&s)[kSAcc]) {
#pragma unroll
  for (int kk = 0; kk < kPK; ++kk) {
    p[kk][0] = tune::pack_bf16x2(s[8 * kk + 0], s[8 * kk + 1]);
    p[kk][1] = tune::pack_bf16x2(s[8 * kk + 2], s[8 * kk + 3]);
    p[kk][2] = tune::pack_bf16x2(s[8 * kk + 4], s[8 * kk + 5]);
    p[kk][3] = tune::pack_bf16x2(s[8 * kk + 6], s[8 * kk + 7]);
  }
}

// O / l -> bf16 over this warpgroup's Q rows (swizzled like Q; conflict-free: row % 8 == g), then
// 16-byte coalesced stores of rows < n_rows (row r: token r / kG, ld elements apart, head r % kG).
__device__ __forceinline__ void epilogue(const float (&o)[kOAcc], const float (&l)[2], const Smem &sm,
                                         bf16 *__restrict__ o_head, long long ld, int m0, int wg, int n_rows,
                                         int wt) {
  const int warp = wt >> 5, lane = wt & 31, g = lane >> 2, t = lane & 3;
  tune::named_bar_sync(1 + wg, 128);  // every warp of the warpgroup is past its last wgmma on Q
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = l[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = 1.f / sum;  // sum >= 1: the row max contributes 2^0
    const int r = wg * 64 + warp * 16 + g + 8 * h;
#pragma unroll
    for (int jj = 0; jj < kD / 8; ++jj) {
      const unsigned addr = sm.q + (jj >> 3) * (kBM * 128) + r * 128 + (((jj & 7) ^ (r & 7)) << 4) + t * 4;
      const unsigned val = tune::pack_bf16x2(o[4 * jj + 2 * h] * inv, o[4 * jj + 2 * h + 1] * inv);
      asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(val) : "memory");
    }
  }
  tune::named_bar_sync(1 + wg, 128);
  constexpr int kChunks = kD / 8;  // 16-byte chunks per row
#pragma unroll
  for (int i = 0; i < 64 * kChunks / 128; ++i) {
    const int idx = wt + i * 128;
    const int rr = idx / kChunks, c = idx % kChunks;
    const int r = wg * 64 + rr;
    const int row = m0 + r;
    if (row >= n_rows) continue;
    const unsigned addr = sm.q + (c >> 3) * (kBM * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4);
    uint4 val;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(val.x), "=r"(val.y), "=r"(val.z), "=r"(val.w)
                 : "r"(addr)
                 : "memory");
    *reinterpret_cast<uint4 *>(o_head + (row / kG) * ld + (row % kG) * kD + c * 8) = val;
  }
}

// Wait for a slot's data. What cp.async wrote (generic proxy) needs a proxy fence before wgmma (async
// proxy) reads it; TMA writes are async-proxy already and visible once the mbarrier completes, so the
// TMA path skips the fence (it costs a MEMBAR.ALL.CTA per wait in the SASS).
__device__ __forceinline__ void wait_full(unsigned bar, int j) {
  tune::mbar_wait(bar + 8 * (j % kStages), (j / kStages) & 1);
  if constexpr (!USE_TMA) tune::fence_proxy_async_smem();
}
// One arrival per consumer warp: this warp is done reading slot j % kStages.
__device__ __forceinline__ void release(unsigned bar, int j, int lane) {
  if (lane == 0) tune::mbar_arrive(bar + 8 * (j % kStages));
}

// it, ring: as for producer().
__device__ __forceinline__ void consumer(const Tile &w, float scale_log2, const Smem &sm, int wg, int wt, int it,
                                         int ring) {
  const int warp = wt >> 5, lane = wt & 31, g = lane >> 2, t = lane & 3;
  const int S = w.S, Sk = tile_keys(w), shift = tile_shift(w);
  const int m0 = w.m_blk * kBM;
  const int r0 = m0 + wg * 64;  // first query row of this warpgroup
  const int n_tiles = (Sk + kBN - 1) / kBN;
  const int n_end = block_n_end(m0, Sk, shift);
  // Tiles this warpgroup computes (up to its last row's token + shift), and those of them that need
  // no mask (every key at most its first row's token + shift).
  const int n_end_wg = (IS_CAUSAL && !PINGPONG) ? min(n_tiles, ((r0 + 63) / kG + shift + kBN) / kBN) : n_end;
  const int n_plain = min(IS_CAUSAL ? (r0 / kG + shift + 1) / kBN : n_tiles, Sk / kBN);
  const int row_g = r0 + warp * 16 + g;
  const unsigned sq_wg = sm.q + wg * 64 * 128;

  float o[kOAcc], s[kSAcc], m[2], l[2], alpha[2];
  unsigned p[kPK][4];
#pragma unroll
  for (int i = 0; i < kOAcc; ++i) o[i] = 0.f;
#pragma unroll
  for (int i = 0; i < kSAcc; ++i) s[i] = 0.f;
  m[0] = m[1] = neg_inf();
  l[0] = l[1] = 0.f;

  tune::mbar_wait(sm.q_full, it & 1);
  if constexpr (!USE_TMA) tune::fence_proxy_async_smem();  // as in wait_full

#if OVERLAP
  // PINGPONG: warpgroups issue their wgmma batches in turn (a token passed round-robin through named
  // barriers), so that one warpgroup's softmax runs while the others' wgmma keep the tensor cores
  // busy. Batches per warpgroup: n_end_wg + 1, the same for all (no causal tile skipping then).
  int batch = 0;
  const auto sched_wait = [&]() {
    if (PINGPONG && (wg != 0 || batch != 0)) tune::named_bar_sync(kSchedBar + wg, 256);
  };
  const auto sched_pass = [&]() {
    if (PINGPONG && (wg != kCons - 1 || batch != n_end_wg)) tune::named_bar_arrive(kSchedBar + (wg + 1) % kCons, 256);
    ++batch;
  };
  // Tile 0: scores and softmax only; its P V is issued together with the scores of tile 1.
  wait_full(sm.k_full, ring + 0);
  sched_wait();
  tune::wgmma_fence_acc(s);
  tune::wgmma_arrive();
  issue_qk(s, sq_wg, sm.k);
  tune::wgmma_commit();
  sched_pass();
  tune::wgmma_wait<0>();
  tune::wgmma_fence_acc(s);
  release(sm.k_empty, ring + 0, lane);
  if (0 >= n_plain) apply_mask(s, row_g, 2 * t, Sk, shift);
  softmax_update(s, m, l, alpha, scale_log2);
  pack_p(p, s);
  for (int j = 1; j < n_end_wg; ++j) {
    wait_full(sm.k_full, ring + j);
    if (PINGPONG) wait_full(sm.v_full, ring + j - 1);  // no waiting for data while holding the token
    sched_wait();
    tune::wgmma_fence_acc(s);
    tune::wgmma_arrive();
    issue_qk(s, sq_wg, sm.k + ((ring + j) % kStages) * kKVBytes);
    tune::wgmma_commit();
    if (!PINGPONG) wait_full(sm.v_full, ring + j - 1);
    tune::wgmma_fence_acc(o);
    fence_p(p);
    tune::wgmma_arrive();
    issue_pv(o, p, sm.v + ((ring + j - 1) % kStages) * kKVBytes);
    tune::wgmma_commit();
    sched_pass();
    tune::wgmma_wait<1>();  // scores of tile j are done
    tune::wgmma_fence_acc(s);
    release(sm.k_empty, ring + j, lane);
    if (j >= n_plain) apply_mask(s, row_g, j * kBN + 2 * t, Sk, shift);
    softmax_update(s, m, l, alpha, scale_log2);
    tune::wgmma_wait<0>();  // P V of tile j - 1 is done: O and P may change, V slot j - 1 is free
    tune::wgmma_fence_acc(o);
    fence_p(p);
    release(sm.v_empty, ring + j - 1, lane);
    rescale_o(o, alpha);
    pack_p(p, s);
  }
  {
    const int j = n_end_wg - 1;
    wait_full(sm.v_full, ring + j);
    sched_wait();
    tune::wgmma_fence_acc(o);
    fence_p(p);
    tune::wgmma_arrive();
    issue_pv(o, p, sm.v + ((ring + j) % kStages) * kKVBytes);
    tune::wgmma_commit();
    sched_pass();
    tune::wgmma_wait<0>();
    tune::wgmma_fence_acc(o);
    fence_p(p);
    release(sm.v_empty, ring + j, lane);
  }
#else
  for (int j = 0; j < n_end_wg; ++j) {
    wait_full(sm.k_full, ring + j);
    tune::wgmma_fence_acc(s);
    tune::wgmma_arrive();
    issue_qk(s, sq_wg, sm.k + ((ring + j) % kStages) * kKVBytes);
    tune::wgmma_commit();
    tune::wgmma_wait<0>();
    tune::wgmma_fence_acc(s);
    release(sm.k_empty, ring + j, lane);
    if (j >= n_plain) apply_mask(s, row_g, j * kBN + 2 * t, Sk, shift);
    softmax_update(s, m, l, alpha, scale_log2);
    rescale_o(o, alpha);
    pack_p(p, s);
    wait_full(sm.v_full, ring + j);
    tune::wgmma_fence_acc(o);
    fence_p(p);
    tune::wgmma_arrive();
    issue_pv(o, p, sm.v + ((ring + j) % kStages) * kKVBytes);
    tune::wgmma_commit();
    tune::wgmma_wait<0>();
    tune::wgmma_fence_acc(o);
    fence_p(p);
    release(sm.v_empty, ring + j, lane);
  }
#endif
  // Causal: tiles the block loads but this warpgroup's rows never see (all keys past its last row).
  // Wait for each to land before releasing it, so that the arrival counts in the slot's current phase.
  for (int j = n_end_wg; j < n_end; ++j) {
    wait_full(sm.k_full, ring + j);
    release(sm.k_empty, ring + j, lane);
    wait_full(sm.v_full, ring + j);
    release(sm.v_empty, ring + j, lane);
  }
  epilogue(o, l, sm, w.o, w.o_ld, m0, wg, S * kG, wt);
#if PERSISTENT
  // This warp has read its O rows back from the Q tile: the producer may reload it (generic-proxy
  // reads before the next tile's async-proxy writes).
  tune::fence_proxy_async_smem();
  __syncwarp();
  if (lane == 0) tune::mbar_arrive(sm.q_empty);
#endif
}

// Barriers, by thread 0, before the block's __syncthreads.
__device__ __forceinline__ void init_barriers(const Smem &sm) {
  tune::mbar_init(sm.q_full, kProdThreads);
  for (int s = 0; s < kStages; ++s) {
    tune::mbar_init(sm.k_full + 8 * s, kProdThreads);
    tune::mbar_init(sm.v_full + 8 * s, kProdThreads);
    tune::mbar_init(sm.k_empty + 8 * s, kCons * 4);  // one arrival per consumer warp
    tune::mbar_init(sm.v_empty + 8 * s, kCons * 4);
  }
  if (PERSISTENT) tune::mbar_init(sm.q_empty, kCons * 4);
  tune::fence_mbar_init();
}

// One tile, both roles (not PERSISTENT): the producer warpgroup loads, the consumers compute.
__device__ __forceinline__ void run_tile(const Tile &w, const Smem &sm, const tune::tensormap *const (&maps)[3],
                                         float scale_log2) {
  const int wg = (int)threadIdx.x >> 7;
  const int pt = (int)threadIdx.x - kCons * 128, ct = (int)threadIdx.x & 127;  // producer, consumer thread
  if (wg == kCons) {
    if constexpr (kSetMaxNReg) tune::setmaxnreg_dec<kProducerRegs>();
    producer(w, sm, pt, maps[0], maps[1], maps[2], 0, 0);
  } else {
    if constexpr (kSetMaxNReg) tune::setmaxnreg_inc<kConsumerRegs>();
    consumer(w, scale_log2, sm, wg, ct, 0, 0);
  }
}

#if VARLEN
// ---------------------------------------------------------------------------------------------
// Varlen: which (sequence, query tile) a block computes, from cu_seqlens, by one warp.

__device__ __forceinline__ int warp_sum(int x) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(0xffffffffu, x, d);
  return x;
}

// Query tiles of sequence i: its len * kG rows in tiles of kBM.
__device__ __forceinline__ int seq_tiles(const int *__restrict__ cu, int i) {
  return ((cu[i + 1] - cu[i]) * kG + kBM - 1) / kBM;
}

// Sequence i holds count(i) units, in sequence order: the sequence of unit x and the unit's index
// inside it; sequence -1 when x is past the last unit. Lane l sums its chunk of sequences [l c, l c
// + c), c = ceil(B / 32), a warp scan gives the chunk's first unit, and the lane whose chunk holds
// unit x walks it.
template <class Count>
__device__ __forceinline__ int2 find_unit(int B, int x, int lane, const Count &count) {
  const int c = (B + 31) / 32, lo = min(B, lane * c), hi = min(B, lo + c);
  int sum = 0;
  for (int i = lo; i < hi; ++i) sum += count(i);
  int incl = sum;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += y;
  }
  const int excl = incl - sum;
  const unsigned owner = __ballot_sync(0xffffffffu, excl <= x && x < incl);
  if (owner == 0u) return make_int2(-1, 0);
  const int src = __ffs(owner) - 1;
  int seq = lo, at = excl;
  if (lane == src)
    for (int n = count(seq); at + n <= x; n = count(++seq)) at += n;
  seq = __shfl_sync(0xffffffffu, seq, src);
  at = __shfl_sync(0xffffffffu, at, src);
  return make_int2(seq, x - at);
}

// Warp 0: the block's work -> slot (m_blk or -1 past the last tile, head index, first token,
// length; VARLEN_KV: then the first key token and the keys, from cu_prefix, else null). Head index:
// a query head, or with GQA_PACK a KV head (n_heads = HQ / kG).
__device__ __forceinline__ void varlen_work(const int *__restrict__ cu, const int *__restrict__ cu_prefix, int B,
                                            int n_heads, unsigned slot, int lane) {
  (void)cu_prefix;
  const auto tiles = [&](int i) { return seq_tiles(cu, i); };
#if SCHED == 2
  const int head = (int)(blockIdx.x % (unsigned)n_heads), x = (int)(blockIdx.x / (unsigned)n_heads);
  // Tile index j occurs F(j) - F(j + 1) times over the batch, F(j) = sum over sequences of
  // max(0, tiles - j): ranks [F(j + 1), F(j)) take index j, highest index (most causal work) first.
  const int c = (B + 31) / 32, lo_i = min(B, lane * c), hi_i = min(B, lo_i + c);
  const auto F = [&](int j) {
    int f = 0;
    for (int i = lo_i; i < hi_i; ++i) f += max(0, tiles(i) - j);
    return warp_sum(f);
  };
  int top = 0;
  for (int i = lo_i; i < hi_i; ++i) top = max(top, tiles(i));
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) top = max(top, __shfl_xor_sync(0xffffffffu, top, d));
  int seq = -1, m = 0;
  if (x < F(0)) {
    int lo = 0, hi = top;  // F(lo) > x >= F(hi)
    while (hi - lo > 1) {
      const int mid = (lo + hi) >> 1;
      if (F(mid) > x) lo = mid;
      else hi = mid;
    }
    const int2 f = find_unit(B, x - F(hi), lane, [&](int i) { return tiles(i) > lo ? 1 : 0; });
    seq = f.x;
    m = lo;
  }
#else
  const int head = (int)blockIdx.y, x = (int)blockIdx.x;
  const int2 f = find_unit(B, x, lane, tiles);
  const int seq = f.x;
  int m = f.y;
  if (SCHED == 1 && IS_CAUSAL && seq >= 0) m = tiles(seq) - 1 - m;  // the sequence's last tile first
#endif
  if (lane == 0) {
    const int start = seq >= 0 ? cu[seq] : 0, len = seq >= 0 ? cu[seq + 1] - start : 0;
    const int vals[4] = {seq >= 0 ? m : -1, head, start, len};
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("st.shared.s32 [%0], %1;\n" ::"r"(slot + 4 * i), "r"(vals[i]) : "memory");
#if VARLEN_KV
    // the sequence's cached prefix comes first among its keys: keys = prefix + queries
    const int p0 = seq >= 0 ? cu_prefix[seq] : 0, p1 = seq >= 0 ? cu_prefix[seq + 1] : 0;
    const int kv[2] = {start + p0, len + p1 - p0};
#pragma unroll
    for (int i = 0; i < 2; ++i) asm volatile("st.shared.s32 [%0], %1;\n" ::"r"(slot + 16 + 4 * i), "r"(kv[i]) : "memory");
#endif
  }
}
#endif

}  // namespace pf90

// Bytes of dynamic shared memory the kernel needs (host code that includes this header may use it).
[[maybe_unused]] constexpr int attn_prefill_sm90_smem_bytes = pf90::kSmemBytes;

#if !VARLEN
extern "C" __global__ void __launch_bounds__(pf90::kThreads, MIN_BLOCKS)
attn_prefill_sm90(const bf16 *__restrict__ q, const bf16 *__restrict__ k, const bf16 *__restrict__ v,
                  bf16 *__restrict__ o, int B, int HQ, int HKV, int S, float scale_log2
#if TMA_ARGS
                  , const __grid_constant__ tune::tensormap tmQ, const __grid_constant__ tune::tensormap tmK,
                  const __grid_constant__ tune::tensormap tmV
#endif
) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // 128-byte swizzled operands need 1024-byte aligned tiles: align the base by hand
  const unsigned base = (tune::smem_u32(smem_raw) + 1023u) & ~1023u;
  const pf90::Smem sm = pf90::smem_layout(base);
  if (threadIdx.x == 0) pf90::init_barriers(sm);
  __syncthreads();
#if USE_TMA
  const tune::tensormap *maps[3] = {&tmQ, &tmK, &tmV};
#else
  const tune::tensormap *maps[3] = {nullptr, nullptr, nullptr};
#endif
#if PERSISTENT
  // Tiles blockIdx.x, + gridDim.x, ...: both roles walk the same list, so that their counts of K/V
  // ring slot uses (ring) and of Q tiles (it) agree. One loop per role, each after its setmaxnreg,
  // so that ptxas allocates the consumer loop with the consumers' registers.
  const int wg = (int)threadIdx.x >> 7;
  const int pt = (int)threadIdx.x - pf90::kCons * 128, ct = (int)threadIdx.x & 127;  // producer, consumer thread
  const int n_work = (S + pf90::kBM - 1) / pf90::kBM * HQ * B;
  int ring = 0, it = 0;
  if (wg == pf90::kCons) {
    if constexpr (pf90::kSetMaxNReg) tune::setmaxnreg_dec<pf90::kProducerRegs>();
    for (int lin = (int)blockIdx.x; lin < n_work; lin += (int)gridDim.x, ++it) {
      const pf90::Tile w = pf90::dense_tile(q, k, v, o, pf90::block_work(HQ, B, S, lin), HQ, HKV, S);
      pf90::producer(w, sm, pt, maps[0], maps[1], maps[2], it, ring);
      ring += pf90::block_n_end(w.m_blk * pf90::kBM, S, 0);
    }
  } else {
    if constexpr (pf90::kSetMaxNReg) tune::setmaxnreg_inc<pf90::kConsumerRegs>();
    for (int lin = (int)blockIdx.x; lin < n_work; lin += (int)gridDim.x, ++it) {
      const pf90::Tile w = pf90::dense_tile(q, k, v, o, pf90::block_work(HQ, B, S, lin), HQ, HKV, S);
      pf90::consumer(w, scale_log2, sm, wg, ct, it, ring);
      ring += pf90::block_n_end(w.m_blk * pf90::kBM, S, 0);
    }
  }
#else
  pf90::run_tile(pf90::dense_tile(q, k, v, o, pf90::block_work(HQ, B, S, (int)blockIdx.x), HQ, HKV, S), sm, maps,
                 scale_log2);
#endif
}
#else
// Packed sequences (header: VARLEN). T: tokens of all sequences (the grid's bound; not read here).
// VARLEN_KV: cu_seqlens and T are the queries', cu_prefix gives the keys (header: VARLEN_KV).
extern "C" __global__ void __launch_bounds__(pf90::kThreads, MIN_BLOCKS)
#if VARLEN_KV
attn_varlen_kv_sm90(const bf16 *__restrict__ q, const bf16 *__restrict__ k, const bf16 *__restrict__ v,
                    bf16 *__restrict__ o, const int *__restrict__ cu_seqlens, const int *__restrict__ cu_prefix,
                    int B, int T, int HQ, int HKV,
#else
attn_varlen_sm90(const bf16 *__restrict__ q, const bf16 *__restrict__ k, const bf16 *__restrict__ v,
                 bf16 *__restrict__ o, const int *__restrict__ cu_seqlens, int B, int T, int HQ, int HKV,
#endif
                 long long q_ld, long long k_ld, long long v_ld, long long o_ld, float scale_log2
#if TMA_ARGS
                 , const __grid_constant__ tune::tensormap tmQ, const __grid_constant__ tune::tensormap tmK,
                 const __grid_constant__ tune::tensormap tmV
#endif
) {
  (void)T;
#if !VARLEN_KV
  const int *cu_prefix = nullptr;
#endif
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned base = (tune::smem_u32(smem_raw) + 1023u) & ~1023u;
  const pf90::Smem sm = pf90::smem_layout(base);
  if (threadIdx.x < 32) pf90::varlen_work(cu_seqlens, cu_prefix, B, HQ / pf90::kG, sm.work, (int)threadIdx.x);
  if (threadIdx.x == 0) pf90::init_barriers(sm);
  __syncthreads();
  int wk[4 + 2 * VARLEN_KV];  // m_blk (-1: no tile), head index, first token, length (, first key, keys)
#pragma unroll
  for (int i = 0; i < 4 + 2 * VARLEN_KV; ++i) asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(wk[i]) : "r"(sm.work + 4 * i) : "memory");
  if (wk[0] < 0) return;  // past the last tile: the whole block leaves before any copy
#if USE_TMA
  const tune::tensormap *maps[3] = {&tmQ, &tmK, &tmV};
#else
  const tune::tensormap *maps[3] = {nullptr, nullptr, nullptr};
#endif
  pf90::Tile w;
  w.h = wk[1] * pf90::kG;  // GQA_PACK: the KV head's first query head
  w.kvh = w.h / (HQ / HKV);
  w.q = q + wk[2] * q_ld + w.h * pf90::kD;
  w.o = o + wk[2] * o_ld + w.h * pf90::kD;
#if VARLEN_KV
  w.k = k + wk[4] * k_ld + w.kvh * pf90::kD;
  w.v = v + wk[4] * v_ld + w.kvh * pf90::kD;
  w.krow0 = wk[4];
  w.Sk = wk[5];
#else
  w.k = k + wk[2] * k_ld + w.kvh * pf90::kD;
  w.v = v + wk[2] * v_ld + w.kvh * pf90::kD;
#endif
  w.q_ld = q_ld;
  w.k_ld = k_ld;
  w.v_ld = v_ld;
  w.o_ld = o_ld;
  w.S = wk[3];
  w.m_blk = wk[0];
  w.row0 = wk[2];
  w.b = 0;
  pf90::run_tile(w, sm, maps, scale_log2);
}
#endif
