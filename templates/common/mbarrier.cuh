// mbarrier.cuh: shared-memory barriers (mbarrier, sm_80+ / sm_90 forms), the cp.async -> mbarrier
// completion hook, the generic -> async proxy fence, and register reallocation (setmaxnreg, sm_90a).
// Used by warp-specialized pipelines (GEMM Hopper path): producers fill a ring slot and arrive on its
// `full` barrier, consumers wait on it, use the slot and arrive on its `empty` barrier.
//
// Phases: a barrier initialised with count n completes a phase when n arrivals have happened; a
// waiter passes phase p (0, 1, 2, ...) by waiting for parity p & 1. Ring slot s is used for the u-th
// time (u = iteration / STAGES) in phase u of its barriers.
#pragma once

namespace tune {

// Initialise the barrier at `bar` (8-byte aligned shared address) to expect `count` arrivals per
// phase. One thread initialises; fence_mbar_init() then a block barrier publish it to the others.
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival (release semantics at CTA scope: this thread's earlier writes are visible to a
// thread that then passes the phase).
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// true once the phase with parity `parity` has completed (acquire semantics). Does not block long.
__device__ __forceinline__ bool mbar_try_wait(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}

// Block until the phase with parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}

// The barrier receives one arrival when all cp.async issued so far by this thread have landed
// (.noinc: the arrival counts against the barrier's expected count, so a barrier that P producer
// threads signal this way is initialised with count P).
__device__ __forceinline__ void cp_async_mbar_arrive_noinc(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// Order this thread's generic-proxy shared-memory accesses (ordinary stores, cp.async data it has
// seen complete) before its later async-proxy accesses (wgmma operand reads, TMA).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Register reallocation for a whole warpgroup (every thread of it executes the same call). Needs a
// register cap at kernel entry (__launch_bounds__(threads, 1)); N a multiple of 8 in 24..256.
template <int N> __device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> __device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// Named barrier `id` (1..15; 0 is __syncthreads) over `count` threads (a multiple of 32): sync waits
// until `count` threads have arrived or synced; arrive counts this warp without waiting.
__device__ __forceinline__ void named_bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

}  // namespace tune
