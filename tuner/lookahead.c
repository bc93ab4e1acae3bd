/* lookahead.c: the next batch's compiles, queued behind this batch's (lookahead.h). */
#include "lookahead.h"

#include <stdlib.h>
#include <string.h>

#include "variant_job.h"

typedef struct generation {
  int n;                                /* guesses */
  int first;                            /* the pool's index of jobs[0] once queued */
  tune_compile_job jobs[TUNE_AHEAD_MAX];
  tune_compile_job *ptrs[TUNE_AHEAD_MAX];
  tune_variant v[TUNE_AHEAD_MAX];       /* the jobs' defines and kernel names point into these */
  int claimed[TUNE_AHEAD_MAX];
} generation;

struct tune_ahead {
  generation g[2];
  int newest;   /* the generation batches claim from, -1 before the first is queued */
  int building; /* the generation being made */
};

int tune_ahead_new(tune_ahead **out, tune_err *err) {
  *out = calloc(1, sizeof **out);
  if (!*out) return tune_fail(err, TUNE_ENOMEM, "lookahead: out of memory");
  (*out)->newest = -1;
  return TUNE_OK;
}

/* Stores generation g's unclaimed binaries (db NULL: drops them) and empties it. With a pool, waits
 * for each job first (no job is released while the pool may touch it); without, the pool has
 * finished. */
static int empty_generation(generation *g, tune_compile_async *pool, db_conn *db, int *compiled, tune_err *err) {
  int rc = TUNE_OK;
  for (int i = 0; i < g->n; ++i) {
    tune_compile_job *j = &g->jobs[i];
    tune_err waited;
    tune_err_clear(&waited);
    /* a pool failure (not a compile error) leaves nothing worth keeping */
    int failed = (pool && tune_compile_wait(pool, g->first + i, NULL, &waited)) || j->err.code;
    if (!rc && db && !g->claimed[i] && !failed && !(rc = db_binary_put(db, &j->bin, err)) && compiled) ++*compiled;
    db_binary_release(&j->bin);
  }
  g->n = 0;
  return rc;
}

int tune_ahead_begin(tune_ahead *a, tune_compile_async *pool, db_conn *db, int *compiled, tune_err *err) {
  a->building = a->newest < 0 ? 0 : 1 - a->newest;
  return empty_generation(&a->g[a->building], pool, db, compiled, err);
}

int tune_ahead_guess(tune_ahead *a, tune_recipe *r, const tune_problem *p, const tune_device_facts *facts,
                     const int *vi, const char *arch, const char *templates, db_conn *db,
                     const tune_compile_job *batch, int n_batch, tune_err *err) {
  generation *g = &a->g[a->building];
  if (g->n >= TUNE_AHEAD_MAX) return TUNE_OK;
  tune_variant *v = &g->v[g->n];
  tune_compile_job *j = &g->jobs[g->n];
  int rc = tune_variant_job_for(r, vi, p, facts, templates, arch, v, j, err);
  if (rc || v->skip) return rc;
  const generation *other = &a->g[1 - a->building];
  if (tune_job_key_in(j->bin.key, batch, n_batch) || tune_job_key_in(j->bin.key, g->jobs, g->n) ||
      tune_job_key_in(j->bin.key, other->jobs, other->n))
    return TUNE_OK;
  int cached = 0;
  if ((rc = db_binary_has(db, j->bin.key, &cached, err)) || cached) return rc;
  g->claimed[g->n] = 0;
  g->ptrs[g->n] = j;
  g->n++;
  return TUNE_OK;
}

int tune_ahead_queue(tune_ahead *a, tune_compile_async *pool, tune_err *err) {
  generation *g = &a->g[a->building];
  if (g->n && tune_compile_add(pool, g->ptrs, g->n, &g->first, err)) {
    for (int i = 0; i < g->n; ++i) db_binary_release(&g->jobs[i].bin);
    g->n = 0;
    return err->code;
  }
  a->newest = a->building;
  return TUNE_OK;
}

int tune_ahead_claim(tune_ahead *a, const char *key, int *pool_index, int *ref) {
  if (a->newest < 0) return 0;
  generation *g = &a->g[a->newest];
  for (int i = 0; i < g->n; ++i) {
    if (g->claimed[i] || strcmp(g->jobs[i].bin.key, key)) continue;
    g->claimed[i] = 1;
    *pool_index = g->first + i;
    *ref = a->newest * TUNE_AHEAD_MAX + i;
    return 1;
  }
  return 0;
}

void tune_ahead_move(tune_ahead *a, int ref, tune_compile_job *j) {
  tune_compile_job *from = &a->g[ref / TUNE_AHEAD_MAX].jobs[ref % TUNE_AHEAD_MAX];
  db_binary_release(&j->bin);
  j->bin = from->bin;
  memcpy(j->lowered, from->lowered, sizeof j->lowered);
  memset(&from->bin, 0, sizeof from->bin);
}

int tune_ahead_flush(tune_ahead *a, db_conn *db, int *compiled, tune_err *err) {
  int rc = empty_generation(&a->g[0], NULL, db, compiled, err);
  int rc1 = empty_generation(&a->g[1], NULL, rc ? NULL : db, compiled, err);
  a->newest = -1;
  return rc ? rc : rc1;
}

void tune_ahead_free(tune_ahead *a) {
  if (!a) return;
  tune_err e;
  tune_err_clear(&e);
  tune_ahead_flush(a, NULL, NULL, &e);
  free(a);
}
