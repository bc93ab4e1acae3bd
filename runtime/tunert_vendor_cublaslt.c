/* tunert_vendor_cublaslt.c: vendor entries: GEMM through cuBLASLt (dlopen), the others back to
 * the caller (tunert_vendor_cublaslt.h). */
#include "tunert_vendor_cublaslt.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define RT_STR_(x) #x
#define RT_STR(x) RT_STR_(x)

/* The cuBLASLt of a context: opened on the first launch of a vendor entry, under ctx->lock. */
struct rt_vendor {
  rt_cublaslt_lib lt;
  int state;                   /* 0 not tried, 1 open, -1 failed (error says why) */
  char error[768];
  cublasLtHandle_t handle;
  struct rt_vendor_plan *plans; /* every plan made, for rt_vendor_close */
};

/* One GEMM problem's descriptors (rt_cublaslt_shape says how they are laid out). */
struct rt_vendor_plan {
  struct rt_vendor_plan *next;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t lay_b, lay_a, lay_c; /* cuBLASLt's A, B, C = D */
  cublasLtMatmulAlgo_t algo;
  int arg_a, arg_b, arg_c;     /* indices of the family's args a, b, c */
  int arg_dim[3];              /* indices of scalar args M, N, K (-1: none), checked against the dims */
  int64_t dim[3];              /* M, N, K */
};

/* Every pointer's alignment the algorithm may assume (the kernels' tensor maps need as much). */
#define RT_CUBLASLT_ALIGN 16

int rt_cublaslt_open(rt_cublaslt_lib *l, const char *const *names, int n, char *msg, size_t msg_n) {
  memset(l, 0, sizeof *l);
  size_t len = 0;
  msg[0] = 0;
  for (int i = 0; i < n && !l->lib; ++i) {
    /* never unloaded: cuBLASLt brings the C++ runtime, which does not come apart cleanly (its
       exception-handling pool would be lost with it) */
    l->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (l->lib) { snprintf(l->name, sizeof l->name, "%s", names[i]); break; }
    const char *why = dlerror();
    if (len < msg_n) len += (size_t)snprintf(msg + len, msg_n - len, "%s%s", len ? "; " : "cuBLASLt cannot be opened: ", why ? why : names[i]);
  }
  if (!l->lib) return -1;
#define RT_CUBLASLT_RESOLVE(f)                                                           \
  l->f = (__typeof__(l->f))dlsym(l->lib, RT_STR(f));                                     \
  if (!l->f) {                                                                           \
    snprintf(msg, msg_n, "%s lacks %s: cuBLASLt too old?", l->name, RT_STR(f));          \
    rt_cublaslt_close(l);                                                                \
    return -1;                                                                           \
  }
  RT_CUBLASLT_FUNCS(RT_CUBLASLT_RESOLVE)
#undef RT_CUBLASLT_RESOLVE
  return 0;
}

void rt_cublaslt_close(rt_cublaslt_lib *l) {
  if (l->lib) dlclose(l->lib);
  memset(l, 0, sizeof *l);
}

static const char *lt_status(const rt_cublaslt_lib *l, cublasStatus_t st, char *buf, size_t n) {
  snprintf(buf, n, "%s (%d): %s", l->cublasLtGetStatusName ? l->cublasLtGetStatusName(st) : "CUBLAS_STATUS", (int)st,
           l->cublasLtGetStatusString ? l->cublasLtGetStatusString(st) : "");
  return buf;
}

/* Row-major c[M][N] is, column-major, c^T (N x M, ld N); likewise a^T (K x M, ld K). So
 * c^T = B^T a^T: cuBLASLt's A is our b, its B our a. b stored [K][N] (row) is B^T column-major as
 * it is (N x K, ld N); b stored [N][K] (col) is the K x N column-major matrix B (ld K), which the
 * op transposes. */
void rt_cublaslt_shape(int64_t M, int64_t N, int64_t K, int b_row, rt_lt_shape *out) {
  out->trans_a = !b_row;
  out->rows[0] = (uint64_t)(b_row ? N : K), out->cols[0] = (uint64_t)(b_row ? K : N), out->ld[0] = b_row ? N : K;
  out->rows[1] = (uint64_t)K, out->cols[1] = (uint64_t)M, out->ld[1] = K;
  out->rows[2] = (uint64_t)N, out->cols[2] = (uint64_t)M, out->ld[2] = N;
}

/* ---- is it a GEMM cuBLASLt runs? ------------------------------------------------------------ */

static int find_name(const char *const *names, int n, const char *want) {
  for (int i = 0; i < n; ++i)
    if (!strcmp(names[i], want)) return i;
  return -1;
}

/* The index of `value` in an enum dim's type "enum(col|row)", -1 when absent. */
static int enum_index(const char *type, const char *value) {
  if (strncmp(type, "enum(", 5)) return -1;
  size_t n = strlen(value);
  int idx = 0;
  for (const char *p = type + 5; *p && *p != ')'; ++idx) {
    const char *end = p + strcspn(p, "|)");
    if ((size_t)(end - p) == n && !strncmp(p, value, n)) return idx;
    p = *end == '|' ? end + 1 : end;
  }
  return -1;
}

/* Fill plan's argument and dimension indices; 0, or -1 with what is missing in why. b_row: b is [K][N]. */
static int gemm_layout(const rt_family *f, const int64_t *dims, struct rt_vendor_plan *plan, int *b_row, cudaDataType *dt,
                       char *why, size_t n) {
  const char *dn[3] = {"M", "N", "K"};
  for (int d = 0; d < 3; ++d) {
    int i = find_name(f->dims, f->n_dims, dn[d]);
    if (i < 0 || strcmp(f->dim_types[i], "int")) { snprintf(why, n, "no int dim %s", dn[d]); return -1; }
    plan->dim[d] = dims[i];
    if (dims[i] <= 0) { snprintf(why, n, "dim %s = %lld", dn[d], (long long)dims[i]); return -1; }
    int a = find_name(f->arg_names, f->n_args, dn[d]);
    plan->arg_dim[d] = a >= 0 && f->arg_roles[a] == TUNERT_ROLE_SCALAR ? a : -1;
  }
  int bl = find_name(f->dims, f->n_dims, "b_layout");
  int row = bl >= 0 ? enum_index(f->dim_types[bl], "row") : -1, col = bl >= 0 ? enum_index(f->dim_types[bl], "col") : -1;
  if (row < 0 || col < 0) { snprintf(why, n, "no dim b_layout of values col and row"); return -1; }
  *b_row = dims[bl] == row;
  int *idx[3] = {&plan->arg_a, &plan->arg_b, &plan->arg_c};
  const char *an[3] = {"a", "b", "c"};
  for (int k = 0; k < 3; ++k) {
    *idx[k] = find_name(f->arg_names, f->n_args, an[k]);
    int want = k < 2 ? TUNERT_ROLE_INPUT : TUNERT_ROLE_OUTPUT;
    if (*idx[k] < 0 || f->arg_roles[*idx[k]] != want) { snprintf(why, n, "no %s tensor arg %s", k < 2 ? "input" : "output", an[k]); return -1; }
  }
  const char *t = f->arg_dtypes[plan->arg_a];
  if (strcmp(t, f->arg_dtypes[plan->arg_b]) || strcmp(t, f->arg_dtypes[plan->arg_c]) || (strcmp(t, "bf16") && strcmp(t, "f16"))) {
    snprintf(why, n, "a, b, c are %s, %s, %s (one of bf16, f16 wanted)", t, f->arg_dtypes[plan->arg_b], f->arg_dtypes[plan->arg_c]);
    return -1;
  }
  *dt = !strcmp(t, "bf16") ? CUDA_R_16BF : CUDA_R_16F;
  return 0;
}

/* ---- the context's library and handle, a problem's plan (under ctx->lock) --------------------- */

static int vendor_open_locked(tunert_ctx *ctx, tunert_err *err) {
  if (!ctx->vendor && !(ctx->vendor = rt_alloc(&ctx->arena, sizeof *ctx->vendor)))
    return rt_fail(err, TUNERT_ENOMEM, "tunert_launch: out of memory for cuBLASLt");
  struct rt_vendor *v = ctx->vendor;
  if (v->state == 1) return TUNERT_OK;
  if (v->state == -1) return rt_fail(err, TUNERT_ENODRIVER, "%s", v->error);
  static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12"};
  char msg[600];
  if (rt_cublaslt_open(&v->lt, names, 2, msg, sizeof msg)) {
    v->state = -1;
    snprintf(v->error, sizeof v->error, "vendor entry (cublaslt): %.600s: put the CUDA toolkit's libcublasLt on the library path, or call your own path", msg);
    return rt_fail(err, TUNERT_ENODRIVER, "%s", v->error);
  }
  cublasStatus_t st = v->lt.cublasLtCreate(&v->handle);
  if (st != CUBLAS_STATUS_SUCCESS) {
    char e[256];
    v->state = -1;
    snprintf(v->error, sizeof v->error, "vendor entry (cublaslt): cublasLtCreate: %s", lt_status(&v->lt, st, e, sizeof e));
    rt_cublaslt_close(&v->lt);
    return rt_fail(err, TUNERT_ECUDA, "%s", v->error);
  }
  v->state = 1;
  return TUNERT_OK;
}

static void plan_destroy(const rt_cublaslt_lib *l, struct rt_vendor_plan *p) {
  if (p->lay_a) l->cublasLtMatrixLayoutDestroy(p->lay_a);
  if (p->lay_b) l->cublasLtMatrixLayoutDestroy(p->lay_b);
  if (p->lay_c) l->cublasLtMatrixLayoutDestroy(p->lay_c);
  if (p->op) l->cublasLtMatmulDescDestroy(p->op);
  p->lay_a = p->lay_b = p->lay_c = NULL;
  p->op = NULL;
}

#define LT_TRY(what, call)                                                                       \
  do {                                                                                           \
    st = (call);                                                                                 \
    if (st != CUBLAS_STATUS_SUCCESS) { snprintf(failed, sizeof failed, "%s", what); goto fail; } \
  } while (0)

/* The descriptors and the heuristic's first algorithm for plan (its dims and args set). */
static int plan_make(struct rt_vendor *v, const char *family, struct rt_vendor_plan *p, int b_row, cudaDataType dt, tunert_err *err) {
  const rt_cublaslt_lib *l = &v->lt;
  uint64_t M = (uint64_t)p->dim[0], N = (uint64_t)p->dim[1], K = (uint64_t)p->dim[2];
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  cublasLtMatmulPreference_t pref = NULL;
  char failed[64] = "";
  rt_lt_shape sh;
  rt_cublaslt_shape(p->dim[0], p->dim[1], p->dim[2], b_row, &sh);
  cublasOperation_t op_a = sh.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  LT_TRY("cublasLtMatmulDescCreate", l->cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  LT_TRY("TRANSA", l->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
  LT_TRY("layout of b", l->cublasLtMatrixLayoutCreate(&p->lay_b, dt, sh.rows[0], sh.cols[0], sh.ld[0]));
  LT_TRY("layout of a", l->cublasLtMatrixLayoutCreate(&p->lay_a, dt, sh.rows[1], sh.cols[1], sh.ld[1]));
  LT_TRY("layout of c", l->cublasLtMatrixLayoutCreate(&p->lay_c, dt, sh.rows[2], sh.cols[2], sh.ld[2]));
  LT_TRY("cublasLtMatmulPreferenceCreate", l->cublasLtMatmulPreferenceCreate(&pref));
  uint32_t align = RT_CUBLASLT_ALIGN;
  cublasLtMatmulPreferenceAttributes_t aligns[4] = {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) LT_TRY("alignment preference", l->cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &align, sizeof align));
  cublasLtMatmulHeuristicResult_t res;
  int n_res = 0;
  LT_TRY("cublasLtMatmulAlgoGetHeuristic",
         l->cublasLtMatmulAlgoGetHeuristic(v->handle, p->op, p->lay_b, p->lay_a, p->lay_c, p->lay_c, pref, 1, &res, &n_res));
  if (n_res < 1) { st = CUBLAS_STATUS_NOT_SUPPORTED; snprintf(failed, sizeof failed, "cublasLtMatmulAlgoGetHeuristic (no algorithm)"); goto fail; }
  p->algo = res.algo;
  l->cublasLtMatmulPreferenceDestroy(pref);
  return TUNERT_OK;
fail:;
  char e[256];
  if (pref) l->cublasLtMatmulPreferenceDestroy(pref);
  plan_destroy(l, p);
  return rt_fail(err, TUNERT_ECUDA, "tunert_launch %s: vendor entry (cublaslt), M %llu N %llu K %llu b %s: %s: %s", family,
                 (unsigned long long)M, (unsigned long long)N, (unsigned long long)K, b_row ? "row" : "col", failed,
                 lt_status(l, st, e, sizeof e));
}

/* The plan of s: made once (driver, context, library, descriptors) and published. */
static int plan_get(tunert_ctx *ctx, tunert_selection *s, struct rt_vendor_plan **out, tunert_err *err) {
  int rc = TUNERT_OK;
  pthread_mutex_lock(&ctx->lock);
  struct rt_vendor_plan *p = atomic_load_explicit(&s->vendor_plan, memory_order_acquire);
  struct rt_vendor_plan shape;
  if (p) goto out;
  int b_row = 0;
  cudaDataType dt = CUDA_R_16BF;
  char why[200];
  memset(&shape, 0, sizeof shape);
  if (gemm_layout(s->f, s->dims, &shape, &b_row, &dt, why, sizeof why)) {
    rc = rt_fail(err, TUNERT_EVENDOR, "tunert_launch %s: vendor entry (cublaslt): call your own path (not a GEMM libtunert runs through cuBLASLt: %s)",
                 s->f->name, why);
    goto out;
  }
  if ((rc = rt_context_retain_locked(ctx, err))) goto out;
  CUcontext prev = NULL;
  ctx->cu.cuCtxGetCurrent(&prev);
  if (prev != ctx->cuctx) ctx->cu.cuCtxSetCurrent(ctx->cuctx);
  if (!(rc = vendor_open_locked(ctx, err))) {
    if (!(p = rt_alloc(&ctx->arena, sizeof *p))) rc = rt_fail(err, TUNERT_ENOMEM, "tunert_launch %s: out of memory", s->f->name);
    else {
      *p = shape;
      if (!(rc = plan_make(ctx->vendor, s->f->name, p, b_row, dt, err))) {
        p->next = ctx->vendor->plans;
        ctx->vendor->plans = p;
        atomic_store_explicit(&s->vendor_plan, p, memory_order_release);
      } else p = NULL;
    }
  }
  if (prev != ctx->cuctx) ctx->cu.cuCtxSetCurrent(prev);
out:
  pthread_mutex_unlock(&ctx->lock);
  *out = p;
  return rc;
}

/* ---- launch ---------------------------------------------------------------------------------- */

int rt_vendor_launch(tunert_ctx *ctx, tunert_selection *s, void *stream, const tunert_arg *args, int n_args, tunert_err *err) {
  const rt_family *f = s->f;
  if (strcmp(s->vendor, "cublaslt"))
    return rt_fail(err, TUNERT_EVENDOR, "tunert_launch %s: vendor entry (%s): call your own path (%s measured faster than tune's kernels here)",
                   f->name, s->vendor, s->vendor);
  struct rt_vendor_plan *p = atomic_load_explicit(&s->vendor_plan, memory_order_acquire);
  if (!p) {
    int rc = plan_get(ctx, s, &p, err);
    if (rc) return rc;
  }
  int ptr_args[3] = {p->arg_a, p->arg_b, p->arg_c};
  for (int k = 0; k < 3; ++k) {
    const tunert_arg *x = &args[ptr_args[k]];
    if (x->kind != TUNERT_ARG_PTR || !x->v.ptr)
      return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: arg %s is a tensor: give a non-NULL device pointer", f->name, f->arg_names[ptr_args[k]]);
    if (x->v.ptr % RT_CUBLASLT_ALIGN)
      return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: vendor entry (cublaslt): the address of %s (0x%llx) is not %d-byte aligned", f->name,
                     f->arg_names[ptr_args[k]], (unsigned long long)x->v.ptr, RT_CUBLASLT_ALIGN);
  }
  for (int d = 0; d < 3; ++d) { /* a scalar M, N or K given must be the problem's */
    const tunert_arg *x = p->arg_dim[d] >= 0 ? &args[p->arg_dim[d]] : NULL;
    if (x && ((x->kind == TUNERT_ARG_INT && x->v.i != p->dim[d]) || (x->kind == TUNERT_ARG_FLOAT && x->v.f != (double)p->dim[d])))
      return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: arg %s differs from the selected problem's %lld", f->name, f->arg_names[p->arg_dim[d]],
                     (long long)p->dim[d]);
  }
  int rc = rt_context_use(ctx, f->name, err);
  if (rc) return rc;
  const struct rt_vendor *v = ctx->vendor;
  const float alpha = 1.0f, beta = 0.0f;
  void *a = (void *)(uintptr_t)args[p->arg_a].v.ptr, *b = (void *)(uintptr_t)args[p->arg_b].v.ptr, *c = (void *)(uintptr_t)args[p->arg_c].v.ptr;
  cublasStatus_t st = v->lt.cublasLtMatmul(v->handle, p->op, &alpha, b, p->lay_b, a, p->lay_a, &beta, c, p->lay_c, c, p->lay_c, &p->algo,
                                           NULL, 0, (cudaStream_t)stream);
  if (st != CUBLAS_STATUS_SUCCESS) {
    char e[256];
    return rt_fail(err, TUNERT_ECUDA, "tunert_launch %s: vendor entry (cublaslt): cublasLtMatmul (M %lld N %lld K %lld): %s", f->name,
                   (long long)p->dim[0], (long long)p->dim[1], (long long)p->dim[2], lt_status(&v->lt, st, e, sizeof e));
  }
  return TUNERT_OK;
}

void rt_vendor_close(tunert_ctx *ctx) {
  struct rt_vendor *v = ctx->vendor;
  if (!v || v->state != 1) return;
  for (struct rt_vendor_plan *p = v->plans; p; p = p->next) plan_destroy(&v->lt, p);
  v->lt.cublasLtDestroy(v->handle);
  rt_cublaslt_close(&v->lt);
  v->state = 0;
}
