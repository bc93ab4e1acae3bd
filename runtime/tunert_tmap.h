/* tunert_tmap.h: tensor-map args in libtunert (docs/tensormap-args.md).
 *
 * Owns: a map's spec evaluated for one problem (rt_tmap_spec), the driver's
 * rules for it checked before any encode (so a bad box is a status and a
 * message, never the driver's bare CUDA_ERROR_INVALID_VALUE), and the encode
 * through cuTensorMapEncodeTiled from the libcuda the context opened. The
 * same rules as the worker's (tuner/tensormap.c), rewritten here because the
 * runtime links no tuner code. Internal to libtunert.
 *
 * A map's strides may name one scalar arg of the family (bundle format 1.6):
 * the mapped tensor's row stride [elements], e.g. "q_ld * 2". The map then
 * describes a strided view of the tensor: its rows (the leading dim) that many
 * elements apart. Selection evaluates it with the bundle's value of the scalar;
 * a launch that passes another value gets the map re-evaluated with it and
 * checked against that view's extent (rt_tmap_view_bytes). */
#ifndef TUNERT_TMAP_H
#define TUNERT_TMAP_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "tunert_expr.h"
#include "tunert_format.h"

/* A tensormap arg of an entry: fixed fields and dims/strides/box expressions. */
typedef struct rt_tmap_expr {
  int arg, tensor, elsize, cu_dtype, swizzle, l2_promotion, oob_nan;
  uint32_t estr[TUNERT_TMAP_MAX_RANK];   /* 1 when not given */
  int n_estr;                            /* 0: not given */
  tunert_expr *dims, *strides, *box;     /* strides NULL for rank 1 */
  int ld_arg;                            /* the scalar arg the strides name (the tensor's row
                                            stride [elements]), -1 none */
  int ld_slot;                           /* its env slot (rt_family.names), -1 none */
} rt_tmap_expr;

typedef struct rt_tmap_spec {
  int arg;                     /* the tensormap arg's index */
  int tensor;                  /* index of the tensor arg it maps */
  int elsize;                  /* bytes per element of that tensor */
  int cu_dtype;                /* CUtensorMapDataType */
  int swizzle;                 /* 0, 32, 64, 128 bytes */
  int l2_promotion;            /* 0, 64, 128, 256 bytes */
  int oob_nan;
  int rank;
  uint64_t dims[TUNERT_TMAP_MAX_RANK];        /* innermost first */
  uint64_t strides[TUNERT_TMAP_MAX_RANK - 1]; /* bytes, dims 2..rank */
  uint32_t box[TUNERT_TMAP_MAX_RANK];
  uint32_t estr[TUNERT_TMAP_MAX_RANK];        /* element strides (1 when not given) */
  int ld_arg;                  /* as rt_tmap_expr.ld_arg; -1: dense rows */
  int64_t ld;                  /* ld_arg's value the strides were evaluated with [elements] */
} rt_tmap_spec;

/* The CUtensorMapDataType of a bundle dtype name; -1 when none. */
int rt_tmap_dtype(const char *dtype);

/* The pointer-independent rules (rank, box 1..256, 16-byte strides and inner
 * box, swizzle span, element strides 1..8) and that the map's last byte lies
 * inside a tensor of tensor_bytes. 0, or -1 with the reason in why. */
int rt_tmap_check(const rt_tmap_spec *m, uint64_t tensor_bytes, char *why, size_t why_n);

/* The extent [bytes] of a tensor of `rank` dims `shape` (numel elements of elsize bytes) whose
 * rows (the leading dim) lie ld elements apart: ((shape[0] - 1) * ld + numel / shape[0]) * elsize;
 * ld < 0: dense, numel * elsize. UINT64_MAX when it overflows. */
uint64_t rt_tmap_view_bytes(const int64_t *shape, int rank, int64_t numel, int elsize, int64_t ld);

/* Evaluate x over env (the slots of rt_family.names) into m: every field (strides only: keep
 * m's dims and box, as a launch does when only the row stride changed). ld_value: the value of
 * x->ld_arg in env (ignored when x names none). 0, or -1 with the reason in why. */
int rt_tmap_eval(const rt_tmap_expr *x, const tunert_xval *env, int64_t ld_value, int strides_only,
                 rt_tmap_spec *m, char *why, size_t why_n);

/* "rank 2 dims {384, 512} strides {768} box {64, 32} swizzle 128" */
void rt_tmap_describe(const rt_tmap_spec *m, char *buf, size_t n);

typedef __typeof__(&cuTensorMapEncodeTiled) rt_tmap_encode_fn;

/* Encode m for the device address ptr into map (128 bytes, 64-byte aligned). */
CUresult rt_tmap_encode(rt_tmap_encode_fn fn, const rt_tmap_spec *m, uint64_t ptr, void *map);

#endif
