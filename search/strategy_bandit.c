/* strategy_bandit.c: an AUC bandit over the other adaptive strategies, as
 * OpenTuner's AUCBanditMetaTechnique (Ansel et al., PACT 2014) and ATF use.
 *
 * Arms: bayes, anneal and genetic, each a full strategy over the same space
 * with its own seed. Every observation is forwarded to every arm, so each
 * learns from all the points measured, whoever proposed them. Per batch the
 * bandit picks the arm of highest score and serves that arm's natural batch
 * (points already proposed by another arm are dropped and the arm is asked
 * again). Score of an arm = AUC + BANDIT_C * sqrt(2 log2(H) / uses), where H
 * is the length of the sliding history of the last BANDIT_WINDOW evaluated
 * points (arm, whether it gave a new best), uses the arm's entries in it, and
 * AUC = sum over its entries of (rank among its own entries, 1-based, when it
 * gave a new best) * 2 / (uses (uses + 1)): recent successes weigh more. An
 * arm not used in the window scores +infinity; ties go to the first arm in
 * a seed-shuffled order. When every arm is out of points it draws at random
 * (cannot happen while points are unseen: each arm falls back to random). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strategy_common.h"

#define BANDIT_C 0.05
#define BANDIT_WINDOW 500
#define N_ARMS 3

static const char *const arm_names[N_ARMS] = {"bayes", "anneal", "genetic"};

typedef struct bandit_state {
  search_pool pool;            /* proposed/observed points, for dropping duplicates */
  search_strategy *arm[N_ARMS];
  int8_t *owner;               /* [n] arm that proposed a position, -1 none or credited */
  uint8_t hist_arm[BANDIT_WINDOW];  /* ring buffer of (arm, new best) */
  uint8_t hist_win[BANDIT_WINDOW];
  int hist_start, hist_len;
  int has_best;
  double best_cost;            /* [ns] best observed so far */
  uint64_t batch[64];          /* an arm's batch, before duplicates are dropped */
} bandit_state;

static void bandit_free(search_strategy *s) {
  bandit_state *st = s->state;
  if (!st) return;
  for (int a = 0; a < N_ARMS; a++) search_strategy_free(st->arm[a]);
  search_pool_free(&st->pool);
  free(st->owner);
  free(st);
  s->state = NULL;
}

static int bandit_init(search_strategy *s, tune_err *err) {
  bandit_state *st = calloc(1, sizeof *st);
  if (!st) return tune_fail(err, TUNE_ENOMEM, "search_strategy_new: no memory for bandit");
  s->state = st;
  int rc = search_pool_init(&st->pool, s, 0xba4d17ull, err);
  if (rc) return rc;
  if (st->pool.n) {
    st->owner = malloc(st->pool.n);
    if (!st->owner) return tune_fail(err, TUNE_ENOMEM, "search_strategy_new: no memory for bandit");
    memset(st->owner, -1, st->pool.n);
  }
  for (int a = 0; a < N_ARMS; a++) {
    uint64_t x = s->seed + 0x1000ull * (uint64_t)(a + 1);
    rc = search_strategy_new(arm_names[a], s->space, search_splitmix64(&x), &st->arm[a], err);
    if (rc) return rc;
  }
  return TUNE_OK;
}

static double arm_score(const bandit_state *st, int a) {
  int uses = 0;
  double auc = 0;
  for (int i = 0; i < st->hist_len; i++) {
    int h = (st->hist_start + i) % BANDIT_WINDOW;
    if (st->hist_arm[h] != a) continue;
    uses++;
    if (st->hist_win[h]) auc += uses;
  }
  if (uses == 0) return INFINITY;
  auc = auc * 2.0 / ((double)uses * (uses + 1.0));
  return auc + BANDIT_C * sqrt(2.0 * log2((double)st->hist_len) / uses);
}

static int bandit_next(search_strategy *s, uint64_t *out, int max, int *n_out, tune_err *err) {
  bandit_state *st = s->state;
  search_pool *p = &st->pool;
  if (search_pool_queued(p) == 0 && p->n_seen < p->n) {
    /* Arms in a seed-shuffled order, then by score: the first best wins. */
    int order[N_ARMS];
    for (int a = 0; a < N_ARMS; a++) order[a] = a;
    for (int a = N_ARMS - 1; a > 0; a--) {
      int j = (int)search_rng_below(&p->rng, (uint64_t)a + 1), t = order[a];
      order[a] = order[j];
      order[j] = t;
    }
    double score[N_ARMS];
    for (int a = 0; a < N_ARMS; a++) score[a] = arm_score(st, a);
    for (int pass = 0; pass < N_ARMS && search_pool_queued(p) == 0; pass++) {
      int pick = -1;
      for (int k = 0; k < N_ARMS; k++) {
        int a = order[k];
        if (score[a] == -INFINITY) continue;
        if (pick < 0 || score[a] > score[pick]) pick = a;
      }
      if (pick < 0) break;
      /* Ask the arm until it gives a point nobody proposed, or runs out. */
      for (int tries = 0; tries < 1000 && search_pool_queued(p) == 0; tries++) {
        int got = 0;
        int rc = search_strategy_next_batch(st->arm[pick], st->batch, 64, &got, err);
        if (rc) return rc;
        if (got == 0) break;
        for (int i = 0; i < got; i++) {
          long pos = search_space_find(s->space, st->batch[i]);
          if (pos < 0 || p->seen[pos]) continue;
          rc = search_pool_push(p, (uint32_t)pos, err);
          if (rc) return rc;
          st->owner[pos] = (int8_t)pick;
        }
      }
      score[pick] = -INFINITY; /* out of fresh points: try the next arm */
    }
    if (search_pool_queued(p) == 0) {
      long q = search_pool_random_unseen(p);
      int rc = search_pool_push(p, (uint32_t)q, err);
      if (rc) return rc;
    }
  }
  *n_out = search_pool_serve(p, out, max);
  return TUNE_OK;
}

static void bandit_observe(search_strategy *s, uint64_t point, double cost_ns) {
  bandit_state *st = s->state;
  long pos = search_pool_observe(&st->pool, point, cost_ns);
  for (int a = 0; a < N_ARMS; a++) search_strategy_observe(st->arm[a], point, cost_ns);
  if (pos < 0) return;
  int win = 0;
  if (cost_ns >= 0 && (!st->has_best || cost_ns < st->best_cost)) {
    win = 1;
    st->has_best = 1;
    st->best_cost = cost_ns;
  }
  int a = st->owner[pos];
  if (a < 0) return;
  st->owner[pos] = -1;
  if (st->hist_len == BANDIT_WINDOW) {
    st->hist_start = (st->hist_start + 1) % BANDIT_WINDOW;
    st->hist_len--;
  }
  int h = (st->hist_start + st->hist_len) % BANDIT_WINDOW;
  st->hist_arm[h] = (uint8_t)a;
  st->hist_win[h] = (uint8_t)win;
  st->hist_len++;
}

const search_strategy_vt search_bandit_vt = {
    .name = "bandit", .init = bandit_init, .next_batch = bandit_next, .observe = bandit_observe,
    .free = bandit_free};
