// wgmma.cuh: warpgroup tensor-core helpers (sm_90a only): shared-memory matrix descriptors, the
// wgmma fences, and (from the generated common/wgmma_ops.cuh) wgmma.mma_async m64nNk16 -> fp32 for
// bf16 and fp16 operands, A from shared memory (wgmma_ss_T) or registers (wgmma_rs_T).
// Used by GEMM (templates/gemm/gemm_sm90.cuh) and attention (templates/attention/prefill_sm90.cuh).
//
// A warpgroup is 4 consecutive warps whose first warp index is a multiple of 4. Every thread of it
// executes each wgmma_* call below (they are .sync.aligned). Order of use for one batch:
//   wgmma_fence_acc(acc); wgmma_arrive(); wgmma_m64nNk16_ss(...) x k; wgmma_commit();
//   ... wgmma_wait<n>(); wgmma_fence_acc(acc);
// wgmma_wait<n> returns once at most n committed batches of this warpgroup are still running; only
// then may the accumulators be read, or the shared memory the finished batches read be overwritten.
//
// Accumulator layout (fp32, m64nN, PTX ISA "wgmma D fragments"): warp w (0..3) of the warpgroup
// owns rows 16w .. 16w+15; with g = lane / 4, t = lane % 4, for each n8 chunk j (0 .. N/8-1):
//   d[4j + 0..1] = (row 16w + g,     cols 8j + 2t .. +1)
//   d[4j + 2..3] = (row 16w + g + 8, cols 8j + 2t .. +1)
//
// Descriptors (PTX ISA "matrix descriptor"): bits 0-13 start address >> 4, 16-29 leading byte
// offset >> 4, 32-45 stride byte offset >> 4, 49-51 base offset (0: tiles 1024-byte aligned),
// 62-63 swizzle (1 = 128-byte). With the 128-byte swizzle a row of 64 bf16 (128 bytes) holds its
// 16-byte chunk c at c ^ (row % 8) (address bits 4-6 ^= bits 7-9), so tiles must be 1024-byte aligned.
//   K-major operand (rows of 64 k, e.g. A [m][k], or B stored [n][k]): SBO = 1024 (8 rows of 128 B),
//     LBO unused (16); the k16 step kk starts 32 * kk bytes further (inside the swizzle atom).
//   MN-major operand (B stored [k][n] in column blocks of 64 n: block j = 64 rows of k x 128 B):
//     LBO = bytes between 64-wide n blocks, SBO = 1024 (8 k rows); the k16 step kk starts
//     kk * 2048 bytes further; pass TRANS_B = 1 to the wgmma.
#pragma once

#include "common/wgmma_ops.cuh"

namespace tune {

enum { kWgmmaSwizzleNone = 0, kWgmmaSwizzle128B = 1, kWgmmaSwizzle64B = 2, kWgmmaSwizzle32B = 3 };

// Descriptor of a shared-memory operand starting at byte address `smem_addr`.
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned smem_addr, unsigned lbo_bytes, unsigned sbo_bytes,
                                                         unsigned swizzle) {
  return (unsigned long long)((smem_addr & 0x3FFFFu) >> 4) |
         ((unsigned long long)((lbo_bytes & 0x3FFFFu) >> 4) << 16) |
         ((unsigned long long)((sbo_bytes & 0x3FFFFu) >> 4) << 32) | ((unsigned long long)swizzle << 62);
}

// A descriptor from its two 32-bit words. The start address (>> 4) is in the low word, so while every
// operand lies below 256 KiB of shared memory an operand moved by a multiple of 16 bytes is the same
// low word plus bytes >> 4: one add per wgmma instead of building each descriptor from an address.
__device__ __forceinline__ unsigned long long wgmma_desc_words(unsigned lo, unsigned hi) {
  unsigned long long d;
  asm("mov.b64 %0, {%1, %2};" : "=l"(d) : "r"(lo), "r"(hi));
  return d;
}

// The same descriptor moved by `bytes` (a multiple of 16) in shared memory.
__device__ __forceinline__ unsigned long long wgmma_desc_advance(unsigned long long desc, unsigned bytes) {
  return desc + (unsigned long long)(bytes >> 4);
}

// Make register and shared-memory writes of this warpgroup visible to the wgmma that follow.
__device__ __forceinline__ void wgmma_arrive() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// Close the batch of wgmma issued since the last commit.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Wait until at most N committed batches of this warpgroup are still running.
template <int N> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// A compiler-only fence on the accumulators: no read or write of them moves across it (they are
// written asynchronously by wgmma between the issue and wgmma_wait).
template <int R> __device__ __forceinline__ void wgmma_fence_acc(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

}  // namespace tune
