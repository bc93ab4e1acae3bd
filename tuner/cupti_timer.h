/* cupti_timer.h: kernel time from CUPTI activity records (worker only).
 *
 * Every kernel that runs in the context is recorded
 * (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), whatever stream launched it, so
 * work on a side stream cannot hide and a measured launch that ran no kernel
 * is seen. Kernels named tune_* (tune's own L2 flush and checksums) are not
 * counted. libcupti is opened with dlopen: where it is missing, the worker
 * falls back to CUDA events and says so in each reply ("timer"). The record
 * buffers are process state (CUPTI's callbacks take no user pointer); the
 * worker is the only user. */
#ifndef TUNE_CUPTI_TIMER_H
#define TUNE_CUPTI_TIMER_H

#include <stddef.h>

#include "tune_err.h"

/* Open libcupti, register the buffers and enable kernel records. Call after
 * cuInit and before the context is created. TUNE_ECUPTI when unavailable. */
int tune_cupti_open(tune_err *err);
/* The kernels recorded between two collects. */
typedef struct tune_cupti_span {
  double sum_ns;   /* sum of their durations [ns] (burst timing: gaps between kernels excluded) */
  double span_ns;  /* end of the last - start of the first [ns] (sustained timing: gaps included) */
  int n_kernels;
} tune_cupti_span;

#define TUNE_CUPTI_NAMES_MAX 1024

/* Flush (forced) and return the kernels recorded since the previous call:
 * their count and the sum of their durations [ns]. */
int tune_cupti_collect(double *sum_ns, int *n_kernels, tune_err *err);
/* The same, with the span, and the distinct kernel names (';'-separated, as
 * many as fit in names[names_n]; names may be NULL with names_n 0). */
int tune_cupti_collect_span(tune_cupti_span *out, char *names, size_t names_n, tune_err *err);
/* Flush (forced) and return the records the collects see, added up since tune_cupti_open: their
 * count and summed durations [ns] (tune_* kernels excluded, as above; a record without a valid end
 * adds to the count only). Collects do not reset it: the worker reads it before and after a
 * variant's measure and sends the difference ("kernel_ns", protocol.h). Kernels that overlap (a
 * side stream) each count whole. */
int tune_cupti_total(double *sum_ns, long long *n_kernels, tune_err *err);
int tune_cupti_available(void);
/* From now on, device-to-device copies (cudaMemcpyAsync) count like kernels, named
 * "memcpy DtoD": a peer whose op is a copy (torch's copy_) is timed by what it runs. The
 * worker leaves this off (its own verification copies are not a variant's work); memsets
 * (the L2 flush) never count. */
int tune_cupti_count_copies(tune_err *err);

#endif
