// fp8_pack.cuh: fp32 -> e4m3 (common/fp8.cuh) in registers, the encode of kernels that quantize
// their outputs: round to nearest even, saturated to +-448 (satfinite: a value past 448, infinity
// included, becomes +-448; NaN stays NaN). cuda_fp8.h's conversion, which is one
// cvt.rn.satfinite.e4m3x2.f32 per pair on sm_89+.
//
//   f32x2_to_e4m3x2(lo, hi)        two values -> two bytes in the low 16 bits (lo first in memory)
//   f32x4_to_e4m3x4(f0, f1, f2, f3)   four values -> one 32-bit word, in memory order
#pragma once

#include <cuda_fp8.h>

namespace tune {

__device__ __forceinline__ unsigned f32x2_to_e4m3x2(float lo, float hi) {
  return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3);
}

__device__ __forceinline__ unsigned f32x4_to_e4m3x4(float f0, float f1, float f2, float f3) {
  return f32x2_to_e4m3x2(f0, f1) | (f32x2_to_e4m3x2(f2, f3) << 16);
}

}  // namespace tune
