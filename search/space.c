/* space.c: enumerate the constrained product space by depth-first backtracking.
 *
 * Parameters are bound in order 0..n_params-1. After binding parameter d the
 * constraints whose level is d are asked once (n_bound = d+1); a FAIL prunes
 * the whole subtree. Constraints of unknown level (-1) are asked at every
 * depth along a path until they answer PASS or FAIL; the ones still UNDECIDED
 * after depth d are kept in a per-depth pending list, so a decided constraint
 * is never asked again deeper on that path. The product is never enumerated
 * and then filtered. Points come out in ascending mixed-radix order because
 * values are tried in ascending order with parameter 0 most significant. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

#define WHERE "search_space_enumerate"

/* State of one enumeration. Int arrays live in one allocation (`block`). */
typedef struct walk {
  const search_space_def *def; /* borrowed */
  int n_params;
  int *known_start;            /* [n_params+1] known-level constraints of level d
                                  are known[known_start[d] .. known_start[d+1]-1] */
  int *known;                  /* [n_known] constraint indexes, grouped by level */
  int n_unknown;               /* constraints of level -1 */
  int *unknown;                /* [n_unknown] their indexes */
  int *pend;                   /* [n_params * n_unknown]: row d holds the unknown-level
                                  constraints still UNDECIDED after depth d */
  int *n_pend;                 /* [n_params] length of each row of pend */
  int *block;                  /* the allocation behind the arrays above */
  uint64_t n_checks;           /* constraint evaluations so far */
  tune_err *err;               /* local error, copied to the caller's at the end */
} walk;

/* ---- validation -------------------------------------------------------- */

/* Check def and compute the product size into *n_total. */
static int validate(const search_space_def *def, uint64_t *n_total, tune_err *err) {
  if (!def) return tune_fail(err, TUNE_EINVAL, WHERE ": def is NULL");
  if (def->n_params < 1 || def->n_params > SEARCH_MAX_PARAMS)
    return tune_fail(err, TUNE_EINVAL, WHERE ": n_params is %d, must be 1..%d", def->n_params,
                     SEARCH_MAX_PARAMS);
  if (!def->n_values) return tune_fail(err, TUNE_EINVAL, WHERE ": n_values is NULL");
  uint64_t total = 1;
  for (int i = 0; i < def->n_params; i++) {
    int nv = def->n_values[i];
    if (nv < 1)
      return tune_fail(err, TUNE_EINVAL, WHERE ": parameter %d has %d values, must be >= 1", i,
                       nv);
    if (total > UINT64_MAX / (uint64_t)nv)
      return tune_fail(err, TUNE_EINVAL,
                       WHERE ": the product of the value counts overflows 64 bits at parameter %d"
                             " (%d parameters)",
                       i, def->n_params);
    total *= (uint64_t)nv;
  }
  if (def->n_constraints < 0)
    return tune_fail(err, TUNE_EINVAL, WHERE ": n_constraints is %d, must be >= 0",
                     def->n_constraints);
  if (def->n_constraints > 0 && !def->check)
    return tune_fail(err, TUNE_EINVAL, WHERE ": %d constraints but check is NULL",
                     def->n_constraints);
  if (def->constraint_level) {
    for (int c = 0; c < def->n_constraints; c++) {
      int lv = def->constraint_level[c];
      if (lv < -1 || lv >= def->n_params)
        return tune_fail(err, TUNE_EINVAL,
                         WHERE ": constraint %d has level %d, must be -1 (unknown) or 0..%d", c,
                         lv, def->n_params - 1);
    }
  }
  *n_total = total;
  return TUNE_OK;
}

/* Group constraints by level and size the pending lists. */
static int walk_init(walk *w, const search_space_def *def, tune_err *err) {
  int n = def->n_params, nc = def->n_constraints;
  const int *lv = def->constraint_level;
  w->def = def;
  w->n_params = n;
  w->n_checks = 0;
  w->err = err;
  int n_unknown = 0;
  for (int c = 0; c < nc; c++)
    if (!lv || lv[c] < 0) n_unknown++;
  w->n_unknown = n_unknown;
  size_t n_ints = (size_t)(n + 1) + (size_t)nc + (size_t)n + (size_t)n * (size_t)n_unknown;
  w->block = malloc(n_ints * sizeof(int));
  if (!w->block)
    return tune_fail(err, TUNE_ENOMEM, WHERE ": no memory for %d constraints", nc);
  w->known_start = w->block;
  w->n_pend = w->known_start + (n + 1);
  w->known = w->n_pend + n;
  w->unknown = w->known + (nc - n_unknown);
  w->pend = w->unknown + n_unknown;
  /* Counting sort of the known-level constraints by level (stable: by index). */
  memset(w->known_start, 0, (size_t)(n + 1) * sizeof(int));
  for (int c = 0; c < nc; c++)
    if (lv && lv[c] >= 0) w->known_start[lv[c] + 1]++;
  for (int d = 0; d < n; d++) w->known_start[d + 1] += w->known_start[d];
  int fill[SEARCH_MAX_PARAMS];
  memcpy(fill, w->known_start, (size_t)n * sizeof(int));
  int u = 0;
  for (int c = 0; c < nc; c++) {
    if (lv && lv[c] >= 0) w->known[fill[lv[c]]++] = c;
    else w->unknown[u++] = c;
  }
  memset(w->n_pend, 0, (size_t)n * sizeof(int));
  return TUNE_OK;
}

/* ---- the walk ---------------------------------------------------------- */

/* Ask constraint c with n_bound parameters bound. Returns PASS, FAIL or
 * UNDECIDED, or SEARCH_ERROR with w->err filled. */
static int ask(walk *w, int c, const int *value_idx, int n_bound) {
  w->n_checks++;
  int r = w->def->check(w->def->ctx, c, value_idx, n_bound, w->err);
  if (r == SEARCH_PASS || r == SEARCH_FAIL || r == SEARCH_UNDECIDED) return r;
  if (r == SEARCH_ERROR) {
    if (w->err->code == TUNE_OK)
      tune_fail(w->err, TUNE_EINVAL,
                WHERE ": constraint %d answered SEARCH_ERROR without filling err", c);
    return SEARCH_ERROR;
  }
  tune_fail(w->err, TUNE_EINVAL,
            WHERE ": constraint %d answered %d, not PASS, FAIL, UNDECIDED or ERROR", c, r);
  return SEARCH_ERROR;
}

/* All the checks due once parameter d is bound: PASS (go on), FAIL (prune),
 * or SEARCH_ERROR with w->err filled. Sets row d of pend on PASS. */
static int check_depth(walk *w, const int *value_idx, int d) {
  int n_bound = d + 1;
  for (int k = w->known_start[d]; k < w->known_start[d + 1]; k++) {
    int c = w->known[k];
    int r = ask(w, c, value_idx, n_bound);
    if (r == SEARCH_PASS) continue;
    if (r == SEARCH_FAIL) return SEARCH_FAIL;
    if (r == SEARCH_UNDECIDED)
      tune_fail(w->err, TUNE_EINVAL,
                WHERE ": constraint %d has level %d but answered UNDECIDED with parameters"
                      " 0..%d bound: its level is wrong",
                c, d, d);
    return SEARCH_ERROR;
  }
  int nu = w->n_unknown;
  if (nu == 0) return SEARCH_PASS;
  const int *src = d ? w->pend + (size_t)(d - 1) * (size_t)nu : w->unknown;
  int n_src = d ? w->n_pend[d - 1] : nu;
  int *dst = w->pend + (size_t)d * (size_t)nu;
  int n_dst = 0;
  for (int k = 0; k < n_src; k++) {
    int c = src[k];
    int r = ask(w, c, value_idx, n_bound);
    if (r == SEARCH_PASS) continue;
    if (r == SEARCH_FAIL) return SEARCH_FAIL;
    if (r == SEARCH_ERROR) return SEARCH_ERROR;
    if (d == w->n_params - 1) {
      tune_fail(w->err, TUNE_EINVAL,
                WHERE ": constraint %d (level unknown) still answers UNDECIDED with all %d"
                      " parameters bound: it reads a parameter that does not exist",
                c, w->n_params);
      return SEARCH_ERROR;
    }
    dst[n_dst++] = c;
  }
  w->n_pend[d] = n_dst;
  return SEARCH_PASS;
}

/* Append point to sp->points, growing it geometrically (never past n_total). */
static int push_point(search_space *sp, size_t *cap, uint64_t point, tune_err *err) {
  if (sp->n_points == *cap) {
    uint64_t want = *cap ? (uint64_t)*cap * 2 : 1024;
    if (want > sp->n_total) want = sp->n_total; /* > n_points: a point is still unseen */
    if (want > SIZE_MAX / sizeof(uint64_t))
      return tune_fail(err, TUNE_ENOMEM, WHERE ": more points than memory can address");
    uint64_t *p = realloc(sp->points, (size_t)want * sizeof(uint64_t));
    if (!p)
      return tune_fail(err, TUNE_ENOMEM, WHERE ": no memory for %llu points",
                       (unsigned long long)want);
    sp->points = p;
    *cap = (size_t)want;
  }
  sp->points[sp->n_points++] = point;
  return TUNE_OK;
}

static int walk_run(walk *w, search_space *sp) {
  const int n = w->n_params, last = n - 1;
  const int *nv = sp->n_values;
  int value_idx[SEARCH_MAX_PARAMS];
  uint64_t prefix[SEARCH_MAX_PARAMS]; /* mixed-radix index of value_idx[0..d] */
  size_t cap = 0;
  int d = 0;
  value_idx[0] = -1;
  while (d >= 0) {
    if (++value_idx[d] >= nv[d]) {
      d--;
      continue;
    }
    prefix[d] = (d ? prefix[d - 1] * (uint64_t)nv[d] : 0) + (uint64_t)value_idx[d];
    int r = check_depth(w, value_idx, d);
    if (r == SEARCH_FAIL) continue;
    if (r != SEARCH_PASS) return w->err->code;
    if (d == last) {
      if (push_point(sp, &cap, prefix[d], w->err)) return w->err->code;
    } else {
      value_idx[++d] = -1;
    }
  }
  if (sp->n_points == 0) {
    free(sp->points);
    sp->points = NULL;
  } else if (sp->n_points < cap) { /* give back the slack; keep it if realloc balks */
    uint64_t *p = realloc(sp->points, sp->n_points * sizeof(uint64_t));
    if (p) sp->points = p;
  }
  return TUNE_OK;
}

/* ---- public ------------------------------------------------------------ */

int search_space_enumerate(const search_space_def *def, search_space **out, tune_err *err) {
  if (!out) return tune_fail(err, TUNE_EINVAL, WHERE ": out is NULL");
  *out = NULL;
  uint64_t n_total = 0;
  int rc = validate(def, &n_total, err);
  if (rc) return rc;

  tune_err local; /* the callback's and our own failures land here first */
  tune_err_clear(&local);
  walk w;
  search_space *sp = calloc(1, sizeof *sp);
  if (!sp) return tune_fail(err, TUNE_ENOMEM, WHERE ": no memory for the space");
  sp->n_params = def->n_params;
  memcpy(sp->n_values, def->n_values, (size_t)def->n_params * sizeof(int));
  sp->n_total = n_total;
  rc = walk_init(&w, def, &local);
  if (rc == TUNE_OK) {
    rc = walk_run(&w, sp);
    free(w.block);
  }
  sp->n_checks = w.n_checks;
  if (rc != TUNE_OK) {
    search_space_free(sp);
    return tune_fail(err, rc, "%s", local.msg);
  }
  *out = sp;
  return TUNE_OK;
}

int search_space_subset(const search_space *space, const unsigned char *keep, search_space **out, tune_err *err) {
  if (!out) return tune_fail(err, TUNE_EINVAL, "search_space_subset: out is NULL");
  *out = NULL;
  search_space *sp = calloc(1, sizeof *sp);
  if (!sp) return tune_fail(err, TUNE_ENOMEM, "search_space_subset: no memory for the space");
  *sp = *space;
  sp->points = NULL;
  sp->n_points = 0;
  size_t n = 0;
  for (size_t i = 0; i < space->n_points; i++) n += keep[i] != 0;
  if (n) {
    sp->points = malloc(n * sizeof(uint64_t));
    if (!sp->points) {
      free(sp);
      return tune_fail(err, TUNE_ENOMEM, "search_space_subset: no memory for %zu points", n);
    }
    for (size_t i = 0; i < space->n_points; i++)
      if (keep[i]) sp->points[sp->n_points++] = space->points[i]; /* stays ascending */
  }
  *out = sp;
  return TUNE_OK;
}

void search_space_free(search_space *space) {
  if (!space) return;
  free(space->points);
  free(space);
}

void search_point_decode(const search_space *space, uint64_t point, int *value_idx) {
  TUNE_ASSERT(point < space->n_total);
  for (int i = space->n_params - 1; i >= 0; i--) {
    uint64_t nv = (uint64_t)space->n_values[i];
    value_idx[i] = (int)(point % nv);
    point /= nv;
  }
}

uint64_t search_point_encode(const search_space *space, const int *value_idx) {
  uint64_t point = 0;
  for (int i = 0; i < space->n_params; i++) {
    TUNE_ASSERT(value_idx[i] >= 0 && value_idx[i] < space->n_values[i]);
    point = point * (uint64_t)space->n_values[i] + (uint64_t)value_idx[i];
  }
  return point;
}

long search_space_find(const search_space *space, uint64_t point) {
  size_t lo = 0, hi = space->n_points; /* the answer, if any, is in [lo, hi) */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint64_t p = space->points[mid];
    if (p == point) return (long)mid;
    if (p < point) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

int search_point_neighbours(const search_space *space, uint64_t point, uint64_t *out, int max) {
  int vi[SEARCH_MAX_PARAMS], n = 0;
  search_point_decode(space, point, vi);
  for (int i = 0; i < space->n_params && n < max; i++)
    for (int d = -1; d <= 1 && n < max; d += 2) {
      if (vi[i] + d < 0 || vi[i] + d >= space->n_values[i]) continue;
      vi[i] += d;
      uint64_t q = search_point_encode(space, vi);
      vi[i] -= d;
      if (search_space_find(space, q) >= 0) out[n++] = q;
    }
  return n;
}
