/* peak_mma.h: source of tune's own matrix-throughput kernel (Hopper, sm_90a).
 *
 * tune_peak_mma: two warpgroups per block issue wgmma.m64n256k16 bf16 -> fp32 back to back on
 * operands that stay in shared memory (no global traffic), so its FLOP rate is what the tensor
 * cores sustain at the clocks the device holds under that load: the measured matrix limit that
 * results are judged against (peaks.c). Arguments: (float *sink, int iters); FLOPs per block =
 * 2 warpgroups x iters x 4 wgmma x 2*64*256*16. */
#ifndef TUNE_PEAK_MMA_H
#define TUNE_PEAK_MMA_H

#define TUNE_PEAK_MMA_THREADS 256
#define TUNE_PEAK_MMA_FLOP_PER_ITER (2.0 * 4.0 * 2.0 * 64 * 256 * 16)

/* The CUDA source (static storage, built on first use). */
const char *tune_peak_mma_source(void);

#endif
