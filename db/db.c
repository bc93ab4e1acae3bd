/* db.c: the connection, identity upserts, runs, results, the compile cache
 * and the replay lookup. Every statement here is cached on the connection
 * (db_stmt) and reset before the function returns, on every path. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "db_identity.h"
#include "db_int.h"

/* ---- statuses ---------------------------------------------------------- */

static const char *const status_names[DB_STATUS_COUNT] = {
    "ok", "wrong", "compile_error", "launch_error", "crash",
    "timeout", "skipped", "not_recorded", "suspicious"};

const char *db_status_name(db_status s) {
  return ((int)s >= 0 && (int)s < DB_STATUS_COUNT) ? status_names[s] : "?";
}

int db_status_parse(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < DB_STATUS_COUNT; i++)
    if (strcmp(name, status_names[i]) == 0) return i;
  return -1;
}

/* ---- errors, faults, statement cache ------------------------------------ */

void db_fault_set(db_conn *db, int n) {
  db->fault_in = n > 0 ? n : 0;
  db->fault_now = 0;
}

int db_sql_fail(db_conn *db, tune_err *err, int sql_rc, const char *call, sqlite3_stmt *st,
                const char *file, int line) {
  int code = TUNE_ESQL;
  int prim = sql_rc & 0xff;
  if (prim == SQLITE_NOMEM) code = TUNE_ENOMEM;
  else if (prim == SQLITE_CANTOPEN) code = TUNE_EIO;
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  const char *what = db->fault_now ? "injected fault" : sqlite3_errmsg(db->h);
  db->fault_now = 0;
  const char *sql = st ? sqlite3_sql(st) : NULL;
  /* SQLite lets one process write at a time; the usual holder past the timeout is a tune that is
     stopped (Ctrl-Z) or hung in the middle of a write */
  char hint[128] = "";
  if (prim == SQLITE_BUSY)
    snprintf(hint, sizeof hint, "; another process has held the write lock for over %d s"
             " (a tune stopped with Ctrl-Z, or hung?)", DB_BUSY_TIMEOUT_MS / 1000);
  if (sql)
    return tune_fail(err, code, "db %s: %s%s (%s:%d: %s [%.160s]) (%d)", db->path, what, hint, base, line, call,
                     sql, sql_rc);
  return tune_fail(err, code, "db %s: %s%s (%s:%d: %s) (%d)", db->path, what, hint, base, line, call, sql_rc);
}

int db_stmt(db_conn *db, int id, const char *sql, sqlite3_stmt **out, tune_err *err) {
  int rc = TUNE_OK;
  TUNE_ASSERT(id >= 0 && id < DB_ST_COUNT);
  *out = NULL;
  if (!db->st[id])
    SQL_TRY(db, err, sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &db->st[id],
                                        NULL));
  *out = db->st[id];
fail:
  return rc;
}

/* Binds a fixed-size struct string (NUL-terminated within cap, or cut at cap). */
static int bind_fixed(sqlite3_stmt *st, int i, const char *s, size_t cap) {
  return sqlite3_bind_text(st, i, s, (int)strnlen(s, cap), SQLITE_STATIC);
}

/* Binds a C string; NULL binds "". */
static int bind_str(sqlite3_stmt *st, int i, const char *s) {
  return sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_STATIC);
}

/* A REAL column; NULL (how SQLite stores NaN) reads back as NaN. */
static double col_double(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static void col_copy(sqlite3_stmt *st, int i, char *dst, size_t cap) {
  db_copy(dst, cap, (const char *)sqlite3_column_text(st, i));
}

/* ---- connection -------------------------------------------------------- */

/* Opens db->h; on failure fills err (the handle, if any, is left for db_close). */
static int open_handle(db_conn *db, const char *name, int flags, tune_err *err) {
  int orc = sqlite3_open_v2(name, &db->h, flags, NULL);
  if (orc == SQLITE_OK) return TUNE_OK;
  int sys = db->h ? sqlite3_system_errno(db->h) : 0;
  int code = (orc & 0xff) == SQLITE_NOMEM ? TUNE_ENOMEM
             : (orc & 0xff) == SQLITE_CANTOPEN ? TUNE_EIO : TUNE_ESQL;
  return tune_fail(err, code, "db: %s: cannot open%s: %s%s%s%s", db->path,
                   db->readonly ? " read-only" : "",
                   db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(orc), sys ? " (" : "",
                   sys ? strerror(sys) : "", sys ? ")" : "");
}

/* A read-only open of a WAL file fails on first read when the -shm file is
 * missing and cannot be created (a recorded database in a read-only folder).
 * When there is no -wal file either, everything is in the main file and it
 * can be read as immutable. Returns 1 when that is the situation. */
static int needs_immutable(db_conn *db) {
  int rc = sqlite3_exec(db->h, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL);
  if (rc == SQLITE_OK) return 0;
  rc = sqlite3_extended_errcode(db->h);
  /* READONLY_CANTINIT / READONLY_DIRECTORY: the -shm cannot be made */
  if ((rc & 0xff) != SQLITE_READONLY && (rc & 0xff) != SQLITE_CANTOPEN) return 0;
  char wal[sizeof db->path + 8];
  struct stat sb;
  snprintf(wal, sizeof wal, "%s-wal", db->path);
  return stat(wal, &sb) != 0 && errno == ENOENT;
}

/* "file:" URI for path with immutable=1; NULL when out of memory. */
static char *immutable_uri(const char *path) {
  size_t n = strlen(path);
  char *uri = malloc(3 * n + 32);
  if (!uri) return NULL;
  char *o = uri + sprintf(uri, "file:");
  for (const char *p = path; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        strchr("/._-~", c))
      *o++ = (char)c;
    else
      o += sprintf(o, "%%%02X", c);
  }
  strcpy(o, "?immutable=1");
  return uri;
}

/* WAL mode, which the file keeps. Switching needs the file to itself, and SQLite answers a
 * switch that meets another connection's lock with SQLITE_BUSY at once, without the busy
 * handler: several processes creating one database together retry here. */
static int set_wal(db_conn *db, tune_err *err) {
  int rc = SQLITE_BUSY;
  for (int waited = 0; (rc & 0xff) == SQLITE_BUSY && waited <= DB_BUSY_TIMEOUT_MS; waited += 20) {
    rc = db_fault_hit(db) ? SQLITE_IOERR : sqlite3_exec(db->h, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
    if ((rc & 0xff) == SQLITE_BUSY) sqlite3_sleep(20);
  }
  if (rc != SQLITE_OK)
    return db_sql_fail(db, err, rc, "sqlite3_exec(\"PRAGMA journal_mode = WAL\")", NULL, __FILE__, __LINE__);
  return TUNE_OK;
}

int db_open(const char *path, int readonly, db_conn **out, tune_err *err) {
  int rc = TUNE_OK;
  db_conn *db = NULL;
  if (!out) return tune_fail(err, TUNE_EINVAL, "db_open: out is NULL");
  *out = NULL;
  if (!path || !*path) return tune_fail(err, TUNE_EINVAL, "db_open: empty path");
  if (readonly) {
    /* SQLITE_OPEN_READONLY never creates; say so plainly before SQLite does. */
    struct stat sb;
    if (stat(path, &sb) != 0)
      return tune_fail(err, TUNE_EIO, "db: %s: cannot open read-only: %s", path,
                       strerror(errno));
  }
  db = calloc(1, sizeof *db);
  if (!db) return tune_fail(err, TUNE_ENOMEM, "db_open: out of memory");
  db->readonly = readonly ? 1 : 0;
  db_copy(db->path, sizeof db->path, path);

  int flags = readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if ((rc = open_handle(db, path, flags, err))) goto fail;
  SQL_TRY(db, err, sqlite3_extended_result_codes(db->h, 1));
  SQL_TRY(db, err, sqlite3_busy_timeout(db->h, DB_BUSY_TIMEOUT_MS));
  if (readonly && needs_immutable(db)) {
    char *uri = immutable_uri(path);
    if (!uri) {
      rc = tune_fail(err, TUNE_ENOMEM, "db_open: out of memory");
      goto fail;
    }
    sqlite3_close_v2(db->h);
    db->h = NULL;
    rc = open_handle(db, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, err);
    free(uri);
    if (rc) goto fail;
    SQL_TRY(db, err, sqlite3_extended_result_codes(db->h, 1));
  }
  if (!readonly) {
    if ((rc = set_wal(db, err))) goto fail;
    SQL_EXEC(db, err, "PRAGMA synchronous = NORMAL");
  }
  SQL_EXEC(db, err, "PRAGMA foreign_keys = ON");
  if ((rc = db_schema_prepare(db, err))) goto fail;
  db->results_honest = 1; /* migrated, unless read-only */
  if (readonly && (rc = db_results_have_column(db, "honest_rel_l2", &db->results_honest, err))) goto fail;
  *out = db;
  db = NULL;
fail:
  db_close(db);
  return rc;
}

void db_close(db_conn *db) {
  if (!db) return;
  for (int i = 0; i < DB_ST_COUNT; i++) sqlite3_finalize(db->st[i]);
  sqlite3_close_v2(db->h);
  free(db);
}

/* ---- identities -------------------------------------------------------- */

int db_device_put(db_conn *db, const db_device *d, int64_t *id, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !d || !id) return tune_fail(err, TUNE_EINVAL, "db_device_put: NULL argument");
  if (!d->kind[0] || !d->name[0])
    return tune_fail(err, TUNE_EINVAL, "db_device_put: kind and name are required");
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_DEVICE_PUT,
               "INSERT INTO devices (kind, name, arch, cc_major, cc_minor, sm_count,"
               " sm_clock_khz, mem_clock_khz, mem_bus_bits, mem_bytes, l2_bytes,"
               " smem_per_block_optin, driver, cuda, uuid)"
               " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
               " ON CONFLICT (kind, name, arch, uuid) DO UPDATE SET"
               " sm_clock_khz = excluded.sm_clock_khz, mem_clock_khz = excluded.mem_clock_khz,"
               " driver = excluded.driver, cuda = excluded.cuda, updated_at = " DB_NOW
               " RETURNING id",
               &st, err);
  if (rc) goto fail;
  SQL_TRY(db, err, bind_fixed(st, 1, d->kind, sizeof d->kind));
  SQL_TRY(db, err, bind_fixed(st, 2, d->name, sizeof d->name));
  SQL_TRY(db, err, bind_fixed(st, 3, d->arch, sizeof d->arch));
  SQL_TRY(db, err, sqlite3_bind_int(st, 4, d->cc_major));
  SQL_TRY(db, err, sqlite3_bind_int(st, 5, d->cc_minor));
  SQL_TRY(db, err, sqlite3_bind_int(st, 6, d->sm_count));
  SQL_TRY(db, err, sqlite3_bind_int(st, 7, d->sm_clock_khz));
  SQL_TRY(db, err, sqlite3_bind_int(st, 8, d->mem_clock_khz));
  SQL_TRY(db, err, sqlite3_bind_int(st, 9, d->mem_bus_bits));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 10, d->mem_bytes));
  SQL_TRY(db, err, sqlite3_bind_int(st, 11, d->l2_bytes));
  SQL_TRY(db, err, sqlite3_bind_int(st, 12, d->smem_per_block_optin));
  SQL_TRY(db, err, bind_fixed(st, 13, d->driver, sizeof d->driver));
  SQL_TRY(db, err, bind_fixed(st, 14, d->cuda, sizeof d->cuda));
  SQL_TRY(db, err, bind_fixed(st, 15, d->uuid, sizeof d->uuid));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_EINTERNAL, "db_device_put: upsert of %s returned no id", d->name);
    goto fail;
  }
  *id = sqlite3_column_int64(st, 0);
  SQL_STEP(db, err, st, step);
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

/* SELECT id by two text keys; *found says whether a row came back. */
static int get_id2(db_conn *db, int sid, const char *sql, const char *k1, const char *k2,
                   int64_t *id, int *found, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  *found = 0;
  if ((rc = db_stmt(db, sid, sql, &st, err))) goto fail;
  SQL_TRY(db, err, bind_str(st, 1, k1));
  SQL_TRY(db, err, bind_str(st, 2, k2));
  SQL_STEP(db, err, st, step);
  if (step == SQLITE_ROW) {
    *id = sqlite3_column_int64(st, 0);
    *found = 1;
  }
fail:
  db_stmt_done(st);
  return rc;
}

/* Idempotent insert of an identity row whose columns are all text: look the
 * identity (k1, k2) up; when absent INSERT ... ON CONFLICT DO NOTHING the
 * values and look it up again. Reading first keeps a resumed run from taking
 * the write lock for rows that exist. */
static int put_text_row(db_conn *db, int get_sid, const char *get_sql, int ins_sid,
                        const char *ins_sql, const char *const *vals, int n_vals,
                        const char *what, const char *k1, const char *k2, int64_t *id,
                        tune_err *err) {
  int rc = TUNE_OK, step = 0, found = 0;
  sqlite3_stmt *st = NULL;
  DB_LOCK(db);
  if ((rc = get_id2(db, get_sid, get_sql, k1, k2, id, &found, err)) || found) goto fail;
  if ((rc = db_stmt(db, ins_sid, ins_sql, &st, err))) goto fail;
  for (int i = 0; i < n_vals; i++) SQL_TRY(db, err, bind_str(st, i + 1, vals[i]));
  SQL_STEP(db, err, st, step);
  db_stmt_done(st);
  st = NULL;
  if ((rc = get_id2(db, get_sid, get_sql, k1, k2, id, &found, err))) goto fail;
  if (!found)
    rc = tune_fail(err, TUNE_EINTERNAL, "db: %s (%s, %s) is missing right after its insert",
                   what, k1, k2);
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

int db_recipe_put(db_conn *db, const char *name, const char *source_hash, const char *path,
                  const char *source, int64_t *id, tune_err *err) {
  if (!db || !id) return tune_fail(err, TUNE_EINVAL, "db_recipe_put: NULL argument");
  if (!name || !*name || !source_hash || !*source_hash)
    return tune_fail(err, TUNE_EINVAL, "db_recipe_put: name and source_hash are required");
  const char *vals[] = {name, source_hash, path, source};
  return put_text_row(
      db, DB_ST_RECIPE_GET, "SELECT id FROM recipes WHERE name = ?1 AND source_hash = ?2",
      DB_ST_RECIPE_INS,
      "INSERT INTO recipes (name, source_hash, path, source) VALUES (?1, ?2, ?3, ?4)"
      " ON CONFLICT (name, source_hash) DO NOTHING",
      vals, 4, "recipe", name, source_hash, id, err);
}

int db_recipe_set_code_hash(db_conn *db, int64_t id, const char *code_hash, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !code_hash) return tune_fail(err, TUNE_EINVAL, "db_recipe_set_code_hash: NULL argument");
  if (!*code_hash) return TUNE_OK;
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, "UPDATE recipes SET code_hash = ?2 WHERE id = ?1 AND code_hash = ''",
                                      -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 2, code_hash, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

int db_recipe_code_hash(db_conn *db, const char *name, const char *source_hash, char code_hash[17], tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  code_hash[0] = 0;
  DB_LOCK(db);
  /* recorded files of older schemas have no such column: then nothing was recorded */
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, "SELECT 1 FROM pragma_table_info('recipes') WHERE name = 'code_hash'",
                                      -1, &st, NULL));
  SQL_STEP(db, err, st, step);
  sqlite3_finalize(st);
  st = NULL;
  if (step != SQLITE_ROW) goto fail;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, "SELECT code_hash FROM recipes WHERE name = ?1 AND source_hash = ?2",
                                      -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 2, source_hash, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (step == SQLITE_ROW) col_copy(st, 0, code_hash, 17);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

int db_problem_put(db_conn *db, const char *recipe_name, const char *name, const char *hash,
                   const char *dims_json, int64_t *id, tune_err *err) {
  if (!db || !id) return tune_fail(err, TUNE_EINVAL, "db_problem_put: NULL argument");
  if (!recipe_name || !*recipe_name || !hash || !*hash)
    return tune_fail(err, TUNE_EINVAL, "db_problem_put: recipe_name and hash are required");
  const char *vals[] = {recipe_name, name, hash, dims_json ? dims_json : "{}"};
  return put_text_row(
      db, DB_ST_PROBLEM_GET, "SELECT id FROM problems WHERE recipe_name = ?1 AND hash = ?2",
      DB_ST_PROBLEM_INS,
      "INSERT INTO problems (recipe_name, name, hash, dims_json) VALUES (?1, ?2, ?3, ?4)"
      " ON CONFLICT (recipe_name, hash) DO NOTHING",
      vals, 4, "problem", recipe_name, hash, id, err);
}

int db_config_put(db_conn *db, const char *recipe_name, const char *hash,
                  const char *params_json, const char *origin, int64_t *id, tune_err *err) {
  if (!db || !id) return tune_fail(err, TUNE_EINVAL, "db_config_put: NULL argument");
  if (!recipe_name || !*recipe_name || !hash || !*hash)
    return tune_fail(err, TUNE_EINVAL, "db_config_put: recipe_name and hash are required");
  const char *vals[] = {recipe_name, hash, params_json ? params_json : "{}", origin};
  return put_text_row(
      db, DB_ST_CONFIG_GET, "SELECT id FROM configs WHERE recipe_name = ?1 AND hash = ?2",
      DB_ST_CONFIG_INS,
      "INSERT INTO configs (recipe_name, hash, params_json, origin) VALUES (?1, ?2, ?3, ?4)"
      " ON CONFLICT (recipe_name, hash) DO NOTHING",
      vals, 4, "config", recipe_name, hash, id, err);
}

/* ---- runs -------------------------------------------------------------- */

int db_run_begin(db_conn *db, const db_run *r, int64_t *id, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !r || !id) return tune_fail(err, TUNE_EINVAL, "db_run_begin: NULL argument");
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_RUN_BEGIN,
               "INSERT INTO runs (recipe_id, device_id, backend, strategy, budget, budget_s,"
               " seed, tool_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
               &st, err);
  if (rc) goto fail;
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, r->recipe_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, r->device_id));
  SQL_TRY(db, err, bind_fixed(st, 3, r->backend, sizeof r->backend));
  SQL_TRY(db, err, bind_fixed(st, 4, r->strategy, sizeof r->strategy));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 5, r->budget));
  SQL_TRY(db, err, sqlite3_bind_double(st, 6, r->budget_s));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 7, db_u2i(r->seed)));
  SQL_TRY(db, err, bind_fixed(st, 8, r->tool_version, sizeof r->tool_version));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_EINTERNAL, "db_run_begin: insert returned no id");
    goto fail;
  }
  *id = sqlite3_column_int64(st, 0);
  SQL_STEP(db, err, st, step);
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

int db_run_end(db_conn *db, int64_t run_id, const char *status, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !status) return tune_fail(err, TUNE_EINVAL, "db_run_end: NULL argument");
  if (strcmp(status, "done") && strcmp(status, "interrupted") && strcmp(status, "failed"))
    return tune_fail(err, TUNE_EINVAL,
                     "db_run_end: status '%s' is not one of done, interrupted, failed", status);
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_RUN_END,
               "UPDATE runs SET status = ?2, ended_at = " DB_NOW " WHERE id = ?1", &st, err);
  if (rc) goto fail;
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, run_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 2, status, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (sqlite3_changes(db->h) == 0)
    rc = tune_fail(err, TUNE_ENOTFOUND, "db_run_end: no run %lld", (long long)run_id);
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

int db_runs_running(db_conn *db, db_running_run **out, int *n, tune_err *err) {
  int rc = TUNE_OK, step = 0, cap = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !out || !n) return tune_fail(err, TUNE_EINVAL, "db_runs_running: NULL argument");
  *out = NULL;
  *n = 0;
  DB_LOCK(db);
  /* the latest sign of life of a run: its start or its newest result */
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
          "SELECT r.id, (julianday('now') - julianday(max(r.started_at,"
          " coalesce((SELECT max(x.created_at) FROM results x WHERE x.run_id = r.id), '')))) * 86400.0"
          " FROM runs r WHERE r.status = 'running' ORDER BY r.id", -1, &st, NULL));
  for (;;) {
    SQL_STEP(db, err, st, step);
    if (step != SQLITE_ROW) break;
    if (*n == cap) {
      db_running_run *grown = realloc(*out, (size_t)(cap = cap ? 2 * cap : 8) * sizeof **out);
      if (!grown) { rc = tune_fail(err, TUNE_ENOMEM, "db %s: out of memory", db->path); goto fail; }
      *out = grown;
    }
    (*out)[*n].id = sqlite3_column_int64(st, 0);
    (*out)[(*n)++].idle_s = sqlite3_column_double(st, 1);
  }
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  if (rc) { free(*out); *out = NULL; *n = 0; }
  return rc;
}

int db_run_mark_interrupted(db_conn *db, int64_t run_id, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db) return tune_fail(err, TUNE_EINVAL, "db_run_mark_interrupted: NULL argument");
  DB_LOCK(db);
  /* only a run still running: one that ended meanwhile keeps its own status */
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
          "UPDATE runs SET status = 'interrupted', ended_at = coalesce((SELECT max(x.created_at) FROM results x"
          " WHERE x.run_id = runs.id), started_at) WHERE id = ?1 AND status = 'running'", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, run_id));
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

/* ---- proposals (tune run --strategy llm) ------------------------------ */

static int bind_id_or_null(sqlite3_stmt *st, int i, int64_t id) {
  return id > 0 ? sqlite3_bind_int64(st, i, id) : sqlite3_bind_null(st, i);
}

static int bind_text_or_null(sqlite3_stmt *st, int i, const char *s) {
  return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

int db_proposal_put(db_conn *db, const db_proposal *p, int64_t *id, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !p || !id || !p->kind || !p->status)
    return tune_fail(err, TUNE_EINVAL, "db_proposal_put: NULL argument");
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "INSERT INTO proposals (run_id, problem_id, command, request_hash, response_hash, kind,"
      " region, values_json, code, rationale, status, reason)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING id",
      -1, &st, NULL));
  SQL_TRY(db, err, bind_id_or_null(st, 1, p->run_id));
  SQL_TRY(db, err, bind_id_or_null(st, 2, p->problem_id));
  SQL_TRY(db, err, bind_str(st, 3, p->command));
  SQL_TRY(db, err, bind_str(st, 4, p->request_hash));
  SQL_TRY(db, err, bind_str(st, 5, p->response_hash));
  SQL_TRY(db, err, bind_str(st, 6, p->kind));
  SQL_TRY(db, err, bind_str(st, 7, p->region));
  SQL_TRY(db, err, bind_text_or_null(st, 8, p->values_json));
  SQL_TRY(db, err, bind_text_or_null(st, 9, p->code));
  SQL_TRY(db, err, bind_str(st, 10, p->rationale));
  SQL_TRY(db, err, bind_str(st, 11, p->status));
  SQL_TRY(db, err, bind_str(st, 12, p->reason));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_EINTERNAL, "db_proposal_put: insert returned no id");
    goto fail;
  }
  *id = sqlite3_column_int64(st, 0);
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

int db_proposal_update(db_conn *db, int64_t id, const char *status, const char *reason, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !status) return tune_fail(err, TUNE_EINVAL, "db_proposal_update: NULL argument");
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, "UPDATE proposals SET status = ?2, reason = ?3 WHERE id = ?1",
                                      -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, id));
  SQL_TRY(db, err, bind_str(st, 2, status));
  SQL_TRY(db, err, bind_str(st, 3, reason));
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}

/* ---- results ----------------------------------------------------------- */

/* The result columns, in db_result order, as read by read_result; honest is the honest error's
 * column, or NULL on a read-only file of a schema before 0010 (db_conn.results_honest). */
#define RESULT_COLS_WITH(honest)                                                           \
  "r.id, r.run_id, r.recipe_id, r.device_id, r.config_id, r.problem_id, r.status,"         \
  " r.median_ns, r.min_ns, r.max_ns, r.stddev_ns, r.samples, r.registers, r.shared_bytes," \
  " r.dyn_shared_bytes, r.local_bytes, r.spill_stores, r.spill_loads, r.compile_ms,"       \
  " r.measure_ms, r.err_rel_l2, r.err_max_abs, " honest ", r.seed, r.binary_key,"          \
  " r.error_text, r.created_at"
#define RESULT_COLS RESULT_COLS_WITH("r.honest_rel_l2")
#define RESULT_NCOLS 27

#define DEVICE_COLS                                                                      \
  "d.kind, d.name, d.arch, d.cc_major, d.cc_minor, d.sm_count, d.sm_clock_khz,"          \
  " d.mem_clock_khz, d.mem_bus_bits, d.mem_bytes, d.l2_bytes, d.smem_per_block_optin,"   \
  " d.driver, d.cuda, d.uuid"

/* Fills out from RESULT_COLS starting at column 0. */
static int read_result(sqlite3_stmt *st, db_result *out, tune_err *err) {
  memset(out, 0, sizeof *out);
  int c = 0;
  out->id = sqlite3_column_int64(st, c++);
  out->run_id = sqlite3_column_int64(st, c++);
  out->recipe_id = sqlite3_column_int64(st, c++);
  out->device_id = sqlite3_column_int64(st, c++);
  out->config_id = sqlite3_column_int64(st, c++);
  out->problem_id = sqlite3_column_int64(st, c++);
  const char *status = (const char *)sqlite3_column_text(st, c++);
  int s = db_status_parse(status);
  if (s < 0)
    return tune_fail(err, TUNE_EINTERNAL, "db: result %lld has unknown status '%s'",
                     (long long)out->id, status ? status : "(null)");
  out->status = (db_status)s;
  out->median_ns = col_double(st, c++);
  out->min_ns = col_double(st, c++);
  out->max_ns = col_double(st, c++);
  out->stddev_ns = col_double(st, c++);
  out->samples = sqlite3_column_int(st, c++);
  out->registers = sqlite3_column_int(st, c++);
  out->shared_bytes = sqlite3_column_int(st, c++);
  out->dyn_shared_bytes = sqlite3_column_int(st, c++);
  out->local_bytes = sqlite3_column_int(st, c++);
  out->spill_stores = sqlite3_column_int(st, c++);
  out->spill_loads = sqlite3_column_int(st, c++);
  out->compile_ms = col_double(st, c++);
  out->measure_ms = col_double(st, c++);
  out->err_rel_l2 = col_double(st, c++);
  out->err_max_abs = col_double(st, c++);
  out->honest_rel_l2 = sqlite3_column_type(st, c) == SQLITE_NULL ? -1 : sqlite3_column_double(st, c);
  c++;
  out->seed = db_i2u(sqlite3_column_int64(st, c++));
  col_copy(st, c++, out->binary_key, sizeof out->binary_key);
  col_copy(st, c++, out->error_text, sizeof out->error_text);
  col_copy(st, c++, out->created_at, sizeof out->created_at);
  TUNE_ASSERT(c == RESULT_NCOLS);
  return TUNE_OK;
}

/* Fills dev from DEVICE_COLS starting at column c. */
static void read_device(sqlite3_stmt *st, int c, db_device *dev) {
  memset(dev, 0, sizeof *dev);
  col_copy(st, c++, dev->kind, sizeof dev->kind);
  col_copy(st, c++, dev->name, sizeof dev->name);
  col_copy(st, c++, dev->arch, sizeof dev->arch);
  dev->cc_major = sqlite3_column_int(st, c++);
  dev->cc_minor = sqlite3_column_int(st, c++);
  dev->sm_count = sqlite3_column_int(st, c++);
  dev->sm_clock_khz = sqlite3_column_int(st, c++);
  dev->mem_clock_khz = sqlite3_column_int(st, c++);
  dev->mem_bus_bits = sqlite3_column_int(st, c++);
  dev->mem_bytes = sqlite3_column_int64(st, c++);
  dev->l2_bytes = sqlite3_column_int(st, c++);
  dev->smem_per_block_optin = sqlite3_column_int(st, c++);
  col_copy(st, c++, dev->driver, sizeof dev->driver);
  col_copy(st, c++, dev->cuda, sizeof dev->cuda);
  col_copy(st, c++, dev->uuid, sizeof dev->uuid);
}

/* The columns db_result_put writes, and their parameters (bind_result). */
#define RESULT_PUT_COLS                                                                    \
  "run_id, recipe_id, device_id, config_id, problem_id, status, median_ns, min_ns, max_ns," \
  " stddev_ns, samples, registers, shared_bytes, dyn_shared_bytes, local_bytes,"           \
  " spill_stores, spill_loads, compile_ms, measure_ms, err_rel_l2, err_max_abs, seed,"     \
  " binary_key, error_text, sm_mhz, mem_mhz, clock_reasons, timing, timer,"                \
  " event_median_ns, rel_ci, power_w, gpu, protocol, honest_rel_l2"
#define RESULT_PUT_PARAMS                                                                  \
  "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,"  \
  " ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35"

/* Binds r to ?1..?35 of RESULT_PUT_PARAMS. */
static int bind_result(db_conn *db, sqlite3_stmt *st, const db_result *r, tune_err *err) {
  int rc = TUNE_OK;
  if (r->run_id > 0) SQL_TRY(db, err, sqlite3_bind_int64(st, 1, r->run_id));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 1));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, r->recipe_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 3, r->device_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 4, r->config_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 5, r->problem_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 6, status_names[r->status], -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_double(st, 7, r->median_ns));
  SQL_TRY(db, err, sqlite3_bind_double(st, 8, r->min_ns));
  SQL_TRY(db, err, sqlite3_bind_double(st, 9, r->max_ns));
  SQL_TRY(db, err, sqlite3_bind_double(st, 10, r->stddev_ns));
  SQL_TRY(db, err, sqlite3_bind_int(st, 11, r->samples));
  SQL_TRY(db, err, sqlite3_bind_int(st, 12, r->registers));
  SQL_TRY(db, err, sqlite3_bind_int(st, 13, r->shared_bytes));
  SQL_TRY(db, err, sqlite3_bind_int(st, 14, r->dyn_shared_bytes));
  SQL_TRY(db, err, sqlite3_bind_int(st, 15, r->local_bytes));
  SQL_TRY(db, err, sqlite3_bind_int(st, 16, r->spill_stores));
  SQL_TRY(db, err, sqlite3_bind_int(st, 17, r->spill_loads));
  SQL_TRY(db, err, sqlite3_bind_double(st, 18, r->compile_ms));
  SQL_TRY(db, err, sqlite3_bind_double(st, 19, r->measure_ms));
  SQL_TRY(db, err, sqlite3_bind_double(st, 20, r->err_rel_l2));
  SQL_TRY(db, err, sqlite3_bind_double(st, 21, r->err_max_abs));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 22, db_u2i(r->seed)));
  if (r->binary_key[0]) SQL_TRY(db, err, bind_fixed(st, 23, r->binary_key, sizeof r->binary_key));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 23));
  if (r->error_text[0]) SQL_TRY(db, err, bind_fixed(st, 24, r->error_text, sizeof r->error_text));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 24));
  SQL_TRY(db, err, sqlite3_bind_int(st, 25, r->sm_mhz));
  SQL_TRY(db, err, sqlite3_bind_int(st, 26, r->mem_mhz));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 27, r->clock_reasons));
  SQL_TRY(db, err, sqlite3_bind_text(st, 28, db_result_timing(r), -1, SQLITE_TRANSIENT));
  SQL_TRY(db, err, bind_fixed(st, 29, r->timer, sizeof r->timer));
  if (r->event_median_ns > 0) SQL_TRY(db, err, sqlite3_bind_double(st, 30, r->event_median_ns));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 30));
  if (r->rel_ci > 0) SQL_TRY(db, err, sqlite3_bind_double(st, 31, r->rel_ci));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 31));
  SQL_TRY(db, err, sqlite3_bind_int(st, 32, r->power_w));
  SQL_TRY(db, err, bind_fixed(st, 33, r->gpu, sizeof r->gpu));
  SQL_TRY(db, err, sqlite3_bind_int(st, 34, db_result_protocol(r)));
  if (r->honest_rel_l2 > 0) SQL_TRY(db, err, sqlite3_bind_double(st, 35, r->honest_rel_l2));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 35));
fail:
  return rc;
}

/* Writes r as a new row (upgrade_id 0) or over row upgrade_id; *id and created_at get the row's. */
static int write_result(db_conn *db, const db_result *r, int64_t upgrade_id, int64_t *id, char *created_at,
                        size_t cap, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL, *own = NULL;
  if (!upgrade_id) {
    rc = db_stmt(db, DB_ST_RESULT_INS,
                 "INSERT INTO results (" RESULT_PUT_COLS ") VALUES (" RESULT_PUT_PARAMS ") RETURNING id, created_at",
                 &st, err);
    if (rc) goto fail;
  } else {
    /* an upgrade is rare (a compile-only row measured later): not worth a cached statement */
    SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
        "UPDATE results SET (" RESULT_PUT_COLS ") = (" RESULT_PUT_PARAMS "), created_at = " DB_NOW
        " WHERE id = ?36 RETURNING id, created_at", -1, &own, NULL));
    st = own;
    SQL_TRY(db, err, sqlite3_bind_int64(st, 36, upgrade_id));
  }
  if ((rc = bind_result(db, st, r, err))) goto fail;
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_EINTERNAL, "db %s: db_result_put: %s returned no id", db->path,
                   upgrade_id ? "update" : "insert");
    goto fail;
  }
  *id = sqlite3_column_int64(st, 0);
  col_copy(st, 1, created_at, cap);
  SQL_STEP(db, err, st, step); /* finish the statement before COMMIT */
fail:
  if (own) sqlite3_finalize(own);
  else db_stmt_done(st);
  return rc;
}

int db_result_put(db_conn *db, db_result *r, tune_err *err) {
  int rc = TUNE_OK, began = 0;
  int64_t id = 0;
  char created_at[sizeof r->created_at] = "";
  db_identity_row kept;
  if (!db || !r) return tune_fail(err, TUNE_EINVAL, "db_result_put: NULL argument");
  if ((int)r->status < 0 || (int)r->status >= DB_STATUS_COUNT)
    return tune_fail(err, TUNE_EINVAL, "db_result_put: bad status %d", (int)r->status);
  if (r->recipe_id <= 0 || r->device_id <= 0 || r->config_id <= 0 || r->problem_id <= 0)
    return tune_fail(err, TUNE_EINVAL,
                     "db_result_put: recipe_id, device_id, config_id and problem_id are required"
                     " (got %lld, %lld, %lld, %lld)",
                     (long long)r->recipe_id, (long long)r->device_id, (long long)r->config_id,
                     (long long)r->problem_id);
  DB_LOCK(db);
  /* the identity is looked up under the write lock, so two processes putting one identity at
     once see each other's row: the second one upgrades, re-times or keeps it */
  SQL_EXEC(db, err, "BEGIN IMMEDIATE");
  began = 1;
  if ((rc = db_identity_lookup(db, r, &kept, err))) goto fail;
  db_put_outcome put = db_identity_rule(kept.found, kept.status, r->status);
  if (put == DB_PUT_INSERTED || put == DB_PUT_UPGRADED) {
    if ((rc = write_result(db, r, put == DB_PUT_UPGRADED ? kept.id : 0, &id, created_at, sizeof created_at, err)))
      goto fail;
  } else {
    if (put == DB_PUT_RETIMED && (rc = db_identity_retime(db, kept.id, r, err))) goto fail;
    id = kept.id;
    db_copy(created_at, sizeof created_at, kept.created_at);
  }
  SQL_EXEC(db, err, "COMMIT");
  began = 0;
  r->id = id;
  r->put = put;
  memcpy(r->created_at, created_at, sizeof created_at);
fail:
  if (began && !sqlite3_get_autocommit(db->h)) sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
  DB_UNLOCK(db);
  return rc;
}

int db_result_find(db_conn *db, int64_t recipe_id, int64_t device_id, int64_t config_id,
                   int64_t problem_id, db_result *out, tune_err *err) {
  return db_result_find_timing(db, recipe_id, device_id, config_id, problem_id, NULL, out, err);
}

/* The latest result of (recipe source, device, config, problem) of the current protocol that is a
 * final answer, of timing mode timing (NULL: any); with compiled, a compile-only skip answers too. */
static int find_result(db_conn *db, int64_t recipe_id, int64_t device_id, int64_t config_id, int64_t problem_id,
                       const char *timing, int compiled, db_result *out, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !out) return tune_fail(err, TUNE_EINVAL, "db_result_find: NULL argument");
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_RESULT_FIND,
               "SELECT " RESULT_COLS " FROM results r"
               " WHERE r.recipe_id = ?1 AND r.device_id = ?2 AND r.config_id = ?3"
               " AND r.problem_id = ?4 AND (?5 IS NULL OR r.timing = ?5) AND r.protocol = ?6"
               " AND (r.status NOT IN ('skipped', 'not_recorded')"
               "      OR (?7 AND r.status = 'skipped' AND r.error_text = '" DB_REASON_COMPILE_ONLY "'))"
               " ORDER BY r.id DESC LIMIT 1",
               &st, err);
  if (rc) goto fail;
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, recipe_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 2, device_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 3, config_id));
  SQL_TRY(db, err, sqlite3_bind_int64(st, 4, problem_id));
  if (timing) SQL_TRY(db, err, sqlite3_bind_text(st, 5, timing, -1, SQLITE_STATIC));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 5));
  SQL_TRY(db, err, sqlite3_bind_int(st, 6, DB_MEASURE_PROTOCOL));
  SQL_TRY(db, err, sqlite3_bind_int(st, 7, compiled));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_ENOTFOUND,
                   "db: no %s%sresult for recipe %lld, device %lld, config %lld, problem %lld",
                   timing ? timing : "", timing ? " " : "", (long long)recipe_id, (long long)device_id,
                   (long long)config_id, (long long)problem_id);
    goto fail;
  }
  rc = read_result(st, out, err);
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

int db_result_find_timing(db_conn *db, int64_t recipe_id, int64_t device_id, int64_t config_id,
                          int64_t problem_id, const char *timing, db_result *out, tune_err *err) {
  return find_result(db, recipe_id, device_id, config_id, problem_id, timing, 0, out, err);
}

int db_result_find_compiled(db_conn *db, int64_t recipe_id, int64_t device_id, int64_t config_id,
                            int64_t problem_id, db_result *out, tune_err *err) {
  return find_result(db, recipe_id, device_id, config_id, problem_id, NULL, 1, out, err);
}

/* The latest recorded GPU answer for (recipe, config, problem), with its device (cols: the result's). */
#define REPLAY_FIND_SQL(cols)                                                              \
  "SELECT " cols ", " DEVICE_COLS " FROM configs c"                                          \
  " JOIN problems p ON p.recipe_name = c.recipe_name AND p.hash = ?3"                        \
  " JOIN results r ON r.config_id = c.id AND r.problem_id = p.id"                            \
  " JOIN recipes rc ON rc.id = r.recipe_id"                                                  \
  " JOIN devices d ON d.id = r.device_id"                                                    \
  " WHERE c.recipe_name = ?1 AND c.hash = ?2 AND rc.name = ?1 AND d.kind = 'gpu'"             \
  " AND r.status NOT IN ('skipped', 'not_recorded')"                                         \
  " ORDER BY r.id DESC LIMIT 1"

int db_replay_find(db_conn *db, const char *recipe_name, const char *config_hash,
                   const char *problem_hash, db_result *out, db_device *dev, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !recipe_name || !config_hash || !problem_hash || !out || !dev)
    return tune_fail(err, TUNE_EINVAL, "db_replay_find: NULL argument");
  /* Start from the two unique identities, then the results of that pair. */
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_REPLAY_FIND,
               db->results_honest ? REPLAY_FIND_SQL(RESULT_COLS) : REPLAY_FIND_SQL(RESULT_COLS_WITH("NULL")), &st, err);
  if (rc) goto fail;
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, recipe_name, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 2, config_hash, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_text(st, 3, problem_hash, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_ENOTFOUND,
                   "db: %s: no recorded GPU result for recipe %s, config %s, problem %s",
                   db->path, recipe_name, config_hash, problem_hash);
    goto fail;
  }
  if ((rc = read_result(st, out, err))) goto fail;
  read_device(st, RESULT_NCOLS, dev);
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

/* ---- compile cache ----------------------------------------------------- */

int db_binary_get(db_conn *db, const char *key, db_binary *out, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !key || !out) return tune_fail(err, TUNE_EINVAL, "db_binary_get: NULL argument");
  memset(out, 0, sizeof *out);
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_BINARY_GET,
               "SELECT key, arch, nvrtc_version, options, ok, cubin, ptx, log, lowered_name,"
               " registers, shared_bytes, local_bytes, spill_stores, spill_loads, compile_ms"
               " FROM binaries WHERE key = ?1",
               &st, err);
  if (rc) goto fail;
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_ENOTFOUND, "db: no binary %s in the compile cache", key);
    goto fail;
  }
  col_copy(st, 0, out->key, sizeof out->key);
  col_copy(st, 1, out->arch, sizeof out->arch);
  col_copy(st, 2, out->nvrtc_version, sizeof out->nvrtc_version);
  col_copy(st, 3, out->options, sizeof out->options);
  out->ok = sqlite3_column_int(st, 4);
  /* Blobs: pointer first, then size (SQLite's documented order). */
  const void *cubin = sqlite3_column_blob(st, 5);
  size_t n_cubin = (size_t)sqlite3_column_bytes(st, 5);
  if (cubin && n_cubin) {
    if (!(out->cubin = malloc(n_cubin))) goto nomem;
    memcpy(out->cubin, cubin, n_cubin);
    out->cubin_size = n_cubin;
  }
  const void *ptx = sqlite3_column_blob(st, 6);
  size_t n_ptx = (size_t)sqlite3_column_bytes(st, 6);
  if (ptx && n_ptx) {
    if (!(out->ptx = malloc(n_ptx + 1))) goto nomem;
    memcpy(out->ptx, ptx, n_ptx);
    out->ptx[n_ptx] = 0;
    out->ptx_size = n_ptx;
  }
  const char *log = (const char *)sqlite3_column_text(st, 7);
  if (log) {
    size_t n_log = (size_t)sqlite3_column_bytes(st, 7);
    if (!(out->log = malloc(n_log + 1))) goto nomem;
    memcpy(out->log, log, n_log + 1);
  }
  col_copy(st, 8, out->lowered_name, sizeof out->lowered_name);
  out->registers = sqlite3_column_int(st, 9);
  out->shared_bytes = sqlite3_column_int(st, 10);
  out->local_bytes = sqlite3_column_int(st, 11);
  out->spill_stores = sqlite3_column_int(st, 12);
  out->spill_loads = sqlite3_column_int(st, 13);
  out->compile_ms = col_double(st, 14);
  goto fail;
nomem:
  rc = tune_fail(err, TUNE_ENOMEM, "db_binary_get: out of memory copying binary %s", key);
fail:
  db_stmt_done(st);
  if (rc) db_binary_release(out);
  DB_UNLOCK(db);
  return rc;
}

int db_binary_has(db_conn *db, const char *key, int *has, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !key || !has) return tune_fail(err, TUNE_EINVAL, "db_binary_has: NULL argument");
  *has = 0;
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_BINARY_HAS, "SELECT 1 FROM binaries WHERE key = ?1", &st, err);
  if (rc) goto fail;
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  *has = step == SQLITE_ROW;
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

int db_binary_put(db_conn *db, const db_binary *b, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !b) return tune_fail(err, TUNE_EINVAL, "db_binary_put: NULL argument");
  if (!b->key[0]) return tune_fail(err, TUNE_EINVAL, "db_binary_put: empty key");
  size_t n_ptx = b->ptx ? (b->ptx_size ? b->ptx_size : strlen(b->ptx)) : 0;
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_BINARY_PUT,
               "INSERT OR REPLACE INTO binaries (key, arch, nvrtc_version, options, ok, cubin,"
               " ptx, log, lowered_name, registers, shared_bytes, local_bytes, spill_stores,"
               " spill_loads, compile_ms)"
               " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
               &st, err);
  if (rc) goto fail;
  SQL_TRY(db, err, bind_fixed(st, 1, b->key, sizeof b->key));
  SQL_TRY(db, err, bind_fixed(st, 2, b->arch, sizeof b->arch));
  SQL_TRY(db, err, bind_fixed(st, 3, b->nvrtc_version, sizeof b->nvrtc_version));
  SQL_TRY(db, err, bind_fixed(st, 4, b->options, sizeof b->options));
  SQL_TRY(db, err, sqlite3_bind_int(st, 5, b->ok ? 1 : 0));
  if (b->cubin && b->cubin_size)
    SQL_TRY(db, err, sqlite3_bind_blob64(st, 6, b->cubin, b->cubin_size, SQLITE_STATIC));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 6));
  if (n_ptx) SQL_TRY(db, err, sqlite3_bind_blob64(st, 7, b->ptx, n_ptx, SQLITE_STATIC));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 7));
  if (b->log) SQL_TRY(db, err, sqlite3_bind_text(st, 8, b->log, -1, SQLITE_STATIC));
  else SQL_TRY(db, err, sqlite3_bind_null(st, 8));
  SQL_TRY(db, err, bind_fixed(st, 9, b->lowered_name, sizeof b->lowered_name));
  SQL_TRY(db, err, sqlite3_bind_int(st, 10, b->registers));
  SQL_TRY(db, err, sqlite3_bind_int(st, 11, b->shared_bytes));
  SQL_TRY(db, err, sqlite3_bind_int(st, 12, b->local_bytes));
  SQL_TRY(db, err, sqlite3_bind_int(st, 13, b->spill_stores));
  SQL_TRY(db, err, sqlite3_bind_int(st, 14, b->spill_loads));
  SQL_TRY(db, err, sqlite3_bind_double(st, 15, b->compile_ms));
  SQL_STEP(db, err, st, step);
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

void db_binary_release(db_binary *b) {
  if (!b) return;
  free(b->cubin);
  free(b->ptx);
  free(b->log);
  b->cubin = NULL;
  b->cubin_size = 0;
  b->ptx = NULL;
  b->ptx_size = 0;
  b->log = NULL;
}

/* ---- device peaks ------------------------------------------------------ */

int db_peak_put(db_conn *db, int64_t device_id, const char *kind, double value,
                const char *unit, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !kind || !*kind) return tune_fail(err, TUNE_EINVAL, "db_peak_put: kind is required");
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_PEAK_PUT,
               "INSERT INTO peaks (device_id, kind, value, unit) VALUES (?1, ?2, ?3, ?4)", &st,
               err);
  if (rc) goto fail;
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, device_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC));
  SQL_TRY(db, err, sqlite3_bind_double(st, 3, value));
  SQL_TRY(db, err, bind_str(st, 4, unit));
  SQL_STEP(db, err, st, step);
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

int db_peak_get(db_conn *db, int64_t device_id, const char *kind, double *value,
                tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !kind || !value) return tune_fail(err, TUNE_EINVAL, "db_peak_get: NULL argument");
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_PEAK_GET,
               "SELECT value FROM peaks WHERE device_id = ?1 AND kind = ?2"
               " ORDER BY id DESC LIMIT 1",
               &st, err);
  if (rc) goto fail;
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, device_id));
  SQL_TRY(db, err, sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_ENOTFOUND, "db: no %s peak measured for device %lld", kind,
                   (long long)device_id);
    goto fail;
  }
  *value = sqlite3_column_double(st, 0);
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

int db_peak_devices(db_conn *db, const char *kind, int64_t *n, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !kind || !n) return tune_fail(err, TUNE_EINVAL, "db_peak_devices: NULL argument");
  DB_LOCK(db);
  rc = db_stmt(db, DB_ST_PEAK_COUNT, "SELECT COUNT(DISTINCT device_id) FROM peaks WHERE kind = ?1", &st, err);
  if (rc) goto fail;
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  *n = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
fail:
  db_stmt_done(st);
  DB_UNLOCK(db);
  return rc;
}

/* ---- replay provenance --------------------------------------------------- */

int db_device_recorded(db_conn *db, const char *recipe_name, db_device *dev, char source_hash[17],
                       tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !recipe_name || !dev) return tune_fail(err, TUNE_EINVAL, "db_device_recorded: NULL argument");
  DB_LOCK(db);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "SELECT " DEVICE_COLS ", rc.source_hash FROM results r JOIN recipes rc ON rc.id = r.recipe_id"
      " JOIN devices d ON d.id = r.device_id WHERE rc.name = ?1 AND d.kind = 'gpu'"
      " ORDER BY r.id DESC LIMIT 1", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, recipe_name, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_ENOTFOUND, "db: %s: no GPU results for recipe %s", db->path, recipe_name);
    goto fail;
  }
  read_device(st, 0, dev);
  if (source_hash) col_copy(st, sqlite3_column_count(st) - 1, source_hash, 17);
fail:
  sqlite3_finalize(st);
  DB_UNLOCK(db);
  return rc;
}
