/* plan.h: how the decoder block example runs one step through libtunert.
 *
 * Owns: choosing, for a step's problem, a kernel family of the open bundles and a variant
 * (tunert_select), binding the program's buffers to the family's arguments by name, and
 * launching. A problem the bundle was not tuned for may still run as consecutive row chunks that
 * each are a tuned problem (a GEMM of M = 16384 as 4 launches of the tuned M = 4096, with the rows
 * of a and c offset per launch): every launch is then an exact, measured selection. Otherwise the
 * runtime's nearest-problem policy decides (portable variants only), and the plan says so.
 * Must not: allocate device memory or launch anything but tunert_launch (the caller owns buffers).
 * Needs no GPU: plan_make and plan_bind work on a machine without a driver. */
#ifndef DECODER_PLAN_H
#define DECODER_PLAN_H

#include <stdint.h>

#include "tunert.h"

#define PLAN_MAX_ARGS 32

typedef struct plan_dim { const char *name; int64_t v; } plan_dim;

typedef struct plan_req {
  const char *families[2];     /* candidate families, e.g. gemm and gemm.splitk */
  int n_families;
  plan_dim dims[8];            /* by name; a family dim not listed here makes it unusable */
  int n_dims;
  const char *row_dim;         /* the dim a problem may be cut along into tuned problems, or NULL */
  const char *layout_dim;      /* an enum dim the program can choose freely (e.g. "b_layout"), or NULL */
} plan_req;

typedef struct plan_buf {
  const char *name;            /* the family's argument name */
  uint64_t ptr;                /* device pointer */
  const char *dtype;           /* "bf16", "f32", "i32" */
  int64_t numel;               /* elements of the whole buffer (checked against the arg shapes) */
  int rows;                    /* 1: indexed by the row dim (offset per chunk) */
} plan_buf;

typedef struct plan {
  int ok;                      /* 1: a family and variant were found */
  char family[64];
  tunert_ctx *ctx;
  const tunert_selection *sel;
  tunert_selection_info si;
  int exact;                   /* every launch is an exact tuned problem */
  int chunks;                  /* launches per run (1: the problem itself) */
  int64_t chunk_rows;          /* row-dim value of one launch */
  char layout[16];             /* the layout_dim value chosen, "" when none */
  double est_ns;               /* chunks x the measured median [ns]; 0 for a nearest selection */
  char how[512];               /* why this choice, in words */
  char why_not[2048];          /* when !ok: what each candidate said */
  int64_t scratch_bytes;       /* the scratch argument's size for one launch, 0 when none */
  tunert_arg args[PLAN_MAX_ARGS];
  int64_t chunk_stride[PLAN_MAX_ARGS];  /* bytes to add to a row argument per chunk */
} plan;

/* Choose a family and variant among ctxs[0..n) (a family is taken from the first bundle that has
 * it). Returns 1 when found (p->ok), 0 when not (p->why_not says why). */
int plan_make(tunert_ctx *const *ctxs, int n, const plan_req *req, plan *p);

/* Bind buffers by argument name: tensors must be listed (scratch too), with the dtype the family
 * declares and as many elements as the selection's shape times the chunks (rows = 1) or exactly
 * the shape (rows = 0); scalars pass the bundle's value. Returns 0, or -1 with the reason in why. */
int plan_bind(plan *p, const plan_buf *bufs, int n, char *why, size_t why_n);

/* Launch every chunk on stream. Returns a tunert_status. */
int plan_launch(const plan *p, void *stream, tunert_err *err);

#endif
