// reference_grouped.cuh: the plain grouped GEMM every variant of gemm/grouped_sm90.cuh is checked against.
//
//   c[row][n] = bf16( sum_k a[row][k] * w[e][n][k] ), fp32 accumulation in k order, one thread per
//   output, for every row of expert e in the 2-D views of grouped_sm90.cuh (same arguments, same
//   LAYOUT: 0 contiguous with offsets [E + 1], 1 masked with counts [E] and capacity M). Masked rows
//   past their expert's count are written with zeros (grouped_sm90.cuh's ZERO_PAD 1).
// Launch: grid = (ceil(N / 16), ceil(rows / 16)) with rows = M (contiguous) or E * M (masked), block =
// (16, 16), no dynamic shared memory. The block's a rows and the weights of the expert of its first
// row are staged through shared memory (read coalesced); a row of another expert (a block that
// straddles two experts) reads its weights from global memory.
// SWIGLU [0] 1 (grouped_sm90.cuh's SWIGLU): grouped_swiglu_reference instead, c[row][n] =
//   bf16( silu(g) * u ) with g = sum_k a[row][k] * w[e][n][k] (gate) and u the same over w[e][N + n]
//   (up), w [E][2N][K], both sums and the silu in fp64; same launch and staging.
#include <cuda_bf16.h>

#include "common/tma.cuh"
#include "gemm/expert_tiles.cuh"

#ifndef LAYOUT
#error "reference_grouped.cuh needs -D LAYOUT=0|1"
#endif
#ifndef SWIGLU
#define SWIGLU 0
#endif

typedef __nv_bfloat16 bf16;

// The expert of row `row` of the 2-D view (-1: a masked row past its count, or a row no expert owns).
__device__ __forceinline__ int expert_of(const int *groups, int E, int M, int row) {
  return tune::expert_of_row(tune::ExpertRows<LAYOUT == 1>{groups, E, M}, row);
}

#if !SWIGLU
extern "C" __global__ void __launch_bounds__(256)
grouped_gemm_reference(const bf16 *a, const bf16 *w, bf16 *c, const int *groups, int E, int M, int N, int K,
                       const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmW,
                       const __grid_constant__ tune::tensormap tmC) {
  __shared__ float sa[16][17];  // sa[i][kk] = a[m0 + i][k0 + kk]
  __shared__ float sw[16][17];  // sw[kk][j] = w[e0][n0 + j][k0 + kk]
  const int rows = LAYOUT == 1 ? E * M : M;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.y * 16, n0 = blockIdx.x * 16;
  const int row = m0 + ty, n = n0 + tx;
  const int e = row < rows ? expert_of(groups, E, M, row) : -1;
  // the expert whose weights are staged: that of the block's first row that has one
  __shared__ int e0;
  if (tx == 0 && ty == 0) {
    e0 = -1;
    for (int i = 0; i < 16 && e0 < 0; ++i)
      if (m0 + i < rows) e0 = expert_of(groups, E, M, m0 + i);
  }
  __syncthreads();
  const bf16 *we = w + (size_t)max(e, 0) * N * K;
  const bf16 *w0 = w + (size_t)max(e0, 0) * N * K;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    sa[ty][tx] = (e >= 0 && k0 + tx < K) ? __bfloat162float(a[(size_t)row * K + k0 + tx]) : 0.f;
    sw[tx][ty] = (e0 >= 0 && n0 + ty < N && k0 + tx < K) ? __bfloat162float(w0[(size_t)(n0 + ty) * K + k0 + tx]) : 0.f;
    __syncthreads();
    if (e == e0) {
      for (int kk = 0; kk < 16; ++kk) acc = fmaf(sa[ty][kk], sw[kk][tx], acc);
    } else if (e >= 0 && n < N) {
      for (int kk = 0; kk < 16 && k0 + kk < K; ++kk)
        acc = fmaf(sa[ty][kk], __bfloat162float(we[(size_t)n * K + k0 + kk]), acc);
    }
    __syncthreads();
  }
  // masked rows past the count: zeros; contiguous rows outside every expert are not written
  if (row < rows && n < N && (e >= 0 || LAYOUT == 1)) c[(size_t)row * N + n] = __float2bfloat16(acc);
}
#else
// The expert whose weights a block stages is found as in grouped_gemm_reference; sg, su hold the gate
// and up rows of its n columns.
extern "C" __global__ void __launch_bounds__(256)
grouped_swiglu_reference(const bf16 *a, const bf16 *w, bf16 *c, const int *groups, int E, int M, int N, int K,
                         const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmW,
                         const __grid_constant__ tune::tensormap tmC) {
  __shared__ float sa[16][17];  // sa[i][kk] = a[m0 + i][k0 + kk]
  __shared__ float sg[16][17];  // sg[kk][j] = w[e0][n0 + j][k0 + kk]
  __shared__ float su[16][17];  // su[kk][j] = w[e0][N + n0 + j][k0 + kk]
  const int rows = LAYOUT == 1 ? E * M : M;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.y * 16, n0 = blockIdx.x * 16;
  const int row = m0 + ty, n = n0 + tx;
  const int e = row < rows ? expert_of(groups, E, M, row) : -1;
  __shared__ int e0;
  if (tx == 0 && ty == 0) {
    e0 = -1;
    for (int i = 0; i < 16 && e0 < 0; ++i)
      if (m0 + i < rows) e0 = expert_of(groups, E, M, m0 + i);
  }
  __syncthreads();
  const bf16 *we = w + (size_t)max(e, 0) * 2 * N * K;
  const bf16 *w0 = w + (size_t)max(e0, 0) * 2 * N * K;
  double g = 0, u = 0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    const bool in = e0 >= 0 && n0 + ty < N && k0 + tx < K;
    sa[ty][tx] = (e >= 0 && k0 + tx < K) ? __bfloat162float(a[(size_t)row * K + k0 + tx]) : 0.f;
    sg[tx][ty] = in ? __bfloat162float(w0[(size_t)(n0 + ty) * K + k0 + tx]) : 0.f;
    su[tx][ty] = in ? __bfloat162float(w0[(size_t)(N + n0 + ty) * K + k0 + tx]) : 0.f;
    __syncthreads();
    if (e == e0) {
      for (int kk = 0; kk < 16; ++kk) {
        g = fma((double)sa[ty][kk], (double)sg[kk][tx], g);
        u = fma((double)sa[ty][kk], (double)su[kk][tx], u);
      }
    } else if (e >= 0 && n < N) {
      for (int kk = 0; kk < 16 && k0 + kk < K; ++kk) {
        const double x = sa[ty][kk];
        g = fma(x, (double)__bfloat162float(we[(size_t)n * K + k0 + kk]), g);
        u = fma(x, (double)__bfloat162float(we[(size_t)(N + n) * K + k0 + kk]), u);
      }
    }
    __syncthreads();
  }
  // masked rows past the count: g = u = 0, h = 0; contiguous rows outside every expert are not written
  if (row < rows && n < N && (e >= 0 || LAYOUT == 1)) c[(size_t)row * N + n] = __double2bfloat16(g / (1.0 + exp(-g)) * u);
}
#endif
