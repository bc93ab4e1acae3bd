// decode_check.cu: standalone check and timing of one templates/attention/decode.cuh configuration.
//
// The configuration is compiled in (-D SPLITS BLOCK_N WARPS VEC_BYTES GQA_PACK [STAGES KV_HINT BLOCK_ORDER]
// HEAD_DIM PAGE_SIZE GQA_RATIO, see build_decode_check.sh); the problem comes from the command line:
//   decode_check --B 32 --HQ 32 --HKV 8 --L 4096 [--iters 50] [--warmup 10] [--seed 1] [--tag NAME]
// Phases: prepare (seeded normal q, K, V on the device; random page permutation as block table),
// verify (o and partial poisoned with NaN, split + combine vs attn_decode_reference, inputs
// unchanged), time (warmup, then `iters` split + combine pairs each between two cudaEvents, KV
// buffers rotated so that the working set is >= 4x L2, median), re-verify (one more run after timing
// must reproduce the first output bit for bit). One result line on stdout:
//   PASS|FAIL|SKIP tag problem rel_l2= max_abs= nan= median_us= min_us= kv_GBps= regs= local= blocks_per_sm=
// Exit status: 0 PASS or SKIP, 1 FAIL, 2 CUDA or usage error.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "attention/decode.cuh"
#include "attention/reference_decode.cuh"

// Same as recipes/attention/decode.lua.
static const double kTolRelL2 = 1e-2;
static const double kTolMaxAbs = 1e-2;

// One checked line per CUDA call: prints the call, file:line and the runtime's message, returns 2.
#define CK(call)                                                                                              \
  do {                                                                                                        \
    cudaError_t e_ = (call);                                                                                  \
    if (e_ != cudaSuccess) {                                                                                  \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));                \
      return 2;                                                                                               \
    }                                                                                                         \
  } while (0)

// ---------------------------------------------------------------------------------------------
// prepare

static __host__ __device__ uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// p[i] = N(0, 1) rounded to bf16, a pure function of (seed, i) (Box-Muller on a hash).
__global__ void fill_normal_bf16(bf16 *p, size_t n, uint64_t seed) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint64_t h = splitmix64(seed * 0x2545F4914F6CDD1Dull + i);
    const float u1 = ((float)(h >> 40) + 1.f) * (1.f / 16777217.f);  // (0, 1]
    const float u2 = (float)((h >> 16) & 0xFFFFFF) * (1.f / 16777216.f);
    p[i] = __float2bfloat16(sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
  }
}

static int fill_normal(bf16 *p, size_t n, uint64_t seed) {
  fill_normal_bf16<<<1024, 256>>>(p, n, seed);
  CK(cudaGetLastError());
  return 0;
}

static float bf16_to_float(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

struct problem {
  int B, HQ, HKV, L;
  int pages_per_seq, num_pages;
  size_t kv_elems;  // elements of one of k_cache / v_cache
  float scale_log2;
};

struct buffers {
  bf16 *q = nullptr, *o = nullptr, *o_ref = nullptr;
  int *block_table = nullptr;
  float *partial = nullptr;
  std::vector<bf16 *> k, v;  // KV copies rotated while timing; copy 0 is verified
  size_t partial_floats = 0;
};

static void free_buffers(buffers &m) {
  cudaFree(m.q); cudaFree(m.o); cudaFree(m.o_ref); cudaFree(m.block_table); cudaFree(m.partial);
  for (bf16 *p : m.k) cudaFree(p);
  for (bf16 *p : m.v) cudaFree(p);
}

// ---------------------------------------------------------------------------------------------
// run

static dim3 split_grid(const problem &p) { return dim3(GQA_PACK ? 1 : GQA_RATIO, SPLITS * p.HKV, p.B); }
static dim3 combine_grid(const problem &p) {
  return dim3(SPLITS == 1 ? 1 : (p.B * p.HQ + COMBINE_WARPS - 1) / COMBINE_WARPS);
}

// The variant under test: split then combine, the recipe's launch list.
static int launch_variant(const problem &p, const buffers &m, int copy) {
  if (decode::kRingBytes > 0)
    CK(cudaFuncSetAttribute(attn_decode_split, cudaFuncAttributeMaxDynamicSharedMemorySize, decode::kRingBytes));
  attn_decode_split<<<split_grid(p), decode::kThreads, decode::kRingBytes>>>(m.q, m.k[copy], m.v[copy], m.block_table, m.o, m.partial,
                                                         p.B, p.HQ, p.HKV, p.L, p.pages_per_seq, p.scale_log2);
  CK(cudaGetLastError());
  if (SPLITS == 1) return 0;  // the recipe does not launch the combine kernel (zero grid)
  attn_decode_combine<<<combine_grid(p), COMBINE_WARPS * 32>>>(m.q, m.k[copy], m.v[copy], m.block_table, m.o,
                                                               m.partial, p.B, p.HQ, p.HKV, p.L, p.pages_per_seq,
                                                               p.scale_log2);
  CK(cudaGetLastError());
  return 0;
}

static int poison_outputs(const buffers &m, const problem &p) {
  CK(cudaMemset(m.o, 0xFF, (size_t)p.B * p.HQ * HEAD_DIM * sizeof(bf16)));  // bf16 0xFFFF: NaN
  CK(cudaMemset(m.partial, 0xFF, m.partial_floats * sizeof(float)));       // f32 0xFFFFFFFF: NaN
  return 0;
}

static int read_o(const buffers &m, const problem &p, bf16 *src, std::vector<uint16_t> &dst) {
  dst.resize((size_t)p.B * p.HQ * HEAD_DIM);
  CK(cudaMemcpy(dst.data(), src, dst.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  return 0;
}

static int parse_args(int argc, char **argv, problem &p, int &iters, int &warmup, uint64_t &seed,
                      const char *&tag) {
  p.B = p.HQ = p.HKV = p.L = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--B")) p.B = atoi(v);
    else if (!strcmp(k, "--HQ")) p.HQ = atoi(v);
    else if (!strcmp(k, "--HKV")) p.HKV = atoi(v);
    else if (!strcmp(k, "--L")) p.L = atoi(v);
    else if (!strcmp(k, "--iters")) iters = atoi(v);
    else if (!strcmp(k, "--warmup")) warmup = atoi(v);
    else if (!strcmp(k, "--seed")) seed = strtoull(v, nullptr, 10);
    else if (!strcmp(k, "--tag")) tag = v;
    else return 1;
  }
  if ((argc - 1) % 2 || p.B <= 0 || p.HQ <= 0 || p.HKV <= 0 || p.L <= 0 || iters < 1 || warmup < 0) return 1;
  return 0;
}

int main(int argc, char **argv) {
  problem p;
  int iters = 50, warmup = 10;
  uint64_t seed = 1;
  const char *tag = "decode";
  if (parse_args(argc, argv, p, iters, warmup, seed, tag)) {
    fprintf(stderr, "usage: %s --B N --HQ N --HKV N --L N [--iters 50] [--warmup 10] [--seed 1] [--tag NAME]\n",
            argv[0]);
    return 2;
  }
  char pname[128];
  snprintf(pname, sizeof pname, "b%dhq%dhkv%dl%dd%d%s%d", p.B, p.HQ, p.HKV, p.L, HEAD_DIM,
           PAGE_SIZE == p.L ? "c" : "p", PAGE_SIZE);
  printf("# %s: SPLITS=%d BLOCK_N=%d WARPS=%d VEC_BYTES=%d GQA_PACK=%d STAGES=%d KV_HINT=%d BLOCK_ORDER=%d "
         "HEAD_DIM=%d PAGE_SIZE=%d GQA_RATIO=%d\n", tag, SPLITS, BLOCK_N, WARPS, VEC_BYTES, GQA_PACK, STAGES, KV_HINT,
         BLOCK_ORDER, HEAD_DIM, PAGE_SIZE, GQA_RATIO);

  // The recipe's `applies`, plus what the compiled-in constants fix.
  const char *skip = nullptr;
  if (p.HQ != p.HKV * GQA_RATIO) skip = "HQ != HKV * GQA_RATIO";
  else if (p.L % PAGE_SIZE) skip = "L is not a multiple of PAGE_SIZE";
  else if (p.L % (SPLITS * BLOCK_N)) skip = "L / SPLITS is not a multiple of BLOCK_N";
  if (skip) {
    printf("SKIP %s %s (%s)\n", tag, pname, skip);
    return 0;
  }
  p.pages_per_seq = p.L / PAGE_SIZE;
  p.num_pages = p.B * p.pages_per_seq;
  p.kv_elems = (size_t)p.num_pages * PAGE_SIZE * p.HKV * HEAD_DIM;
  p.scale_log2 = (float)(1.4426950408889634 / std::sqrt((double)HEAD_DIM));
  const double kv_bytes = 2.0 * p.kv_elems * sizeof(bf16);  // K + V read by one run

  // ---- prepare
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  buffers m;
  const size_t qo = (size_t)p.B * p.HQ * HEAD_DIM;
  m.partial_floats = (size_t)p.B * p.HQ * SPLITS * (HEAD_DIM + 2);
  CK(cudaMalloc(&m.q, qo * sizeof(bf16)));
  CK(cudaMalloc(&m.o, qo * sizeof(bf16)));
  CK(cudaMalloc(&m.o_ref, qo * sizeof(bf16)));
  CK(cudaMalloc(&m.block_table, (size_t)p.num_pages * sizeof(int)));
  CK(cudaMalloc(&m.partial, m.partial_floats * sizeof(float)));
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  int copies = (int)std::ceil(4.0 * prop.l2CacheSize / kv_bytes);
  copies = std::max(1, std::min(copies, 64));
  copies = std::max(1, std::min(copies, (int)(0.8 * free_b / kv_bytes)));
  for (int c = 0; c < copies; ++c) {
    bf16 *k = nullptr, *v = nullptr;
    CK(cudaMalloc(&k, p.kv_elems * sizeof(bf16)));
    m.k.push_back(k);
    CK(cudaMalloc(&v, p.kv_elems * sizeof(bf16)));
    m.v.push_back(v);
    if (fill_normal(k, p.kv_elems, seed * 1000 + 2 * c + 1) || fill_normal(v, p.kv_elems, seed * 1000 + 2 * c + 2))
      return 2;
  }
  if (fill_normal(m.q, qo, seed * 1000 + 999)) return 2;
  std::vector<int> bt(p.num_pages);  // [B, pages_per_seq]: a random permutation of all pages
  for (int i = 0; i < p.num_pages; ++i) bt[i] = i;
  uint64_t rng = seed;
  for (int i = p.num_pages - 1; i > 0; --i) {
    rng = splitmix64(rng);
    std::swap(bt[i], bt[(int)(rng % (uint64_t)(i + 1))]);
  }
  CK(cudaMemcpy(m.block_table, bt.data(), bt.size() * sizeof(int), cudaMemcpyHostToDevice));
  std::vector<uint16_t> q_before(qo);
  CK(cudaMemcpy(q_before.data(), m.q, qo * sizeof(bf16), cudaMemcpyDeviceToHost));

  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, attn_decode_split));
  int blocks_per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, attn_decode_split, decode::kThreads, 0));

  // ---- verify
  if (poison_outputs(m, p)) return 2;
  CK(cudaMemset(m.o_ref, 0xFF, qo * sizeof(bf16)));
  if (launch_variant(p, m, 0)) return 2;
  CK(cudaDeviceSynchronize());
  attn_decode_reference<<<dim3(p.HQ, p.B), HEAD_DIM>>>(m.q, m.k[0], m.v[0], m.block_table, m.o_ref, nullptr, p.B,
                                                       p.HQ, p.HKV, p.L, p.pages_per_seq, p.scale_log2);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> o1, oref;
  if (read_o(m, p, m.o, o1) || read_o(m, p, m.o_ref, oref)) return 2;
  double se = 0, sr = 0, max_abs = 0;
  long nan = 0, ref_nan = 0;
  long first_bad = -1;
  for (size_t i = 0; i < qo; ++i) {
    const double a = bf16_to_float(o1[i]), r = bf16_to_float(oref[i]);
    if (!std::isfinite(r)) { ++ref_nan; continue; }
    if (!std::isfinite(a)) { ++nan; if (first_bad < 0) first_bad = (long)i; continue; }
    se += (a - r) * (a - r);
    sr += r * r;
    if (std::fabs(a - r) > max_abs) max_abs = std::fabs(a - r);
    if (std::fabs(a - r) > kTolMaxAbs && first_bad < 0) first_bad = (long)i;
  }
  const double rel_l2 = sr > 0 ? std::sqrt(se / sr) : (se > 0 ? INFINITY : 0.0);
  bool ok = nan == 0 && ref_nan == 0 && rel_l2 <= kTolRelL2 && max_abs <= kTolMaxAbs;
  const char *why = "";
  if (ref_nan) why = "reference produced NaN";
  else if (nan) why = "NaN in o";
  else if (!ok) why = "error over tolerance";
  if (first_bad >= 0) {
    const long d = first_bad % HEAD_DIM, hq = (first_bad / HEAD_DIM) % p.HQ, b = first_bad / HEAD_DIM / p.HQ;
    fprintf(stderr, "first mismatch: o[b=%ld, hq=%ld, d=%ld] = %g, reference %g\n", b, hq, d,
            bf16_to_float(o1[first_bad]), bf16_to_float(oref[first_bad]));
  }
  std::vector<uint16_t> q_after(qo);
  std::vector<int> bt_after(p.num_pages);
  CK(cudaMemcpy(q_after.data(), m.q, qo * sizeof(bf16), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(bt_after.data(), m.block_table, bt.size() * sizeof(int), cudaMemcpyDeviceToHost));
  if (q_after != q_before || bt_after != bt) {
    ok = false;
    why = "an input was written";
  }

  // ---- time (warmup, then one event pair per run; median)
  std::vector<cudaEvent_t> ev(2 * iters);
  for (auto &e : ev) CK(cudaEventCreate(&e));
  for (int i = 0; i < warmup; ++i)
    if (launch_variant(p, m, i % copies)) return 2;
  for (int i = 0; i < iters; ++i) {
    CK(cudaEventRecord(ev[2 * i]));
    if (launch_variant(p, m, (warmup + i) % copies)) return 2;
    CK(cudaEventRecord(ev[2 * i + 1]));
  }
  CK(cudaEventSynchronize(ev[2 * iters - 1]));
  std::vector<float> ms(iters);
  for (int i = 0; i < iters; ++i) CK(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
  for (auto &e : ev) CK(cudaEventDestroy(e));
  std::sort(ms.begin(), ms.end());
  const double median_us = 1e3 * ms[iters / 2], min_us = 1e3 * ms[0];

  // ---- re-verify: the same inputs must give the same bits after many runs (races, stale partials)
  if (poison_outputs(m, p) || launch_variant(p, m, 0)) return 2;
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> o2;
  if (read_o(m, p, m.o, o2)) return 2;
  if (ok && o2 != o1) {
    ok = false;
    why = "second run differs from the first";
  }

  printf("%s %s %s rel_l2=%.2e max_abs=%.2e nan=%ld median_us=%.1f min_us=%.1f kv_GBps=%.0f regs=%d local=%zu "
         "blocks_per_sm=%d kv_copies=%d%s%s\n",
         ok ? "PASS" : "FAIL", tag, pname, rel_l2, max_abs, nan, median_us, min_us, kv_bytes / (median_us * 1e3),
         fa.numRegs, fa.localSizeBytes, blocks_per_sm, copies, ok ? "" : " why=", ok ? "" : why);
  free_buffers(m);
  return ok ? 0 : 1;
}
