/* db_query.c: the read-only queries behind `tune db` (best, list, show,
 * provenance) and their filters, each returning new jansson values owned by
 * the caller.
 *
 * Rows become JSON objects column by column (row_object): INTEGER -> integer,
 * REAL -> real (non-finite -> null), TEXT -> string, NULL -> null. Two naming
 * rules apply to the selected column names: a name ending in "_json" is
 * decoded and stored under the name without the suffix (params_json ->
 * "params"), and a column named "seed" (uint64 stored as its int64 bit
 * pattern) becomes an integer when it fits in int64, else a decimal string.
 * These statements are not cached: the CLI runs each once. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "db_int.h"

/* A JSON string from n bytes of text; bytes that are not valid UTF-8 become
 * '?' (compile logs are not guaranteed to be). NULL on allocation failure. */
static json_t *json_text(const char *s, size_t n) {
  json_t *j = json_stringn(s, n);
  if (j) return j;
  char *copy = malloc(n + 1);
  if (!copy) return NULL;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    copy[i] = (c < 0x80 && c != 0) ? (char)c : '?';
  }
  copy[n] = 0;
  j = json_stringn(copy, n);
  free(copy);
  return j;
}

static json_t *col_json(sqlite3_stmt *st, int i, const char *name) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: {
      int64_t v = sqlite3_column_int64(st, i);
      if (v < 0 && strcmp(name, "seed") == 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64, db_i2u(v));
        return json_string(buf);
      }
      return json_integer((json_int_t)v);
    }
    case SQLITE_FLOAT: {
      double v = sqlite3_column_double(st, i);
      return isfinite(v) ? json_real(v) : json_null();
    }
    case SQLITE_TEXT: {
      const char *s = (const char *)sqlite3_column_text(st, i);
      return s ? json_text(s, (size_t)sqlite3_column_bytes(st, i)) : NULL;
    }
    case SQLITE_BLOB: /* never selected whole: report its size */
      return json_integer(sqlite3_column_bytes(st, i));
    default:
      return json_null();
  }
}

/* The current row of st as a new object (see the naming rules above). */
static int row_object(sqlite3_stmt *st, json_t **out, tune_err *err) {
  json_t *obj = json_object();
  if (!obj) goto nomem;
  int n = sqlite3_column_count(st);
  for (int i = 0; i < n; i++) {
    const char *name = sqlite3_column_name(st, i);
    if (!name) goto nomem;
    size_t len = strlen(name);
    json_t *v = NULL;
    char key[128];
    if (len > 5 && strcmp(name + len - 5, "_json") == 0 &&
        sqlite3_column_type(st, i) == SQLITE_TEXT) {
      snprintf(key, sizeof key, "%.*s", (int)(len - 5), name);
      json_error_t jerr;
      v = json_loadb((const char *)sqlite3_column_text(st, i),
                     (size_t)sqlite3_column_bytes(st, i), JSON_DECODE_ANY, &jerr);
      if (!v) v = col_json(st, i, name); /* not JSON after all: keep the text */
    } else {
      snprintf(key, sizeof key, "%s", name);
      v = col_json(st, i, name);
    }
    if (json_object_set_new(obj, key, v) != 0) goto nomem;
  }
  *out = obj;
  return TUNE_OK;
nomem:
  json_decref(obj);
  *out = NULL;
  return tune_fail(err, TUNE_ENOMEM, "db: out of memory building a JSON row");
}

/* Appends every row of st to arr. */
int db_rows_to_array(db_conn *db, sqlite3_stmt *st, json_t *arr, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  for (;;) {
    SQL_STEP(db, err, st, step);
    if (step == SQLITE_DONE) break;
    json_t *row = NULL;
    if ((rc = row_object(st, &row, err))) goto fail;
    if (json_array_append_new(arr, row) != 0) {
      rc = tune_fail(err, TUNE_ENOMEM, "db: out of memory building a JSON array");
      goto fail;
    }
  }
fail:
  return rc;
}

int db_query_rows(db_conn *db, const char *sql, json_t **rows, tune_err *err) {
  int rc = TUNE_OK;
  sqlite3_stmt *st = NULL;
  json_t *arr = json_array();
  *rows = NULL;
  if (!arr) return tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL));
  if ((rc = db_rows_to_array(db, st, arr, err))) goto fail;
  *rows = arr;
  arr = NULL;
fail:
  sqlite3_finalize(st);
  json_decref(arr);
  return rc;
}

static int bind_opt(sqlite3_stmt *st, int i, const char *s) {
  return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

/* ---- filters ----------------------------------------------------------- */

int db_filter_set(db_filter *f, const char *key, const char *value, tune_err *err) {
  static const char *const keys[] = {"recipe", "problem", "device", "status", "origin", "timing"};
  const char **fields[] = {&f->recipe, &f->problem, &f->device, &f->status, &f->origin,
                           &f->timing};
  if (!f || !key || !value) return tune_fail(err, TUNE_EINVAL, "db_filter_set: NULL argument");
  size_t n = strlen(value);
  int prefix = n > 0 && value[n - 1] == '*';
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    if (strcmp(key, keys[i])) continue;
    if (*fields[i])
      return tune_fail(err, TUNE_EINVAL, "db: filter %s given twice (%s, %s)", key, *fields[i],
                       value);
    if (!prefix && fields[i] == &f->status && db_status_parse(value) < 0)
      return tune_fail(err, TUNE_EINVAL,
                       "db: unknown status '%s' (ok, wrong, compile_error, launch_error, crash, "
                       "timeout, skipped, not_recorded, suspicious)",
                       value);
    if (!prefix && fields[i] == &f->timing && strcmp(value, "burst") && strcmp(value, "sustained"))
      return tune_fail(err, TUNE_EINVAL, "db: unknown timing '%s' (burst, sustained)", value);
    *fields[i] = value;
    return TUNE_OK;
  }
  return tune_fail(err, TUNE_EINVAL, "db: unknown filter key '%s' (%s)", key, DB_FILTER_KEYS);
}

/* The WHERE terms of a db_filter: each key takes parameters ?(2k+1), its exact
 * value, and ?(2k+2), its prefix; bind_filter binds them. TIMING is the
 * timing column's expression (files before schema 4 have none). */
#define FILTER_TERM(col, e, p)                                                         \
  " AND (?" e " IS NULL OR " col " = ?" e ")"                                          \
  " AND (?" p " IS NULL OR substr(" col ", 1, length(?" p ")) = ?" p ")"
#define FILTER_SQL(TIMING)                                                             \
  FILTER_TERM("rc.name", "1", "2") FILTER_TERM("p.name", "3", "4")                     \
  FILTER_TERM("d.name", "5", "6") FILTER_TERM("r.status", "7", "8")                    \
  FILTER_TERM("c.origin", "9", "10") FILTER_TERM(TIMING, "11", "12")
#define FILTER_PARAMS 12

static int bind_filter(db_conn *db, sqlite3_stmt *st, const db_filter *f, tune_err *err) {
  int rc = TUNE_OK;
  db_filter none;
  memset(&none, 0, sizeof none);
  if (!f) f = &none;
  const char *values[] = {f->recipe, f->problem, f->device, f->status, f->origin, f->timing};
  for (int k = 0; k < FILTER_PARAMS / 2; k++) {
    const char *v = values[k];
    int n = v ? (int)strlen(v) : 0, prefix = n > 0 && v[n - 1] == '*';
    SQL_TRY(db, err, prefix ? sqlite3_bind_null(st, 2 * k + 1) : bind_opt(st, 2 * k + 1, v));
    SQL_TRY(db, err, prefix ? sqlite3_bind_text(st, 2 * k + 2, v, n - 1, SQLITE_STATIC)
                            : sqlite3_bind_null(st, 2 * k + 2));
  }
fail:
  return rc;
}

int db_results_have_column(db_conn *db, const char *name, int *out, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "SELECT count(*) FROM pragma_table_info('results') WHERE name = ?1", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  *out = step == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
fail:
  sqlite3_finalize(st);
  return rc;
}

static int has_table(db_conn *db, const char *name, int *out, tune_err *err) {
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

/* ---- best -------------------------------------------------------------- */

/* {status: count} of every result of (recipe_id, problem_id, device_id). */
static int status_counts(db_conn *db, sqlite3_stmt *st, int64_t recipe_id, int64_t problem_id,
                         int64_t device_id, json_t **out, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  json_t *obj = json_object();
  if (!obj) return tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, recipe_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, problem_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 3, device_id));
  for (;;) {
    SQL_STEP(db, err, st, step);
    if (step == SQLITE_DONE) break;
    const char *name = (const char *)sqlite3_column_text(st, 0);
    if (json_object_set_new(obj, name ? name : "?", json_integer(sqlite3_column_int64(st, 1)))) {
      rc = tune_fail(err, TUNE_ENOMEM, "db: out of memory");
      goto fail;
    }
  }
fail:
  db_stmt_done(st);
  if (rc) json_decref(obj);
  else *out = obj;
  return rc;
}

/* The latest selection's row (tuner/reselect.h) of the result r's (recipe source, problem, GPU). */
#define LATEST_SELECTION                                                                       \
  "(SELECT s.id FROM selections s WHERE s.recipe_id = r.recipe_id AND s.problem_id = r.problem_id" \
  " AND s.device_id = r.device_id ORDER BY s.id DESC LIMIT 1)"
#define SELECTED_ID "(SELECT result_id FROM selections WHERE id = " LATEST_SELECTION ")"
/* "fastest in sustained rounds: ...": the mode says whether a comparison's sustained rounds chose it */
#define SELECTED_WHY                                                                                        \
  "(SELECT rule || ' in ' || timing || ' rounds: ' || why FROM selections WHERE id = " LATEST_SELECTION \
  " AND result_id = r.id)"

/* Ranks the ok results of each (recipe source, problem, GPU): the latest selection's choice
 * first (SELECTED is its result id, NULL in a file without selections), then by median; the
 * v_best view (db_schema.c) ranks the same way. TIMER and PROTOCOL are the winner's yardstick
 * (NULL where the file predates their columns): two times are comparable only under the same one. */
#define BEST_SQL(TIMING, TIMER, PROTOCOL, SELECTED, WHY)                                       \
  "WITH ranked AS ("                                                                           \
  "  SELECT r.id, row_number() OVER (PARTITION BY r.recipe_id, r.problem_id, r.device_id"     \
  /* a quick-only timing of successive halving (tuner/halving.h: its error_text starts with    \
     "halving: quick timing only") ranks after every fully timed result */                     \
  "                                  ORDER BY coalesce(r.error_text, '') LIKE 'halving: quick timing only%',"\
  "                                           r.id IS NOT " SELECTED ", r.median_ns, r.id) AS rk"\
  "  FROM results r"                                                                           \
  "  JOIN recipes rc ON rc.id = r.recipe_id"                                                   \
  "  JOIN problems p ON p.id = r.problem_id"                                                   \
  "  JOIN devices d ON d.id = r.device_id"                                                     \
  "  JOIN configs c ON c.id = r.config_id"                                                     \
  "  WHERE r.status = 'ok' AND d.kind = 'gpu'" FILTER_SQL(TIMING)                              \
  /* a peer's timing (tune compare) is not a variant: it has no binary to ship */              \
  "    AND c.origin NOT LIKE 'peer:%'"                                                         \
  /* a code proposal's variant that failed on any problem of the recipe                        \
     (same source, same device) is not a candidate anywhere */                                 \
  "    AND NOT (c.origin LIKE 'llm-code:%' AND EXISTS (SELECT 1 FROM results f"                \
  "      WHERE f.config_id = r.config_id AND f.recipe_id = r.recipe_id AND f.device_id = r.device_id"\
  "        AND f.status NOT IN ('ok', 'skipped', 'not_recorded'))))"                           \
  " SELECT rc.name AS recipe, rc.source_hash, p.name AS problem, p.hash AS problem_hash,"      \
  "  p.dims_json AS problem_dims_json, d.name AS device, d.arch, c.hash AS config_hash,"       \
  "  c.params_json, r.median_ns, r.min_ns, r.max_ns, r.stddev_ns, r.samples,"                 \
  "  r.registers, r.shared_bytes, r.id AS result_id, r.created_at,"                            \
  "  r.recipe_id, r.problem_id, r.device_id, c.origin AS config_origin,"                       \
  "  coalesce(r.error_text, '') LIKE 'halving: quick timing only%' AS quick_only,"             \
  "  " TIMING " AS timing, " TIMER " AS timer, " PROTOCOL " AS protocol,"                      \
  "  " WHY " AS selection"                                                                     \
  " FROM ranked k JOIN results r ON r.id = k.id"                                               \
  " JOIN recipes rc ON rc.id = r.recipe_id"                                                    \
  " JOIN problems p ON p.id = r.problem_id"                                                    \
  " JOIN devices d ON d.id = r.device_id"                                                      \
  " JOIN configs c ON c.id = r.config_id"                                                      \
  " WHERE k.rk = 1"                                                                            \
  " ORDER BY rc.name, p.name, d.name, r.recipe_id, r.problem_id, r.device_id"

/* The best query for a file of this schema. Migrations come in order (timing and timer 0004,
 * selections 0007, protocol 0009), so these four cover every file; a column the file lacks reads
 * as NULL ('burst' for timing: the only mode before it), and a timer '' (results older than the
 * column in a migrated file) as NULL too: unrecorded either way. */
#define BEST_TIMER "NULLIF(r.timer, '')"
static const char *best_sql(int has_timing, int has_selections, int has_protocol) {
  if (has_selections && has_protocol) return BEST_SQL("r.timing", BEST_TIMER, "r.protocol", SELECTED_ID, SELECTED_WHY);
  if (has_selections) return BEST_SQL("r.timing", BEST_TIMER, "NULL", SELECTED_ID, SELECTED_WHY);
  if (has_timing) return BEST_SQL("r.timing", BEST_TIMER, "NULL", "NULL", "NULL");
  return BEST_SQL("'burst'", "NULL", "NULL", "NULL", "NULL");
}

int db_query_best_where(db_conn *db, const db_filter *f, json_t **rows, tune_err *err) {
  int rc = TUNE_OK, step = 0, has_timing = 0, has_selections = 0, has_protocol = 0;
  sqlite3_stmt *st = NULL, *counts = NULL;
  json_t *arr = NULL;
  if (!db || !rows) return tune_fail(err, TUNE_EINVAL, "db_query_best: NULL argument");
  *rows = NULL;
  if (f && f->status && strcmp(f->status, "ok"))
    return tune_fail(err, TUNE_EINVAL,
                     "db: best ranks verified (ok) results only: status=%s selects none",
                     f->status);
  if (!(arr = json_array())) return tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  DB_LOCK(db);
  if ((rc = db_results_have_column(db, "timing", &has_timing, err))) goto fail;
  if ((rc = db_results_have_column(db, "protocol", &has_protocol, err))) goto fail;
  if ((rc = has_table(db, "selections", &has_selections, err))) goto fail;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, best_sql(has_timing, has_selections, has_protocol), -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "SELECT status, count(*) FROM results"
      " WHERE recipe_id = ?1 AND problem_id = ?2 AND device_id = ?3"
      " GROUP BY status ORDER BY status",
      -1, &counts, NULL));
  if ((rc = bind_filter(db, st, f, err))) goto fail;
  for (;;) {
    SQL_STEP(db, err, st, step);
    if (step == SQLITE_DONE) break;
    json_t *row = NULL, *statuses = NULL;
    if ((rc = row_object(st, &row, err))) goto fail;
    int64_t recipe_id = sqlite3_column_int64(st, 18), problem_id = sqlite3_column_int64(st, 19),
            device_id = sqlite3_column_int64(st, 20);
    if ((rc = status_counts(db, counts, recipe_id, problem_id, device_id, &statuses, err))) {
      json_decref(row);
      goto fail;
    }
    if (json_object_set_new(row, "statuses", statuses) || json_array_append_new(arr, row)) {
      rc = tune_fail(err, TUNE_ENOMEM, "db: out of memory");
      goto fail;
    }
  }
  *rows = arr;
  arr = NULL;
fail:
  sqlite3_finalize(st);
  sqlite3_finalize(counts);
  json_decref(arr);
  DB_UNLOCK(db);
  return rc;
}

int db_query_best(db_conn *db, const char *recipe, const char *problem, json_t **rows,
                  tune_err *err) {
  db_filter f = {.recipe = recipe, .problem = problem};
  return db_query_best_where(db, &f, rows, err);
}

/* ---- list -------------------------------------------------------------- */

#define LIST_SQL(TIMING)                                                                       \
  "SELECT r.id, rc.name AS recipe, p.name AS problem, d.name AS device, c.params_json,"        \
  "  c.origin, r.status, r.median_ns, " TIMING " AS timing, r.registers, r.shared_bytes,"      \
  "  r.spill_stores, r.spill_loads,"                                                           \
  "  NULLIF(substr(r.error_text, 1, instr(r.error_text || char(10), char(10)) - 1), '')"       \
  "    AS error_text,"                                                                         \
  "  r.created_at"                                                                             \
  " FROM results r"                                                                            \
  " JOIN recipes rc ON rc.id = r.recipe_id"                                                    \
  " JOIN problems p ON p.id = r.problem_id"                                                    \
  " JOIN devices d ON d.id = r.device_id"                                                      \
  " JOIN configs c ON c.id = r.config_id"                                                      \
  " WHERE 1" FILTER_SQL(TIMING)                                                                \
  " ORDER BY rc.name, p.name, r.status <> 'ok', r.status, r.median_ns, r.id"                   \
  " LIMIT ?13"

int db_query_list_where(db_conn *db, const db_filter *f, int limit, json_t **rows,
                        tune_err *err) {
  int rc = TUNE_OK, has_timing = 0;
  sqlite3_stmt *st = NULL;
  json_t *arr = NULL;
  if (!db || !rows) return tune_fail(err, TUNE_EINVAL, "db_query_list: NULL argument");
  *rows = NULL;
  if (!(arr = json_array())) return tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  DB_LOCK(db);
  if ((rc = db_results_have_column(db, "timing", &has_timing, err))) goto fail;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, has_timing ? LIST_SQL("r.timing") : LIST_SQL("'burst'"),
                                      -1, &st, NULL));
  if ((rc = bind_filter(db, st, f, err))) goto fail;
  SQL_TRY(db, err, sqlite3_bind_int(st, FILTER_PARAMS + 1, limit > 0 ? limit : -1));
  if ((rc = db_rows_to_array(db, st, arr, err))) goto fail;
  *rows = arr;
  arr = NULL;
fail:
  sqlite3_finalize(st);
  json_decref(arr);
  DB_UNLOCK(db);
  return rc;
}

int db_query_list(db_conn *db, const char *recipe, const char *problem, const char *status,
                  int limit, json_t **rows, tune_err *err) {
  db_filter f = {.recipe = recipe, .problem = problem};
  if (rows) *rows = NULL;
  int rc = status ? db_filter_set(&f, "status", status, err) : TUNE_OK;
  return rc ? rc : db_query_list_where(db, &f, limit, rows, err);
}

/* ---- show -------------------------------------------------------------- */

/* The single row of sql bound to one int64 (key NULL) or one text (key);
 * *out is JSON null when there is none. */
static int one_row(db_conn *db, const char *sql, int64_t id, const char *key, json_t **out,
                   tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  *out = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL));
  if (key) SQL_TRY(db, err, sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC));
  else SQL_TRY(db, err, sqlite3_bind_int64(st, 1, id));
  SQL_STEP(db, err, st, step);
  if (step == SQLITE_ROW) rc = row_object(st, out, err);
  else *out = json_null();
fail:
  sqlite3_finalize(st);
  return rc;
}

static int64_t get_int(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

int db_query_show(db_conn *db, int64_t result_id, json_t **obj, tune_err *err) {
  int rc = TUNE_OK;
  json_t *res = NULL, *part = NULL;
  if (!db || !obj) return tune_fail(err, TUNE_EINVAL, "db_query_show: NULL argument");
  *obj = NULL;
  DB_LOCK(db);
  if ((rc = one_row(db, "SELECT * FROM results WHERE id = ?1", result_id, NULL, &res, err)))
    goto fail;
  if (json_is_null(res)) {
    rc = tune_fail(err, TUNE_ENOTFOUND, "db: no result %lld", (long long)result_id);
    goto fail;
  }
  static const struct {
    const char *name, *id_col, *sql;
  } parts[] = {
      {"recipe", "recipe_id",
       "SELECT id, name, source_hash, path, created_at FROM recipes WHERE id = ?1"},
      {"problem", "problem_id",
       "SELECT id, recipe_name, name, hash, dims_json, created_at FROM problems WHERE id = ?1"},
      {"config", "config_id",
       "SELECT id, recipe_name, hash, params_json, origin, created_at FROM configs"
       " WHERE id = ?1"},
      {"device", "device_id", "SELECT * FROM devices WHERE id = ?1"},
      {"run", "run_id", "SELECT * FROM runs WHERE id = ?1"},
  };
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    if ((rc = one_row(db, parts[i].sql, get_int(res, parts[i].id_col), NULL, &part, err)))
      goto fail;
    if (json_object_set_new(res, parts[i].name, part)) goto nomem;
    part = NULL;
  }
  /* a config proposed by an LLM proposer (origin "llm:<proposal id>"), or a code
     proposal's variant of the template (origin "llm-code:<proposal id>") */
  const char *origin = json_string_value(json_object_get(json_object_get(res, "config"), "origin"));
  const char *pid = !origin ? NULL : !strncmp(origin, "llm:", 4) ? origin + 4
                                    : !strncmp(origin, "llm-code:", 9) ? origin + 9 : NULL;
  if (pid) {
    rc = one_row(db,
                 "SELECT id, run_id, problem_id, command, request_hash, response_hash, kind, region,"
                 " values_json, code, rationale, status, reason, created_at FROM proposals"
                 " WHERE id = ?1",
                 strtoll(pid, NULL, 10), NULL, &part, err);
    if (rc) goto fail;
    if (json_object_set_new(res, "proposal", part)) goto nomem;
    part = NULL;
  }
  const char *key = json_string_value(json_object_get(res, "binary_key"));
  if (key) {
    rc = one_row(db,
                 "SELECT key, arch, nvrtc_version, options, ok, lowered_name, registers,"
                 " shared_bytes, local_bytes, spill_stores, spill_loads, compile_ms,"
                 " length(cubin) AS cubin_bytes, length(ptx) AS ptx_bytes, log, created_at"
                 " FROM binaries WHERE key = ?1",
                 0, key, &part, err);
    if (rc) goto fail;
  } else {
    part = json_null();
  }
  if (json_object_set_new(res, "binary", part)) goto nomem;
  part = NULL;
  *obj = res;
  res = NULL;
  goto fail;
nomem:
  rc = tune_fail(err, TUNE_ENOMEM, "db: out of memory");
fail:
  json_decref(res);
  DB_UNLOCK(db);
  return rc;
}

/* ---- provenance -------------------------------------------------------- */

int db_query_provenance(db_conn *db, const char *recipe, json_t **rows, tune_err *err) {
  int rc = TUNE_OK;
  sqlite3_stmt *st = NULL;
  json_t *arr = NULL;
  if (!db || !rows) return tune_fail(err, TUNE_EINVAL, "db_query_provenance: NULL argument");
  *rows = NULL;
  if (!(arr = json_array())) return tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "SELECT rc.name AS recipe, d.id AS device_id, d.name AS device, d.arch, d.uuid,"
      "  d.driver, d.cuda, count(*) AS results, sum(r.status = 'ok') AS ok,"
      "  min(r.created_at) AS first_at, max(r.created_at) AS last_at,"
      "  json_group_array(DISTINCT ru.tool_version) FILTER (WHERE ru.tool_version IS NOT NULL)"
      "    AS tool_versions_json,"
      "  json_group_array(DISTINCT ru.backend) FILTER (WHERE ru.backend IS NOT NULL)"
      "    AS backends_json"
      " FROM results r"
      " JOIN recipes rc ON rc.id = r.recipe_id"
      " JOIN devices d ON d.id = r.device_id"
      " LEFT JOIN runs ru ON ru.id = r.run_id"
      " WHERE d.kind = 'gpu' AND (?1 IS NULL OR rc.name = ?1)"
      " GROUP BY rc.name, d.id"
      " ORDER BY rc.name, d.name, d.id",
      -1, &st, NULL));
  SQL_TRY(db, err, bind_opt(st, 1, recipe));
  if ((rc = db_rows_to_array(db, st, arr, err))) goto fail;
  *rows = arr;
  arr = NULL;
fail:
  sqlite3_finalize(st);
  json_decref(arr);
  DB_UNLOCK(db);
  return rc;
}
