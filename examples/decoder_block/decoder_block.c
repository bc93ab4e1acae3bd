/* decoder_block.c: a transformer decoder block forward pass run through libtunert from bundles,
 * checked against a plain fp32 reference of the whole block on the GPU, with per-kernel times.
 *
 * Shapes: Mistral-7B / Llama-3-8B (hidden H = 4096 = 32 query heads x 128, 8 KV heads, MLP width
 * I = 14336). Prefill of B = 4 sequences of S = 4096 tokens (T = 16384 token rows), then one decode
 * step of a batch of 32 sequences over 4096-token paged KV caches (page 16):
 *
 *   step  what                                        family              problem
 *   1     y0 = RMSNorm(x)                             rmsnorm             T, H
 *   2     qkv = y0 Wqkv                               gemm | gemm.splitk  M=T N=(32+2*8)*128 K=H
 *   -     split heads: qkv -> q, k, v [B,h,S,D]       (glue, this program)
 *   3     o = causal GQA attention(q, k, v)           attention.prefill   B S HQ HKV D causal
 *   -     merge heads: o -> [T, H]                    (glue)
 *   4     a = o Wo                                    gemm | gemm.splitk  M=T N=H K=H
 *   5     h1 = x + a, y1 = RMSNorm(h1)                rmsnorm.add         T, H
 *   6     u = y1 Wup                                  gemm | gemm.splitk  M=T N=I K=H
 *   7     g = SiLU(u * scale + bias)                  elementwise         rows=T cols=I
 *   8     d = g Wdown                                 gemm | gemm.splitk  M=T N=H K=I
 *   9     out = h1 + d (block output), RMSNorm(out)   rmsnorm.add         T, H  (the next layer's norm)
 *   -     K, V of the prompt -> paged caches; the     (glue)
 *         query of each prompt's last token
 *   10    decode attention over the caches            attention.decode    B=32 HQ HKV D page_size=16
 *                                                                         max_pages=256, seq_lens 4096
 *
 * What the families compute sets two simplifications, stated in the output too: the MLP is
 * up -> SiLU -> down (the elementwise family computes silu(x * scale + bias); no family multiplies
 * two tensors, so a SwiGLU gate silu(x Wg) * (x Wu) is not expressible) and there is no rotary
 * embedding (no family). The decode batch's sequences 0..3 are the prompts just prefilled: their
 * caches hold the prefill's K and V, and their query is the last prompt token's, so their decode
 * output must equal the prefill's output for that token (checked). Sequences 4..31 stand for
 * other requests of the batch: seeded random caches and queries.
 *
 * Each step runs through libtunert: the problem itself when the bundle has it (or the runtime's
 * nearest-problem choice for portable variants), else as row chunks that are tuned problems
 * (plan.h). A step the bundles cannot run stops the program before any GPU work, unless
 * --standins, which runs such a step with the plain reference kernel in bf16 and marks it.
 *
 * usage: decoder_block BUNDLE... [--plan] [--arch sm_90a] [--standins] [--device N] [--iters K]
 *   --plan   choose and print every step's variant, bind the arguments, and stop (no GPU needed;
 *            --arch is the architecture to check binaries against, default sm_90a)
 * exit: 0 every step ran and passed; 1 a check, launch or CUDA call failed; 2 usage; 3 no GPU;
 *       4 the bundles lack a family or a variant for a step (without --standins). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "plan.h"
#include "tunert.h"

/* ---- the model ------------------------------------------------------------------------------------ */

enum { B = 4, S = 4096, T = B * S, HQ = 32, HKV = 8, D = 128, H = HQ * D, I = 14336, NQKV = (HQ + 2 * HKV) * D };
enum { DB = 32, L = 4096, PAGE = 16, PAGES = DB * L / PAGE };
#define TOL_REL_L2 2e-2 /* bf16 activations against the fp32 block: ~1e-3 per rounding, a few in a chain */

enum { S_NORM1, S_QKV, S_PREFILL, S_OPROJ, S_NORM2, S_UP, S_SILU, S_DOWN, S_NORMF, S_DECODE, N_STEPS };
enum { G_SPLIT, G_MERGE, G_PAGES, N_GLUE };

typedef struct stepdef {
  const char *title;
  plan_req req;
} stepdef;

#define GEMM_REQ(m, n, k) {{"gemm", "gemm.splitk"}, 2, {{"M", m}, {"N", n}, {"K", k}}, 3, "M", "b_layout"}
static const stepdef steps[N_STEPS] = {
    [S_NORM1] = {"input RMSNorm", {{"rmsnorm"}, 1, {{"T", T}, {"H", H}, {"residual", 0}}, 3, "T", NULL}},
    [S_QKV] = {"QKV projection", GEMM_REQ(T, NQKV, H)},
    [S_PREFILL] = {"attention prefill (causal, GQA)",
                   {{"attention.prefill"}, 1, {{"B", B}, {"D", D}, {"HKV", HKV}, {"HQ", HQ}, {"S", S}, {"causal", 1}}, 6, NULL, NULL}},
    [S_OPROJ] = {"output projection", GEMM_REQ(T, H, H)},
    [S_NORM2] = {"residual add + RMSNorm", {{"rmsnorm.add"}, 1, {{"T", T}, {"H", H}, {"residual", 1}}, 3, "T", NULL}},
    [S_UP] = {"MLP up projection", GEMM_REQ(T, I, H)},
    [S_SILU] = {"SiLU(u * scale + bias)", {{"elementwise"}, 1, {{"rows", T}, {"cols", I}}, 2, "rows", NULL}},
    [S_DOWN] = {"MLP down projection", GEMM_REQ(T, H, I)},
    [S_NORMF] = {"residual add + next RMSNorm", {{"rmsnorm.add"}, 1, {{"T", T}, {"H", H}, {"residual", 1}}, 3, "T", NULL}},
    [S_DECODE] = {"attention decode (paged KV)",
                  {{"attention.decode"}, 1, {{"B", DB}, {"D", D}, {"HKV", HKV}, {"HQ", HQ}, {"max_pages", L / PAGE}, {"page_size", PAGE}}, 6, NULL, NULL}},
};
static const char *glue_titles[N_GLUE] = {"split heads (glue)", "merge heads (glue)", "KV -> pages, last query (glue)"};

/* ---- buffers ----------------------------------------------------------------------------------------- */

/* Activations in bf16 (the tuned pipeline) and fp32 (the reference): one pair per name. */
enum { X, Y0, QKV, Q, K, V, O, AO, A, H1, Y1, U, G, DN, OUT, YF, KC, VC, QD, OD, N_ACT };
static const int64_t act_numel[N_ACT] = {
    [X] = (int64_t)T * H, [Y0] = (int64_t)T * H, [QKV] = (int64_t)T * NQKV, [Q] = (int64_t)T * H, [K] = (int64_t)T * HKV * D,
    [V] = (int64_t)T * HKV * D, [O] = (int64_t)T * H, [AO] = (int64_t)T * H, [A] = (int64_t)T * H, [H1] = (int64_t)T * H,
    [Y1] = (int64_t)T * H, [U] = (int64_t)T * I, [G] = (int64_t)T * I, [DN] = (int64_t)T * H, [OUT] = (int64_t)T * H,
    [YF] = (int64_t)T * H, [KC] = (int64_t)PAGES * PAGE * HKV * D, [VC] = (int64_t)PAGES * PAGE * HKV * D,
    [QD] = (int64_t)DB * HQ * D, [OD] = (int64_t)DB * HQ * D};
enum { WN1, WN2, WNF, WQKV, WO, WUP, WDOWN, SC, BI, N_W };
static const int64_t w_numel[N_W] = {[WN1] = H, [WN2] = H, [WNF] = H, [WQKV] = (int64_t)NQKV * H, [WO] = (int64_t)H * H,
                                     [WUP] = (int64_t)I * H, [WDOWN] = (int64_t)H * I, [SC] = I, [BI] = I};

typedef struct bufs {
  void *t[N_ACT];              /* bf16 */
  float *r[N_ACT];             /* fp32 reference */
  uint16_t *w[N_W];            /* bf16 weights */
  int w_col[N_W];              /* GEMM weights: 1 = b[N][K] (col), 0 = b[K][N] (row) */
  int32_t *bt;                 /* block table [DB][L / PAGE] */
  int32_t *seq_lens;           /* [DB]: every decode sequence holds L tokens */
  float *ws;                   /* scratch (split-K partials, decode partials) */
  int64_t ws_numel;
  void *o_last;                /* [B][HQ][D] bf16: the prefill's output for each prompt's last token */
} bufs;

/* ---- state ------------------------------------------------------------------------------------------- */

typedef struct steprun {
  plan p;
  int standin;                 /* 1: no variant; run by the reference kernel (--standins) */
  double us;                   /* median time here [us] */
  double rel_l2;
  float max_abs;
  unsigned long long nonfinite;
  int checked, ok;
} steprun;

static steprun run[N_STEPS];
static double glue_us[N_GLUE];
static int iters = 10;
static void *stream;
static const char *bundle_paths[16];
static tunert_ctx *ctxs[16];
static int n_ctxs;

#define TRY(what, call)                                                                                                   \
  do {                                                                                                                    \
    int rc_ = (int)(call);                                                                                                \
    if (rc_) {                                                                                                            \
      fprintf(stderr, "decoder_block: %s: %s (%s:%d)\n", what, cudaGetErrorString((cudaError_t)rc_), __FILE__, __LINE__); \
      return -1;                                                                                                          \
    }                                                                                                                     \
  } while (0)

static const char *bundle_of(const tunert_ctx *c) {
  for (int i = 0; i < n_ctxs; ++i)
    if (ctxs[i] == c) return bundle_paths[i];
  return "?";
}

/* ---- binding each step's arguments ------------------------------------------------------------------- */

static int gemm_weight(int s) { return s == S_QKV ? WQKV : s == S_OPROJ ? WO : s == S_UP ? WUP : WDOWN; }

/* The buffers of step s, by the families' argument names. */
static int step_bufs(int s, const bufs *b, plan_buf *out) {
#define T_(i) ((uint64_t)(uintptr_t)b->t[i])
#define W_(i) ((uint64_t)(uintptr_t)b->w[i])
  int n = 0;
  switch (s) {
  case S_NORM1:
    out[n++] = (plan_buf){"x", T_(X), "bf16", act_numel[X], 1};
    out[n++] = (plan_buf){"w", W_(WN1), "bf16", H, 0};
    out[n++] = (plan_buf){"y", T_(Y0), "bf16", act_numel[Y0], 1};
    break;
  case S_NORM2:
  case S_NORMF: {
    int fin = s == S_NORMF;
    out[n++] = (plan_buf){"x", T_(fin ? DN : A), "bf16", act_numel[A], 1};
    out[n++] = (plan_buf){"r", T_(fin ? H1 : X), "bf16", act_numel[X], 1};
    out[n++] = (plan_buf){"w", W_(fin ? WNF : WN2), "bf16", H, 0};
    out[n++] = (plan_buf){"y", T_(fin ? YF : Y1), "bf16", act_numel[Y1], 1};
    out[n++] = (plan_buf){"h", T_(fin ? OUT : H1), "bf16", act_numel[H1], 1};
    break;
  }
  case S_QKV:
  case S_OPROJ:
  case S_UP:
  case S_DOWN: {
    int in = s == S_QKV ? Y0 : s == S_OPROJ ? AO : s == S_UP ? Y1 : G;
    int o = s == S_QKV ? QKV : s == S_OPROJ ? A : s == S_UP ? U : DN;
    int w = gemm_weight(s);
    out[n++] = (plan_buf){"a", T_(in), "bf16", act_numel[in], 1};
    out[n++] = (plan_buf){"b", W_(w), "bf16", w_numel[w], 0};
    out[n++] = (plan_buf){"c", T_(o), "bf16", act_numel[o], 1};
    out[n++] = (plan_buf){"ws", (uint64_t)(uintptr_t)b->ws, "f32", b->ws_numel, 0};
    break;
  }
  case S_SILU:
    out[n++] = (plan_buf){"x", T_(U), "bf16", act_numel[U], 1};
    out[n++] = (plan_buf){"scale", W_(SC), "bf16", I, 0};
    out[n++] = (plan_buf){"bias", W_(BI), "bf16", I, 0};
    out[n++] = (plan_buf){"y", T_(G), "bf16", act_numel[G], 1};
    break;
  case S_PREFILL:
    out[n++] = (plan_buf){"q", T_(Q), "bf16", act_numel[Q], 0};
    out[n++] = (plan_buf){"k", T_(K), "bf16", act_numel[K], 0};
    out[n++] = (plan_buf){"v", T_(V), "bf16", act_numel[V], 0};
    out[n++] = (plan_buf){"o", T_(O), "bf16", act_numel[O], 0};
    break;
  case S_DECODE:
    out[n++] = (plan_buf){"q", T_(QD), "bf16", act_numel[QD], 0};
    out[n++] = (plan_buf){"k_cache", T_(KC), "bf16", act_numel[KC], 0};
    out[n++] = (plan_buf){"v_cache", T_(VC), "bf16", act_numel[VC], 0};
    out[n++] = (plan_buf){"block_table", (uint64_t)(uintptr_t)b->bt, "i32", (int64_t)DB * (L / PAGE), 0};
    out[n++] = (plan_buf){"seq_lens", (uint64_t)(uintptr_t)b->seq_lens, "i32", DB, 0};
    out[n++] = (plan_buf){"o", T_(OD), "bf16", act_numel[OD], 0};
    out[n++] = (plan_buf){"partial", (uint64_t)(uintptr_t)b->ws, "f32", b->ws_numel, 0};
    break;
  }
  return n;
#undef T_
#undef W_
}

static float rms_eps(int s) {
  const plan *p = &run[s].p;
  for (int a = 0; p->ok && a < p->si.n_args; ++a)
    if (!strcmp(p->si.args[a].name, "eps") && p->si.args[a].has_value) return (float)p->si.args[a].value;
  return 1e-6f;
}

/* ---- one step, tuned (or stand-in) and reference --------------------------------------------------------- */

/* Step s of the bf16 pipeline: through libtunert, or the reference kernel in bf16 (stand-in). */
static int step_tuned(int s, const bufs *b) {
  if (!run[s].standin) {
    tunert_err e;
    int rc = plan_launch(&run[s].p, stream, &e);
    if (rc) { fprintf(stderr, "decoder_block: step %d (%s): %s\n", s + 1, steps[s].title, e.msg); return -1; }
    return 0;
  }
  const int bf = DT_BF16;
  void *const *t = b->t;
  switch (s) {
  case S_NORM1: TRY("stand-in", k_ref_rmsnorm(t[X], NULL, b->w[WN1], t[Y0], NULL, bf, bf, T, H, 1e-6f, stream)); break;
  case S_NORM2: TRY("stand-in", k_ref_rmsnorm(t[A], t[X], b->w[WN2], t[Y1], t[H1], bf, bf, T, H, 1e-6f, stream)); break;
  case S_NORMF: TRY("stand-in", k_ref_rmsnorm(t[DN], t[H1], b->w[WNF], t[YF], t[OUT], bf, bf, T, H, 1e-6f, stream)); break;
  case S_QKV: TRY("stand-in", k_ref_gemm(t[Y0], bf, b->w[WQKV], b->w_col[WQKV], t[QKV], bf, T, NQKV, H, stream)); break;
  case S_OPROJ: TRY("stand-in", k_ref_gemm(t[AO], bf, b->w[WO], b->w_col[WO], t[A], bf, T, H, H, stream)); break;
  case S_UP: TRY("stand-in", k_ref_gemm(t[Y1], bf, b->w[WUP], b->w_col[WUP], t[U], bf, T, I, H, stream)); break;
  case S_DOWN: TRY("stand-in", k_ref_gemm(t[G], bf, b->w[WDOWN], b->w_col[WDOWN], t[DN], bf, T, H, I, stream)); break;
  case S_SILU: TRY("stand-in", k_ref_silu(t[U], b->w[SC], b->w[BI], t[G], bf, bf, T, I, stream)); break;
  case S_PREFILL: TRY("stand-in", k_ref_prefill(t[Q], t[K], t[V], t[O], bf, bf, B, HQ, HKV, S, D, 1, stream)); break;
  case S_DECODE: TRY("stand-in", k_ref_decode(t[QD], t[KC], t[VC], b->bt, t[OD], bf, bf, DB, HQ, HKV, L, D, PAGE, stream)); break;
  }
  return 0;
}

static int glue_tuned(int g, const bufs *b) {
  void *const *t = b->t;
  switch (g) {
  case G_SPLIT: TRY("split heads", k_split_heads(t[QKV], t[Q], t[K], t[V], DT_BF16, B, S, HQ, HKV, D, stream)); break;
  case G_MERGE: TRY("merge heads", k_merge_heads(t[O], t[AO], DT_BF16, B, S, HQ, D, stream)); break;
  case G_PAGES:
    TRY("KV to pages", k_to_pages(t[K], t[V], t[KC], t[VC], b->bt, DT_BF16, B, HKV, S, D, PAGE, stream));
    TRY("last query", k_last_row(t[Q], t[QD], DT_BF16, B, HQ, S, D, stream));
    break;
  }
  return 0;
}

/* The fp32 block, from the same inputs and weights. */
static int reference(const bufs *b) {
  const int f = DT_F32;
  float *const *r = b->r;
  void *const *t = b->t;
  TRY("ref", k_bf16_to_f32(t[X], r[X], (size_t)act_numel[X], stream));
  TRY("ref", k_ref_rmsnorm(r[X], NULL, b->w[WN1], r[Y0], NULL, f, f, T, H, rms_eps(S_NORM1), stream));
  TRY("ref", k_ref_gemm(r[Y0], f, b->w[WQKV], b->w_col[WQKV], r[QKV], f, T, NQKV, H, stream));
  TRY("ref", k_split_heads(r[QKV], r[Q], r[K], r[V], f, B, S, HQ, HKV, D, stream));
  TRY("ref", k_ref_prefill(r[Q], r[K], r[V], r[O], f, f, B, HQ, HKV, S, D, 1, stream));
  TRY("ref", k_merge_heads(r[O], r[AO], f, B, S, HQ, D, stream));
  TRY("ref", k_ref_gemm(r[AO], f, b->w[WO], b->w_col[WO], r[A], f, T, H, H, stream));
  TRY("ref", k_ref_rmsnorm(r[A], r[X], b->w[WN2], r[Y1], r[H1], f, f, T, H, rms_eps(S_NORM2), stream));
  TRY("ref", k_ref_gemm(r[Y1], f, b->w[WUP], b->w_col[WUP], r[U], f, T, I, H, stream));
  TRY("ref", k_ref_silu(r[U], b->w[SC], b->w[BI], r[G], f, f, T, I, stream));
  TRY("ref", k_ref_gemm(r[G], f, b->w[WDOWN], b->w_col[WDOWN], r[DN], f, T, H, I, stream));
  TRY("ref", k_ref_rmsnorm(r[DN], r[H1], b->w[WNF], r[YF], r[OUT], f, f, T, H, rms_eps(S_NORMF), stream));
  /* decode: the other requests' caches and queries as the bf16 pipeline has them, then the prompts' */
  TRY("ref", k_bf16_to_f32(t[KC], r[KC], (size_t)act_numel[KC], stream));
  TRY("ref", k_bf16_to_f32(t[VC], r[VC], (size_t)act_numel[VC], stream));
  TRY("ref", k_bf16_to_f32(t[QD], r[QD], (size_t)act_numel[QD], stream));
  TRY("ref", k_to_pages(r[K], r[V], r[KC], r[VC], b->bt, f, B, HKV, S, D, PAGE, stream));
  TRY("ref", k_last_row(r[Q], r[QD], f, B, HQ, S, D, stream));
  TRY("ref", k_ref_decode(r[QD], r[KC], r[VC], b->bt, r[OD], f, f, DB, HQ, HKV, L, D, PAGE, stream));
  TRY("ref", cudaStreamSynchronize((cudaStream_t)stream));
  return 0;
}

/* The output each step is checked by. */
static int step_out(int s) {
  static const int o[N_STEPS] = {[S_NORM1] = Y0, [S_QKV] = QKV, [S_PREFILL] = O, [S_OPROJ] = A, [S_NORM2] = Y1, [S_UP] = U,
                                 [S_SILU] = G, [S_DOWN] = DN, [S_NORMF] = OUT, [S_DECODE] = OD};
  return o[s];
}

/* ---- timing ------------------------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of iters runs of step s (glue g when s < 0) [us]. */
static int time_it(int s, int g, const bufs *b, double *us) {
  cudaEvent_t e0, e1;
  double t[256];
  TRY("event", cudaEventCreate(&e0));
  TRY("event", cudaEventCreate(&e1));
  for (int i = 0; i < iters; ++i) {
    TRY("event", cudaEventRecord(e0, (cudaStream_t)stream));
    if (s >= 0 ? step_tuned(s, b) : glue_tuned(g, b)) return -1;
    TRY("event", cudaEventRecord(e1, (cudaStream_t)stream));
    TRY("run", cudaEventSynchronize(e1));
    float ms;
    TRY("event", cudaEventElapsedTime(&ms, e0, e1));
    t[i] = ms * 1e3;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  qsort(t, (size_t)iters, sizeof t[0], cmp_double);
  *us = t[iters / 2];
  return 0;
}

/* ---- setup --------------------------------------------------------------------------------------------------- */

static int alloc_all(bufs *b) {
  for (int i = 0; i < N_ACT; ++i) {
    TRY("cudaMalloc", cudaMalloc(&b->t[i], (size_t)act_numel[i] * 2));
    TRY("cudaMalloc", cudaMalloc((void **)&b->r[i], (size_t)act_numel[i] * 4));
    TRY("poison", cudaMemset(b->t[i], 0xff, (size_t)act_numel[i] * 2)); /* NaN until written */
  }
  for (int i = 0; i < N_W; ++i) TRY("cudaMalloc", cudaMalloc((void **)&b->w[i], (size_t)w_numel[i] * 2));
  TRY("cudaMalloc", cudaMalloc((void **)&b->bt, sizeof(int32_t) * DB * (L / PAGE)));
  TRY("cudaMalloc", cudaMalloc((void **)&b->seq_lens, sizeof(int32_t) * DB));
  TRY("cudaMalloc", cudaMalloc((void **)&b->ws, (size_t)b->ws_numel * 4));
  TRY("cudaMalloc", cudaMalloc(&b->o_last, (size_t)B * HQ * D * 2));
  return 0;
}

static int init_inputs(bufs *b) {
  /* seeded: the same block every run */
  TRY("init", k_init(b->t[X], DT_BF16, (size_t)act_numel[X], 1, 1, 1.f, 0.f, stream));
  TRY("init", k_init(b->w[WN1], DT_BF16, H, 2, 0, 0.5f, 1.f, stream));
  TRY("init", k_init(b->w[WN2], DT_BF16, H, 3, 0, 0.5f, 1.f, stream));
  TRY("init", k_init(b->w[WNF], DT_BF16, H, 4, 0, 0.5f, 1.f, stream));
  TRY("init", k_init(b->w[SC], DT_BF16, I, 5, 0, 0.5f, 1.f, stream));
  TRY("init", k_init(b->w[BI], DT_BF16, I, 6, 0, 0.5f, 0.f, stream));
  /* weights ~ N(0, 1/K): activations stay of order 1 */
  struct { int w; int64_t n, k; } g[] = {{WQKV, NQKV, H}, {WO, H, H}, {WUP, I, H}, {WDOWN, H, I}};
  for (int i = 0; i < 4; ++i)
    TRY("init", k_init_weight(b->w[g[i].w], g[i].n, g[i].k, b->w_col[g[i].w], 10 + (uint64_t)i, 1.f / sqrtf((float)g[i].k), stream));
  /* the decode batch: other requests' caches and queries */
  TRY("init", k_init(b->t[KC], DT_BF16, (size_t)act_numel[KC], 20, 1, 1.f, 0.f, stream));
  TRY("init", k_init(b->t[VC], DT_BF16, (size_t)act_numel[VC], 21, 1, 1.f, 0.f, stream));
  TRY("init", k_init(b->t[QD], DT_BF16, (size_t)act_numel[QD], 22, 1, 1.f, 0.f, stream));
  /* block table: a seeded permutation of the pages */
  int32_t *bt = malloc(sizeof(int32_t) * PAGES);
  if (!bt) { fprintf(stderr, "decoder_block: out of memory\n"); return -1; }
  uint64_t st = 0x243f6a8885a308d3ull;
  for (int i = 0; i < PAGES; ++i) bt[i] = i;
  for (int i = PAGES - 1; i > 0; --i) {
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    int j = (int)(st % (uint64_t)(i + 1));
    int32_t x = bt[i];
    bt[i] = bt[j], bt[j] = x;
  }
  int rc = (int)cudaMemcpy(b->bt, bt, sizeof(int32_t) * PAGES, cudaMemcpyHostToDevice);
  free(bt);
  TRY("block table", rc);
  int32_t lens[DB];
  for (int i = 0; i < DB; ++i) lens[i] = L;
  TRY("sequence lengths", cudaMemcpy(b->seq_lens, lens, sizeof lens, cudaMemcpyHostToDevice));
  TRY("init", cudaStreamSynchronize((cudaStream_t)stream));
  return 0;
}

/* ---- main ---------------------------------------------------------------------------------------------------- */

static void usage(void) {
  fprintf(stderr, "usage: decoder_block BUNDLE... [--plan] [--arch sm_90a] [--standins] [--device N] [--iters K]\n");
}

static void print_plan(int standins) {
  printf("\nplan (per step: the family and variant libtunert chose, and why)\n");
  for (int s = 0; s < N_STEPS; ++s) {
    steprun *r = &run[s];
    printf("%2d %-32s ", s + 1, steps[s].title);
    if (!r->p.ok) {
      printf("%s\n     %s\n", standins ? "STAND-IN (plain reference kernel, bf16)" : "NO VARIANT", r->p.why_not);
      continue;
    }
    printf("%s from %s\n     %s\n     variant %s; %s\n", r->p.family, bundle_of(r->p.ctx), r->p.how, r->p.si.variant, r->p.si.binary);
  }
}

int main(int argc, char **argv) {
  int n_bundles = 0, ordinal = 0, plan_only = 0, standins = 0;
  const char *arch = "sm_90a";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) ordinal = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = atoi(argv[++i]);
      if (iters < 1 || iters > 256) { usage(); return 2; }
    } else if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
    else if (!strcmp(argv[i], "--plan")) plan_only = 1;
    else if (!strcmp(argv[i], "--standins")) standins = 1;
    else if (argv[i][0] != '-' && n_bundles < 16) bundle_paths[n_bundles++] = argv[i];
    else { usage(); return 2; }
  }
  if (!n_bundles) { usage(); return 2; }

  tunert_options o;
  tunert_options_init(&o);
  o.device = ordinal;
  if (plan_only) { o.flags |= TUNERT_OPEN_NO_DEVICE; o.arch = arch; }
  tunert_err e;
  int code = 0;
  printf("decoder block forward through libtunert (%s)\n", plan_only ? "plan only" : "run");
  for (int i = 0; i < n_bundles; ++i) {
    if (tunert_open(bundle_paths[i], &o, &ctxs[n_ctxs], &e)) { fprintf(stderr, "decoder_block: %s\n", e.msg); code = 4; goto done; }
    tunert_ctx *c = ctxs[n_ctxs++];
    tunert_bundle_info bi = {.struct_size = sizeof bi};
    tunert_bundle_info_get(c, &bi);
    printf("bundle %s: format %d.%d by tune %s, measured on %s, binaries %s, opened in %.2f ms; families:", bundle_paths[i], bi.format_major,
           bi.format_minor, bi.tool_version, bi.device_name, bi.archs, bi.open_ms);
    for (int f = 0; f < tunert_family_count(c); ++f) printf(" %s", tunert_family_name(c, f));
    printf("\n");
  }
  printf("model: hidden %d (%d query heads x %d, %d KV heads), MLP %d; prefill B=%d x S=%d (T=%d tokens, causal); "
         "decode %d sequences x %d cached tokens (page %d)\n",
         H, HQ, D, HKV, I, B, S, T, DB, L, PAGE);
  printf("MLP: up -> SiLU(u * scale + bias) -> down (the elementwise family computes silu(x * scale + bias); "
         "no family multiplies two tensors, so a SwiGLU gate is not expressible); no rotary embedding (no family)\n");

  /* plan every step; a missing family or problem stops here unless --standins */
  int missing = 0;
  for (int s = 0; s < N_STEPS; ++s) {
    plan_make(ctxs, n_ctxs, &steps[s].req, &run[s].p);
    if (!run[s].p.ok) { missing++; run[s].standin = standins; }
  }
  print_plan(standins);
  bufs b = {0};
  for (int i = 0; i < N_W; ++i) b.w_col[i] = 1;
  b.ws_numel = 1;
  for (int s = 0; s < N_STEPS; ++s) {
    if (!run[s].p.ok) continue;
    if (run[s].p.scratch_bytes / 4 + 1 > b.ws_numel) b.ws_numel = run[s].p.scratch_bytes / 4 + 1;
    if (run[s].p.layout[0]) b.w_col[gemm_weight(s)] = !strcmp(run[s].p.layout, "col");
  }
  if (missing && !standins) {
    fprintf(stderr, "decoder_block: the bundles cannot run %d of the %d steps (NO VARIANT above): make the bundle with those "
                    "families and problems (tune run, then tune bundle --recipe ...), or pass --standins to run them with the "
                    "plain reference kernel\n", missing, N_STEPS);
    code = 4;
    goto done;
  }
  if (plan_only) { /* bind with null pointers: checks names, dtypes and sizes */
    char why[512];
    for (int s = 0; s < N_STEPS; ++s) {
      plan_buf pb[16];
      int n = step_bufs(s, &b, pb);
      if (run[s].p.ok && plan_bind(&run[s].p, pb, n, why, sizeof why)) {
        fprintf(stderr, "decoder_block: step %d (%s): %s\n", s + 1, steps[s].title, why);
        code = 4;
      }
    }
    if (!code) printf("\nplan ok: every step %s; arguments bound by name with matching dtypes and sizes\n",
                      missing ? "has a variant or a stand-in" : "has a variant");
    goto done;
  }

  /* the GPU */
  int n_dev = 0;
  if (cudaGetDeviceCount(&n_dev) || n_dev <= ordinal || cudaSetDevice(ordinal) || cudaFree(0)) {
    fprintf(stderr, "decoder_block: no usable NVIDIA GPU/driver here (device %d): this program runs kernels (--plan does not)\n", ordinal);
    code = 3;
    goto done;
  }
  struct cudaDeviceProp prop;
  if (!cudaGetDeviceProperties(&prop, ordinal)) printf("device %d: %s (sm_%d%d)\n", ordinal, prop.name, prop.major, prop.minor);
  cudaStream_t st;
  if (cudaStreamCreate(&st)) { fprintf(stderr, "decoder_block: cudaStreamCreate failed\n"); code = 1; goto done; }
  stream = st;
  if (alloc_all(&b) || init_inputs(&b)) { code = 1; goto done; }
  for (int s = 0; s < N_STEPS; ++s) {
    char why[512];
    plan_buf pb[16];
    int n = step_bufs(s, &b, pb);
    if (run[s].p.ok && plan_bind(&run[s].p, pb, n, why, sizeof why)) {
      fprintf(stderr, "decoder_block: step %d (%s): %s\n", s + 1, steps[s].title, why);
      code = 4;
      goto done;
    }
  }

  /* 1. the block, once, in order (the checked run; it also loads every module) */
  static const int order[][2] = {{S_NORM1, -1}, {S_QKV, -1}, {-1, G_SPLIT}, {S_PREFILL, -1}, {-1, G_MERGE}, {S_OPROJ, -1},
                                 {S_NORM2, -1}, {S_UP, -1},  {S_SILU, -1},  {S_DOWN, -1},    {S_NORMF, -1}, {-1, G_PAGES},
                                 {S_DECODE, -1}};
  int n_order = (int)(sizeof order / sizeof order[0]);
  for (int i = 0; i < n_order; ++i)
    if (order[i][0] >= 0 ? step_tuned(order[i][0], &b) : glue_tuned(order[i][1], &b)) { code = 1; goto done; }
  if (cudaStreamSynchronize(st)) { fprintf(stderr, "decoder_block: the block failed on the GPU: %s\n", cudaGetErrorString(cudaGetLastError())); code = 1; goto done; }
  /* the prefill's output for each prompt's last token, before timing reruns anything */
  if (k_last_row(b.t[O], b.o_last, DT_BF16, B, HQ, S, D, stream)) { code = 1; goto done; }

  /* 2. the fp32 reference of the whole block, and every step's output against it */
  printf("\nreference: the whole block in fp32 (plain kernels of this program) ...\n");
  fflush(stdout);
  if (reference(&b)) { code = 1; goto done; }
  for (int s = 0; s < N_STEPS; ++s) {
    int out = step_out(s);
    cmp_result c;
    if (k_compare(b.t[out], DT_BF16, b.r[out], DT_F32, (size_t)act_numel[out], &c, stream)) { code = 1; goto done; }
    steprun *r = &run[s];
    r->checked = 1;
    r->rel_l2 = c.sum_sq_ref > 0 ? sqrt(c.sum_sq_diff / c.sum_sq_ref) : INFINITY;
    r->max_abs = c.max_abs;
    r->nonfinite = c.nonfinite;
    r->ok = c.nonfinite == 0 && r->rel_l2 <= TOL_REL_L2;
  }
  cmp_result cross;
  if (k_compare(b.t[OD], DT_BF16, b.o_last, DT_BF16, (size_t)B * HQ * D, &cross, stream)) { code = 1; goto done; }
  double cross_rel = cross.sum_sq_ref > 0 ? sqrt(cross.sum_sq_diff / cross.sum_sq_ref) : INFINITY;
  int cross_ok = cross.nonfinite == 0 && cross_rel <= TOL_REL_L2;

  /* 3. per-kernel times */
  for (int s = 0; s < N_STEPS; ++s)
    if (time_it(s, 0, &b, &run[s].us)) { code = 1; goto done; }
  for (int g = 0; g < N_GLUE; ++g)
    if (time_it(-1, g, &b, &glue_us[g])) { code = 1; goto done; }

  /* 4. report */
  printf("\n%-3s %-32s %-18s %8s %12s %12s %10s %9s  %s\n", "", "step", "family", "launches", "time here", "tuned time", "rel-L2",
         "max abs", "check");
  double total = 0, total_glue = 0;
  int n_lib = 0, n_ok = 0;
  for (int s = 0; s < N_STEPS; ++s) {
    steprun *r = &run[s];
    char tt[32] = "-";
    if (r->p.ok && r->p.est_ns > 0) snprintf(tt, sizeof tt, "%.1f us", r->p.est_ns / 1e3);
    printf("%-3d %-32s %-18s %8d %9.1f us %12s %10.2e %9.2e  %s%s\n", s + 1, steps[s].title, r->standin ? "STAND-IN" : r->p.family,
           r->standin ? 1 : r->p.chunks * r->p.si.n_launches, r->us, tt, r->rel_l2, r->max_abs, r->ok ? "ok" : "MISMATCH",
           r->nonfinite ? " (non-finite values)" : "");
    total += r->us;
    n_lib += !r->standin;
    n_ok += r->ok;
  }
  for (int g = 0; g < N_GLUE; ++g) {
    printf("%-3s %-32s %-18s %8s %9.1f us\n", "-", glue_titles[g], "(this program)", "", glue_us[g]);
    total_glue += glue_us[g];
  }
  printf("\ndecode vs prefill for the prompts' last tokens (sequences 0..%d): rel-L2 %.2e, max abs %.2e: %s\n", B - 1, cross_rel,
         cross.max_abs, cross_ok ? "ok" : "MISMATCH");
  printf("summary: %d of %d steps through libtunert from the bundle%s, %d of %d within rel-L2 %.0e of the fp32 block; "
         "kernel time %.1f us (steps) + %.1f us (glue)\n",
         n_lib, N_STEPS, n_lib < N_STEPS ? " (the others: plain reference kernels, --standins)" : "", n_ok, N_STEPS, TOL_REL_L2, total,
         total_glue);
  printf("times: CUDA-event median of %d runs per step on this GPU (chunked steps: all their launches); 'tuned time' is the "
         "bundle's measured median (x launches) for the tuned problem, measured on %s\n",
         iters, run[S_PREFILL].p.ok ? run[S_PREFILL].p.si.measured_on : "the tuning device");
  code = n_ok == N_STEPS && cross_ok ? 0 : 1;
done:
  for (int i = 0; i < n_ctxs; ++i) tunert_close(ctxs[i]);
  return code;
}
