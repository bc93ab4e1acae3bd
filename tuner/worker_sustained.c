/* worker_sustained.c: sustained timing in the worker (protocol.h): back-to-back launches over
 * rotating buffer sets, the span of their kernels from CUPTI. */
#include <stdlib.h>
#include <string.h>

#include "cupti_timer.h"
#include "protocol.h"
#include "worker_int.h"

#define ROT_MAX_SETS 64

/* Rotating copies of a variant's tensors (set 0 is the problem's own buffers): the kernels of
 * a sustained sample read and write different memory launch after launch, as a model's layers
 * do, so L2 cannot serve one launch from the last. Tensor maps are encoded per set. */
typedef struct rotation {
  int n;                                            /* sets, >= 1 */
  CUdeviceptr ptr[ROT_MAX_SETS][TUNE_MAX_ARGS];     /* sets 1..n-1 owned; 0 for scalars, scratch */
  CUtensorMap tmap[ROT_MAX_SETS][TUNE_MAX_ARGS];
  CUdeviceptr own_ptr[TUNE_MAX_ARGS];               /* the problem's buffers, restored after */
  CUtensorMap own_tmap[TUNE_MAX_ARGS];
} rotation;

static int rotated(const wstate *w, int i) { return w->def[i].is_tensor && !w->def[i].scratch && w->ptr[i]; }

static void rotation_free(wstate *w, rotation *rot) {
  for (int s = 1; s < rot->n; ++s)
    for (int i = 0; i < w->n_args; ++i)
      if (rotated(w, i) && rot->ptr[s][i]) tune_cu.cuMemFree(rot->ptr[s][i]);
  memcpy(w->ptr, rot->own_ptr, sizeof rot->own_ptr);
  memcpy(w->tmap, rot->own_tmap, sizeof rot->own_tmap);
  free(rot);
}

/* Make the sets: enough that together they exceed 2x L2, within TUNE_SUSTAINED_MAX_SET_BYTES and
 * the memory that can be had (an allocation refused ends the list). why: a launch_error. */
static int rotation_new(wstate *w, json_t *tmaps, rotation **out, char *why, size_t why_n, tune_err *err) {
  rotation *rot = calloc(1, sizeof *rot);
  if (!rot) return tune_fail(err, TUNE_ENOMEM, "worker: out of memory");
  memcpy(rot->own_ptr, w->ptr, sizeof rot->own_ptr);
  memcpy(rot->own_tmap, w->tmap, sizeof rot->own_tmap);
  size_t set_bytes = 0;
  for (int i = 0; i < w->n_args; ++i) if (rotated(w, i)) set_bytes += w->bytes[i];
  size_t want = set_bytes ? (2 * (size_t)w->l2_bytes + set_bytes - 1) / set_bytes + 1 : 1;
  if (want < 2) want = 2;
  if (set_bytes && want * set_bytes > TUNE_SUSTAINED_MAX_SET_BYTES) want = TUNE_SUSTAINED_MAX_SET_BYTES / set_bytes;
  if (want > ROT_MAX_SETS) want = ROT_MAX_SETS;
  if (want < 1) want = 1;
  memcpy(rot->ptr[0], w->ptr, sizeof rot->ptr[0]);
  memcpy(rot->tmap[0], w->tmap, sizeof rot->tmap[0]);
  rot->n = 1;
  for (size_t s = 1; s < want; ++s) {
    int ok = 1;
    for (int i = 0; i < w->n_args && ok; ++i) {
      rot->ptr[s][i] = rot->own_ptr[i];
      if (!rotated(w, i)) continue;
      rot->ptr[s][i] = 0;
      if (tune_cu.cuMemAlloc(&rot->ptr[s][i], w->bytes[i]) != CUDA_SUCCESS) { rot->ptr[s][i] = 0; ok = 0; break; }
      if (!w->def[i].output) CU_TRY(err, cuMemcpyDtoD(rot->ptr[s][i], rot->own_ptr[i], w->bytes[i]));
    }
    rot->n = (int)s + 1; /* counted before the check: rotation_free releases a partial set */
    if (!ok) { rot->n = (int)s; for (int i = 0; i < w->n_args; ++i) if (rotated(w, i) && rot->ptr[s][i]) tune_cu.cuMemFree(rot->ptr[s][i]); break; }
    memcpy(w->ptr, rot->ptr[s], sizeof w->ptr);
    int bad = tune_wk_build_tmaps(w, tmaps, why, why_n);
    memcpy(rot->tmap[s], w->tmap, sizeof rot->tmap[s]);
    memcpy(w->ptr, rot->own_ptr, sizeof w->ptr);
    memcpy(w->tmap, rot->own_tmap, sizeof w->tmap);
    if (bad) { rotation_free(w, rot); return -1; }
  }
  *out = rot;
  return TUNE_OK;
fail:
  rotation_free(w, rot);
  return err->code;
}

/* count launches of the variant back to back, cycling the sets from *next; no synchronization. */
static CUresult launch_rotating(wstate *w, rotation *rot, launch *l, int n, long count, int *next, char *why, size_t why_n) {
  CUresult r = CUDA_SUCCESS;
  for (long k = 0; k < count && r == CUDA_SUCCESS; ++k) {
    memcpy(w->ptr, rot->ptr[*next], sizeof w->ptr);
    memcpy(w->tmap, rot->tmap[*next], sizeof w->tmap);
    *next = (*next + 1) % rot->n;
    r = tune_wk_run_launches(w, l, n, why, why_n);
  }
  memcpy(w->ptr, rot->own_ptr, sizeof w->ptr);
  memcpy(w->tmap, rot->own_tmap, sizeof w->tmap);
  return r;
}

/* The sustained samples [ns per launch] into samples[max] and event_samples; *ns their count,
 * *rel_ci the median's 95 % interval. Returns a reply (crash, launch_error) when the variant
 * failed, NULL with *failed = 0 when timed, NULL with *failed = 1 when the worker failed. */
json_t *tune_wk_sustained_samples(wstate *w, json_t *tmaps, launch *l, int n, double *samples, double *event_samples,
                                 int *ns, double *rel_ci, tune_clocks *clk, tune_err *err, int *failed) {
  char why[1024] = "";
  rotation *rot = NULL;
  json_t *reply = NULL;
  tune_cupti_span sp;
  int next = 0;
  *failed = 1;
  *ns = 0;
  int rc = rotation_new(w, tmaps, &rot, why, sizeof why, err);
  if (rc > 0) return NULL;
  if (rc < 0) { *failed = 0; return json_pack("{s:s,s:s}", "status", "launch_error", "error", why); }
  /* one launch for its time, then the warm-up at that pace, then the launches per sample */
  CUresult r = launch_rotating(w, rot, l, n, 1, &next, why, sizeof why);
  if (r == CUDA_SUCCESS) r = tune_cu.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) { reply = tune_wk_crash_reply(r, why[0] ? why : "sustained: first launch"); goto done; }
  if (tune_cupti_collect_span(&sp, NULL, 0, err)) goto fail;
  double per = sp.span_ns > 0 ? sp.span_ns : 1e3;
  long warm = (long)(TUNE_SUSTAINED_WARMUP_MS * 1e6 / per) + 1;
  if (warm > 100 * TUNE_SUSTAINED_MAX_LAUNCHES) warm = 100 * TUNE_SUSTAINED_MAX_LAUNCHES;
  r = launch_rotating(w, rot, l, n, warm, &next, why, sizeof why);
  if (r == CUDA_SUCCESS) r = tune_cu.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) { reply = tune_wk_crash_reply(r, why[0] ? why : "sustained: warm-up"); goto done; }
  if (tune_cupti_collect_span(&sp, NULL, 0, err)) goto fail;
  if (sp.span_ns > 0) per = sp.span_ns / (double)warm;
  long per_sample = (long)(TUNE_SUSTAINED_SAMPLE_MS * 1e6 / per);
  if (per_sample < 1) per_sample = 1;
  if (per_sample > TUNE_SUSTAINED_MAX_LAUNCHES) per_sample = TUNE_SUSTAINED_MAX_LAUNCHES;
  double t0 = tune_wk_now_ms();
  while (*ns < TUNE_SUSTAINED_MAX_SAMPLES) {
    CU_TRY(err, cuEventRecord(w->e0, 0));
    r = launch_rotating(w, rot, l, n, per_sample, &next, why, sizeof why);
    if (r != CUDA_SUCCESS) { reply = tune_wk_crash_reply(r, why); goto done; }
    CU_TRY(err, cuEventRecord(w->e1, 0));
    tune_clocks_fold(clk, tune_nvml_sample()); /* while the queue runs: the clock under load */
    r = tune_cu.cuCtxSynchronize();
    if (r != CUDA_SUCCESS) { reply = tune_wk_crash_reply(r, "during sustained timing"); goto done; }
    float ms;
    CU_TRY(err, cuEventElapsedTime(&ms, w->e0, w->e1));
    if (tune_cupti_collect_span(&sp, NULL, 0, err)) goto fail;
    if (sp.n_kernels < per_sample) {
      reply = json_pack("{s:s,s:s}", "status", "launch_error", "error", "sustained: fewer kernels ran than were launched");
      goto done;
    }
    event_samples[*ns] = ms * 1e6 / (double)per_sample;
    samples[(*ns)++] = sp.span_ns / (double)per_sample;
    if (*ns >= TUNE_SUSTAINED_MIN_SAMPLES) {
      *rel_ci = tune_wk_median_rel_ci(samples, *ns);
      if (*rel_ci < 0.01 || tune_wk_now_ms() - t0 > TUNE_SUSTAINED_MAX_MS) break;
    }
  }
done:
  *failed = 0;
fail:
  if (rot) rotation_free(w, rot);
  return reply;
}

