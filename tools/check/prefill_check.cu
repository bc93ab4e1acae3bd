// prefill_check.cu: standalone check and timing of one compiled variant of attention/prefill.cuh.
//
// Built once per config by tools/check/build_prefill_check.sh (the tunables and HEAD_DIM, IS_CAUSAL
// arrive as -D defines); run by tools/check/run_prefill_check.sh.
//
//   usage: prefill_<tag> B HQ HKV S [iters]      (D and causal are compiled in)
//
// Phases: prepare (random normal q, k, v drawn on the device from a fixed seed; o poisoned with NaN),
// verify (variant vs attn_prefill_reference: rel-L2, max-abs, NaN count), warmup, run (iters timed
// launches, one cudaEvent pair each), re-verify (the last timed output must equal the first bit for
// bit: a difference means a race), summarize (one line). Exit status: 0 PASS, 1 FAIL, 2 SKIP or
// usage, 3 CUDA error.
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#include "attention/prefill.cuh"
#include "attention/reference_prefill.cuh"

#define CK_EXIT 3 /* a CUDA error; 1 is a wrong result */
#include "cuda_check.h"
#define CUDA_TRY CK

#define STR2(x) #x
#define STR(x) STR2(x)
static const char *kConfig = "BM" STR(BLOCK_M) " BN" STR(BLOCK_N) " W" STR(WARPS) " ST" STR(STAGES)
                             " SW" STR(SWIZZLE) " SCH" STR(SCHED) " D" STR(HEAD_DIM) " C" STR(IS_CAUSAL);

static const double kTolRelL2 = 2e-2;   // same as recipes/attention/prefill.lua
static const double kTolMaxAbs = 5e-2;

// Counter-based normal(0, 1) (splitmix64 hash + Box-Muller): reproducible, no state.
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
__global__ void init_normal(bf16 *x, size_t n, unsigned long long seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const unsigned long long r = mix64(seed * 0x9e3779b97f4a7c15ull + i);
    const float u1 = ((r >> 40) + 1) * (1.0f / 16777217.0f);          // (0, 1]
    const float u2 = ((r >> 16) & 0xffffff) * (1.0f / 16777216.0f);   // [0, 1)
    x[i] = __float2bfloat16(sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
  }
}

static float bf16_to_float(unsigned short h) {
  unsigned u = (unsigned)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

struct ErrStats {
  double rel_l2, max_abs;
  size_t nan_count;
};
static ErrStats compare(const std::vector<unsigned short> &out, const std::vector<unsigned short> &ref) {
  double num = 0, den = 0, mx = 0;
  size_t nans = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double a = bf16_to_float(out[i]), r = bf16_to_float(ref[i]);
    if (!std::isfinite(a)) { ++nans; continue; }
    num += (a - r) * (a - r);
    den += r * r;
    mx = std::max(mx, std::fabs(a - r));
  }
  return {den > 0 ? std::sqrt(num / den) : std::sqrt(num), mx, nans};
}

static dim3 variant_grid(int B, int HQ, int S) {
  return dim3(S / BLOCK_M / (SCHED == 2 ? 2 : 1), HQ, B);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s B HQ HKV S [iters]   (compiled: %s)\n", argv[0], kConfig);
    return 2;
  }
  const int B = atoi(argv[1]), HQ = atoi(argv[2]), HKV = atoi(argv[3]), S = atoi(argv[4]);
  const int iters = argc > 5 ? atoi(argv[5]) : 20;
  const int D = HEAD_DIM;
  char problem[128];
  snprintf(problem, sizeof problem, "B%d HQ%d HKV%d S%d D%d %s", B, HQ, HKV, S, D,
           IS_CAUSAL ? "causal" : "full");
  const char *why = nullptr;
  if (B < 1 || HQ < 1 || HKV < 1 || S < 1 || iters < 1) why = "bad sizes";
  else if (HQ % HKV) why = "HQ % HKV != 0";
  else if (S % BLOCK_M || S % BLOCK_N) why = "S not a multiple of BLOCK_M and BLOCK_N";
  else if (SCHED == 2 && (S / BLOCK_M) % 2) why = "SCHED=2 needs an even number of query tiles";
  if (why) {
    printf("SKIP  %-44s | %-34s | %s\n", kConfig, problem, why);
    return 2;
  }

  // --- prepare
  const size_t nq = (size_t)B * HQ * S * D, nkv = (size_t)B * HKV * S * D;
  bf16 *q, *k, *v, *o, *oref;
  CUDA_TRY(cudaMalloc(&q, nq * 2));
  CUDA_TRY(cudaMalloc(&k, nkv * 2));
  CUDA_TRY(cudaMalloc(&v, nkv * 2));
  CUDA_TRY(cudaMalloc(&o, nq * 2));
  CUDA_TRY(cudaMalloc(&oref, nq * 2));
  init_normal<<<1024, 256>>>(q, nq, 1);
  CUDA_TRY(cudaGetLastError());
  init_normal<<<1024, 256>>>(k, nkv, 2);
  CUDA_TRY(cudaGetLastError());
  init_normal<<<1024, 256>>>(v, nkv, 3);
  CUDA_TRY(cudaGetLastError());
  CUDA_TRY(cudaMemset(o, 0xff, nq * 2));     // 0xffff is a bf16 NaN
  CUDA_TRY(cudaMemset(oref, 0xff, nq * 2));

  const float scale_log2 = (float)(1.4426950408889634 / std::sqrt((double)D));
  const int smem = attn_prefill_smem_bytes;
  CUDA_TRY(cudaFuncSetAttribute(attn_prefill, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaFuncAttributes fa;
  CUDA_TRY(cudaFuncGetAttributes(&fa, attn_prefill));
  const dim3 grid = variant_grid(B, HQ, S), block(WARPS * 32);

  // --- verify
  attn_prefill<<<grid, block, smem>>>(q, k, v, o, B, HQ, HKV, S, scale_log2);
  CUDA_TRY(cudaGetLastError());
  CUDA_TRY(cudaDeviceSynchronize());
  attn_prefill_reference<<<dim3((S + 127) / 128, HQ, B), 128>>>(q, k, v, oref, B, HQ, HKV, S, scale_log2);
  CUDA_TRY(cudaGetLastError());
  CUDA_TRY(cudaDeviceSynchronize());
  std::vector<unsigned short> h_o(nq), h_ref(nq), h_o2(nq);
  CUDA_TRY(cudaMemcpy(h_o.data(), o, nq * 2, cudaMemcpyDeviceToHost));
  CUDA_TRY(cudaMemcpy(h_ref.data(), oref, nq * 2, cudaMemcpyDeviceToHost));
  const ErrStats err = compare(h_o, h_ref);
  const ErrStats ref_self = compare(h_ref, h_ref);  // the reference must have written everything

  // --- warmup, run
  for (int i = 0; i < 3; ++i) attn_prefill<<<grid, block, smem>>>(q, k, v, o, B, HQ, HKV, S, scale_log2);
  CUDA_TRY(cudaGetLastError());
  std::vector<cudaEvent_t> ev(2 * iters);
  for (auto &e : ev) CUDA_TRY(cudaEventCreate(&e));
  for (int i = 0; i < iters; ++i) {
    CUDA_TRY(cudaEventRecord(ev[2 * i]));
    attn_prefill<<<grid, block, smem>>>(q, k, v, o, B, HQ, HKV, S, scale_log2);
    CUDA_TRY(cudaEventRecord(ev[2 * i + 1]));
  }
  CUDA_TRY(cudaGetLastError());
  CUDA_TRY(cudaDeviceSynchronize());
  std::vector<float> ms(iters);
  for (int i = 0; i < iters; ++i) CUDA_TRY(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
  std::sort(ms.begin(), ms.end());
  const double med_ms = iters % 2 ? ms[iters / 2] : 0.5 * (ms[iters / 2 - 1] + ms[iters / 2]);

  // --- re-verify: the last timed run must reproduce the first output exactly
  CUDA_TRY(cudaMemcpy(h_o2.data(), o, nq * 2, cudaMemcpyDeviceToHost));
  const bool stable = memcmp(h_o.data(), h_o2.data(), nq * 2) == 0;

  // --- summarize
  const double flops = 4.0 * B * HQ * (double)S * S * D * (IS_CAUSAL ? 0.5 : 1.0);
  const double tflops = flops / (med_ms * 1e-3) / 1e12;
  const bool pass = err.nan_count == 0 && ref_self.nan_count == 0 && err.rel_l2 <= kTolRelL2 &&
                    err.max_abs <= kTolMaxAbs && stable;
  printf("%s  %-44s | %-34s | rel_l2 %.2e max_abs %.2e nan %zu%s%s | regs %d local %zuB smem %dB | "
         "%8.3f ms %7.1f TFLOP/s\n",
         pass ? "PASS" : "FAIL", kConfig, problem, err.rel_l2, err.max_abs, err.nan_count,
         stable ? "" : " UNSTABLE", ref_self.nan_count ? " REF-NAN" : "", fa.numRegs, fa.localSizeBytes,
         smem, med_ms, tflops);

  for (auto &e : ev) CUDA_TRY(cudaEventDestroy(e));
  CUDA_TRY(cudaFree(q));
  CUDA_TRY(cudaFree(k));
  CUDA_TRY(cudaFree(v));
  CUDA_TRY(cudaFree(o));
  CUDA_TRY(cudaFree(oref));
  return pass ? 0 : 1;
}
