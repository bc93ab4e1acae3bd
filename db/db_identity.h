/* db_identity.h: what makes two results the same result (internal to db/).
 *
 * A result's identity is (recipe source, problem, config, binary, device, timing mode, measurement
 * protocol): the results columns of DB_IDENTITY_COLS. db_result_put upserts on it and
 * `tune db merge` matches on it, both by the rule of db_identity_rule (docs/database.md, "Result
 * identity"). There is no UNIQUE index on it: files written before it was kept may hold several
 * rows of one identity, and the row that answers for it is the one DB_IDENTITY_PICK orders first.
 * Every function here runs inside the caller's transaction and takes no lock of its own. */
#ifndef DB_IDENTITY_H
#define DB_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#include "db_int.h"

/* The identity's columns of results, in the order of the values db_identity_where takes. A missing
 * binary_key (NULL) and "" are the same binary: none. */
#define DB_IDENTITY_N 7
#define DB_IDENTITY_COLS \
  { "recipe_id", "problem_id", "config_id", "binary_key", "device_id", "timing", "protocol" }

/* Among the rows of one identity, the one that answers for it first: a final answer before a
 * skipped or not_recorded row, then the latest. Appended to a query over results aliased `r`. */
#define DB_IDENTITY_PICK " ORDER BY r.status IN ('skipped', 'not_recorded'), r.id DESC LIMIT 1"

/* Writes to out the condition that results row `row` has the identity given by vals (SQL
 * expressions, one per column of DB_IDENTITY_COLS, e.g. "?4" or "s.binary_key"). Returns 0, or -1
 * when it does not fit cap (out is then cut). */
int db_identity_where(char *out, size_t cap, const char *row, const char *const vals[DB_IDENTITY_N]);

/* 1 for a status that is no final answer (skipped, not_recorded): a placeholder that a final answer
 * of its identity replaces. */
int db_status_is_placeholder(db_status s);

/* What to do with an incoming result of status incoming, given whether its identity has a row
 * (exists) and that row's status (kept): the rule db_result_put and the merge share. */
db_put_outcome db_identity_rule(int exists, db_status kept, db_status incoming);

/* The identity's row of r (by DB_IDENTITY_PICK): *found, and when found its id, status and
 * created_at (cap 32). */
typedef struct db_identity_row {
  int found;
  int64_t id;
  db_status status;
  char created_at[32];
} db_identity_row;
int db_identity_lookup(db_conn *db, const db_result *r, db_identity_row *row, tune_err *err);

/* Append r's timing as a measurement under result result_id, outside any comparison
 * (comparison_id NULL, round 0; side `peer` for a peer's config, else `tune`). */
int db_identity_retime(db_conn *db, int64_t result_id, const db_result *r, tune_err *err);

/* The protocol a result is written with: r's, or DB_MEASURE_PROTOCOL where it is 0. */
static inline int db_result_protocol(const db_result *r) {
  return r->protocol > 0 ? r->protocol : DB_MEASURE_PROTOCOL;
}

/* The timing mode a result is written with: "" reads as burst. */
static inline const char *db_result_timing(const db_result *r) {
  return r->timing[0] ? r->timing : "burst";
}

#endif
