/* db_identity.c: the identity of a result, its lookup and the re-timing of one (db_identity.h). */
#include "db_identity.h"

#include <stdio.h>

static const char *const identity_cols[DB_IDENTITY_N] = DB_IDENTITY_COLS;

int db_identity_where(char *out, size_t cap, const char *row, const char *const vals[DB_IDENTITY_N]) {
  size_t n = 0;
  for (int k = 0; k < DB_IDENTITY_N; ++k) {
    const char *and = k ? " AND " : "";
    int w = !strcmp(identity_cols[k], "binary_key")
                /* NULL and "" both mean no binary: coalesce, so neither spelling is a new identity */
                ? snprintf(out + n, cap - n, "%scoalesce(%s.binary_key, '') = coalesce(%s, '')", and, row, vals[k])
                : snprintf(out + n, cap - n, "%s%s.%s = %s", and, row, identity_cols[k], vals[k]);
    if (w < 0 || (size_t)w >= cap - n) return -1;
    n += (size_t)w;
  }
  return 0;
}

int db_status_is_placeholder(db_status s) { return s == DB_SKIPPED || s == DB_NOT_RECORDED; }

db_put_outcome db_identity_rule(int exists, db_status kept, db_status incoming) {
  if (!exists) return DB_PUT_INSERTED;
  if (db_status_is_placeholder(incoming)) return DB_PUT_KEPT; /* never replaces what is there */
  if (db_status_is_placeholder(kept)) return DB_PUT_UPGRADED;
  return DB_PUT_RETIMED; /* the first final answer stays the result */
}

/* Binds r's identity to ?1..?7 in DB_IDENTITY_COLS order. */
static int bind_identity(db_conn *db, sqlite3_stmt *st, const db_result *r, tune_err *err) {
  int rc = TUNE_OK;
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, r->recipe_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, r->problem_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 3, r->config_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 4, r->binary_key, (int)strnlen(r->binary_key, sizeof r->binary_key),
                                     SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 5, r->device_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 6, db_result_timing(r), -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_int(st, 7, db_result_protocol(r)));
fail:
  return rc;
}

int db_identity_lookup(db_conn *db, const db_result *r, db_identity_row *row, tune_err *err) {
  static const char *const params[DB_IDENTITY_N] = {"?1", "?2", "?3", "?4", "?5", "?6", "?7"};
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  char where[512], sql[768];
  memset(row, 0, sizeof *row);
  if (db_identity_where(where, sizeof where, "r", params))
    return tune_fail(err, TUNE_EINTERNAL, "db: the result identity query does not fit");
  snprintf(sql, sizeof sql, "SELECT r.id, r.status, r.created_at FROM results r WHERE %s" DB_IDENTITY_PICK, where);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL));
  if ((rc = bind_identity(db, st, r, err))) goto fail;
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) goto fail;
  const char *status = (const char *)sqlite3_column_text(st, 1);
  int s = db_status_parse(status);
  if (s < 0) {
    rc = tune_fail(err, TUNE_EINTERNAL, "db %s: result %lld has unknown status '%s'", db->path,
                   (long long)sqlite3_column_int64(st, 0), status ? status : "(null)");
    goto fail;
  }
  row->found = 1;
  row->id = sqlite3_column_int64(st, 0);
  row->status = (db_status)s;
  db_copy(row->created_at, sizeof row->created_at, (const char *)sqlite3_column_text(st, 2));
fail:
  sqlite3_finalize(st);
  return rc;
}

int db_identity_retime(db_conn *db, int64_t result_id, const db_result *r, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "INSERT INTO measurements (comparison_id, problem_id, config_id, result_id, side, round, timing, status,"
      " median_ns, min_ns, max_ns, samples, rel_ci, timer, sm_mhz, mem_mhz, power_w, clock_reasons, error_text, gpu)"
      " SELECT NULL, ?2, ?3, ?1, CASE WHEN c.origin LIKE 'peer:%' THEN 'peer' ELSE 'tune' END, 0, ?4, ?5,"
      " ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17 FROM configs c WHERE c.id = ?3",
      -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, result_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, r->problem_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 3, r->config_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 4, db_result_timing(r), -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 5, db_status_name(r->status), -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_double(st, 6, r->median_ns));
  SQL_TRY(db, err, sqlite3_bind_double(st, 7, r->min_ns));
  SQL_TRY(db, err, sqlite3_bind_double(st, 8, r->max_ns));
  SQL_TRY(db, err, sqlite3_bind_int(st, 9, r->samples));
  if (r->rel_ci > 0) SQL_TRY(db, err, sqlite3_bind_double(st, 10, r->rel_ci));
  SQL_TRY(db, err, sqlite3_bind_text(st, 11, r->timer, (int)strnlen(r->timer, sizeof r->timer), SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_int(st, 12, r->sm_mhz));
  SQL_TRY(db, err, sqlite3_bind_int(st, 13, r->mem_mhz));
  SQL_TRY(db, err, sqlite3_bind_int(st, 14, r->power_w));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 15, r->clock_reasons));
  if (r->error_text[0])
    SQL_TRY(db, err, sqlite3_bind_text(st, 16, r->error_text, (int)strnlen(r->error_text, sizeof r->error_text),
                                       SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 17, r->gpu, (int)strnlen(r->gpu, sizeof r->gpu), SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (sqlite3_changes(db->h) != 1)
    rc = tune_fail(err, TUNE_EINTERNAL, "db %s: re-timing of result %lld: config %lld is missing", db->path,
                   (long long)result_id, (long long)r->config_id);
fail:
  sqlite3_finalize(st);
  return rc;
}
