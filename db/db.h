/* db.h: tune's memory, one SQLite file.
 *
 * Owns: the schema and its migrations (db_schema.c), and every SQL statement
 * tune runs (db.c, db_query.c). Nobody else writes SQL. Not called from
 * search/. Identities are content hashes (hex xxh64 strings made by the
 * caller): the same config or problem has the same hash in every database, so
 * results can be matched across databases (replay, export).
 *
 * Writes are one transaction each (a killed tuner loses at most the result in
 * flight). The file is in WAL mode. Strings in structs are fixed-size and
 * owned by the struct; blobs returned by db_binary_get are malloc'd and owned
 * by the caller (free with db_binary_release). */
#ifndef DB_H
#define DB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "../tuner/tune_err.h"

/* The number of schema migrations this build knows (db_schema.c), and so the
 * PRAGMA user_version of a file it made: a tune that knows fewer refuses the
 * file as newer. */
#define DB_SCHEMA_VERSION 10
/* The oldest schema a read-only open accepts (recorded databases are version
 * 1): every migration after it only adds tables, columns or views, or lets a
 * column take more values than before. */
#define DB_SCHEMA_READ_MIN 1

typedef struct db_conn db_conn;

/* Result statuses, stored as their names. */
typedef enum db_status {
  DB_OK = 0,          /* verified and timed */
  DB_WRONG,           /* ran, output did not match the reference */
  DB_COMPILE_ERROR,   /* NVRTC rejected it; log in error_text */
  DB_LAUNCH_ERROR,    /* the launch was refused (resources, configuration) */
  DB_CRASH,           /* the worker died or the context broke (illegal address...) */
  DB_TIMEOUT,         /* the watchdog killed it */
  DB_SKIPPED,         /* not run, with a reason (compile-only, pruned...) */
  DB_NOT_RECORDED,    /* replay: the recorded database has no result for it */
  DB_SUSPICIOUS,      /* faster than the device's measured physical limit */
  DB_STATUS_COUNT
} db_status;

/* Reasons of a `skipped` result other than the recipe's applies/requires: */
#define DB_REASON_PRUNED "pruned: "           /* prefix: compiled, never launched (tuner/prune.h) */
#define DB_REASON_COMPILE_ONLY "compile-only" /* tune run --compile-only */

/* The measurement protocol results are stored under (results.protocol): how a variant is verified
 * and timed (sample policy, warm-up, L2 flush, sustained rotation: docs/measurement.md). It is part
 * of a result's identity, so timings of another protocol are neither resumed from nor merged into.
 * Bump it when a change to the measurement makes earlier timings incomparable. */
#define DB_MEASURE_PROTOCOL 1

/* What db_result_put did with a result, by the identity rules (docs/database.md, "Result identity"). */
typedef enum db_put_outcome {
  DB_PUT_INSERTED = 0, /* the identity had no result: a new row */
  DB_PUT_UPGRADED,     /* the identity's row was skipped or not_recorded: it now holds this result */
  DB_PUT_RETIMED,      /* the identity had a final answer: kept, with this timing as a measurement under it */
  DB_PUT_KEPT          /* this result is skipped or not_recorded and the identity has a row: nothing written */
} db_put_outcome;

const char *db_status_name(db_status s);
/* Parse a status name; returns -1 when unknown. */
int db_status_parse(const char *name);

typedef struct db_device {
  char kind[16];        /* "gpu", or "arch" for a compile-only target */
  char name[128];       /* e.g. "NVIDIA H200", or "sm_90" for kind arch */
  char arch[16];        /* "sm_90" */
  int cc_major, cc_minor;
  int sm_count;
  int sm_clock_khz;     /* max SM clock [kHz] */
  int mem_clock_khz;    /* max memory clock [kHz] */
  int mem_bus_bits;     /* memory bus width [bits] */
  int64_t mem_bytes;    /* total global memory [bytes] */
  int l2_bytes;         /* L2 size [bytes] */
  int smem_per_block_optin; /* max dynamic shared memory per block [bytes] */
  char driver[32];      /* driver version, e.g. "13.0" (cuDriverGetVersion) */
  char cuda[32];        /* toolkit/NVRTC version tune was built with */
  char uuid[64];        /* device UUID, "" for kind arch */
} db_device;

typedef struct db_run {
  int64_t recipe_id, device_id;
  char backend[64];     /* "cuda:0", "replay:FILE", "compile-only" */
  char strategy[32];
  int64_t budget;       /* evaluations, 0 = none */
  double budget_s;      /* seconds, 0 = none */
  uint64_t seed;
  char tool_version[32];
} db_run;

typedef struct db_result {
  int64_t id;           /* set by put/find */
  int64_t run_id, recipe_id, device_id, config_id, problem_id;
  db_status status;
  double median_ns, min_ns, max_ns, stddev_ns; /* [ns], 0 when not timed */
  int samples;
  int registers;        /* per thread, -1 unknown */
  int shared_bytes;     /* static shared memory [bytes], -1 unknown */
  int dyn_shared_bytes; /* dynamic shared memory of the launch [bytes] */
  int local_bytes;      /* stack frame [bytes], -1 unknown */
  int spill_stores, spill_loads; /* [bytes], -1 unknown */
  double compile_ms, measure_ms;
  double err_rel_l2, err_max_abs; /* verification figures, -1 when not verified */
  double honest_rel_l2; /* honest error of the output whose err/honest ratio is the worst
                           (docs/measurement.md); <= 0 unknown (stored NULL, read back -1) */
  uint64_t seed;        /* seed of the inputs it was verified with */
  char binary_key[40];  /* hex key into binaries, "" none */
  char error_text[4096];/* compile log excerpt, CUDA error name, mismatch... */
  char created_at[32];  /* set by the database (UTC ISO 8601) */
  int sm_mhz, mem_mhz;  /* lowest clocks NVML saw while timing, -1 unknown (written, not read back) */
  int64_t clock_reasons;/* NVML clock event reasons seen while timing */
  /* written, not read back (recorded databases of schema 1 lack them): */
  char timing[12];      /* "burst" ("" reads as burst) or "sustained" (docs/measurement.md) */
  char timer[16];       /* "cupti", "events", "replay"; "" unknown */
  double event_median_ns; /* CUDA-event median beside the CUPTI one [ns], 0 none */
  double rel_ci;        /* relative width of the median's 95 % interval, 0 unknown */
  int power_w;          /* highest board power while timing [W], 0 unknown */
  char gpu[64];         /* UUID of the GPU that measured it ("" unknown): cards of one model
                           share the device row (tune run --device cuda:all) */
  int protocol;         /* measurement protocol (DB_MEASURE_PROTOCOL); 0 writes the current one */
  db_put_outcome put;   /* set by db_result_put: what it did with the result */
} db_result;

typedef struct db_binary {
  char key[40];         /* hex content hash of (sources, options, arch, nvrtc version) */
  char arch[16];
  char nvrtc_version[16];
  char options[1024];   /* the NVRTC options, space separated */
  int ok;               /* 1 compiled, 0 compile error */
  unsigned char *cubin; size_t cubin_size;   /* NULL/0 on compile error */
  char *ptx; size_t ptx_size;                /* may be NULL */
  char *log;            /* NVRTC log, may be NULL */
  char lowered_name[512]; /* mangled kernel name to look up in the cubin */
  int registers, shared_bytes, local_bytes, spill_stores, spill_loads;
  double compile_ms;
} db_binary;

/* Open (creating and migrating) a database. readonly=1 opens an existing file
 * without writing (replay). */
int db_open(const char *path, int readonly, db_conn **out, tune_err *err);
void db_close(db_conn *db);
int db_schema_version(db_conn *db, int *version, tune_err *err);

/* Idempotent upserts by identity; *id receives the row id. */
int db_device_put(db_conn *db, const db_device *d, int64_t *id, tune_err *err);
int db_recipe_put(db_conn *db, const char *name, const char *source_hash, const char *path,
                  const char *source, int64_t *id, tune_err *err);
/* Record the normalised source hash of recipe row id (kept once set); "" is ignored. */
int db_recipe_set_code_hash(db_conn *db, int64_t id, const char *code_hash, tune_err *err);
/* The code hash recorded for recipe (name, source_hash), "" where none was (or the file's schema
 * predates it) into code_hash[17]. */
int db_recipe_code_hash(db_conn *db, const char *name, const char *source_hash, char code_hash[17], tune_err *err);
int db_problem_put(db_conn *db, const char *recipe_name, const char *name, const char *hash,
                   const char *dims_json, int64_t *id, tune_err *err);
int db_config_put(db_conn *db, const char *recipe_name, const char *hash,
                  const char *params_json, const char *origin, int64_t *id, tune_err *err);

int db_run_begin(db_conn *db, const db_run *r, int64_t *id, tune_err *err);
/* status: "done", "interrupted", "failed" */
int db_run_end(db_conn *db, int64_t run_id, const char *status, tune_err *err);

/* A run whose row says `running`, and how long it has shown no sign of life. */
typedef struct db_running_run {
  int64_t id;
  double idle_s;  /* [s] since its start or its newest result, whichever is later */
} db_running_run;

/* The runs whose status is `running`: *out (malloc'd, the caller frees; NULL when *n is 0).
 * Whether such a run's process is alive is not the database's to know (the caller checks). */
int db_runs_running(db_conn *db, db_running_run **out, int *n, tune_err *err);

/* Mark a run `interrupted` (ended at its newest result, else its start) if it is still
 * `running`; a run that ended meanwhile is left as it is. */
int db_run_mark_interrupted(db_conn *db, int64_t run_id, tune_err *err);

/* Store a result, upserted on its identity (recipe source, problem, config, binary, device, timing
 * mode, protocol; db_identity.h) in one BEGIN IMMEDIATE transaction, which serialises the writers
 * of every process. Where the identity has no row, a new one; where its row is skipped or
 * not_recorded and r is a final answer, that row now holds r (same id); where its row is a final
 * answer and so is r, the row stays the result and r's timing becomes a measurement under it
 * (comparison_id NULL); where r is skipped or not_recorded, an existing row is left as it is.
 * r->id and r->created_at become the surviving row's, r->put says which case it was; the rest of
 * *r is the caller's. On failure nothing is written and *r is unchanged. */
int db_result_put(db_conn *db, db_result *r, tune_err *err);
/* Latest result for (recipe source, device, config, problem) of the current protocol that is a
 * final answer (not skipped/not_recorded); TUNE_ENOTFOUND when none. */
int db_result_find(db_conn *db, int64_t recipe_id, int64_t device_id, int64_t config_id,
                   int64_t problem_id, db_result *out, tune_err *err);
/* The same, of one timing mode ("burst" or "sustained"; NULL: any): a resumed run answers only
 * from results timed the way it times. */
int db_result_find_timing(db_conn *db, int64_t recipe_id, int64_t device_id, int64_t config_id,
                          int64_t problem_id, const char *timing, db_result *out, tune_err *err);
/* What a --compile-only run resumes from: the latest result of the current protocol for (recipe
 * source, device, config, problem) that is a final answer or skipped as compile-only
 * (DB_REASON_COMPILE_ONLY); TUNE_ENOTFOUND when none. Pruned and recipe-skipped rows never answer. */
int db_result_find_compiled(db_conn *db, int64_t recipe_id, int64_t device_id, int64_t config_id,
                            int64_t problem_id, db_result *out, tune_err *err);
/* Replay lookup across databases: the latest GPU result for the recipe name,
 * config hash and problem hash, with the device it was measured on.
 * TUNE_ENOTFOUND when none. Like db_result_find it skips skipped and
 * not_recorded rows. The ids in *out are the recorded database's. */
int db_replay_find(db_conn *db, const char *recipe_name, const char *config_hash,
                   const char *problem_hash, db_result *out, db_device *dev, tune_err *err);

/* The GPU device whose results for recipe_name are the latest in this
 * database (replay attributes its answers to it), and the recipe source hash
 * they were measured with (source_hash may be NULL; 16 hex digits + NUL).
 * TUNE_ENOTFOUND when none. */
int db_device_recorded(db_conn *db, const char *recipe_name, db_device *dev, char source_hash[17],
                       tune_err *err);

/* Compile cache. get: TUNE_ENOTFOUND when absent; on success cubin, ptx
 * (NUL-terminated, ptx_size excluding the added NUL) and log are new malloc'd
 * copies, NULL when absent; on failure *out holds no allocation. put: INSERT
 * OR REPLACE by key; ptx_size 0 with ptx set means strlen(ptx). */
int db_binary_get(db_conn *db, const char *key, db_binary *out, tune_err *err);
/* *has = 1 when the compile cache holds key, without reading the binary. */
int db_binary_has(db_conn *db, const char *key, int *has, tune_err *err);
int db_binary_put(db_conn *db, const db_binary *b, tune_err *err);
void db_binary_release(db_binary *b);

/* One proposal of an external proposer (tune run --strategy llm), accepted or
 * not, or a whole response that was refused (kind "response"). Strings are
 * borrowed for the call; NULL is stored as "" (values_json, code: NULL). */
typedef struct db_proposal {
  int64_t run_id, problem_id;  /* 0: NULL */
  const char *command;         /* the proposer command line */
  const char *request_hash;    /* xxh64 hex of the request bytes */
  const char *response_hash;   /* xxh64 hex of the response bytes, "" none */
  const char *kind;            /* "params", "code" or "response" */
  const char *region;          /* code: the template region */
  const char *values_json;     /* params: the values as proposed */
  const char *code;            /* code: the region's new source */
  const char *rationale;
  const char *status;          /* "accepted", "rejected" or "skipped" */
  const char *reason;          /* why rejected or skipped, or a note */
} db_proposal;

/* Append a proposal; *id receives its row id. */
int db_proposal_put(db_conn *db, const db_proposal *p, int64_t *id, tune_err *err);

/* Set a proposal's status and reason (a code proposal's verdict once its
 * variant was evaluated on every problem). */
int db_proposal_update(db_conn *db, int64_t id, const char *status, const char *reason, tune_err *err);

/* Measured physical limits of a device (kind e.g. "copy_GBps", "bf16_TFLOPs";
 * unit e.g. "GB/s"), used to flag results as suspicious. put appends a
 * measurement; get returns the latest one, TUNE_ENOTFOUND when none. */
int db_peak_put(db_conn *db, int64_t device_id, const char *kind, double value,
                const char *unit, tune_err *err);
int db_peak_get(db_conn *db, int64_t device_id, const char *kind, double *value,
                tune_err *err);
/* How many devices have a measurement of kind, into *n. */
int db_peak_devices(db_conn *db, const char *kind, int64_t *n, tune_err *err);

/* Which results a query takes: a NULL field matches anything, a value matches
 * exactly, and a value ending in '*' matches every value that starts with the
 * rest ("peer:*"). Strings are borrowed. Values are bound, never pasted into
 * SQL. On files older than schema 4 every result's timing is "burst". */
typedef struct db_filter {
  const char *recipe;  /* recipe name */
  const char *problem; /* problem name */
  const char *device;  /* device name, e.g. "NVIDIA H100 80GB HBM3" */
  const char *status;  /* result status (db_status_name) */
  const char *origin;  /* config origin: the strategy's name, "llm:<id>", "peer:<name>", ... */
  const char *timing;  /* "burst" or "sustained" */
} db_filter;

/* The keys of db_filter_set, as an error message lists them. */
#define DB_FILTER_KEYS "recipe, problem, device, status, origin, timing"

/* Set the field named key to value (borrowed). TUNE_EINVAL naming the valid
 * keys for an unknown key, and for a key set twice, an unknown status or an
 * unknown timing mode; f is unchanged then. */
int db_filter_set(db_filter *f, const char *key, const char *value, tune_err *err);

/* Queries for the CLI; *rows is a new JSON array of objects owned by the
 * caller (json_decref). f may be NULL for all.
 * best: per (recipe source, problem, GPU) the fastest verified result among
 * those f selects (a status other than ok selects none: TUNE_EINVAL).
 * list: results fastest first; limit 0 = all. */
int db_query_best_where(db_conn *db, const db_filter *f, json_t **rows, tune_err *err);
int db_query_list_where(db_conn *db, const db_filter *f, int limit, json_t **rows,
                        tune_err *err);
/* The same with recipe/problem/status given alone (NULL for all). */
int db_query_best(db_conn *db, const char *recipe, const char *problem, json_t **rows,
                  tune_err *err);
int db_query_list(db_conn *db, const char *recipe, const char *problem, const char *status,
                  int limit, json_t **rows, tune_err *err);
int db_query_show(db_conn *db, int64_t result_id, json_t **obj, tune_err *err);
/* Provenance of recorded GPU data for a recipe: devices with first/last
 * result time and counts. */
int db_query_provenance(db_conn *db, const char *recipe, json_t **rows, tune_err *err);

/* ---- CSV of query rows (db_csv.c) ------------------------------------------ */

/* flat: a new object of obj's scalars keyed by their path ("params.BLOCK"): nested
 * objects are walked, arrays stay whole. NULL when out of memory. */
json_t *db_json_flatten(json_t *obj);

/* Write rows (an array of objects, as the queries return) to out as CSV per
 * RFC 4180: a header of the flattened keys in first-seen order, one record per
 * row, CRLF line ends; a field with a comma, quote, CR or LF is quoted with its
 * quotes doubled. Strings as is, numbers in full precision, true/false, null
 * and absent keys empty, arrays as JSON text. TUNE_EIO on a write error. */
int db_rows_write_csv(json_t *rows, FILE *out, tune_err *err);

/* ---- search benchmark and exports (db_bench.c, db_export.c) ---------------- */

/* One config's recorded answer for a problem (db_bench_rows). */
typedef struct db_bench_row {
  char config_hash[40];    /* the config's identity */
  const char *params_json; /* its parameter values, a JSON object; valid during the callback */
  db_status status;        /* of the latest final result (ok, wrong, ...), else of the
                              latest result (skipped) */
  double median_ns;        /* [ns] NaN when not timed */
  double compile_ms;       /* [ms] as recorded: 0 when the binary came from the compile cache */
  double measure_ms;       /* [ms] verifying and timing it */
  double build_ms;         /* [ms] compile time of its binary: compile_ms, or where that is 0
                              (cached), the largest compile_ms recorded for the same binary */
  char binary_key[40];     /* "" none */
  int samples;             /* timed samples of median_ns (0 when not timed) */
  int rejected;            /* 1: skipped by the recipe (applies/requires) before compiling,
                              so not part of the problem's space (tuner/problem_space.h) */
} db_bench_row;

/* Return 0 to go on; non-zero stops the iteration and is returned. */
typedef int (*db_bench_fn)(void *ctx, const db_bench_row *row);

/* Call fn once per config of recipe_name that has a GPU result for the problem
 * of hash problem_hash (any recipe source, any GPU device): the latest result
 * that is a final answer, else the latest one (skipped, not_recorded). Rows
 * come in config-hash order. Peers' rows and code proposals' variants are left
 * out: they are not points of the recipe's space. */
int db_bench_rows(db_conn *db, const char *recipe_name, const char *problem_hash, db_bench_fn fn,
                  void *ctx, tune_err *err);

/* Find a problem of recipe_name by name or hash; fills the non-NULL outputs
 * (hash: 17 bytes). TUNE_ENOTFOUND when none. */
int db_problem_lookup(db_conn *db, const char *recipe_name, const char *problem, char *name,
                      size_t name_n, char hash[17], char *dims_json, size_t dims_n,
                      tune_err *err);

/* Write the recorded results of one problem of a recipe (db_bench_rows) to
 * out in another tuner's format: "kernel_tuner" (Kernel Tuner's cache file,
 * readable by its simulation mode) or "t4" (the T4 results schema 1.0.0 of
 * the auto-tuning community, as Kernel Tuner writes it). TUNE_EINVAL for an
 * unknown format, TUNE_ENOTFOUND when the problem or its results are absent. */
int db_export(db_conn *db, const char *format, const char *recipe_name, const char *problem,
              FILE *out, tune_err *err);

#endif
