/* worker_sets.c: the worker's second input set (docs/measurement.md). Every input tensor exists
 * twice, at different guarded addresses: the data drawn from the problem's seed and from a second
 * seed, the integer structure the same; each set has its own reference outputs. Verification runs on both, timed launches alternate between
 * them, and the launch after timing reads the other set's contents at the addresses it last saw:
 * a variant that keys a cached result by pointer, or that is right only for the inputs it was
 * verified on, ends wrong. */
#include <stdlib.h>
#include <string.h>

#include "inputs.h"
#include "worker_int.h"

/* The second seed: far from the first in the generator's stream. */
#define ALT_SEED_STEP 0x9e3779b97f4a7c15ull

static int is_input(const wstate *w, int i) {
  return w->def[i].is_tensor && !w->def[i].output && !w->def[i].scratch && w->ptr[i] && w->bytes[i];
}

void tune_wk_alt_free(wstate *w) {
  for (int i = 0; i < TUNE_MAX_ARGS; ++i) {
    if (w->alt.guard_base[i]) tune_cu.cuMemFree(w->alt.guard_base[i]);
    if (w->alt.ref[i]) tune_cu.cuMemFree(w->alt.ref[i]);
  }
  memset(&w->alt, 0, sizeof w->alt);
  w->two_sets = 0;
  w->live_set = 0;
}

/* Integer inputs are structure (sequence offsets, expert counts, block tables, lengths): the
 * other set keeps them, at its own address, so both sets describe the same work and a variant's
 * time stays comparable with a peer timed on the problem's inputs; the data around them differ. */
static int is_structure(const wstate *w, int i) { return w->def[i].dtype == TUNE_I32 || w->def[i].dtype == TUNE_I64; }

/* Input i as set `set` holds it, into dst: the data drawn from that set's seed (the second set's
 * from the arg's adversarial init where it has one), the structure always from the first set's. */
static int fill_input(wstate *w, int i, int set, uint64_t seed0, uint64_t seed1, CUdeviceptr dst, tune_err *err) {
  tune_arg_def def = w->def[i];
  int second_data = set && !is_structure(w, i);
  if (second_data && def.adv_init) { def.init = def.adv_init; def.init_a = def.adv_a; def.init_b = def.adv_b; }
  return tune_wk_fill(w, &def, w->numel[i], second_data ? seed1 : seed0, i, dst, err);
}

/* Draw the other set's inputs. Out of device memory, the problem keeps one set (said in each
 * result's input_sets). */
int tune_wk_alt_alloc(wstate *w, tune_err *err) {
  tune_wk_alt_free(w);
  w->alt.seed = w->seed + ALT_SEED_STEP;
  int any = 0;
  for (int i = 0; i < w->n_args; ++i) {
    if (!is_input(w, i)) continue;
    if (tune_wk_guard_alloc(w->bytes[i], &w->alt.guard_base[i], &w->alt.ptr[i], err)) {
      if (w->alt.guard_base[i]) tune_cu.cuMemFree(w->alt.guard_base[i]);
      w->alt.guard_base[i] = w->alt.ptr[i] = 0;
      tune_wk_alt_free(w);
      tune_err_clear(err);
      return TUNE_OK;
    }
    if (is_structure(w, i)) { /* the same values: a copy on the device */
      CU_TRY(err, cuMemcpyDtoD(w->alt.ptr[i], w->ptr[i], w->bytes[i]));
      continue;
    }
    if (fill_input(w, i, 1, w->seed, w->alt.seed, w->alt.ptr[i], err)) return err->code;
    any = 1;
  }
  w->two_sets = any;
  if (!any) return TUNE_OK;
  tune_wk_swap_sets(w);
  for (int i = 0; i < w->n_args; ++i)
    if (is_input(w, i) && tune_wk_checksum(w, i, &w->in_hash[i], err)) { tune_wk_swap_sets(w); return err->code; }
  tune_wk_swap_sets(w);
  return TUNE_OK;
fail:
  return err->code;
}

#define SWAP(T, a, b) do { T t_ = (a); (a) = (b); (b) = t_; } while (0)

/* What belongs to a set's contents: input checksums, references, seed. */
static void swap_labels(wstate *w) {
  for (int i = 0; i < w->n_args; ++i) {
    SWAP(uint64_t, w->in_hash[i], w->alt.in_hash[i]);
    SWAP(CUdeviceptr, w->ref[i], w->alt.ref[i]);
  }
  SWAP(uint64_t, w->seed, w->alt.seed);
  w->live_set ^= 1;
}

void tune_wk_swap_sets(wstate *w) {
  if (!w->two_sets) return;
  for (int i = 0; i < w->n_args; ++i) {
    if (!w->alt.ptr[i]) continue;
    SWAP(CUdeviceptr, w->ptr[i], w->alt.ptr[i]);
    SWAP(CUdeviceptr, w->guard_base[i], w->alt.guard_base[i]);
  }
  swap_labels(w);
}

/* Exchange the contents of the two sets' inputs, a flush buffer's worth at a time through it
 * (its contents do not matter: it only evicts L2). */
int tune_wk_swap_contents(wstate *w, tune_err *err) {
  if (!w->two_sets) return TUNE_OK;
  for (int i = 0; i < w->n_args; ++i) {
    if (!w->alt.ptr[i]) continue;
    for (size_t off = 0; off < w->bytes[i]; off += w->flush_bytes) {
      size_t n = w->bytes[i] - off < w->flush_bytes ? w->bytes[i] - off : w->flush_bytes;
      CU_TRY(err, cuMemcpyDtoD(w->flush, w->ptr[i] + off, n));
      CU_TRY(err, cuMemcpyDtoD(w->ptr[i] + off, w->alt.ptr[i] + off, n));
      CU_TRY(err, cuMemcpyDtoD(w->alt.ptr[i] + off, w->flush, n));
    }
  }
  swap_labels(w);
  return TUNE_OK;
fail:
  return err->code;
}

/* Regenerate the live set's inputs a variant modified (the values they had: fill_input). */
static int restore_live(wstate *w, tune_err *err) {
  /* the seeds follow the contents: w->seed is the live contents' */
  uint64_t seed0 = w->live_set ? w->alt.seed : w->seed, seed1 = w->live_set ? w->seed : w->alt.seed;
  for (int i = 0; i < w->n_args; ++i) {
    if (!is_input(w, i)) continue;
    uint64_t h;
    if (tune_wk_checksum(w, i, &h, err)) return err->code;
    if (h != w->in_hash[i] && fill_input(w, i, w->live_set, seed0, seed1, w->ptr[i], err)) return err->code;
  }
  return TUNE_OK;
}

int tune_wk_restore_inputs(wstate *w, tune_err *err) {
  int rc = restore_live(w, err);
  if (rc || !w->two_sets) return rc;
  tune_wk_swap_sets(w);
  rc = restore_live(w, err);
  tune_wk_swap_sets(w);
  return rc;
}
