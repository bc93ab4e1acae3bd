/* prune.c: launchability and theoretical occupancy from a compiled
 * variant's resources (prune.h). */
#include "prune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct arch_row {
  int cc;                               /* major * 10 + minor */
  int threads_sm, blocks_sm, smem_sm, smem_block;
} arch_row;

/* CUDA C Programming Guide, "Technical Specifications per Compute Capability". */
static const arch_row rows[] = {
    {70, 2048, 32, 98304, 98304 - 1024},  {75, 1024, 16, 65536, 65536},
    {80, 2048, 32, 167936, 166912},       {86, 1536, 16, 102400, 101376},
    {87, 1536, 16, 167936, 166912},       {89, 1536, 24, 102400, 101376},
    {90, 2048, 32, 233472, 232448},       {100, 2048, 32, 233472, 232448},
    {103, 2048, 32, 233472, 232448},      {120, 1536, 32, 102400, 101376},
};

int tune_sm_limits_for(const char *arch, int smem_optin, tune_sm_limits *out) {
  const char *p = arch ? strchr(arch, '_') : NULL;
  if (!p) return -1;
  int cc = atoi(p + 1);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
    if (rows[i].cc != cc) continue;
    *out = (tune_sm_limits){.max_threads_block = 1024, .max_threads_sm = rows[i].threads_sm,
                            .max_blocks_sm = rows[i].blocks_sm, .regs_per_sm = 65536, .regs_per_block = 65536,
                            .max_regs_thread = 255, .smem_per_sm = rows[i].smem_sm,
                            .smem_per_block = smem_optin > 0 ? smem_optin : rows[i].smem_block,
                            .smem_reserved = cc >= 80 ? 1024 : 0};
    return 0;
  }
  return -1;
}

static int min_i(int a, int b) { return a < b ? a : b; }

double tune_occupancy(const tune_sm_limits *l, int threads, int regs, int smem, char *why, size_t n) {
  if (threads < 1 || threads > l->max_threads_block) {
    snprintf(why, n, "%d threads per block (at most %d)", threads, l->max_threads_block);
    return 0;
  }
  if (regs > l->max_regs_thread) {
    snprintf(why, n, "%d registers per thread (at most %d)", regs, l->max_regs_thread);
    return 0;
  }
  int warps = (threads + 31) / 32;
  /* registers are allocated per warp, in units of 256 */
  int warp_regs = regs > 0 ? (regs * 32 + 255) / 256 * 256 : 0;
  if (warp_regs * warps > l->regs_per_block) {
    snprintf(why, n, "%d registers x %d threads = %d registers per block (at most %d)", regs, threads,
             warp_regs * warps, l->regs_per_block);
    return 0;
  }
  if (smem > l->smem_per_block) {
    snprintf(why, n, "%d B of shared memory per block (at most %d)", smem, l->smem_per_block);
    return 0;
  }
  int max_warps = l->max_threads_sm / 32;
  int blocks = min_i(l->max_blocks_sm, max_warps / warps);
  if (warp_regs > 0) blocks = min_i(blocks, (l->regs_per_sm / warp_regs) / warps);
  if (smem > 0) blocks = min_i(blocks, l->smem_per_sm / (smem + l->smem_reserved));
  if (blocks < 1) {
    snprintf(why, n, "no block fits on an SM (%d registers, %d B shared memory)", regs, smem);
    return 0;
  }
  return (double)(blocks * warps) / (double)max_warps;
}

int tune_prune_check(const tune_sm_limits *l, int threads, int regs, int smem, double min_occupancy, char *why,
                     size_t n) {
  char reason[200] = "";
  double occ = tune_occupancy(l, threads, regs, smem, reason, sizeof reason);
  if (occ <= 0) {
    snprintf(why, n, TUNE_PRUNED_PREFIX "cannot launch: %s", reason);
    return 1;
  }
  if (occ < min_occupancy) {
    snprintf(why, n, TUNE_PRUNED_PREFIX "theoretical occupancy %.3f under min_occupancy %.3f (%d threads, %d registers, %d B shared)",
             occ, min_occupancy, threads, regs, smem);
    return 1;
  }
  return 0;
}
