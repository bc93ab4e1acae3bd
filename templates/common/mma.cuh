// mma.cuh: warp-level tensor-core helpers (sm_80+): mma.sync m16n8k16 bf16 (or fp16) -> fp32 and
// ldmatrix loads of fragments from shared memory (fragments are packed with common/bf16.cuh).
// Shared by GEMM and attention families. Register fragments follow the PTX ISA layouts for
// mma.m16n8k16 (g = lane / 4, t = lane % 4):
//   A (16x16, row):  a[0] = (g, 2t..2t+1)   a[1] = (g+8, 2t..)   a[2] = (g, 2t+8..)   a[3] = (g+8, 2t+8..)
//   B (16x8, col):   b[0] = (k 2t..2t+1, n g)  b[1] = (k 2t+8.., n g)
//   C (16x8, fp32):  c[0..1] = (g, 2t..2t+1)   c[2..3] = (g+8, 2t..2t+1)
// Each A/B register holds two bf16, the lower column (or k) in the low half.
#pragma once
#include "common/bf16.cuh"

namespace tune {

// c += a * b for one m16n8k16 tile, bf16 inputs, fp32 accumulators (in place).
__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                               unsigned b1) {
  asm(  // pure register op: not volatile, so the compiler may schedule it freely
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The same with fp16 inputs (gemm/f16.cuh maps mma_bf16_16816 to it).
__device__ __forceinline__ void mma_f16_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ldmatrix is asm volatile: it reads shared memory that barriers order, so it must not be merged
// or hoisted across __syncthreads.
// Four 8x8 b16 matrices from shared memory; lane l gives the address of row (l % 8) of matrix l / 8
// (16 contiguous bytes, 16-byte aligned). r[i] receives matrix i in the "row" fragment layout:
// lane l holds row l / 4, columns 2 (l % 4) .. +1.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

// As ldmatrix_x4, transposed: lane l holds column l / 4, rows 2 (l % 4) .. +1 of each matrix.
// Gives B fragments of a k-major (row-major [k][n]) tile, e.g. V in P*V.
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

}  // namespace tune
