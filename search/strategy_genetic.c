/* strategy_genetic.c: a steady (mu + lambda) genetic algorithm.
 *
 * The first generation is GEN_POP random points. Each later generation is
 * GEN_POP children, each made from two parents picked by binary tournament
 * (lower log cost wins; failed points lose to any success) by uniform
 * crossover of their value indexes, then mutation: each parameter changes
 * with probability 1/(parameters with more than one value), by one value
 * index (3/4) or a jump (see search_pool_move's rules), at least one change
 * when the child equals a parent. A child outside the constrained space or
 * already seen is made again, up to GEN_TRIES times, then replaced by a
 * random unseen point. The population of the next generation is the best
 * GEN_POP of the old one and of every point observed since (the children,
 * and under the bandit other strategies' points too): elitist, so the best
 * point found is never lost. One generation per batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strategy_common.h"

#define GEN_POP_MIN 6
#define GEN_POP_MAX 16
#define GEN_TRIES 32

typedef struct genetic_state {
  search_pool pool;
  int pop_size;     /* GEN_POP: clamp(2 x free parameters, GEN_POP_MIN, GEN_POP_MAX) */
  uint32_t *pop;    /* [pop_size] current population (positions) */
  int n_pop;        /* members so far (< pop_size before the first generation is seen) */
  uint32_t *fresh;  /* [cap_fresh] positions observed since the last selection */
  int n_fresh, cap_fresh;
  uint32_t *merge;  /* [pop_size] scratch for the selection */
} genetic_state;

static int genetic_init(search_strategy *s, tune_err *err) {
  genetic_state *st = calloc(1, sizeof *st);
  if (!st) return tune_fail(err, TUNE_ENOMEM, "search_strategy_new: no memory for genetic");
  s->state = st;
  int rc = search_pool_init(&st->pool, s, 0x6e6e7ull, err);
  if (rc) return rc;
  int pop = 2 * st->pool.n_free;
  st->pop_size = pop < GEN_POP_MIN ? GEN_POP_MIN : pop > GEN_POP_MAX ? GEN_POP_MAX : pop;
  st->pop = malloc((size_t)st->pop_size * sizeof(uint32_t));
  st->merge = malloc((size_t)st->pop_size * sizeof(uint32_t));
  if (!st->pop || !st->merge) return tune_fail(err, TUNE_ENOMEM, "search_strategy_new: no memory for genetic");
  return TUNE_OK;
}

/* Population := best pop_size of population and fresh observations (ties:
 * the lower position), by insertion into a sorted top list. */
static void select_population(genetic_state *st) {
  if (st->n_fresh == 0) return;
  const search_pool *p = &st->pool;
  uint32_t *top = st->merge;
  int k = 0;
  for (int i = 0; i < st->n_pop + st->n_fresh; i++) {
    uint32_t c = i < st->n_pop ? st->pop[i] : st->fresh[i - st->n_pop];
    double sc = search_pool_score(p, c);
    int dup = 0;
    for (int j = 0; j < k && !dup; j++) dup = top[j] == c;
    if (dup) continue;
    int j = k < st->pop_size ? k++ : st->pop_size;
    while (j > 0) { /* shift worse ones down */
      double sj = search_pool_score(p, top[j - 1]);
      if (sj < sc || (sj == sc && top[j - 1] < c)) break;
      if (j < st->pop_size) top[j] = top[j - 1];
      j--;
    }
    if (j < st->pop_size) top[j] = c;
  }
  st->n_pop = k;
  memcpy(st->pop, top, (size_t)k * sizeof(uint32_t));
  st->n_fresh = 0;
}

static uint32_t tournament(genetic_state *st) {
  search_rng *r = &st->pool.rng;
  uint32_t a = st->pop[search_rng_below(r, (uint64_t)st->n_pop)];
  uint32_t b = st->pop[search_rng_below(r, (uint64_t)st->n_pop)];
  return search_pool_score(&st->pool, b) < search_pool_score(&st->pool, a) ? b : a;
}

/* One child of the population: a position inside the space, unseen, or -1. */
static long make_child(genetic_state *st) {
  search_pool *p = &st->pool;
  const search_space *sp = p->space;
  int va[SEARCH_MAX_PARAMS], vb[SEARCH_MAX_PARAMS], vc[SEARCH_MAX_PARAMS];
  for (int t = 0; t < GEN_TRIES; t++) {
    uint32_t a = tournament(st), b = tournament(st);
    search_point_decode(sp, sp->points[a], va);
    search_point_decode(sp, sp->points[b], vb);
    int same_a = 1, same_b = 1;
    for (int i = 0; i < sp->n_params; i++) {
      vc[i] = search_rng_below(&p->rng, 2) ? va[i] : vb[i];
      same_a &= vc[i] == va[i];
      same_b &= vc[i] == vb[i];
    }
    int mutated = 0;
    for (int k = 0; k < p->n_free; k++) {
      if (search_rng_below(&p->rng, (uint64_t)p->n_free) != 0) continue;
      int i = p->free_param[k], nv = sp->n_values[i], v = vc[i];
      if (nv == 2 || search_rng_below(&p->rng, 4) != 0) {
        int up = nv == 2 ? v == 0 : (int)search_rng_below(&p->rng, 2);
        if (v == 0) up = 1;
        if (v == nv - 1) up = 0;
        vc[i] = up ? v + 1 : v - 1;
      } else {
        int w = (int)search_rng_below(&p->rng, (uint64_t)(nv - 1));
        vc[i] = w >= v ? w + 1 : w;
      }
      mutated = 1;
    }
    long q = search_space_find(sp, search_point_encode(sp, vc));
    if (!mutated && (same_a || same_b) && q >= 0) q = search_pool_move(p, (uint32_t)q);
    if (q >= 0 && !p->seen[q]) return q;
  }
  return -1;
}

static int genetic_next(search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err) {
  genetic_state *st = s->state;
  search_pool *p = &st->pool;
  if (search_pool_queued(p) == 0 && p->n_seen < p->n) {
    select_population(st);
    for (int c = 0; c < st->pop_size && p->n_seen < p->n; c++) {
      long q = st->n_pop > 0 ? make_child(st) : -1;
      if (q < 0) q = search_pool_random_unseen(p);
      int rc = search_pool_push(p, (uint32_t)q, err);
      if (rc) return rc;
    }
  }
  *n_out = search_pool_serve(p, out, max);
  return TUNE_OK;
}

static void genetic_observe(search_strategy *s, uint64_t point, double cost_ns) {
  genetic_state *st = s->state;
  long pos = search_pool_observe(&st->pool, point, cost_ns);
  if (pos < 0) return;
  if (st->n_fresh == st->cap_fresh) {
    int cap = st->cap_fresh ? 2 * st->cap_fresh : 64;
    uint32_t *f = realloc(st->fresh, (size_t)cap * sizeof(uint32_t));
    if (!f) { /* no memory: select now to empty the list, and drop this one */
      select_population(st);
      return;
    }
    st->fresh = f;
    st->cap_fresh = cap;
  }
  st->fresh[st->n_fresh++] = (uint32_t)pos;
}

static void genetic_free(search_strategy *s) {
  genetic_state *st = s->state;
  if (!st) return;
  search_pool_free(&st->pool);
  free(st->pop);
  free(st->fresh);
  free(st->merge);
  free(st);
  s->state = NULL;
}

const search_strategy_vt search_genetic_vt = {
    .name = "genetic", .init = genetic_init, .next_batch = genetic_next,
    .observe = genetic_observe, .free = genetic_free};
