/* db_schema.c: the schema of a tune database as versioned migrations.
 *
 * migrations[i] takes a database from user_version i to i + 1. Each script
 * runs in its own BEGIN IMMEDIATE transaction together with the bump of
 * PRAGMA user_version, so a database is always at a whole version.
 *
 * Policy: a shipped script is never edited. To change the schema, append a
 * script and bump DB_SCHEMA_VERSION in db.h (docs/database.md says more). */
#include <stdio.h>

#include "db_int.h"

#define NOW "(" DB_NOW ")"

static const char *const migrations[] = {
    /* 0 -> 1: the initial schema. */
    "PRAGMA application_id = 1953853029;\n" /* DB_APPLICATION_ID, "tune" */
    "CREATE TABLE devices (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  kind TEXT NOT NULL CHECK (kind <> ''),\n"
    "  name TEXT NOT NULL CHECK (name <> ''),\n"
    "  arch TEXT NOT NULL DEFAULT '',\n"
    "  cc_major INTEGER NOT NULL DEFAULT 0,\n"
    "  cc_minor INTEGER NOT NULL DEFAULT 0,\n"
    "  sm_count INTEGER NOT NULL DEFAULT 0,\n"
    "  sm_clock_khz INTEGER NOT NULL DEFAULT 0,\n"
    "  mem_clock_khz INTEGER NOT NULL DEFAULT 0,\n"
    "  mem_bus_bits INTEGER NOT NULL DEFAULT 0,\n"
    "  mem_bytes INTEGER NOT NULL DEFAULT 0,\n"
    "  l2_bytes INTEGER NOT NULL DEFAULT 0,\n"
    "  smem_per_block_optin INTEGER NOT NULL DEFAULT 0,\n"
    "  driver TEXT NOT NULL DEFAULT '',\n"
    "  cuda TEXT NOT NULL DEFAULT '',\n"
    "  uuid TEXT NOT NULL DEFAULT '',\n"
    "  created_at TEXT NOT NULL DEFAULT " NOW ",\n"
    "  updated_at TEXT NOT NULL DEFAULT " NOW ",\n"
    "  UNIQUE (kind, name, arch, uuid)\n"
    ");\n"
    "CREATE TABLE recipes (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL CHECK (name <> ''),\n"
    "  source_hash TEXT NOT NULL CHECK (source_hash <> ''),\n"
    "  path TEXT NOT NULL DEFAULT '',\n"
    "  source TEXT NOT NULL DEFAULT '',\n"
    "  created_at TEXT NOT NULL DEFAULT " NOW ",\n"
    "  UNIQUE (name, source_hash)\n"
    ");\n"
    "CREATE TABLE problems (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  recipe_name TEXT NOT NULL CHECK (recipe_name <> ''),\n"
    "  name TEXT NOT NULL,\n"
    "  hash TEXT NOT NULL CHECK (hash <> ''),\n"
    "  dims_json TEXT NOT NULL CHECK (json_valid(dims_json)),\n"
    "  created_at TEXT NOT NULL DEFAULT " NOW ",\n"
    "  UNIQUE (recipe_name, hash)\n"
    ");\n"
    "CREATE TABLE configs (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  recipe_name TEXT NOT NULL CHECK (recipe_name <> ''),\n"
    "  hash TEXT NOT NULL CHECK (hash <> ''),\n"
    "  params_json TEXT NOT NULL CHECK (json_valid(params_json)),\n"
    "  origin TEXT NOT NULL DEFAULT '',\n"
    "  created_at TEXT NOT NULL DEFAULT " NOW ",\n"
    "  UNIQUE (recipe_name, hash)\n"
    ");\n"
    "CREATE TABLE runs (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  recipe_id INTEGER NOT NULL REFERENCES recipes(id),\n"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),\n"
    "  backend TEXT NOT NULL DEFAULT '',\n"
    "  strategy TEXT NOT NULL DEFAULT '',\n"
    "  budget INTEGER NOT NULL DEFAULT 0,\n"
    "  budget_s REAL NOT NULL DEFAULT 0,\n"
    "  seed INTEGER NOT NULL DEFAULT 0,\n"
    "  tool_version TEXT NOT NULL DEFAULT '',\n"
    "  started_at TEXT NOT NULL DEFAULT " NOW ",\n"
    "  ended_at TEXT,\n"
    "  status TEXT NOT NULL DEFAULT 'running'\n"
    "    CHECK (status IN ('running', 'done', 'interrupted', 'failed'))\n"
    ");\n"
    "CREATE TABLE results (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  run_id INTEGER REFERENCES runs(id),\n"
    "  recipe_id INTEGER NOT NULL REFERENCES recipes(id),\n"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),\n"
    "  config_id INTEGER NOT NULL REFERENCES configs(id),\n"
    "  problem_id INTEGER NOT NULL REFERENCES problems(id),\n"
    "  status TEXT NOT NULL CHECK (status IN ('ok', 'wrong', 'compile_error', 'launch_error',\n"
    "    'crash', 'timeout', 'skipped', 'not_recorded', 'suspicious')),\n"
    "  median_ns REAL,\n"
    "  min_ns REAL,\n"
    "  max_ns REAL,\n"
    "  stddev_ns REAL,\n"
    "  samples INTEGER NOT NULL DEFAULT 0,\n"
    "  registers INTEGER NOT NULL DEFAULT -1,\n"
    "  shared_bytes INTEGER NOT NULL DEFAULT -1,\n"
    "  dyn_shared_bytes INTEGER NOT NULL DEFAULT 0,\n"
    "  local_bytes INTEGER NOT NULL DEFAULT -1,\n"
    "  spill_stores INTEGER NOT NULL DEFAULT -1,\n"
    "  spill_loads INTEGER NOT NULL DEFAULT -1,\n"
    "  compile_ms REAL,\n"
    "  measure_ms REAL,\n"
    "  err_rel_l2 REAL,\n"
    "  err_max_abs REAL,\n"
    "  seed INTEGER NOT NULL DEFAULT 0,\n"
    "  binary_key TEXT,\n"
    "  error_text TEXT,\n"
    "  created_at TEXT NOT NULL DEFAULT " NOW "\n"
    ");\n"
    "CREATE INDEX results_lookup ON results (recipe_id, device_id, config_id, problem_id, id);\n"
    "CREATE INDEX results_best ON results (recipe_id, problem_id, device_id, status, median_ns);\n"
    "CREATE INDEX results_config_problem ON results (config_id, problem_id);\n"
    "CREATE INDEX results_run ON results (run_id);\n"
    "CREATE TABLE binaries (\n"
    "  key TEXT PRIMARY KEY,\n"
    "  arch TEXT NOT NULL DEFAULT '',\n"
    "  nvrtc_version TEXT NOT NULL DEFAULT '',\n"
    "  options TEXT NOT NULL DEFAULT '',\n"
    "  ok INTEGER NOT NULL CHECK (ok IN (0, 1)),\n"
    "  cubin BLOB,\n"
    "  ptx BLOB,\n"
    "  log TEXT,\n"
    "  lowered_name TEXT NOT NULL DEFAULT '',\n"
    "  registers INTEGER NOT NULL DEFAULT -1,\n"
    "  shared_bytes INTEGER NOT NULL DEFAULT -1,\n"
    "  local_bytes INTEGER NOT NULL DEFAULT -1,\n"
    "  spill_stores INTEGER NOT NULL DEFAULT -1,\n"
    "  spill_loads INTEGER NOT NULL DEFAULT -1,\n"
    "  compile_ms REAL,\n"
    "  created_at TEXT NOT NULL DEFAULT " NOW "\n"
    ");\n"
    "CREATE TABLE peaks (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),\n"
    "  kind TEXT NOT NULL CHECK (kind <> ''),\n"
    "  value REAL NOT NULL,\n"
    "  unit TEXT NOT NULL DEFAULT '',\n"
    "  measured_at TEXT NOT NULL DEFAULT " NOW "\n"
    ");\n"
    "CREATE INDEX peaks_device ON peaks (device_id, kind, id);\n",
    /* 1 -> 2: proposals of an external LLM proposer (issue 9, docs/llm-hook.md).
       A config it proposed has configs.origin = 'llm:<proposals.id>'. */
    "CREATE TABLE proposals (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  run_id INTEGER REFERENCES runs(id),\n"
    "  problem_id INTEGER REFERENCES problems(id),\n"
    "  command TEXT NOT NULL DEFAULT '',\n"
    "  request_hash TEXT NOT NULL DEFAULT '',\n"
    "  response_hash TEXT NOT NULL DEFAULT '',\n"
    "  kind TEXT NOT NULL CHECK (kind IN ('params', 'code', 'response')),\n"
    "  region TEXT NOT NULL DEFAULT '',\n"
    "  values_json TEXT CHECK (values_json IS NULL OR json_valid(values_json)),\n"
    "  code TEXT,\n"
    "  rationale TEXT NOT NULL DEFAULT '',\n"
    "  status TEXT NOT NULL CHECK (status IN ('accepted', 'rejected', 'skipped')),\n"
    "  reason TEXT NOT NULL DEFAULT '',\n"
    "  created_at TEXT NOT NULL DEFAULT " NOW "\n"
    ");\n"
    "CREATE INDEX proposals_run ON proposals (run_id, id);\n",
    /* 2 -> 3: the lowest SM and memory clocks NVML reported while a result was timed, and
       the clock event (throttle) reasons seen (issue 3); -1 / 0 when NVML was unavailable. */
    "ALTER TABLE results ADD COLUMN sm_mhz INTEGER NOT NULL DEFAULT -1;\n"
    "ALTER TABLE results ADD COLUMN mem_mhz INTEGER NOT NULL DEFAULT -1;\n"
    "ALTER TABLE results ADD COLUMN clock_reasons INTEGER NOT NULL DEFAULT 0;\n",
    /* 3 -> 4: even-handed measurement (docs/measurement.md). Per result: the timing mode
       (burst: one launch per sample after an L2 flush; sustained: back-to-back launches over
       rotating buffers), the timer (cupti, events), the event-timed median beside the CUPTI one,
       the median's relative 95 % interval and the highest board power. Peers (cuBLAS, cuDNN,
       PyTorch) are configs with origin 'peer:<name>' and results like any other. A comparison
       (tune compare) re-times tune's best variants and the peers in interleaved rounds; each
       round's timing is a measurement. */
    "ALTER TABLE results ADD COLUMN timing TEXT NOT NULL DEFAULT 'burst'\n"
    "  CHECK (timing IN ('burst', 'sustained'));\n"
    "ALTER TABLE results ADD COLUMN timer TEXT NOT NULL DEFAULT '';\n"
    "ALTER TABLE results ADD COLUMN event_median_ns REAL;\n"
    "ALTER TABLE results ADD COLUMN rel_ci REAL;\n"
    "ALTER TABLE results ADD COLUMN power_w INTEGER NOT NULL DEFAULT 0;\n"
    "CREATE TABLE comparisons (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  recipe_id INTEGER NOT NULL REFERENCES recipes(id),\n"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),\n"
    "  command TEXT NOT NULL DEFAULT '',\n"
    "  rounds INTEGER NOT NULL,\n"
    "  top_k INTEGER NOT NULL,\n"
    "  timings TEXT NOT NULL DEFAULT '',\n"
    "  peer_info TEXT NOT NULL DEFAULT '',\n"
    "  tool_version TEXT NOT NULL DEFAULT '',\n"
    "  started_at TEXT NOT NULL DEFAULT " NOW ",\n"
    "  ended_at TEXT,\n"
    "  status TEXT NOT NULL DEFAULT 'running'\n"
    "    CHECK (status IN ('running', 'done', 'interrupted', 'failed'))\n"
    ");\n"
    "CREATE TABLE measurements (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  comparison_id INTEGER NOT NULL REFERENCES comparisons(id),\n"
    "  problem_id INTEGER NOT NULL REFERENCES problems(id),\n"
    "  config_id INTEGER NOT NULL REFERENCES configs(id),\n"
    "  result_id INTEGER REFERENCES results(id),\n"
    "  side TEXT NOT NULL CHECK (side IN ('tune', 'peer')),\n"
    "  round INTEGER NOT NULL,\n"
    "  timing TEXT NOT NULL CHECK (timing IN ('burst', 'sustained')),\n"
    "  status TEXT NOT NULL,\n"
    "  median_ns REAL,\n"
    "  min_ns REAL,\n"
    "  max_ns REAL,\n"
    "  samples INTEGER NOT NULL DEFAULT 0,\n"
    "  rel_ci REAL,\n"
    "  timer TEXT NOT NULL DEFAULT '',\n"
    "  kernels TEXT NOT NULL DEFAULT '',\n"
    "  library TEXT NOT NULL DEFAULT '',\n"
    "  sm_mhz INTEGER NOT NULL DEFAULT -1,\n"
    "  mem_mhz INTEGER NOT NULL DEFAULT -1,\n"
    "  power_w INTEGER NOT NULL DEFAULT 0,\n"
    "  clock_reasons INTEGER NOT NULL DEFAULT 0,\n"
    "  error_text TEXT,\n"
    "  created_at TEXT NOT NULL DEFAULT " NOW "\n"
    ");\n"
    "CREATE INDEX measurements_comparison ON measurements (comparison_id, problem_id, timing, side);\n",
};

_Static_assert(sizeof migrations / sizeof migrations[0] == DB_SCHEMA_VERSION,
               "one migration script per schema version: append a script when bumping "
               "DB_SCHEMA_VERSION");

/* Reads a one-integer PRAGMA. */
static int pragma_int(db_conn *db, const char *sql, int *out, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL));
  SQL_STEP(db, err, st, step);
  *out = step == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
fail:
  sqlite3_finalize(st);
  return rc;
}

/* Fails unless this looks like a tune database or an empty file. */
static int check_identity(db_conn *db, int version, tune_err *err) {
  int rc = TUNE_OK, app_id = 0, n_tables = 0;
  if ((rc = pragma_int(db, "PRAGMA application_id", &app_id, err))) return rc;
  if (app_id != 0 && app_id != DB_APPLICATION_ID)
    return tune_fail(err, TUNE_EINVAL,
                     "db: %s: not a tune database (application_id %d, expected %d)", db->path,
                     app_id, DB_APPLICATION_ID);
  if (version == 0) {
    if ((rc = pragma_int(db, "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'",
                         &n_tables, err)))
      return rc;
    if (n_tables > 0)
      return tune_fail(err, TUNE_EINVAL,
                       "db: %s: not a tune database (schema version 0 with %d tables)",
                       db->path, n_tables);
  }
  return TUNE_OK;
}

/* Applies migrations[from] in one transaction, re-reading the version under
 * the write lock so that two processes opening a fresh file do not both
 * migrate it. */
static int migrate_one(db_conn *db, int from, tune_err *err) {
  int rc = TUNE_OK, now = 0;
  char bump[64];
  SQL_EXEC(db, err, "BEGIN IMMEDIATE");
  if ((rc = pragma_int(db, "PRAGMA user_version", &now, err))) goto fail;
  if (now == from) {
    const char *script = migrations[from];
    SQL_EXEC(db, err, script);
    snprintf(bump, sizeof bump, "PRAGMA user_version = %d", from + 1);
    SQL_EXEC(db, err, bump);
  }
  SQL_EXEC(db, err, "COMMIT");
fail:
  if (rc && !sqlite3_get_autocommit(db->h)) sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
  if (rc && err) {
    /* Say which migration failed, after the SQLite detail. */
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, " (migrating schema %d -> %d)", from, from + 1);
  }
  return rc;
}

int db_schema_prepare(db_conn *db, tune_err *err) {
  int rc = TUNE_OK, version = 0;
  if ((rc = pragma_int(db, "PRAGMA user_version", &version, err))) return rc;
  if (version > DB_SCHEMA_VERSION)
    return tune_fail(err, TUNE_EINVAL,
                     "db: %s: schema version %d is newer than this build knows (%d); use a "
                     "newer tune",
                     db->path, version, DB_SCHEMA_VERSION);
  if ((rc = check_identity(db, version, err))) return rc;
  if (db->readonly) {
    if (version == 0)
      return tune_fail(err, TUNE_EINVAL,
                       "db: %s: not a tune database (empty, schema version 0; this build's is "
                       "%d)",
                       db->path, DB_SCHEMA_VERSION);
    if (version < DB_SCHEMA_READ_MIN)
      return tune_fail(err, TUNE_EINVAL,
                       "db: %s: schema version %d is older than this build's %d and the file "
                       "is open read-only; open it read-write once to migrate it",
                       db->path, version, DB_SCHEMA_VERSION);
    /* DB_SCHEMA_READ_MIN <= version < DB_SCHEMA_VERSION: the later migrations
       only add tables, which readers of an older file do not need */
    return TUNE_OK;
  }
  while (version < DB_SCHEMA_VERSION) {
    if ((rc = migrate_one(db, version, err))) return rc;
    if ((rc = pragma_int(db, "PRAGMA user_version", &version, err))) return rc;
  }
  return TUNE_OK;
}

int db_schema_version(db_conn *db, int *version, tune_err *err) {
  if (!db || !version) return tune_fail(err, TUNE_EINVAL, "db_schema_version: NULL argument");
  return pragma_int(db, "PRAGMA user_version", version, err);
}
