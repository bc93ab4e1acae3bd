/* db_report.c: the rows behind tune report (db_report.h). */
#include "db_report.h"

#include <string.h>

#include "db_int.h"

/* The recipe name's match, as db_filter's: ?1 the exact name, ?2 a prefix (a value ending in
 * '*'), both NULL for every recipe. */
#define RECIPE_MATCH                                                                  \
  " (?1 IS NULL OR rc.name = ?1)"                                                     \
  " AND (?2 IS NULL OR substr(rc.name, 1, length(?2)) = ?2)"

static int bind_recipe(db_conn *db, sqlite3_stmt *st, const char *recipe, tune_err *err) {
  int rc = TUNE_OK;
  int n = recipe ? (int)strlen(recipe) : 0, prefix = n > 0 && recipe[n - 1] == '*';
  SQL_TRY(db, err, recipe && !prefix ? sqlite3_bind_text(st, 1, recipe, -1, SQLITE_STATIC)
                                     : sqlite3_bind_null(st, 1));
  SQL_TRY(db, err, prefix ? sqlite3_bind_text(st, 2, recipe, n - 1, SQLITE_STATIC)
                          : sqlite3_bind_null(st, 2));
fail:
  return rc;
}

/* *out = 1 when the file has table name (files of older schemas lack the newer ones). */
static int table_exists(db_conn *db, const char *name, int *out, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  *out = step == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
fail:
  sqlite3_finalize(st);
  return rc;
}

/* Runs sql (NULL: no statement, an empty array) with the recipe bound as ?1/?2 when
 * with_recipe, and collects its rows. */
static int collect(db_conn *db, const char *sql, int with_recipe, const char *recipe, json_t **rows,
                   tune_err *err) {
  int rc = TUNE_OK;
  sqlite3_stmt *st = NULL;
  json_t *arr = json_array();
  *rows = NULL;
  if (!arr) return tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  if (sql) {
    SQL_TRY(db, err, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL));
    if (with_recipe && (rc = bind_recipe(db, st, recipe, err))) goto fail;
    if ((rc = db_rows_to_array(db, st, arr, err))) goto fail;
  }
  *rows = arr;
  arr = NULL;
fail:
  sqlite3_finalize(st);
  json_decref(arr);
  return rc;
}

int db_report_progress(db_conn *db, const char *recipe, json_t **rows, tune_err *err) {
  DB_LOCK(db);
  int rc = collect(db,
      "SELECT rc.name AS recipe, p.name AS problem, p.id AS problem_id, r.device_id, r.run_id,"
      "  r.id AS result_id, r.status, r.median_ns"
      " FROM results r JOIN recipes rc ON rc.id = r.recipe_id"
      " JOIN problems p ON p.id = r.problem_id"
      " JOIN devices d ON d.id = r.device_id"
      " JOIN configs c ON c.id = r.config_id"
      " WHERE" RECIPE_MATCH " AND r.run_id IS NOT NULL AND d.kind = 'gpu'"
      "   AND c.origin NOT LIKE 'peer:%'"
      " ORDER BY rc.name, p.name, p.id, r.run_id, r.id",
      1, recipe, rows, err);
  DB_UNLOCK(db);
  return rc;
}

int db_report_peaks(db_conn *db, json_t **rows, tune_err *err) {
  DB_LOCK(db);
  int rc = collect(db,
      "SELECT k.device_id, d.name AS device, d.uuid, k.kind, k.value, k.unit, k.measured_at"
      " FROM peaks k JOIN devices d ON d.id = k.device_id"
      " WHERE k.id = (SELECT max(l.id) FROM peaks l WHERE l.device_id = k.device_id AND l.kind = k.kind)"
      " ORDER BY k.device_id, k.kind",
      0, NULL, rows, err);
  DB_UNLOCK(db);
  return rc;
}

int db_report_devices(db_conn *db, json_t **rows, tune_err *err) {
  DB_LOCK(db);
  int rc = collect(db,
      "SELECT id, name, arch, uuid, sm_count, smem_per_block_optin, l2_bytes, sm_clock_khz,"
      "  mem_clock_khz, driver, cuda FROM devices WHERE kind = 'gpu' ORDER BY id",
      0, NULL, rows, err);
  DB_UNLOCK(db);
  return rc;
}

int db_report_has_table(db_conn *db, const char *table, int *has, tune_err *err) {
  DB_LOCK(db);
  int rc = table_exists(db, table, has, err);
  DB_UNLOCK(db);
  return rc;
}

int db_report_selections(db_conn *db, const char *recipe, json_t **rows, tune_err *err) {
  int rc = TUNE_OK, has = 0;
  DB_LOCK(db);
  if ((rc = table_exists(db, "selections", &has, err))) goto fail;
  rc = collect(db, !has ? NULL :
      "SELECT rc.name AS recipe, rc.source_hash, p.name AS problem, d.name AS device, s.timing,"
      "  s.rule, s.why, s.result_id, r.median_ns, c.params_json, s.candidates AS candidates_json,"
      "  s.comparison_id, s.run_id, s.created_at"
      " FROM selections s JOIN recipes rc ON rc.id = s.recipe_id"
      " JOIN problems p ON p.id = s.problem_id"
      " JOIN devices d ON d.id = s.device_id"
      " JOIN results r ON r.id = s.result_id"
      " JOIN configs c ON c.id = r.config_id"
      " WHERE" RECIPE_MATCH
      "   AND s.id = (SELECT max(l.id) FROM selections l WHERE l.recipe_id = s.recipe_id"
      "     AND l.problem_id = s.problem_id AND l.device_id = s.device_id)"
      " ORDER BY rc.name, p.name, d.name, s.id",
      1, recipe, rows, err);
fail:
  DB_UNLOCK(db);
  return rc;
}
