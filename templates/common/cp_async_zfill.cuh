// cp_async_zfill.cuh: predicated global -> shared copies (cp.async, sm_80+) for tiles that hang over
// a matrix edge. Shared by tiled families whose problem sizes need not be multiples of the tile
// (GEMM rows). Complements cp_async.cuh (same group fences: cp_async_commit / cp_async_wait).
#pragma once

namespace tune {

// 16 bytes global -> shared when `valid`, else 16 zero bytes to shared memory (no global read:
// `gmem` must still be a mapped address, e.g. the tensor's first element). Cached in L2 only (.cg).
__device__ __forceinline__ void g2s_copy16_zfill(unsigned smem_addr, const void *gmem, bool valid) {
  const unsigned src_bytes = valid ? 16u : 0u;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem), "r"(src_bytes)
               : "memory");
}

}  // namespace tune
