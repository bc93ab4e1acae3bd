/* db_bundle_peers.c: the peers' timings (tune compare) that `tune bundle` weighs its entries
 * against, as typed rows (db_bundle.h): each peer's best verified result and the rounds of the
 * latest comparison that timed a peer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "db_bundle.h"
#include "db_int.h"

/* results.timing exists since schema 4; before, every timing was a burst */
#define PEERS_SQL(TIMING)                                                                          \
  "SELECT rc.name AS recipe, p.hash AS problem_hash, d.name AS device, " TIMING " AS timing,"      \
  "  substr(c.origin, 6) AS peer, min(r.median_ns) AS median_ns"                                  \
  " FROM results r"                                                                               \
  " JOIN recipes rc ON rc.id = r.recipe_id"                                                       \
  " JOIN problems p ON p.id = r.problem_id"                                                       \
  " JOIN devices d ON d.id = r.device_id"                                                         \
  " JOIN configs c ON c.id = r.config_id"                                                         \
  " WHERE r.status = 'ok' AND d.kind = 'gpu' AND c.origin LIKE 'peer:%' AND r.median_ns > 0"      \
  " GROUP BY rc.name, p.hash, d.name, " TIMING ", c.origin"                                       \
  " ORDER BY recipe, problem_hash, device, timing, median_ns"

/* Per (recipe, problem, GPU model, timing): the latest comparison with a peer timed, all its ok
 * rounds of that problem and timing, both sides. */
#define ROUNDS_SQL                                                                                 \
  "WITH m AS ("                                                                                   \
  "  SELECT m.comparison_id, rc.name AS recipe, p.hash AS problem_hash, d.name AS device, m.timing,"\
  "    m.side = 'peer' AS peer,"                                                                  \
  "    CASE WHEN m.side = 'peer' THEN substr(c.origin, 6) ELSE c.hash END AS label,"              \
  "    m.round, m.median_ns"                                                                      \
  "  FROM measurements m"                                                                         \
  "  JOIN comparisons k ON k.id = m.comparison_id"                                                \
  "  JOIN recipes rc ON rc.id = k.recipe_id"                                                      \
  "  JOIN devices d ON d.id = k.device_id"                                                        \
  "  JOIN problems p ON p.id = m.problem_id"                                                      \
  "  JOIN configs c ON c.id = m.config_id"                                                        \
  "  WHERE m.status = 'ok' AND m.median_ns > 0 AND d.kind = 'gpu'),"                             \
  " latest AS (SELECT recipe, problem_hash, device, timing, max(comparison_id) AS cid"            \
  "  FROM m WHERE peer GROUP BY recipe, problem_hash, device, timing)"                            \
  " SELECT m.* FROM m JOIN latest l ON l.recipe = m.recipe AND l.problem_hash = m.problem_hash"   \
  "  AND l.device = m.device AND l.timing = m.timing AND l.cid = m.comparison_id"                 \
  " ORDER BY m.recipe, m.problem_hash, m.device, m.timing, m.peer, m.label, m.round"

static const char *str_at(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static double num_at(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static int table_has(db_conn *db, const char *sql, int *out, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL));
  SQL_STEP(db, err, st, step);
  *out = step == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
fail:
  sqlite3_finalize(st);
  return rc;
}

/* The rows of sql appended to arr (as db_rows_to_array keys them). */
static int rows_of(db_conn *db, const char *sql, json_t *arr, tune_err *err) {
  int rc = TUNE_OK;
  sqlite3_stmt *st = NULL;
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL));
  rc = db_rows_to_array(db, st, arr, err);
fail:
  sqlite3_finalize(st);
  return rc;
}

static int query(db_conn *db, json_t *peers, json_t *rounds, tune_err *err) {
  int rc = TUNE_OK, has_timing = 0, has_rounds = 0;
  DB_LOCK(db);
  if ((rc = table_has(db, "SELECT count(*) FROM pragma_table_info('results') WHERE name = 'timing'", &has_timing, err)) ||
      (rc = table_has(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('comparisons', 'measurements')",
                      &has_rounds, err)))
    goto out;
  if ((rc = rows_of(db, has_timing ? PEERS_SQL("r.timing") : PEERS_SQL("'burst'"), peers, err))) goto out;
  if (has_rounds && has_timing) rc = rows_of(db, ROUNDS_SQL, rounds, err); /* measurements came with results.timing */
out:
  DB_UNLOCK(db);
  return rc;
}

static int grow(void **a, int *cap, int need, size_t size) {
  if (need <= *cap) return 0;
  void *p = realloc(*a, (size_t)need * size);
  if (!p) return -1;
  *a = p;
  *cap = need;
  return 0;
}

int db_bundle_peers_add(db_bundle_peers *set, db_conn *db, int db_index, tune_err *err) {
  json_t *peers = json_array(), *rounds = json_array(), *row;
  size_t i;
  int rc = peers && rounds ? TUNE_OK : tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  if (!rc && !set->rows && !(set->rows = json_array())) rc = tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  if (!rc) rc = query(db, peers, rounds, err);
  if (!rc && (grow((void **)&set->a, &set->cap, set->n + (int)json_array_size(peers), sizeof *set->a) ||
              grow((void **)&set->rounds, &set->cap_rounds, set->n_rounds + (int)json_array_size(rounds), sizeof *set->rounds) ||
              json_array_extend(set->rows, peers) || json_array_extend(set->rows, rounds)))
    rc = tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  if (!rc) { /* the rows live on in set->rows */
    json_array_foreach(peers, i, row) {
      db_bundle_peer *p = &set->a[set->n++];
      *p = (db_bundle_peer){.db_index = db_index, .recipe = str_at(row, "recipe"), .problem_hash = str_at(row, "problem_hash"),
                            .device = str_at(row, "device"), .timing = str_at(row, "timing"), .peer = str_at(row, "peer"),
                            .median_ns = num_at(row, "median_ns")};
    }
    json_array_foreach(rounds, i, row) {
      db_bundle_round *r = &set->rounds[set->n_rounds++];
      *r = (db_bundle_round){.db_index = db_index, .recipe = str_at(row, "recipe"), .problem_hash = str_at(row, "problem_hash"),
                             .device = str_at(row, "device"), .timing = str_at(row, "timing"),
                             .comparison_id = json_integer_value(json_object_get(row, "comparison_id")),
                             .peer = (int)json_integer_value(json_object_get(row, "peer")), .label = str_at(row, "label"),
                             .round = (int)json_integer_value(json_object_get(row, "round")), .median_ns = num_at(row, "median_ns")};
    }
  }
  json_decref(peers);
  json_decref(rounds);
  return rc;
}

void db_bundle_peers_free(db_bundle_peers *set) {
  free(set->a);
  free(set->rounds);
  json_decref(set->rows);
  memset(set, 0, sizeof *set);
}
