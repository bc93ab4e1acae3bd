// fast_math.cuh: the float constants and SFU math that softmax-style code needs, where NVRTC has no
// <math.h> INFINITY and is not given --use_fast_math.
//
//   neg_inf()        -inf
//   exp2_approx(x)   2^x on the special-function unit (ex2.approx.ftz: 2^-inf = +0, relative error
//                    ~2^-22); what exp2f becomes under --use_fast_math
//   silu(x)          x * sigmoid(x) = x / (1 + 2^(-x log2 e)) with exp2_approx and a fast divide
//                    (SwiGLU's gate); x -> -inf gives x / inf = -0, the limit, not NaN
#pragma once

namespace tune {

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000u); }

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float silu(float x) { return __fdividef(x, 1.f + exp2_approx(-1.4426950408889634f * x)); }

}  // namespace tune
