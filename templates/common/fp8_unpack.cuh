// fp8_unpack.cuh: e4m3 (common/fp8.cuh) dequantized in registers, four bytes of a 32-bit word at a
// time, for kernels that compute on e4m3 data with CUDA cores (decode's fp8 KV cache).
//
//   e4m3x4_to_f32(w, f0..f3)       the four bytes of w (memory order) as fp32, exactly: the sm_89+
//                                  cvt.rn.f16x2.e4m3x2 (every e4m3 value is an fp16), then fp16 -> fp32
//   e4m3x4_to_f32_shifted(w, ...)  the same values times 2^-8 (1 / kE4m3ShiftScale), exactly, by
//                                  integer bit moves into fp16 instead of the cvt: the caller folds
//                                  kE4m3ShiftScale into a scale it applies anyway. NaN bytes are not
//                                  kept (0x7f reads as 480 * 2^-8).
#pragma once

#include "common/fp8.cuh"

namespace tune {

// An fp16 pair (low half first) -> two fp32, exactly.
__device__ __forceinline__ void f16x2_to_f32(unsigned h, float &lo, float &hi) {
  asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}"
      : "=f"(lo), "=f"(hi) : "r"(h));
}

// e4m3 bytes b0 (bits 8..15 of y) and b1 (bits 24..31), the rest of y zero -> an fp16 pair of their
// values times 2^-8: the sign to bit 15 of its half, exponent and mantissa (7 bits) to bits 7..13.
// The e4m3 exponent (bias 7) lands in the low 4 bits of fp16's (bias 15) and e4m3 subnormals become
// fp16 subnormals of the same mantissa: every value is scaled by exactly 2^(7 - 15).
__device__ __forceinline__ unsigned e4m3x2_placed_to_f16x2_shifted(unsigned y) {
  return (y & 0x80008000u) | ((y >> 1) & 0x3f803f80u);
}

constexpr float kE4m3ShiftScale = 256.f;  // 2^(15 - 7): e4m3x4_to_f32_shifted's values times this

__device__ __forceinline__ void e4m3x4_to_f32_shifted(unsigned w, float &f0, float &f1, float &f2, float &f3) {
  f16x2_to_f32(e4m3x2_placed_to_f16x2_shifted(__byte_perm(w, 0u, 0x1404)), f0, f1);  // bytes 0, 1
  f16x2_to_f32(e4m3x2_placed_to_f16x2_shifted(__byte_perm(w, 0u, 0x3424)), f2, f3);  // bytes 2, 3
}

__device__ __forceinline__ void e4m3x4_to_f32(unsigned w, float &f0, float &f1, float &f2, float &f3) {
#if __CUDA_ARCH__ >= 890
  unsigned h01, h23;
  // the low byte of each 16-bit source goes to the low half of its fp16 pair
  asm("{\n\t.reg .b16 lo, hi;\n\tmov.b32 {lo, hi}, %2;\n\tcvt.rn.f16x2.e4m3x2 %0, lo;\n\t"
      "cvt.rn.f16x2.e4m3x2 %1, hi;\n\t}"
      : "=r"(h01), "=r"(h23) : "r"(w));
  f16x2_to_f32(h01, f0, f1);
  f16x2_to_f32(h23, f2, f3);
#else
  e4m3x4_to_f32_shifted(w, f0, f1, f2, f3);
  f0 *= kE4m3ShiftScale; f1 *= kE4m3ShiftScale; f2 *= kE4m3ShiftScale; f3 *= kE4m3ShiftScale;
#endif
}

}  // namespace tune
