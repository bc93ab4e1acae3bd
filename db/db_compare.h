/* db_compare.h: comparisons of tune's best variants with the peers (tune compare).
 *
 * A comparison re-times, in interleaved rounds and in each timing mode, the top
 * variants of every problem and the peers; each round's timing of one side is a
 * measurement. Peers are configs of origin "peer:<name>" (params {"peer": name}).
 * Strings in structs are fixed-size and owned by the struct; JSON returned to the
 * caller is owned by it (json_decref). */
#ifndef DB_COMPARE_H
#define DB_COMPARE_H

#include <stdint.h>

#include <jansson.h>

#include "db.h"

#define DB_PEER_ORIGIN_PREFIX "peer:"

/* One of the fastest verified variants of a problem on a device. */
typedef struct db_top {
  int64_t result_id, config_id;
  char config_hash[40];
  char params_json[2048];
  char binary_key[40];
  double median_ns;     /* [ns] as stored by the run */
} db_top;

/* A round's timing of one side of a comparison. */
typedef struct db_measurement {
  int64_t comparison_id, problem_id, config_id;
  int64_t result_id;    /* the tune result re-timed; 0 for a peer */
  int peer;             /* 1: side 'peer', else 'tune' */
  int round;            /* 1-based */
  char timing[12];      /* "burst" or "sustained" */
  db_status status;
  double median_ns, min_ns, max_ns; /* [ns] */
  int samples;
  double rel_ci;
  char timer[16];
  char kernels[1024];   /* ';'-separated kernel names (peers) */
  char library[256];    /* the peer's library and version */
  int sm_mhz, mem_mhz, power_w;
  int64_t clock_reasons;
  char error_text[512];
} db_measurement;

/* The k configs of a recipe (any of its sources) fastest on a problem on GPUs of the device's
 * architecture, this GPU model's first: candidates to compile from the current source and
 * re-time. Peers, code proposals and quick-only timings are left out; *n receives how many.
 * binary_key is left empty. */
int db_top_results(db_conn *db, const char *recipe_name, int64_t problem_id, int64_t device_id, int k,
                   db_top *out, int *n, tune_err *err);

int db_comparison_begin(db_conn *db, int64_t recipe_id, int64_t device_id, const char *command,
                        int rounds, int top_k, const char *timings, int64_t *id, tune_err *err);
/* status: "done", "interrupted", "failed"; peer_info: the peer server's hello (JSON text). */
int db_comparison_end(db_conn *db, int64_t id, const char *status, const char *peer_info,
                      tune_err *err);
int db_measurement_put(db_conn *db, const db_measurement *m, tune_err *err);

/* The measurements of a comparison as a JSON array of objects (problem, dims_json, timing,
 * side, config_id, params_json, origin, round, status, median_ns, sm_mhz, mem_mhz, power_w,
 * library, kernels), ordered by problem, timing, side, config, round. */
int db_comparison_rows(db_conn *db, int64_t comparison_id, json_t **rows, tune_err *err);
/* The latest comparison of every recipe name, ids ascending by recipe name, into ids[max]. */
int db_comparison_latest(db_conn *db, int64_t *ids, int max, int *n, tune_err *err);
/* The comparison's row as a JSON object (device, recipe, command, dates, ...). */
int db_comparison_info(db_conn *db, int64_t comparison_id, json_t **info, tune_err *err);

#endif
