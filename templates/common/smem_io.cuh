// smem_io.cuh: small moves between registers, shared and global memory by shared-memory address,
// for kernels that keep per-thread rings in dynamic shared memory (decode's KV ring):
//
//   s2r_load16(addr, w)      16 bytes of shared memory at addr (16-byte aligned) into four words
//   s2r_load_f32(addr)       one float of shared memory at addr
//   g2s_copy4(addr, gmem)    cp.async of 4 bytes global -> shared (.ca: the L1 keeps them, small
//                            values that several threads of a block read), both 4-byte aligned;
//                            committed and waited for as common/cp_async.cuh's 16-byte copies
#pragma once

namespace tune {

__device__ __forceinline__ void s2r_load16(unsigned addr, unsigned (&w)[4]) {
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "r"(addr));
}

__device__ __forceinline__ float s2r_load_f32(unsigned addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr));
  return v;
}

__device__ __forceinline__ void g2s_copy4(unsigned smem_addr, const void *gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr), "l"(gmem) : "memory");
}

}  // namespace tune
