/* db_merge.c: one tune database merged into another (db_merge.h).
 *
 * The input is ATTACHed read-only as schema `src` of OUT's connection, so every copy is one
 * INSERT ... SELECT inside SQLite. Rows with an identity go in one statement per table (ON
 * CONFLICT DO NOTHING), then a temp table maps their src ids to OUT's. Rows without one go one by
 * one: the duplicate query first, else the insert, and the map records where each went. Which
 * columns are copied is read from both files' table_info, so an input of an older schema gives
 * what it has and OUT's defaults fill the rest. */
#include "db_merge.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db_identity.h"
#include "db_int.h"

struct db_merger {
  db_conn *db;          /* OUT, opened so that ATTACH takes file: URIs (read-only inputs) */
  db_merge_opts o;
  struct stat out_st;   /* OUT's file: an input that is the same file is refused */
};

#define MAX_COLS 64
#define SQL_CAP 16384

/* A column not copied as is: a reference to another table mapped to OUT's ids, or rewritten. */
typedef struct mapped_col {
  const char *name, *expr; /* expr reads the input row as s */
} mapped_col;

typedef struct table_spec {
  const char *name;
  const char *identity[5];  /* the UNIQUE columns it is matched by; none: key decides */
  const char *key[9];       /* without identity: the columns whose equality makes a duplicate */
  mapped_col mapped[7];
  int map;                  /* 1: temp.m_<name> maps src ids to OUT ids (others refer to it) */
} table_spec;

#define MAP(col, table) {col, "(SELECT o FROM temp.m_" table " WHERE i = s." col ")"}

/* A config an LLM proposed names its proposal by id ("llm:7", "llm-code:7"): OUT's id. */
#define ORIGIN_SQL                                                                                 \
  "CASE WHEN s.origin GLOB 'llm:[0-9]*' THEN coalesce('llm:' || (SELECT o FROM temp.m_proposals" \
  " WHERE i = CAST(substr(s.origin, 5) AS INTEGER)), s.origin)"                                   \
  " WHEN s.origin GLOB 'llm-code:[0-9]*' THEN coalesce('llm-code:' || (SELECT o FROM"            \
  " temp.m_proposals WHERE i = CAST(substr(s.origin, 10) AS INTEGER)), s.origin)"                 \
  " ELSE s.origin END"

static const table_spec tables[DB_MERGE_N_TABLES] = {
    [DB_MERGE_DEVICES] = {"devices", {"kind", "name", "arch", "uuid"}, .map = 1},
    [DB_MERGE_RECIPES] = {"recipes", {"name", "source_hash"}, .map = 1},
    [DB_MERGE_PROBLEMS] = {"problems", {"recipe_name", "hash"}, .map = 1},
    [DB_MERGE_RUNS] = {"runs", {NULL}, {"recipe_id", "device_id", "backend", "strategy", "seed", "started_at"},
                       {MAP("recipe_id", "recipes"), MAP("device_id", "devices")}, 1},
    [DB_MERGE_PROPOSALS] = {"proposals", {NULL},
                            {"run_id", "problem_id", "kind", "request_hash", "response_hash", "region", "created_at"},
                            {MAP("run_id", "runs"), MAP("problem_id", "problems")}, 1},
    [DB_MERGE_CONFIGS] = {"configs", {"recipe_name", "hash"}, .mapped = {{"origin", ORIGIN_SQL}}, .map = 1},
    [DB_MERGE_RESULTS] = {"results", {NULL},
                          {"recipe_id", "problem_id", "config_id", "device_id", "timing", "created_at", "median_ns"},
                          {MAP("run_id", "runs"), MAP("recipe_id", "recipes"), MAP("device_id", "devices"),
                           MAP("config_id", "configs"), MAP("problem_id", "problems")}, 1},
    [DB_MERGE_BINARIES] = {"binaries", {"key"}},
    [DB_MERGE_PEAKS] = {"peaks", {NULL}, {"device_id", "kind", "value", "measured_at"}, {MAP("device_id", "devices")}},
    [DB_MERGE_COMPARISONS] = {"comparisons", {NULL}, {"recipe_id", "device_id", "command", "started_at"},
                              {MAP("recipe_id", "recipes"), MAP("device_id", "devices")}, 1},
    [DB_MERGE_MEASUREMENTS] = {"measurements", {NULL},
                               {"comparison_id", "problem_id", "config_id", "result_id", "side", "round", "timing",
                                "created_at", "median_ns"},
                               {MAP("comparison_id", "comparisons"), MAP("problem_id", "problems"),
                                MAP("config_id", "configs"), MAP("result_id", "results")}},
    [DB_MERGE_SELECTIONS] = {"selections", {NULL},
                             {"recipe_id", "problem_id", "device_id", "timing", "result_id", "created_at"},
                             {MAP("run_id", "runs"), MAP("recipe_id", "recipes"), MAP("problem_id", "problems"),
                              MAP("device_id", "devices"), MAP("comparison_id", "comparisons"),
                              MAP("result_id", "results")}},
};

const char *db_merge_table_name(int table) {
  return table >= 0 && table < DB_MERGE_N_TABLES ? tables[table].name : "?";
}

/* ---- SQL text ------------------------------------------------------------------------------ */

typedef struct sql_buf {
  char s[SQL_CAP];
  size_t n;
  int over;  /* 1: it did not fit (a bug: the statements are bounded by the schema) */
} sql_buf;

static void put(sql_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sql_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = b->over ? -1 : vsnprintf(b->s + b->n, SQL_CAP - b->n, fmt, ap);
  va_end(ap);
  if (w < 0 || (size_t)w >= SQL_CAP - b->n) b->over = 1;
  else b->n += (size_t)w;
}

/* The columns of OUT's table, with OUT's default and whether the input's table has each. */
typedef struct columns {
  int n;
  char name[MAX_COLS][48];
  char dflt[MAX_COLS][128];  /* the default's SQL, "" none */
  unsigned char in_src[MAX_COLS];
} columns;

static int read_columns(db_conn *db, const char *table, columns *c, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  memset(c, 0, sizeof *c);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, "SELECT m.name, coalesce(m.dflt_value, ''),"
                                             " EXISTS (SELECT 1 FROM pragma_table_info(?1, 'src') s WHERE s.name = m.name)"
                                             " FROM pragma_table_info(?1, 'main') m ORDER BY m.cid", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC));
  for (;;) {
    SQL_STEP(db, err, st, step);
    if (step == SQLITE_DONE) break;
    if (c->n == MAX_COLS) {
      rc = tune_fail(err, TUNE_EINTERNAL, "db merge: %s has more than %d columns", table, MAX_COLS);
      goto fail;
    }
    db_copy(c->name[c->n], sizeof c->name[0], (const char *)sqlite3_column_text(st, 0));
    db_copy(c->dflt[c->n], sizeof c->dflt[0], (const char *)sqlite3_column_text(st, 1));
    c->in_src[c->n++] = (unsigned char)sqlite3_column_int(st, 2);
  }
fail:
  sqlite3_finalize(st);
  return rc;
}

static int column_index(const columns *c, const char *name) {
  for (int k = 0; k < c->n; ++k)
    if (!strcmp(c->name[k], name)) return k;
  return -1;
}

/* The value column k of OUT's table takes from input row s: mapped, as is, or OUT's default
 * (NULL without one) where the input lacks the column. */
static void put_value(sql_buf *b, const table_spec *t, const columns *c, int k) {
  if (!c->in_src[k]) {
    put(b, "%s", c->dflt[k][0] ? c->dflt[k] : "NULL");
    return;
  }
  for (int m = 0; m < 7 && t->mapped[m].name; ++m)
    if (!strcmp(t->mapped[m].name, c->name[k])) {
      put(b, "%s", t->mapped[m].expr);
      return;
    }
  put(b, "s.\"%s\"", c->name[k]);
}

/* INSERT INTO main.T (the columns the input has) SELECT their values FROM src.T s */
static void put_insert(sql_buf *b, const table_spec *t, const columns *c) {
  put(b, "INSERT INTO main.\"%s\" (", t->name);
  int first = 1;
  for (int k = 0; k < c->n; ++k)
    if (c->in_src[k] && strcmp(c->name[k], "id")) put(b, "%s\"%s\"", first ? "" : ", ", c->name[k]), first = 0;
  put(b, ") SELECT ");
  first = 1;
  for (int k = 0; k < c->n; ++k)
    if (c->in_src[k] && strcmp(c->name[k], "id")) {
      put(b, "%s", first ? "" : ", ");
      put_value(b, t, c, k);
      first = 0;
    }
  put(b, " FROM src.\"%s\" s", t->name);
}

/* ---- statements ----------------------------------------------------------------------------- */

static int exec_sql(db_conn *db, const sql_buf *b, tune_err *err) {
  int rc = TUNE_OK;
  if (b->over) return tune_fail(err, TUNE_EINTERNAL, "db merge: a statement does not fit %d bytes", SQL_CAP);
  SQL_EXEC(db, err, b->s);
fail:
  return rc;
}

static int count_rows(db_conn *db, const char *sql, long long *n, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL));
  SQL_STEP(db, err, st, step);
  *n = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
fail:
  sqlite3_finalize(st);
  return rc;
}

/* A table with an identity: the input's rows OUT lacks, in one statement, then the id map. */
static int merge_by_identity(db_conn *db, const table_spec *t, const columns *c, db_merge_count *n, tune_err *err) {
  sql_buf b = {.n = 0};
  put_insert(&b, t, c);
  put(&b, " WHERE true ON CONFLICT DO NOTHING");
  if (exec_sql(db, &b, err)) return err->code;
  n->added = sqlite3_changes64(db->h);
  n->duplicates = n->read - n->added;
  if (!t->map) return TUNE_OK;
  b = (sql_buf){.n = 0};
  put(&b, "INSERT INTO temp.m_%s (i, o) SELECT s.id, m.id FROM src.\"%s\" s JOIN main.\"%s\" m ON ", t->name, t->name,
      t->name);
  for (int k = 0; k < 5 && t->identity[k]; ++k)
    put(&b, "%sm.\"%s\" = s.\"%s\"", k ? " AND " : "", t->identity[k], t->identity[k]);
  return exec_sql(db, &b, err);
}

/* SELECT the OUT row that input row ?1 duplicates: every key column equal (IS: NULL = NULL). */
static void put_duplicate_query(sql_buf *b, const table_spec *t, const columns *c) {
  put(b, "SELECT m.id FROM src.\"%s\" s JOIN main.\"%s\" m ON 1", t->name, t->name);
  for (int k = 0; k < 9 && t->key[k]; ++k) {
    int col = column_index(c, t->key[k]);
    if (col < 0) continue;
    put(b, " AND m.\"%s\" IS ", t->key[k]);
    put_value(b, t, c, col);
  }
  put(b, " WHERE s.id = ?1 LIMIT 1");
}

/* A table without an identity: row by row, its duplicate in OUT or a new row, into the id map. */
static int merge_by_key(db_conn *db, const table_spec *t, const columns *c, db_merge_count *n, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *ids = NULL, *dup = NULL, *ins = NULL, *map = NULL;
  sql_buf b = {.n = 0};
  put_duplicate_query(&b, t, c);
  if (b.over) return tune_fail(err, TUNE_EINTERNAL, "db merge: %s: duplicate query too long", t->name);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, b.s, -1, &dup, NULL));
  b = (sql_buf){.n = 0};
  put_insert(&b, t, c);
  put(&b, " WHERE s.id = ?1");
  if (b.over) { rc = tune_fail(err, TUNE_EINTERNAL, "db merge: %s: insert too long", t->name); goto fail; }
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, b.s, -1, &ins, NULL));
  snprintf(b.s, sizeof b.s, "INSERT INTO temp.m_%s (i, o) VALUES (?1, ?2)", t->name);
  if (t->map) SQL_TRY(db, err, sqlite3_prepare_v2(db->h, b.s, -1, &map, NULL));
  snprintf(b.s, sizeof b.s, "SELECT id FROM src.\"%s\" ORDER BY id", t->name);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, b.s, -1, &ids, NULL));
  for (;;) {
    SQL_STEP(db, err, ids, step);
    if (step == SQLITE_DONE) break;
    int64_t src_id = sqlite3_column_int64(ids, 0), out_id = 0;
    SQL_TRY(db, err, sqlite3_bind_int64(dup, 1, src_id));
    SQL_STEP(db, err, dup, step);
    if (step == SQLITE_ROW) {
      out_id = sqlite3_column_int64(dup, 0);
      n->duplicates++;
    } else {
      SQL_TRY(db, err, sqlite3_bind_int64(ins, 1, src_id));
      SQL_STEP(db, err, ins, step);
      out_id = sqlite3_last_insert_rowid(db->h);
      n->added++;
      sqlite3_reset(ins);
    }
    sqlite3_reset(dup);
    if (map) {
      SQL_TRY(db, err, sqlite3_bind_int64(map, 1, src_id));
      SQL_TRY(db, err, sqlite3_bind_int64(map, 2, out_id));
      SQL_STEP(db, err, map, step);
      sqlite3_reset(map);
    }
  }
fail:
  sqlite3_finalize(ids);
  sqlite3_finalize(dup);
  sqlite3_finalize(ins);
  sqlite3_finalize(map);
  return rc;
}

/* ---- results: by identity ------------------------------------------------------------------- */

/* The SQL value of OUT's results column `name` for input row s (put_value) into out. */
static int value_sql(const table_spec *t, const columns *c, const char *name, char *out, size_t cap) {
  int k = column_index(c, name);
  sql_buf b = {.n = 0};
  if (k < 0) put(&b, "NULL");
  else put_value(&b, t, c, k);
  if (b.over || b.n >= cap) return -1;
  memcpy(out, b.s, b.n + 1);
  return 0;
}

/* The statements of the results merge, prepared once per input. */
typedef struct result_stmts {
  sqlite3_stmt *ids;      /* the input's result ids */
  sqlite3_stmt *dup;      /* ?1 src id: OUT's row with the same key (the same row merged before) */
  sqlite3_stmt *same;     /* ?1 src id: OUT's row of its identity, its status and the input's status */
  sqlite3_stmt *ins;      /* ?1 src id: a new row */
  sqlite3_stmt *upgrade;  /* ?1 src id, ?2 OUT id: the input row over OUT's placeholder */
  sqlite3_stmt *retimed;  /* ?1 src id, ?2 OUT id: the input row is a measurement under it already */
  sqlite3_stmt *retime;   /* ?1 src id, ?2 OUT id: the input row as a measurement under it */
  sqlite3_stmt *map;      /* ?1 src id, ?2 OUT id into temp.m_results */
} result_stmts;

static void result_stmts_free(result_stmts *q) {
  sqlite3_stmt **all[] = {&q->ids, &q->dup, &q->same, &q->ins, &q->upgrade, &q->retimed, &q->retime, &q->map};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) sqlite3_finalize(*all[i]), *all[i] = NULL;
}

static int prepare(db_conn *db, const sql_buf *b, sqlite3_stmt **st, tune_err *err) {
  int rc = TUNE_OK;
  if (b->over) return tune_fail(err, TUNE_EINTERNAL, "db merge: results: a statement does not fit %d bytes", SQL_CAP);
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, b->s, -1, st, NULL));
fail:
  return rc;
}

/* The input row's timing as a measurement under OUT's result ?2 (db_identity_retime's row). */
static void put_retime(sql_buf *b, const table_spec *t, const columns *c) {
  static const char *const copied[] = {"timing", "status", "median_ns", "min_ns", "max_ns", "samples", "rel_ci",
                                       "timer", "sm_mhz", "mem_mhz", "power_w", "clock_reasons", "error_text", "gpu",
                                       "created_at"};
  char v[256];
  put(b, "INSERT INTO main.measurements (comparison_id, result_id, round, problem_id, config_id, side");
  for (size_t i = 0; i < sizeof copied / sizeof copied[0]; ++i) put(b, ", %s", copied[i]);
  put(b, ") SELECT NULL, ?2, 0, m.problem_id, m.config_id,"
         " CASE WHEN (SELECT origin FROM main.configs WHERE id = m.config_id) LIKE 'peer:%%' THEN 'peer' ELSE 'tune' END");
  for (size_t i = 0; i < sizeof copied / sizeof copied[0]; ++i) {
    if (value_sql(t, c, copied[i], v, sizeof v)) b->over = 1;
    put(b, ", %s", v);
  }
  put(b, " FROM src.results s JOIN main.results m ON m.id = ?2 WHERE s.id = ?1");
}

static int prepare_results(db_conn *db, const table_spec *t, const columns *c, result_stmts *q, tune_err *err) {
  static const char *const cols[DB_IDENTITY_N] = DB_IDENTITY_COLS;
  char vals[DB_IDENTITY_N][256], where[2048];
  const char *val_p[DB_IDENTITY_N];
  for (int k = 0; k < DB_IDENTITY_N; ++k) {
    if (value_sql(t, c, cols[k], vals[k], sizeof vals[k]))
      return tune_fail(err, TUNE_EINTERNAL, "db merge: results: the value of %s does not fit", cols[k]);
    val_p[k] = vals[k];
  }
  if (db_identity_where(where, sizeof where, "r", val_p))
    return tune_fail(err, TUNE_EINTERNAL, "db merge: results: the identity condition does not fit");
  sql_buf b = {.n = 0};
  put_duplicate_query(&b, t, c);
  if (prepare(db, &b, &q->dup, err)) return err->code;
  b = (sql_buf){.n = 0};
  put(&b, "SELECT r.id, r.status, s.status FROM src.results s JOIN main.results r ON %s WHERE s.id = ?1"
          DB_IDENTITY_PICK, where);
  if (prepare(db, &b, &q->same, err)) return err->code;
  b = (sql_buf){.n = 0};
  put_insert(&b, t, c);
  put(&b, " WHERE s.id = ?1");
  if (prepare(db, &b, &q->ins, err)) return err->code;
  b = (sql_buf){.n = 0};
  put(&b, "UPDATE main.results AS r SET ");
  for (int k = 0, first = 1; k < c->n; ++k)
    if (c->in_src[k] && strcmp(c->name[k], "id")) {
      put(&b, "%s\"%s\" = ", first ? "" : ", ", c->name[k]);
      put_value(&b, t, c, k);
      first = 0;
    }
  put(&b, " FROM src.results s WHERE s.id = ?1 AND r.id = ?2");
  if (prepare(db, &b, &q->upgrade, err)) return err->code;
  b = (sql_buf){.n = 0};
  char created[256], median[256];
  if (value_sql(t, c, "created_at", created, sizeof created) || value_sql(t, c, "median_ns", median, sizeof median))
    return tune_fail(err, TUNE_EINTERNAL, "db merge: results: a value does not fit");
  put(&b, "SELECT 1 FROM src.results s JOIN main.measurements m ON m.result_id = ?2 AND m.comparison_id IS NULL"
          " AND m.created_at IS %s AND m.median_ns IS %s WHERE s.id = ?1", created, median);
  if (prepare(db, &b, &q->retimed, err)) return err->code;
  b = (sql_buf){.n = 0};
  put_retime(&b, t, c);
  if (prepare(db, &b, &q->retime, err)) return err->code;
  b = (sql_buf){.n = 0};
  put(&b, "INSERT INTO temp.m_results (i, o) VALUES (?1, ?2)");
  if (prepare(db, &b, &q->map, err)) return err->code;
  b = (sql_buf){.n = 0};
  put(&b, "SELECT id FROM src.results ORDER BY id");
  return prepare(db, &b, &q->ids, err);
}

/* Runs st (reset first) with ?1 = a and, when st has it, ?2 = b; *row: it returned a row. */
static int run2(db_conn *db, sqlite3_stmt *st, int64_t a, int64_t b, int *row, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_reset(st);
  SQL_TRY(db, err, sqlite3_bind_int64(st, 1, a));
  if (sqlite3_bind_parameter_count(st) >= 2) SQL_TRY(db, err, sqlite3_bind_int64(st, 2, b));
  SQL_STEP(db, err, st, step);
  if (row) *row = step == SQLITE_ROW;
fail:
  return rc;
}

/* One input result: the row it duplicates, else by the identity rule (db_identity_rule) a new row,
 * an upgrade of OUT's placeholder, a measurement under OUT's final answer, or nothing. *out_id:
 * where references to it go. */
static int merge_result(db_conn *db, result_stmts *q, int64_t src_id, int64_t *out_id, db_merge_count *n,
                        tune_err *err) {
  int row = 0;
  if (run2(db, q->dup, src_id, 0, &row, err)) return err->code;
  if (row) {
    *out_id = sqlite3_column_int64(q->dup, 0);
    n->duplicates++;
    return TUNE_OK;
  }
  if (run2(db, q->same, src_id, 0, &row, err)) return err->code;
  db_put_outcome put = DB_PUT_INSERTED;
  if (row) {
    int kept = db_status_parse((const char *)sqlite3_column_text(q->same, 1));
    int incoming = db_status_parse((const char *)sqlite3_column_text(q->same, 2));
    *out_id = sqlite3_column_int64(q->same, 0);
    if (kept < 0 || incoming < 0)
      return tune_fail(err, TUNE_EINVAL, "db merge: result %lld or its match %lld has an unknown status",
                       (long long)src_id, (long long)*out_id);
    put = db_identity_rule(1, (db_status)kept, (db_status)incoming);
  }
  if (put == DB_PUT_INSERTED) {
    if (run2(db, q->ins, src_id, 0, NULL, err)) return err->code;
    *out_id = sqlite3_last_insert_rowid(db->h);
    n->added++;
    return TUNE_OK;
  }
  n->duplicates++;
  if (put == DB_PUT_UPGRADED) {
    if (run2(db, q->upgrade, src_id, *out_id, NULL, err)) return err->code;
    n->upgraded++;
  } else if (put == DB_PUT_RETIMED) {
    if (run2(db, q->retimed, src_id, *out_id, &row, err)) return err->code;
    if (!row && run2(db, q->retime, src_id, *out_id, NULL, err)) return err->code;
    n->retimed += !row;
  }
  return TUNE_OK;
}

/* The results: row by row, each by its identity (merge_result), into the id map. */
static int merge_results(db_conn *db, const table_spec *t, const columns *c, db_merge_count *n, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  result_stmts q = {0};
  if ((rc = prepare_results(db, t, c, &q, err))) goto fail;
  for (;;) {
    SQL_STEP(db, err, q.ids, step);
    if (step == SQLITE_DONE) break;
    int64_t src_id = sqlite3_column_int64(q.ids, 0), out_id = 0;
    if ((rc = merge_result(db, &q, src_id, &out_id, n, err))) goto fail;
    if ((rc = run2(db, q.map, src_id, out_id, NULL, err))) goto fail;
  }
fail:
  result_stmts_free(&q);
  return rc;
}

/* One table of the input into OUT (nothing when the input lacks it). */
static int merge_table(db_merger *mg, int ti, db_merge_count *n, tune_err *err) {
  db_conn *db = mg->db;
  const table_spec *t = &tables[ti];
  char sql[256];
  long long present = 0;
  snprintf(sql, sizeof sql, "SELECT count(*) FROM src.sqlite_master WHERE type = 'table' AND name = '%s'", t->name);
  if (count_rows(db, sql, &present, err)) return err->code;
  if (!present || (ti == DB_MERGE_BINARIES && mg->o.no_binaries)) return TUNE_OK;
  snprintf(sql, sizeof sql, "SELECT count(*) FROM src.\"%s\"", t->name);
  if (count_rows(db, sql, &n->read, err)) return err->code;
  columns c;
  if (read_columns(db, t->name, &c, err)) return err->code;
  int rc = ti == DB_MERGE_RESULTS ? merge_results(db, t, &c, n, err)
           : t->identity[0]       ? merge_by_identity(db, t, &c, n, err)
                                  : merge_by_key(db, t, &c, n, err);
  if (rc) return tune_fail(err, rc, "db merge: table %s", t->name);
  return TUNE_OK;
}

/* ---- the merger ----------------------------------------------------------------------------- */

int db_merger_open(const char *out_path, const db_merge_opts *o, db_merger **out, tune_err *err) {
  int rc = TUNE_OK;
  db_conn *made = NULL;
  *out = NULL;
  /* db_open creates or migrates OUT (and refuses one of another build); the merge's own
     connection then opens it with URI names on, which ATTACH needs for a read-only input */
  if (db_open(out_path, 0, &made, err)) return err->code;
  db_close(made);
  db_merger *m = calloc(1, sizeof *m);
  db_conn *db = m ? calloc(1, sizeof *db) : NULL;
  if (!db) {
    free(m);
    return tune_fail(err, TUNE_ENOMEM, "db merge: out of memory");
  }
  m->db = db;
  m->o = o ? *o : (db_merge_opts){0};
  db_copy(db->path, sizeof db->path, out_path);
  if (sqlite3_open_v2(out_path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
    rc = tune_fail(err, TUNE_EIO, "db: %s: cannot open: %s", out_path, db->h ? sqlite3_errmsg(db->h) : "out of memory");
    goto fail;
  }
  if (stat(out_path, &m->out_st)) {
    rc = tune_fail(err, TUNE_EIO, "db: %s: %s", out_path, strerror(errno));
    goto fail;
  }
  SQL_TRY(db, err, sqlite3_extended_result_codes(db->h, 1));
  SQL_TRY(db, err, sqlite3_busy_timeout(db->h, DB_BUSY_TIMEOUT_MS));
  SQL_EXEC(db, err, "PRAGMA foreign_keys = ON");
  SQL_EXEC(db, err, "CREATE TEMP TABLE touched (recipe_name TEXT, problem_hash TEXT, PRIMARY KEY (recipe_name, problem_hash));"
                    "CREATE TEMP TABLE touched_now (recipe_name TEXT, problem_hash TEXT, PRIMARY KEY (recipe_name, problem_hash))");
  for (int ti = 0; ti < DB_MERGE_N_TABLES; ++ti) {
    if (!tables[ti].map) continue;
    char sql[160];
    snprintf(sql, sizeof sql, "CREATE TEMP TABLE m_%s (i INTEGER PRIMARY KEY, o INTEGER NOT NULL)", tables[ti].name);
    SQL_EXEC(db, err, sql);
  }
  *out = m;
  return TUNE_OK;
fail:
  db_merger_close(m);
  return rc;
}

void db_merger_close(db_merger *m) {
  if (!m) return;
  db_close(m->db);
  free(m);
}

/* "file:PATH?QUERY" with PATH percent-encoded; NULL when out of memory. */
static char *file_uri(const char *path, const char *query) {
  char *uri = malloc(3 * strlen(path) + strlen(query) + 8);
  if (!uri) return NULL;
  char *o = uri + sprintf(uri, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++)
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/._-~", *p))
      *o++ = (char)*p;
    else
      o += sprintf(o, "%%%02X", *p);
  sprintf(o, "?%s", query);
  return uri;
}

static int attach_as(db_conn *db, const char *path, const char *query, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  char *uri = file_uri(path, query);
  if (!uri) return tune_fail(err, TUNE_ENOMEM, "db merge: out of memory");
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, "ATTACH ?1 AS src", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, uri, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  free(uri);
  return rc;
}

/* The input as schema src, read-only; a WAL file whose -shm cannot be made (a read-only folder)
 * and that has no -wal is read as immutable, as db_open does. */
static int attach_input(db_conn *db, const char *path, tune_err *err) {
  if (attach_as(db, path, "mode=ro", err)) return err->code;
  if (sqlite3_exec(db->h, "SELECT count(*) FROM src.sqlite_master", NULL, NULL, NULL) == SQLITE_OK) return TUNE_OK;
  sqlite3_exec(db->h, "DETACH src", NULL, NULL, NULL);
  char wal[1100];
  struct stat sb;
  snprintf(wal, sizeof wal, "%s-wal", path);
  if (stat(wal, &sb) == 0) return tune_fail(err, TUNE_EIO, "db merge: %s: cannot read it (and it has a -wal file)", path);
  return attach_as(db, path, "immutable=1", err);
}

/* The input is a tune database of a schema this build reads, and not OUT itself. */
static int check_input(db_merger *m, const char *path, tune_err *err) {
  struct stat sb;
  if (stat(path, &sb)) return tune_fail(err, TUNE_EIO, "db merge: %s: %s", path, strerror(errno));
  if (sb.st_dev == m->out_st.st_dev && sb.st_ino == m->out_st.st_ino)
    return tune_fail(err, TUNE_EINVAL, "db merge: %s is the output database itself", path);
  db_conn *in = NULL;
  if (db_open(path, 1, &in, err)) return err->code;
  db_close(in);
  return TUNE_OK;
}

/* The (recipe, problem) pairs with verified GPU results in the input, into touched and touched_now. */
static int note_touched(db_conn *db, tune_err *err) {
  int rc = TUNE_OK;
  SQL_EXEC(db, err, "DELETE FROM temp.touched_now;"
                    "INSERT OR IGNORE INTO temp.touched_now SELECT DISTINCT rc.name, p.hash FROM src.results r"
                    " JOIN src.recipes rc ON rc.id = r.recipe_id JOIN src.problems p ON p.id = r.problem_id"
                    " JOIN src.devices d ON d.id = r.device_id WHERE r.status = 'ok' AND d.kind = 'gpu';"
                    "INSERT OR IGNORE INTO temp.touched SELECT * FROM temp.touched_now");
fail:
  return rc;
}

/* The mixes among the pairs of temp table `pairs` (touched or touched_now), as db_merger_mixes. */
static int mixes_of(db_conn *db, const char *pairs, json_t **rows, tune_err *err) {
  char sql[2048];
  snprintf(sql, sizeof sql,
           "SELECT rc.name AS recipe, p.name AS problem, p.hash AS problem_hash,"
           " json_group_array(DISTINCT d.name) AS devices_json,"
           " json_group_array(DISTINCT d.name || ' / ' || d.driver) AS drivers_json,"
           " json_group_array(DISTINCT rc.source_hash) AS sources_json"
           " FROM main.results r JOIN main.recipes rc ON rc.id = r.recipe_id"
           " JOIN main.problems p ON p.id = r.problem_id JOIN main.devices d ON d.id = r.device_id"
           " JOIN temp.%s t ON t.recipe_name = rc.name AND t.problem_hash = p.hash"
           " WHERE r.status = 'ok' AND d.kind = 'gpu' GROUP BY rc.name, p.hash"
           " HAVING count(DISTINCT d.name) > 1 OR count(DISTINCT d.name || '/' || d.driver) > count(DISTINCT d.name)"
           "   OR count(DISTINCT rc.source_hash) > 1"
           " ORDER BY rc.name, p.name", pairs);
  return db_query_rows(db, sql, rows, err);
}

int db_merger_mixes(db_merger *m, json_t **rows, tune_err *err) { return mixes_of(m->db, "touched", rows, err); }

int db_merger_reference_spread(db_merger *m, json_t **rows, tune_err *err) {
  /* each GPU's latest figure of each peak kind; GPUs of one model are told apart by uuid */
  static const char sql[] =
      "WITH latest AS (SELECT p.device_id, p.kind, p.value, p.unit FROM peaks p"
      "  WHERE p.id = (SELECT max(q.id) FROM peaks q WHERE q.device_id = p.device_id AND q.kind = p.kind))"
      " SELECT d.name AS device, l.kind AS kind, max(l.unit) AS unit, count(DISTINCT d.uuid) AS gpus,"
      " min(l.value) AS min, max(l.value) AS max, max(l.value) / min(l.value) - 1 AS spread"
      " FROM latest l JOIN devices d ON d.id = l.device_id WHERE d.kind = 'gpu' AND l.value > 0"
      " GROUP BY d.name, l.kind HAVING count(DISTINCT d.uuid) > 1 ORDER BY d.name, l.kind";
  return db_query_rows(m->db, sql, rows, err);
}

/* Every table of the attached input, then (strict) the refusal of a mix. */
static int merge_tables(db_merger *m, const char *in_path, db_merge_stats *st, tune_err *err) {
  db_conn *db = m->db;
  int rc = TUNE_OK;
  for (int ti = 0; ti < DB_MERGE_N_TABLES; ++ti) {
    if (!tables[ti].map) continue;
    char sql[96];
    snprintf(sql, sizeof sql, "DELETE FROM temp.m_%s", tables[ti].name);
    SQL_EXEC(db, err, sql);
  }
  for (int ti = 0; ti < DB_MERGE_N_TABLES; ++ti)
    if ((rc = merge_table(m, ti, &st->t[ti], err))) goto fail;
  /* the normalised code hash of a recipe OUT had without one */
  long long has_code_hash = 0;
  if ((rc = count_rows(db, "SELECT count(*) FROM pragma_table_info('recipes', 'src') WHERE name = 'code_hash'",
                       &has_code_hash, err)))
    goto fail;
  if (has_code_hash)
    SQL_EXEC(db, err, "UPDATE main.recipes AS m SET code_hash = s.code_hash FROM src.recipes s"
                      " WHERE m.name = s.name AND m.source_hash = s.source_hash AND m.code_hash = '' AND s.code_hash <> ''");
  if ((rc = note_touched(db, err)) || !m->o.strict) goto fail;
  json_t *mixes = NULL;
  if ((rc = mixes_of(db, "touched_now", &mixes, err))) goto fail;
  size_t n_mixes = json_array_size(mixes);
  json_t *first = json_array_get(mixes, 0);
  if (n_mixes)
    rc = tune_fail(err, TUNE_EINVAL, "db merge: %s: refused (--strict): %s %s and %zu more problem(s) would hold results "
                   "of several device models, drivers or recipe sources", in_path,
                   json_string_value(json_object_get(first, "recipe")), json_string_value(json_object_get(first, "problem")),
                   n_mixes - 1);
  json_decref(mixes);
fail:
  return rc;
}

int db_merger_add(db_merger *m, const char *in_path, db_merge_stats *st, tune_err *err) {
  db_conn *db = m->db;
  int rc = TUNE_OK;
  memset(st, 0, sizeof *st);
  if (check_input(m, in_path, err) || attach_input(db, in_path, err)) return err->code;
  SQL_EXEC(db, err, "BEGIN IMMEDIATE");
  rc = merge_tables(m, in_path, st, err);
  if (rc) {
    sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    memset(st, 0, sizeof *st);
  } else {
    SQL_EXEC(db, err, "COMMIT");
  }
fail:
  if (rc && sqlite3_get_autocommit(db->h) == 0) sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
  sqlite3_exec(db->h, "DETACH src", NULL, NULL, NULL);
  return rc;
}
