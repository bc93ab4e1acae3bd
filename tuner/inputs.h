/* inputs.h: seeded random inputs, dtype conversions and verification math,
 * on the host. Counter-based (splitmix64 of seed, arg and index), so the same
 * seed gives the same tensor whatever the order of generation. */
#ifndef TUNE_INPUTS_H
#define TUNE_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "recipe.h"

/* Fill dst (numel elements of def->dtype) from def's distribution. */
void tune_inputs_fill(const tune_arg_def *def, int64_t numel, uint64_t seed, int arg_index, void *dst);
/* The generator's key for (seed, arg_index): element i of an elementwise init draws from keys
 * base + 2 i and base + 2 i + 1 (the worker's device fill computes the same, worker_kernels.c). */
uint64_t tune_inputs_base(uint64_t seed, int arg_index);
/* 1 when element i of init depends on (base, i) alone (uniform, normal, randint, wide, none);
 * 0 for the permutation and the offsets, drawn in sequence. */
int tune_inputs_elementwise(tune_init init);
/* Element i of a typed buffer as a double. */
double tune_inputs_get(tune_dtype t, const void *buf, int64_t i);
/* The expected squared error of rounding a real value to nearest in t, given that it rounded to
 * element i of buf: ulp^2 / 12 with the ulp at that element (rounding errors spread evenly over
 * the half-ulp on each side; ulp^2 / 16 at a power of two, whose lower side is a quarter ulp),
 * 0 for a zero (taken as exact) and for integer dtypes. Summed over an
 * output and divided by its sum of squares, the square of its honest error (docs/measurement.md).
 * The worker's comparison kernel computes the same (worker_kernels.c tune_round_var). */
double tune_inputs_round_var(tune_dtype t, const void *buf, int64_t i);

/* An output against its reference, as the worker's device comparison computes it
 * (worker_kernels.c): NaN or Inf in either counts as bad. */
typedef struct tune_compare {
  double rel_l2;      /* ||out - ref|| / ||ref|| (||out - ref|| when ref is 0) */
  double max_abs;     /* max |out - ref| */
  double honest_rel_l2; /* sqrt(sum round_var(ref) / ||ref||^2): the error of rounding once (0 when ref is 0) */
  int64_t n_nan;      /* NaN or Inf elements in out (NaN in ref are errors too) */
  int64_t first_bad;  /* index of the first element over max_abs tolerance, -1 none */
} tune_compare;


#endif
