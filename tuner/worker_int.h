/* worker_int.h: the worker's state and the steps its files share (worker.c, worker_sustained.c).
 * Worker process only; not for the tuner side. */
#ifndef TUNE_WORKER_INT_H
#define TUNE_WORKER_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "compile.h"
#include "cuda_dl.h"
#include "inputs.h"
#include "nvml_clocks.h"
#include "recipe.h"
#include "tune_err.h"

/* What differs between the worker's two input sets (worker_sets.c): the same inputs drawn with
 * another seed, at their own guarded addresses, with their own reference outputs. */
typedef struct input_set {
  CUdeviceptr ptr[TUNE_MAX_ARGS];        /* input tensors (0 elsewhere) */
  CUdeviceptr guard_base[TUNE_MAX_ARGS];
  uint64_t in_hash[TUNE_MAX_ARGS];       /* device checksum of each input */
  CUdeviceptr ref[TUNE_MAX_ARGS];        /* reference outputs */
  uint64_t seed;
} input_set;

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
  CUdeviceptr ref[TUNE_MAX_ARGS]; /* reference outputs, on the device in the output's dtype */
  uint64_t in_hash[TUNE_MAX_ARGS];/* device checksum of each input tensor */
  CUmodule sum_mod;               /* tune's own kernels (worker_kernels.c) */
  CUfunction sum_fn, cmp_fn, guard_fn, fill_fn;
  CUdeviceptr sum_out;            /* the checksum's and a comparison's results */
  CUdeviceptr guard_out;          /* the guard scans' results */
  void *host;                     /* staging buffer */
  size_t host_n;
  double tol_rel, tol_abs;
  double tol_honest;              /* tolerance.honest, 0 none (docs/measurement.md) */
  uint64_t seed;                  /* of the current problem's inputs */
  CUdeviceptr guard_base[TUNE_MAX_ARGS]; /* allocation of a guarded tensor (ptr - GUARD_BYTES), 0 none */
  CUfunction zero_fn;             /* scratch_zero, in sum_mod */
  int nvml;                       /* NVML opened: clocks sampled during timing */
  CUstream side;                  /* second stream for launch steps with stream = "side" */
  CUtensorMap tmap[TUNE_MAX_ARGS];/* tensormap args, rebuilt per variant (zero for the reference) */
  /* The other input set: ptr, guard_base, in_hash, ref and seed above are the live set's
     (what the next launch reads), alt the other's. two_sets 0: one set (no inputs, or no memory). */
  input_set alt;
  int two_sets;
  int live_set;                   /* whose contents the live addresses hold: 0 the problem's seed, 1 the other */
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
/* Allocate bytes with a 1 MiB guard band on each side (filled with a known byte): *ptr inside. */
int tune_wk_guard_alloc(size_t bytes, CUdeviceptr *base, CUdeviceptr *ptr, tune_err *err);
/* A comparison's result on the device: sum (out - ref)^2, sum ref^2, the sum of ref's expected
 * squared rounding errors (tune_inputs_round_var); max |out - ref| (the bits of a nonnegative
 * double), NaN/Inf count, first bad index (~0: none). Starts as tune_wk_cmp_init. */
typedef struct tune_wk_cmp { double sums[3]; unsigned long long stat[3]; } tune_wk_cmp;
extern const tune_wk_cmp tune_wk_cmp_init;

/* tune's own kernels (worker_kernels.c), built on first use. checksum: of tensor i of the live
 * set. compare: output i against a reference buffer (ref), on the device (inputs.h
 * tune_compare). element: element k of buf, a buffer of arg i's dtype, read to the host. */
int tune_wk_kernels_init(wstate *w, tune_err *err);
/* Compile them for arch with NVRTC (no GPU needed): job->bin holds the cubin when TUNE_OK. */
int tune_wk_kernels_compile(const char *arch, tune_compile_job *job, tune_err *err);
int tune_wk_checksum(wstate *w, int i, uint64_t *sum, tune_err *err);
/* Input values into dst: numel elements of def's dtype drawn from its init as tune_inputs_fill
 * draws them for (seed, arg_index); elementwise inits on the device (worker_kernels.c's tune_fill:
 * no host pass over a tensor of gigabytes, no copy), the others on the host and copied. f64
 * values through log, cos or exp2 can differ from the host's in their last places. */
int tune_wk_fill(wstate *w, const tune_arg_def *def, int64_t numel, uint64_t seed, int arg_index, CUdeviceptr dst,
                 tune_err *err);
int tune_wk_compare(wstate *w, int i, CUdeviceptr ref, tune_compare *c, tune_err *err);
/* The comparison launched on the null stream into res (a tune_wk_cmp on the device, initialized),
 * not waited for; its result read back with tune_wk_compare_result. */
int tune_wk_compare_async(wstate *w, int i, CUdeviceptr ref, CUdeviceptr res, tune_err *err);
void tune_wk_compare_result(const tune_wk_cmp *r, tune_compare *c);
int tune_wk_element(wstate *w, int i, CUdeviceptr buf, int64_t k, double *v, tune_err *err);
/* Scan n guard bands of band_bytes each for bytes other than want: found[k] = {count, first, last}
 * (first ~0 when none), in one round trip. At most TUNE_WK_GUARD_SLOTS bands. */
#define TUNE_WK_GUARD_SLOTS (4 * TUNE_MAX_ARGS)
int tune_wk_guard_scan(wstate *w, const CUdeviceptr *bands, int n, size_t band_bytes, unsigned char want,
                       unsigned long long (*found)[3], tune_err *err);
/* Make the host staging buffer at least n bytes. */
int tune_wk_host_reserve(wstate *w, size_t n, tune_err *err);
/* Poison every output (NaN of its dtype); every scratch not zeroed per launch (0xff bytes). */
int tune_wk_poison_outputs(wstate *w, tune_err *err);
int tune_wk_poison_scratch(wstate *w, tune_err *err);

/* The verification figures a reply carries, the worst over outputs and input sets: rel_l2 and
 * max_abs; of the bf16, f16 and e4m3 outputs, the largest rel_l2 / honest error (honest_ratio)
 * and that output's honest error (honest_rel_l2, 0 none: no such output, or a zero reference). */
typedef struct tune_wk_worst { double rel_l2, max_abs, honest_ratio, honest_rel_l2; } tune_wk_worst;
extern const tune_wk_worst tune_wk_worst_init;
/* Adds worst's figures to a reply: rel_l2, max_abs, and honest_rel_l2 when known. */
void tune_wk_worst_to_reply(const tune_wk_worst *worst, json_t *reply);

/* Checks of a variant (worker_verify.c). Each returns NULL when the variant passes, else its
 * reply; *failed = 1 (NULL returned, err set) when the worker itself failed.
 * verify_live: one launch on the live set, outputs against its reference (rel_l2, max_abs and
 *   tolerance.honest), inputs unchanged, guard bands ("sticky": true in a reply whose error lost
 *   the context); its figures folded into *worst. relaunch_check: after timing, one more launch
 *   (on the other set's contents at the live addresses when there are two sets) must reproduce
 *   the output. */
json_t *tune_wk_verify_live(wstate *w, launch *l, int n, tune_wk_worst *worst, tune_err *err, int *failed);
json_t *tune_wk_relaunch_check(wstate *w, launch *l, int n, tune_err *err, int *failed);
/* The outputs of every timed sample against the live set's reference: open before the samples
 * (room for cap), launch after each (no wait: the comparisons run on the device between samples,
 * outside the timed span; tune_* kernels are not counted by the timer), judge once after the last
 * (a wrong one described in wrong), close always. */
typedef struct sample_checks {
  CUdeviceptr dev;        /* cap x n_out results */
  tune_wk_cmp *host;
  unsigned char *set_of;  /* live_set of each sample */
  int cap, n_out, outs[TUNE_MAX_ARGS];
} sample_checks;
int tune_wk_sample_checks_open(wstate *w, int cap, sample_checks *sc, tune_err *err);
int tune_wk_sample_checks_launch(wstate *w, sample_checks *sc, int sample, tune_err *err);
int tune_wk_sample_checks_judge(wstate *w, sample_checks *sc, int n_samples, char *wrong, size_t wrong_n, tune_err *err);
void tune_wk_sample_checks_close(sample_checks *sc);

/* The second input set (worker_sets.c). alt_alloc draws it (seed derived from w->seed) where
 * memory allows; swap makes the other set live (the caller rebuilds tensor maps); swap_contents
 * exchanges the two sets' contents in place (the addresses stay, the labels follow the contents);
 * restore regenerates any input of either set a variant modified; free releases the alt set. */
int tune_wk_alt_alloc(wstate *w, tune_err *err);
void tune_wk_swap_sets(wstate *w);
int tune_wk_swap_contents(wstate *w, tune_err *err);
int tune_wk_restore_inputs(wstate *w, tune_err *err);
void tune_wk_alt_free(wstate *w);

/* Relative width of the median's 95 % interval over samples[n] (order statistics). */
double tune_wk_median_rel_ci(const double *samples, int n);

/* Sustained timing (protocol.h, worker_sustained.c): the samples [ns per launch] into samples and
 * event_samples (room for TUNE_SUSTAINED_MAX_SAMPLES), *ns their count, *rel_ci their interval,
 * clocks folded into clk. Returns the variant's reply when it failed (crash, launch_error), NULL
 * with *failed 0 when timed, NULL with *failed 1 when the worker itself failed (err set). */
json_t *tune_wk_sustained_samples(wstate *w, json_t *tmaps, launch *l, int n, double *samples, double *event_samples,
                                  int *ns, double *rel_ci, tune_clocks *clk, tune_err *err, int *failed);

#endif
