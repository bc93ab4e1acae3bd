// reference.cuh: the plain y = silu(x * scale + bias) every variant of elementwise.cuh is checked
// against. One thread per element, fp32 math with expf and a true division, rounded once to bf16.
#include <cuda_bf16.h>

extern "C" __global__ void silu_scale_bias_reference(const __nv_bfloat16 *x, const __nv_bfloat16 *scale,
                                                     const __nv_bfloat16 *bias, __nv_bfloat16 *y, int rows,
                                                     int cols) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * cols) return;
  const int c = (int)(i % cols);
  const float t = __bfloat162float(x[i]) * __bfloat162float(scale[c]) + __bfloat162float(bias[c]);
  y[i] = __float2bfloat16_rn(t / (1.0f + expf(-t)));
}
