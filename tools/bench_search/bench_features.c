/* bench_features.c: the compile-time facts of each point of a recorded space (registers, shared
 * memory static + dynamic, spilled bytes), as tune would know them after compiling a variant and
 * before timing it. The recording's results table holds them per result; db_bench_rows does not
 * carry them, so they are read here with a read-only connection of their own. */
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "bench_search.h"

typedef struct feat_row {
  char hash[40];
  double f[BENCH_N_FEAT];
} feat_row;

static int by_hash(const void *a, const void *b) {
  return strcmp(((const feat_row *)a)->hash, ((const feat_row *)b)->hash);
}

/* The latest result with known resource usage of each config of the problem, sorted by hash. */
static int read_rows(sqlite3 *h, const char *recipe, const char *problem_hash, feat_row **out, size_t *n_out,
                     tune_err *err) {
  static const char *q =
      "SELECT c.hash, r.registers, r.shared_bytes + r.dyn_shared_bytes, r.spill_stores + r.spill_loads"
      " FROM results r JOIN configs c ON c.id = r.config_id JOIN problems p ON p.id = r.problem_id"
      " WHERE c.recipe_name = ?1 AND p.recipe_name = ?1 AND p.hash = ?2 AND r.registers >= 0"
      " ORDER BY c.hash, r.id DESC";
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(h, q, -1, &st, NULL) != SQLITE_OK)
    return tune_fail(err, TUNE_ESQL, "bench-search features: %s", sqlite3_errmsg(h));
  sqlite3_bind_text(st, 1, recipe, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, problem_hash, -1, SQLITE_STATIC);
  feat_row *a = NULL;
  size_t n = 0, cap = 0;
  int rc = TUNE_OK, s;
  while ((s = sqlite3_step(st)) == SQLITE_ROW) {
    const char *hash = (const char *)sqlite3_column_text(st, 0);
    if (!hash || (n && !strcmp(a[n - 1].hash, hash))) continue; /* an older result of the same config */
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      feat_row *b = realloc(a, cap * sizeof *a);
      if (!b) { rc = tune_fail(err, TUNE_ENOMEM, "bench-search: out of memory"); break; }
      a = b;
    }
    snprintf(a[n].hash, sizeof a[n].hash, "%s", hash);
    a[n].f[0] = sqlite3_column_double(st, 1);
    a[n].f[1] = sqlite3_column_double(st, 2);
    a[n].f[2] = log1p(fmax(0, sqlite3_column_double(st, 3))); /* any spill matters more than how much */
    n++;
  }
  if (!rc && s != SQLITE_DONE) rc = tune_fail(err, TUNE_ESQL, "bench-search features: %s", sqlite3_errmsg(h));
  sqlite3_finalize(st);
  if (rc) { free(a); return rc; }
  *out = a;
  *n_out = n;
  return TUNE_OK;
}

int bench_features_load(bench_space *b, const char *db_path, tune_recipe *r, const tune_problem *p, tune_err *err) {
  sqlite3 *h = NULL;
  if (sqlite3_open_v2(db_path, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    int rc = tune_fail(err, TUNE_ESQL, "bench-search features: %s: %s", db_path, h ? sqlite3_errmsg(h) : "cannot open");
    sqlite3_close(h);
    return rc;
  }
  feat_row *rows = NULL;
  size_t n_rows = 0;
  int rc = read_rows(h, r->name, p->hash, &rows, &n_rows, err);
  sqlite3_close(h);
  if (rc) return rc;
  b->feat = malloc((b->n ? b->n : 1) * BENCH_N_FEAT * sizeof(double));
  if (!b->feat) { free(rows); return tune_fail(err, TUNE_ENOMEM, "bench-search: out of memory"); }
  for (size_t i = 0; i < b->n; i++) {
    int vi[SEARCH_MAX_PARAMS];
    search_point_decode(b->space, b->space->points[i], vi);
    feat_row key;
    memset(&key, 0, sizeof key);
    tune_recipe_config_hash(r, vi, key.hash);
    const feat_row *x = n_rows ? bsearch(&key, rows, n_rows, sizeof *rows, by_hash) : NULL;
    for (int k = 0; k < BENCH_N_FEAT; k++) b->feat[i * BENCH_N_FEAT + (size_t)k] = x ? x->f[k] : NAN;
  }
  free(rows);
  return TUNE_OK;
}
