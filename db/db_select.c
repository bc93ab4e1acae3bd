/* db_select.c: candidates, rounds and rows of selections (db_select.h). */
#include "db_select.h"

#include <stdio.h>

#include "db_int.h"
#include "../tuner/version.h"

int db_selection_candidates(db_conn *db, int64_t recipe_id, int64_t problem_id, int64_t device_id,
                            const char *timing, int k, db_top *out, int *n, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  *n = 0;
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "SELECT r.id, c.id, c.hash, c.params_json, r.binary_key, r.median_ns"
      " FROM results r JOIN configs c ON c.id = r.config_id"
      " WHERE r.recipe_id = ?1 AND r.problem_id = ?2 AND r.device_id = ?3 AND r.timing = ?4"
      "   AND r.status = 'ok' AND c.origin NOT LIKE 'peer:%' AND c.origin NOT LIKE 'llm-code:%'"
      "   AND coalesce(r.error_text, '') NOT LIKE 'halving: quick timing only%'"
      "   AND r.id = (SELECT f.id FROM results f WHERE f.config_id = r.config_id AND f.recipe_id = r.recipe_id"
      "     AND f.problem_id = r.problem_id AND f.device_id = r.device_id AND f.timing = r.timing"
      "     AND f.status = 'ok' ORDER BY f.median_ns, f.id LIMIT 1)"
      " ORDER BY r.median_ns, r.id LIMIT ?5",
      -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, recipe_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, problem_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 3, device_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 4, timing, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_int(st, 5, k));
  for (;;) {
    SQL_STEP(db, err, st, step);
    if (step == SQLITE_DONE || *n >= k) break;
    db_top *t = &out[(*n)++];
    const unsigned char *s;
    t->result_id = sqlite3_column_int64(st, 0);
    t->config_id = sqlite3_column_int64(st, 1);
    s = sqlite3_column_text(st, 2);
    snprintf(t->config_hash, sizeof t->config_hash, "%s", s ? (const char *)s : "");
    s = sqlite3_column_text(st, 3);
    snprintf(t->params_json, sizeof t->params_json, "%s", s ? (const char *)s : "");
    s = sqlite3_column_text(st, 4);
    snprintf(t->binary_key, sizeof t->binary_key, "%s", s ? (const char *)s : "");
    t->median_ns = sqlite3_column_double(st, 5);
  }
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

int db_selection_rounds_begin(db_conn *db, int64_t recipe_id, int64_t device_id, int rounds, int top_k,
                              const char *timing, int64_t *comparison_id, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "INSERT INTO comparisons (recipe_id, device_id, command, rounds, top_k, timings, tool_version, kind, status)"
      " VALUES (?1, ?2, 'tune run: selection', ?3, ?4, ?5, ?6, 'selection', 'done') RETURNING id", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, recipe_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, device_id));
  SQL_TRY(db, err, sqlite3_bind_int(st, 3, rounds));
  SQL_TRY(db, err, sqlite3_bind_int(st, 4, top_k));
  SQL_TRY(db, err, sqlite3_bind_text(st, 5, timing, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 6, TUNE_VERSION, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) { rc = tune_fail(err, TUNE_EINTERNAL, "db_selection_rounds_begin: insert returned no id"); goto fail; }
  *comparison_id = sqlite3_column_int64(st, 0);
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

int db_selection_put(db_conn *db, const db_selection *s, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "INSERT INTO selections (run_id, recipe_id, problem_id, device_id, timing, comparison_id, result_id,"
      " rule, why, candidates) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", -1, &st, NULL));
  if (s->run_id) SQL_TRY(db, err, sqlite3_bind_int64(st, 1, s->run_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, s->recipe_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 3, s->problem_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 4, s->device_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 5, s->timing, -1, SQLITE_STATIC));
  if (s->comparison_id) SQL_TRY(db, err, sqlite3_bind_int64(st, 6, s->comparison_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 7, s->result_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 8, s->rule, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 9, s->why, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 10, s->candidates, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}
