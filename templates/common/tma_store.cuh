// tma_store.cuh: bulk tensor stores (TMA, sm_90): a box of shared memory to a tensor through its
// tensor map (common/tma.cuh), tracked by bulk async-groups instead of an mbarrier. Used by the GEMM
// Hopper path's epilogue (templates/gemm/gemm_sm90.cuh, USE_TMA without split-K).
#pragma once

#include "common/tma.cuh"

namespace tune {

// Shared memory at `src` (laid out as the map's box and swizzle; 1024-byte aligned for 128-byte
// swizzle) -> the box at (c0, c1) of the tensor; elements outside the tensor are not written. A bulk
// async-group operation: bulk_commit_group closes the group, bulk_wait_group_read<N> waits until at most
// N of this thread's groups still read shared memory, bulk_wait_group<N> until their writes are done.
__device__ __forceinline__ void tma_store_2d(const tensormap &m, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(tensormap_addr(m)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N> __device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace tune
