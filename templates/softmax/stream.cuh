// stream.cuh: row softmax (bf16 in/out, fp32 accumulation) that streams x through a shared-memory
// ring filled by bulk asynchronous copies (cp.async.bulk global -> shared, completing on an mbarrier;
// sm_90). A persistent grid: block b handles row groups b, b + G, b + 2G, ... (G = gridDim.x), a group
// being SROWS consecutive rows (one contiguous piece of x). One thread keeps STAGES groups' loads in
// flight; the copy engine moves them while the threads reduce and write earlier groups, so each SM
// has up to STAGES x SROWS x COLS x 2 bytes of reads outstanding without holding them in registers.
//
//   MODE 0   a row per warp: warp w takes rows w, w + kWarps, ... of the group (shuffles only)
//   MODE 1   a row per block: the block takes the group's rows one after another (shuffles, then
//            the warps' (max, sum) pairs through shared memory)
//   MODE 2   a row per warp, every warp a stream of its own: the "block" above becomes the warp
//            (groups of SROWS / kWarps rows, its own STAGES-deep slice of the ring and barriers,
//            lane 0 issues, __syncwarp instead of __syncthreads), so no warp waits for another
// Either way a thread reads its slice of the row from shared memory into registers (16-byte
// vectors: vector j of the slice is vector j * kThreads + t of the row, conflict-free), computes each
// exponential once against its own max (fp32 registers), reduces the (max, sum) pairs once
// (online merge) and rescales by one ex2 per thread.
//
//   STORE 0  y written by the threads, 16-byte st.global.cs (streaming: never re-read)
//   STORE 1  y written back into the stage in place (each thread overwrites only what it read), then
//            one bulk copy shared -> global per group; the stage is refilled one group later, after
//            that store has read it (cp.async.bulk.wait_group.read 1), so STORE 1 keeps STAGES - 1
//            loads in flight (STAGES >= 2)
//
// Tunables (recipes/softmax.lua, recipe softmax.stream): MODE, BLOCK (threads), SROWS (rows per
// stage), STAGES (ring depth), STORE, BPS (blocks per SM: __launch_bounds__ minimum; the recipe
// sizes the grid as min(groups, SMs x BPS)). Problem constant: COLS. Dynamic shared memory:
// STAGES * SROWS * COLS * 2 bytes (the recipe's launch.shared).
// Requirements (static_assert; the recipe's applies() skips the rest): COLS a multiple of 8,
// (COLS / 8) a multiple of the threads per row, at most 8 vectors (64 fp32 exponentials) per thread,
// MODE 0 and 2: SROWS a multiple of the warps.
#include "common/cp_async.cuh"
#include "common/mbarrier.cuh"
#include "common/reduce.cuh"
#include "common/tma_store.cuh"
#include "common/vec.cuh"

#if !defined(COLS) || !defined(BLOCK) || !defined(MODE) || !defined(SROWS) || !defined(STAGES) || !defined(STORE)
#error "stream.cuh needs -D COLS BLOCK MODE SROWS STAGES STORE"
#endif
#ifndef BPS
#define BPS 1
#endif

typedef __nv_bfloat16 bf16;

namespace ss {

constexpr int kWarps = BLOCK / 32;
constexpr int kThreads = MODE == 1 ? BLOCK : 32;          // threads sharing one row
constexpr int kUnits = MODE == 2 ? kWarps : 1;            // independent streams per block
constexpr int kUnitThreads = BLOCK / kUnits;
constexpr int kGroupRows = MODE == 2 ? SROWS / kWarps : SROWS;  // rows per stage of one stream
constexpr int kVecs = COLS / 8;                           // 16-byte vectors per row
constexpr int kIters = kVecs / kThreads;                  // vectors per thread
constexpr unsigned kRowBytes = COLS * 2u;
constexpr unsigned kStageBytes = kGroupRows * kRowBytes;  // one stream's stage
constexpr float kLog2e = 1.4426950408889634f;
typedef tune::words<16> vec;

static_assert(COLS % 8 == 0, "COLS must be a multiple of 8 (16-byte vectors)");
static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(MODE >= 0 && MODE <= 2, "MODE must be 0 (warp per row), 1 (block per row) or 2 (warp streams)");
static_assert(kVecs % kThreads == 0 && kIters >= 1 && kIters <= 8,
              "each thread needs the same 1..8 vectors of a row: COLS / 8 % threads per row");
static_assert(MODE == 1 || SROWS % kWarps == 0, "MODE 0 and 2: SROWS must be a multiple of BLOCK / 32");
static_assert(SROWS >= 1 && STAGES >= 1 && STAGES <= 16, "SROWS >= 1, STAGES 1..16");
static_assert(STORE == 0 || (STORE == 1 && STAGES >= 2), "STORE 1 needs STAGES >= 2");
static_assert(BPS >= 1 && BLOCK * BPS <= 2048, "BLOCK * BPS over 2048 threads per SM");

// bytes of x at src -> shared memory at dst, completing `bytes` of transaction on bar (which this
// thread has armed with expect_tx). dst, src and bytes multiples of 16.
__device__ __forceinline__ void bulk_load(unsigned dst, const void *src, unsigned bytes, unsigned bar) {
  tune::mbar_arrive_expect_tx(bar, bytes);
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// shared memory at src -> y at dst (bulk group of this thread), then close the group.
__device__ __forceinline__ void bulk_store(void *dst, unsigned src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(src), "r"(bytes)
               : "memory");
  tune::bulk_commit_group();
}

// Softmax of one row held in shared memory at `row` (a warp's or the block's threads, index t),
// y row at `yrow`. Every thread of the row's group calls it (block mode: the whole block).
__device__ __forceinline__ void row_softmax(bf16 *row, bf16 *__restrict__ yrow, int t, float *red) {
  vec v[kIters];
  const uint4 *src = reinterpret_cast<const uint4 *>(row);
#pragma unroll
  for (int j = 0; j < kIters; ++j) tune::to_words(src[j * kThreads + t], v[j]);
  float ml = tune::neg_inf();
#pragma unroll
  for (int j = 0; j < kIters; ++j)
#pragma unroll
    for (int w = 0; w < 4; ++w) ml = fmaxf(ml, fmaxf(tune::bf16_lo(v[j].w[w]), tune::bf16_hi(v[j].w[w])));
  ml *= kLog2e;  // the thread's max, log2 units
  float e[kIters][8];
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kIters; ++j)
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      e[j][2 * w] = tune::exp2_approx(fmaf(tune::bf16_lo(v[j].w[w]), kLog2e, -ml));
      e[j][2 * w + 1] = tune::exp2_approx(fmaf(tune::bf16_hi(v[j].w[w]), kLog2e, -ml));
      s += e[j][2 * w] + e[j][2 * w + 1];
    }
  float m = ml;
  if constexpr (MODE == 1) tune::block_reduce_online<kWarps>(m, s, red);
  else tune::warp_reduce_online(m, s);
  const float f = tune::exp2_approx(ml - m) * (1.f / s);  // thread max -> row max, then 1 / sum
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    vec o;
#pragma unroll
    for (int w = 0; w < 4; ++w) o.w[w] = tune::pack_bf16x2(e[j][2 * w] * f, e[j][2 * w + 1] * f);
    if constexpr (STORE == 0) {
      tune::store_words<1, 16>(yrow + (long long)(j * kThreads + t) * 8, o);
    } else {
      reinterpret_cast<uint4 *>(row)[j * kThreads + t] = tune::from_words(o);  // in place: this thread's own vector
    }
  }
}

}  // namespace ss

// A stream (the block, or in MODE 2 one warp) of this block: its index among all streams of the grid,
// their number, the thread's index in it, and its barrier for the threads of the stream.
struct stream_ctx {
  long long id, count;
  int t;
  __device__ __forceinline__ void sync() const {
    if constexpr (MODE == 2) __syncwarp();
    else __syncthreads();
  }
};

// grid: min(ceil(rows / SROWS), SMs * BPS), block BLOCK, dynamic shared memory STAGES * SROWS * COLS * 2.
extern "C" __global__ void __launch_bounds__(BLOCK, BPS)
softmax_stream(const bf16 *__restrict__ x, bf16 *__restrict__ y, int rows) {
  extern __shared__ __align__(128) unsigned char ring_all[];
  __shared__ __align__(8) unsigned long long full_all[ss::kUnits * STAGES];
  __shared__ float red[2 * ss::kWarps];
  const int tid = threadIdx.x;
  const int unit = MODE == 2 ? tid / 32 : 0;
  const stream_ctx st{(long long)blockIdx.x * ss::kUnits + unit, (long long)gridDim.x * ss::kUnits,
                      MODE == 2 ? tid % 32 : tid};
  unsigned char *ring = ring_all + unit * STAGES * ss::kStageBytes;  // this stream's STAGES stages
  const unsigned ring_s = tune::smem_u32(ring), full_s = tune::smem_u32(full_all + unit * STAGES);
  const long long groups = (rows + ss::kGroupRows - 1) / ss::kGroupRows;
  const int n = st.id < groups ? (int)((groups - 1 - st.id) / st.count + 1) : 0;  // this stream's groups

  // group i of this stream: global group st.id + i * st.count, rows [g * kGroupRows, min(rows, ...))
  auto group_row0 = [&](int i) { return (st.id + (long long)i * st.count) * ss::kGroupRows; };
  auto group_rows = [&](int i) {
    const long long left = rows - group_row0(i);
    return left < ss::kGroupRows ? (int)left : ss::kGroupRows;
  };
  auto issue = [&](int i) {  // the stream's thread 0: the load of its group i into stage i % STAGES
    const int s = i % STAGES;
    ss::bulk_load(ring_s + s * ss::kStageBytes, x + group_row0(i) * COLS, (unsigned)group_rows(i) * ss::kRowBytes,
                  full_s + 8 * s);
  };

  if (st.t == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) tune::mbar_init(full_s + 8 * s, 1);
    tune::fence_mbar_init();
  }
  __syncthreads();
  if (st.t == 0)
    for (int i = 0; i < STAGES && i < n; ++i) issue(i);

  for (int i = 0; i < n; ++i) {
    const int s = i % STAGES;
    const long long r0 = group_row0(i);
    const int nr = group_rows(i);
    tune::mbar_wait(full_s + 8 * s, (i / STAGES) & 1);
    bf16 *stage = reinterpret_cast<bf16 *>(ring + s * ss::kStageBytes);
    if constexpr (MODE == 0) {
      const int w = tid / 32, lane = tid % 32;
#pragma unroll 1
      for (int r = w; r < nr; r += ss::kWarps) ss::row_softmax(stage + r * COLS, y + (r0 + r) * COLS, lane, red);
    } else {
#pragma unroll 1
      for (int r = 0; r < nr; ++r) ss::row_softmax(stage + r * COLS, y + (r0 + r) * COLS, st.t, red);
    }
    if constexpr (STORE == 1) tune::fence_proxy_async_smem();  // y in the stage -> visible to the bulk store
    st.sync();  // every thread of the stream is done with stage s
    if (st.t == 0) {
      if constexpr (STORE == 0) {
        if (i + STAGES < n) issue(i + STAGES);
      } else {
        ss::bulk_store(y + r0 * COLS, ring_s + s * ss::kStageBytes, (unsigned)nr * ss::kRowBytes);
        // the previous group's store has read its stage: refill that stage (one group later than
        // STORE 0 would, so that this group's store need not be waited for)
        tune::bulk_wait_group_read<1>();
        if (i >= 1 && i - 1 + STAGES < n) issue(i - 1 + STAGES);
      }
    }
  }
  if constexpr (STORE == 1)
    if (st.t == 0) tune::bulk_wait_group<0>();  // the stores read shared memory until they complete
}
