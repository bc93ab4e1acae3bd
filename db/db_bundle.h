/* db_bundle.h: writing a bundle file (the export format libtunert reads), and
 * reading, as typed rows, the results a bundle is made of.
 *
 * Owns: the bundle's SQL (schema from runtime/tunert_format.h, inserts). The
 * caller (tuner/bundle_*.c) decides what goes in; this module only stores it.
 * The file is written as PATH.tmp in one transaction and renamed to PATH on
 * commit, so a reader never sees half a bundle and a failed `tune bundle`
 * leaves no file. Strings are copied by SQLite; nothing is retained. */
#ifndef DB_BUNDLE_H
#define DB_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "db.h"
#include "../tuner/tune_err.h"

/* ---- the results a bundle takes (db_bundle_rows.c) ---------------------------------------- */

/* One (recipe, problem, device)'s best verified result (db_query_best). Strings are never NULL
 * ("" when unknown) and live as long as the db_bundle_bests that holds the row. */
typedef struct db_bundle_best {
  int db_index;                 /* the caller's number for the database it came from */
  const char *recipe, *problem, *problem_hash, *device, *arch;
  const char *source_hash;      /* of the recipe source it was measured with */
  const char *config_hash, *created_at;
  json_t *params;               /* the config, {name: value} (borrowed) */
  json_t *problem_dims;         /* the problem's dims, {name: value} (borrowed) */
  double median_ns, min_ns, stddev_ns; /* [ns]; NAN unknown */
  int samples;
  int64_t result_id;
  const char *timing;           /* "burst" or "sustained" (docs/measurement.md) */
  const char *timer;            /* "cupti", "events"; "" unrecorded (results older than the column) */
  char protocol[24];            /* the measurement protocol's number ("1"); "" unrecorded (a file
                                   older than the column) */
} db_bundle_best;

typedef struct db_bundle_bests {
  db_bundle_best *a;            /* [n], in the order of the calls, each database's by name */
  int n, cap;
  json_t *rows;                 /* owns the strings of a[] */
} db_bundle_bests;

/* Append db's best rows, tagged db_index. Zero-initialize the set first; on failure it holds
 * what was appended before. */
int db_bundle_bests_add(db_bundle_bests *set, db_conn *db, int db_index, tune_err *err);
void db_bundle_bests_free(db_bundle_bests *set);

/* ---- the peers' timings a bundle weighs its entries against (db_bundle_peers.c) ------------- */

/* A peer's best verified timing (tune compare: configs of origin "peer:NAME") of one recipe,
 * problem, GPU model and timing mode. */
typedef struct db_bundle_peer {
  int db_index;
  const char *recipe, *problem_hash, *device, *timing;
  const char *peer;             /* "cublas", "cudnn-sdpa", "torch"... */
  double median_ns;             /* [ns] */
} db_bundle_peer;

/* One round of the latest comparison with a peer side of a recipe, problem, GPU model and
 * timing mode: a side's candidate and its median that round. */
typedef struct db_bundle_round {
  int db_index;
  const char *recipe, *problem_hash, *device, *timing;
  int64_t comparison_id;
  int peer;                     /* 1: a peer's timing, 0: one of tune's variants */
  const char *label;            /* the peer's name, or tune's config hash */
  int round;                    /* 1-based */
  double median_ns;             /* [ns] */
} db_bundle_round;

typedef struct db_bundle_peers {
  db_bundle_peer *a;            /* [n] */
  int n, cap;
  db_bundle_round *rounds;      /* [n_rounds], grouped by (recipe, problem, device, timing) */
  int n_rounds, cap_rounds;
  json_t *rows;                 /* owns the strings */
} db_bundle_peers;

/* Append db's peer timings and comparison rounds, tagged db_index (a database without peers or
 * comparisons adds none). Zero-initialize the set first. */
int db_bundle_peers_add(db_bundle_peers *set, db_conn *db, int db_index, tune_err *err);
void db_bundle_peers_free(db_bundle_peers *set);

/* What a bundle records of one result besides its time (db_query_show). Strings are never NULL
 * and live until db_bundle_result_free. */
typedef struct db_bundle_result {
  const char *recipe_path;      /* the recipe file as recorded */
  const char *binary_key;       /* compile key of the measured binary, "" unknown */
  const char *origin;           /* the config's: "", "llm:ID", "llm-code:ID" */
  const char *backend;          /* the run's, "" unknown */
  char seed[32];                /* the run's input seed, "" unknown */
  double err_rel_l2;            /* NAN unknown */
  db_device device;             /* the GPU it was measured on */
  int has_proposal;             /* origin names a proposal the database holds: */
  const char *proposal_kind, *proposal_region, *proposal_code;
  json_t *obj;                  /* owns the strings */
} db_bundle_result;

/* Read result_id of db into *out (TUNE_ENOTFOUND: no such result). */
int db_bundle_result_get(db_conn *db, int64_t result_id, db_bundle_result *out, tune_err *err);
void db_bundle_result_free(db_bundle_result *r);

/* ---- writing a bundle (db_bundle.c) ------------------------------------------------------- */

typedef struct db_bundle_writer db_bundle_writer;

typedef struct db_bundle_family {
  const char *name, *source_hash, *recipe_file, *recipe_source, *template_path;
  const char *dims;             /* "B:int,causal:bool" */
  const char *params;           /* "BLOCK:int,..." */
  const char *domain;           /* format 1.3: expression list over dims (NULL or "": none) */
} db_bundle_family;

typedef struct db_bundle_variant {
  int64_t family_id;
  const char *config_hash, *params_json, *param_values, *defines, *kernels;
} db_bundle_variant;

typedef struct db_bundle_binary {
  int64_t variant_id;
  const char *kind;             /* "cubin" or "ptx" */
  const char *arch;             /* "sm_90a" / "compute_90a" */
  const char *compile_key;
  const void *data;
  size_t size;
  int registers, shared_bytes, local_bytes, spill_stores, spill_loads; /* -1 unknown */
} db_bundle_binary;

typedef struct db_bundle_entry {
  int64_t family_id, variant_id;
  const char *problem_name, *problem_hash, *dims, *dims_json;
  int portable;
  const char *exact_why, *requires, *define_exprs, *define_values;
  double median_ns, min_ns, stddev_ns;  /* [ns] */
  int samples;
  double err_rel_l2;
  int64_t result_id;
  const char *measured_at, *device_name, *device_uuid, *driver, *backend, *seed;
  const char *measured_source_hash;
  int same_binary;              /* 1 same compile key as measured, 0 not, -1 unknown */
  /* format 1.3 */
  const char *kind;             /* "tuned" (NULL or ""), "fallback" or "vendor" */
  const char *vendor;           /* kind vendor: "cublaslt", "cudnn-sdpa", "torch"...; else NULL */
  double vendor_ns;             /* kind vendor: the vendor's median [ns]; NAN otherwise */
  /* format 1.5 */
  int64_t model_id;             /* the GPU model it was tuned on (db_bundle_model_put); 0: none (fallback) */
} db_bundle_entry;

/* A GPU model the entries were tuned on (format 1.5, table models). */
typedef struct db_bundle_model {
  const char *name;             /* "NVIDIA H100 80GB HBM3" */
  const char *arch;             /* "sm_90" */
  int sm_count;
  const char *driver, *uuid;    /* of the card measured on ("" unknown) */
} db_bundle_model;

/* Create PATH.tmp with the schema and begin the transaction. */
int db_bundle_create(const char *path, db_bundle_writer **out, tune_err *err);
int db_bundle_meta(db_bundle_writer *w, const char *key, const char *value, tune_err *err);
int db_bundle_family_put(db_bundle_writer *w, const db_bundle_family *f, int64_t *id, tune_err *err);
/* role: input, output, scratch, scalar, tensormap */
int db_bundle_arg_put(db_bundle_writer *w, int64_t family_id, int idx, const char *name,
                      const char *role, const char *dtype, tune_err *err);
int db_bundle_variant_put(db_bundle_writer *w, const db_bundle_variant *v, int64_t *id, tune_err *err);
int db_bundle_binary_put(db_bundle_writer *w, const db_bundle_binary *b, tune_err *err);
int db_bundle_entry_put(db_bundle_writer *w, const db_bundle_entry *e, int64_t *id, tune_err *err);
int db_bundle_model_put(db_bundle_writer *w, const db_bundle_model *m, int64_t *id, tune_err *err);
int db_bundle_launch_put(db_bundle_writer *w, int64_t entry_id, int idx, const char *grid,
                         const char *block, const char *shared, tune_err *err);
/* The thread-block cluster of a launch already put (format 1.2, launches.cluster: an expression list
 * of 3 items; rows left alone keep the column's default '1, 1, 1', a plain launch). */
int db_bundle_launch_cluster_put(db_bundle_writer *w, int64_t entry_id, int idx, const char *cluster, tune_err *err);
int db_bundle_entry_arg_put(db_bundle_writer *w, int64_t entry_id, int idx, const char *shape,
                            const char *value, tune_err *err);
/* A tensormap arg's spec for one entry (format 1.1, table entry_tensormaps). */
typedef struct db_bundle_tensormap {
  int64_t entry_id;
  int idx, tensor;              /* the tensormap arg, the tensor arg it maps */
  const char *dtype;            /* the tensor's */
  const char *dims, *strides, *box;   /* expression lists, innermost first; strides "" for rank 1 */
  int swizzle, l2_promotion;
  int oob_nan;
  const char *element_strides;  /* "" all 1 */
} db_bundle_tensormap;
int db_bundle_tensormap_put(db_bundle_writer *w, const db_bundle_tensormap *t, tune_err *err);
/* Commit, close and rename PATH.tmp to PATH; the writer is freed either way. */
int db_bundle_commit(db_bundle_writer *w, tune_err *err);
/* Roll back, close, remove PATH.tmp, free. NULL is ignored. */
void db_bundle_abort(db_bundle_writer *w);

#endif
