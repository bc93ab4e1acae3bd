/* tunert_vendor_cublaslt.h: vendor entries of libtunert (docs/runtime.md "Selection policy").
 *
 * Owns: running a vendor entry of a GEMM family (dims M, N, K, b_layout; tensor args a, b, c of
 * one dtype, bf16 or f16) through cuBLASLt, opened with dlopen on first use (libcublasLt.so.13,
 * then .so.12), with fp32 compute and no workspace (launches on concurrent streams share
 * nothing); answering TUNERT_EVENDOR for every other vendor entry ("call your own path").
 * The cuBLASLt handle is per context (created on first use, destroyed by tunert_close); the
 * matmul and layout descriptors and the heuristic's algorithm are per selection (the problem),
 * made once under ctx->lock and published with release order; later launches take no lock and
 * allocate nothing. Must not: link cuBLAS, or be reached for kernel selections. Internal. */
#ifndef TUNERT_VENDOR_CUBLASLT_H
#define TUNERT_VENDOR_CUBLASLT_H

#include <cublasLt.h>
#include <stddef.h>

#include "tunert_int.h"

#define RT_CUBLASLT_FUNCS(X)                                                                      \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)   \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)  \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul) X(cublasLtGetStatusName)                    \
  X(cublasLtGetStatusString)

/* The cuBLASLt entry points libtunert calls, resolved from one dlopen handle. */
typedef struct rt_cublaslt_lib {
  void *lib;                   /* dlopen handle, NULL when not open */
  char name[64];               /* the soname that opened */
#define RT_CUBLASLT_FIELD(f) __typeof__(&f) f;
  RT_CUBLASLT_FUNCS(RT_CUBLASLT_FIELD)
#undef RT_CUBLASLT_FIELD
} rt_cublaslt_lib;

/* cuBLASLt's column-major view of row-major c[M][N] = a[M][K] @ B, B stored [K][N] (b_row) or
 * [N][K]: operand 0 is cuBLASLt's A (our b, transposed when trans_a), 1 its B (our a), 2 its C
 * and D (our c); each a rows x cols matrix with leading dimension ld [elements]. */
typedef struct rt_lt_shape {
  int trans_a;
  uint64_t rows[3], cols[3];
  int64_t ld[3];
} rt_lt_shape;
void rt_cublaslt_shape(int64_t M, int64_t N, int64_t K, int b_row, rt_lt_shape *out);

/* dlopen the first of names[0..n) that opens and resolve every entry point. 0, or -1 with why in
 * msg (no library: the names tried and dlerror's text; a missing function: its name). */
int rt_cublaslt_open(rt_cublaslt_lib *l, const char *const *names, int n, char *msg, size_t msg_n);
void rt_cublaslt_close(rt_cublaslt_lib *l);

/* tunert_launch of a selection whose kind is "vendor" (s->vendor set). The cuBLASLt path for a
 * GEMM family's "cublaslt" entry; TUNERT_EVENDOR ("vendor entry (NAME): call your own path")
 * for any other, without a launch. Errors: TUNERT_ENODRIVER (no driver, or no cuBLASLt library),
 * TUNERT_ECUDA (a cuBLASLt or driver call failed: its status in the message), TUNERT_EINVAL. */
int rt_vendor_launch(tunert_ctx *ctx, tunert_selection *s, void *stream, const tunert_arg *args, int n_args,
                     tunert_err *err);

/* Destroy the context's plans and handle and close the library (tunert_close, before the
 * primary context is released). */
void rt_vendor_close(tunert_ctx *ctx);

/* From tunert_launch.c, shared with the kernel path: the driver opened and the device's primary
 * context retained (under ctx->lock); the calling thread's context made the bundle's, or
 * TUNERT_ECONTEXT (no lock). */
int rt_context_retain_locked(tunert_ctx *ctx, tunert_err *err);
int rt_context_use(tunert_ctx *ctx, const char *family, tunert_err *err);

#endif
