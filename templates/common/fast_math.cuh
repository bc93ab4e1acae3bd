// fast_math.cuh: the float constants and SFU math that softmax-style code needs, where NVRTC has no
// <math.h> INFINITY and is not given --use_fast_math.
//
//   neg_inf()        -inf
//   exp2_approx(x)   2^x on the special-function unit (ex2.approx.ftz: 2^-inf = +0, relative error
//                    ~2^-22); what exp2f becomes under --use_fast_math
#pragma once

namespace tune {

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000u); }

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace tune
