// fp8_unpack.cuh: e4m3 (common/fp8.cuh) dequantized in registers, four bytes of a 32-bit word at a
// time, for kernels that compute on e4m3 data with CUDA cores or fp16 tensor cores (decode's fp8 KV
// cache).
//
//   e4m3x4_to_f32(w, f0..f3)       the four bytes of w (memory order) as fp32, exactly: the sm_89+
//                                  cvt.rn.f16x2.e4m3x2 (every e4m3 value is an fp16), then fp16 -> fp32
//   e4m3x4_to_f32_shifted(w, ...)  the same values times 2^-8 (1 / kE4m3ShiftScale), exactly, by
//                                  integer bit moves into fp16 instead of the cvt: the caller folds
//                                  kE4m3ShiftScale into a scale it applies anyway. NaN bytes are not
//                                  kept (0x7f reads as 480 * 2^-8).
//   e4m3x4_to_f16x2(w, h01, h23)   the four bytes as two fp16 pairs (bytes 0, 1 and 2, 3, the lower
//   e4m3x4_to_f16x2_shifted(...)   byte in the low half), exactly: the fragments of fp16 tensor-core
//                                  math; the shifted form times 2^-8 by the same bit moves
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

__device__ __forceinline__ void e4m3x4_to_f16x2_shifted(unsigned w, unsigned &h01, unsigned &h23) {
  h01 = e4m3x2_placed_to_f16x2_shifted(__byte_perm(w, 0u, 0x1404));
  h23 = e4m3x2_placed_to_f16x2_shifted(__byte_perm(w, 0u, 0x3424));
}

__device__ __forceinline__ void e4m3x4_to_f32_shifted(unsigned w, float &f0, float &f1, float &f2, float &f3) {
  unsigned h01, h23;
  e4m3x4_to_f16x2_shifted(w, h01, h23);
  f16x2_to_f32(h01, f0, f1);
  f16x2_to_f32(h23, f2, f3);
}

__device__ __forceinline__ void e4m3x4_to_f16x2(unsigned w, unsigned &h01, unsigned &h23) {
#if __CUDA_ARCH__ >= 890
  asm("{\n\t.reg .b16 lo, hi;\n\tmov.b32 {lo, hi}, %2;\n\tcvt.rn.f16x2.e4m3x2 %0, lo;\n\t"
      "cvt.rn.f16x2.e4m3x2 %1, hi;\n\t}"
      : "=r"(h01), "=r"(h23) : "r"(w));
#else
  // times 2^8 in fp16: exact (|e4m3| <= 448, and a shifted subnormal times 2^8 is representable)
  e4m3x4_to_f16x2_shifted(w, h01, h23);
  const unsigned k256 = 0x5c005c00u;  // (256, 256) in fp16
  asm("mul.rn.f16x2 %0, %0, %2;\n\tmul.rn.f16x2 %1, %1, %2;" : "+r"(h01), "+r"(h23) : "r"(k256));
#endif
}

__device__ __forceinline__ void e4m3x4_to_f32(unsigned w, float &f0, float &f1, float &f2, float &f3) {
  unsigned h01, h23;
  e4m3x4_to_f16x2(w, h01, h23);
  f16x2_to_f32(h01, f0, f1);
  f16x2_to_f32(h23, f2, f3);
}

}  // namespace tune
