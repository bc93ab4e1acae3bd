/* strategy.c: the generic strategy (registry, argument checks, best point)
 * and the two plain strategies, exhaustive and random.
 *
 * exhaustive: the space's points in space order (ascending), no state.
 * random:     a Fisher-Yates shuffle of the space's points, done lazily: step i
 *             swaps a uniformly drawn j in [i, n) into place i and proposes it.
 *             The order depends only on the seed, never on batch sizes.
 * Both ignore observations; the generic part still keeps the best point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "search_int.h"

/* ---- registry ---------------------------------------------------------- */

/* Keep in the same order as registry[] (search_test checks they agree). */
const char *const search_strategy_names[] = {"exhaustive", "random", "anneal", "genetic",
                                             "bayes", "bandit", NULL};

static const search_strategy_vt *const registry[] = {&search_exhaustive_vt, &search_random_vt,
                                                     &search_anneal_vt, &search_genetic_vt,
                                                     &search_bayes_vt, &search_bandit_vt};

#define N_REGISTRY ((int)(sizeof registry / sizeof registry[0]))

/* ---- exhaustive -------------------------------------------------------- */

static int exhaustive_next(search_strategy *s, uint64_t *out, int max, int *n_out,
                           tune_err *err) {
  (void)err;
  uint64_t left = (uint64_t)s->space->n_points - s->n_proposed;
  int n = left < (uint64_t)max ? (int)left : max;
  if (n > 0) memcpy(out, s->space->points + s->n_proposed, (size_t)n * sizeof(uint64_t));
  *n_out = n;
  return TUNE_OK;
}

/* The next points are the following ones in space order. */
static int exhaustive_peek(const search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err) {
  search_strategy copy = *s; /* next_batch only reads s->n_proposed, its cursor */
  return exhaustive_next(&copy, out, max, n_out, err);
}

const search_strategy_vt search_exhaustive_vt = {
    .name = "exhaustive", .init = NULL, .next_batch = exhaustive_next, .peek = exhaustive_peek,
    .observe = NULL, .free = NULL};

/* ---- random ------------------------------------------------------------ */

typedef struct random_state {
  search_rng rng;  /* seeded from the strategy's seed */
  uint64_t *perm;  /* [n_points] copy of the points; [0, n_proposed) is the
                      shuffled prefix already proposed */
} random_state;

static int random_init(search_strategy *s, tune_err *err) {
  size_t n = s->space->n_points;
  random_state *st = calloc(1, sizeof *st);
  if (!st) return tune_fail(err, TUNE_ENOMEM, "search_strategy_new: no memory for random");
  search_rng_seed(&st->rng, s->seed);
  if (n > 0) {
    st->perm = malloc(n * sizeof(uint64_t));
    if (!st->perm) {
      free(st);
      return tune_fail(err, TUNE_ENOMEM,
                       "search_strategy_new: no memory to shuffle %zu points (random)", n);
    }
    memcpy(st->perm, s->space->points, n * sizeof(uint64_t));
  }
  s->state = st;
  return TUNE_OK;
}

static int random_next(search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err) {
  (void)err;
  random_state *st = s->state;
  uint64_t n = (uint64_t)s->space->n_points, i = s->n_proposed;
  int k = 0;
  for (; k < max && i < n; k++, i++) {
    uint64_t j = i + search_rng_below(&st->rng, n - i);
    uint64_t t = st->perm[j];
    st->perm[j] = st->perm[i];
    st->perm[i] = t;
    out[k] = t;
  }
  *n_out = k;
  return TUNE_OK;
}

/* The shuffle's next steps, made on copies of the generator and of the unproposed part of the
 * permutation (steps only swap within it). */
static int random_peek(const search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err) {
  const random_state *st = s->state;
  uint64_t n = (uint64_t)s->space->n_points, i = s->n_proposed;
  *n_out = 0;
  if (i >= n) return TUNE_OK;
  random_state copy = {.rng = st->rng, .perm = malloc((size_t)(n - i) * sizeof(uint64_t))};
  if (!copy.perm) return tune_fail(err, TUNE_ENOMEM, "search_strategy_peek: no memory (random)");
  memcpy(copy.perm, st->perm + i, (size_t)(n - i) * sizeof(uint64_t));
  /* the copy's positions start at i: a strategy of n - i points with none proposed draws the same */
  search_space rest = {.n_points = (size_t)(n - i)};
  search_strategy view = {.space = &rest, .state = &copy};
  int rc = random_next(&view, out, max, n_out, err);
  free(copy.perm);
  return rc;
}

static void random_free(search_strategy *s) {
  random_state *st = s->state;
  if (!st) return;
  free(st->perm);
  free(st);
  s->state = NULL;
}

const search_strategy_vt search_random_vt = {
    .name = "random", .init = random_init, .next_batch = random_next, .peek = random_peek,
    .observe = NULL, .free = random_free};

/* ---- generic ----------------------------------------------------------- */

int search_strategy_new(const char *name, const search_space *space, uint64_t seed,
                        search_strategy **out, tune_err *err) {
  if (!out) return tune_fail(err, TUNE_EINVAL, "search_strategy_new: out is NULL");
  *out = NULL;
  if (!name) return tune_fail(err, TUNE_EINVAL, "search_strategy_new: name is NULL");
  if (!space) return tune_fail(err, TUNE_EINVAL, "search_strategy_new: space is NULL");
  const search_strategy_vt *vt = NULL;
  for (int i = 0; i < N_REGISTRY; i++)
    if (strcmp(registry[i]->name, name) == 0) vt = registry[i];
  if (!vt) {
    char known[256] = "";
    for (int i = 0; search_strategy_names[i]; i++) {
      size_t len = strlen(known);
      snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", search_strategy_names[i]);
    }
    return tune_fail(err, TUNE_EINVAL, "search_strategy_new: unknown strategy '%s' (known: %s)",
                     name, known);
  }
  search_strategy *s = calloc(1, sizeof *s);
  if (s) s->seen = calloc(space->n_points / 8 + 1, 1);
  if (!s || !s->seen) {
    free(s);
    return tune_fail(err, TUNE_ENOMEM, "search_strategy_new: no memory for '%s'", name);
  }
  s->vt = vt;
  s->space = space;
  s->seed = seed;
  s->parallel = 1;
  if (vt->init) {
    int rc = vt->init(s, err);
    if (rc) {
      if (vt->free) vt->free(s);
      free(s->seen);
      free(s);
      return rc;
    }
  }
  *out = s;
  return TUNE_OK;
}

int search_strategy_set_features(search_strategy *s, const double *feat, int n_feat, tune_err *err) {
  if (!s || (n_feat > 0 && !feat) || n_feat < 0 || n_feat > SEARCH_MAX_PARAMS)
    return tune_fail(err, TUNE_EINVAL, "search_strategy_set_features: bad argument");
  if (s->n_proposed || s->n_observed)
    return tune_fail(err, TUNE_EINVAL, "search_strategy_set_features: only before the first proposal or observation");
  return s->vt->features && n_feat ? s->vt->features(s, feat, n_feat, err) : TUNE_OK;
}

int search_strategy_set_parallel(search_strategy *s, int k, tune_err *err) {
  if (!s || k < 1 || k > SEARCH_MAX_PARALLEL)
    return tune_fail(err, TUNE_EINVAL, "search_strategy_set_parallel: k is %d, must be 1..%d", k, SEARCH_MAX_PARALLEL);
  if (s->n_proposed)
    return tune_fail(err, TUNE_EINVAL, "search_strategy_set_parallel: only before the first proposal");
  s->parallel = k;
  return TUNE_OK;
}

int search_strategy_next_batch(search_strategy *s, uint64_t *out, int max, int *n_out,
                               tune_err *err) {
  if (n_out) *n_out = 0;
  if (!s || !out || !n_out)
    return tune_fail(err, TUNE_EINVAL, "search_strategy_next_batch: NULL argument");
  if (max < 1)
    return tune_fail(err, TUNE_EINVAL, "search_strategy_next_batch: max is %d, must be >= 1",
                     max);
  /* a point observed before the vt proposed it (tune run's warm start) is not proposed again: the
     strategies without a record of their own (exhaustive, random) would measure it twice */
  int n = 0, m = 0;
  do {
    int rc = s->vt->next_batch(s, out, max, &m, err);
    if (rc) return rc;
    TUNE_ASSERT(m >= 0 && m <= max);
    s->n_proposed += (uint64_t)m;
    n = 0;
    for (int i = 0; i < m; i++) {
      long k = search_space_find(s->space, out[i]);
      if (k >= 0 && (s->seen[k / 8] >> (k % 8) & 1)) continue;
      if (k >= 0) s->seen[k / 8] |= (unsigned char)(1u << (k % 8));
      out[n++] = out[i];
    }
  } while (n == 0 && m > 0);
  *n_out = n;
  return TUNE_OK;
}

static int seen_before(const search_strategy *s, uint64_t point) {
  long k = search_space_find(s->space, point);
  return k < 0 || (s->seen[k / 8] >> (k % 8) & 1);
}

/* The default guess: the unseen points one unit step from the best point. */
static int neighbours_of_best(const search_strategy *s, uint64_t *out, int max, int *n_out) {
  *n_out = 0;
  if (!s->has_best) return TUNE_OK;
  uint64_t near[2 * SEARCH_MAX_PARAMS];
  int m = search_point_neighbours(s->space, s->best_point, near, 2 * SEARCH_MAX_PARAMS), n = 0;
  for (int i = 0; i < m && n < max; i++)
    if (!seen_before(s, near[i])) out[n++] = near[i];
  *n_out = n;
  return TUNE_OK;
}

int search_strategy_peek(const search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err) {
  if (n_out) *n_out = 0;
  if (!s || !out || !n_out) return tune_fail(err, TUNE_EINVAL, "search_strategy_peek: NULL argument");
  if (max < 1) return tune_fail(err, TUNE_EINVAL, "search_strategy_peek: max is %d, must be >= 1", max);
  int m = 0;
  int rc = s->vt->peek ? s->vt->peek(s, out, max, &m, err) : neighbours_of_best(s, out, max, &m);
  if (rc) return rc;
  TUNE_ASSERT(m >= 0 && m <= max);
  /* as next_batch does: a point observed from outside (a warm start) is not proposed again */
  int n = 0;
  for (int i = 0; i < m; i++) {
    int dup = seen_before(s, out[i]);
    for (int j = 0; j < n && !dup; j++) dup = out[j] == out[i];
    if (!dup) out[n++] = out[i];
  }
  *n_out = n;
  return TUNE_OK;
}

void search_strategy_observe(search_strategy *s, uint64_t point, double cost_ns) {
  s->n_observed++;
  long k = search_space_find(s->space, point);
  if (k >= 0) s->seen[k / 8] |= (unsigned char)(1u << (k % 8));
  if (cost_ns >= 0) { /* false for NaN too: a NaN cost counts as a failure */
    if (!s->has_best || cost_ns < s->best_cost_ns) {
      s->has_best = 1;
      s->best_point = point;
      s->best_cost_ns = cost_ns;
    }
  } else {
    s->n_failed++;
  }
  if (s->vt->observe) s->vt->observe(s, point, cost_ns);
}

int search_strategy_best(const search_strategy *s, uint64_t *point, double *cost_ns) {
  if (!s->has_best) return 0;
  if (point) *point = s->best_point;
  if (cost_ns) *cost_ns = s->best_cost_ns;
  return 1;
}

const char *search_strategy_name(const search_strategy *s) { return s->vt->name; }

void search_strategy_free(search_strategy *s) {
  if (!s) return;
  if (s->vt->free) s->vt->free(s);
  free(s->seen);
  free(s);
}
