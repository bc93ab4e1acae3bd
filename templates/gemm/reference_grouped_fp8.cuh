// reference_grouped_fp8.cuh: the plain FP8 grouped GEMM every variant of gemm/grouped_fp8_sm90.cuh is
// checked against (same arguments, LAYOUT and SCALE_MODE):
//
//   c[row][n] = bf16( sum over 128-wide K blocks kb of sa(row, kb) * sw(e, n, kb) * sum_{k in kb} a[row][k] * w[e][n][k] )
// for every row of expert e, one thread per output, a and w decoded exactly (common/fp8.cuh) and every
// sum in fp64, rounded once to bf16; masked rows past their expert's count are written with zeros
// (the kernel's ZERO_PAD 1). Launch: grid = (ceil(N / 16), ceil(rows / 16)) with rows = M (contiguous)
// or E * M (masked), block = (16, 16). The block's a rows and the weights of the expert of its first
// row pass through shared memory (read coalesced); a row of another expert (a block that straddles
// two experts) reads its weights from global memory.
#include <cuda_bf16.h>

#include "common/fp8.cuh"
#include "common/tma.cuh"
#include "gemm/expert_tiles.cuh"

#if !defined(LAYOUT) || !defined(SCALE_MODE)
#error "reference_grouped_fp8.cuh needs -D LAYOUT=0|1 SCALE_MODE=0|1|2"
#endif

typedef __nv_bfloat16 bf16;

// sa(row, kb) * sw(e, n, kb) of block mode, the factor of a whole K block's sum
__device__ __forceinline__ double block_scale(const float *scale_a, const float *scale_w, int row, int e, int n, int N,
                                              int kb, int k_blocks) {
  const size_t n_blocks = (size_t)((N + 127) / 128);
  return (double)scale_a[(size_t)row * k_blocks + kb] *
         (double)scale_w[((size_t)e * n_blocks + n / 128) * k_blocks + kb];
}

extern "C" __global__ void __launch_bounds__(256)
grouped_gemm_fp8_reference(const unsigned char *a, const unsigned char *w, bf16 *c, const int *groups,
                           const float *scale_a, const float *scale_w, int E, int M, int N, int K,
                           const __grid_constant__ tune::tensormap tmA, const __grid_constant__ tune::tensormap tmW) {
  (void)tmA;
  (void)tmW;
  __shared__ double sa[16][17];  // sa[i][kk] = a[m0 + i][k0 + kk]
  __shared__ double sw[16][17];  // sw[kk][j] = w[e0][n0 + j][k0 + kk]
  __shared__ int e0;             // the expert of the block's first row that has one
  const tune::ExpertRows<LAYOUT == 1> er{groups, E, M};
  const int rows = er.rows();
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.y * 16, n0 = blockIdx.x * 16;
  const int row = m0 + ty, n = n0 + tx;
  const int e = row < rows ? tune::expert_of_row(er, row) : -1;
  if (tx == 0 && ty == 0) {
    e0 = -1;
    for (int i = 0; i < 16 && e0 < 0 && m0 + i < rows; ++i) e0 = tune::expert_of_row(er, m0 + i);
  }
  __syncthreads();
  const unsigned char *we = w + (size_t)max(e, 0) * N * K, *w0 = w + (size_t)max(e0, 0) * N * K;
  const int k_blocks = (K + 127) / 128;
  double total = 0.0, block = 0.0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    sa[ty][tx] = (e >= 0 && k0 + tx < K) ? (double)tune::e4m3_to_f32(a[(size_t)row * K + k0 + tx]) : 0.0;
    sw[tx][ty] = (e0 >= 0 && n0 + ty < N && k0 + tx < K) ? (double)tune::e4m3_to_f32(w0[(size_t)(n0 + ty) * K + k0 + tx]) : 0.0;
    __syncthreads();
    if (e == e0) {
      for (int kk = 0; kk < 16; ++kk) block = fma(sa[ty][kk], sw[kk][tx], block);
    } else if (e >= 0 && n < N) {
      for (int kk = 0; kk < 16 && k0 + kk < K; ++kk)
        block = fma(sa[ty][kk], (double)tune::e4m3_to_f32(we[(size_t)n * K + k0 + kk]), block);
    }
    __syncthreads();
    // a 128-wide K block (or the last, partial one) ends here: scale it into the total
    if ((k0 + 16) % 128 == 0 || k0 + 16 >= K) {
      const bool scaled = SCALE_MODE == 2 && e >= 0 && n < N;
      total += (scaled ? block_scale(scale_a, scale_w, row, e, n, N, k0 / 128, k_blocks) : 1.0) * block;
      block = 0.0;
    }
  }
  if (row >= rows || n >= N || (e < 0 && LAYOUT == 0)) return;  // contiguous rows no expert owns: not written
  if (e >= 0) {
#if SCALE_MODE == 0
    total *= (double)scale_a[0] * (double)scale_w[e];
#elif SCALE_MODE == 1
    total *= (double)scale_a[row] * (double)scale_w[(size_t)e * N + n];
#endif
  }
  (void)k_blocks;
  c[(size_t)row * N + n] = __double2bfloat16(e >= 0 ? total : 0.0);
}
