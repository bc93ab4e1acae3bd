/* problem_space.c: see problem_space.h. */
#include "problem_space.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tune_device_facts_from(const db_device *d, tune_device_facts *f) {
  memset(f, 0, sizeof *f);
  f->sm_count = d->sm_count;
  f->smem_per_block = d->smem_per_block_optin;
  f->l2_bytes = d->l2_bytes;
  snprintf(f->arch, sizeof f->arch, "%s", d->arch);
}

/* Count one rejection under its reason; reasons past the table's room count as other. */
static void note_reason(tune_rejections *rej, const char *why) {
  rej->n++;
  for (int i = 0; i < rej->n_reasons; i++)
    if (!strcmp(rej->reason[i], why)) {
      rej->count[i]++;
      return;
    }
  if (rej->n_reasons == TUNE_REJECT_REASONS) {
    rej->n_other++;
    return;
  }
  snprintf(rej->reason[rej->n_reasons], sizeof rej->reason[0], "%s", why);
  rej->count[rej->n_reasons++] = 1;
}

static void sort_reasons(tune_rejections *rej) { /* most frequent first (a handful: insertion sort) */
  for (int i = 1; i < rej->n_reasons; i++)
    for (int j = i; j > 0 && rej->count[j] > rej->count[j - 1]; j--) {
      char t[sizeof rej->reason[0]];
      memcpy(t, rej->reason[j], sizeof t);
      memcpy(rej->reason[j], rej->reason[j - 1], sizeof t);
      memcpy(rej->reason[j - 1], t, sizeof t);
      size_t c = rej->count[j];
      rej->count[j] = rej->count[j - 1];
      rej->count[j - 1] = c;
    }
}

int tune_space_cut(const tune_recipe *r, const search_space *space, tune_config_keep_fn keep_config, const void *ctx,
                   search_space **out, tune_err *err) {
  *out = NULL;
  unsigned char *keep = malloc(space->n_points ? space->n_points : 1);
  if (!keep) return tune_fail(err, TUNE_ENOMEM, "%s: no memory to cut %zu configs", r->name, space->n_points);
  int rc = TUNE_OK;
  for (size_t i = 0; i < space->n_points && !rc; i++) {
    int vi[SEARCH_MAX_PARAMS], k = 0;
    search_point_decode(space, space->points[i], vi);
    rc = keep_config(ctx, r, vi, &k, err);
    keep[i] = (unsigned char)(!rc && k);
  }
  if (!rc) rc = search_space_subset(space, keep, out, err);
  free(keep);
  return rc;
}

typedef struct applies_ctx {
  tune_recipe *r;
  const tune_problem *p;
  const tune_device_facts *f;
  tune_variant *v;          /* scratch */
  tune_rejections *rej;
} applies_ctx;

/* The configs problem a->p accepts (its recipe's applies and requires); a->r is r, writable for the
 * evaluation. */
static int applies(const void *ctx, const tune_recipe *r, const int *vi, int *keep, tune_err *err) {
  const applies_ctx *a = ctx;
  int rc = tune_recipe_eval_variant(a->r, vi, a->p, a->f, a->v, err);
  *keep = !rc && !a->v->skip;
  if (!rc && a->v->skip) note_reason(a->rej, a->v->skip_reason);
  return rc;
}

int tune_problem_space(tune_recipe *r, const tune_problem *p, const tune_device_facts *f, const search_space *space,
                       search_space **out, tune_rejections *rej, tune_err *err) {
  *out = NULL;
  if (space->n_points > TUNE_PROBLEM_FILTER_MAX) { /* streamed: rejections are found when proposed */
    if (rej) memset(rej, 0, sizeof *rej);
    return TUNE_OK;
  }
  tune_variant *v = malloc(sizeof *v); /* ~30 KiB: not on the stack */
  if (!v) return tune_fail(err, TUNE_ENOMEM, "%s / %s: no memory to filter %zu configs", r->name, p->name, space->n_points);
  tune_rejections local;
  if (!rej) rej = &local;
  memset(rej, 0, sizeof *rej);
  applies_ctx a = {r, p, f, v, rej};
  int rc = tune_space_cut(r, space, applies, &a, out, err);
  sort_reasons(rej);
  free(v);
  return rc;
}
