/* db_bench.c: every recorded result of one problem, one row per config, for
 * the search benchmark (tune-bench-search) and the exports (db_export.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "db_int.h"

static void copy_text(sqlite3_stmt *st, int c, char *dst, size_t n) {
  const unsigned char *t = sqlite3_column_text(st, c);
  snprintf(dst, n, "%s", t ? (const char *)t : "");
}

static double col_real(sqlite3_stmt *st, int c) {
  return sqlite3_column_type(st, c) == SQLITE_NULL ? NAN : sqlite3_column_double(st, c);
}

int db_bench_rows(db_conn *db, const char *recipe_name, const char *problem_hash, db_bench_fn fn,
                  void *ctx, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !recipe_name || !problem_hash || !fn)
    return tune_fail(err, TUNE_EINVAL, "db_bench_rows: NULL argument");
  /* Rows of a config come together: its final answers first, latest first;
   * the first row of each config is the one reported. */
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "WITH bk AS (SELECT binary_key, max(compile_ms) AS ms FROM results"
      "  WHERE binary_key IS NOT NULL AND binary_key <> '' GROUP BY binary_key)"
      " SELECT c.hash, c.params_json, r.status, r.median_ns, r.compile_ms, r.measure_ms,"
      "  coalesce(r.binary_key, ''), coalesce(bk.ms, r.compile_ms), coalesce(r.samples, 0),"
      /* skipped without compiling: neither pruned nor compile-only, so the recipe rejected it */
      "  r.status = 'skipped' AND substr(coalesce(r.error_text, ''), 1, ?3) <> ?4"
      "   AND coalesce(r.error_text, '') <> ?5"
      " FROM configs c"
      " JOIN problems p ON p.recipe_name = c.recipe_name AND p.hash = ?2"
      " JOIN results r ON r.config_id = c.id AND r.problem_id = p.id"
      " JOIN recipes rc ON rc.id = r.recipe_id"
      " JOIN devices d ON d.id = r.device_id"
      " LEFT JOIN bk ON bk.binary_key = r.binary_key"
      " WHERE c.recipe_name = ?1 AND rc.name = ?1 AND d.kind = 'gpu'"
      /* code proposals' variants and the peers' rows (a vendor library's answer stored beside
       * the recipe's) are not points of the recipe's space */
      "  AND c.origin NOT LIKE 'llm-code:%' AND c.origin NOT LIKE 'peer:%'"
      " ORDER BY c.hash, r.status IN ('skipped', 'not_recorded'), r.id DESC",
      -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, recipe_name, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 2, problem_hash, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_int(st, 3, (int)strlen(DB_REASON_PRUNED)));
  SQL_TRY(db, err, sqlite3_bind_text(st, 4, DB_REASON_PRUNED, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 5, DB_REASON_COMPILE_ONLY, -1, SQLITE_STATIC));
  char last[sizeof ((db_bench_row *)0)->config_hash] = "";
  for (;;) {
    SQL_STEP(db, err, st, step);
    if (step != SQLITE_ROW) break;
    db_bench_row row;
    memset(&row, 0, sizeof row);
    copy_text(st, 0, row.config_hash, sizeof row.config_hash);
    if (strcmp(row.config_hash, last) == 0) continue;
    snprintf(last, sizeof last, "%s", row.config_hash);
    const unsigned char *pj = sqlite3_column_text(st, 1);
    row.params_json = pj ? (const char *)pj : "{}";
    char status[32];
    copy_text(st, 2, status, sizeof status);
    int s = db_status_parse(status);
    row.status = s < 0 ? DB_NOT_RECORDED : (db_status)s;
    row.median_ns = col_real(st, 3);
    row.compile_ms = col_real(st, 4);
    row.measure_ms = col_real(st, 5);
    copy_text(st, 6, row.binary_key, sizeof row.binary_key);
    row.build_ms = col_real(st, 7);
    if (!(row.build_ms >= row.compile_ms)) row.build_ms = row.compile_ms;
    row.samples = sqlite3_column_int(st, 8);
    row.rejected = sqlite3_column_int(st, 9);
    int r = fn(ctx, &row);
    if (r) {
      rc = r;
      if (err && err->code == TUNE_OK) tune_fail(err, r, "db_bench_rows: stopped by the caller");
      goto fail;
    }
  }
fail:
  sqlite3_finalize(st);
  return rc;
}

int db_problem_lookup(db_conn *db, const char *recipe_name, const char *problem, char *name,
                      size_t name_n, char hash[17], char *dims_json, size_t dims_n,
                      tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !recipe_name || !problem)
    return tune_fail(err, TUNE_EINVAL, "db_problem_lookup: NULL argument");
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "SELECT name, hash, dims_json FROM problems WHERE recipe_name = ?1"
      " AND (name = ?2 OR hash = ?2) ORDER BY name = ?2 DESC, id LIMIT 1", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, recipe_name, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 2, problem, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_ENOTFOUND, "db: %s: recipe %s has no problem named %s", db->path,
                   recipe_name, problem);
    goto fail;
  }
  if (name) copy_text(st, 0, name, name_n);
  if (hash) copy_text(st, 1, hash, 17);
  if (dims_json) copy_text(st, 2, dims_json, dims_n);
fail:
  sqlite3_finalize(st);
  return rc;
}
