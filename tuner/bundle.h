/* bundle.h: `tune bundle`, the deployment export.
 *
 * Owns: choosing, per kernel family (recipe), tuned problem and GPU model, the
 * fastest verified result of the results databases (results of different GPU
 * models are never pooled: each model gets its entries); recompiling those
 * variants (a cubin per requested arch on the compile pool, plus portable PTX
 * for the driver's JIT; a variant that does not compile for an arch is skipped
 * there and said so), turning the recipe's launch geometry, shapes, values,
 * defines and requirements into expressions libtunert evaluates without Lua
 * (checked here against Lua's own values for every tuned problem), and
 * writing it all with provenance through db/db_bundle.h. Ends by opening the
 * written bundle with libtunert and selecting every tuned problem.
 * Must not: write SQL (db/ does), or trust a measurement of other code: a
 * result measured with another recipe source is only taken when its compile
 * key equals the bundle's binary, or with --allow-source-change (recorded).
 * The stages live in bundle_*.c (bundle_int.h); the command line in bundle_cmd.c. */
#ifndef TUNE_BUNDLE_H
#define TUNE_BUNDLE_H

#include "tune_err.h"

#define TUNE_BUNDLE_MAX_RECIPES 32
#define TUNE_BUNDLE_MAX_ARCHS 8
#define TUNE_BUNDLE_MAX_DBS 16

typedef struct tune_bundle_opts {
  int n_recipes;
  const char *recipes[TUNE_BUNDLE_MAX_RECIPES]; /* names ("copy"), or family prefixes ("attention") */
  const char *db_path;        /* results database, default tune.db (the first of db_paths) */
  int n_dbs;                  /* 0: db_path only; else db_paths[0..n_dbs) (--db repeated): */
  const char *db_paths[TUNE_BUNDLE_MAX_DBS]; /* their results are taken together, as one */
  const char *device;         /* GPU model filter (case-insensitive substring), NULL: every model */
  const char *archs;          /* "sm_90a,sm_80"; NULL: the arch the results were measured on */
  const char *out;            /* the bundle file */
  int jobs;                   /* compile threads */
  int allow_source_change;    /* take results measured with another recipe source */
  int no_ptx;                 /* cubins only */
  int no_vendor;              /* no vendor entries: every tuned problem keeps its kernel */
  int n_no_vendor_for;        /* --no-vendor-for: families (names or prefixes, as recipes) that */
  const char *no_vendor_for[TUNE_BUNDLE_MAX_RECIPES]; /* keep their kernels where a peer won */
  int allow_missing_arch;     /* write a bundle where a family has no variant for a requested arch */
  const char *exe;            /* this binary: recipes are also looked up next to it */
  int quiet;
} tune_bundle_opts;

/* Make the bundle. TUNE_OK when written and verified; the file is never left
 * half written. */
int tune_bundle_run(const tune_bundle_opts *o, tune_err *err);

#endif
