// reference_fp8.cuh: the plain FP8 GEMM every variant of fp8_sm90.cuh is checked against.
//
//   c[m][n] = bf16( sum_k sa(m, k) * sb(n, k) * a[m][k] * b[n][k] ), one thread per output,
// with a and b decoded exactly (common/fp8.cuh) and the sum in fp64: the products of a 128-wide K
// block (exact in fp64: two 4-bit significands) are summed, then the block's sum times sa * sb is
// added to the total, then rounded once to bf16. sa, sb as SCALE_MODE says (fp8_sm90.cuh header).
// Same arguments as gemm_fp8 (the tensor maps are taken, never read). Launch: grid = (ceil(N / 16),
// ceil(M / 16)), block = (16, 16). Any M, N, K. 16 x 16 tiles of a and b pass through shared memory
// so that both are read coalesced (b is [N][K]).
#include <cuda_bf16.h>

#include "common/fp8.cuh"
#include "common/tma.cuh"

#ifndef SCALE_MODE
#error "reference_fp8.cuh needs -D SCALE_MODE=0|1|2"
#endif

typedef __nv_bfloat16 bf16;

extern "C" __global__ void __launch_bounds__(256)
gemm_fp8_reference(const unsigned char *a, const unsigned char *b, bf16 *c, const float *scale_a, const float *scale_b,
                   int M, int N, int K, const __grid_constant__ tune::tensormap tmA,
                   const __grid_constant__ tune::tensormap tmB) {
  (void)tmA;
  (void)tmB;
  // decoded once per element, in fp64 (exact), so that the inner loop is one fp64 FMA
  __shared__ double sa[16][17];  // sa[i][kk] = a[m0 + i][k0 + kk]
  __shared__ double sb[16][17];  // sb[kk][j] = b[n0 + j][k0 + kk]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.y * 16, n0 = blockIdx.x * 16;
  const int m = m0 + ty, n = n0 + tx;
  const int k_blocks = (K + 127) / 128;
  double total = 0.0, block = 0.0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    sa[ty][tx] = (m < M && k0 + tx < K) ? (double)tune::e4m3_to_f32(a[(size_t)m * K + k0 + tx]) : 0.0;
    sb[tx][ty] = (n0 + ty < N && k0 + tx < K) ? (double)tune::e4m3_to_f32(b[(size_t)(n0 + ty) * K + k0 + tx]) : 0.0;
    __syncthreads();
    for (int kk = 0; kk < 16; ++kk) block = fma(sa[ty][kk], sb[kk][tx], block);
    __syncthreads();
    // a 128-wide K block (or the last, partial one) ends here: scale it into the total
    if ((k0 + 16) % 128 == 0 || k0 + 16 >= K) {
      double s = 1.0;
      if (m < M && n < N) {
#if SCALE_MODE == 2
        const int kb = k0 / 128;
        s = (double)scale_a[(size_t)m * k_blocks + kb] * (double)scale_b[(size_t)(n / 128) * k_blocks + kb];
#endif
      }
      total += s * block;
      block = 0.0;
    }
  }
  if (m >= M || n >= N) return;
#if SCALE_MODE == 0
  total *= (double)scale_a[0] * (double)scale_b[0];
#elif SCALE_MODE == 1
  total *= (double)scale_a[m] * (double)scale_b[n];
#endif
  (void)k_blocks;
  c[(size_t)m * N + n] = __double2bfloat16(total);
}
