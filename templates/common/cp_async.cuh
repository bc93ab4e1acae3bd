// cp_async.cuh: global -> shared asynchronous copies (cp.async, sm_80+) and their group fences.
// Shared by every tiled family that pipelines tiles through shared memory (GEMM, attention).
//
// Usage: issue g2s_copy16 for a tile, cp_async_commit() to close the group, and later
// cp_async_wait<N>() to wait until at most N of the most recent groups are still in flight,
// followed by __syncthreads() so that other threads' copies are visible too.
// An empty group (commit with no copy issued) is legal and completes at once: pipelines
// commit one group per step unconditionally so that the wait counts stay compile-time.
#pragma once

namespace tune {

// Shared-memory byte address of a generic pointer into shared memory (for PTX operands).
__device__ __forceinline__ unsigned smem_u32(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, cached in L2 only (.cg). Both addresses 16-byte aligned.
__device__ __forceinline__ void g2s_copy16(unsigned smem_addr, const void *gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr), "l"(gmem) : "memory");
}

// Close the group of copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Wait until at most N committed groups of this thread are still pending.
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace tune
