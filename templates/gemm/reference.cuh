// reference.cuh: the plain GEMM every variant of gemm.cuh is checked against.
//
//   c[m][n] = bf16( sum_k a[m][k] * B(k, n) ), fp32 accumulation in k order, one thread per output.
//   a [M][K] row-major; B(k, n) = b[k * N + n] (B_COL = 0, b is [K][N]) or b[n * K + k] (B_COL = 1,
//   b is [N][K]); c [M][N] row-major; bf16. `ws` is the variants' split-K scratch: unused here.
// Defines: B_COL, TMA_ARGS [0] (1 or 2: also takes the two or three tensor maps of gemm.cuh's TMA_ARGS). Launch: grid = (ceil(N / 16), ceil(M / 16)), block = (16, 16), no dynamic shared
// memory. Any M, N, K. 16 x 16 tiles of a and b are staged through shared memory only so that both
// layouts are read coalesced (a few hundred ms at 8192^3).
#include <cuda_bf16.h>

#ifndef B_COL
#error "reference.cuh needs -D B_COL=0|1"
#endif

typedef __nv_bfloat16 bf16;

#ifndef TMA_ARGS
#define TMA_ARGS 0
#endif
#if TMA_ARGS
// the variants' tensor map parameters (docs/tensormap-args.md): taken, never read
#include "common/tma.cuh"
#if TMA_ARGS >= 2
#define REF_TMA_PARAMS                                                                                         \
  , const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmB,                  \
      const __grid_constant__ tune::tensormap tmC
#else
#define REF_TMA_PARAMS , const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmB
#endif
#else
#define REF_TMA_PARAMS
#endif

extern "C" __global__ void __launch_bounds__(256) gemm_reference(const bf16 *a, const bf16 *b, bf16 *c, float *ws,
                                                                int M, int N, int K REF_TMA_PARAMS) {
  (void)ws;
  __shared__ float sa[16][17];  // sa[i][kk] = a[m0 + i][k0 + kk]
  __shared__ float sb[16][17];  // sb[kk][j] = B(k0 + kk, n0 + j)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.y * 16, n0 = blockIdx.x * 16;
  const int m = m0 + ty, n = n0 + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    sa[ty][tx] = (m < M && k0 + tx < K) ? __bfloat162float(a[(size_t)m * K + k0 + tx]) : 0.f;
#if B_COL
    // thread (ty, tx) reads b[n0 + ty][k0 + tx]: consecutive tx are consecutive k
    sb[tx][ty] = (n0 + ty < N && k0 + tx < K) ? __bfloat162float(b[(size_t)(n0 + ty) * K + k0 + tx]) : 0.f;
#else
    sb[ty][tx] = (n < N && k0 + ty < K) ? __bfloat162float(b[(size_t)(k0 + ty) * N + n]) : 0.f;
#endif
    __syncthreads();
    for (int kk = 0; kk < 16; ++kk) acc = fmaf(sa[ty][kk], sb[kk][tx], acc);
    __syncthreads();
  }
  if (m < M && n < N) c[(size_t)m * N + n] = __float2bfloat16(acc);
}
