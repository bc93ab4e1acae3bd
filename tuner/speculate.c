/* speculate.c: compiles started ahead of the search strategy (speculate.h). */
#include "speculate.h"

#include "variant_job.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tune_spec {
  int n;                                  /* guesses of the current round */
  tune_compile_job jobs[TUNE_SPEC_MAX];
  tune_compile_job *ptrs[TUNE_SPEC_MAX];
  tune_variant v[TUNE_SPEC_MAX];          /* the jobs' defines and kernel names point into these */
  int taken[TUNE_SPEC_MAX];
  tune_compile_async *a;
  char templates[PATH_MAX + 16]; /* the jobs' include root: a round may outlive its problem */
  const tune_problem *last_p;    /* the last round's problem and best point: a round from the same */
  uint64_t last_best;            /* ones would evaluate the same neighbours again and find them cached */
};

int tune_spec_new(tune_spec **out, tune_err *err) {
  *out = calloc(1, sizeof **out);
  return *out ? TUNE_OK : tune_fail(err, TUNE_ENOMEM, "speculate: out of memory");
}

int tune_spec_flush(tune_spec *s, db_conn *db, int *compiled, tune_err *err) {
  int rc = TUNE_OK;
  tune_compile_finish(s->a);
  s->a = NULL;
  for (int i = 0; i < s->n; ++i) {
    tune_compile_job *j = &s->jobs[i];
    /* a pool failure (not a compile error) leaves nothing worth keeping */
    if (!rc && db && !s->taken[i] && !j->err.code) {
      rc = db_binary_put(db, &j->bin, err);
      if (!rc && compiled) ++*compiled;
    }
    db_binary_release(&j->bin);
  }
  s->n = 0;
  return rc;
}

void tune_spec_free(tune_spec *s) {
  if (!s) return;
  tune_err e;
  tune_err_clear(&e);
  tune_spec_flush(s, NULL, NULL, &e);
  free(s);
}

/* Is `key` the key of one of the n jobs? */
static int key_in(const char *key, const tune_compile_job *jobs, int n) {
  for (int i = 0; i < n; ++i)
    if (!strcmp(key, jobs[i].bin.key)) return 1;
  return 0;
}

int tune_spec_round(tune_spec *s, tune_recipe *r, const tune_problem *p, const tune_device_facts *facts,
                    const search_space *space, uint64_t best, const char *arch, const char *templates, db_conn *db,
                    const tune_compile_job *batch, int n_batch, int max, int n_threads, int *compiled,
                    tune_err *err) {
  if (!tune_compile_all_done(s->a)) return TUNE_OK; /* the last round is still compiling: no new one */
  int rc = tune_spec_flush(s, db, compiled, err);
  if (rc) return rc;
  if (p == s->last_p && best == s->last_best) return TUNE_OK;
  s->last_p = p;
  s->last_best = best;
  snprintf(s->templates, sizeof s->templates, "%s", templates);
  if (max > TUNE_SPEC_MAX) max = TUNE_SPEC_MAX;
  int vi[SEARCH_MAX_PARAMS];
  search_point_decode(space, best, vi);
  for (int i = 0; i < space->n_params && s->n < max; ++i)
    for (int d = -1; d <= 1 && s->n < max; d += 2) {
      if (vi[i] + d < 0 || vi[i] + d >= space->n_values[i]) continue;
      vi[i] += d;
      long q = search_space_find(space, search_point_encode(space, vi));
      int nvi[SEARCH_MAX_PARAMS];
      memcpy(nvi, vi, sizeof nvi);
      vi[i] -= d;
      if (q < 0) continue; /* not in the problem's space */
      tune_variant *v = &s->v[s->n];
      if ((rc = tune_recipe_eval_variant(r, nvi, p, facts, v, err))) return rc;
      if (v->skip) continue;
      tune_compile_job *j = &s->jobs[s->n];
      tune_variant_job(j, r->template_path, s->templates, arch, v);
      if ((rc = tune_compile_key(j, err))) return rc;
      /* compiled before (the cache), by this batch, or already guessed */
      if (key_in(j->bin.key, batch, n_batch) || key_in(j->bin.key, s->jobs, s->n)) continue;
      db_binary cached;
      tune_err e;
      tune_err_clear(&e);
      int got = db_binary_get(db, j->bin.key, &cached, &e);
      if (got == TUNE_OK) {
        db_binary_release(&cached);
        continue;
      }
      if (got != TUNE_ENOTFOUND) return tune_fail(err, got, "%s", e.msg);
      s->taken[s->n] = 0;
      s->ptrs[s->n] = j;
      s->n++;
    }
  if (s->n) rc = tune_compile_start(s->ptrs, s->n, n_threads, &s->a, err);
  if (rc) s->n = 0;
  return rc;
}

int tune_spec_take(tune_spec *s, tune_compile_job *j, int *taken, double *waited, tune_err *err) {
  *taken = 0;
  for (int i = 0; i < s->n; ++i) {
    if (s->taken[i] || strcmp(s->jobs[i].bin.key, j->bin.key)) continue;
    int rc = tune_compile_wait(s->a, i, waited, err);
    if (rc) return rc;
    db_binary_release(&j->bin);
    j->bin = s->jobs[i].bin;
    memcpy(j->lowered, s->jobs[i].lowered, sizeof j->lowered);
    memset(&s->jobs[i].bin, 0, sizeof s->jobs[i].bin);
    s->taken[i] = 1;
    *taken = 1;
    return TUNE_OK;
  }
  return TUNE_OK;
}
