// softmax_cluster_check.cu: runs one configuration of templates/softmax/softmax.cuh (built with its
// defines by tools/check/softmax_cluster_build.sh; meant for CLUSTER > 1 and ROWS > 1, which tune's
// engine may not launch yet) outside tune, on random input, against a CPU fp64 reference, and times
// it against cudaMemcpy device-to-device of the same bytes.
//
//   softmax_cluster_<tag> ROWS_OF_X [samples]
//
// x ~ normal(0, 3) (the recipe's init), fixed seed. Checks: relative L2 and max abs error against
// the reference within the recipe's tolerance (1e-2, 1e-2), no NaN; with CLUSTER > 1 also that a
// launch WITHOUT the cluster attribute writes nothing (the kernel's guard). Timing: each sample is
// preceded by a memset of 2x the L2 size (tune's flush) and measured with cudaEvents around the one
// launch (or the one cudaMemcpy of rows * COLS * 2 bytes: the copy reads and writes what softmax
// does); median of the samples. Prints one line per measurement and exits 1 on a failed check.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "softmax/softmax.cuh"

#define CK(call)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return 2;                                                                               \
    }                                                                                         \
  } while (0)

static float bf16_to_float(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t float_to_bf16(float f) {  // round to nearest even (finite inputs)
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// The recipe's launch geometry (recipes/softmax.lua, launch.grid) for this build's defines.
static unsigned grid_for(int rows, int sms) {
  if (CLUSTER > 1) return (unsigned)rows * CLUSTER;
  long long groups = rows;
  if (ROW_MODE == 0) {
    const int rpb = BLOCK / 32 * ROWS;
    groups = (rows + rpb - 1) / rpb;
  }
  if (PERSIST > 0) groups = std::min<long long>(groups, (long long)sms * PERSIST);
  return (unsigned)groups;
}

static cudaError_t launch(const bf16 *x, bf16 *y, int rows, int sms, bool with_cluster) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid_for(rows, sms), 1, 1);
  cfg.blockDim = dim3(BLOCK, 1, 1);
  cudaLaunchAttribute attr[1];
  if (with_cluster && CLUSTER > 1) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = CLUSTER;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&cfg, softmax_row, x, y, rows);
}

struct errs {
  double rel_l2, max_abs;
  long long nan;
};
static errs compare(const std::vector<uint16_t> &y, const std::vector<double> &ref) {
  double num = 0, den = 0, mx = 0;
  long long nan = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double v = bf16_to_float(y[i]);
    if (std::isnan(v)) { ++nan; continue; }
    const double d = v - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
    mx = std::max(mx, std::fabs(d));
  }
  return {std::sqrt(num / den), mx, nan};
}

static double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s ROWS [samples]\n", argv[0]);
    return 2;
  }
  const int rows = atoi(argv[1]);
  const int samples = argc > 2 ? atoi(argv[2]) : 50;
  const long long n = (long long)rows * COLS;
  const double bytes = 4.0 * (double)n;  // x read once, y written once (bf16)
  int dev = 0, sms = 0, l2 = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  printf("config: COLS=%d ROW_MODE=%d BLOCK=%d VEC_BYTES=%d EXP_ONCE=%d CLUSTER=%d ROWS=%d X_HINT=%d; rows %d, grid %u\n",
         COLS, ROW_MODE, BLOCK, VEC_BYTES, EXP_ONCE, CLUSTER, ROWS, X_HINT, rows, grid_for(rows, sms));

  // input and the fp64 reference
  std::vector<uint16_t> hx(n), hy(n);
  std::vector<double> ref(n);
  std::mt19937_64 rng(12345);
  std::normal_distribution<float> nd(0.f, 3.f);
  for (long long i = 0; i < n; ++i) hx[i] = float_to_bf16(nd(rng));
  for (int r = 0; r < rows; ++r) {
    const uint16_t *xr = &hx[(size_t)r * COLS];
    double m = -INFINITY, s = 0;
    for (int c = 0; c < COLS; ++c) m = std::max(m, (double)bf16_to_float(xr[c]));
    for (int c = 0; c < COLS; ++c) s += std::exp((double)bf16_to_float(xr[c]) - m);
    for (int c = 0; c < COLS; ++c) ref[(size_t)r * COLS + c] = std::exp((double)bf16_to_float(xr[c]) - m) / s;
  }

  bf16 *x = nullptr, *y = nullptr;
  void *flush = nullptr;
  const size_t flush_bytes = 2 * (size_t)l2;
  CK(cudaMalloc(&x, n * 2));
  CK(cudaMalloc(&y, n * 2));
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMemcpy(x, hx.data(), n * 2, cudaMemcpyHostToDevice));
  int bad = 0;

  if (CLUSTER > 1) {  // the guard: no cluster attribute -> nothing written
    CK(cudaMemset(y, 0xff, n * 2));  // 0xffff: a bf16 NaN
    CK(launch(x, y, rows, sms, false));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hy.data(), y, n * 2, cudaMemcpyDeviceToHost));
    long long written = 0;
    for (long long i = 0; i < n; ++i) written += hy[i] != 0xffff;
    printf("launch without cluster: %lld of %lld outputs written (want 0): %s\n", written, n, written ? "FAIL" : "ok");
    bad |= written != 0;
  }

  CK(cudaMemset(y, 0xff, n * 2));
  CK(launch(x, y, rows, sms, true));
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hy.data(), y, n * 2, cudaMemcpyDeviceToHost));
  const errs e = compare(hy, ref);
  const bool ok = e.nan == 0 && e.rel_l2 <= 1e-2 && e.max_abs <= 1e-2;
  printf("check vs fp64 CPU: rel_l2 %.3e  max_abs %.3e  NaN %lld: %s\n", e.rel_l2, e.max_abs, e.nan, ok ? "ok" : "FAIL");
  bad |= !ok;

  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  std::vector<float> tk, tc;
  for (int i = 0; i < samples + 3; ++i) {  // 3 warm-ups each
    float ms;
    CK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
    CK(cudaEventRecord(t0));
    CK(launch(x, y, rows, sms, true));
    CK(cudaEventRecord(t1));
    CK(cudaEventSynchronize(t1));
    CK(cudaEventElapsedTime(&ms, t0, t1));
    if (i >= 3) tk.push_back(ms);
    CK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
    CK(cudaEventRecord(t0));
    CK(cudaMemcpyAsync(y, x, n * 2, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(t1));
    CK(cudaEventSynchronize(t1));
    CK(cudaEventElapsedTime(&ms, t0, t1));
    if (i >= 3) tc.push_back(ms);
  }
  const double k_us = median(tk) * 1e3, c_us = median(tc) * 1e3;
  printf("softmax: %.2f us  %.1f GB/s | cudaMemcpy D2D of the same bytes: %.2f us  %.1f GB/s | softmax / copy: %.1f %%\n",
         k_us, bytes / k_us / 1e3, c_us, bytes / c_us / 1e3, 100.0 * c_us / k_us);
  printf("(cudaEvent medians of %d samples, 2x L2 memset before each; event timing adds ~1-2 us of launch overhead to both)\n",
         samples);
  return bad;
}
