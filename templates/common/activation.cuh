// activation.cuh: activation functions of fused epilogues.
//   silu(x)          x * sigmoid(x) = x / (1 + 2^(-x log2 e)) with exp2_approx and a fast divide
//                    (SwiGLU's gate); x -> -inf gives x / inf = -0, the limit, not NaN
#pragma once

#include "common/fast_math.cuh"

namespace tune {

__device__ __forceinline__ float silu(float x) { return __fdividef(x, 1.f + exp2_approx(-1.4426950408889634f * x)); }

}  // namespace tune
