// swiglu_fp8_reference.cuh: the plain SwiGLU + e4m3 quantization every variant of swiglu_fp8.cuh is
// checked against, in fp64:
//   h = g / (1 + exp(-g)) * u            g = x[row][c], u = x[row][N + c], fp64
//   QUANT 1: scale[row][k] = f32(max(amax |h| of group k / 448, 1 / (448 * 512)))   (128 columns)
//   QUANT 2: scale[row]    = f32(max(amax |h| of the row / 448, 1 / (448 * 512)))
//   QUANT 3: scale[0] given
//   y = e4m3(h / scale)                  from fp64, nearest even, saturated to +-448
// One block of 256 threads per row; the group mode gives each thread whole groups, the token mode
// reduces the row in shared memory. grid (T), block 256. Define: QUANT. Same arguments as
// swiglu_fp8.cuh.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if !defined(QUANT)
#error "moe swiglu_fp8_reference.cuh needs -D QUANT"
#endif
#define REF_THREADS 256

static __device__ double ref_swiglu(const __nv_bfloat16 *g, int c, int N) {
  const double gv = __bfloat162float(g[c]), uv = __bfloat162float(g[N + c]);
  return gv / (1.0 + exp(-gv)) * uv;  // g -> -inf: g / inf = -0, the limit
}

static __device__ unsigned char ref_e4m3(double v) { return __nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E4M3); }

extern "C" __global__ void swiglu_fp8_reference(const __nv_bfloat16 *x, unsigned char *y, float *scale, int T, int N) {
  __shared__ double red[REF_THREADS];
  const long long row = blockIdx.x;
  const __nv_bfloat16 *g = x + row * 2 * N;
  unsigned char *yr = y + row * N;
  const int t = threadIdx.x;
  if (QUANT == 1) {
    const int groups = (N + 127) / 128;
    for (int k = t; k < groups; k += REF_THREADS) {
      const int c0 = k * 128, c1 = min(c0 + 128, N);
      double m = 0;
      for (int c = c0; c < c1; ++c) m = fmax(m, fabs(ref_swiglu(g, c, N)));
      const float s = (float)fmax(m / 448.0, 1.0 / (448.0 * 512.0));
      scale[row * groups + k] = s;
      for (int c = c0; c < c1; ++c) yr[c] = ref_e4m3(ref_swiglu(g, c, N) / s);
    }
    return;
  }
  double s;
  if (QUANT == 2) {
    double m = 0;
    for (int c = t; c < N; c += REF_THREADS) m = fmax(m, fabs(ref_swiglu(g, c, N)));
    red[t] = m;
    __syncthreads();
    for (int off = REF_THREADS / 2; off > 0; off /= 2) {
      if (t < off) red[t] = fmax(red[t], red[t + off]);
      __syncthreads();
    }
    const float sf = (float)fmax(red[0] / 448.0, 1.0 / (448.0 * 512.0));
    if (t == 0) scale[row] = sf;
    s = sf;
  } else {
    s = scale[0];
  }
  for (int c = t; c < N; c += REF_THREADS) yr[c] = ref_e4m3(ref_swiglu(g, c, N) / s);
}
