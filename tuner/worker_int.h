/* worker_int.h: the worker's state and the steps its files share (worker.c, worker_sustained.c).
 * Worker process only; not for the tuner side. */
#ifndef TUNE_WORKER_INT_H
#define TUNE_WORKER_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cuda_dl.h"
#include "nvml_clocks.h"
#include "recipe.h"
#include "tune_err.h"

typedef struct wstate {
  CUdevice dev;
  CUcontext ctx;
  CUevent e0, e1;
  int l2_bytes;
  CUdeviceptr flush;         /* 2 x L2, written between timed repeats */
  size_t flush_bytes;
  /* the current problem */
  int n_args;
  tune_arg_def def[TUNE_MAX_ARGS];
  int64_t numel[TUNE_MAX_ARGS];
  double scalar_f[TUNE_MAX_ARGS];
  long long scalar_i[TUNE_MAX_ARGS];
  CUdeviceptr ptr[TUNE_MAX_ARGS];
  size_t bytes[TUNE_MAX_ARGS];
  double *ref[TUNE_MAX_ARGS];     /* reference outputs */
  uint64_t in_hash[TUNE_MAX_ARGS];/* device checksum of each input tensor */
  CUmodule sum_mod;               /* tune's own checksum kernel */
  CUfunction sum_fn;
  CUdeviceptr sum_out;            /* 8 bytes */
  void *host;                     /* staging buffer */
  size_t host_n;
  double tol_rel, tol_abs;
  uint64_t seed;                  /* of the current problem's inputs */
  CUdeviceptr guard_base[TUNE_MAX_ARGS]; /* allocation of a guarded tensor (ptr - GUARD_BYTES), 0 none */
  CUfunction zero_fn;             /* scratch_zero, in sum_mod */
  int nvml;                       /* NVML opened: clocks sampled during timing */
  CUstream side;                  /* second stream for launch steps with stream = "side" */
  CUtensorMap tmap[TUNE_MAX_ARGS];/* tensormap args, rebuilt per variant (zero for the reference) */
} wstate;

/* One launch step of a variant, resolved in its module. */
typedef struct launch { CUfunction fn; unsigned grid[3], block[3], shared, cluster[3]; int side; } launch;

double tune_wk_now_ms(void);
/* Launch every step of the variant once on w's current buffers (scratch zeroed first). */
CUresult tune_wk_run_launches(wstate *w, launch *l, int n, char *why, size_t why_n);
/* The reply of a variant that broke the context (the worker exits after sending it). */
json_t *tune_wk_crash_reply(CUresult r, const char *where);
/* Encode every tensor-map argument on w's current buffers; -1 with why: a launch_error. */
int tune_wk_build_tmaps(wstate *w, json_t *tmaps, char *why, size_t why_n);
/* Relative width of the median's 95 % interval over samples[n] (order statistics). */
double tune_wk_median_rel_ci(const double *samples, int n);

/* Sustained timing (protocol.h, worker_sustained.c): the samples [ns per launch] into samples and
 * event_samples (room for TUNE_SUSTAINED_MAX_SAMPLES), *ns their count, *rel_ci their interval,
 * clocks folded into clk. Returns the variant's reply when it failed (crash, launch_error), NULL
 * with *failed 0 when timed, NULL with *failed 1 when the worker itself failed (err set). */
json_t *tune_wk_sustained_samples(wstate *w, json_t *tmaps, launch *l, int n, double *samples, double *event_samples,
                                  int *ns, double *rel_ci, tune_clocks *clk, tune_err *err, int *failed);

#endif
