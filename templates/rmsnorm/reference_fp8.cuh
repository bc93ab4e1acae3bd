// reference_fp8.cuh: the plain residual add + RMSNorm + e4m3 quantization every variant of
// rmsnorm_fp8.cuh is checked against, in fp64 from h on:
//   h = bf16(x + r)                       (fp32 add, rounded once: the stored residual, as the kernel)
//   v = h * w / sqrt(mean(h^2) + eps)     fp64
//   QUANT 1: scale[row] = f32(max(amax |v| / 448, 1 / (448 * 512)));  QUANT 2: scale[0] given
//   y = e4m3(v / scale)                   from fp64, nearest even, saturated to +-448
// One block of 256 threads per row, tree reductions in shared memory. grid (T), block 256.
// Define: QUANT. Same arguments as rmsnorm_fp8.cuh.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if !defined(QUANT)
#error "rmsnorm reference_fp8.cuh needs -D QUANT"
#endif
#define REF_THREADS 256

// The sum (MAX 0) or max (MAX 1) of every thread's v over the block.
template <int MAX> static __device__ double ref_block_reduce(double v, double *red) {
  const int t = threadIdx.x;
  red[t] = v;
  __syncthreads();
  for (int off = REF_THREADS / 2; off > 0; off /= 2) {
    if (t < off) red[t] = MAX ? fmax(red[t], red[t + off]) : red[t] + red[t + off];
    __syncthreads();
  }
  const double r = red[0];
  __syncthreads();
  return r;
}

extern "C" __global__ void rmsnorm_fp8_reference(const __nv_bfloat16 *x, const __nv_bfloat16 *r,
                                                 const __nv_bfloat16 *w, unsigned char *y, __nv_bfloat16 *h,
                                                 float *scale, int T, int H, float eps) {
  __shared__ double red[REF_THREADS];
  const long long base = (long long)blockIdx.x * H;
  const int t = threadIdx.x;
  double ss = 0;
  for (int c = t; c < H; c += REF_THREADS) {
    const __nv_bfloat16 hv = __float2bfloat16_rn(__bfloat162float(x[base + c]) + __bfloat162float(r[base + c]));
    h[base + c] = hv;
    const double v = __bfloat162float(hv);
    ss += v * v;
  }
  const double inv = 1.0 / sqrt(ref_block_reduce<0>(ss, red) / H + (double)eps);
  double s;
  if (QUANT == 1) {
    double m = 0;
    for (int c = t; c < H; c += REF_THREADS)  // each thread re-reads only what it wrote itself
      m = fmax(m, fabs((double)__bfloat162float(h[base + c]) * (double)__bfloat162float(w[c]) * inv));
    const float sf = (float)fmax(ref_block_reduce<1>(m, red) / 448.0, 1.0 / (448.0 * 512.0));
    if (t == 0) scale[blockIdx.x] = sf;
    s = sf;
  } else {
    s = scale[0];
  }
  for (int c = t; c < H; c += REF_THREADS) {
    const double v = (double)__bfloat162float(h[base + c]) * (double)__bfloat162float(w[c]) * inv;
    y[base + c] = __nv_cvt_double_to_fp8(v / s, __NV_SATFINITE, __NV_E4M3);
  }
}
