/* db_compare.c: the comparisons and measurements of tune compare (db_compare.h). */
#include "db_compare.h"

#include <stdio.h>

#include "db_int.h"
#include "../tuner/version.h"

static void col_text(sqlite3_stmt *st, int c, char *dst, size_t n) {
  const unsigned char *t = sqlite3_column_text(st, c);
  snprintf(dst, n, "%s", t ? (const char *)t : "");
}

int db_top_results(db_conn *db, const char *recipe_name, int64_t problem_id, int64_t device_id, int k,
                   db_top *out, int *n, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  *n = 0;
  DB_LOCK(db);
  /* one row per config: its fastest result on a GPU of this architecture, of any source of the
     recipe (the caller compiles the current source); this GPU model's results rank first.
     Quick-only halving timings and failed code proposals are not contenders, as in
     db_query_best. */
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "WITH me AS (SELECT name, arch FROM devices WHERE id = ?3)"
      " SELECT max(r.id), c.id, c.hash, c.params_json, '', min(r.median_ns), max(d.name = me.name) AS same"
      " FROM results r JOIN configs c ON c.id = r.config_id"
      " JOIN recipes rc ON rc.id = r.recipe_id JOIN devices d ON d.id = r.device_id, me"
      " WHERE rc.name = ?1 AND r.problem_id = ?2 AND d.arch = me.arch AND d.kind = 'gpu'"
      "   AND r.status = 'ok' AND c.origin NOT LIKE 'peer:%' AND c.origin NOT LIKE 'llm-code:%'"
      "   AND coalesce(r.error_text, '') NOT LIKE 'halving: quick timing only%'"
      " GROUP BY c.id ORDER BY same DESC, min(r.median_ns), c.id LIMIT ?4",
      -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, recipe_name, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, problem_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 3, device_id));
  SQL_TRY(db, err, sqlite3_bind_int(st, 4, k));
  for (;;) {
    SQL_STEP(db, err, st, step);
    if (step == SQLITE_DONE || *n >= k) break;
    db_top *t = &out[(*n)++];
    t->result_id = sqlite3_column_int64(st, 0);
    t->config_id = sqlite3_column_int64(st, 1);
    col_text(st, 2, t->config_hash, sizeof t->config_hash);
    col_text(st, 3, t->params_json, sizeof t->params_json);
    col_text(st, 4, t->binary_key, sizeof t->binary_key);
    t->median_ns = sqlite3_column_double(st, 5);
  }
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

int db_comparison_begin(db_conn *db, int64_t recipe_id, int64_t device_id, const char *command,
                        int rounds, int top_k, const char *timings, int64_t *id, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "INSERT INTO comparisons (recipe_id, device_id, command, rounds, top_k, timings, tool_version)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, recipe_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, device_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 3, command ? command : "", -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_int(st, 4, rounds));
  SQL_TRY(db, err, sqlite3_bind_int(st, 5, top_k));
  SQL_TRY(db, err, sqlite3_bind_text(st, 6, timings ? timings : "", -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 7, TUNE_VERSION, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_EINTERNAL, "db_comparison_begin: insert returned no id");
    goto fail;
  }
  *id = sqlite3_column_int64(st, 0);
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

int db_comparison_end(db_conn *db, int64_t id, const char *status, const char *peer_info,
                      tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "UPDATE comparisons SET status = ?2, peer_info = ?3,"
      " ended_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 2, status, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 3, peer_info ? peer_info : "", -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

int db_measurement_put(db_conn *db, const db_measurement *m, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "INSERT INTO measurements (comparison_id, problem_id, config_id, result_id, side, round,"
      " timing, status, median_ns, min_ns, max_ns, samples, rel_ci, timer, kernels, library,"
      " sm_mhz, mem_mhz, power_w, clock_reasons, error_text)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
      " ?19, ?20, ?21)", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, m->comparison_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, m->problem_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 3, m->config_id));
  if (m->result_id > 0) SQL_TRY(db, err, sqlite3_bind_int64(st, 4, m->result_id));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 4));
  SQL_TRY(db, err, sqlite3_bind_text(st, 5, m->peer ? "peer" : "tune", -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_int(st, 6, m->round));
  SQL_TRY(db, err, sqlite3_bind_text(st, 7, m->timing, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 8, db_status_name(m->status), -1, SQLITE_STATIC));
  if (m->status == DB_OK) {
    SQL_TRY(db, err, sqlite3_bind_double(st, 9, m->median_ns));
    SQL_TRY(db, err, sqlite3_bind_double(st, 10, m->min_ns));
    SQL_TRY(db, err, sqlite3_bind_double(st, 11, m->max_ns));
  }
  SQL_TRY(db, err, sqlite3_bind_int(st, 12, m->samples));
  SQL_TRY(db, err, sqlite3_bind_double(st, 13, m->rel_ci));
  SQL_TRY(db, err, sqlite3_bind_text(st, 14, m->timer, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 15, m->kernels, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 16, m->library, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_int(st, 17, m->sm_mhz));
  SQL_TRY(db, err, sqlite3_bind_int(st, 18, m->mem_mhz));
  SQL_TRY(db, err, sqlite3_bind_int(st, 19, m->power_w));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 20, m->clock_reasons));
  if (m->error_text[0]) SQL_TRY(db, err, sqlite3_bind_text(st, 21, m->error_text, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

/* The rows of one prepared query bound to one id, as a JSON array. */
static int id_rows(db_conn *db, const char *sql, int64_t id, json_t **rows, tune_err *err) {
  int rc = TUNE_OK;
  sqlite3_stmt *st = NULL;
  json_t *arr = json_array();
  *rows = NULL;
  if (!arr) return tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, id));
  if ((rc = db_rows_to_array(db, st, arr, err))) goto fail;
  *rows = arr;
  arr = NULL;
fail:
  sqlite3_finalize(st);
  json_decref(arr);
  DB_UNLOCK(db);
  return rc;
}

int db_comparison_rows(db_conn *db, int64_t comparison_id, json_t **rows, tune_err *err) {
  return id_rows(db,
      "SELECT p.name AS problem, p.dims_json, m.timing, m.side, m.config_id, c.params_json,"
      "  c.origin, m.round, m.status, m.median_ns, m.rel_ci, m.sm_mhz, m.mem_mhz, m.power_w,"
      "  m.library, m.kernels, m.error_text"
      " FROM measurements m JOIN problems p ON p.id = m.problem_id"
      " JOIN configs c ON c.id = m.config_id"
      " WHERE m.comparison_id = ?1"
      " ORDER BY p.id, m.timing, m.side, m.config_id, m.round",
      comparison_id, rows, err);
}

int db_comparison_info(db_conn *db, int64_t comparison_id, json_t **info, tune_err *err) {
  json_t *rows = NULL;
  int rc = id_rows(db,
      "SELECT k.id, rc.name AS recipe, rc.source_hash, d.name AS device, d.arch, d.driver,"
      "  d.cuda, d.sm_count, d.sm_clock_khz, d.mem_clock_khz, k.command, k.rounds, k.top_k,"
      "  k.timings, k.peer_info AS peer_info_json, k.tool_version, k.started_at, k.ended_at, k.status"
      " FROM comparisons k JOIN recipes rc ON rc.id = k.recipe_id"
      " JOIN devices d ON d.id = k.device_id WHERE k.id = ?1",
      comparison_id, &rows, err);
  *info = NULL;
  if (rc) return rc;
  if (json_array_size(rows) != 1) {
    json_decref(rows);
    return tune_fail(err, TUNE_ENOTFOUND, "db: no comparison %lld", (long long)comparison_id);
  }
  *info = json_incref(json_array_get(rows, 0));
  json_decref(rows);
  return TUNE_OK;
}

int db_comparison_latest(db_conn *db, int64_t *ids, int max, int *n, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  *n = 0;
  DB_LOCK(db);
  /* a selection's rounds (schema 0007, tuner/reselect.h) compare no peer: not a comparison to report */
  int has_kind = 0;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "SELECT count(*) FROM pragma_table_info('comparisons') WHERE name = 'kind'", -1, &st, NULL));
  SQL_STEP(db, err, st, step);
  has_kind = step == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
  sqlite3_finalize(st);
  st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, has_kind
      ? "SELECT max(k.id) FROM comparisons k JOIN recipes rc ON rc.id = k.recipe_id"
        " WHERE k.kind = 'compare' GROUP BY rc.name ORDER BY rc.name"
      : "SELECT max(k.id) FROM comparisons k JOIN recipes rc ON rc.id = k.recipe_id"
        " GROUP BY rc.name ORDER BY rc.name", -1, &st, NULL));
  for (;;) {
    SQL_STEP(db, err, st, step);
    if (step == SQLITE_DONE || *n >= max) break;
    ids[(*n)++] = sqlite3_column_int64(st, 0);
  }
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}
