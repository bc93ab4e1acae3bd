/* prune.h: compile-time pruning. After NVRTC has compiled a variant, its
 * registers and shared memory say whether it can launch at all and what
 * theoretical occupancy it can reach; a variant that cannot launch, or whose
 * occupancy is under the recipe's min_occupancy, never goes to the GPU. It is
 * stored as `skipped` with an error text that starts with "pruned:".
 *
 * Occupancy follows the CUDA occupancy calculator: resident blocks per SM
 * are limited by threads, registers (allocated per warp in units of 256),
 * shared memory (static + dynamic + 1 KiB reserved per block) and the block
 * slots; occupancy = resident warps / the SM's maximum warps. */
#ifndef TUNE_PRUNE_H
#define TUNE_PRUNE_H

#include <stddef.h>

#include "db.h"

#define TUNE_PRUNED_PREFIX DB_REASON_PRUNED

typedef struct tune_sm_limits {
  int max_threads_block;  /* 1024 */
  int max_threads_sm;     /* resident threads per SM */
  int max_blocks_sm;      /* resident blocks per SM */
  int regs_per_sm;        /* 32-bit registers per SM */
  int regs_per_block;     /* per block, at most */
  int max_regs_thread;    /* 255 */
  int smem_per_sm;        /* shared memory per SM [bytes] */
  int smem_per_block;     /* per block with opt-in [bytes] */
  int smem_reserved;      /* reserved by the system per block [bytes] */
} tune_sm_limits;

/* The limits of compute capability `arch` ("sm_90", "sm_90a", "compute_80"...).
 * smem_optin > 0 (the device's opt-in maximum) replaces the table's per-block
 * limit. Returns 0, or -1 for an architecture the table does not know (then
 * nothing is pruned). */
int tune_sm_limits_for(const char *arch, int smem_optin, tune_sm_limits *out);

/* Theoretical occupancy (0..1] of a block of `threads` threads using `regs`
 * registers per thread (0: unknown) and `smem` bytes of shared memory (static
 * + dynamic). 0 when it cannot launch, with the reason in why[n]. */
double tune_occupancy(const tune_sm_limits *l, int threads, int regs, int smem, char *why, size_t n);

/* 1 when the variant is to be pruned (why[n] says why, starting with
 * TUNE_PRUNED_PREFIX), else 0. min_occupancy 0: only unlaunchable variants. */
int tune_prune_check(const tune_sm_limits *l, int threads, int regs, int smem, double min_occupancy, char *why,
                     size_t n);

#endif
