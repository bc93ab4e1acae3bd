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
  const tune_problem *last_p;    /* the last round's problem and points: the same points again */
  uint64_t last[TUNE_SPEC_ASK];  /* would all be found compiled */
  int n_last;
  char stored[TUNE_SPEC_KEPT][sizeof ((db_binary *)0)->key]; /* keys of guesses stored untaken, a ring */
  int n_stored;
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
      if (!rc) snprintf(s->stored[s->n_stored++ % TUNE_SPEC_KEPT], sizeof s->stored[0], "%s", j->bin.key);
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

/* Is point q among the n points of pts? */
static int point_in(uint64_t q, const uint64_t *pts, int n) {
  for (int i = 0; i < n; ++i)
    if (pts[i] == q) return 1;
  return 0;
}

/* The points to guess into out[] (room for TUNE_SPEC_ASK), the likeliest first: the strategy's own
 * guess (search_strategy_peek), else the points one unit step from best; then, when `whole`, every
 * other point of the space. */
static int guess_points(const search_strategy *strat, const search_space *space, uint64_t best, int whole,
                        uint64_t *out, int *n, tune_err *err) {
  *n = 0;
  if (strat && search_strategy_peek(strat, out, TUNE_SPEC_ASK, n, err)) return err->code;
  if (*n == 0 && best != TUNE_SPEC_NO_BEST) *n = search_point_neighbours(space, best, out, TUNE_SPEC_ASK);
  for (size_t i = 0; whole && i < space->n_points && *n < TUNE_SPEC_ASK; ++i)
    if (!point_in(space->points[i], out, *n)) out[(*n)++] = space->points[i];
  return TUNE_OK;
}

/* Adds the job of point q to the round unless its variant is skipped or its binary is cached,
 * compiled by the batch, or already guessed. */
static int add_guess(tune_spec *s, tune_recipe *r, const tune_problem *p, const tune_device_facts *facts,
                     const search_space *space, uint64_t q, const char *arch, db_conn *db,
                     const tune_compile_job *batch, int n_batch, tune_err *err) {
  int vi[SEARCH_MAX_PARAMS];
  search_point_decode(space, q, vi);
  tune_variant *v = &s->v[s->n];
  tune_compile_job *j = &s->jobs[s->n];
  int rc = tune_variant_job_for(r, vi, p, facts, s->templates, arch, v, j, err);
  if (rc || v->skip) return rc;
  if (tune_job_key_in(j->bin.key, batch, n_batch) || tune_job_key_in(j->bin.key, s->jobs, s->n)) return TUNE_OK;
  int cached = 0;
  if ((rc = db_binary_has(db, j->bin.key, &cached, err)) || cached) return rc;
  s->taken[s->n] = 0;
  s->ptrs[s->n] = j;
  s->n++;
  return TUNE_OK;
}

int tune_spec_whole(const search_space *space, int max) {
  if (max > TUNE_SPEC_MAX) max = TUNE_SPEC_MAX;
  return max > 0 && space->n_points <= (size_t)TUNE_SPEC_WHOLE * (size_t)max && space->n_points <= TUNE_SPEC_ASK;
}

int tune_spec_round(tune_spec *s, tune_recipe *r, const tune_problem *p, const tune_device_facts *facts,
                    const search_space *space, const search_strategy *strat, uint64_t best, const char *arch,
                    const char *templates, db_conn *db, const tune_compile_job *batch, int n_batch, int max,
                    int n_threads, int *compiled, tune_err *err) {
  if (!tune_compile_all_done(s->a)) return TUNE_OK; /* the last round is still compiling: no new one */
  int rc = tune_spec_flush(s, db, compiled, err);
  if (rc) return rc;
  if (max > TUNE_SPEC_MAX) max = TUNE_SPEC_MAX;
  int whole = best == TUNE_SPEC_NO_BEST && tune_spec_whole(space, max);
  uint64_t pts[TUNE_SPEC_ASK];
  int n_pts = 0;
  if ((rc = guess_points(strat, space, best, whole, pts, &n_pts, err))) return rc;
  /* the same guesses for the same problem: all compiled by the last round, or cached */
  if (p == s->last_p && n_pts == s->n_last && !memcmp(pts, s->last, (size_t)n_pts * sizeof *pts)) return TUNE_OK;
  s->last_p = p;
  s->n_last = n_pts;
  memcpy(s->last, pts, (size_t)n_pts * sizeof *pts);
  snprintf(s->templates, sizeof s->templates, "%s", templates);
  for (int i = 0; i < n_pts && s->n < max; i++)
    if ((rc = add_guess(s, r, p, facts, space, pts[i], arch, db, batch, n_batch, err))) return rc;
  if (s->n) rc = tune_compile_start(s->ptrs, s->n, n_threads, &s->a, err);
  if (rc) s->n = 0;
  return rc;
}

int tune_spec_claim_stored(tune_spec *s, const char *key) {
  int n = s->n_stored < TUNE_SPEC_KEPT ? s->n_stored : TUNE_SPEC_KEPT;
  for (int i = 0; i < n; ++i)
    if (s->stored[i][0] && !strcmp(s->stored[i], key)) {
      s->stored[i][0] = '\0';
      return 1;
    }
  return 0;
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
