// bf16.cuh: bf16 pairs in one 32-bit register <-> two fp32. Shared by every family that reads or
// writes bf16 as raw words (vec.cuh's words, mma.cuh's fragments, decode's K/V vectors).
//
//   bf16_lo(w), bf16_hi(w)   element 2k (low half) / 2k+1 (high half) of the pair, exactly, as fp32
//   pack_bf16x2(lo, hi)      two fp32 -> one pair, each rounded to nearest even, lo in the low half
#pragma once

#include <cuda_bf16.h>

namespace tune {

__device__ __forceinline__ float bf16_lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }

__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned *>(&h);
}

}  // namespace tune
