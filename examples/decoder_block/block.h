/* block.h: the decoder block example's model as an engine runs it.
 *
 * Owns: the sizes (Llama-3-8B / Mistral-7B: hidden 4096 = 32 query heads x 128, 8 KV heads, MLP
 * 14336), the device buffers, the nine steps of the block for each phase (a prefill pass over B
 * prompts of different lengths packed into T token rows; a decode step of one new token per
 * sequence over the paged KV cache), each step's libtunert problem and argument binding, its
 * stand-in (the plain reference kernel in bf16, --standins) and its fp32 reference, and the layout
 * glue between steps.
 *
 *   step  what                                    family                  prefill rows / decode rows
 *   1     y0 = RMSNorm(x)                         rmsnorm                 T / B
 *   2     qkv = y0 Wqkv                           gemm | gemm.splitk      M = T / B
 *   -     K, V of qkv -> the paged caches         (glue)                  each prompt token / the new token
 *   3     o = causal GQA attention                attention.varlen        packed prompts (cu_seqlens)
 *                                                 attention.decode        new token over the paged cache
 *   4     a = o Wo                                gemm | gemm.splitk
 *   5     h1 = x + a, y1 = RMSNorm(h1)            rmsnorm.add
 *   6     u = y1 Wup                              gemm | gemm.splitk
 *   7     g = SiLU(u * scale + bias)              elementwise
 *   8     d = g Wdown                             gemm | gemm.splitk
 *   9     out = h1 + d, RMSNorm(out)              rmsnorm.add             (the next layer's norm)
 *   (the GEMM steps ask gemm.skinny too, which serves the decode rows: M <= 128)
 *
 * Attention reads q, k, v in place from the fused qkv rows (row strides), except where the
 * selected varlen variant reads them with TMA over dense rows: then a glue kernel splits them.
 * Must not: choose kernels (plan.h) or decide the run's order of phases (decoder_block.c). */
#ifndef DECODER_BLOCK_H
#define DECODER_BLOCK_H

#include <stdint.h>

#include "plan.h"

/* A CUDA runtime call of the example: on failure print what failed and return -1. */
#define TRY(what, call)                                                                                                   \
  do {                                                                                                                    \
    int rc_ = (int)(call);                                                                                                \
    if (rc_) {                                                                                                            \
      fprintf(stderr, "decoder_block: %s: %s (%s:%d)\n", what, cudaGetErrorString((cudaError_t)rc_), __FILE__, __LINE__); \
      return -1;                                                                                                          \
    }                                                                                                                     \
  } while (0)

enum { HQ = 32, HKV = 8, D = 128, H = HQ * D, I = 14336, NQKV = (HQ + 2 * HKV) * D };
#define MAX_SEQS 64
#define RMS_EPS 1e-6f /* the recipes' eps, used where a step has no bundle value */

enum { PH_PREFILL, PH_DECODE, N_PHASES };
enum { S_NORM1, S_QKV, S_ATTN, S_OPROJ, S_NORM2, S_UP, S_SILU, S_DOWN, S_NORMF, N_STEPS };
enum { G_SPLIT, G_PAGES, G_APPEND, N_GLUE };
/* activations, one set per phase (rows T or B) */
enum { X, Y0, QKV, Q, K, V, O, A, H1, Y1, U, G, DN, OUT, YF, N_ACT };
enum { WN1, WN2, WNF, WQKV, WO, WUP, WDOWN, SC, BI, N_W };

typedef struct shape {
  int B;                       /* sequences */
  int lens[MAX_SEQS];          /* prompt lengths */
  int T;                       /* prompt tokens in all */
  int steps;                   /* decode steps after the prefill */
  int page;                    /* KV cache page size [tokens] */
  int max_pages;               /* block-table width: the longest prompt plus the steps, in pages */
  int64_t pages;               /* the cache's pages, B * max_pages (the decode family's k_cache shape) */
  int hist;                    /* tokens per sequence of the reference's token-major K/V history */
} shape;

typedef struct bufs {
  void *t[N_PHASES][N_ACT];    /* bf16, the tuned pipeline */
  float *r[N_PHASES][N_ACT];   /* fp32, the reference */
  uint16_t *w[N_W];            /* bf16 weights; GEMM weights [N][K] (nn.Linear's layout, b_layout col) */
  void *kc, *vc;               /* paged caches [pages][page][HKV][D] bf16 */
  float *hk, *hv;              /* the reference's K/V history [B][hist][HKV][D] fp32, no pages */
  int32_t *bt, *hist_bt;       /* block table [B][max_pages] (shuffled pages); the history's [B] = b */
  int32_t *cu;                 /* cu_seqlens [B + 1] */
  int32_t *seq_lens;           /* [B]: the decode step's lengths, the new token included */
  float *ws;                   /* scratch (split-K partials, decode partials) */
  int64_t ws_numel;
} bufs;

typedef struct steprun {
  plan p;
  int standin;                 /* 1: no variant; run by the reference kernel in bf16 (--standins) */
} steprun;

typedef struct block {
  shape sh;
  bufs b;
  steprun run[N_PHASES][N_STEPS];
  int dense_qkv;               /* prefill: q, k, v split into dense tensors for a TMA variant whose maps assume dense rows */
  void *stream;
} block;

/* Sizes from the prompt lengths; 0, or -1 with the reason in why. */
int shape_init(shape *sh, const int *lens, int B, int steps, int page, char *why, size_t why_n);
int64_t act_numel(const shape *sh, int ph, int act);

const char *step_title(int s);
const char *phase_name(int ph);
const char *glue_title(int g);
/* The output a step is checked by. */
int step_out(int s);
/* The libtunert problem of step s in phase ph. */
void step_req(const shape *sh, int ph, int s, plan_req *req);
/* Plan every step (tunert_select), set dense_qkv and the scratch size; returns the steps with
 * no variant (stand-ins when standins, else the program stops). */
int block_plan(block *k, tunert_ctx *const *ctxs, int n_ctxs, int standins);
/* Bind every planned step's arguments to the buffers (null pointers before block_alloc: checks
 * names, dtypes and sizes only). 0, or -1 with the step and reason printed. */
int block_bind(block *k);

/* Device buffers and seeded inputs (prompts, weights, block table, cu_seqlens). 0 or -1. */
int block_alloc(block *k);
int block_init_inputs(block *k);

/* Launch step s of phase ph (tuned, or its stand-in), glue g, or the whole phase in order. 0 or -1. */
int step_launch(block *k, int ph, int s);
int glue_launch(block *k, int g);
int phase_launch(block *k, int ph);
/* A phase's launches in order: items[i] = step s (>= 0) or glue g as -1 - g. Returns the count
 * (at most N_STEPS + N_GLUE). */
int phase_order(const block *k, int ph, int *items);

/* The fp32 reference of a phase from the tuned pipeline's input rows (t[ph][X]): every step into
 * r[ph]; attention over the reference's own K/V history (prefill writes the prompts', a decode
 * step appends its token's at seq_lens - 1). 0 or -1. */
int reference_phase(block *k, int ph);

#endif
