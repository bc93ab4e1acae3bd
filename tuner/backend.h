/* backend.h: where measurements come from, behind one interface.
 *
 * cuda:N   a `tune worker` child process owning GPU N (backend_cuda.c); it is
 *          restarted when a variant crashes it or hangs past the watchdog.
 * cuda:all one such worker per GPU, fed variants as they free up (backend_pool.c).
 * replay:F answers from a recorded database exactly as measured there; a
 *          (config, problem) it does not hold is not_recorded, never invented
 *          (backend_replay.c). It cannot re-time: a quick measure gets the
 *          recorded full timing, with a proportionally smaller measure_ms.
 * The session fills a tune_measure_req per variant and gets a db_result whose
 * status and figures the backend set; ids are the session's business. */
#ifndef TUNE_BACKEND_H
#define TUNE_BACKEND_H

#include "db.h"
#include "recipe.h"
#include "tune_err.h"

typedef struct tune_measure_req {
  const tune_recipe *recipe;
  const tune_problem *problem;
  const tune_problem_setup *setup;
  const tune_variant *variant;
  const db_binary *bin;                       /* compiled variant (ok) */
  const char (*lowered)[512];                 /* symbol per launch */
  const char *config_hash;
  int samples;                                /* 0: the default sample policy; >= 3: a quick
                                                 timing of exactly that many samples, after
                                                 the same verification (halving.h) */
  int sustained;                              /* 1: sustained timing (protocol.h), else burst */
  int card;                                   /* submit on several GPUs: 1 + which of those in use
                                                 takes it (kept while it is free); 0: any free one */
} tune_measure_req;

/* Kernel time the worker reported in its measure replies (protocol.h: "kernel_ns"), summed. A
 * reply without the figure (no CUPTI, crash, timeout, an older worker) adds to n_replies only;
 * replay adds nothing. */
typedef struct tune_kernel_time {
  double ns;       /* [ns] summed over the replies that reported it */
  int n_reported;  /* measure replies that carried the figure */
  int n_replies;   /* measure replies, crashes and timeouts included */
} tune_kernel_time;

/* Adds *from into *into and zeroes *from. */
static inline void tune_kernel_time_take(tune_kernel_time *from, tune_kernel_time *into) {
  into->ns += from->ns;
  into->n_reported += from->n_reported;
  into->n_replies += from->n_replies;
  from->ns = 0;
  from->n_reported = from->n_replies = 0;
}

typedef struct tune_backend tune_backend;
struct tune_backend {
  char name[300];          /* "cuda:0", "replay:FILE" */
  db_device device;        /* what the results are attributed to */
  int timeout_ms;          /* watchdog per variant (0: derived from the reference) */
  int needs_binaries;      /* 1: variants must be compiled before measure() */
  char provenance[512];    /* replay: where and when the data was recorded */
  char recorded_hash[17];  /* replay: source hash of the recipe the data was measured with */
  char recorded_code_hash[17]; /* replay: its normalised hash (source_hash.h), "" where not recorded */
  /* Prepare a problem (buffers, inputs, reference). ref_bin: the compiled
   * reference (cuda only). */
  int (*set_problem)(tune_backend *b, const tune_recipe *r, const tune_problem *p,
                     const tune_problem_setup *s, const db_binary *ref_bin, const char *ref_lowered,
                     uint64_t seed, tune_err *err);
  /* Measure one variant into *out (status and figures). TUNE_OK unless the
   * backend itself cannot go on. */
  int (*measure)(tune_backend *b, const tune_measure_req *q, db_result *out, tune_err *err);
  /* Measure device copy bandwidth [GB/s] with tune's own copy kernel
   * (kernel(const float4*, float4*, long long n)); NULL when not possible. */
  int (*measure_copy_peak)(tune_backend *b, const db_binary *bin, const char *kernel, double *gbps, tune_err *err);
  /* tune's wgmma kernel's bf16 TFLOP/s (sm_90 only; NULL where not measured) */
  int (*measure_mma_peak)(tune_backend *b, const db_binary *bin, const char *kernel, double *tflops, tune_err *err);
  void (*close)(tune_backend *b);
  /* Variants in flight (backend_pool.c: one per GPU; backend_cuda.c: one; NULL elsewhere: measure
   * alone, which returns when the figures are in): submit sends q to an idle GPU,
   * its figures to come into *out (which must stay valid until collected) under the caller's
   * tag; collect waits for the next variant to finish and names its tag. At most `slots` in
   * flight; slots may shrink when a GPU is set aside. measure() is for one variant alone, with
   * nothing in flight. */
  int slots;
  int (*submit)(tune_backend *b, const tune_measure_req *q, db_result *out, int tag, tune_err *err);
  int (*collect)(tune_backend *b, int *tag, tune_err *err);
  tune_kernel_time kernels;  /* since the caller last took it (tune_kernel_time_take): cuda and
                                pool add each measure reply's; the problem run takes it */
  void *impl;
};

/* Start a worker for GPU `ordinal` and read its device facts. exe: path of
 * the tune binary to run as `tune worker`. TUNE_ENOGPU without a driver. */
int tune_backend_cuda_open(const char *exe, int ordinal, tune_backend **out, tune_err *err);
/* The variants b measures at once: its GPUs for a backend of several (backend_pool.c), else 1. */
static inline int tune_backend_cards(const tune_backend *b) {
  return b && b->submit && b->slots > 1 ? b->slots : 1;
}

/* One worker per GPU of one model: gpus is "all" (every GPU the driver shows) or a list of
 * ordinals ("0,1,3"). Results are attributed to the first GPU's device row; db_result.gpu names
 * the card. Single-variant calls (measure, the peaks) go to the first GPU still in use.
 * TUNE_EINVAL for a bad list or GPUs of different models. */
int tune_backend_pool_open(const char *exe, const char *gpus, tune_backend **out, tune_err *err);
/* Open a recorded database read-only. recipe_name selects the device whose
 * data is replayed (the latest one that measured it). */
int tune_backend_replay_open(const char *path, const char *recipe_name, tune_backend **out, tune_err *err);

/* Whether replay b's recording was measured with the source the compiler sees
 * now for recipe r: its stored source hash equals r's raw hash (every file the
 * same byte for byte) or r's normalised hash (source_hash.h: the same but for
 * comments, blanks and where files lie). A recording stores one hash, the one
 * its tune wrote; the normalised hash of a tree it does not hold cannot be
 * recomputed, so a raw-hash recording is current only while the tree is
 * unchanged. TUNE_REPLAY_OTHER_SOURCE also where no hash was recorded or the
 * normalised hash cannot be made (a require of no literal name). */
typedef enum {
  TUNE_REPLAY_OTHER_SOURCE = 0,
  TUNE_REPLAY_SAME_TEXT = 1,       /* stored hash == raw hash of the current tree */
  TUNE_REPLAY_SAME_NORMALISED = 2  /* stored hash == normalised hash of the current tree */
} tune_replay_source;
tune_replay_source tune_backend_replay_current(const tune_backend *b, const tune_recipe *r);

#endif
