/* search_test.c: unit tests of search/ (space enumeration and strategies).
 *
 * The enumeration is checked against brute force (every point of the product,
 * every constraint asked with all parameters bound) on many small random
 * spaces; constraint-check counts are checked exactly on hand-made spaces to
 * show pruning happens. Exit status 0 when every CHECK passed, 1 otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "search.h"
#include "check.h"

static search_space not_null; /* *out must be reset to NULL on failure */


/* ---- test constraints -------------------------------------------------- */

enum { K_MOD, K_LE, K_ERROR, K_ERROR_SILENT, K_BAD_ANSWER, K_ALWAYS_UNDECIDED, K_REJECT_V0 };

/* One constraint over the parameters in `mask`:
 * K_MOD: (sum of their value indexes) % k != r; decided only when all are bound.
 * K_LE:  sum of their value indexes <= bound; answers FAIL or PASS as soon as
 *        the bound ones make the answer certain (so it decides early). */
typedef struct tcon {
  int kind;
  uint64_t mask;  /* parameters read */
  int k, r;       /* K_MOD */
  int bound;      /* K_LE */
  int level;      /* declared level (-1: unknown) */
  int error_at;   /* K_ERROR*: answer the error on this call (1-based) */
} tcon;

typedef struct tctx {
  int n_params;
  int n_values[SEARCH_MAX_PARAMS];
  int n_con;
  tcon con[16];
  int levels[16];    /* con[i].level, as the def wants it */
  long calls;        /* callback invocations */
  long bad_calls;    /* calls the engine should not have made */
} tctx;

static int tcon_eval(const tctx *t, const tcon *c, const int *v, int n_bound) {
  int sum = 0, unbound_max = 0, any_unbound = 0;
  for (int p = 0; p < t->n_params; p++) {
    if (!(c->mask >> p & 1)) continue;
    if (p < n_bound) sum += v[p];
    else {
      any_unbound = 1;
      unbound_max += t->n_values[p] - 1;
    }
  }
  if (c->kind == K_MOD) {
    if (any_unbound) return SEARCH_UNDECIDED;
    return sum % c->k != c->r ? SEARCH_PASS : SEARCH_FAIL;
  }
  /* K_LE */
  if (sum > c->bound) return SEARCH_FAIL;
  if (sum + unbound_max <= c->bound) return SEARCH_PASS;
  return SEARCH_UNDECIDED;
}

static int tcheck(void *vctx, int ci, const int *v, int n_bound, tune_err *err) {
  tctx *t = vctx;
  t->calls++;
  if (ci < 0 || ci >= t->n_con || n_bound < 1 || n_bound > t->n_params) {
    t->bad_calls++;
    return SEARCH_FAIL;
  }
  const tcon *c = &t->con[ci];
  if (c->level >= 0 && n_bound != c->level + 1) t->bad_calls++; /* asked at the wrong depth */
  for (int p = 0; p < n_bound; p++)
    if (v[p] < 0 || v[p] >= t->n_values[p]) t->bad_calls++;
  switch (c->kind) {
  case K_ERROR:
    if (t->calls >= c->error_at) {
      tune_fail(err, TUNE_ERECIPE, "recipe.lua:12: constraint blew up");
      return SEARCH_ERROR;
    }
    return SEARCH_PASS;
  case K_ERROR_SILENT:
    return t->calls >= c->error_at ? SEARCH_ERROR : SEARCH_PASS;
  case K_BAD_ANSWER:
    return 7;
  case K_ALWAYS_UNDECIDED:
    return SEARCH_UNDECIDED;
  case K_REJECT_V0:
    return v[0] == 0 ? SEARCH_PASS : SEARCH_FAIL;
  default:
    return tcon_eval(t, c, v, n_bound);
  }
}

static search_space_def tdef(tctx *t) {
  for (int i = 0; i < t->n_con; i++) t->levels[i] = t->con[i].level;
  search_space_def d = {.n_params = t->n_params,
                        .n_values = t->n_values,
                        .n_constraints = t->n_con,
                        .constraint_level = t->levels,
                        .check = t->n_con ? tcheck : NULL,
                        .ctx = t};
  return d;
}

/* Independent decode (parameter 0 most significant). */
static void ref_decode(const tctx *t, uint64_t p, int *v) {
  for (int i = t->n_params - 1; i >= 0; i--) {
    v[i] = (int)(p % (uint64_t)t->n_values[i]);
    p /= (uint64_t)t->n_values[i];
  }
}

/* Brute force: every point of the product, every constraint fully bound. */
static size_t ref_points(const tctx *t, uint64_t *out) {
  uint64_t total = 1;
  for (int i = 0; i < t->n_params; i++) total *= (uint64_t)t->n_values[i];
  size_t n = 0;
  int v[SEARCH_MAX_PARAMS];
  for (uint64_t p = 0; p < total; p++) {
    ref_decode(t, p, v);
    int ok = 1;
    for (int c = 0; c < t->n_con && ok; c++)
      ok = tcon_eval(t, &t->con[c], v, t->n_params) == SEARCH_PASS;
    if (ok) out[n++] = p;
  }
  return n;
}

static void random_space(search_rng *g, tctx *t) {
  memset(t, 0, sizeof *t);
  t->n_params = 1 + (int)search_rng_below(g, 6);
  for (int i = 0; i < t->n_params; i++) t->n_values[i] = 1 + (int)search_rng_below(g, 5);
  t->n_con = (int)search_rng_below(g, 6);
  for (int i = 0; i < t->n_con; i++) {
    tcon *c = &t->con[i];
    c->kind = search_rng_below(g, 2) ? K_MOD : K_LE;
    c->mask = search_rng_below(g, (uint64_t)1 << t->n_params); /* may be empty */
    c->k = 2 + (int)search_rng_below(g, 3);
    c->r = (int)search_rng_below(g, (uint64_t)c->k);
    c->bound = (int)search_rng_below(g, 4 * (uint64_t)t->n_params + 1);
    int top = 0;
    for (int p = 0; p < t->n_params; p++)
      if (c->mask >> p & 1) top = p;
    switch (search_rng_below(g, 3)) {
    case 0: c->level = -1; break;
    case 1: c->level = top; break; /* the exact last parameter read */
    default:                       /* any later level is still correct, just late */
      c->level = top + (int)search_rng_below(g, (uint64_t)(t->n_params - top));
    }
  }
}

/* ---- enumeration ------------------------------------------------------- */

static void test_enumerate_vs_brute_force(void) {
  search_rng g;
  search_rng_seed(&g, 12345);
  static uint64_t want[5 * 5 * 5 * 5 * 5 * 5];
  int mismatches = 0, nonempty = 0, pruned = 0, all_unknown_null = 0;
  for (int iter = 0; iter < 3000; iter++) {
    tctx t;
    random_space(&g, &t);
    search_space_def def = tdef(&t);
    /* Now and then all constraints of unknown level, given as a NULL array. */
    int all_unknown = 1;
    for (int i = 0; i < t.n_con; i++) all_unknown &= t.con[i].level == -1;
    if (all_unknown && t.n_con > 0) {
      def.constraint_level = NULL;
      all_unknown_null++;
    }
    size_t n_want = ref_points(&t, want);
    search_space *sp = NULL;
    tune_err err;
    tune_err_clear(&err);
    int rc = search_space_enumerate(&def, &sp, &err);
    if (rc != TUNE_OK || !sp) {
      fprintf(stderr, "iter %d: enumerate failed: %s\n", iter, err.msg);
      mismatches++;
      continue;
    }
    int same = sp->n_points == n_want &&
               (n_want == 0 || memcmp(sp->points, want, n_want * sizeof(uint64_t)) == 0);
    uint64_t total = 1;
    for (int i = 0; i < t.n_params; i++) total *= (uint64_t)t.n_values[i];
    same &= sp->n_total == total && sp->n_params == t.n_params;
    same &= t.bad_calls == 0 && sp->n_checks == (uint64_t)t.calls;
    if (!same) {
      if (mismatches < 5)
        fprintf(stderr, "iter %d: got %zu points, want %zu; bad calls %ld\n", iter,
                sp->n_points, n_want, t.bad_calls);
      mismatches++;
    }
    nonempty += n_want > 0;
    pruned += n_want > 0 && n_want < total;
    search_space_free(sp);
  }
  CHECK(mismatches == 0);
  /* The generator must exercise the interesting cases. */
  CHECK(nonempty > 1000);
  CHECK(pruned > 500);
  CHECK(all_unknown_null > 10);
}

/* A subset keeps the chosen points, ascending and findable, and nothing else. */
static void test_subset(void) {
  tune_err err;
  tctx t = {.n_params = 3, .n_values = {4, 4, 4}, .n_con = 1};
  t.con[0] = (tcon){.kind = K_REJECT_V0, .level = 0};
  search_space_def def = tdef(&t);
  search_space *sp = NULL, *sub = NULL, *none = NULL;
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK && sp->n_points == 16);
  unsigned char keep[16], zero[16] = {0};
  for (int i = 0; i < 16; i++) keep[i] = i % 3 == 1;
  CHECK(search_space_subset(sp, keep, &sub, &err) == TUNE_OK);
  CHECK(sub && sub->n_points == 5 && sub->n_total == sp->n_total && sub->n_params == 3);
  for (size_t i = 0; sub && i < sub->n_points; i++) {
    CHECK(sub->points[i] == sp->points[3 * i + 1]);
    CHECK(search_space_find(sub, sp->points[3 * i + 1]) == (long)i);
  }
  CHECK(sub && search_space_find(sub, sp->points[0]) == -1);
  CHECK(search_space_subset(sp, zero, &none, &err) == TUNE_OK && none && none->n_points == 0);
  search_space_free(none);
  search_space_free(sub);
  search_space_free(sp);
}

/* Exact check counts: pruning happens, decided constraints are not re-asked. */
static void test_check_counts(void) {
  tune_err err;
  /* {4,4,4}, one level-0 constraint "v0 == 0": asked once per value of v0. */
  tctx t = {.n_params = 3, .n_values = {4, 4, 4}, .n_con = 1};
  t.con[0] = (tcon){.kind = K_REJECT_V0, .level = 0};
  search_space_def def = tdef(&t);
  search_space *sp = NULL;
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  CHECK(sp && sp->n_checks == 4 && sp->n_points == 16 && sp->n_total == 64);
  CHECK(sp && sp->points[0] == 0 && sp->points[15] == 15);
  search_space_free(sp);

  /* Unknown level, reads only v0 (K_LE, bound 1 on v0): decided at depth 0,
   * never asked deeper: 4 checks, v0 in {0,1} -> 32 points. */
  t = (tctx){.n_params = 3, .n_values = {4, 4, 4}, .n_con = 1};
  t.con[0] = (tcon){.kind = K_LE, .mask = 1, .bound = 1, .level = -1};
  def = tdef(&t);
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  CHECK(sp && sp->n_checks == 4 && sp->n_points == 32);
  search_space_free(sp);

  /* Unknown level, reads v1 (K_MOD on v1, != 0): UNDECIDED at depth 0 (4
   * checks), decided at depth 1 (16 checks); 4*3*4 = 48 points. */
  t.con[0] = (tcon){.kind = K_MOD, .mask = 2, .k = 4, .r = 0, .level = -1};
  def = tdef(&t);
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  CHECK(sp && sp->n_checks == 20 && sp->n_points == 48);
  search_space_free(sp);

  /* Same constraint with known level 1: only the 16 depth-1 checks. */
  t.con[0].level = 1;
  def = tdef(&t);
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  CHECK(sp && sp->n_checks == 16 && sp->n_points == 48);
  search_space_free(sp);

  /* No constraints: the whole product, no checks. */
  t.n_con = 0;
  def = tdef(&t);
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  CHECK(sp && sp->n_checks == 0 && sp->n_points == 64 && sp->points[63] == 63);
  search_space_free(sp);

  /* A space with no points: points is NULL, find answers -1. */
  t = (tctx){.n_params = 2, .n_values = {3, 3}, .n_con = 1};
  t.con[0] = (tcon){.kind = K_LE, .mask = 1, .bound = -1, .level = 0};
  def = tdef(&t);
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  CHECK(sp && sp->n_points == 0 && sp->n_checks == 3);
  CHECK(sp && search_space_find(sp, 0) == -1);
  search_space_free(sp);
}

/* Large products: near the 64-bit limit, and past it. */
static void test_big_products(void) {
  tune_err err;
  search_space *sp = &not_null;
  /* 2^63: fine, as long as a constraint prunes it. */
  tctx t = {.n_params = 63, .n_con = 1};
  for (int i = 0; i < 63; i++) t.n_values[i] = 2;
  t.con[0] = (tcon){.kind = K_LE, .mask = 1, .bound = -1, .level = 0};
  search_space_def def = tdef(&t);
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  CHECK(sp && sp->n_total == (uint64_t)1 << 63 && sp->n_points == 0 && sp->n_checks == 2);
  search_space_free(sp);

  /* 2^64 overflows. */
  t.n_params = 64;
  t.n_values[63] = 2;
  def = tdef(&t);
  tune_err_clear(&err);
  sp = &not_null;
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_EINVAL);
  CHECK(sp == NULL && strstr(err.msg, "overflow") != NULL);

  /* 3 * INT_MAX-ish values overflow too. */
  t = (tctx){.n_params = 3, .n_values = {2000000000, 2000000000, 2000000000}};
  def = tdef(&t);
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_EINVAL);

  /* 64 parameters of one value: one point, point 0; the last one picks a
   * value index and stays addressable. */
  t = (tctx){.n_params = 64};
  for (int i = 0; i < 64; i++) t.n_values[i] = 1;
  t.n_values[63] = 3;
  def = tdef(&t);
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  CHECK(sp && sp->n_total == 3 && sp->n_points == 3 && sp->points[2] == 2);
  search_space_free(sp);
}

static void test_encode_decode_find(void) {
  /* Parameter 0 is the most significant digit. */
  tctx t = {.n_params = 3, .n_values = {3, 4, 5}};
  search_space_def def = tdef(&t);
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  if (!sp) return;
  int v[3] = {2, 1, 3};
  CHECK(search_point_encode(sp, v) == (uint64_t)(2 * 20 + 1 * 5 + 3));
  int w[3] = {-1, -1, -1};
  search_point_decode(sp, 59, w);
  CHECK(w[0] == 2 && w[1] == 3 && w[2] == 4);
  search_point_decode(sp, 0, w);
  CHECK(w[0] == 0 && w[1] == 0 && w[2] == 0);
  search_space_free(sp);

  /* Round trips and find on random spaces. */
  search_rng g;
  search_rng_seed(&g, 777);
  int bad_roundtrip = 0, bad_find = 0, bad_order = 0;
  for (int iter = 0; iter < 300; iter++) {
    random_space(&g, &t);
    def = tdef(&t);
    tune_err_clear(&err);
    if (search_space_enumerate(&def, &sp, &err) != TUNE_OK) {
      bad_find++;
      continue;
    }
    for (size_t i = 1; i < sp->n_points; i++) bad_order += sp->points[i - 1] >= sp->points[i];
    size_t next = 0; /* walks sp->points alongside p */
    for (uint64_t p = 0; p < sp->n_total; p++) {
      int a[SEARCH_MAX_PARAMS], b[SEARCH_MAX_PARAMS];
      search_point_decode(sp, p, a);
      ref_decode(&t, p, b);
      bad_roundtrip += memcmp(a, b, (size_t)t.n_params * sizeof(int)) != 0;
      bad_roundtrip += search_point_encode(sp, a) != p;
      long want = -1;
      if (next < sp->n_points && sp->points[next] == p) want = (long)next++;
      bad_find += search_space_find(sp, p) != want;
    }
    bad_find += search_space_find(sp, sp->n_total) != -1;
    bad_find += search_space_find(sp, UINT64_MAX) != -1;
    search_space_free(sp);
  }
  CHECK(bad_roundtrip == 0);
  CHECK(bad_find == 0);
  CHECK(bad_order == 0);
}

/* Enumerate t, expect failure `code` with `needle` in the message. */
static void expect_fail(tctx *t, const search_space_def *def, int code, const char *needle,
                        int line) {
  tune_err err;
  tune_err_clear(&err);
  search_space *sp = &not_null;
  int rc = search_space_enumerate(def, &sp, &err);
  int ok = rc == code && err.code == code && sp == NULL && strstr(err.msg, needle) != NULL;
  if (!ok)
    fprintf(stderr, "line %d: rc %d (want %d), msg \"%s\" (want \"%s\")\n", line, rc, code,
            err.msg, needle);
  CHECK(ok);
  (void)t;
}

static void test_errors(void) {
  tctx t = {.n_params = 3, .n_values = {2, 3, 4}, .n_con = 1};
  t.con[0] = (tcon){.kind = K_MOD, .mask = 1, .k = 2, .r = 0, .level = 0};
  search_space_def good = tdef(&t), def;
  tune_err err;
  search_space *sp = NULL;

  expect_fail(&t, NULL, TUNE_EINVAL, "def is NULL", __LINE__);
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&good, NULL, &err) == TUNE_EINVAL);
  def = good;
  def.n_params = 0;
  expect_fail(&t, &def, TUNE_EINVAL, "n_params is 0", __LINE__);
  def = good;
  def.n_params = SEARCH_MAX_PARAMS + 1;
  expect_fail(&t, &def, TUNE_EINVAL, "n_params is 65", __LINE__);
  def = good;
  def.n_values = NULL;
  expect_fail(&t, &def, TUNE_EINVAL, "n_values is NULL", __LINE__);
  int zero[3] = {2, 0, 4};
  def = good;
  def.n_values = zero;
  expect_fail(&t, &def, TUNE_EINVAL, "parameter 1 has 0 values", __LINE__);
  def = good;
  def.n_constraints = -1;
  expect_fail(&t, &def, TUNE_EINVAL, "n_constraints is -1", __LINE__);
  def = good;
  def.check = NULL;
  expect_fail(&t, &def, TUNE_EINVAL, "check is NULL", __LINE__);
  int lv_high[1] = {3}, lv_low[1] = {-2};
  def = good;
  def.constraint_level = lv_high;
  expect_fail(&t, &def, TUNE_EINVAL, "constraint 0 has level 3", __LINE__);
  def = good;
  def.constraint_level = lv_low;
  expect_fail(&t, &def, TUNE_EINVAL, "constraint 0 has level -2", __LINE__);

  /* A failing check: its own code and message come back, and nothing leaks. */
  t.n_con = 2;
  t.con[1] = (tcon){.kind = K_ERROR, .level = 2, .error_at = 5};
  def = tdef(&t);
  expect_fail(&t, &def, TUNE_ERECIPE, "recipe.lua:12: constraint blew up", __LINE__);
  /* A failing check that forgot to fill err. */
  t.calls = 0;
  t.con[1] = (tcon){.kind = K_ERROR_SILENT, .level = 1, .error_at = 3};
  def = tdef(&t);
  expect_fail(&t, &def, TUNE_EINVAL, "constraint 1 answered SEARCH_ERROR", __LINE__);
  /* An answer that is not one of the four. */
  t.con[1] = (tcon){.kind = K_BAD_ANSWER, .level = -1};
  def = tdef(&t);
  expect_fail(&t, &def, TUNE_EINVAL, "constraint 1 answered 7", __LINE__);
  /* Unknown level, never decides: error at full depth, naming it. */
  t.con[1] = (tcon){.kind = K_ALWAYS_UNDECIDED, .level = -1};
  def = tdef(&t);
  expect_fail(&t, &def, TUNE_EINVAL, "constraint 1 (level unknown) still answers UNDECIDED",
              __LINE__);
  /* Known level, yet UNDECIDED at that level: the level is wrong. */
  t.con[1] = (tcon){.kind = K_ALWAYS_UNDECIDED, .level = 1};
  def = tdef(&t);
  expect_fail(&t, &def, TUNE_EINVAL, "constraint 1 has level 1 but answered UNDECIDED", __LINE__);

  /* The first failure wins: an earlier message in err is kept. */
  t.con[1] = (tcon){.kind = K_ALWAYS_UNDECIDED, .level = -1};
  def = tdef(&t);
  tune_err_clear(&err);
  tune_fail(&err, TUNE_EIO, "earlier: root cause");
  CHECK(search_space_enumerate(&def, &sp, &err) != TUNE_OK);
  CHECK(sp == NULL && strcmp(err.msg, "earlier: root cause") == 0);
  /* A NULL err is allowed. */
  CHECK(search_space_enumerate(&def, &sp, NULL) == TUNE_EINVAL && sp == NULL);
}

/* ---- strategies -------------------------------------------------------- */

static search_space *make_space(int n_params, const int *n_values, int mod) {
  tctx *t = calloc(1, sizeof *t); /* only used during enumerate */
  t->n_params = n_params;
  memcpy(t->n_values, n_values, (size_t)n_params * sizeof(int));
  if (mod) {
    t->n_con = 1;
    t->con[0] = (tcon){.kind = K_MOD, .mask = ((uint64_t)1 << n_params) - 1, .k = mod, .r = 0,
                       .level = n_params - 1};
  }
  search_space_def def = tdef(t);
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  if (search_space_enumerate(&def, &sp, &err) != TUNE_OK)
    fprintf(stderr, "make_space: %s\n", err.msg);
  free(t);
  return sp;
}

/* Drain s in batches of `batch` (cycling through sizes when batch == 0). */
static size_t drain(search_strategy *s, uint64_t *out, size_t cap, int batch, int *n_calls) {
  static const int sizes[] = {1, 2, 3, 5, 8, 13, 100};
  size_t n = 0;
  *n_calls = 0;
  for (int k = 0;; k++) {
    int max = batch ? batch : sizes[k % 7];
    uint64_t buf[128];
    int got = -1;
    tune_err err;
    tune_err_clear(&err);
    if (search_strategy_next_batch(s, buf, max, &got, &err) != TUNE_OK) return (size_t)-1;
    (*n_calls)++;
    if (got < 0 || got > max) return (size_t)-1;
    if (got == 0) break;
    for (int i = 0; i < got && n < cap; i++) out[n++] = buf[i];
    if (*n_calls > 100000) return (size_t)-1; /* never ends */
  }
  return n;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void test_strategy_exhaustive(void) {
  int nv[4] = {5, 4, 3, 6};
  search_space *sp = make_space(4, nv, 3);
  CHECK(sp && sp->n_points > 100 && sp->n_points < 360);
  if (!sp) return;
  uint64_t *got = malloc(sp->n_points * 2 * sizeof(uint64_t));
  int batches[] = {1, 2, 7, 64, 128, 0};
  for (int b = 0; b < 6; b++) {
    search_strategy *s = NULL;
    tune_err err;
    tune_err_clear(&err);
    CHECK(search_strategy_new("exhaustive", sp, 1, &s, &err) == TUNE_OK && s);
    if (!s) continue;
    CHECK(strcmp(search_strategy_name(s), "exhaustive") == 0);
    int calls = 0;
    size_t n = drain(s, got, sp->n_points * 2, batches[b], &calls);
    CHECK(n == sp->n_points && memcmp(got, sp->points, n * sizeof(uint64_t)) == 0);
    if (batches[b]) /* full batches, then one short or none, then the empty one */
      CHECK(calls == (int)((sp->n_points + (size_t)batches[b] - 1) / (size_t)batches[b]) + 1);
    /* Once done, stays done. */
    uint64_t one;
    int k = -1;
    CHECK(search_strategy_next_batch(s, &one, 1, &k, &err) == TUNE_OK && k == 0);
    search_strategy_free(s);
  }
  free(got);
  search_space_free(sp);
}

static void test_strategy_random(void) {
  int nv[4] = {5, 4, 3, 6};
  search_space *sp = make_space(4, nv, 3);
  if (!sp) {
    CHECK(sp != NULL);
    return;
  }
  size_t n = sp->n_points;
  uint64_t *a = malloc(n * sizeof(uint64_t)), *b = malloc(n * sizeof(uint64_t));
  uint64_t *c = malloc(n * sizeof(uint64_t)), *sorted = malloc(n * sizeof(uint64_t));
  tune_err err;
  tune_err_clear(&err);
  search_strategy *s = NULL;
  int calls;

  CHECK(search_strategy_new("random", sp, 42, &s, &err) == TUNE_OK && s);
  CHECK(s && strcmp(search_strategy_name(s), "random") == 0);
  CHECK(drain(s, a, n, 1, &calls) == n);
  search_strategy_free(s);
  /* Every point exactly once. */
  memcpy(sorted, a, n * sizeof(uint64_t));
  qsort(sorted, n, sizeof(uint64_t), cmp_u64);
  CHECK(memcmp(sorted, sp->points, n * sizeof(uint64_t)) == 0);
  /* Shuffled, not the space order. */
  CHECK(memcmp(a, sp->points, n * sizeof(uint64_t)) != 0);

  /* Same seed, other batch sizes: same order. */
  int batches[] = {7, 100, 0};
  for (int k = 0; k < 3; k++) {
    s = NULL;
    CHECK(search_strategy_new("random", sp, 42, &s, &err) == TUNE_OK);
    CHECK(s && drain(s, b, n, batches[k], &calls) == n && memcmp(a, b, n * sizeof(uint64_t)) == 0);
    search_strategy_free(s);
  }
  /* Another seed: another order, still every point once. */
  s = NULL;
  CHECK(search_strategy_new("random", sp, 43, &s, &err) == TUNE_OK);
  CHECK(s && drain(s, c, n, 5, &calls) == n);
  search_strategy_free(s);
  CHECK(memcmp(a, c, n * sizeof(uint64_t)) != 0);
  memcpy(sorted, c, n * sizeof(uint64_t));
  qsort(sorted, n, sizeof(uint64_t), cmp_u64);
  CHECK(memcmp(sorted, sp->points, n * sizeof(uint64_t)) == 0);
  free(a);
  free(b);
  free(c);
  free(sorted);
  search_space_free(sp);

  /* Uniform over permutations: 4 points, 24000 seeds, each of the 24 orders
   * about 1000 times (sd ~31). Catches Sattolo's and the naive shuffle. */
  int nv4[1] = {4};
  sp = make_space(1, nv4, 0);
  int counts[256] = {0};
  for (uint64_t seed = 0; sp && seed < 24000; seed++) {
    s = NULL;
    if (search_strategy_new("random", sp, seed, &s, &err) != TUNE_OK) break;
    uint64_t p[4];
    int got = 0;
    search_strategy_next_batch(s, p, 4, &got, &err);
    search_strategy_free(s);
    if (got != 4) break;
    counts[p[0] * 64 + p[1] * 16 + p[2] * 4 + p[3]]++;
  }
  int n_perm = 0, lo = 1 << 30, hi = 0;
  for (int i = 0; i < 256; i++) {
    if (!counts[i]) continue;
    n_perm++;
    if (counts[i] < lo) lo = counts[i];
    if (counts[i] > hi) hi = counts[i];
  }
  CHECK(n_perm == 24);
  CHECK(lo > 800 && hi < 1200);
  search_space_free(sp);
}

static void test_strategy_misc(void) {
  int nv[2] = {3, 3};
  search_space *sp = make_space(2, nv, 0);
  if (!sp) {
    CHECK(sp != NULL);
    return;
  }
  tune_err err;
  search_strategy *s = (search_strategy *)&err;

  /* Unknown names. */
  tune_err_clear(&err);
  CHECK(search_strategy_new("annealing-typo", sp, 1, &s, &err) == TUNE_EINVAL);
  CHECK(s == NULL && strstr(err.msg, "annealing-typo") && strstr(err.msg, "exhaustive"));
  tune_err_clear(&err);
  CHECK(search_strategy_new(NULL, sp, 1, &s, &err) == TUNE_EINVAL && s == NULL);
  tune_err_clear(&err);
  CHECK(search_strategy_new("random", NULL, 1, &s, &err) == TUNE_EINVAL && s == NULL);
  tune_err_clear(&err);
  CHECK(search_strategy_new("", sp, 1, &s, &err) == TUNE_EINVAL);

  /* Every listed name can be made and reports its name. */
  int n_names = 0, has_ex = 0, has_rand = 0;
  for (int i = 0; search_strategy_names[i]; i++) {
    n_names++;
    const char *name = search_strategy_names[i];
    has_ex |= strcmp(name, "exhaustive") == 0;
    has_rand |= strcmp(name, "random") == 0;
    s = NULL;
    tune_err_clear(&err);
    CHECK(search_strategy_new(name, sp, 9, &s, &err) == TUNE_OK);
    CHECK(s && strcmp(search_strategy_name(s), name) == 0);
    /* Each proposes all 9 points of the space. */
    uint64_t buf[16];
    int calls = 0;
    CHECK(s && drain(s, buf, 16, 4, &calls) == 9);
    search_strategy_free(s);
  }
  CHECK(n_names >= 2 && has_ex && has_rand);

  /* Bad batch arguments. */
  s = NULL;
  tune_err_clear(&err);
  CHECK(search_strategy_new("exhaustive", sp, 0, &s, &err) == TUNE_OK);
  uint64_t buf[4];
  int got = 99;
  CHECK(search_strategy_next_batch(s, buf, 0, &got, &err) == TUNE_EINVAL && got == 0);
  tune_err_clear(&err);
  CHECK(search_strategy_next_batch(s, buf, -3, &got, &err) == TUNE_EINVAL);
  tune_err_clear(&err);
  CHECK(search_strategy_next_batch(s, NULL, 4, &got, &err) == TUNE_EINVAL);
  /* Nothing was consumed by the refused calls. */
  tune_err_clear(&err);
  CHECK(search_strategy_next_batch(s, buf, 4, &got, &err) == TUNE_OK && got == 4 && buf[0] == 0);

  /* Best point: none yet, then the cheapest non-failed one. */
  uint64_t bp = 99;
  double bc = -5;
  CHECK(search_strategy_best(s, &bp, &bc) == 0 && bp == 99);
  search_strategy_observe(s, 1, -1.0); /* failed */
  CHECK(search_strategy_best(s, &bp, &bc) == 0);
  search_strategy_observe(s, 2, 300.0);
  search_strategy_observe(s, 0, 120.0);
  search_strategy_observe(s, 3, 500.0);
  search_strategy_observe(s, 1, -2.0);
  CHECK(search_strategy_best(s, &bp, &bc) == 1 && bp == 0 && bc == 120.0);
  search_strategy_free(s);
  search_strategy_free(NULL);
  search_space_free(sp);

  /* A space with no points: strategies have nothing to propose. */
  tctx t = {.n_params = 1, .n_values = {3}, .n_con = 1};
  t.con[0] = (tcon){.kind = K_LE, .mask = 1, .bound = -1, .level = 0};
  search_space_def def = tdef(&t);
  tune_err_clear(&err);
  sp = NULL;
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK && sp && sp->n_points == 0);
  for (int i = 0; sp && search_strategy_names[i]; i++) {
    s = NULL;
    CHECK(search_strategy_new(search_strategy_names[i], sp, 1, &s, &err) == TUNE_OK);
    got = 99;
    CHECK(s && search_strategy_next_batch(s, buf, 4, &got, &err) == TUNE_OK && got == 0);
    search_strategy_free(s);
  }
  search_space_free(sp);
}

int main(void) {
  test_enumerate_vs_brute_force();
  test_check_counts();
  test_subset();
  test_big_products();
  test_encode_decode_find();
  test_errors();
  test_strategy_exhaustive();
  test_strategy_random();
  test_strategy_misc();
  printf("search_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
