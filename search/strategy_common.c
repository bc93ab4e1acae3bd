/* strategy_common.c: the visited set, random draws and neighbourhood moves
 * shared by the adaptive strategies (see strategy_common.h). */
#include "strategy_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int search_pool_init(search_pool *p, const search_strategy *s, uint64_t salt, tune_err *err) {
  memset(p, 0, sizeof *p);
  const search_space *sp = s->space;
  if (sp->n_points > UINT32_MAX - 1)
    return tune_fail(err, TUNE_EINVAL,
                     "search_strategy_new: %s handles at most %u points, the space has %zu",
                     s->vt->name, UINT32_MAX - 1, sp->n_points);
  p->space = sp;
  p->n = (uint32_t)sp->n_points;
  search_rng_seed(&p->rng, s->seed ^ salt);
  for (int i = 0; i < sp->n_params; i++)
    if (sp->n_values[i] > 1) p->free_param[p->n_free++] = i;
  if (p->n == 0) return TUNE_OK;
  p->seen = calloc(p->n, 1);
  p->cost = malloc((size_t)p->n * sizeof(double));
  p->order = malloc((size_t)p->n * sizeof(uint32_t));
  if (!p->seen || !p->cost || !p->order) {
    search_pool_free(p);
    return tune_fail(err, TUNE_ENOMEM, "search_strategy_new: no memory for %s over %zu points",
                     s->vt->name, sp->n_points);
  }
  for (uint32_t i = 0; i < p->n; i++) {
    p->cost[i] = NAN;
    p->order[i] = i;
  }
  return TUNE_OK;
}

void search_pool_free(search_pool *p) {
  free(p->seen);
  free(p->cost);
  free(p->order);
  free(p->queue);
  p->queue = NULL;
  p->seen = NULL;
  p->cost = NULL;
  p->order = NULL;
}

int search_pool_take(search_pool *p, uint32_t pos) {
  TUNE_ASSERT(pos < p->n);
  if (p->seen[pos]) return 0;
  p->seen[pos] = 1;
  p->n_seen++;
  return 1;
}

int search_pool_push(search_pool *p, uint32_t pos, tune_err *err) {
  TUNE_ASSERT(pos < p->n && !p->seen[pos]);
  if (p->queue_len == p->queue_cap) {
    uint32_t cap = p->queue_cap ? 2 * p->queue_cap : 16;
    uint32_t *q = realloc(p->queue, (size_t)cap * sizeof(uint32_t));
    if (!q) return tune_fail(err, TUNE_ENOMEM, "search: no memory for a batch of %u points", cap);
    p->queue = q;
    p->queue_cap = cap;
  }
  p->queue[p->queue_len++] = pos;
  search_pool_take(p, pos);
  return TUNE_OK;
}

int search_pool_serve(search_pool *p, uint64_t *out, int max) {
  int k = 0;
  while (k < max && p->queue_head < p->queue_len) out[k++] = p->space->points[p->queue[p->queue_head++]];
  if (p->queue_head == p->queue_len) p->queue_head = p->queue_len = 0;
  return k;
}

long search_pool_observe(search_pool *p, uint64_t point, double cost_ns) {
  long pos = search_space_find(p->space, point);
  if (pos < 0) return -1;
  search_pool_take(p, (uint32_t)pos);
  p->cost[pos] = cost_ns >= 0 ? cost_ns : -1.0; /* NaN counts as a failure */
  return pos;
}

long search_pool_random_unseen(search_pool *p) {
  if (p->n_seen >= p->n) return -1;
  /* Each position is drawn once; seen ones are skipped, so the work over
   * the whole life of the pool is O(n). */
  while (p->cursor < p->n) {
    uint32_t j = p->cursor + (uint32_t)search_rng_below(&p->rng, p->n - p->cursor);
    uint32_t t = p->order[j];
    p->order[j] = p->order[p->cursor];
    p->order[p->cursor++] = t;
    if (!p->seen[t]) return t;
  }
  /* Every position was drawn once; the unseen ones left were drawn but not
   * taken by the caller: find them by a scan. */
  for (uint32_t i = 0; i < p->n; i++)
    if (!p->seen[i]) return i;
  return -1;
}

/* Change parameter `param` of vi to another value: a step of one index
 * (probability 3/4, or when the parameter has two values) or a uniform jump. */
static void mutate_param(search_pool *p, int *vi, int param) {
  int nv = p->space->n_values[param];
  int v = vi[param];
  if (nv == 2) {
    vi[param] = 1 - v;
    return;
  }
  if (search_rng_below(&p->rng, 4) != 0) {
    int up = (int)search_rng_below(&p->rng, 2);
    if (v == 0) up = 1;
    if (v == nv - 1) up = 0;
    vi[param] = up ? v + 1 : v - 1;
  } else {
    int w = (int)search_rng_below(&p->rng, (uint64_t)(nv - 1));
    vi[param] = w >= v ? w + 1 : w;
  }
}

long search_pool_move(search_pool *p, uint32_t pos) {
  if (p->n_free == 0) return -1;
  int vi[SEARCH_MAX_PARAMS];
  search_point_decode(p->space, p->space->points[pos], vi);
  int a = p->free_param[search_rng_below(&p->rng, (uint64_t)p->n_free)];
  mutate_param(p, vi, a);
  /* Sometimes two parameters at once: constrained spaces often need a
   * coupled change (e.g. a wider vector with fewer vectors per thread). */
  if (p->n_free > 1 && search_rng_below(&p->rng, 4) == 0) {
    int b = a;
    while (b == a) b = p->free_param[search_rng_below(&p->rng, (uint64_t)p->n_free)];
    mutate_param(p, vi, b);
  }
  long q = search_space_find(p->space, search_point_encode(p->space, vi));
  return q == (long)pos ? -1 : q;
}

int search_pool_neighbours(const search_pool *p, uint32_t pos, uint32_t *out, int max) {
  int vi[SEARCH_MAX_PARAMS], n = 0;
  search_point_decode(p->space, p->space->points[pos], vi);
  for (int k = 0; k < p->n_free && n < max; k++) {
    int i = p->free_param[k], v = vi[i];
    for (int d = -1; d <= 1 && n < max; d += 2) {
      if (v + d < 0 || v + d >= p->space->n_values[i]) continue;
      vi[i] = v + d;
      long q = search_space_find(p->space, search_point_encode(p->space, vi));
      if (q >= 0) out[n++] = (uint32_t)q;
    }
    vi[i] = v;
  }
  return n;
}

void search_pool_coords(const search_pool *p, uint32_t pos, double *x) {
  int vi[SEARCH_MAX_PARAMS];
  search_point_decode(p->space, p->space->points[pos], vi);
  for (int k = 0; k < p->n_free; k++) {
    int i = p->free_param[k];
    x[k] = (double)vi[i] / (double)(p->space->n_values[i] - 1);
  }
}

double search_pool_score(const search_pool *p, uint32_t pos) {
  double c = p->cost[pos];
  if (!(c >= 0)) return INFINITY;
  return log(c > 1e-300 ? c : 1e-300);
}
