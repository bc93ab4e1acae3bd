/* tunert_tmap.h: tensor-map args in libtunert (docs/tensormap-args.md).
 *
 * Owns: a map's spec evaluated for one problem (rt_tmap_spec), the driver's
 * rules for it checked before any encode (so a bad box is a status and a
 * message, never the driver's bare CUDA_ERROR_INVALID_VALUE), and the encode
 * through cuTensorMapEncodeTiled from the libcuda the context opened. The
 * same rules as the worker's (tuner/tensormap.c), rewritten here because the
 * runtime links no tuner code. Internal to libtunert. */
#ifndef TUNERT_TMAP_H
#define TUNERT_TMAP_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "tunert_format.h"

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
} rt_tmap_spec;

/* The CUtensorMapDataType of a bundle dtype name; -1 when none. */
int rt_tmap_dtype(const char *dtype);

/* The pointer-independent rules (rank, box 1..256, 16-byte strides and inner
 * box, swizzle span, element strides 1..8) and that the map's last byte lies
 * inside a tensor of tensor_bytes. 0, or -1 with the reason in why. */
int rt_tmap_check(const rt_tmap_spec *m, uint64_t tensor_bytes, char *why, size_t why_n);

/* "rank 2 dims {384, 512} strides {768} box {64, 32} swizzle 128" */
void rt_tmap_describe(const rt_tmap_spec *m, char *buf, size_t n);

typedef __typeof__(&cuTensorMapEncodeTiled) rt_tmap_encode_fn;

/* Encode m for the device address ptr into map (128 bytes, 64-byte aligned). */
CUresult rt_tmap_encode(rt_tmap_encode_fn fn, const rt_tmap_spec *m, uint64_t ptr, void *map);

#endif
