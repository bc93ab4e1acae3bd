/* bench_search.h: `tune bench-search`, the search strategies benchmarked on a
 * recorded space, and `tune db export`.
 *
 * bench-search replays a recorded exhaustive database: every strategy runs on
 * the recipe's space as `tune run` would drive it (batches, observations),
 * with the recorded time of each config as its cost, for seeds 1..N, and is
 * scored at budgets of 1, 2, 5, 10, 20 and 50 % of the space (counted in
 * evaluations, and in recorded compile + measure time) by the P score of
 * Willemsen et al. (FGCS 2024) against random search. docs/search.md gives
 * the method. Plain C over search/ and db/: no GPU, no compiler.
 * Memory: nothing outlives a call. */
#ifndef TUNE_BENCH_SEARCH_H
#define TUNE_BENCH_SEARCH_H

#include "db.h"
#include "tune_err.h"

/* `tune bench-search RECIPE [options]`; argv holds the arguments after the
 * verb. Returns the process exit status (0 ok, 1 failure, 2 usage). */
int tune_bench_search_main(int argc, char **argv);

/* `tune db export`: write one problem's results of db to out_path ("-" or
 * NULL: stdout) in format (kernel_tuner or t4). Returns the process exit
 * status; failures are printed to stderr. */
int tune_db_export_cli(db_conn *db, const char *format, const char *recipe, const char *problem,
                       const char *out_path);

#endif
