/* db_report.h: the rows behind `tune report` (tuner/report.h) that no other query gives:
 * each search's progress, the devices' measured limits and the selections.
 *
 * Read-only queries; they work on files of every readable schema (a file without a table a
 * query needs gives an empty array). recipe: a recipe name, or a prefix ending in '*' ("gemm*"),
 * or NULL for all, as db_filter matches it. *rows is a new JSON array of objects owned by the
 * caller (json_decref); a NULL real is null. NULL on failure, err says why. */
#ifndef TUNE_DB_REPORT_H
#define TUNE_DB_REPORT_H

#include <jansson.h>

#include "db.h"

/* Every result of a run on a GPU, peers left out: recipe, problem, problem_id, device_id, run_id,
 * result_id, status, median_ns [ns], ordered by recipe name, problem, run, result id (the order
 * the search evaluated them). */
int db_report_progress(db_conn *db, const char *recipe, json_t **rows, tune_err *err);

/* The latest measurement of every kind of limit per device: device_id, device, uuid, kind,
 * value, unit (its text may go on with how it was measured), measured_at; by device, kind. */
int db_report_peaks(db_conn *db, json_t **rows, tune_err *err);

/* The latest selection per (recipe source, problem, GPU) (schema 7): recipe, source_hash,
 * problem, device, timing, rule, why, result_id, median_ns (the chosen result's stored time),
 * params (object), candidates (array), comparison_id, run_id, created_at; by recipe, problem, device. */
int db_report_selections(db_conn *db, const char *recipe, json_t **rows, tune_err *err);

/* Every GPU device: id, name, arch, uuid, sm_count, smem_per_block_optin [bytes], l2_bytes,
 * sm_clock_khz, mem_clock_khz, driver, cuda; by id. */
int db_report_devices(db_conn *db, json_t **rows, tune_err *err);

/* *has = 1 when the file has the table (a file of an older schema lacks the newer ones). */
int db_report_has_table(db_conn *db, const char *table, int *has, tune_err *err);

#endif
