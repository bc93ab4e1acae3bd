/* strategy_common.h: what the adaptive strategies share (anneal, genetic,
 * bayes, bandit), not for users of search/.
 *
 * A search_pool tracks, for each point of a space (by its position in
 * space->points), whether it was proposed or observed and what it cost; it
 * draws unseen points uniformly at random and proposes moves in the
 * neighbourhood of a point that stay inside the constrained space.
 *
 * Proposal queue: each strategy makes its natural batch (a generation, one
 * annealing step, one expected-improvement pick) into a queue and serves
 * next_batch from it, so the order of proposals depends only on the seed and
 * the costs observed, never on the batch sizes asked for. A point is marked
 * seen when it enters the queue, so it is never proposed twice.
 *
 * Observations of points the strategy did not propose (a bandit forwards
 * every result to every arm) are recorded too: such points count as seen.
 *
 * Memory: the pool owns its arrays; search_pool_init allocates, and
 * search_pool_free releases (safe on a zeroed or half-built pool). */
#ifndef SEARCH_STRATEGY_COMMON_H
#define SEARCH_STRATEGY_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"
#include "search_int.h"

typedef struct search_pool {
  const search_space *space; /* borrowed */
  uint32_t n;                /* points in the space */
  uint32_t n_seen;           /* proposed or observed so far */
  uint8_t *seen;             /* [n] 1 once proposed or observed */
  double *cost;              /* [n] observed cost: NAN unknown, < 0 failed, else [ns] */
  uint32_t *order;           /* [n] lazy Fisher-Yates shuffle of positions */
  uint32_t cursor;           /* order[0, cursor) already drawn */
  int n_free;                /* parameters with more than one value */
  int free_param[SEARCH_MAX_PARAMS]; /* their indexes */
  search_rng rng;            /* the strategy's generator, seeded from its seed */
  uint32_t *queue;           /* [queue_cap] positions made but not served yet */
  uint32_t queue_head;       /* next to serve */
  uint32_t queue_len;        /* made so far in this batch (served or not) */
  uint32_t queue_cap;        /* allocated length of queue */
} search_pool;

/* Set up a pool over s->space seeded from s->seed ^ salt. On failure fill
 * err (TUNE_ENOMEM, or TUNE_EINVAL past 2^32 - 1 points) and leave nothing
 * allocated. */
int search_pool_init(search_pool *p, const search_strategy *s, uint64_t salt, tune_err *err);
void search_pool_free(search_pool *p);

/* Mark position pos seen (proposed). Returns 1 if it was unseen. */
int search_pool_take(search_pool *p, uint32_t pos);

/* Append position pos to the proposal queue and mark it seen. pos must be
 * unseen. TUNE_ENOMEM when the queue cannot grow. */
int search_pool_push(search_pool *p, uint32_t pos, tune_err *err);

/* Points still queued. */
static inline uint32_t search_pool_queued(const search_pool *p) {
  return p->queue_len - p->queue_head;
}

/* Serve up to max queued points into out[] (as points, not positions);
 * returns the count. An emptied queue restarts at its beginning. */
int search_pool_serve(search_pool *p, uint64_t *out, int max);

/* Record an observation of `point`; returns its position, or -1 when the
 * point is not in the space (then nothing is recorded). */
long search_pool_observe(search_pool *p, uint64_t point, double cost_ns);

/* A uniformly drawn unseen position, or -1 when every point is seen. Does not
 * mark it seen. */
long search_pool_random_unseen(search_pool *p);

/* A random move from position pos: one parameter (rarely two) changed, with
 * a step of one value index preferred over a jump. Returns the new position
 * when the move lands inside the constrained space, else -1. Never returns
 * pos itself. */
long search_pool_move(search_pool *p, uint32_t pos);

/* Up to max positions inside the space that differ from pos by one step of
 * one parameter's value index (±1), written to out[]; returns the count. */
int search_pool_neighbours(const search_pool *p, uint32_t pos, uint32_t *out, int max);

/* Normalized coordinates of position pos: x[i] = value index / (n_values-1)
 * for each of the n_free parameters with more than one value. */
void search_pool_coords(const search_pool *p, uint32_t pos, double *x);

/* Cost as a comparable score: log(cost) for a success, +INFINITY for a
 * failure or an unknown cost. */
double search_pool_score(const search_pool *p, uint32_t pos);

#endif
