// gemm_cluster_check.cu: standalone check and timing of one thread-block-cluster configuration of
// templates/gemm/gemm.cuh (PATH 1, TMA producer, CLUSTER_M x CLUSTER_N CTAs sharing a and b tiles
// through TMA multicast), against the repo's reference kernel and cuBLAS, on the same GPU in one
// process. Needs no tune engine support for clusters: it launches with cudaLaunchKernelEx and the
// cluster-dimension attribute itself.
//
// Compiled per configuration (tools/check/gemm_cluster_check.sh): -D BLOCK_M BLOCK_N CONSUMERS STAGES
// PERSISTENT RASTER B_COL CLUSTER_M CLUSTER_N (CLUSTER 1 x 1 is the non-cluster baseline, launched the
// same way). Usage:
//   gemm_cluster_check --shapes 4096x4096x4096,8192x8192x8192 [--iters 30] [--tag NAME]
// Per shape: seeded N(0, 1) bf16 a and b (b stored [K][N], or [N][K] with B_COL), tensor maps as
// recipes/gemm.lua's gemm.cluster describes them (tmA box {64, BLOCK_M / CLUSTER_N}, tmB box {64,
// BLOCK_N / CLUSTER_M} (B_COL) or {64, 64}); c poisoned with NaN, then compared with
// templates/gemm/reference.cuh (recipes/gemm.lua's tolerances) and with cuBLAS (cublasGemmEx, bf16 in,
// fp32 compute, bf16 out); then `iters` timed runs of the variant and of cuBLAS, interleaved, each
// between its own cudaEvents (median; no L2 flush, the same for both). The grid is the recipe's
// (persistent: its one-wave estimate rounded down to whole clusters); the number of clusters the
// device can hold at once (cudaOccupancyMaxActiveClusters) is printed beside it.
// One line per shape:
//   PASS|FAIL tag MxNxK rel_l2= max_abs= nan= vs_cublas_rel_l2= us= tflops= cublas_us= cublas_tflops=
//   ratio= grid= clusters_resident=
// ratio = cuBLAS time / variant time (> 1: faster than cuBLAS). Exit status: 0 all PASS, 1 a FAIL,
// 2 a CUDA, cuBLAS or usage error.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define PATH 1
#define WS 1
#define USE_TMA 1
#define SETMAXNREG 1
#define TMA_ARGS 1
#include "gemm/gemm.cuh"
#include "gemm/reference.cuh"

static const double kTolRelL2 = 1e-2, kTolMaxAbs = 8;  // recipes/gemm.lua
static const int kCS = CLUSTER_M * CLUSTER_N;

#define CK(call)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));    \
      return 2;                                                                                   \
    }                                                                                             \
  } while (0)
#define CB(call)                                                                                  \
  do {                                                                                            \
    cublasStatus_t s_ = (call);                                                                   \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                            \
      fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, (int)s_);       \
      return 2;                                                                                   \
    }                                                                                             \
  } while (0)

// bf16 N(0, 1) from a hash of (seed, i): Box-Muller.
__global__ void fill_normal(bf16 *p, size_t n, unsigned long long seed) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 27; x *= 0x94D049BB133111EBull; x ^= x >> 31;
    const float u1 = ((x >> 40) + 1) * (1.0f / 16777217.0f), u2 = ((x >> 16) & 0xffffff) * (1.0f / 16777216.0f);
    p[i] = __float2bfloat16(sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
  }
}

// The map of a [rows][cols] bf16 tensor, box {64, box_rows}, 128-byte swizzle (docs/tensormap-args.md).
static CUresult encode(tune::tensormap *m, const void *ptr, uint64_t cols, uint64_t rows, uint32_t box_rows) {
  cuuint64_t dims[2] = {cols, rows}, strides[1] = {cols * 2};
  cuuint32_t box[2] = {64, box_rows}, estr[2] = {1, 1};
  static_assert(sizeof(tune::tensormap) == sizeof(CUtensorMap), "tensormap layout");
  return cuTensorMapEncodeTiled(reinterpret_cast<CUtensorMap *>(m), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                                const_cast<void *>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

static float bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// rel_l2, max_abs and NaN count of x against y.
static void compare(const std::vector<uint16_t> &x, const std::vector<uint16_t> &y, double *rel, double *max_abs,
                    long long *nan) {
  double num = 0, den = 0, mx = 0;
  long long bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double a = bf2f(x[i]), b = bf2f(y[i]);
    if (!std::isfinite(a)) { ++bad; continue; }
    num += (a - b) * (a - b);
    den += b * b;
    mx = std::max(mx, std::fabs(a - b));
  }
  *rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  *max_abs = mx;
  *nan = bad;
}

// The recipe's persistent grid (recipes/gemm.lua persistent_blocks, setmaxnreg estimate of 168
// registers): one wave of resident blocks, at most one per tile, rounded down to whole clusters.
static int recipe_persistent_grid(int tiles, int sms) {
  const int smem = gemm_path::kSmemBytes, threads = gemm_path::kThreads;
  int per_sm = std::min(233472 / (smem + 1024), 2048 / threads);
  per_sm = std::max(1, std::min(per_sm, 65536 / (threads * 168)));
  int blocks = std::min(tiles, sms * per_sm);
  return std::max(kCS, blocks / kCS * kCS);
}

static cudaError_t launch(dim3 grid, const bf16 *a, const bf16 *b, bf16 *c, float *ws, int M, int N, int K,
                          const tune::tensormap &tmA, const tune::tensormap &tmB) {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  cfg.gridDim = grid;
  cfg.blockDim = dim3(gemm_path::kThreads, 1, 1);
  cfg.dynamicSmemBytes = gemm_path::kSmemBytes;
  cfg.stream = 0;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = kCS;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, gemm_bf16, a, b, c, ws, M, N, K, tmA, tmB);
}

// c = a @ B with cuBLAS (column-major): c^T [N][M] = B^T a^T.
static cublasStatus_t cublas_gemm(cublasHandle_t h, const bf16 *a, const bf16 *b, bf16 *c, int M, int N, int K) {
  const float one = 1.f, zero = 0.f;
  return cublasGemmEx(h, B_COL ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, b, CUDA_R_16BF, B_COL ? K : N,
                      a, CUDA_R_16BF, K, &zero, c, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

static int run_shape(cublasHandle_t h, int M, int N, int K, int iters, const char *tag, int sms, int *failed) {
  const int tiles_m = (M + BLOCK_M - 1) / BLOCK_M, tiles_n = N / BLOCK_N;
  if (N % BLOCK_N || K % 64 || M < 1 || tiles_m % CLUSTER_M || tiles_n % CLUSTER_N) {
    fprintf(stderr, "%s m%dn%dk%d: need N %% BLOCK_N == 0, K %% 64 == 0 and tile rows / columns divisible by the cluster\n",
            tag, M, N, K);
    return 2;
  }
  bf16 *a, *b, *c, *ref, *cb;
  float *ws;
  CK(cudaMalloc(&a, (size_t)M * K * 2));
  CK(cudaMalloc(&b, (size_t)K * N * 2));
  CK(cudaMalloc(&c, (size_t)M * N * 2));
  CK(cudaMalloc(&ref, (size_t)M * N * 2));
  CK(cudaMalloc(&cb, (size_t)M * N * 2));
  CK(cudaMalloc(&ws, 16));
  fill_normal<<<1024, 256>>>(a, (size_t)M * K, 1);
  fill_normal<<<1024, 256>>>(b, (size_t)K * N, 2);
  CK(cudaGetLastError());
  tune::tensormap tmA, tmB;
  CUresult r = encode(&tmA, a, K, M, BLOCK_M / CLUSTER_N);
  if (r == CUDA_SUCCESS) r = B_COL ? encode(&tmB, b, K, N, BLOCK_N / CLUSTER_M) : encode(&tmB, b, N, K, 64);
  if (r != CUDA_SUCCESS) { fprintf(stderr, "cuTensorMapEncodeTiled: error %d\n", (int)r); return 2; }
  gemm_reference<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(a, b, ref, ws, M, N, K, tmA, tmB);
  CK(cudaGetLastError());
  CB(cublas_gemm(h, a, b, cb, M, N, K));
  // grid: the recipe's launch geometry
  const int tiles = tiles_m * tiles_n;
  const int grid = PERSISTENT ? recipe_persistent_grid(tiles, sms) : tiles;
  int resident = -1;
  {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    cfg.gridDim = dim3(grid, 1, 1);
    cfg.blockDim = dim3(gemm_path::kThreads, 1, 1);
    cfg.dynamicSmemBytes = gemm_path::kSmemBytes;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = kCS;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CK(cudaOccupancyMaxActiveClusters(&resident, gemm_bf16, &cfg));
  }
  CK(cudaMemset(c, 0xff, (size_t)M * N * 2));  // NaN
  CK(launch(dim3(grid), a, b, c, ws, M, N, K, tmA, tmB));
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> hc((size_t)M * N), hr((size_t)M * N), hb((size_t)M * N);
  CK(cudaMemcpy(hc.data(), c, hc.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hr.data(), ref, hr.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hb.data(), cb, hb.size() * 2, cudaMemcpyDeviceToHost));
  double rel, max_abs, rel_cb, max_abs_cb;
  long long nan, nan_cb;
  compare(hc, hr, &rel, &max_abs, &nan);
  compare(hc, hb, &rel_cb, &max_abs_cb, &nan_cb);
  // timing: variant and cuBLAS interleaved, each run between its own events
  cudaEvent_t e[4];
  for (auto &ev : e) CK(cudaEventCreate(&ev));
  std::vector<float> t_var(iters), t_cub(iters);
  for (int i = 0; i < 3; ++i) {
    CK(launch(dim3(grid), a, b, c, ws, M, N, K, tmA, tmB));
    CB(cublas_gemm(h, a, b, cb, M, N, K));
  }
  for (int i = 0; i < iters; ++i) {
    CK(cudaEventRecord(e[0]));
    CK(launch(dim3(grid), a, b, c, ws, M, N, K, tmA, tmB));
    CK(cudaEventRecord(e[1]));
    CB(cublas_gemm(h, a, b, cb, M, N, K));
    CK(cudaEventRecord(e[2]));
    CK(cudaEventSynchronize(e[2]));
    CK(cudaEventElapsedTime(&t_var[i], e[0], e[1]));
    CK(cudaEventElapsedTime(&t_cub[i], e[1], e[2]));
  }
  CK(cudaGetLastError());
  std::sort(t_var.begin(), t_var.end());
  std::sort(t_cub.begin(), t_cub.end());
  const double us = t_var[iters / 2] * 1e3, us_cb = t_cub[iters / 2] * 1e3, flop = 2.0 * M * N * K;
  const bool pass = nan == 0 && rel <= kTolRelL2 && max_abs <= kTolMaxAbs;
  if (!pass) *failed = 1;
  printf("%s %s m%dn%dk%d rel_l2=%.3g max_abs=%.3g nan=%lld vs_cublas_rel_l2=%.3g us=%.1f tflops=%.1f cublas_us=%.1f "
         "cublas_tflops=%.1f ratio=%.3f grid=%d clusters_resident=%d\n",
         pass ? "PASS" : "FAIL", tag, M, N, K, rel, max_abs, nan, rel_cb, us, flop / us / 1e6, us_cb, flop / us_cb / 1e6,
         us_cb / us, grid, resident);
  fflush(stdout);
  for (auto &ev : e) CK(cudaEventDestroy(ev));
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(c));
  CK(cudaFree(ref));
  CK(cudaFree(cb));
  CK(cudaFree(ws));
  return 0;
}

int main(int argc, char **argv) {
  std::string shapes = "4096x4096x4096,8192x8192x8192";
  int iters = 30;
  const char *tag = "gemm_cluster";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--shapes")) shapes = argv[i + 1];
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--tag")) tag = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  if (iters < 1) { fprintf(stderr, "--iters must be >= 1\n"); return 2; }
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaFuncSetAttribute(gemm_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize, gemm_path::kSmemBytes));
  cublasHandle_t h;
  CB(cublasCreate(&h));
  int failed = 0, rc = 0;
  size_t pos = 0;
  while (pos < shapes.size() && rc == 0) {
    size_t end = shapes.find(',', pos);
    if (end == std::string::npos) end = shapes.size();
    int M = 0, N = 0, K = 0;
    if (sscanf(shapes.substr(pos, end - pos).c_str(), "%dx%dx%d", &M, &N, &K) != 3) {
      fprintf(stderr, "bad shape '%s' (want MxNxK)\n", shapes.substr(pos, end - pos).c_str());
      rc = 2;
      break;
    }
    rc = run_shape(h, M, N, K, iters, tag, sms, &failed);
    pos = end + 1;
  }
  cublasDestroy(h);
  return rc ? rc : failed;
}
