/* db_int.h: internals shared by db.c, db_schema.c and db_query.c.
 *
 * Holds the connection struct, the statement cache ids and the checked-call
 * macros. Not for use outside db/ (tests may include it to reach the fault
 * injector). Every function that uses SQL_TRY/SQL_STEP declares
 * `int rc = TUNE_OK;` and a `fail:` label where cleanup runs once; success
 * falls through into `fail:` too, so cleanup is written once and `rc` says
 * which way we came. */
#ifndef DB_INT_H
#define DB_INT_H

#include <stdint.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "db.h"

/* Cached prepared statements, one slot each (prepared on first use with
 * SQLITE_PREPARE_PERSISTENT, finalized by db_close). */
enum db_stmt_id {
  DB_ST_DEVICE_PUT,
  DB_ST_RECIPE_GET,
  DB_ST_RECIPE_INS,
  DB_ST_PROBLEM_GET,
  DB_ST_PROBLEM_INS,
  DB_ST_CONFIG_GET,
  DB_ST_CONFIG_INS,
  DB_ST_RUN_BEGIN,
  DB_ST_RUN_END,
  DB_ST_RESULT_INS,
  DB_ST_RESULT_FIND,
  DB_ST_REPLAY_FIND,
  DB_ST_BINARY_GET,
  DB_ST_BINARY_HAS,
  DB_ST_BINARY_PUT,
  DB_ST_PEAK_PUT,
  DB_ST_PEAK_GET,
  DB_ST_PEAK_COUNT,
  DB_ST_COUNT
};

struct db_conn {
  sqlite3 *h;                      /* the SQLite connection, owned */
  int readonly;                    /* 1: opened with SQLITE_OPEN_READONLY */
  int fault_in;                    /* fault injection: the fault_in-th checked call from
                                      now fails (counts down; 0 = off) */
  int n_faults;                    /* faults injected so far */
  int fault_now;                   /* 1: the call being reported was an injected fault */
  char path[1024];                 /* the file as given to db_open */
  sqlite3_stmt *st[DB_ST_COUNT];   /* statement cache, NULL until first use */
  int results_honest;              /* 1: results has honest_rel_l2 (read-only files of older
                                      schemas lack it) */
};

/* Fault injection (tests): make the n-th checked SQLite call from now on fail
 * with SQLITE_IOERR without running it; n <= 0 turns injection off. */
void db_fault_set(db_conn *db, int n);

/* Counts down the fault injector; 1 when this call must fail. */
static inline int db_fault_hit(db_conn *db) {
  if (db->fault_in <= 0) return 0;
  if (--db->fault_in > 0) return 0;
  db->n_faults++;
  db->fault_now = 1;
  return 1;
}

/* Records a failed SQLite call in err as "db: file:line: call [sql]: message
 * (code)" and returns the tune code (TUNE_ENOMEM, TUNE_EIO for CANTOPEN,
 * otherwise TUNE_ESQL). st may be NULL; its SQL text is quoted when given. */
int db_sql_fail(db_conn *db, tune_err *err, int sql_rc, const char *call, sqlite3_stmt *st,
                const char *file, int line);

/* One checked line per SQLite call that must return SQLITE_OK. */
#define SQL_TRY(db, err, call)                                                      \
  do {                                                                              \
    int sql_rc_ = db_fault_hit(db) ? SQLITE_IOERR : (call);                         \
    if (sql_rc_ != SQLITE_OK) {                                                     \
      rc = db_sql_fail((db), (err), sql_rc_, #call, NULL, __FILE__, __LINE__);      \
      goto fail;                                                                    \
    }                                                                               \
  } while (0)

/* sqlite3_step: res receives SQLITE_ROW or SQLITE_DONE; anything else fails. */
#define SQL_STEP(db, err, stmt, res)                                                \
  do {                                                                              \
    (res) = db_fault_hit(db) ? SQLITE_IOERR : sqlite3_step(stmt);                   \
    if ((res) != SQLITE_ROW && (res) != SQLITE_DONE) {                              \
      rc = db_sql_fail((db), (err), (res), "sqlite3_step(" #stmt ")", (stmt),       \
                       __FILE__, __LINE__);                                         \
      goto fail;                                                                    \
    }                                                                               \
  } while (0)

/* sqlite3_exec of a literal script, no callback. */
#define SQL_EXEC(db, err, sql)                                                      \
  do {                                                                              \
    int sql_rc_ = db_fault_hit(db) ? SQLITE_IOERR : sqlite3_exec((db)->h, (sql), NULL, NULL, NULL); \
    if (sql_rc_ != SQLITE_OK) {                                                     \
      rc = db_sql_fail((db), (err), sql_rc_, "sqlite3_exec(" #sql ")", NULL,        \
                       __FILE__, __LINE__);                                         \
      goto fail;                                                                    \
    }                                                                               \
  } while (0)

/* The cached statement `id`, prepared from sql on first use. On failure err
 * is filled and *out is NULL. The caller resets it when done (db_stmt_done). */
int db_stmt(db_conn *db, int id, const char *sql, sqlite3_stmt **out, tune_err *err);
/* Reset and clear bindings; NULL is ignored. Safe on any path. */
static inline void db_stmt_done(sqlite3_stmt *st) {
  if (st) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
  }
}

/* Appends every row of st to arr as an object keyed by column name; columns named *_json
 * are parsed (db_query.c). */
int db_rows_to_array(db_conn *db, sqlite3_stmt *st, json_t *arr, tune_err *err);
/* *out = 1 when the results table has column name (read-only files of older schemas lack some). */
int db_results_have_column(db_conn *db, const char *name, int *out, tune_err *err);
/* The rows of a query without parameters, as a new JSON array (db_rows_to_array's objects). */
int db_query_rows(db_conn *db, const char *sql, json_t **rows, tune_err *err);

/* A db_conn may be shared by threads (e.g. the compile pool's cache
 * lookups): every public function holds the connection's own recursive
 * SQLite mutex from its first statement to its return, so cached statements
 * and transactions never interleave. No-ops when SQLite is single-threaded. */
#define DB_LOCK(db) sqlite3_mutex_enter(sqlite3_db_mutex((db)->h))
#define DB_UNLOCK(db) sqlite3_mutex_leave(sqlite3_db_mutex((db)->h))

/* Schema (db_schema.c). Check the file's schema version against this build
 * and, unless readonly, apply the migrations it lacks. A file newer than this
 * build, or (for writing) one that records a migration this build does not
 * know, is refused with the reason; a readonly file older than
 * DB_SCHEMA_READ_MIN too. */
int db_schema_prepare(db_conn *db, tune_err *err);
/* The i-th migration's name in the order they apply; NULL past the last. */
const char *db_schema_migration_name(int i);

/* The application_id stamped into every tune database ("tune"). */
#define DB_APPLICATION_ID 0x74756e65

/* uint64 <-> int64 bit pattern (seeds are stored as SQLite INTEGER). */
static inline int64_t db_u2i(uint64_t u) {
  int64_t i;
  memcpy(&i, &u, sizeof i);
  return i;
}
static inline uint64_t db_i2u(int64_t i) {
  uint64_t u;
  memcpy(&u, &i, sizeof u);
  return u;
}

/* Copy a possibly NULL C string into a fixed buffer, truncating; always
 * NUL-terminated. */
static inline void db_copy(char *dst, size_t cap, const char *src) {
  if (!src) src = "";
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

/* How long a writer waits for another connection's lock [ms]. */
#define DB_BUSY_TIMEOUT_MS 5000

/* The current timestamp SQL expression (UTC ISO 8601 with milliseconds). */
#define DB_NOW "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

#endif
