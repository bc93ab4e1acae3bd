/* db_merge.h: `tune db merge OUT IN...`: databases combined into one with their provenance.
 *
 * Owns the SQL that copies one tune database into another: recipes (with their source and code
 * hashes), problems, configs, devices, runs, results, compile-cache binaries (optional), peaks,
 * proposals, comparisons, measurements and selections. Rows with an identity (devices, recipes,
 * problems, configs, binaries) are matched by it; the others get new ids in OUT, and every
 * reference to them (and a config origin "llm:<proposal id>") is mapped. A row OUT already holds
 * is not copied again: a result with the same recipe (name and source hash), problem hash, config
 * hash, device identity (kind, name, arch, uuid), timing mode, created_at and median, a run with
 * the same recipe, device, backend, strategy, seed and start, and so on; so a merge run twice adds
 * nothing the second time. Results are moreover matched on their identity (db_identity.h) by the
 * rule db_result_put keeps: an input result of an identity OUT holds upgrades OUT's skipped or
 * not_recorded row, becomes a measurement under OUT's final answer, or is dropped (a skipped or
 * not_recorded one), so OUT holds one row per identity however many inputs measured it. Inputs are opened read-only and may be of any schema a read-only open
 * accepts (columns they lack take OUT's defaults); OUT is created or migrated by db_open.
 *
 * Results of different GPU models are never pooled (they are keyed by device as ever), but a
 * (recipe, problem) that OUT then holds verified results of from several device models, driver
 * versions or recipe sources is listed (db_merger_mixes), and with `strict` an input that would
 * make one is not merged.
 *
 * Each input is merged in one transaction: a failed or refused input leaves OUT as it was
 * before it. Memory: the merger is the caller's (db_merger_close). */
#ifndef DB_MERGE_H
#define DB_MERGE_H

#include <jansson.h>

#include "db.h"

/* The tables a merge copies, in the order it copies them (a table's references come first). */
enum db_merge_table {
  DB_MERGE_DEVICES,
  DB_MERGE_RECIPES,
  DB_MERGE_PROBLEMS,
  DB_MERGE_RUNS,
  DB_MERGE_PROPOSALS,
  DB_MERGE_CONFIGS,
  DB_MERGE_RESULTS,
  DB_MERGE_BINARIES,
  DB_MERGE_PEAKS,
  DB_MERGE_COMPARISONS,
  DB_MERGE_MEASUREMENTS,
  DB_MERGE_SELECTIONS,
  DB_MERGE_N_TABLES
};

/* The table's SQL name. */
const char *db_merge_table_name(int table);

typedef struct db_merge_count {
  long long read;        /* rows of the input */
  long long added;       /* rows new to OUT */
  long long duplicates;  /* rows OUT already held (read - added); for results: rows of an identity
                            OUT held, of which: */
  long long upgraded;    /* results: a final answer now in OUT's skipped or not_recorded row */
  long long retimed;     /* results: a final answer now a measurement under OUT's (a new one) */
} db_merge_count;

typedef struct db_merge_stats {
  db_merge_count t[DB_MERGE_N_TABLES]; /* per table; all 0 for a table the input lacks */
} db_merge_stats;

typedef struct db_merge_opts {
  int no_binaries;  /* 1: leave the compile cache out */
  int strict;       /* 1: refuse an input that makes a mix (see above) */
} db_merge_opts;

typedef struct db_merger db_merger;

/* Open (creating or migrating) OUT for merging into. *out is NULL on failure. */
int db_merger_open(const char *out_path, const db_merge_opts *o, db_merger **out, tune_err *err);

/* Merge one input into OUT in one transaction; *st gets its counts (zeroed first). An input that
 * is OUT itself, not a tune database or of a newer schema fails with TUNE_EINVAL; with strict,
 * an input that makes a mix fails with TUNE_EINVAL naming it, and OUT is left as it was. */
int db_merger_add(db_merger *m, const char *in_path, db_merge_stats *st, tune_err *err);

/* The (recipe, problem) pairs that the inputs merged so far have verified GPU results for and
 * that OUT holds verified results of from more than one device model, driver (of one model) or
 * recipe source hash for: *rows is a new JSON array (json_decref) of objects {recipe, problem,
 * problem_hash, devices: [...], drivers: ["name / driver", ...], sources: [...]}. */
int db_merger_mixes(db_merger *m, json_t **rows, tune_err *err);

/* The reference kernels every run times on its GPU (the peaks: tune's copy and wgmma kernels,
 * tuner/peaks.h), compared across the GPUs of one model in OUT, so that results merged from
 * several machines can be judged comparable: *rows is a new JSON array of {device, kind, unit,
 * gpus, min, max, spread} (spread = max / min - 1) for each model and peak kind measured on more
 * than one GPU. */
int db_merger_reference_spread(db_merger *m, json_t **rows, tune_err *err);

void db_merger_close(db_merger *m);

#endif
