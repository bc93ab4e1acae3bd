// reference.cuh: the plain row softmax every variant of softmax.cuh is checked against.
// One block of 256 threads per row, fp32, three exact passes (max, sum of expf(x - max), write),
// tree reductions in shared memory; y rounded once to bf16. The row length cols is an argument.
// grid (rows), block 256. Takes the row recipe's arguments (x, y, rows, cols) and, for the split recipe,
// (x, y, partial, rows, cols): softmax_reference and softmax_split_reference.
#include <cuda_bf16.h>

#define REF_THREADS 256

static __device__ void ref_softmax_row(const __nv_bfloat16 *x, __nv_bfloat16 *y, long long cols) {
  __shared__ float red[REF_THREADS];
  const long long row = blockIdx.x;
  const __nv_bfloat16 *xr = x + row * cols;
  __nv_bfloat16 *yr = y + row * cols;
  const int t = threadIdx.x;

  float m = __int_as_float(0xff800000);  // -inf
  for (long long c = t; c < cols; c += REF_THREADS) m = fmaxf(m, __bfloat162float(xr[c]));
  red[t] = m;
  __syncthreads();
  for (int off = REF_THREADS / 2; off > 0; off /= 2) {
    if (t < off) red[t] = fmaxf(red[t], red[t + off]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();

  float s = 0.f;
  for (long long c = t; c < cols; c += REF_THREADS) s += expf(__bfloat162float(xr[c]) - m);
  red[t] = s;
  __syncthreads();
  for (int off = REF_THREADS / 2; off > 0; off /= 2) {
    if (t < off) red[t] += red[t + off];
    __syncthreads();
  }
  s = red[0];

  for (long long c = t; c < cols; c += REF_THREADS) yr[c] = __float2bfloat16_rn(expf(__bfloat162float(xr[c]) - m) / s);
}

extern "C" __global__ void softmax_reference(const __nv_bfloat16 *x, __nv_bfloat16 *y, int rows, int cols) {
  ref_softmax_row(x, y, cols);
}

extern "C" __global__ void softmax_split_reference(const __nv_bfloat16 *x, __nv_bfloat16 *y, float *partial, int rows,
                                                   int cols) {
  ref_softmax_row(x, y, cols);
}
