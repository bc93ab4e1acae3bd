// mma_fp8.cuh: the warp-level e4m3 tensor-core op (mma.sync m16n8k32, sm_89+), beside common/mma.cuh's
// 16-bit ones. Its register fragments cover the same bytes as m16n8k16's (g = lane / 4, t = lane % 4):
//   A (16x32, row):  a[0] = (g, k 4t..4t+3)   a[1] = (g+8, 4t..)   a[2] = (g, 16+4t..)   a[3] = (g+8, 16+4t..)
//   B (32x8, col):   b[0] = (k 4t..4t+3, n g)  b[1] = (k 16+4t.., n g)
//   C (16x8, fp32):  as m16n8k16
// each register four e4m3, the lowest k in the low byte; so common/mma.cuh's ldmatrix addressing of a
// 16-bit tile (a k16 step = 32 bytes of a row) loads a k32 step of e4m3 unchanged.
// On sm_90a it is not a tensor-core instruction: ptxas lowers it to e4m3 -> fp16 unpacks (F2FP) of
// both fragments and two fp16 HMMA (SASS and ncu in data/runs/, skinny-ncu: about 3x the issue slots
// per byte of a bf16 m16n8k16); Hopper's fp8 tensor cores are reached through wgmma only.
//
// The same tile spelled out as two fp16 m16n8k16 (every e4m3 value is an fp16, products exact in the
// fp32 accumulators): unpack_a_e4m3 turns an A fragment into the A fragments of both k16 halves,
// unpack_b_e4m3 a B fragment, mma_e4m3_16832_unpacked multiplies them. ptxas shares an A fragment's
// unpacks between the e4m3 mmas that read it as well (the same F2FP count in skinny.cuh's SASS); what
// the spelled-out form adds is a choice of accumulators (skinny.cuh, MMA 1). The k16 half j holds k
// 16j + 4t + {0, 1} where m16n8k16 expects k' 2t + {0, 1}, and 16j + 4t + {2, 3} at k' 8 + 2t + {0, 1},
// in A and B alike, so each sum has the same products.
#pragma once

#include "common/fp8_unpack.cuh"
#include "common/mma.cuh"

namespace tune {

// c += a * b for one m16n8k32 tile, e4m3 inputs, fp32 accumulators (in place).
__device__ __forceinline__ void mma_e4m3_16832(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm(  // pure register op: not volatile, so the compiler may schedule it freely
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d = a * b for one m16n8k32 tile (a zero accumulator in): starts a chain without zeroing d first.
__device__ __forceinline__ void mma_e4m3_16832_first(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.f));
}

// a (m16n8k32 e4m3 A fragment) -> h[j]: the fp16 m16n8k16 A fragment of k16 half j.
__device__ __forceinline__ void unpack_a_e4m3(const unsigned (&a)[4], unsigned (&h)[2][4]) {
  e4m3x4_to_f16x2(a[0], h[0][0], h[0][2]);
  e4m3x4_to_f16x2(a[1], h[0][1], h[0][3]);
  e4m3x4_to_f16x2(a[2], h[1][0], h[1][2]);
  e4m3x4_to_f16x2(a[3], h[1][1], h[1][3]);
}

// b0, b1 (m16n8k32 e4m3 B fragment) -> hb: the fp16 m16n8k16 B fragments, {hb[0], hb[1]} of k16 half 0,
// {hb[2], hb[3]} of half 1.
__device__ __forceinline__ void unpack_b_e4m3(unsigned b0, unsigned b1, unsigned (&hb)[4]) {
  e4m3x4_to_f16x2(b0, hb[0], hb[1]);
  e4m3x4_to_f16x2(b1, hb[2], hb[3]);
}

// c += a * b for one m16n8k32 e4m3 tile from its unpacked fragments (unpack_a_e4m3, unpack_b_e4m3).
__device__ __forceinline__ void mma_e4m3_16832_unpacked(float (&c)[4], const unsigned (&ha)[2][4],
                                                        const unsigned (&hb)[4]) {
  mma_f16_16816(c, ha[0], hb[0], hb[1]);
  mma_f16_16816(c, ha[1], hb[2], hb[3]);
}

}  // namespace tune
