// gemv.cuh: PATH 2 of gemm.cuh, a CUDA-core GEMV for decode shapes: few rows of a (M = GEMV_M <= 8,
// a compile-time define of the problem), all of b streamed once with 16-byte (or narrower) loads.
// fp32 accumulation in registers; no shared-memory tiles.
//
// B_COL = 1 (b stored [N][K], k-contiguous): each warp owns GEMV_COLS consecutive output columns;
//   lane l reads 8 consecutive k (16 bytes) of each column at k = k_begin + 8 l + 256 j, GEMV_UNROLL
//   such steps in flight, and the matching 16 bytes of every a row (L1-resident: all warps read them);
//   a shuffle reduction over the warp ends it. Needs (K / SPLIT_K) % (256 * GEMV_UNROLL) == 0 and
//   N % (GEMV_WARPS * GEMV_COLS) == 0. Grid: (N / (GEMV_WARPS * GEMV_COLS), SPLIT_K).
// B_COL = 0 (b stored [K][N], n-contiguous): lane l owns 2 * GEMV_COLS consecutive columns (a
//   4 * GEMV_COLS-byte load per k row), a warp 64 * GEMV_COLS columns; the GEMV_WARPS warps of a block
//   take consecutive k ranges of the split and are summed through shared memory. Needs
//   (K / SPLIT_K) % (GEMV_WARPS * GEMV_UNROLL) == 0 and N % (64 * GEMV_COLS) == 0.
//   Grid: (N / (64 * GEMV_COLS), SPLIT_K).
// Block = 32 * GEMV_WARPS; no dynamic shared memory. SPLIT_K > 1 writes fp32 partials to ws[split].
//
// Tunables: GEMV_WARPS 2..16, GEMV_COLS 1 | 2 | 4, GEMV_UNROLL 1 | 2 | 4, SPLIT_K.
#include "common/ld_stream.cuh"
#include "common/mma.cuh"

#if !defined(GEMV_M) || !defined(GEMV_WARPS) || !defined(GEMV_COLS) || !defined(GEMV_UNROLL)
#error "gemv.cuh needs -D GEMV_M GEMV_WARPS GEMV_COLS GEMV_UNROLL"
#endif

namespace gemv {

constexpr int kM = GEMV_M;
constexpr int kWarps = GEMV_WARPS;
constexpr int kThreads = kWarps * 32;
constexpr int kCols = GEMV_COLS;
constexpr int kUnroll = GEMV_UNROLL;
constexpr int kSmemBytes = 0;  // dynamic; the B_COL = 0 reduction uses static shared memory

static_assert(kM >= 1 && kM <= 8, "GEMV_M must be 1..8");
static_assert(kWarps >= 2 && kWarps <= 16, "GEMV_WARPS must be 2..16");
static_assert(kCols == 1 || kCols == 2 || kCols == 4, "GEMV_COLS must be 1, 2 or 4");
static_assert(kUnroll == 1 || kUnroll == 2 || kUnroll == 4, "GEMV_UNROLL must be 1, 2 or 4");

__device__ __forceinline__ float lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }

__device__ __forceinline__ void store_out(bf16 *__restrict__ c, float *__restrict__ ws, int M, int N, int split,
                                          int m, int n, float v) {
  if constexpr (SPLIT_K > 1) ws[(size_t)split * M * N + (size_t)m * N + n] = v;
  else c[(size_t)m * N + n] = __float2bfloat16(v);
}

#if B_COL
__device__ __forceinline__ void run(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c,
                                    float *__restrict__ ws, int M, int N, int K) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n0 = ((int)blockIdx.x * kWarps + warp) * kCols;
  const int split = (int)blockIdx.y;
  const int k_len = K / SPLIT_K, k_begin = split * k_len;
  float acc[kM][kCols];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int j = 0; j < kCols; ++j) acc[m][j] = 0.f;

  const bf16 *bp = b + (size_t)n0 * K + k_begin + lane * 8;
  const bf16 *ap = a + k_begin + lane * 8;
  for (int k = 0; k < k_len; k += 256 * kUnroll) {
    uint4 bv[kUnroll][kCols], av[kUnroll][kM];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int j = 0; j < kCols; ++j) bv[u][j] = tune::ld_stream16(bp + (size_t)j * K + k + u * 256);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int m = 0; m < kM; ++m) av[u][m] = __ldg(reinterpret_cast<const uint4 *>(ap + (size_t)m * K + k + u * 256));
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        const unsigned aw[4] = {av[u][m].x, av[u][m].y, av[u][m].z, av[u][m].w};
#pragma unroll
        for (int j = 0; j < kCols; ++j) {
          const unsigned bw[4] = {bv[u][j].x, bv[u][j].y, bv[u][j].z, bv[u][j].w};
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            acc[m][j] = fmaf(lo(aw[e]), lo(bw[e]), acc[m][j]);
            acc[m][j] = fmaf(hi(aw[e]), hi(bw[e]), acc[m][j]);
          }
        }
      }
  }
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      float v = acc[m][j];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      // lane (m * kCols + j) % 32 stores, spreading the stores over lanes
      if (lane == ((m * kCols + j) & 31) && m < M) store_out(c, ws, M, N, split, m, n0 + j, v);
    }
}
#else
constexpr int kNV = 2 * kCols;    // columns per lane
constexpr int kNB = 32 * kNV;     // columns per block
template <int BYTES> struct uvec;
template <> struct uvec<4> { typedef unsigned type; };
template <> struct uvec<8> { typedef uint2 type; };
template <> struct uvec<16> { typedef uint4 type; };

__device__ __forceinline__ void to_words(unsigned v, unsigned (&w)[1]) { w[0] = v; }
__device__ __forceinline__ void to_words(uint2 v, unsigned (&w)[2]) { w[0] = v.x; w[1] = v.y; }
__device__ __forceinline__ void to_words(uint4 v, unsigned (&w)[4]) { w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w; }

__device__ __forceinline__ void run(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c,
                                    float *__restrict__ ws, int M, int N, int K) {
  typedef typename uvec<4 * kCols>::type BV;
  typedef typename uvec<2 * kUnroll>::type AV;  // kUnroll consecutive k of one a row
  __shared__ float red[kWarps][kNB];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n0 = (int)blockIdx.x * kNB + lane * kNV;
  const int split = (int)blockIdx.y;
  const int k_len = K / SPLIT_K / kWarps;
  const int k_begin = split * (K / SPLIT_K) + warp * k_len;
  float acc[kM][kNV];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int j = 0; j < kNV; ++j) acc[m][j] = 0.f;

  for (int k = k_begin; k < k_begin + k_len; k += kUnroll) {
    unsigned bw[kUnroll][kCols];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      unsigned w[kCols];
      to_words(__ldg(reinterpret_cast<const BV *>(b + (size_t)(k + u) * N + n0)), w);
#pragma unroll
      for (int x = 0; x < kCols; ++x) bw[u][x] = w[x];
    }
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      float af[kUnroll];
      if constexpr (kUnroll == 1) {
        af[0] = __bfloat162float(a[(size_t)m * K + k]);
      } else {
        unsigned w[kUnroll / 2];
        to_words(__ldg(reinterpret_cast<const AV *>(a + (size_t)m * K + k)), w);
#pragma unroll
        for (int x = 0; x < kUnroll / 2; ++x) {
          af[2 * x] = lo(w[x]);
          af[2 * x + 1] = hi(w[x]);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int x = 0; x < kCols; ++x) {
          acc[m][2 * x] = fmaf(af[u], lo(bw[u][x]), acc[m][2 * x]);
          acc[m][2 * x + 1] = fmaf(af[u], hi(bw[u][x]), acc[m][2 * x + 1]);
        }
    }
  }
  // sum the warps' k ranges, one a row at a time
#pragma unroll
  for (int m = 0; m < kM; ++m) {
#pragma unroll
    for (int j = 0; j < kNV; ++j) red[warp][lane * kNV + j] = acc[m][j];
    __syncthreads();
    for (int col = threadIdx.x; col < kNB; col += kThreads) {
      float v = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) v += red[w][col];
      if (m < M) store_out(c, ws, M, N, split, m, (int)blockIdx.x * kNB + col, v);
    }
    __syncthreads();
  }
}
#endif

}  // namespace gemv
