/* tunert_vendor_gpu: cuBLASLt vendor entries of a GEMM family launched through libtunert on a GPU,
 * checked against a host fp64 reference (tests/gpu/vendor_gpu_test.sh).
 *
 *   tunert_vendor_gpu BUNDLE FAMILY M,N,K,LAYOUT [M,N,K,LAYOUT...]     LAYOUT: col or row
 *
 * For each problem: select (must be kind vendor, vendor cublaslt), fill a and b with seeded values
 * exact in bf16, launch twice (the second from the cached plan, c poisoned in between), and compare
 * c with sum_k a[m][k] B[k][n] in fp64 (B = b[k][n] for row, b[n][k] for col): every element when
 * M*N*K <= 2^28, else 4096 spread over c. Tolerance |c - ref| <= 2^-7 |ref| + 1e-2 (bf16 output
 * rounding; fp32 accumulation). Also: a misaligned pointer is refused (TUNERT_EINVAL) without a
 * launch. Prints one line per problem.
 * Exit: 0 all good, 1 a failure, 2 usage, 77 no driver or GPU. */
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunert.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CU_FUNCS(X) \
  X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyDtoH) \
  X(cuMemcpyHtoD) X(cuMemsetD8) X(cuCtxSynchronize)
static struct {
#define FIELD(f) __typeof__(&f) f;
  CU_FUNCS(FIELD)
#undef FIELD
} cu;

static float bf16_to_f(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* A seeded value in [-2, 2) with 6 significant bits: exact in bf16. */
static uint16_t rand_bf16(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  float f = (float)((int)((*s >> 33) % 256) - 128) / 64.0f;
  uint32_t x;
  memcpy(&x, &f, 4);
  return (uint16_t)(x >> 16);
}

typedef struct gemm_args {
  int a, b, c;                 /* arg indices */
} gemm_args;

/* One problem: 0 good, 1 a failure (printed). */
static int run_problem(tunert_ctx *ctx, const char *family, int64_t M, int64_t N, int64_t K, int b_row) {
  tunert_err e;
  tunert_family_info fi = {.struct_size = sizeof fi};
  if (tunert_family_info_get(ctx, family, &fi, &e)) { printf("%s\n", e.msg); return 1; }
  int64_t dims[8] = {0};
  for (int d = 0; d < fi.n_dims; ++d)
    dims[d] = !strcmp(fi.dims[d], "M") ? M : !strcmp(fi.dims[d], "N") ? N : !strcmp(fi.dims[d], "K") ? K : b_row; /* b_layout: col 0, row 1 */
  char label[96];
  snprintf(label, sizeof label, "M %lld N %lld K %lld b %s", (long long)M, (long long)N, (long long)K, b_row ? "row" : "col");
  const tunert_selection *s;
  if (tunert_select(ctx, family, dims, fi.n_dims, &s, &e)) { printf("%-34s select: %s\n", label, e.msg); return 1; }
  tunert_selection_info si = {.struct_size = sizeof si};
  tunert_selection_info_get(s, &si);
  if (strcmp(si.kind, "vendor") || !si.vendor || strcmp(si.vendor, "cublaslt")) {
    printf("%-34s FAIL: selected kind %s (%s), want a cublaslt vendor entry\n", label, si.kind, si.reason);
    return 1;
  }
  gemm_args ga = {-1, -1, -1};
  for (int a = 0; a < fi.n_args; ++a) {
    if (!strcmp(fi.arg_names[a], "a")) ga.a = a;
    if (!strcmp(fi.arg_names[a], "b")) ga.b = a;
    if (!strcmp(fi.arg_names[a], "c")) ga.c = a;
  }
  size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
  uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hc = malloc(nc * 2);
  CUdeviceptr da = 0, db = 0, dc = 0;
  int bad = 1;
  if (!ha || !hb || !hc || ga.a < 0 || ga.b < 0 || ga.c < 0) { printf("%-34s host memory or args\n", label); goto out; }
  uint64_t seed = 0x5eedu + (uint64_t)(M * 31 + N * 7 + K + b_row);
  for (size_t i = 0; i < na; ++i) ha[i] = rand_bf16(&seed);
  for (size_t i = 0; i < nb; ++i) hb[i] = rand_bf16(&seed);
  if (cu.cuMemAlloc(&da, na * 2) || cu.cuMemAlloc(&db, nb * 2) || cu.cuMemAlloc(&dc, nc * 2) || cu.cuMemcpyHtoD(da, ha, na * 2) ||
      cu.cuMemcpyHtoD(db, hb, nb * 2)) { printf("%-34s device memory\n", label); goto out; }
  tunert_arg args[64];
  for (int a = 0; a < fi.n_args; ++a)
    args[a] = fi.arg_roles[a] == TUNERT_ROLE_SCALAR || fi.arg_roles[a] == TUNERT_ROLE_TENSORMAP ? tunert_arg_auto() : tunert_arg_devptr(dc);
  args[ga.a] = tunert_arg_devptr(da), args[ga.b] = tunert_arg_devptr(db), args[ga.c] = tunert_arg_devptr(dc);
  tunert_arg misaligned[64];
  memcpy(misaligned, args, sizeof misaligned);
  misaligned[ga.a] = tunert_arg_devptr(da + 2);
  int mrc = tunert_launch(ctx, s, NULL, misaligned, fi.n_args, &e);
  if (mrc != TUNERT_EINVAL || !strstr(e.msg, "aligned")) { printf("%-34s FAIL: misaligned a: status %d (%s)\n", label, mrc, mrc ? e.msg : "ok"); goto out; }
  int rc = 0;
  for (int rep = 0; rep < 2 && !rc; ++rep) { /* the second launch: the cached plan */
    cu.cuMemsetD8(dc, 0xff, nc * 2);        /* NaN in bf16 */
    rc = tunert_launch(ctx, s, NULL, args, fi.n_args, &e);
  }
  if (rc) { printf("%-34s FAIL: launch: %s: %s\n", label, tunert_status_name(e.code), e.msg); goto out; }
  if (cu.cuCtxSynchronize() || cu.cuMemcpyDtoH(hc, dc, nc * 2)) { printf("%-34s FAIL: synchronize or copy\n", label); goto out; }
  int full = (double)M * N * K <= (double)(1 << 28);
  size_t n_check = full ? nc : 4096, wrong = 0, first = 0;
  double worst = 0;
  for (size_t t = 0; t < n_check; ++t) {
    size_t i = full ? t : (size_t)((t * 2654435761u) % nc);
    int64_t m = (int64_t)(i / (size_t)N), n = (int64_t)(i % (size_t)N);
    double ref = 0;
    for (int64_t k = 0; k < K; ++k)
      ref += (double)bf16_to_f(ha[m * K + k]) * bf16_to_f(b_row ? hb[k * N + n] : hb[n * K + k]);
    double got = bf16_to_f(hc[i]), d = fabs(got - ref);
    if (!(d <= ldexp(fabs(ref), -7) + 1e-2)) { if (!wrong++) first = i; }
    if (d > worst || d != d) worst = d;
  }
  bad = wrong != 0;
  printf("%-34s %s: %zu elements checked%s, max |c - ref| %.3g", label, bad ? "FAIL" : "ok", n_check, full ? "" : " (sampled)", worst);
  if (wrong) printf(", %zu wrong, first c[%zu] = %g", wrong, first, bf16_to_f(hc[first]));
  printf("\n");
out:
  if (da) cu.cuMemFree(da);
  if (db) cu.cuMemFree(db);
  if (dc) cu.cuMemFree(dc);
  free(ha), free(hb), free(hc);
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: tunert_vendor_gpu BUNDLE FAMILY M,N,K,col|row...\n"); return 2; }
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("skipped: no NVIDIA driver\n"); return 77; }
#define RESOLVE(f) if (!(cu.f = (__typeof__(cu.f))dlsym(h, STR(f)))) { printf("skipped: libcuda lacks %s\n", STR(f)); return 77; }
  CU_FUNCS(RESOLVE)
#undef RESOLVE
  CUdevice dev;
  CUcontext cx;
  if (cu.cuInit(0) || cu.cuDeviceGet(&dev, 0) || cu.cuDevicePrimaryCtxRetain(&cx, dev) || cu.cuCtxSetCurrent(cx)) {
    printf("skipped: no usable GPU\n");
    return 77;
  }
  tunert_ctx *ctx = NULL;
  tunert_err e;
  if (tunert_open(argv[1], NULL, &ctx, &e)) { printf("open: %s\n", e.msg); return 1; }
  int fails = 0;
  for (int i = 3; i < argc; ++i) {
    long long M, N, K;
    char lay[8];
    if (sscanf(argv[i], "%lld,%lld,%lld,%7s", &M, &N, &K, lay) != 4 || (strcmp(lay, "col") && strcmp(lay, "row"))) {
      fprintf(stderr, "tunert_vendor_gpu: %s: want M,N,K,col|row\n", argv[i]);
      tunert_close(ctx);
      return 2;
    }
    fails += run_problem(ctx, argv[2], M, N, K, !strcmp(lay, "row"));
  }
  tunert_close(ctx);
  return fails ? 1 : 0;
}
