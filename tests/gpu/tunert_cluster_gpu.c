/* tunert_cluster_gpu: launches the cluster fixture (tests/fixtures/recipes/cluster.lua) from a bundle
 * through libtunert on a GPU and checks every output exactly (tests/gpu/cluster_gpu_test.sh).
 *
 *   tunert_cluster_gpu BUNDLE
 *
 * For each tuned problem and for NB=62,ROWS=2 (not tuned: nearest, where the CL=4 variant is refused):
 * select, check that the selection has a cluster (> 1 block), launch (cuLaunchKernelEx with the
 * cluster dimension inside libtunert), and check out[y][x] == x ^ 1, which the kernel writes only when
 * it ran in a cluster of the size the variant asked for (it reads its neighbour's blockIdx.x through
 * distributed shared memory). Prints one line per problem.
 * Exit: 0 all good, 1 a failure, 77 no driver or GPU. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunert.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CU_FUNCS(X) \
  X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyDtoH) \
  X(cuMemsetD8) X(cuCtxSynchronize)
static struct {
#define FIELD(f) __typeof__(&f) f;
  CU_FUNCS(FIELD)
#undef FIELD
} cu;

static int n_fail;

/* One problem: 0 good, 1 a failure (printed). */
static int run_problem(tunert_ctx *ctx, const char *label, const int64_t *dims, int n_dims) {
  tunert_err e;
  const tunert_selection *s;
  if (tunert_select(ctx, "cluster", dims, n_dims, &s, &e)) { printf("%-10s select failed: %s\n", label, e.msg); return 1; }
  tunert_selection_info si = {.struct_size = sizeof si};
  tunert_selection_info_get(s, &si);
  if (!si.clusters || si.n_launches != 1) { printf("%-10s no cluster info (libtunert before 0.3?)\n", label); return 1; }
  const unsigned *c = si.clusters[0];
  int nb = -1, rows = -1, i_out = -1;
  for (int a = 0; a < si.n_args; ++a) {
    if (!strcmp(si.args[a].name, "nb")) nb = (int)si.args[a].value;
    else if (!strcmp(si.args[a].name, "rows")) rows = (int)si.args[a].value;
    else if (!strcmp(si.args[a].name, "out")) i_out = a;
  }
  if (nb < 1 || rows < 1 || i_out < 0 || si.n_args != 3) { printf("%-10s unexpected args\n", label); return 1; }
  size_t n = (size_t)nb * rows;
  CUdeviceptr out = 0;
  int *host = malloc(n * sizeof *host);
  if (!host || cu.cuMemAlloc(&out, n * 4) || cu.cuMemsetD8(out, 0xff, n * 4)) { printf("%-10s device memory\n", label); free(host); return 1; }
  tunert_arg args[3];
  for (int a = 0; a < 3; ++a) args[a] = a == i_out ? tunert_arg_devptr(out) : tunert_arg_auto();
  int rc = tunert_launch(ctx, s, NULL, args, 3, &e);
  CUresult sr = cu.cuCtxSynchronize();
  long wrong = 0, first = -1;
  if (!rc && sr == CUDA_SUCCESS && !cu.cuMemcpyDtoH(host, out, n * 4))
    for (size_t i = 0; i < n; ++i)
      if (host[i] != (int)((i % (size_t)nb) ^ 1u)) { if (first < 0) first = (long)i; ++wrong; }
  int bad = rc || sr != CUDA_SUCCESS || wrong || c[0] * c[1] * c[2] < 2;
  printf("%-10s %-24s grid (%u, %u, %u) cluster (%u, %u, %u) %-6s %s", label, si.variant, si.launches[0].grid[0],
         si.launches[0].grid[1], si.launches[0].grid[2], c[0], c[1], c[2], si.exact ? "exact" : "nearest", bad ? "FAIL" : "ok");
  if (rc) printf(" (launch: %s)", e.msg);
  else if (sr != CUDA_SUCCESS) printf(" (synchronize: error %d)", (int)sr);
  else if (wrong) printf(" (%ld of %zu wrong, first out[%ld] = %d)", wrong, n, first, host[first]);
  printf("\n");
  cu.cuMemFree(out);
  free(host);
  return bad;
}

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: tunert_cluster_gpu BUNDLE\n"); return 2; }
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("skipped: no NVIDIA driver\n"); return 77; }
#define RESOLVE(f) if (!(cu.f = (__typeof__(cu.f))dlsym(h, STR(f)))) { printf("skipped: libcuda lacks %s\n", STR(f)); return 77; }
  CU_FUNCS(RESOLVE)
#undef RESOLVE
  CUdevice dev;
  CUcontext cctx;
  if (cu.cuInit(0) || cu.cuDeviceGet(&dev, 0)) { printf("skipped: no usable GPU\n"); return 77; }
  if (cu.cuDevicePrimaryCtxRetain(&cctx, dev) || cu.cuCtxSetCurrent(cctx)) { fprintf(stderr, "primary context failed\n"); return 1; }
  tunert_ctx *ctx = NULL;
  tunert_err e;
  if (tunert_open(argv[1], NULL, &ctx, &e)) { fprintf(stderr, "tunert_open: %s\n", e.msg); return 1; }
  tunert_family_info fi = {.struct_size = sizeof fi};
  if (tunert_family_info_get(ctx, "cluster", &fi, &e) || fi.n_dims != 2 || strcmp(fi.dims[0], "NB") || strcmp(fi.dims[1], "ROWS")) {
    fprintf(stderr, "family cluster: want dims NB, ROWS (%s)\n", e.msg);
    return 1;
  }
  int n = 0;
  for (int pi = 0;; ++pi, ++n) {
    const char *pname;
    const int64_t *dims;
    if (tunert_family_problem(ctx, "cluster", pi, &pname, &dims, NULL)) break;
    n_fail += run_problem(ctx, pname, dims, fi.n_dims);
  }
  int64_t near[2] = {62, 2}; /* 62 blocks: a cluster of 4 does not divide them, 2 does */
  n_fail += run_problem(ctx, "nb62r2", near, 2);
  if (n < 2) { printf("want 2 tuned problems, the bundle has %d\n", n); n_fail++; }
  tunert_close(ctx);
  printf("%s\n", n_fail ? "FAILED" : "all cluster launches through libtunert exact");
  return n_fail ? 1 : 0;
}
