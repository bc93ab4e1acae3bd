/* tunert_tmap_gpu: launches the tensormap fixture (tests/fixtures/recipes/tensormap.lua) from a
 * bundle through libtunert on a GPU and checks every output exactly (tests/gpu/tensormap_bundle_gpu_test.sh).
 *
 *   tunert_tmap_gpu BUNDLE
 *
 * Per tuned problem: dst must equal src (a TMA copy through the map libtunert built) and count
 * R * C, for a first pointer, a second one (the map follows the pointer), the first again (a cache
 * hit) and 10 more (past the 8 cached pointers: encoded at each launch); a 16-byte-misaligned
 * pointer and a pointer given for a map are TUNERT_EINVAL. Then host-side costs on the first problem:
 * cuTensorMapEncodeTiled alone, tunert_launch with cached maps and with maps encoded per launch.
 * Exit: 0 all good, 1 a failure, 77 no driver or GPU. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tunert.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CU_FUNCS(X)                                                                                      \
  X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree)   \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8) X(cuCtxSynchronize) X(cuTensorMapEncodeTiled)
static struct {
#define FIELD(f) __typeof__(&f) f;
  CU_FUNCS(FIELD)
#undef FIELD
} cu;

static int n_pass, n_fail;
#define CHECK(c, ...)                                                        \
  do {                                                                       \
    if (c) n_pass++;                                                         \
    else { n_fail++; fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); } \
  } while (0)

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#define NSRC 12

typedef struct prob {
  const tunert_selection *s;
  tunert_selection_info si;
  int R, C;
  size_t bytes;
  CUdeviceptr src[NSRC], dst, acc, count;
  unsigned short *host[NSRC];
  int i_src, i_dst, i_acc, i_count;
} prob;

static int arg_index(const tunert_selection_info *si, const char *name) {
  for (int a = 0; a < si->n_args; ++a)
    if (!strcmp(si->args[a].name, name)) return a;
  return -1;
}

static void make_args(const prob *p, CUdeviceptr src, tunert_arg *args) {
  for (int a = 0; a < p->si.n_args; ++a) {
    int role = p->si.args[a].role;
    if (role == TUNERT_ROLE_SCALAR || role == TUNERT_ROLE_TENSORMAP) args[a] = tunert_arg_auto();
    else args[a] = tunert_arg_devptr(a == p->i_src ? src : a == p->i_dst ? p->dst : a == p->i_acc ? p->acc : p->count);
  }
}

/* One launch from src k (or ptr when given); returns the number of wrong elements (-1: launch error in e). */
static long run_once(tunert_ctx *ctx, prob *p, int k, CUdeviceptr ptr, tunert_err *e) {
  tunert_arg args[16];
  make_args(p, ptr ? ptr : p->src[k], args);
  if (cu.cuMemsetD8(p->dst, 0xff, p->bytes) || cu.cuMemsetD8(p->acc, 0, 4) || cu.cuMemsetD8(p->count, 0, 4)) return -2;
  if (tunert_launch(ctx, p->s, NULL, args, p->si.n_args, e)) return -1;
  if (cu.cuCtxSynchronize()) return -2;
  unsigned short *out = malloc(p->bytes);
  int count = 0;
  long wrong = 0;
  if (!out || cu.cuMemcpyDtoH(out, p->dst, p->bytes) || cu.cuMemcpyDtoH(&count, p->count, 4)) { free(out); return -2; }
  for (size_t i = 0; i < p->bytes / 2; ++i) wrong += out[i] != p->host[k][i];
  free(out);
  if (count != p->R * p->C) wrong += 1;
  return wrong;
}

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: tunert_tmap_gpu BUNDLE\n"); return 2; }
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
  if (tunert_family_info_get(ctx, "tensormap", &fi, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
  double t_encode = 0, t_cached = 0, t_uncached = 0;
  char variant0[256] = "";
  for (int pi = 0;; ++pi) {
    const char *pname;
    const int64_t *dims;
    if (tunert_family_problem(ctx, "tensormap", pi, &pname, &dims, NULL)) break;
    prob p;
    memset(&p, 0, sizeof p);
    if (tunert_select(ctx, "tensormap", dims, fi.n_dims, &p.s, &e)) { CHECK(0, "%s: select: %s", pname, e.msg); continue; }
    p.si.struct_size = sizeof p.si;
    tunert_selection_info_get(p.s, &p.si);
    p.i_src = arg_index(&p.si, "src"), p.i_dst = arg_index(&p.si, "dst"), p.i_acc = arg_index(&p.si, "acc"), p.i_count = arg_index(&p.si, "count");
    int iR = arg_index(&p.si, "R"), iC = arg_index(&p.si, "C");
    if (p.i_src < 0 || p.i_dst < 0 || p.i_acc < 0 || p.i_count < 0 || iR < 0 || iC < 0 || p.si.n_args > 16) { CHECK(0, "%s: unexpected args", pname); continue; }
    p.R = (int)p.si.args[iR].value, p.C = (int)p.si.args[iC].value;
    p.bytes = (size_t)p.si.args[p.i_src].bytes;
    int n_maps = 0;
    for (int a = 0; a < p.si.n_args; ++a) n_maps += p.si.args[a].role == TUNERT_ROLE_TENSORMAP;
    printf("%s: variant %s, %d tensor maps, params %u bytes\n", pname, p.si.variant, n_maps, p.si.param_bytes);
    if (!variant0[0]) snprintf(variant0, sizeof variant0, "%s %s", pname, p.si.variant);
    int ok = !cu.cuMemAlloc(&p.dst, p.bytes) && !cu.cuMemAlloc(&p.acc, 256) && !cu.cuMemAlloc(&p.count, 256);
    for (int k = 0; k < NSRC && ok; ++k) {
      p.host[k] = malloc(p.bytes);
      ok = p.host[k] && !cu.cuMemAlloc(&p.src[k], p.bytes);
      for (size_t i = 0; ok && i < p.bytes / 2; ++i) p.host[k][i] = (unsigned short)((((i + 1) * 2654435761u) >> 11) ^ (k * 40503u));
      ok = ok && !cu.cuMemcpyHtoD(p.src[k], p.host[k], p.bytes);
    }
    if (!ok) { CHECK(0, "%s: device memory", pname); break; }
    int order[] = {0, 1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; ++i) {
      long w = run_once(ctx, &p, order[i], 0, &e);
      CHECK(w == 0, "%s: launch %zu from src %d: %ld wrong%s%s", pname, i, order[i], w, w == -1 ? ": " : "", w == -1 ? e.msg : "");
    }
    long w = run_once(ctx, &p, 0, p.src[0] + 2, &e);
    CHECK(w == -1 && e.code == TUNERT_EINVAL && strstr(e.msg, "not 16-byte aligned"), "%s: misaligned src: %ld %s", pname, w, w == -1 ? e.msg : "");
    tunert_arg args[16];
    make_args(&p, p.src[0], args);
    int tm = -1;
    for (int a = 0; a < p.si.n_args; ++a)
      if (p.si.args[a].role == TUNERT_ROLE_TENSORMAP) tm = a;
    args[tm] = tunert_arg_devptr(p.src[0]);
    int rc = tunert_launch(ctx, p.s, NULL, args, p.si.n_args, &e);
    CHECK(rc == TUNERT_EINVAL && strstr(e.msg, "give TUNERT_ARG_AUTO"), "%s: a pointer for a map: rc %d %s", pname, rc, e.msg);
    if (pi == 0) { /* host costs */
      const tunert_tensormap_info *t = &p.si.tensormaps[tm];
      cuuint64_t gd[5], gs[5];
      cuuint32_t bx[5], es[5];
      for (int i = 0; i < t->rank; ++i) { gd[i] = t->dims[i]; bx[i] = t->box[i]; es[i] = t->element_strides[i]; if (i + 1 < t->rank) gs[i] = t->strides[i]; }
      double v[21];
      CUtensorMap m; /* 64-byte aligned by its type */
      for (int r = 0; r < 21; ++r) {
        double t0 = now_ns();
        for (int i = 0; i < 1000; ++i)
          if (cu.cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, (cuuint32_t)t->rank, (void *)(uintptr_t)p.src[0], gd, gs, bx, es,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)) { CHECK(0, "encode failed"); break; }
        v[r] = (now_ns() - t0) / 1000;
      }
      qsort(v, 21, sizeof v[0], cmp_d);
      t_encode = v[10];
      for (int mode = 0; mode < 2; ++mode) { /* 0: src 0 (cached); 1: srcs 8..11, past the 8 slots: encoded per launch */
        for (int r = 0; r < 21; ++r) {
          double t0 = now_ns();
          for (int i = 0; i < 100; ++i) {
            make_args(&p, mode ? p.src[8 + i % 4] : p.src[0], args);
            if (tunert_launch(ctx, p.s, NULL, args, p.si.n_args, &e)) { CHECK(0, "timed launch: %s", e.msg); break; }
          }
          v[r] = (now_ns() - t0) / 100;
          cu.cuCtxSynchronize();
        }
        qsort(v, 21, sizeof v[0], cmp_d);
        if (mode) t_uncached = v[10];
        else t_cached = v[10];
      }
    }
    for (int k = 0; k < NSRC; ++k) { cu.cuMemFree(p.src[k]); free(p.host[k]); }
    cu.cuMemFree(p.dst);
    cu.cuMemFree(p.acc);
    cu.cuMemFree(p.count);
  }
  tunert_close(ctx);
  printf("\nhost cost per call (median of 21 batches; %s):\n", variant0);
  printf("  %-52s %8.0f ns\n", "cuTensorMapEncodeTiled (1 map, rank 2)", t_encode);
  printf("  %-52s %8.0f ns\n", "tunert_launch, 2 maps from the cache", t_cached);
  printf("  %-52s %8.0f ns\n", "tunert_launch, 2 maps encoded (pointer not cached)", t_uncached);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
