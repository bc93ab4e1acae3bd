// reference.cuh: the plain RMSNorm every variant of rmsnorm.cuh is checked against.
// One block of 256 threads per row, fp32, tree reduction in shared memory, 1 / sqrtf.
//   RESIDUAL 0: y = x / sqrt(mean(x^2) + eps) * w
//   RESIDUAL 1: h = bf16(x + r); y = h / sqrt(mean(h^2) + eps) * w   (h as stored, in fp32)
// grid (T), block 256. Define: RESIDUAL. Same arguments as rmsnorm.cuh (the hidden size H one of them).
#include <cuda_bf16.h>

#if !defined(RESIDUAL)
#error "rmsnorm reference.cuh needs -D RESIDUAL"
#endif
#define REF_THREADS 256

static __device__ void ref_rmsnorm_row(const __nv_bfloat16 *x, const __nv_bfloat16 *r, const __nv_bfloat16 *w,
                                       __nv_bfloat16 *y, __nv_bfloat16 *h, int H, float eps) {
  __shared__ float red[REF_THREADS];
  const long long base = (long long)blockIdx.x * H;
  const int t = threadIdx.x;
  float ss = 0.f;
  for (int c = t; c < H; c += REF_THREADS) {
    float v = __bfloat162float(x[base + c]);
    if (RESIDUAL) {
      const __nv_bfloat16 hv = __float2bfloat16_rn(v + __bfloat162float(r[base + c]));
      h[base + c] = hv;
      v = __bfloat162float(hv);
    }
    ss += v * v;
  }
  red[t] = ss;
  __syncthreads();
  for (int off = REF_THREADS / 2; off > 0; off /= 2) {
    if (t < off) red[t] += red[t + off];
    __syncthreads();
  }
  const float inv = 1.0f / sqrtf(red[0] / H + eps);
  for (int c = t; c < H; c += REF_THREADS) {
    // each thread re-reads only what it wrote itself
    const float v = RESIDUAL ? __bfloat162float(h[base + c]) : __bfloat162float(x[base + c]);
    y[base + c] = __float2bfloat16_rn(v * inv * __bfloat162float(w[c]));
  }
}

#if RESIDUAL
extern "C" __global__ void rmsnorm_reference(const __nv_bfloat16 *x, const __nv_bfloat16 *r, const __nv_bfloat16 *w,
                                             __nv_bfloat16 *y, __nv_bfloat16 *h, int T, int H, float eps) {
  ref_rmsnorm_row(x, r, w, y, h, H, eps);
}
#else
extern "C" __global__ void rmsnorm_reference(const __nv_bfloat16 *x, const __nv_bfloat16 *w, __nv_bfloat16 *y, int T,
                                             int H, float eps) {
  ref_rmsnorm_row(x, nullptr, w, y, nullptr, H, eps);
}
#endif
