// mma_frag.cuh: fragment moves for mma.sync m16n8k16 with fp16 or bf16 inputs (layouts in
// common/mma.cuh), for kernels that build fragments in registers rather than with ldmatrix (decode's
// tensor-core path).
//
//   pack_f16x2(lo, hi)               two fp32 -> an fp16 pair (round to nearest even), lo in the low half
//   movmatrix_trans(x)               8x8 b16 transpose across the warp: lane l gives row l / 4,
//                                    columns 2 (l % 4) .. +1 and gets rows 2 (l % 4) .. +1 of column l / 4
//                                    (the row fragment of a k-major tile becomes a B fragment)
//   mma_f16_16816_rows8(c, a0, a2, b0, b1)
//                                    c += A B where A's rows 8..15 are zero: only the fragment rows g
//                                    (a[0], a[2]; c[0..1]) are passed and kept, so a kernel with at
//                                    most 8 rows of A holds half the accumulators
//   mma_bf16_16816_rows8(...)        the same with bf16 inputs
//   split_bf16x2(x, y, hi, lo)       two fp32 as two bf16 pairs whose sum keeps about 16 significant
//                                    bits: hi = bf16(x, y), lo = bf16 of what hi left out (an A operand
//                                    multiplied twice, hi and lo, loses less than one bf16 rounding)
#pragma once

#include "common/bf16.cuh"

namespace tune {

__device__ __forceinline__ unsigned pack_f16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));  // the first source is the high half
  return r;
}

__device__ __forceinline__ unsigned movmatrix_trans(unsigned x) {
  unsigned r;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(x));
  return r;
}

__device__ __forceinline__ void mma_f16_16816_rows8(float (&c)[2], unsigned a0, unsigned a2, unsigned b0, unsigned b1) {
  float unused2, unused3;  // rows 8..15 of the product: zero, dropped
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %5}, {%7, %8}, {%0, %1, %9, %9};\n"
      : "+f"(c[0]), "+f"(c[1]), "=f"(unused2), "=f"(unused3)
      : "r"(a0), "r"(0u), "r"(a2), "r"(b0), "r"(b1), "f"(0.f));
}

__device__ __forceinline__ void mma_bf16_16816_rows8(float (&c)[2], unsigned a0, unsigned a2, unsigned b0,
                                                     unsigned b1) {
  float unused2, unused3;  // rows 8..15 of the product: zero, dropped
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %5}, {%7, %8}, {%0, %1, %9, %9};\n"
      : "+f"(c[0]), "+f"(c[1]), "=f"(unused2), "=f"(unused3)
      : "r"(a0), "r"(0u), "r"(a2), "r"(b0), "r"(b1), "f"(0.f));
}

__device__ __forceinline__ void split_bf16x2(float x, float y, unsigned &hi, unsigned &lo) {
  hi = pack_bf16x2(x, y);
  lo = pack_bf16x2(x - bf16_lo(hi), y - bf16_hi(hi));
}

}  // namespace tune
