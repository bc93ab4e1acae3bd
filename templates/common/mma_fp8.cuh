// mma_fp8.cuh: the warp-level e4m3 tensor-core op (mma.sync m16n8k32, sm_89+), beside common/mma.cuh's
// 16-bit ones. Its register fragments cover the same bytes as m16n8k16's (g = lane / 4, t = lane % 4):
//   A (16x32, row):  a[0] = (g, k 4t..4t+3)   a[1] = (g+8, 4t..)   a[2] = (g, 16+4t..)   a[3] = (g+8, 16+4t..)
//   B (32x8, col):   b[0] = (k 4t..4t+3, n g)  b[1] = (k 16+4t.., n g)
//   C (16x8, fp32):  as m16n8k16
// each register four e4m3, the lowest k in the low byte; so common/mma.cuh's ldmatrix addressing of a
// 16-bit tile (a k16 step = 32 bytes of a row) loads a k32 step of e4m3 unchanged.
// On sm_90a it is not a tensor-core instruction: ptxas lowers each one to 12 e4m3 -> fp16 unpacks
// (F2FP) and two fp16 HMMA (SASS and ncu in data/runs/, skinny-ncu), about 3x the issue slots of a
// bf16 m16n8k16; Hopper's fp8 tensor cores are reached through wgmma only.
#pragma once

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

}  // namespace tune
