// tma.cuh: bulk tensor copies (TMA, cp.async.bulk.tensor, sm_90) from a tensor map into shared
// memory, completing on an mbarrier (common/mbarrier.cuh). Used by the GEMM Hopper path when built
// with USE_TMA (templates/gemm/gemm_sm90.cuh); docs/tensormap-args.md specifies how a recipe asks the
// worker for the tensor maps.
//
// A tensor map is the driver's 128-byte CUtensorMap (cuTensorMapEncodeTiled on the host), passed to
// the kernel by value as a `const __grid_constant__ tune::tensormap` parameter so that its address
// is a kernel-parameter address (the only kind TMA accepts besides global memory). Coordinates are
// element indices, innermost dimension first; out-of-bounds box elements are filled with zeros and
// still count towards the transaction bytes.
#pragma once

namespace tune {

// Layout-compatible with CUtensorMap (cuda.h), which NVRTC programs cannot include.
struct alignas(64) tensormap {
  unsigned long long opaque[16];
};

// Generic address of a __grid_constant__ tensor map parameter, as the TMA instructions take it.
__device__ __forceinline__ unsigned long long tensormap_addr(const tensormap &m) {
  return reinterpret_cast<unsigned long long>(&m);
}

// Fetch the tensor map's descriptor into the TMA unit's cache ahead of the first copy (optional).
__device__ __forceinline__ void tma_prefetch_desc(const tensormap &m) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tensormap_addr(m)) : "memory");
}

// One arrival on `bar` that also expects `bytes` more transaction bytes in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// Box at (c0, c1) of the 2-D tensor map -> shared memory at `dst` (aligned as the map's swizzle
// needs: 1024 bytes for 128-byte swizzle); completes `bytes` of transaction on `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const tensormap &m, int c0, int c1, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(tensormap_addr(m)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// The same for a box at (c0, c1, c2, c3) of a 4-D tensor map.
__device__ __forceinline__ void tma_load_4d(unsigned dst, const tensormap &m, int c0, int c1, int c2, int c3,
                                            unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
      "l"(tensormap_addr(m)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

}  // namespace tune
