/* decoder_block.c: a transformer decoder block forward pass (Llama-3-8B shapes) run through
 * libtunert from a bundle, each step checked against a plain host reference.
 *
 * Steps (prefill of B=4 sequences of S=4096 tokens: T = 16384 tokens, hidden H = 4096 =
 * 32 query heads x 128, 8 KV heads, MLP width I = 14336; then decode of 32 sequences over
 * 4096-token paged KV caches):
 *
 *    1 save residual (fp32 copy)          copy               N = T*H
 *    2 input RMSNorm                      rmsnorm            T, H
 *    3 QKV projection                     gemm               M=T N=(32+2*8)*128 K=H
 *    4 attention, prefill (causal, GQA)   attention.prefill  B S HQ HKV D causal
 *    5 output projection                  gemm               M=T N=H K=H
 *    6 residual add + RMSNorm             rmsnorm.add        T, H
 *    7 MLP gate and up projections        gemm               M=T N=2I K=H
 *    8 SiLU(gate) (x up: no family)       elementwise        rows=T cols=I
 *    9 MLP down projection                gemm               M=T N=H K=I
 *   10 attention, decode (paged KV)       attention.decode   B HQ HKV L D page
 *
 * A step runs only through a kernel family of the bundle; a family that is absent, whose
 * arguments this program does not know, or that has no variant for the step's problem is
 * reported as such with libtunert's reason, and the step is not run: nothing is faked. A step's
 * inputs are seeded random data (the block's input, or a stand-in where the producing step is
 * not available, which the report says). Each step's output is compared with a double-precision
 * host reference on sampled rows (all of it for the copy); per-kernel times are CUDA-event
 * medians of 20 launches.
 *
 * usage: decoder_block BUNDLE... [--device N] [--iters K]   (a family is taken from the first
 *        bundle that has it: a deployment may ship one bundle per family)
 * exit: 0 when every step that ran passed its check (steps not available are not failures),
 *       1 when a check failed or a launch failed, 2 usage, 3 no GPU. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunert.h"

/* ---- the driver, dlopen'd (the program needs no libcuda to link) ------------------------------ */

typedef struct cuapi {
#define F(n) __typeof__(&n) n;
  F(cuInit) F(cuDeviceGet) F(cuDeviceGetName) F(cuDeviceGetAttribute) F(cuDevicePrimaryCtxRetain) F(cuCtxSetCurrent)
  F(cuMemAlloc) F(cuMemFree) F(cuMemcpyHtoD) F(cuMemcpyDtoH) F(cuMemsetD8) F(cuCtxSynchronize) F(cuEventCreate)
  F(cuEventRecord) F(cuEventSynchronize) F(cuEventElapsedTime) F(cuEventDestroy) F(cuGetErrorName)
#undef F
} cuapi;
static cuapi cu;

#define STR_(x) #x
#define STR(x) STR_(x)

static int cuda_open(int ordinal, char *name, size_t n) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return -1;
#define R(f) if (!(cu.f = (__typeof__(cu.f))dlsym(lib, STR(f)))) return -1;
  R(cuInit) R(cuDeviceGet) R(cuDeviceGetName) R(cuDeviceGetAttribute) R(cuDevicePrimaryCtxRetain) R(cuCtxSetCurrent)
  R(cuMemAlloc) R(cuMemFree) R(cuMemcpyHtoD) R(cuMemcpyDtoH) R(cuMemsetD8) R(cuCtxSynchronize) R(cuEventCreate)
  R(cuEventRecord) R(cuEventSynchronize) R(cuEventElapsedTime) R(cuEventDestroy) R(cuGetErrorName)
#undef R
  CUdevice dev;
  CUcontext ctx;
  if (cu.cuInit(0) || cu.cuDeviceGet(&dev, ordinal) || cu.cuDevicePrimaryCtxRetain(&ctx, dev) || cu.cuCtxSetCurrent(ctx)) return -1;
  cu.cuDeviceGetName(name, (int)n, dev);
  return 0;
}

/* ---- host data ---------------------------------------------------------------------------------- */

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static double urand(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

static uint16_t f2bf(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}
static double bf2d(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* ---- steps --------------------------------------------------------------------------------------- */

typedef struct dimval { const char *name; int64_t v; } dimval;

enum fill { FILL_NORMAL, FILL_WEIGHT, FILL_PERM, FILL_OUT, FILL_SCRATCH };

typedef struct argbind { const char *name; int fill; } argbind;

typedef struct step {
  int no;
  const char *title;
  const char *family;
  const char *inputs_note;       /* where the inputs come from */
  int n_dims;
  dimval dims[8];
  int n_args;
  argbind args[16];              /* the arguments this program binds, by name */
  int (*check)(struct step *, const tunert_selection_info *, void **host, CUdeviceptr *dev, char *why, size_t n);
} step;

typedef struct result {
  char status[64];
  char detail[1200];
  double us;                     /* median per launch [us] */
  double bundle_us;              /* what the tuner measured [us] */
  char check[300];
  int ran, ok;
} result;

static int iters = 20;

static int find_arg(const tunert_selection_info *si, const char *name) {
  for (int a = 0; a < si->n_args; ++a)
    if (!strcmp(si->args[a].name, name)) return a;
  return -1;
}

/* ---- checks (double-precision host references on samples) --------------------------------------- */

static int64_t dimof(step *st, const char *name) {
  for (int i = 0; i < st->n_dims; ++i)
    if (!strcmp(st->dims[i].name, name)) return st->dims[i].v;
  return 0;
}


static int fetch(CUdeviceptr d, size_t bytes, void **out) {
  *out = malloc(bytes);
  return !*out || cu.cuMemcpyDtoH(*out, d, bytes) ? -1 : 0;
}

static int check_copy(step *st, const tunert_selection_info *si, void **host, CUdeviceptr *dev, char *why, size_t n) {
  int s = find_arg(si, "src"), d = find_arg(si, "dst");
  void *out;
  if (fetch(dev[d], (size_t)si->args[d].bytes, &out)) { snprintf(why, n, "read back failed"); return -1; }
  int same = !memcmp(out, host[s], (size_t)si->args[s].bytes);
  free(out);
  snprintf(why, n, same ? "ok: dst == src, all %lld elements" : "MISMATCH: dst != src", (long long)si->args[s].numel);
  return same ? 0 : -1;
}

/* y = h * rsqrt(mean(h^2) + eps) * w, h = x (+ r) */
static int check_rmsnorm(step *st, const tunert_selection_info *si, void **host, CUdeviceptr *dev, char *why, size_t n) {
  int ax = find_arg(si, "x"), aw = find_arg(si, "w"), ay = find_arg(si, "y"), ar = find_arg(si, "r"), ah = find_arg(si, "h");
  int ae = find_arg(si, "eps");
  int64_t T = dimof(st, "T"), H = dimof(st, "H");
  double eps = ae >= 0 && si->args[ae].has_value ? si->args[ae].value : 1e-6;
  void *y, *h = NULL;
  if (fetch(dev[ay], (size_t)si->args[ay].bytes, &y) || (ah >= 0 && fetch(dev[ah], (size_t)si->args[ah].bytes, &h))) {
    snprintf(why, n, "read back failed");
    return -1;
  }
  const uint16_t *x = host[ax], *w = host[aw], *r = ar >= 0 ? host[ar] : NULL, *yy = y, *hh = h;
  double worst = 0;
  int bad = 0;
  for (int k = 0; k < 32; ++k) {
    int64_t t = (int64_t)(urand() * (double)T);
    double ss = 0;
    double *hv = malloc(sizeof(double) * (size_t)H);
    for (int64_t j = 0; j < H; ++j) {
      double v = bf2d(x[t * H + j]) + (r ? bf2d(r[t * H + j]) : 0);
      if (r) {
        double got = bf2d(hh[t * H + j]);
        if (fabs(got - v) > 1e-2 + 1e-2 * fabs(v)) bad++;
        v = bf2d(f2bf((float)v)); /* the kernel normalizes h as stored */
      }
      hv[j] = v;
      ss += v * v;
    }
    double inv = 1 / sqrt(ss / (double)H + eps);
    for (int64_t j = 0; j < H; ++j) {
      double ref = hv[j] * inv * bf2d(w[j]), got = bf2d(yy[t * H + j]);
      double err = fabs(got - ref);
      if (err > worst) worst = err;
      if (err > 2e-2 + 1e-2 * fabs(ref)) bad++;
    }
    free(hv);
  }
  free(y);
  free(h);
  snprintf(why, n, "%s: 32 sampled rows%s, max abs err %.2e (tol 2e-2 + 1e-2|ref|)", bad ? "MISMATCH" : "ok", r ? " (y and h)" : "", worst);
  return bad ? -1 : 0;
}

/* y = silu(x * scale + bias) */
static int check_silu(step *st, const tunert_selection_info *si, void **host, CUdeviceptr *dev, char *why, size_t n) {
  int ax = find_arg(si, "x"), as = find_arg(si, "scale"), ab = find_arg(si, "bias"), ay = find_arg(si, "y");
  int64_t cols = si->args[as].numel, total = si->args[ax].numel;
  void *y;
  if (fetch(dev[ay], (size_t)si->args[ay].bytes, &y)) { snprintf(why, n, "read back failed"); return -1; }
  const uint16_t *x = host[ax], *sc = host[as], *bi = host[ab], *yy = y;
  double worst = 0;
  int bad = 0;
  for (int k = 0; k < 100000; ++k) {
    int64_t i = (int64_t)(urand() * (double)total);
    double z = bf2d(x[i]) * bf2d(sc[i % cols]) + bf2d(bi[i % cols]);
    double ref = z / (1 + exp(-z)), err = fabs(bf2d(yy[i]) - ref);
    if (err > worst) worst = err;
    if (err > 1e-2 + 1e-2 * fabs(ref)) bad++;
  }
  free(y);
  snprintf(why, n, "%s: 100000 sampled elements, max abs err %.2e", bad ? "MISMATCH" : "ok", worst);
  return bad ? -1 : 0;
}

/* o[b,h,i,:] = softmax_j (q_i . k_j / sqrt(D)) v_j over j <= i (causal), kv head h / (HQ/HKV) */
static int check_prefill(step *st, const tunert_selection_info *si, void **host, CUdeviceptr *dev, char *why, size_t n) {
  int aq = find_arg(si, "q"), ak = find_arg(si, "k"), av = find_arg(si, "v"), ao = find_arg(si, "o");
  int64_t B = dimof(st, "B"), HQ = dimof(st, "HQ"), HKV = dimof(st, "HKV"), S = dimof(st, "S"), D = dimof(st, "D");
  int causal = (int)dimof(st, "causal");
  void *o;
  if (fetch(dev[ao], (size_t)si->args[ao].bytes, &o)) { snprintf(why, n, "read back failed"); return -1; }
  const uint16_t *q = host[aq], *k = host[ak], *v = host[av], *oo = o;
  double worst = 0, *s = malloc(sizeof(double) * (size_t)S), *acc = malloc(sizeof(double) * (size_t)D);
  int bad = 0;
  for (int t = 0; t < 16; ++t) {
    int64_t b = (int64_t)(urand() * B), h = (int64_t)(urand() * HQ), i = t < 2 ? t : (int64_t)(urand() * S);
    int64_t kvh = h / (HQ / HKV), nk = causal ? i + 1 : S;
    const uint16_t *qi = q + ((b * HQ + h) * S + i) * D;
    const uint16_t *kh = k + (b * HKV + kvh) * S * D, *vh = v + (b * HKV + kvh) * S * D;
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < nk; ++j) {
      double dot = 0;
      for (int64_t e = 0; e < D; ++e) dot += bf2d(qi[e]) * bf2d(kh[j * D + e]);
      s[j] = dot / sqrt((double)D);
      if (s[j] > mx) mx = s[j];
    }
    for (int64_t e = 0; e < D; ++e) acc[e] = 0;
    for (int64_t j = 0; j < nk; ++j) {
      double p = exp(s[j] - mx);
      sum += p;
      for (int64_t e = 0; e < D; ++e) acc[e] += p * bf2d(vh[j * D + e]);
    }
    for (int64_t e = 0; e < D; ++e) {
      double ref = acc[e] / sum, err = fabs(bf2d(oo[((b * HQ + h) * S + i) * D + e]) - ref);
      if (err > worst) worst = err;
      if (err > 5e-2) bad++;
    }
  }
  free(s);
  free(acc);
  free(o);
  snprintf(why, n, "%s: 16 sampled query rows, max abs err %.2e (tol 5e-2, the recipe's)", bad ? "MISMATCH" : "ok", worst);
  return bad ? -1 : 0;
}

/* decode: o[b,hq,:] = softmax_j (q . k_j / sqrt(D)) v_j, KV row j in page block_table[b][j / page] */
static int check_decode(step *st, const tunert_selection_info *si, void **host, CUdeviceptr *dev, char *why, size_t n) {
  int aq = find_arg(si, "q"), ak = find_arg(si, "k_cache"), av = find_arg(si, "v_cache"), at = find_arg(si, "block_table");
  int ao = find_arg(si, "o");
  int64_t B = dimof(st, "B"), HQ = dimof(st, "HQ"), HKV = dimof(st, "HKV"), L = dimof(st, "L"), D = dimof(st, "D");
  int64_t page = dimof(st, "page"), mp = L / page;
  void *o;
  if (fetch(dev[ao], (size_t)si->args[ao].bytes, &o)) { snprintf(why, n, "read back failed"); return -1; }
  const uint16_t *q = host[aq], *kc = host[ak], *vc = host[av], *oo = o;
  const int32_t *bt = host[at];
  double worst = 0, *s = malloc(sizeof(double) * (size_t)L), *acc = malloc(sizeof(double) * (size_t)D);
  int bad = 0;
  for (int t = 0; t < 16; ++t) {
    int64_t b = (int64_t)(urand() * B), hq = (int64_t)(urand() * HQ), hkv = hq / (HQ / HKV);
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < L; ++j) {
      int64_t row = (((int64_t)bt[b * mp + j / page] * page + j % page) * HKV + hkv) * D;
      double dot = 0;
      for (int64_t e = 0; e < D; ++e) dot += bf2d(q[(b * HQ + hq) * D + e]) * bf2d(kc[row + e]);
      s[j] = dot / sqrt((double)D);
      if (s[j] > mx) mx = s[j];
    }
    for (int64_t e = 0; e < D; ++e) acc[e] = 0;
    for (int64_t j = 0; j < L; ++j) {
      int64_t row = (((int64_t)bt[b * mp + j / page] * page + j % page) * HKV + hkv) * D;
      double p = exp(s[j] - mx);
      sum += p;
      for (int64_t e = 0; e < D; ++e) acc[e] += p * bf2d(vc[row + e]);
    }
    for (int64_t e = 0; e < D; ++e) {
      double ref = acc[e] / sum, err = fabs(bf2d(oo[(b * HQ + hq) * D + e]) - ref);
      if (err > worst) worst = err;
      if (err > 1e-2) bad++;
    }
  }
  free(s);
  free(acc);
  free(o);
  snprintf(why, n, "%s: 16 sampled (sequence, head) rows, max abs err %.2e (tol 1e-2, the recipe's)", bad ? "MISMATCH" : "ok", worst);
  return bad ? -1 : 0;
}

/* ---- running one step ------------------------------------------------------------------------------ */

static tunert_ctx *ctxs[16];
static int n_ctxs;

/* The context of the first bundle that has the family, or NULL. */
static tunert_ctx *ctx_for(const char *family) {
  tunert_family_info fi = {.struct_size = sizeof fi};
  for (int i = 0; i < n_ctxs; ++i)
    if (!tunert_family_info_get(ctxs[i], family, &fi, NULL)) return ctxs[i];
  return NULL;
}

static void run_step(step *st, result *r) {
  memset(r, 0, sizeof *r);
  tunert_err e;
  tunert_family_info fi = {.struct_size = sizeof fi};
  tunert_ctx *ctx = ctx_for(st->family);
  if (!ctx || tunert_family_info_get(ctx, st->family, &fi, &e)) {
    snprintf(r->status, sizeof r->status, "NOT AVAILABLE");
    snprintf(r->detail, sizeof r->detail, "no family '%s' in the bundle", st->family);
    return;
  }
  /* the family's arguments must be the ones this program binds */
  int match = fi.n_args == st->n_args;
  for (int a = 0; match && a < fi.n_args; ++a) {
    int found = 0;
    for (int b = 0; b < st->n_args; ++b) found |= !strcmp(fi.arg_names[a], st->args[b].name);
    if (!found && fi.arg_roles[a] != TUNERT_ROLE_SCALAR) match = 0;
  }
  if (!match) {
    size_t len = (size_t)snprintf(r->detail, sizeof r->detail, "family '%s' is in the bundle but its arguments (", st->family);
    for (int a = 0; a < fi.n_args && len < sizeof r->detail; ++a)
      len += (size_t)snprintf(r->detail + len, sizeof r->detail - len, "%s%s", a ? " " : "", fi.arg_names[a]);
    if (len < sizeof r->detail) snprintf(r->detail + len, sizeof r->detail - len, ") are not the ones this step binds");
    snprintf(r->status, sizeof r->status, "NOT RUN");
    return;
  }
  int64_t dims[32];
  for (int d = 0; d < fi.n_dims; ++d) {
    int found = 0;
    for (int i = 0; i < st->n_dims; ++i)
      if (!strcmp(st->dims[i].name, fi.dims[d])) { dims[d] = st->dims[i].v; found = 1; }
    if (!found) {
      snprintf(r->status, sizeof r->status, "NOT RUN");
      snprintf(r->detail, sizeof r->detail, "family '%s' has a dim '%s' this step does not know", st->family, fi.dims[d]);
      return;
    }
  }
  const tunert_selection *sel;
  if (tunert_select(ctx, st->family, dims, fi.n_dims, &sel, &e)) {
    snprintf(r->status, sizeof r->status, "NO VARIANT");
    snprintf(r->detail, sizeof r->detail, "%s", e.msg);
    return;
  }
  tunert_selection_info si = {.struct_size = sizeof si};
  tunert_selection_info_get(sel, &si);
  snprintf(r->detail, sizeof r->detail, "%s %s; %s", si.exact ? "tuned for this problem:" : "nearest tuned problem:", si.variant, si.binary);
  r->bundle_us = si.measured_ns / 1e3;
  /* buffers */
  CUdeviceptr dev[32] = {0};
  void *host[32] = {0};
  tunert_arg args[32];
  int failed = 0;
  for (int a = 0; a < si.n_args && !failed; ++a) {
    const tunert_arg_info *x = &si.args[a];
    if (x->role == TUNERT_ROLE_SCALAR) { args[a] = tunert_arg_auto(); continue; }
    int fill = x->role == TUNERT_ROLE_OUTPUT ? FILL_OUT : x->role == TUNERT_ROLE_SCRATCH ? FILL_SCRATCH : FILL_NORMAL;
    for (int b = 0; b < st->n_args; ++b)
      if (!strcmp(st->args[b].name, x->name)) fill = st->args[b].fill;
    size_t bytes = (size_t)(x->bytes > 0 ? x->bytes : 16);
    if (cu.cuMemAlloc(&dev[a], bytes)) { snprintf(r->check, sizeof r->check, "cuMemAlloc(%zu) failed", bytes); failed = 1; break; }
    args[a] = tunert_arg_devptr(dev[a]);
    if (fill == FILL_OUT || fill == FILL_SCRATCH) { cu.cuMemsetD8(dev[a], 0xff, bytes); continue; } /* poisoned: NaN */
    host[a] = malloc(bytes);
    if (!strcmp(x->dtype, "bf16")) {
      uint16_t *h = host[a];
      for (int64_t i = 0; i < x->numel; ++i)
        h[i] = f2bf(fill == FILL_WEIGHT ? (float)(0.5 + urand()) : (float)((urand() + urand() + urand() - 1.5) * 2.0));
    } else if (!strcmp(x->dtype, "f32")) {
      float *h = host[a];
      for (int64_t i = 0; i < x->numel; ++i) h[i] = (float)(urand() * 2 - 1);
    } else if (!strcmp(x->dtype, "i32")) {
      int32_t *h = host[a];
      for (int64_t i = 0; i < x->numel; ++i) h[i] = (int32_t)i;
      if (fill == FILL_PERM)
        for (int64_t i = x->numel - 1; i > 0; --i) { int64_t j = (int64_t)(rnd() % (uint64_t)(i + 1)); int32_t t = h[i]; h[i] = h[j]; h[j] = t; }
    } else memset(host[a], 0, bytes);
    cu.cuMemcpyHtoD(dev[a], host[a], bytes);
  }
  if (!failed) {
    r->ran = 1;
    CUevent e0, e1;
    cu.cuEventCreate(&e0, 0);
    cu.cuEventCreate(&e1, 0);
    double t[256];
    int rc = 0;
    for (int i = 0; i < 3 + iters && !rc; ++i) {
      cu.cuEventRecord(e0, NULL);
      rc = tunert_launch(ctx, sel, NULL, args, si.n_args, &e);
      cu.cuEventRecord(e1, NULL);
      cu.cuEventSynchronize(e1);
      float ms = 0;
      cu.cuEventElapsedTime(&ms, e0, e1);
      if (i >= 3) t[i - 3] = ms * 1e3;
      if (i == 0 && !rc) { /* check the first run's output */
        CUresult cr = cu.cuCtxSynchronize();
        if (cr) { const char *nm = "?"; cu.cuGetErrorName(cr, &nm); snprintf(r->check, sizeof r->check, "kernel failed: %s", nm); rc = 1; break; }
        r->ok = st->check(st, &si, host, dev, r->check, sizeof r->check) == 0;
        /* later launches rewrite the outputs: no need to restore them */
      }
    }
    if (rc) {
      if (!r->check[0]) snprintf(r->check, sizeof r->check, "launch failed: %.260s", e.msg);
      r->ok = 0;
      snprintf(r->status, sizeof r->status, "FAILED");
    } else {
      for (int i = 1; i < iters; ++i)
        for (int j = i; j > 0 && t[j - 1] > t[j]; --j) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
      r->us = t[iters / 2];
      snprintf(r->status, sizeof r->status, "ran");
    }
    cu.cuEventDestroy(e0);
    cu.cuEventDestroy(e1);
  } else snprintf(r->status, sizeof r->status, "FAILED");
  for (int a = 0; a < si.n_args; ++a) {
    if (dev[a]) cu.cuMemFree(dev[a]);
    free(host[a]);
  }
}

int main(int argc, char **argv) {
  const char *bundles[16];
  int n_bundles = 0, ordinal = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) ordinal = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) { iters = atoi(argv[++i]); if (iters < 1 || iters > 200) iters = 20; }
    else if (argv[i][0] != '-' && n_bundles < 16) bundles[n_bundles++] = argv[i];
    else { fprintf(stderr, "usage: decoder_block BUNDLE... [--device N] [--iters K]\n"); return 2; }
  }
  if (!n_bundles) { fprintf(stderr, "usage: decoder_block BUNDLE... [--device N] [--iters K]\n"); return 2; }
  char gpu[256] = "?";
  if (cuda_open(ordinal, gpu, sizeof gpu)) { fprintf(stderr, "decoder_block: no usable NVIDIA GPU/driver here: this program runs kernels\n"); return 3; }
  tunert_options o;
  tunert_options_init(&o);
  o.device = ordinal;
  tunert_err e;
  printf("decoder block forward through libtunert\n");
  for (int b = 0; b < n_bundles; ++b) {
    if (tunert_open(bundles[b], &o, &ctxs[n_ctxs], &e)) { fprintf(stderr, "decoder_block: %s\n", e.msg); return 1; }
    tunert_ctx *ctx = ctxs[n_ctxs++];
    tunert_bundle_info bi = {.struct_size = sizeof bi};
    tunert_bundle_info_get(ctx, &bi);
    printf("bundle %s: format %d.%d, made %s by tune %s, measured on %s; binaries %s; opened in %.2f ms; families:",
           bundles[b], bi.format_major, bi.format_minor, bi.created_at, bi.tool_version, bi.device_name, bi.archs, bi.open_ms);
    for (int f = 0; f < tunert_family_count(ctx); ++f) printf(" %s", tunert_family_name(ctx, f));
    printf("\n");
  }
  const int64_t B = 4, S = 4096, HQ = 32, HKV = 8, D = 128, H = HQ * D, T = B * S, I = 14336;
  const int64_t DB = 32, DL = 4096, PAGE = 16;
  printf("device %d: %s\n", ordinal, gpu);
  printf("prefill: B=%lld S=%lld -> T=%lld tokens, hidden %lld (%lld query heads x %lld, %lld KV heads), MLP %lld, causal\n",
         (long long)B, (long long)S, (long long)T, (long long)H, (long long)HQ, (long long)D, (long long)HKV, (long long)I);
  printf("decode:  B=%lld sequences, %lld-token paged KV caches (page %lld)\n\n", (long long)DB, (long long)DL, (long long)PAGE);
  const char *gemm_note = "stand-in random inputs (the producing GEMM is not available)";
  step steps[] = {
      {1, "save residual (fp32 copy)", "copy", "the block input x", 1, {{"N", T * H}}, 3,
       {{"src", FILL_NORMAL}, {"dst", FILL_OUT}, {"n", 0}}, check_copy},
      {2, "input RMSNorm", "rmsnorm", "the block input x", 3, {{"T", T}, {"H", H}, {"residual", 0}}, 5,
       {{"x", FILL_NORMAL}, {"w", FILL_WEIGHT}, {"y", FILL_OUT}, {"T", 0}, {"eps", 0}}, check_rmsnorm},
      {3, "QKV projection", "gemm", "", 3, {{"M", T}, {"N", (HQ + 2 * HKV) * D}, {"K", H}}, 0, {{0}}, NULL},
      {4, "attention, prefill (causal, GQA)", "attention.prefill", NULL, 6,
       {{"B", B}, {"D", D}, {"HKV", HKV}, {"HQ", HQ}, {"S", S}, {"causal", 1}}, 9,
       {{"q", FILL_NORMAL}, {"k", FILL_NORMAL}, {"v", FILL_NORMAL}, {"o", FILL_OUT}, {"B", 0}, {"HQ", 0}, {"HKV", 0}, {"S", 0},
        {"scale_log2", 0}}, check_prefill},
      {5, "output projection", "gemm", "", 3, {{"M", T}, {"N", H}, {"K", H}}, 0, {{0}}, NULL},
      {6, "residual add + RMSNorm", "rmsnorm.add", NULL, 3, {{"T", T}, {"H", H}, {"residual", 1}}, 7,
       {{"x", FILL_NORMAL}, {"r", FILL_NORMAL}, {"w", FILL_WEIGHT}, {"y", FILL_OUT}, {"h", FILL_OUT}, {"T", 0}, {"eps", 0}},
       check_rmsnorm},
      {7, "MLP gate and up projections", "gemm", "", 3, {{"M", T}, {"N", 2 * I}, {"K", H}}, 0, {{0}}, NULL},
      {8, "SiLU(gate) (x up: no fused family yet)", "elementwise", NULL, 2, {{"rows", T}, {"cols", I}}, 6,
       {{"x", FILL_NORMAL}, {"scale", FILL_WEIGHT}, {"bias", FILL_NORMAL}, {"y", FILL_OUT}, {"rows", 0}, {"cols", 0}}, check_silu},
      {9, "MLP down projection", "gemm", "", 3, {{"M", T}, {"N", H}, {"K", I}}, 0, {{0}}, NULL},
      {10, "attention, decode (paged KV)", "attention.decode", NULL, 6,
       {{"B", DB}, {"D", D}, {"HKV", HKV}, {"HQ", HQ}, {"L", DL}, {"page", PAGE}}, 12,
       {{"q", FILL_NORMAL}, {"k_cache", FILL_NORMAL}, {"v_cache", FILL_NORMAL}, {"block_table", FILL_PERM}, {"o", FILL_OUT},
        {"partial", FILL_SCRATCH}, {"B", 0}, {"HQ", 0}, {"HKV", 0}, {"L", 0}, {"max_pages_per_seq", 0}, {"scale_log2", 0}},
       check_decode},
  };
  int n_steps = (int)(sizeof steps / sizeof steps[0]);
  result res[16];
  int n_ran = 0, n_ok = 0, n_fail = 0;
  char missing[512] = "";
  printf("%-3s %-40s %-18s %-13s %11s %11s  %s\n", "", "step", "family", "status", "time", "tuned time", "check");
  for (int i = 0; i < n_steps; ++i) {
    step *st = &steps[i];
    if (!st->check) {
      /* GEMM steps: no binding in this program until a GEMM family with integer dims exists */
      memset(&res[i], 0, sizeof res[i]);
      int have = ctx_for(st->family) != NULL;
      snprintf(res[i].status, sizeof res[i].status, have ? "NOT RUN" : "NOT AVAILABLE");
      snprintf(res[i].detail, sizeof res[i].detail, "%s", have ? "family 'gemm' is in the bundle but this program does not bind GEMMs yet"
                                                              : "no family 'gemm' in the bundle");
    } else {
      const char *producer = i >= 3 ? gemm_note : "";
      if (!st->inputs_note) st->inputs_note = producer;
      run_step(st, &res[i]);
    }
    result *r = &res[i];
    char t[32] = "-", tt[32] = "-";
    if (r->us > 0) snprintf(t, sizeof t, "%.2f us", r->us);
    if (r->bundle_us > 0) snprintf(tt, sizeof tt, "%.2f us", r->bundle_us);
    printf("%-3d %-40s %-18s %-13s %11s %11s  %s\n", st->no, st->title, st->family, r->status, t, tt, r->check);
    printf("    %s\n", r->detail);
    if (r->ran && st->inputs_note && st->inputs_note[0]) printf("    inputs: %s\n", st->inputs_note);
    if (r->ran) { n_ran++; if (r->ok) n_ok++; else n_fail++; }
    else if (!strstr(missing, st->family)) snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s", missing[0] ? ", " : "", st->family);
    fflush(stdout);
  }
  printf("\nsummary: %d of %d steps ran through libtunert from the bundle, %d passed their check, %d failed\n", n_ran, n_steps, n_ok, n_fail);
  if (n_ran < n_steps)
    printf("not available or not run: %s. The block's output is therefore not computed end to end: each step that ran "
           "was checked on its own inputs.\n", missing);
  printf("times: CUDA-event median of %d launches per step on this GPU; 'tuned time' is the tuner's CUPTI median in the bundle.\n", iters);
  for (int b = 0; b < n_ctxs; ++b) tunert_close(ctxs[b]);
  return n_fail ? 1 : 0;
}
