/* worker_verify.c: what the worker checks of a variant besides its time: outputs against the
 * reference on both input sets, inputs unchanged, guard bands around every tensor, the outputs of
 * timed launches, and one launch after timing on the other set's inputs (docs/measurement.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_timer.h"
#include "inputs.h"
#include "worker_int.h"

/* ---- tolerances (docs/measurement.md) ---- */

const tune_wk_worst tune_wk_worst_init = {0, 0, 0, 0};

void tune_wk_worst_to_reply(const tune_wk_worst *worst, json_t *reply) {
  json_object_set_new(reply, "rel_l2", json_real(worst->rel_l2));
  json_object_set_new(reply, "max_abs", json_real(worst->max_abs));
  if (worst->honest_rel_l2 > 0) json_object_set_new(reply, "honest_rel_l2", json_real(worst->honest_rel_l2));
}

/* 1 when output i's comparison c has an honest error that judges it: a bf16, f16 or e4m3 output of
 * a nonzero reference (the honest error of f32 and integer outputs judges nothing). */
static int has_honest(const wstate *w, int i, const tune_compare *c) {
  return tune_dtype_is_narrow_float(w->def[i].dtype) && c->honest_rel_l2 > 0;
}

/* rel_l2 / honest error of output i's comparison c where it has one (has_honest), else 0. */
static double honest_ratio(const wstate *w, int i, const tune_compare *c) {
  return has_honest(w, i, c) ? c->rel_l2 / c->honest_rel_l2 : 0;
}

/* 1 when c exceeds tolerance.honest (never when the recipe gives none); the finding in why. */
static int honest_exceeded(const wstate *w, int i, const tune_compare *c, char *why, size_t why_n) {
  double ratio = honest_ratio(w, i, c);
  if (!(w->tol_honest > 0) || ratio <= w->tol_honest) return 0;
  snprintf(why, why_n, "rel_l2 %.3g is %.3gx the honest error %.3g (tolerance.honest %g)", c->rel_l2, ratio,
           c->honest_rel_l2, w->tol_honest);
  return 1;
}

/* Output i within every tolerance: no NaN/Inf, rel_l2, max_abs, tolerance.honest. */
static int output_ok(const wstate *w, int i, const tune_compare *c) {
  char why[160];
  return !c->n_nan && c->rel_l2 <= w->tol_rel && c->max_abs <= w->tol_abs && !honest_exceeded(w, i, c, why, sizeof why);
}

/* ---- guard bands and the relaunch check: variants that write out of bounds, or
   compute their output only once (docs/llm-hook.md) ---- */

#define GUARD_BYTES ((size_t)1 << 20) /* before and after every input and output tensor */
#define GUARD_BYTE 0xa5

int tune_wk_guard_alloc(size_t bytes, CUdeviceptr *base, CUdeviceptr *ptr, tune_err *err) {
  *base = *ptr = 0;
  CU_TRY(err, cuMemAlloc(base, bytes + 2 * GUARD_BYTES));
  *ptr = *base + GUARD_BYTES;
  CU_TRY(err, cuMemsetD8(*base, GUARD_BYTE, GUARD_BYTES));
  CU_TRY(err, cuMemsetD8(*ptr + bytes, GUARD_BYTE, GUARD_BYTES));
  return TUNE_OK;
fail:
  return err->code;
}

/* Were the live set's guard bands written? The first hit is described in wrong (left as is when
 * it already holds a finding); the bands are refilled for the next variant. */
static int guard_check_live(wstate *w, char *wrong, size_t wrong_n, tune_err *err) {
  CUdeviceptr bands[2 * TUNE_MAX_ARGS];
  int arg_of[2 * TUNE_MAX_ARGS], nb = 0;
  for (int i = 0; i < w->n_args; ++i) {
    if (!w->guard_base[i]) continue;
    for (int side = 0; side < 2; ++side) {
      bands[nb] = side ? w->ptr[i] + w->bytes[i] : w->guard_base[i];
      arg_of[nb++] = i;
    }
  }
  unsigned long long found[2 * TUNE_MAX_ARGS][3];
  if (!nb || tune_wk_guard_scan(w, bands, nb, GUARD_BYTES, GUARD_BYTE, found, err)) return err->code;
  for (int k = 0; k < nb; ++k) {
    unsigned long long hits = found[k][0], first = found[k][1], last = found[k][2];
    int i = arg_of[k], side = (int)(bands[k] != w->guard_base[i]);
    if (!hits) continue;
    if (!wrong[0])
      snprintf(wrong, wrong_n, "out-of-bounds write: %llu byte(s) %s %s %s were changed (%llu to %llu bytes %s it)",
               hits, side ? "after the end of" : "before the start of", w->def[i].output ? "output" : "input",
               w->def[i].name ? w->def[i].name : "?", side ? first + 1 : GUARD_BYTES - last,
               side ? last + 1 : GUARD_BYTES - first, side ? "past" : "before");
    CU_TRY(err, cuMemsetD8(bands[k], GUARD_BYTE, GUARD_BYTES));
  }
  return TUNE_OK;
fail:
  return err->code;
}

/* The guard bands of both input sets (and of the outputs). */
static int guard_check(wstate *w, char *wrong, size_t wrong_n, tune_err *err) {
  int rc = guard_check_live(w, wrong, wrong_n, err);
  if (rc || !w->two_sets) return rc;
  tune_wk_swap_sets(w);
  rc = guard_check_live(w, wrong, wrong_n, err);
  tune_wk_swap_sets(w);
  return rc;
}

/* After timing: poison the outputs, launch once more and compare again, so that a variant
 * which computes its output on the first launch only (keeping it in later ones) is wrong.
 * With two input sets, the launch reads the other set's inputs at the live addresses (so a
 * result cached by pointer is stale). Each output against the reference of the contents it read,
 * on the device; then the guard bands once more. Returns NULL when the variant
 * passes, else its reply; *failed = 1 when the worker itself failed (err set). */
json_t *tune_wk_relaunch_check(wstate *w, launch *l, int n, tune_err *err, int *failed) {
  char wrong[1024] = "", why[1024] = "";
  *failed = 1;
  /* the other set's inputs at the addresses the variant has seen: a cache keyed by pointer fails */
  if (w->two_sets && tune_wk_swap_contents(w, err)) return NULL;
  if (tune_wk_poison_outputs(w, err)) return NULL;
  if (tune_cu.cuMemsetD8Async(w->flush, 0x5a, w->flush_bytes, 0) != CUDA_SUCCESS) {
    tune_fail(err, TUNE_ECUDA, "worker: L2 flush before the relaunch check failed");
    return NULL;
  }
  CUresult r = tune_wk_run_launches(w, l, n, why, sizeof why);
  if (r == CUDA_SUCCESS) r = tune_cu.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) { *failed = 0; return tune_wk_crash_reply(r, why[0] ? why : "in the launch after timing"); }
  if (tune_cupti_available()) { double d; int k; if (tune_cupti_collect(&d, &k, err)) return NULL; }
  for (int i = 0; i < w->n_args && !wrong[0]; ++i) {
    if (!w->def[i].is_tensor || w->def[i].scratch || !w->def[i].output) continue;
    tune_compare c;
    if (tune_wk_compare(w, i, w->ref[i], &c, err)) return NULL;
    if (!output_ok(w, i, &c))
      snprintf(wrong, sizeof wrong, "output %s is wrong in a launch after the timed ones%s (%lld NaN/Inf, rel_l2 %.3g, "
               "honest error %.3g, first bad at %lld): the variant does not compute its output from its inputs on every launch",
               w->def[i].name ? w->def[i].name : "?", w->two_sets ? ", on new inputs at the same addresses" : "",
               (long long)c.n_nan, c.rel_l2, c.honest_rel_l2, (long long)c.first_bad);
  }
  if (guard_check(w, wrong, sizeof wrong, err)) return NULL;
  *failed = 0;
  return wrong[0] ? json_pack("{s:s,s:s}", "status", "wrong", "error", wrong) : NULL;
}

static int is_sticky(CUresult r) {
  return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED || r == CUDA_ERROR_MISALIGNED_ADDRESS ||
         r == CUDA_ERROR_ILLEGAL_INSTRUCTION || r == CUDA_ERROR_HARDWARE_STACK_ERROR ||
         r == CUDA_ERROR_INVALID_ADDRESS_SPACE || r == CUDA_ERROR_INVALID_PC || r == CUDA_ERROR_ASSERT ||
         r == CUDA_ERROR_LAUNCH_TIMEOUT || r == CUDA_ERROR_ECC_UNCORRECTABLE || r == CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

int tune_wk_sample_checks_open(wstate *w, int cap, sample_checks *sc, tune_err *err) {
  memset(sc, 0, sizeof *sc);
  for (int i = 0; i < w->n_args; ++i)
    if (w->def[i].is_tensor && !w->def[i].scratch && w->def[i].output) sc->outs[sc->n_out++] = i;
  if (!sc->n_out || cap <= 0) return TUNE_OK;
  size_t n = (size_t)cap * (size_t)sc->n_out;
  sc->host = malloc(n * sizeof *sc->host);
  sc->set_of = malloc((size_t)cap);
  if (!sc->host || !sc->set_of) return tune_fail(err, TUNE_ENOMEM, "worker: out of memory");
  for (size_t k = 0; k < n; ++k) sc->host[k] = tune_wk_cmp_init;
  CU_TRY(err, cuMemAlloc(&sc->dev, n * sizeof *sc->host));
  CU_TRY(err, cuMemcpyHtoD(sc->dev, sc->host, n * sizeof *sc->host));
  sc->cap = cap;
  return TUNE_OK;
fail:
  return err->code;
}

int tune_wk_sample_checks_launch(wstate *w, sample_checks *sc, int sample, tune_err *err) {
  if (sample >= sc->cap) return TUNE_OK;
  sc->set_of[sample] = (unsigned char)w->live_set;
  for (int j = 0; j < sc->n_out; ++j) {
    CUdeviceptr res = sc->dev + ((size_t)sample * (size_t)sc->n_out + (size_t)j) * sizeof(tune_wk_cmp);
    if (tune_wk_compare_async(w, sc->outs[j], w->ref[sc->outs[j]], res, err)) return err->code;
  }
  return TUNE_OK;
}

int tune_wk_sample_checks_judge(wstate *w, sample_checks *sc, int n_samples, char *wrong, size_t wrong_n, tune_err *err) {
  if (n_samples > sc->cap) n_samples = sc->cap;
  if (!sc->n_out || n_samples <= 0) return TUNE_OK;
  CU_TRY(err, cuMemcpyDtoH(sc->host, sc->dev, (size_t)n_samples * (size_t)sc->n_out * sizeof *sc->host));
  for (int k = 0; k < n_samples && !wrong[0]; ++k)
    for (int j = 0; j < sc->n_out && !wrong[0]; ++j) {
      tune_compare c;
      tune_wk_compare_result(&sc->host[(size_t)k * (size_t)sc->n_out + (size_t)j], &c);
      int i = sc->outs[j];
      if (!output_ok(w, i, &c))
        snprintf(wrong, wrong_n, "output %s is wrong in timed launch %d of %d%s (%lld NaN/Inf, rel_l2 %.3g, max_abs %.3g, "
                 "honest error %.3g): timed launches must compute what the verified one did", w->def[i].name ? w->def[i].name : "?",
                 k + 1, n_samples, sc->set_of[k] ? " (second input set)" : "", (long long)c.n_nan, c.rel_l2, c.max_abs,
                 c.honest_rel_l2);
    }
  return TUNE_OK;
fail:
  return err->code;
}

void tune_wk_sample_checks_close(sample_checks *sc) {
  if (sc->dev) tune_cu.cuMemFree(sc->dev);
  free(sc->host);
  free(sc->set_of);
  memset(sc, 0, sizeof *sc);
}

/* Verify the variant once on the live input set: outputs and scratch poisoned (a scratch the recipe
 * declares zero = true is zeroed by each launch instead), so a variant that reads scratch it never
 * wrote fails; L2 flushed as before every timed launch, so that the checked launch looks like any
 * other to the kernel. Every output against the live set's reference, inputs unchanged, guard bands
 * intact; the outputs' checksums into w->out_hash. Returns NULL when the variant passes, else its
 * reply ("sticky": true when the context is lost); *failed = 1 when the worker failed (err set). */
json_t *tune_wk_verify_live(wstate *w, launch *l, int n, tune_wk_worst *worst, tune_err *err, int *failed) {
  char why[1024] = "", wrong[1024] = "", honest[256];
  *failed = 1;
  if (tune_wk_poison_outputs(w, err) || tune_wk_poison_scratch(w, err)) return NULL;
  CU_TRY(err, cuMemsetD8Async(w->flush, 0xa5, w->flush_bytes, 0));
  CUresult r = tune_wk_run_launches(w, l, n, why, sizeof why);
  if (r == CUDA_SUCCESS) r = tune_cu.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) {
    *failed = 0;
    if (!is_sticky(r)) return json_pack("{s:s,s:s}", "status", "launch_error", "error", why[0] ? why : tune_cuda_error_name(r));
    json_t *reply = tune_wk_crash_reply(r, why[0] ? why : "after the verified run");
    json_object_set_new(reply, "sticky", json_true());
    return reply;
  }
  if (tune_cupti_available()) {
    double ns;
    int nk;
    if (tune_cupti_collect(&ns, &nk, err)) return NULL;
    int nz = 0; /* the scratch_zero kernels ran too */
    for (int i = 0; i < w->n_args; ++i) nz += w->def[i].zero && w->ptr[i] && w->bytes[i];
    int nl = 0; /* steps with zero blocks are not launched */
    for (int i = 0; i < n; ++i) nl += l[i].grid[0] && l[i].grid[1] && l[i].grid[2];
    if (nl == 0) snprintf(why, sizeof why, "no kernel launched: every launch step has zero blocks for this problem");
    else if (nk < nl + nz) snprintf(why, sizeof why, "%d kernel(s) ran for %d launches: a variant must run its kernels", nk, nl + nz);
    *failed = 0;
    if (nl == 0 || nk < nl + nz) return json_pack("{s:s,s:s}", "status", "launch_error", "error", why);
    *failed = 1;
  }
  for (int i = 0; i < w->n_args; ++i) {
    if (!w->def[i].is_tensor || w->def[i].scratch) continue;
    if (!w->def[i].output) {
      uint64_t h;
      if (tune_wk_checksum(w, i, &h, err)) return NULL;
      if (h != w->in_hash[i] && !wrong[0])
        snprintf(wrong, sizeof wrong, "input %s was modified by the variant", w->def[i].name ? w->def[i].name : "?");
      continue;
    }
    tune_compare c;
    if (tune_wk_compare(w, i, w->ref[i], &c, err)) return NULL;
    if (c.rel_l2 > worst->rel_l2) worst->rel_l2 = c.rel_l2;
    if (c.max_abs > worst->max_abs) worst->max_abs = c.max_abs;
    double ratio = honest_ratio(w, i, &c); /* reported even when 0: an exact output */
    if (has_honest(w, i, &c) && (ratio > worst->honest_ratio || worst->honest_rel_l2 == 0)) {
      worst->honest_ratio = ratio;
      worst->honest_rel_l2 = c.honest_rel_l2;
    }
    const char *name = w->def[i].name ? w->def[i].name : "?", *on = w->live_set ? " (second input set)" : "";
    if (!wrong[0] && c.n_nan)
      snprintf(wrong, sizeof wrong, "output %s%s: %lld NaN/Inf elements (unwritten or overflow), first at %lld", name, on,
               (long long)c.n_nan, (long long)c.first_bad);
    else if (!wrong[0] && (c.rel_l2 > w->tol_rel || c.max_abs > w->tol_abs)) {
      double got = 0, want = 0;
      if (c.first_bad >= 0 && (tune_wk_element(w, i, w->ptr[i], c.first_bad, &got, err) ||
                               tune_wk_element(w, i, w->ref[i], c.first_bad, &want, err)))
        return NULL;
      snprintf(wrong, sizeof wrong, "output %s%s: rel_l2 %.3g (tol %.3g), max_abs %.3g (tol %.3g), first bad at %lld: got %.6g want %.6g",
               name, on, c.rel_l2, w->tol_rel, c.max_abs, w->tol_abs, (long long)c.first_bad, got, want);
    } else if (!wrong[0] && honest_exceeded(w, i, &c, honest, sizeof honest))
      snprintf(wrong, sizeof wrong, "output %s%s: %s: the variant rounds more than once or computes in a narrower precision "
               "than the reference", name, on, honest);
  }
  if (guard_check(w, wrong, sizeof wrong, err)) return NULL;
  *failed = 0;
  if (!wrong[0]) return NULL;
  json_t *reply = json_pack("{s:s,s:s}", "status", "wrong", "error", wrong);
  tune_wk_worst_to_reply(worst, reply);
  return reply;
fail:
  return NULL;
}
