// combine_reference.cuh: the plain weighted un-permutation every variant of moe/combine.cuh is checked
// against: one thread per output element, the top_k products and their sum in fp64 (exact products
// of an fp32 weight and a bf16 value), one rounding to bf16.
// grid (T, ceil(H / 256)), block 256. Same arguments as combine.cuh.
#include <cuda_bf16.h>

extern "C" __global__ void moe_combine_reference(const __nv_bfloat16 *y, const int *pos, const float *weights,
                                                 __nv_bfloat16 *out, int T, int H, int top_k) {
  const long long t = blockIdx.x;
  const int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= H) return;
  double sum = 0;
  for (int j = 0; j < top_k; ++j)
    sum += (double)weights[t * top_k + j] * (double)__bfloat162float(y[(long long)pos[t * top_k + j] * H + c]);
  out[t * H + c] = __double2bfloat16(sum);
}
