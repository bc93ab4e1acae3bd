// tcgemv.cuh: PATH 3 of gemm.cuh, decode shapes on tensor cores with b streamed straight into
// registers: few rows of a (M = TC_M, a multiple of 8 up to 64, compile-time), b stored [N][K]
// (B_COL = 1, nn.Linear), read once with 16-byte loads as the GEMV path (PATH 2) reads it, but
// multiplied with mma.sync instead of CUDA-core FMAs (PATH 2 stops at M = 8: at M = 16 its FMAs
// would take most of the SM's fp32 throughput).
//
// The transposed product: c^T [N][M] = b [N][K] x a^T [K][M]. A warp owns 16 rows of b (16 output
// columns n) and one k slice; the mma's A operand is those 16 rows of b, its B operand 8 rows of a
// (kMT = TC_M / 8 of them). The order of k inside a dot product does not matter, so k is permuted
// consistently for both operands: of every 32 consecutive k, lane (g = lane / 4, t = lane % 4)
// loads k = 8 t .. 8 t + 7 of b rows n0 + g and n0 + g + 8 and of a's rows, as one 16-byte vector
// each, and gives words 0, 1 of each vector to the first m16n8k16 and words 2, 3 to the second (an
// mma lane holds k = 2 t, 2 t + 1, 2 t + 8, 2 t + 9 of its rows: any 4 distinct k do, if every
// operand maps them alike). So b goes from global memory to the tensor cores with no shared memory,
// no ldmatrix and no shuffles, TC_UNROLL 32-k steps (2 * TC_UNROLL 16-byte loads per lane) in flight;
// a (M x K x 2 bytes, read by every warp) comes through L1 / L2.
//
// Grid: (N / (16 * TC_WARPS), SPLIT_K); block 32 * TC_WARPS; no shared memory. Needs B_COL = 1,
// N % 16 == 0, (K / SPLIT_K) % (32 * TC_UNROLL) == 0, M == TC_M. SPLIT_K > 1 writes fp32 partials to
// ws[split] (gemm_splitk_reduce sums them).
//
// Tunables: TC_WARPS 4 | 8, TC_UNROLL 2 | 4 | 8, TC_MIN_BLOCKS [1] (__launch_bounds__ minimum), SPLIT_K.
#include "common/mma.cuh"

#if !defined(TC_M) || !defined(TC_WARPS) || !defined(TC_UNROLL)
#error "tcgemv.cuh needs -D TC_M TC_WARPS TC_UNROLL"
#endif
#ifndef TC_MIN_BLOCKS
#define TC_MIN_BLOCKS 1
#endif
#if !B_COL
#error "tcgemv.cuh (PATH 3) needs B_COL = 1: b stored [N][K]"
#endif

namespace tcgemv {

constexpr int kM = TC_M;
constexpr int kMT = kM / 8;  // mma n8 tiles of a's rows
constexpr int kWarps = TC_WARPS;
constexpr int kThreads = kWarps * 32;
constexpr int kUnroll = TC_UNROLL;
constexpr int kSmemBytes = 0;
constexpr int kMinBlocks = TC_MIN_BLOCKS;  // __launch_bounds__ minimum: caps the registers (lo / hi / a in flight)

static_assert(kM % 8 == 0 && kM >= 8 && kM <= 64, "TC_M must be a multiple of 8 in 8..64");
static_assert(kWarps == 4 || kWarps == 8, "TC_WARPS must be 4 or 8");
static_assert(kUnroll == 2 || kUnroll == 4 || kUnroll == 8, "TC_UNROLL must be 2, 4 or 8");
static_assert(kMinBlocks >= 1 && kMinBlocks * kThreads <= 2048, "TC_MIN_BLOCKS: 1 .. 2048 / threads");

// Streaming 16-byte load of b (read once: keep it out of L1).
__device__ __forceinline__ uint4 ld_stream16(const bf16 *p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void store_out(bf16 *__restrict__ c, float *__restrict__ ws, int M, int N, int split,
                                          int m, int n, float v) {
  if constexpr (SPLIT_K > 1) ws[(size_t)split * M * N + (size_t)m * N + n] = v;
  else c[(size_t)m * N + n] = __float2bfloat16(v);
}

__device__ __forceinline__ void run(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c,
                                    float *__restrict__ ws, int M, int N, int K) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int n0 = ((int)blockIdx.x * kWarps + warp) * 16;
  if (n0 >= N) return;  // whole warps only; no block-wide synchronization
  const int split = (int)blockIdx.y;
  const int kslice = K / SPLIT_K;
  const size_t kbeg = (size_t)split * kslice + 8 * t;
  const bf16 *b_lo = b + (size_t)(n0 + g) * K + kbeg;  // b row n0 + g; row n0 + g + 8 is 8 K further
  const bf16 *b_hi = b_lo + (size_t)8 * K;
  const bf16 *a_row = a + (size_t)g * K + kbeg;       // a row g of each 8-row tile (+ 8 mt K)
  float acc[kMT][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.f;

  for (int k = 0; k < kslice; k += 32 * kUnroll) {
    uint4 lo[kUnroll], hi[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      lo[u] = ld_stream16(b_lo + k + 32 * u);
      hi[u] = ld_stream16(b_hi + k + 32 * u);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const unsigned f0[4] = {lo[u].x, hi[u].x, lo[u].y, hi[u].y};  // k words 0, 1: the first k16
      const unsigned f1[4] = {lo[u].z, hi[u].z, lo[u].w, hi[u].w};  // k words 2, 3: the second
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        const uint4 av = __ldg(reinterpret_cast<const uint4 *>(a_row + (size_t)mt * 8 * K + k + 32 * u));
        tune::mma_bf16_16816(acc[mt], f0, av.x, av.y);
        tune::mma_bf16_16816(acc[mt], f1, av.z, av.w);
      }
    }
  }
  // acc[mt]: {0, 1} are c^T rows n0 + g, columns (a rows) 8 mt + 2 t, + 1; {2, 3} the same for n0 + g + 8
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    const int m = 8 * mt + 2 * t;
    store_out(c, ws, M, N, split, m, n0 + g, acc[mt][0]);
    store_out(c, ws, M, N, split, m + 1, n0 + g, acc[mt][1]);
    store_out(c, ws, M, N, split, m, n0 + g + 8, acc[mt][2]);
    store_out(c, ws, M, N, split, m + 1, n0 + g + 8, acc[mt][3]);
  }
}

}  // namespace tcgemv
