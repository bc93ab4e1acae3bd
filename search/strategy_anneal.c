/* strategy_anneal.c: simulated annealing over the constrained space.
 *
 * A walk from point to point. Each step proposes one unseen neighbour of the
 * current point (one parameter changed, sometimes two; a step of one value
 * index preferred; see search_pool_move) and moves there by the Metropolis
 * rule on log cost: a better point always, a worse one with probability
 * exp(-(log c_new - log c_cur) / T). Neighbours already measured (by this
 * walk or, under the bandit, by another strategy) are stepped through for
 * free with the same rule, so the walk crosses known ground without spending
 * evaluations. Failed points are never moved to.
 *
 * Schedule: T starts at ANNEAL_T0 and cools geometrically per evaluation to
 * ANNEAL_T_MIN over max(ANNEAL_MIN_STEPS, n_points / 4) evaluations; then it
 * reheats and the walk restarts from the best point found. When no unseen
 * neighbour turns up in ANNEAL_TRIES moves, the walk jumps to a random unseen
 * point. One point per batch: each step needs the previous step's cost (when
 * it has not come yet the walk simply goes on from where it is). */
#include <math.h>
#include <stdlib.h>

#include "strategy_common.h"

#define ANNEAL_T0 0.15       /* [log cost] a 15 % worse point is taken with probability 1/e */
#define ANNEAL_T_MIN 0.005   /* [log cost] */
#define ANNEAL_MIN_STEPS 30  /* evaluations of one cooling cycle, at least */
#define ANNEAL_TRIES 64      /* moves tried per step before jumping */

typedef struct anneal_state {
  search_pool pool;
  long cur;          /* position of the walk, -1 before the first success */
  double cur_score;  /* its log cost */
  long pending;      /* the position proposed last and not observed yet, -1 none */
  long best;         /* best observed position, -1 none */
  double best_score; /* its log cost */
  double temp;       /* [log cost] temperature */
  double alpha;      /* cooling factor per evaluation */
} anneal_state;

static int anneal_init(search_strategy *s, tune_err *err) {
  anneal_state *st = calloc(1, sizeof *st);
  if (!st) return tune_fail(err, TUNE_ENOMEM, "search_strategy_new: no memory for anneal");
  s->state = st;
  int rc = search_pool_init(&st->pool, s, 0xa11ea1ull, err);
  if (rc) return rc;
  st->cur = st->pending = st->best = -1;
  st->temp = ANNEAL_T0;
  double steps = (double)st->pool.n / 4.0;
  if (steps < ANNEAL_MIN_STEPS) steps = ANNEAL_MIN_STEPS;
  st->alpha = pow(ANNEAL_T_MIN / ANNEAL_T0, 1.0 / steps);
  return TUNE_OK;
}

/* The Metropolis rule: move the walk to position q (known cost) or not. */
static void metropolis(anneal_state *st, uint32_t q) {
  double sc = search_pool_score(&st->pool, q);
  if (!isfinite(sc)) return;
  if (st->cur < 0) {
    st->cur = q;
    st->cur_score = sc;
    return;
  }
  double delta = sc - st->cur_score;
  if (delta <= 0 || search_rng_double(&st->pool.rng) < exp(-delta / st->temp)) {
    st->cur = q;
    st->cur_score = sc;
  }
}

static int anneal_next(search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err) {
  anneal_state *st = s->state;
  search_pool *p = &st->pool;
  if (search_pool_queued(p) == 0 && p->n_seen < p->n) {
    long q = -1;
    if (st->cur >= 0) {
      for (int t = 0; t < ANNEAL_TRIES && q < 0; t++) {
        long m = search_pool_move(p, (uint32_t)st->cur);
        if (m < 0) continue;
        if (!p->seen[m]) q = m;
        else if (!isnan(p->cost[m])) metropolis(st, (uint32_t)m); /* a free step */
      }
    }
    if (q < 0) q = search_pool_random_unseen(p); /* no walk yet, or stuck: jump */
    int rc = search_pool_push(p, (uint32_t)q, err);
    if (rc) return rc;
    st->pending = q;
  }
  *n_out = search_pool_serve(p, out, max);
  return TUNE_OK;
}

static void anneal_observe(search_strategy *s, uint64_t point, double cost_ns) {
  anneal_state *st = s->state;
  long pos = search_pool_observe(&st->pool, point, cost_ns);
  if (pos < 0) return;
  double sc = search_pool_score(&st->pool, (uint32_t)pos);
  if (isfinite(sc) && (st->best < 0 || sc < st->best_score)) {
    st->best = pos;
    st->best_score = sc;
  }
  if (pos != st->pending) return; /* another strategy's point: known ground, no step */
  st->pending = -1;
  metropolis(st, (uint32_t)pos);
  st->temp *= st->alpha;
  if (st->temp < ANNEAL_T_MIN) { /* reheat from the best point */
    st->temp = ANNEAL_T0;
    if (st->best >= 0) {
      st->cur = st->best;
      st->cur_score = st->best_score;
    }
  }
}

static void anneal_free(search_strategy *s) {
  anneal_state *st = s->state;
  if (!st) return;
  search_pool_free(&st->pool);
  free(st);
  s->state = NULL;
}

const search_strategy_vt search_anneal_vt = {
    .name = "anneal", .init = anneal_init, .next_batch = anneal_next, .observe = anneal_observe,
    .free = anneal_free};
