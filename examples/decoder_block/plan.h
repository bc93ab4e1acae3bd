/* plan.h: how the decoder block example runs one step through libtunert.
 *
 * Owns: choosing, for a step's problem as the program has it, a kernel family among the open
 * bundles and its selection (tunert_select answers any problem of a family's domain: the tuned
 * entry, else the nearest tuned entry whose rules hold, else the family's fallback; an entry may
 * be a vendor entry), binding the program's buffers and scalars to the family's arguments by name,
 * and launching. A problem is never cut into tuned shapes: every step is one problem.
 * Must not: allocate device memory or launch anything but tunert_launch (the caller owns buffers).
 * Needs no GPU: plan_make and plan_bind work on a machine without a driver. */
#ifndef DECODER_PLAN_H
#define DECODER_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "tunert.h"

#define PLAN_MAX_ARGS 32

/* A problem dim by name: an integer (or bool 0/1), or the value of an enum dim ("col"). */
typedef struct plan_dim { const char *name; int64_t v; const char *enum_value; } plan_dim;

typedef struct plan_req {
  const char *families[3];     /* candidate families, e.g. gemm.skinny, gemm and gemm.splitk */
  int n_families;
  plan_dim dims[8];            /* by name; a family dim not listed here makes it unusable */
  int n_dims;
} plan_req;

/* One argument the program provides, by the family's argument name. */
typedef struct plan_buf {
  const char *name;
  int scalar;                  /* 0: a tensor (ptr, dtype, numel); 1: an integer scalar (value) */
  uint64_t ptr;                /* device pointer */
  const char *dtype;           /* "bf16", "f32", "i32" */
  int64_t numel;               /* elements from ptr to the end of the program's buffer */
  int view;                    /* 1: a strided view into a larger buffer (numel may exceed the shape) */
  int64_t value;               /* scalar == 1: passed instead of the bundle's value */
} plan_buf;

typedef struct plan {
  int ok;                      /* 1: a family and a launchable selection were found */
  char family[64];
  tunert_ctx *ctx;
  const tunert_selection *sel;
  tunert_selection_info si;
  char how[512];               /* the kind of selection and its tuned problem, in words */
  char why_not[2048];          /* when !ok: what each candidate family said */
  int64_t scratch_bytes;       /* the scratch argument's size, 0 when none */
  tunert_arg args[PLAN_MAX_ARGS];
} plan;

/* Choose a family and selection among ctxs[0..n) (a family is taken from the first bundle that has
 * it). Across families the selection kinds rank tuned and vendor (the problem itself) first, then
 * nearest by distance, then fallback; ties go to the smaller measured time. A vendor entry that
 * libtunert does not run (an attention library) is not launchable here and counts as none.
 * Returns 1 when found (p->ok), 0 when not (p->why_not says why). */
int plan_make(tunert_ctx *const *ctxs, int n, const plan_req *req, plan *p);

/* Bind arguments by name: every tensor (scratch too) must be given, with the dtype the family
 * declares and at least the selection's elements (exactly, unless a view); scalars take the
 * program's value where given, else the bundle's; tensor maps are built by libtunert.
 * Returns 0, or -1 with the reason in why. */
int plan_bind(plan *p, const plan_buf *bufs, int n, char *why, size_t why_n);

/* The value a bound scalar argument passes (the program's or the bundle's), or dflt. */
double plan_scalar(const plan *p, const char *name, double dflt);

/* 1 when the selected variant's parameters hold "NAME":value (e.g. "USE_TMA", 1). */
int plan_param_is(const plan *p, const char *name, int value);

/* 1 when a tensor map of the selection follows the scalar `name` (a row stride such as q_ld: the map
 * reads a strided view at the stride the program passes), 0 when the maps assume dense rows. */
int plan_map_follows(const plan *p, const char *name);

/* Launch on stream. Returns a tunert_status. */
int plan_launch(const plan *p, void *stream, tunert_err *err);

#endif
