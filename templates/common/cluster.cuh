// cluster.cuh: thread-block clusters (sm_90): the CTA's rank, cluster-wide barriers, arrivals on an
// mbarrier of another CTA of the cluster, and TMA multicast (one bulk tensor copy written into the
// shared memory of several CTAs). Used by the GEMM Hopper path with CLUSTER_M x CLUSTER_N > 1
// (templates/gemm/gemm_sm90.cuh). Kept apart from mbarrier.cuh and tma.cuh so that the families
// that include those (attention) are not rebuilt or re-versioned by it.
//
// A kernel using these must be launched with a cluster dimension (cudaLaunchKernelEx with
// cudaLaunchAttributeClusterDimension, or __cluster_dims__); without one every CTA is rank 0 of a
// cluster of 1 and a multicast mask naming other ranks is undefined behaviour, so such kernels check
// cluster_nctarank() first.
//
// Shared-memory addresses: a CTA's own shared::cta address (smem_u32) is valid in the shared::cluster
// window for that CTA; mapa turns it into the address of the same offset in CTA `rank`. A multicast
// TMA copy writes the box at the same CTA-relative offset in every CTA of its mask and signals the
// mbarrier at the same offset in each of them (complete_tx of the bytes that CTA received).
#pragma once

#include "common/tma.cuh"

namespace tune {

__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ unsigned cluster_nctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}

// Cluster-wide barrier: every (non-exited) thread of every CTA of the cluster arrives, then waits.
// Release/acquire: shared-memory state written before the arrive (mbarrier inits published by
// fence_mbar_init) is visible to the other CTAs after their wait. Not .aligned: callable from
// divergent code.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

// The shared::cluster address of offset `smem_addr` (this CTA's shared::cta address) in CTA `rank`.
__device__ __forceinline__ unsigned cluster_map_shared(unsigned smem_addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(smem_addr), "r"(rank));
  return r;
}

// One arrival on the mbarrier at offset `bar` of CTA `rank` (possibly this CTA). Default semantics
// (release at CTA scope), as a ring's consumer release needs: the arrival only has to follow the
// reads of the slot, which wgmma_wait has already completed, and the consumers write nothing the
// producer reads. The .release.cluster form costs a MEMBAR.ALL.GPU before every arrival (it also
// waits for the epilogue's global stores), and its matching .acquire.cluster wait a CCTL.IVALL
// (L1 invalidation) per wait in the producer: both in the ring's hot loop.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned rank) {
  const unsigned remote = cluster_map_shared(bar, rank);
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

// Box at (c0, c1) of the 2-D tensor map -> shared memory at offset `dst` of every CTA whose rank bit
// is set in `cta_mask`; each of them gets complete_tx of the box's bytes on its mbarrier at offset
// `bar`.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const tensormap &m, int c0, int c1, unsigned bar,
                                                      unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(tensormap_addr(m)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}

}  // namespace tune
