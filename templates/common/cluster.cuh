// cluster.cuh: thread-block cluster helpers (sm_90): this CTA's rank, the cluster's size and index,
// the cluster barrier, and loads from and stores to another CTA's shared memory (distributed shared
// memory). Used by the GEMM (split-K over a cluster) and softmax (a row over a cluster) templates.
#pragma once

namespace tune {

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_size() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}
// The cluster's index in the grid along x (uniform over its CTAs).
__device__ __forceinline__ unsigned cluster_id_x() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return r;
}
// Every thread of the cluster arrives and waits; shared-memory writes (local or remote) made before
// the arrive are visible to every thread of the cluster after the wait. Uniform control flow only.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// The float at the address of `local` (this CTA's shared memory) in CTA `rank` of the cluster.
__device__ __forceinline__ float ld_dsmem_f32(const float *local, unsigned rank) {
  const unsigned addr = (unsigned)__cvta_generic_to_shared(local);
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
  return v;
}

// Store v at the address of `local` (this CTA's shared memory) in CTA `rank` of the cluster.
__device__ __forceinline__ void st_dsmem_f2(float2 *local, unsigned rank, float2 v) {
  const unsigned addr = (unsigned)__cvta_generic_to_shared(local);
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};\n" ::"r"(remote), "f"(v.x), "f"(v.y) : "memory");
}
// 16 bytes of CTA `rank`'s shared memory at the shared-memory address `addr` has in this CTA.
__device__ __forceinline__ float4 ld_dsmem_f4(unsigned addr, unsigned rank) {
  unsigned remote;
  float4 v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}

}  // namespace tune
