// gemv.cuh: PATH 2 of gemm.cuh, a CUDA-core GEMV for decode shapes: few rows of a (M = GEMV_M <= 8,
// a compile-time define of the problem), all of b streamed once with 16-byte (or narrower) loads.
// fp32 accumulation in registers; no shared-memory tiles.
//
// B_COL = 1 (b stored [N][K], k-contiguous): each warp owns GEMV_COLS consecutive output columns;
//   lane l reads 8 consecutive k (16 bytes) of each column at k = k_begin + 8 l + 256 j, GEMV_UNROLL
//   such steps in flight, and the matching 16 bytes of every a row (L1-resident: all warps read them);
//   a shuffle reduction over the warp ends it. A split's k range is ceil(K / SPLIT_K) rounded up to
//   8; its last GEMV_UNROLL * 256 or fewer k go through a tail loop whose lanes load only chunks
//   below the range's end. Columns past N read column N - 1 and are not stored.
//   Grid: (ceil(N / (GEMV_WARPS * GEMV_COLS)), SPLIT_K).
// B_COL = 0 (b stored [K][N], n-contiguous): lane l owns 2 * GEMV_COLS consecutive columns (a
//   4 * GEMV_COLS-byte load per k row), a warp 64 * GEMV_COLS columns; the GEMV_WARPS warps of a block
//   take consecutive k ranges of the split (ceil(K / (SPLIT_K * GEMV_WARPS)) rounded up to
//   GEMV_UNROLL, clipped at K; K % GEMV_UNROLL == 0 as K % 8 == 0) and are summed through shared
//   memory. A lane's 2 * GEMV_COLS columns are all below N or all past it (N % 8 == 0): past it, it
//   reads column 0 and stores nothing. Grid: (ceil(N / (64 * GEMV_COLS)), SPLIT_K).
// Block = 32 * GEMV_WARPS; no dynamic shared memory. SPLIT_K > 1 writes fp32 partials to ws[split].
// GEMV_M is the compile-time row count, M <= GEMV_M the problem's: a rows past M read row M - 1 and
// their outputs are not stored, so one binary serves every M up to GEMV_M.
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
// acc[m][j] += the dot product of one 16-byte chunk (8 k) of a row m and of b column j
__device__ __forceinline__ void fma_chunks(float (&acc)[kM][kCols], const uint4 (&av)[kM], const uint4 (&bv)[kCols]) {
#pragma unroll
  for (int m = 0; m < kM; ++m) {
    const unsigned aw[4] = {av[m].x, av[m].y, av[m].z, av[m].w};
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      const unsigned bw[4] = {bv[j].x, bv[j].y, bv[j].z, bv[j].w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        acc[m][j] = fmaf(lo(aw[e]), lo(bw[e]), acc[m][j]);
        acc[m][j] = fmaf(hi(aw[e]), hi(bw[e]), acc[m][j]);
      }
    }
  }
}

__device__ __forceinline__ void run(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ c,
                                    float *__restrict__ ws, int M, int N, int K) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n0 = ((int)blockIdx.x * kWarps + warp) * kCols;
  const int split = (int)blockIdx.y;
  const int k_split = (K + 8 * SPLIT_K - 1) / (8 * SPLIT_K) * 8;
  const int k_begin = split * k_split;
  const int k_len = max(0, min(k_split, K - k_begin));
  float acc[kM][kCols];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int j = 0; j < kCols; ++j) acc[m][j] = 0.f;

  const bf16 *bp[kCols];  // column n0 + j of b, or column N - 1 past N (not stored)
#pragma unroll
  for (int j = 0; j < kCols; ++j) bp[j] = b + (size_t)min(n0 + j, N - 1) * K + k_begin + lane * 8;
  const bf16 *ap[kM];     // row m of a, or row M - 1 past M (not stored)
#pragma unroll
  for (int m = 0; m < kM; ++m) ap[m] = a + (size_t)min(m, M - 1) * K + k_begin + lane * 8;
  int k = 0;
  for (; k + 256 * kUnroll <= k_len; k += 256 * kUnroll) {
    uint4 bv[kUnroll][kCols], av[kUnroll][kM];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int j = 0; j < kCols; ++j) bv[u][j] = tune::ld_stream16(bp[j] + k + u * 256);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int m = 0; m < kM; ++m) av[u][m] = __ldg(reinterpret_cast<const uint4 *>(ap[m] + k + u * 256));
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) fma_chunks(acc, av[u], bv[u]);
  }
  // tail: up to 256 * kUnroll k, one 256-wide step at a time, each lane's chunk only below k_len
  for (; k < k_len; k += 256) {
    uint4 bv[kCols], av[kM];
    const bool ok = k + lane * 8 < k_len;
#pragma unroll
    for (int j = 0; j < kCols; ++j) bv[j] = ok ? tune::ld_stream16(bp[j] + k) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int m = 0; m < kM; ++m) av[m] = ok ? __ldg(reinterpret_cast<const uint4 *>(ap[m] + k)) : make_uint4(0, 0, 0, 0);
    fma_chunks(acc, av, bv);
  }
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      float v = acc[m][j];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      // lane (m * kCols + j) % 32 stores, spreading the stores over lanes
      if (lane == ((m * kCols + j) & 31) && m < M && n0 + j < N) store_out(c, ws, M, N, split, m, n0 + j, v);
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
  const int n_lane = (int)blockIdx.x * kNB + lane * kNV;
  const int n0 = n_lane < N ? n_lane : 0;  // past N: read column 0, store nothing
  const int split = (int)blockIdx.y;
  const int k_warp = (K + SPLIT_K * kWarps * kUnroll - 1) / (SPLIT_K * kWarps * kUnroll) * kUnroll;
  const int k_begin = (split * kWarps + warp) * k_warp;
  const int k_end = min(K, k_begin + k_warp);
  float acc[kM][kNV];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int j = 0; j < kNV; ++j) acc[m][j] = 0.f;

  for (int k = k_begin; k < k_end; k += kUnroll) {
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
        af[0] = __bfloat162float(a[(size_t)min(m, M - 1) * K + k]);
      } else {
        unsigned w[kUnroll / 2];
        to_words(__ldg(reinterpret_cast<const AV *>(a + (size_t)min(m, M - 1) * K + k)), w);
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
      if (m < M && (int)blockIdx.x * kNB + col < N) store_out(c, ws, M, N, split, m, (int)blockIdx.x * kNB + col, v);
    }
    __syncthreads();
  }
}
#endif

}  // namespace gemv
