/* db_schema.c: the schema of a tune database as named migrations.
 *
 * A migration is a name and a script. The names sort in the order the scripts
 * apply ("NNNN-what"); the table schema_migrations records which ones a file
 * has, and PRAGMA user_version is kept equal to how many, so a tune that knew
 * fewer refuses the file as newer. Each script runs in its own BEGIN IMMEDIATE
 * transaction together with its ledger row and the user_version update, so a
 * database is always at a whole set of migrations.
 *
 * Two branches that each add a migration give them distinct names; merged,
 * both apply to a file that lacks either, whatever their numbers. A file that
 * records a name this build does not know was written by another build and is
 * not written to (its schema is not the one this build's SQL expects).
 *
 * Files made before names were recorded have no schema_migrations table: at
 * user_version v (at most DB_SCHEMA_NUMBERED) they have the first v migrations,
 * which are recorded with applied_at NULL when the ledger is made.
 *
 * Policy: a shipped script is never edited. To change the schema, append a
 * migration with the next free number and a name saying what it does, and bump
 * DB_SCHEMA_VERSION in db.h (docs/database.md says more). */
#include <stdio.h>

#include "db_int.h"

#define NOW "(" DB_NOW ")"

/* The migrations before the ledger existed, which numbered them 1..4. */
#define DB_SCHEMA_NUMBERED 4

typedef struct db_migration {
  const char *name; /* its identity in schema_migrations; the array is sorted by it */
  const char *sql;  /* the script, run once */
} db_migration;

/* One row per result with the names of what it belongs to. */
#define V_RESULTS_SQL                                                                       \
  "CREATE VIEW v_results AS\n"                                                              \
  "SELECT r.id AS result_id, r.run_id, rc.name AS recipe, rc.source_hash AS recipe_source,\n" \
  "  p.name AS problem, p.hash AS problem_hash, p.dims_json AS problem_dims,\n"              \
  "  d.name AS device, d.kind AS device_kind, d.arch,\n"                                    \
  "  c.hash AS config_hash, c.params_json AS params, c.origin,\n"                           \
  "  r.status, r.median_ns, r.min_ns, r.max_ns, r.stddev_ns, r.samples, r.rel_ci,\n"         \
  "  r.timing, r.timer, r.event_median_ns, r.sm_mhz, r.mem_mhz, r.power_w, r.clock_reasons,\n" \
  "  r.registers, r.shared_bytes, r.spill_stores, r.spill_loads,\n"                          \
  "  r.err_rel_l2, r.err_max_abs, r.binary_key, r.error_text, r.created_at,\n"               \
  "  r.recipe_id, r.problem_id, r.device_id, r.config_id\n"                                  \
  "FROM results r\n"                                                                        \
  "JOIN recipes rc ON rc.id = r.recipe_id\n"                                                \
  "JOIN problems p ON p.id = r.problem_id\n"                                                \
  "JOIN devices d ON d.id = r.device_id\n"                                                  \
  "JOIN configs c ON c.id = r.config_id;\n"

/* The fastest verified variant per (recipe source, problem, GPU): not a peer, not a code
 * proposal's variant that failed anywhere on the recipe, a halving quick-only timing last. */
#define V_BEST_SQL                                                                          \
  "CREATE VIEW v_best AS\n"                                                                 \
  "WITH candidates AS (\n"                                                                  \
  "  SELECT v.*, coalesce(v.error_text, '') LIKE 'halving: quick timing only%' AS quick_only\n" \
  "  FROM v_results v\n"                                                                    \
  "  WHERE v.status = 'ok' AND v.device_kind = 'gpu' AND v.origin NOT LIKE 'peer:%'\n"       \
  "    AND NOT (v.origin LIKE 'llm-code:%' AND EXISTS (SELECT 1 FROM results f\n"           \
  "      WHERE f.config_id = v.config_id AND f.recipe_id = v.recipe_id\n"                   \
  "        AND f.device_id = v.device_id\n"                                                 \
  "        AND f.status NOT IN ('ok', 'skipped', 'not_recorded')))),\n"                     \
  "ranked AS (\n"                                                                           \
  "  SELECT *, row_number() OVER (PARTITION BY recipe_id, problem_id, device_id\n"           \
  "                               ORDER BY quick_only, median_ns, result_id) AS rank_\n"    \
  "  FROM candidates)\n"                                                                    \
  "SELECT result_id, recipe, recipe_source, problem, problem_hash, device, arch,\n"         \
  "  config_hash, params, origin, median_ns, min_ns, max_ns, samples, rel_ci, timing, timer,\n" \
  "  sm_mhz, registers, shared_bytes, quick_only, created_at,\n"                            \
  "  recipe_id, problem_id, device_id, config_id\n"                                         \
  "FROM ranked WHERE rank_ = 1;\n"

/* Per recipe, problem and GPU: tune's best burst median (any recipe source) beside the best
 * peer's median in each timing mode; ratio = peer / tune, above 1 when tune is faster. */
#define V_VS_PEER_SQL                                                                       \
  "CREATE VIEW v_vs_peer AS\n"                                                              \
  "WITH tune AS (\n"                                                                        \
  "  SELECT recipe, problem, device, problem_id, device_id, min(median_ns) AS tune_ns\n"     \
  "  FROM v_best WHERE timing = 'burst' AND NOT quick_only\n"                               \
  "  GROUP BY recipe, problem_id, device_id),\n"                                            \
  "peer AS (\n"                                                                             \
  "  SELECT recipe, problem_id, device_id, timing, origin, median_ns,\n"                    \
  "    row_number() OVER (PARTITION BY recipe, problem_id, device_id, timing\n"             \
  "                       ORDER BY median_ns, result_id) AS rank_\n"                        \
  "  FROM v_results\n"                                                                      \
  "  WHERE status = 'ok' AND device_kind = 'gpu' AND origin LIKE 'peer:%')\n"               \
  "SELECT t.recipe, t.problem, t.device, k.timing AS peer_timing,\n"                        \
  "  substr(k.origin, 6) AS peer, t.tune_ns AS tune_burst_ns, k.median_ns AS peer_ns,\n"    \
  "  k.median_ns / t.tune_ns AS ratio, t.problem_id, t.device_id\n"                         \
  "FROM tune t JOIN peer k ON k.recipe = t.recipe AND k.problem_id = t.problem_id\n"        \
  "  AND k.device_id = t.device_id AND k.rank_ = 1;\n"

#define VIEWS_SQL V_RESULTS_SQL V_BEST_SQL V_VS_PEER_SQL

/* v_best as of 0007: within a (recipe source, problem, GPU) the result its latest selection chose
 * (tune run re-times the top few interleaved at the end of a problem: tuner/reselect.h) ranks
 * first, then by median as before. v_vs_peer is recreated unchanged because it reads v_best. */
#define V_BEST_SELECTED_SQL                                                                 \
  "CREATE VIEW v_best AS\n"                                                                 \
  "WITH candidates AS (\n"                                                                  \
  "  SELECT v.*, coalesce(v.error_text, '') LIKE 'halving: quick timing only%' AS quick_only,\n" \
  "    (SELECT s.result_id FROM selections s WHERE s.recipe_id = v.recipe_id\n"            \
  "       AND s.problem_id = v.problem_id AND s.device_id = v.device_id\n"                 \
  "     ORDER BY s.id DESC LIMIT 1) AS selected_id\n"                                      \
  "  FROM v_results v\n"                                                                    \
  "  WHERE v.status = 'ok' AND v.device_kind = 'gpu' AND v.origin NOT LIKE 'peer:%'\n"       \
  "    AND NOT (v.origin LIKE 'llm-code:%' AND EXISTS (SELECT 1 FROM results f\n"           \
  "      WHERE f.config_id = v.config_id AND f.recipe_id = v.recipe_id\n"                   \
  "        AND f.device_id = v.device_id\n"                                                 \
  "        AND f.status NOT IN ('ok', 'skipped', 'not_recorded')))),\n"                     \
  "ranked AS (\n"                                                                           \
  "  SELECT *, row_number() OVER (PARTITION BY recipe_id, problem_id, device_id\n"           \
  "                               ORDER BY quick_only, result_id IS NOT selected_id,\n"    \
  "                                        median_ns, result_id) AS rank_\n"               \
  "  FROM candidates)\n"                                                                    \
  "SELECT result_id, recipe, recipe_source, problem, problem_hash, device, arch,\n"         \
  "  config_hash, params, origin, median_ns, min_ns, max_ns, samples, rel_ci, timing, timer,\n" \
  "  sm_mhz, registers, shared_bytes, quick_only, created_at,\n"                            \
  "  recipe_id, problem_id, device_id, config_id, result_id IS selected_id AS selected\n"   \
  "FROM ranked WHERE rank_ = 1;\n"


static const db_migration migrations[] = {
    /* the initial schema */
    {"0001-initial",
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
    "CREATE INDEX peaks_device ON peaks (device_id, kind, id);\n"},
    /* proposals of an external LLM proposer (issue 9, docs/llm-hook.md).
       A config it proposed has configs.origin = 'llm:<proposals.id>'. */
    {"0002-proposals",
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
    "CREATE INDEX proposals_run ON proposals (run_id, id);\n"},
    /* the lowest SM and memory clocks NVML reported while a result was timed, and
       the clock event (throttle) reasons seen (issue 3); -1 / 0 when NVML was unavailable. */
    {"0003-clocks",
    "ALTER TABLE results ADD COLUMN sm_mhz INTEGER NOT NULL DEFAULT -1;\n"
    "ALTER TABLE results ADD COLUMN mem_mhz INTEGER NOT NULL DEFAULT -1;\n"
    "ALTER TABLE results ADD COLUMN clock_reasons INTEGER NOT NULL DEFAULT 0;\n"},
    /* even-handed measurement (docs/measurement.md). Per result: the timing mode
       (burst: one launch per sample after an L2 flush; sustained: back-to-back launches over
       rotating buffers), the timer (cupti, events), the event-timed median beside the CUPTI one,
       the median's relative 95 % interval and the highest board power. Peers (cuBLAS, cuDNN,
       PyTorch) are configs with origin 'peer:<name>' and results like any other. A comparison
       (tune compare) re-times tune's best variants and the peers in interleaved rounds; each
       round's timing is a measurement. */
    {"0004-even-handed-measurement",
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
    "CREATE INDEX measurements_comparison ON measurements (comparison_id, problem_id, timing, side);\n"},
    /* views for reading a database with sqlite3 (docs/database.md). tune itself never reads
       them: recorded files of older schemas, opened read-only, lack them. v_best must rank
       as db_query_best does (db/db_query.c); db_test checks that they agree. */
    {"0005-views", VIEWS_SQL},
    /* the normalised hash of a recipe's source (tuner/source_hash.h: comments and blanks out,
       includes followed by content): what the compiler sees, so a recording stays current for
       replay when only comments or file locations change; '' where unknown */
    {"0006-recipe-code-hash", "ALTER TABLE recipes ADD COLUMN code_hash TEXT NOT NULL DEFAULT '';\n"},
    /* selection that survives noise: at the end of a problem, tune run re-times its fastest few
       results in interleaved rounds (a comparison of kind 'selection', its rounds measurements)
       and records which result it chose and by which rule; a tie within the measured spread goes
       to the variant with fewer resources (tuner/reselect.h). v_best and db_query_best rank the
       latest selection's choice first. */
    {"0007-selections",
    "ALTER TABLE comparisons ADD COLUMN kind TEXT NOT NULL DEFAULT 'compare'\n"
    "  CHECK (kind IN ('compare', 'selection'));\n"
    "CREATE TABLE selections (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  run_id INTEGER REFERENCES runs(id),\n"
    "  recipe_id INTEGER NOT NULL REFERENCES recipes(id),\n"
    "  problem_id INTEGER NOT NULL REFERENCES problems(id),\n"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),\n"
    "  timing TEXT NOT NULL CHECK (timing IN ('burst', 'sustained')),\n"
    "  comparison_id INTEGER REFERENCES comparisons(id),\n"
    "  result_id INTEGER NOT NULL REFERENCES results(id),\n"
    "  rule TEXT NOT NULL CHECK (rule IN ('fastest', 'tie-fewer-resources', 'only')),\n"
    "  why TEXT NOT NULL,\n"
    "  candidates TEXT NOT NULL,\n"
    "  created_at TEXT NOT NULL DEFAULT " NOW "\n"
    ");\n"
    "CREATE INDEX selections_key ON selections (recipe_id, problem_id, device_id, id);\n"
    "DROP VIEW v_vs_peer;\n"
    "DROP VIEW v_best;\n"
    V_BEST_SELECTED_SQL V_VS_PEER_SQL},
    /* which GPU measured a result: with several GPUs of one model (tune run --device cuda:all)
       results pool under one device row and this column names the card (its UUID); '' where
       unknown (replay, older files) */
    {"0008-result-gpu", "ALTER TABLE results ADD COLUMN gpu TEXT NOT NULL DEFAULT '';\n"},
    /* a result's identity (db/db_identity.h): the measurement protocol it was timed under joins it
       (1: every result before the column), and a second final answer of one identity is kept as a
       measurement under the first outside any comparison (comparison_id NULL, round 0), so
       measurements is rebuilt with comparison_id nullable and a gpu column (the card, as in
       results). Old files may hold several rows of one identity: no UNIQUE index. */
    {"0009-result-identity",
    "ALTER TABLE results ADD COLUMN protocol INTEGER NOT NULL DEFAULT 1;\n"
    "CREATE TABLE measurements_v9 (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  comparison_id INTEGER REFERENCES comparisons(id),\n"
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
    "  created_at TEXT NOT NULL DEFAULT " NOW ",\n"
    "  gpu TEXT NOT NULL DEFAULT '',\n"
    "  CHECK (comparison_id IS NOT NULL OR (round = 0 AND result_id IS NOT NULL))\n"
    ");\n"
    "INSERT INTO measurements_v9 (id, comparison_id, problem_id, config_id, result_id, side, round, timing, status,\n"
    "  median_ns, min_ns, max_ns, samples, rel_ci, timer, kernels, library, sm_mhz, mem_mhz, power_w,\n"
    "  clock_reasons, error_text, created_at)\n"
    "SELECT id, comparison_id, problem_id, config_id, result_id, side, round, timing, status,\n"
    "  median_ns, min_ns, max_ns, samples, rel_ci, timer, kernels, library, sm_mhz, mem_mhz, power_w,\n"
    "  clock_reasons, error_text, created_at FROM measurements;\n"
    "DROP TABLE measurements;\n"
    "ALTER TABLE measurements_v9 RENAME TO measurements;\n"
    "CREATE INDEX measurements_comparison ON measurements (comparison_id, problem_id, timing, side);\n"
    "CREATE INDEX measurements_result ON measurements (result_id);\n"},
    /* the honest error beside err_rel_l2 (docs/measurement.md): the expected error of rounding the
       reference once to the output's dtype, for the output whose error is the largest multiple of
       it; NULL where unknown (f32 or integer outputs, not verified, older files) */
    {"0010-result-honest-error", "ALTER TABLE results ADD COLUMN honest_rel_l2 REAL;\n"},
};

#define N_MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

_Static_assert(sizeof migrations / sizeof migrations[0] == DB_SCHEMA_VERSION,
               "DB_SCHEMA_VERSION is the number of migrations: bump it when appending one");

const char *db_schema_migration_name(int i) {
  return i >= 0 && i < N_MIGRATIONS ? migrations[i].name : NULL;
}

/* Reads a one-integer query (a PRAGMA or a count), binding text to ?1 when given. */
static int query_int(db_conn *db, const char *sql, const char *text, int *out, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL));
  if (text) SQL_TRY(db, err, sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  *out = step == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
fail:
  sqlite3_finalize(st);
  return rc;
}

static int pragma_int(db_conn *db, const char *sql, int *out, tune_err *err) {
  return query_int(db, sql, NULL, out, err);
}

static int has_ledger(db_conn *db, int *out, tune_err *err) {
  return query_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"
                       " AND name = 'schema_migrations'", NULL, out, err);
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

static int ledger_insert(db_conn *db, const char *name, int numbered, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      numbered ? "INSERT INTO schema_migrations (name, applied_at) VALUES (?1, NULL)"
               : "INSERT INTO schema_migrations (name, applied_at) VALUES (?1, " DB_NOW ")",
      -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
fail:
  sqlite3_finalize(st);
  return rc;
}

/* A file without schema_migrations was made by a tune that numbered its
 * migrations, so its user_version is one of those numbers. */
static int check_numbered(db_conn *db, int version, tune_err *err) {
  if (version <= DB_SCHEMA_NUMBERED) return TUNE_OK;
  return tune_fail(err, TUNE_EINVAL,
                   "db: %s: schema version %d but no schema_migrations table: not a file tune "
                   "wrote", db->path, version);
}

/* Inside a write transaction: makes schema_migrations when the file has none,
 * recording the numbered migrations its user_version says it has. */
static int ledger_ensure(db_conn *db, tune_err *err) {
  int rc = TUNE_OK, exists = 0, version = 0;
  if ((rc = has_ledger(db, &exists, err)) || exists) return rc;
  if ((rc = pragma_int(db, "PRAGMA user_version", &version, err))) return rc;
  if ((rc = check_numbered(db, version, err))) return rc;
  SQL_EXEC(db, err, "CREATE TABLE schema_migrations (\n"
                    "  name TEXT PRIMARY KEY,\n"
                    "  applied_at TEXT\n" /* NULL: applied by a tune that numbered migrations */
                    ")");
  for (int i = 0; i < version; i++)
    if ((rc = ledger_insert(db, migrations[i].name, 1, err))) return rc;
fail:
  return rc;
}

/* Applies migrations[i] in one transaction unless the file has it, checking
 * under the write lock so that two processes opening a fresh file do not both
 * apply it. user_version becomes the number of migrations recorded. */
static int migrate_one(db_conn *db, int i, tune_err *err) {
  int rc = TUNE_OK, applied = 0, count = 0;
  char sync[64];
  SQL_EXEC(db, err, "BEGIN IMMEDIATE");
  if ((rc = ledger_ensure(db, err))) goto fail;
  if ((rc = query_int(db, "SELECT count(*) FROM schema_migrations WHERE name = ?1",
                      migrations[i].name, &applied, err)))
    goto fail;
  if (!applied) {
    SQL_EXEC(db, err, migrations[i].sql);
    if ((rc = ledger_insert(db, migrations[i].name, 0, err))) goto fail;
    if ((rc = pragma_int(db, "SELECT count(*) FROM schema_migrations", &count, err))) goto fail;
    snprintf(sync, sizeof sync, "PRAGMA user_version = %d", count);
    SQL_EXEC(db, err, sync);
  }
  SQL_EXEC(db, err, "COMMIT");
fail:
  if (rc && !sqlite3_get_autocommit(db->h)) sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
  if (rc && err) {
    /* Say which migration failed, after the SQLite detail. */
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, " (applying schema migration %s)",
             migrations[i].name);
  }
  return rc;
}

static int is_known(const char *name) {
  for (int i = 0; i < N_MIGRATIONS; i++)
    if (!strcmp(migrations[i].name, name)) return 1;
  return 0;
}

/* Fails naming the migrations the file records that this build lacks. */
static int check_known(db_conn *db, tune_err *err) {
  int rc = TUNE_OK, step = 0, n_unknown = 0;
  char names[512] = "";
  size_t len = 0;
  sqlite3_stmt *st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, "SELECT name FROM schema_migrations ORDER BY name",
                                      -1, &st, NULL));
  for (;;) {
    SQL_STEP(db, err, st, step);
    if (step == SQLITE_DONE) break;
    const char *name = (const char *)sqlite3_column_text(st, 0);
    if (!name || is_known(name)) continue;
    n_unknown++;
    if (len < sizeof names)
      len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", name);
  }
  if (n_unknown)
    rc = tune_fail(err, TUNE_EINVAL,
                   "db: %s: has schema migration%s this build does not know (%s): it was "
                   "written by another tune build; not writing to it (use a build that has "
                   "%s)",
                   db->path, n_unknown > 1 ? "s" : "", names, n_unknown > 1 ? "them" : "it");
fail:
  sqlite3_finalize(st);
  return rc;
}

/* Applies every migration the file lacks, in name order. */
static int migrate_all(db_conn *db, int version, tune_err *err) {
  int rc = TUNE_OK, ledger = 0, applied = 0;
  if ((rc = has_ledger(db, &ledger, err))) return rc;
  if ((rc = ledger ? check_known(db, err) : check_numbered(db, version, err))) return rc;
  for (int i = 0; i < N_MIGRATIONS; i++) {
    if (!ledger) applied = i < version; /* numbered: the first user_version of them */
    else if ((rc = query_int(db, "SELECT count(*) FROM schema_migrations WHERE name = ?1",
                             migrations[i].name, &applied, err)))
      return rc;
    if (!applied && (rc = migrate_one(db, i, err))) return rc;
  }
  return TUNE_OK;
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
    /* DB_SCHEMA_READ_MIN <= version: the later migrations only add tables,
       columns and views, which tune's readers do without */
    return TUNE_OK;
  }
  return migrate_all(db, version, err);
}

int db_schema_version(db_conn *db, int *version, tune_err *err) {
  if (!db || !version) return tune_fail(err, TUNE_EINVAL, "db_schema_version: NULL argument");
  return pragma_int(db, "PRAGMA user_version", version, err);
}
