/* tensormap.h: tensor-map args (docs/tensormap-args.md).
 *
 * A recipe arg { "tmA", tensormap = { tensor = "a", box = ..., swizzle = 128 } } reaches a kernel
 * as a 128-byte CUtensorMap by value, built by the worker with cuTensorMapEncodeTiled from the
 * device pointer of the tensor it names. The fixed fields (tune_tmap_def) travel with the problem,
 * dims, strides and box (tune_tmap_var) with each variant. This file holds their wire form, the
 * checks made before a build (so a bad box is a clear launch_error, not the driver's
 * CUDA_ERROR_INVALID_VALUE) and the build itself. */
#ifndef TUNE_TENSORMAP_H
#define TUNE_TENSORMAP_H

#include <stddef.h>

#include <cuda.h>
#include <jansson.h>

#include "recipe.h"

/* Wire form (JSON objects); from_json return 0, or -1 for a malformed object. */
json_t *tune_tmap_def_json(const tune_tmap_def *d);
int tune_tmap_def_from_json(const json_t *j, tune_tmap_def *d);
json_t *tune_tmap_var_json(const tune_tmap_var *v); /* JSON null for rank 0 */
int tune_tmap_var_from_json(const json_t *j, tune_tmap_var *v);

/* "rank 2 dims {4096, 4096} strides {8192} box {64, 128} swizzle 128" for messages. */
void tune_tmap_describe(const tune_tmap_def *d, const tune_tmap_var *v, char *buf, size_t n);

/* The driver's rules for a tiled map (ranks, box sizes, 16-byte strides, swizzle span, element
 * strides, address alignment) and that the map stays inside the tensor's `tensor_bytes`.
 * 0 if the map can be built, else -1 with the reason in why. */
int tune_tmap_check(const tune_tmap_def *d, const tune_tmap_var *v, int elsize, CUdeviceptr ptr,
                    size_t tensor_bytes, char *why, size_t why_n);

/* Build the map into `map` (a 64-byte-aligned CUtensorMap) with cuTensorMapEncodeTiled, resolved
 * from the libcuda the worker has loaded (tune_cuda_load). The driver's error name is in why. */
CUresult tune_tmap_encode(CUtensorMap *map, const tune_tmap_def *d, const tune_tmap_var *v, tune_dtype dt,
                          CUdeviceptr ptr, char *why, size_t why_n);

#endif
