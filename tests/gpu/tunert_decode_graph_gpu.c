/* tunert_decode_graph_gpu: the paged-decode serving contract through libtunert under a CUDA graph
 * (tests/gpu/decode_graph_gpu_test.sh).
 *
 *   tunert_decode_graph_gpu BUNDLE [FAMILY [LAYOUT]]
 *
 * For the bundle's first problem of FAMILY (default attention.decode; attention.decode_tma takes the
 * same arguments and two tensor maps, passed as TUNERT_ARG_AUTO) (B, HQ, HKV, D, page_size,
 * max_pages): q as a view of a fused [B, HQ + 2 * HKV, D] QKV projection, o as [HQ, B, D] and the
 * caches in LAYOUT, all passed by their strides: `hnd` (default) [pages, HKV, page_size, D]; `nhd`
 * [pages, page_size, HKV, D] packed, B * max_pages pages; `nhd_pool2` the same in a pool of twice as
 * many pages, the block table a random half of them (an engine's pool: pages past the batch's).
 * One eager launch loads the module, then one launch sequence is captured
 * (CU_STREAM_CAPTURE_MODE_GLOBAL) and the graph replayed for 4 steps, each with other seq_lens
 * written to device memory before the replay (lengths 0, 1, a page boundary +- 1, the maximum,
 * random ones); every output of every step is checked against an fp64 host reference (length 0:
 * exactly 0). Exit: 0 all good, 1 a failure, 77 no driver or GPU. */
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunert.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CU_FUNCS(X)                                                                                         \
  X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree)      \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8) X(cuCtxSynchronize) X(cuStreamCreate) X(cuStreamBeginCapture) \
  X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuStreamSynchronize)              \
  X(cuGraphExecDestroy) X(cuGraphDestroy)
static struct {
#define FIELD(f) __typeof__(&f) f;
  CU_FUNCS(FIELD)
#undef FIELD
} cu;

static int n_pass, n_fail;
#define CHECK(c, ...)                                                               \
  do {                                                                              \
    if (c) n_pass++;                                                                \
    else { n_fail++; fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); } \
  } while (0)

static uint16_t f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_u32(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}
static float normal(void) {
  double u1 = (next_u32() + 1.0) / 4294967297.0, u2 = next_u32() / 4294967296.0;
  return (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
}

typedef struct dec {
  int B, HQ, HKV, D, ps, mp, pages;             /* pages: in the cache (the pool) */
  int64_t qsb, qsh, osb, osh, ksp, ksr, ksh;  /* strides [elements] */
  uint16_t *q, *k, *v;                          /* host copies (bf16) */
  int32_t *bt;
} dec;

/* fp64 reference of output (b, hq) into out[D]. */
static void reference(const dec *p, const int32_t *lens, int b, int hq, double *out) {
  const int hkv = hq / (p->HQ / p->HKV), L = lens[b];
  double *s = malloc(sizeof(double) * (L ? L : 1)), m = -INFINITY, sum = 0;
  for (int j = 0; j < L; ++j) {
    int64_t row = p->bt[(int64_t)b * p->mp + j / p->ps] * p->ksp + (j % p->ps) * p->ksr + hkv * p->ksh;
    double acc = 0;
    for (int d = 0; d < p->D; ++d) acc += (double)bf2f(p->q[b * p->qsb + hq * p->qsh + d]) * bf2f(p->k[row + d]);
    s[j] = acc / sqrt((double)p->D);
    if (s[j] > m) m = s[j];
  }
  for (int d = 0; d < p->D; ++d) out[d] = 0;
  for (int j = 0; j < L; ++j) {
    int64_t row = p->bt[(int64_t)b * p->mp + j / p->ps] * p->ksp + (j % p->ps) * p->ksr + hkv * p->ksh;
    double w = exp(s[j] - m);
    sum += w;
    for (int d = 0; d < p->D; ++d) out[d] += w * bf2f(p->v[row + d]);
  }
  for (int d = 0; d < p->D; ++d) out[d] = L ? out[d] / sum : 0;
  free(s);
}

static int64_t dim(const tunert_family_info *fi, const int64_t *dims, const char *name) {
  for (int i = 0; i < fi->n_dims; ++i)
    if (!strcmp(fi->dims[i], name)) return dims[i];
  fprintf(stderr, "no dim %s in the family\n", name);
  exit(1);
}

static CUdeviceptr upload(const void *h, size_t bytes) {
  CUdeviceptr d = 0;
  if (cu.cuMemAlloc(&d, bytes) || (h && cu.cuMemcpyHtoD(d, h, bytes))) { fprintf(stderr, "cuMemAlloc/HtoD of %zu failed\n", bytes); exit(1); }
  return d;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: tunert_decode_graph_gpu BUNDLE [FAMILY [hnd|nhd|nhd_pool2]]\n");
    return 1;
  }
  const char *family = argc > 2 ? argv[2] : "attention.decode", *layout = argc > 3 ? argv[3] : "hnd";
  if (strcmp(layout, "hnd") && strcmp(layout, "nhd") && strcmp(layout, "nhd_pool2")) {
    fprintf(stderr, "unknown layout %s\n", layout);
    return 1;
  }
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("skipped: no NVIDIA driver\n"); return 77; }
#define RESOLVE(f) if (!(cu.f = (__typeof__(cu.f))dlsym(h, STR(f)))) { printf("skipped: libcuda lacks %s\n", STR(f)); return 77; }
  CU_FUNCS(RESOLVE)
#undef RESOLVE
  CUdevice dev;
  CUcontext cctx;
  if (cu.cuInit(0) || cu.cuDeviceGet(&dev, 0)) { printf("skipped: no usable GPU\n"); return 77; }
  if (cu.cuDevicePrimaryCtxRetain(&cctx, dev) || cu.cuCtxSetCurrent(cctx)) { fprintf(stderr, "primary context failed\n"); return 1; }
  tunert_err e = {0};
  tunert_ctx *ctx;
  if (tunert_open(argv[1], NULL, &ctx, &e)) { fprintf(stderr, "tunert_open: %s\n", e.msg); return 1; }
  tunert_family_info fi = {.struct_size = sizeof fi};
  const char *pname;
  const int64_t *pd;
  if (tunert_family_info_get(ctx, family, &fi, &e) || tunert_family_problem(ctx, family, 0, &pname, &pd, &e)) {
    fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  dec p = {.B = (int)dim(&fi, pd, "B"), .HQ = (int)dim(&fi, pd, "HQ"), .HKV = (int)dim(&fi, pd, "HKV"), .D = (int)dim(&fi, pd, "D"),
           .ps = (int)dim(&fi, pd, "page_size"), .mp = (int)dim(&fi, pd, "max_pages")};
  const int entries = p.B * p.mp;                                    /* block-table entries */
  p.pages = strcmp(layout, "nhd_pool2") ? entries : 2 * entries;
  p.qsb = (int64_t)(p.HQ + 2 * p.HKV) * p.D, p.qsh = p.D;          /* fused QKV rows */
  p.osb = p.D, p.osh = (int64_t)p.B * p.D;                           /* o as [HQ, B, D] */
  if (!strcmp(layout, "hnd")) p.ksp = (int64_t)p.HKV * p.ps * p.D, p.ksr = p.D, p.ksh = (int64_t)p.ps * p.D;
  else p.ksp = (int64_t)p.ps * p.HKV * p.D, p.ksr = (int64_t)p.HKV * p.D, p.ksh = p.D;
  const tunert_selection *sel;
  if (tunert_select(ctx, family, pd, fi.n_dims, &sel, &e)) { fprintf(stderr, "tunert_select: %s\n", e.msg); return 1; }
  tunert_selection_info si = {.struct_size = sizeof si};
  tunert_selection_info_get(sel, &si);
  printf("%s problem %s, variant %s, %s caches of %d pages\n", family, pname, si.variant, layout, p.pages);

  size_t nq = (size_t)p.B * p.qsb, nkv = (size_t)p.pages * p.ksp, no = (size_t)p.B * p.HQ * p.D;
  p.q = malloc(nq * 2), p.k = malloc(nkv * 2), p.v = malloc(nkv * 2), p.bt = malloc(sizeof(int32_t) * p.pages);
  uint16_t *o = malloc(no * 2);
  int32_t *lens = malloc(sizeof(int32_t) * p.B);
  double *ref = malloc(sizeof(double) * p.D);
  if (!p.q || !p.k || !p.v || !p.bt || !o || !lens || !ref) { fprintf(stderr, "out of memory\n"); return 1; }
  for (size_t i = 0; i < nq; ++i) p.q[i] = f2bf(normal());
  for (size_t i = 0; i < nkv; ++i) p.k[i] = f2bf(normal()), p.v[i] = f2bf(normal());
  for (int i = 0; i < p.pages; ++i) p.bt[i] = i;
  for (int i = p.pages - 1; i > 0; --i) {
    int j = (int)(next_u32() % (uint32_t)(i + 1));
    int32_t x = p.bt[i];
    p.bt[i] = p.bt[j], p.bt[j] = x;
  }
  CUdeviceptr dq = upload(p.q, nq * 2), dk = upload(p.k, nkv * 2), dv = upload(p.v, nkv * 2);
  CUdeviceptr dbt = upload(p.bt, sizeof(int32_t) * entries), dlens = upload(NULL, sizeof(int32_t) * p.B);
  CUdeviceptr dout = upload(NULL, no * 2), dpart = 0;

  tunert_arg args[32];
  if (fi.n_args > 32) { fprintf(stderr, "too many args\n"); return 1; }
  for (int a = 0; a < fi.n_args; ++a) {
    const char *n = fi.arg_names[a];
    const struct { const char *name; int64_t v; } ints[] = {
        {"B", p.B}, {"HQ", p.HQ}, {"HKV", p.HKV}, {"max_pages", p.mp}, {"page_size", p.ps}, {"q_stride_b", p.qsb},
        {"q_stride_h", p.qsh}, {"o_stride_b", p.osb}, {"o_stride_h", p.osh}, {"kv_stride_page", p.ksp},
        {"kv_stride_row", p.ksr}, {"kv_stride_h", p.ksh}};
    args[a] = tunert_arg_auto();
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; ++k)
      if (!strcmp(n, ints[k].name)) args[a] = tunert_arg_int(ints[k].v);
    if (!strcmp(n, "scale_log2")) args[a] = tunert_arg_float(1.4426950408889634 / sqrt((double)p.D));
    if (!strcmp(n, "q")) args[a] = tunert_arg_devptr(dq);
    if (!strcmp(n, "k_cache")) args[a] = tunert_arg_devptr(dk);
    if (!strcmp(n, "v_cache")) args[a] = tunert_arg_devptr(dv);
    if (!strcmp(n, "block_table")) args[a] = tunert_arg_devptr(dbt);
    if (!strcmp(n, "seq_lens")) args[a] = tunert_arg_devptr(dlens);
    if (!strcmp(n, "o")) args[a] = tunert_arg_devptr(dout);
    if (!strcmp(n, "partial")) args[a] = tunert_arg_devptr(dpart = upload(NULL, (size_t)si.args[a].bytes));
  }

  /* eager launch: loads the module outside the capture */
  CUstream st;
  if (cu.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING)) { fprintf(stderr, "cuStreamCreate failed\n"); return 1; }
  for (int b = 0; b < p.B; ++b) lens[b] = 1;
  cu.cuMemcpyHtoD(dlens, lens, sizeof(int32_t) * p.B);
  CHECK(!tunert_launch(ctx, sel, st, args, fi.n_args, &e), "eager tunert_launch: %s", e.msg);
  CHECK(!cu.cuStreamSynchronize(st), "eager launch failed on the GPU");

  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  int rc = (int)cu.cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL);
  int lrc = rc ? -1 : tunert_launch(ctx, sel, st, args, fi.n_args, &e);
  int erc = rc ? -1 : (int)cu.cuStreamEndCapture(st, &graph);
  CHECK(!rc && !lrc && !erc, "capture: begin %d, tunert_launch %d (%s), end %d", rc, lrc, e.msg, erc);
  CHECK(graph && !cu.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate failed");
  if (!exec) { fprintf(stderr, "%d passed, %d failed\n", n_pass, n_fail); return 1; }

  const int maxlen = p.mp * p.ps;
  for (int step = 0; step < 4; ++step) {
    for (int b = 0; b < p.B; ++b) lens[b] = 1 + (int)(next_u32() % (uint32_t)maxlen);
    const int special[] = {0, 1, p.ps - 1, p.ps + 1, maxlen, maxlen - 1, 17, 2 * p.ps};
    for (int k = 0; k < 8 && k < p.B; ++k) lens[(k + 3 * step) % p.B] = special[(k + step) % 8];
    if (step == 3) for (int b = 0; b < p.B; ++b) lens[b] = b % 2 ? maxlen : 0;  /* all full or empty */
    CHECK(!cu.cuMemcpyHtoD(dlens, lens, sizeof(int32_t) * p.B), "seq_lens upload");
    CHECK(!cu.cuMemsetD8(dout, 0xff, no * 2), "poison o");  /* NaN until the graph writes it */
    CHECK(!cu.cuGraphLaunch(exec, st) && !cu.cuStreamSynchronize(st), "step %d: graph replay failed", step);
    CHECK(!cu.cuMemcpyDtoH(o, dout, no * 2), "o download");
    double num = 0, den = 0, worst = 0;
    int bad = 0, empty_bad = 0;
    for (int b = 0; b < p.B; ++b)
      for (int hq = 0; hq < p.HQ; ++hq) {
        reference(&p, lens, b, hq, ref);
        for (int d = 0; d < p.D; ++d) {
          double x = bf2f(o[b * p.osb + hq * p.osh + d]), diff = fabs(x - ref[d]);
          if (!(diff <= 2e-2)) ++bad;  /* NaN counts */
          if (lens[b] == 0 && x != 0) ++empty_bad;
          num += diff * diff, den += ref[d] * ref[d];
          if (diff > worst || diff != diff) worst = diff;
        }
      }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    printf("step %d: lens[0..3] = %d %d %d %d: rel_l2 %.2e, max abs %.2e, %d over 2e-2\n", step, lens[0], lens[1],
           lens[2 % p.B], lens[3 % p.B], rel, worst, bad);
    CHECK(bad == 0 && rel <= 1e-2, "step %d: %d outputs off the fp64 reference (rel_l2 %.2e, max abs %.2e)", step, bad, rel, worst);
    CHECK(empty_bad == 0, "step %d: %d outputs of empty sequences are not 0", step, empty_bad);
  }
  cu.cuGraphExecDestroy(exec);
  cu.cuGraphDestroy(graph);
  cu.cuMemFree(dq), cu.cuMemFree(dk), cu.cuMemFree(dv), cu.cuMemFree(dbt), cu.cuMemFree(dlens), cu.cuMemFree(dout);
  if (dpart) cu.cuMemFree(dpart);
  tunert_close(ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
