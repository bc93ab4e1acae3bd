/* bench_search.h: tune-bench-search, tune's search strategies benchmarked on a recorded space.
 *
 * Replays a recorded exhaustive database: every strategy runs on the recipe's space as `tune run`
 * would drive it (batches, observations), with the recorded time of each config as its cost, for
 * seeds 1..N, and is scored at budgets of 1, 2, 5, 10, 20 and 50 % of the space (counted in
 * evaluations, and in recorded compile + measure time) by the P score of Willemsen et al. (FGCS
 * 2024) against random search. docs/search.md gives the method.
 *
 * Per recipe of the file and per problem:
 *  1. the space is enumerated as `tune run` does (only the configs that apply to the problem:
 *     problem_space.h), and every point gets its recorded answer (db_bench_rows, matched by config
 *     hash): a cost (median kernel time) when ok, a failure otherwise (wrong, crashed, skipped, not
 *     recorded...), and a time: the compile time of its binary plus the recorded verify-and-time
 *     time (db_bench_row.build_ms + measure_ms)                                  (bench_space.c);
 *  2. budgets: 1, 2, 5, 10, 20, 50 % of the space in evaluations (rounded, at least 1) and of the
 *     whole space's recorded time;
 *  3. baseline: the expected best of random search (uniform draws without replacement) at each
 *     budget: exactly for evaluation budgets (order statistics), as the mean of BASELINE_RUNS
 *     seeded random orders for time budgets; an evaluation counts when it completes within the
 *     time                                                                        (bench_space.c);
 *  4. each strategy runs for seeds 1..N, driven like `tune run` drives it (next_batch of up to
 *     BATCH points, then one observe per point, cost < 0 for a failure), until the largest budgets
 *     are spent; problems in the recipe's order, each run first evaluating its warm start
 *     (warm_start.h: the bests the same strategy and seed found at that budget on the earlier
 *     problems), one run per distinct warm start                                    (simulate.c);
 *  5. P = (baseline - found) / (baseline - optimum), where found is the best time found within
 *     the budget, or the worst time of the space when none was; 0 is random search, 1 the optimum,
 *     < 0 worse than random. Summaries are the median and the quartiles (linear interpolation)
 *     over the seeds                                                                  (report.c);
 *  6. B98: the run of the largest budget goes on to bench_trajectory_cap evaluations and keeps its
 *     best so far after each (and, for --parallel K, the round of K concurrent evaluations in which
 *     each completes: R98 is B98 in rounds, the wall time of K GPUs); B98 is the fewest evaluations at which the median over the seeds of
 *     optimum / found reaches NEAR_OPT, W90 the fewest at which WORST_SHARE of the seeds do
 *     (criteria (a) and (c); (b) compares with Kernel Tuner: tools/bench/search_criteria.py)  (report.c).
 * Runs are spread over threads; each is deterministic for its seed. Plain C over search/, db/ and
 * the tuner's core (recipes, problem spaces, warm start): no GPU, no compiler.
 * Memory: each type's owner frees it with its _free; nothing else outlives a call. */
#ifndef TUNE_BENCH_SEARCH_H
#define TUNE_BENCH_SEARCH_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "db.h"
#include "recipe.h"
#include "search.h"
#include "tune_err.h"

#define N_BUDGETS 6
#define BATCH 32              /* as tune run asks (TUNE_BATCH, problem_run.h) */
#define BASELINE_RUNS 20000   /* random orders averaged for the time baseline */
#define GOAL_BUDGET 3         /* index of the 10 % budget */
#define MAX_STRATEGIES 16
#define WARM_DB_MAX 1024      /* --warm-db candidates per problem, at most */
#define BENCH_N_FEAT 3        /* compile-time features: registers, shared bytes, ln(1 + spilled bytes) */
#define NEAR_OPT 0.98         /* B98: optimum / found at least this */
#define WORST_SHARE 0.9       /* criterion (c): this share of the seeds within 2 % */

extern const double bench_budget_frac[N_BUDGETS];

/* ---- one problem's recorded space (bench_space.c) ---- */

typedef struct bench_space {
  const search_space *space;   /* borrowed */
  size_t n;                    /* points */
  double *cost;                /* [n] [ns] recorded median, -1 failed */
  double *time_s;              /* [n] [s] compile + measure */
  double *quick_s, *meas_s;    /* [n] [s] halving: compile + quick measure (a failure: its whole
                                  recorded measure); a contender's full measure on top */
  size_t n_ok, n_missing;      /* successes; points with no recorded row */
  size_t n_near;               /* successes within 2 % of the optimum (opt / cost >= NEAR_OPT) */
  int n_status[DB_STATUS_COUNT];
  double opt, worst;           /* [ns] best and worst success */
  double total_s;              /* [s] the whole space */
  long evals[N_BUDGETS];       /* evaluation budgets */
  double secs[N_BUDGETS];      /* [s] time budgets */
  double base_eval[N_BUDGETS]; /* [ns] random search's expected best */
  double base_time[N_BUDGETS];
  double *feat;                /* [n * BENCH_N_FEAT] compile-time features (--compile-features), NAN unknown;
                                  NULL when not loaded */
} bench_space;

/* Build b for problem p of recipe r over space (the configs that apply to p) from the recorded db.
 * TUNE_ENOTFOUND when nothing verified is recorded for p. On failure b is empty. */
int bench_space_load(bench_space *b, db_conn *db, tune_recipe *r, const tune_problem *p,
                     const search_space *space, tune_err *err);
void bench_space_free(bench_space *b);

/* --compile-features: b->feat from the recording at db_path (bench_features.c). */
int bench_features_load(bench_space *b, const char *db_path, tune_recipe *r, const tune_problem *p, tune_err *err);

/* ---- the strategies run on one problem (simulate.c) ---- */

typedef struct bench_run {
  const bench_space *b;
  const char *const *names;  /* strategies, as search_strategy_new knows them */
  const char *const *labels; /* what the tables call them */
  const double *halving;     /* [strategy] successive-halving margin, 0 none */
  int with_halving;          /* --halving: a strategy runs with it (adds the time spent to the output) */
  int n_strategies, repeats;
  double *found;             /* [strategy][seed][2][N_BUDGETS] [ns] */
  double *spent;             /* [strategy][seed][N_BUDGETS] [s] time spent by each evaluation budget */
  const int *warm;           /* [strategy] 1: warm start from the earlier problems' bests (warm_start.h) */
  /* [strategy][seed][N_BUDGETS][max_problems] the best point found at each evaluation budget on
     each earlier problem of the recipe (n_hist of them): the warm-start candidates */
  uint64_t *hist;
  const double *hist_dist;   /* [n_hist] distance of each earlier problem to this one (warm_start.h) */
  int n_hist, max_problems;
  const uint64_t *extra;     /* [n_extra] --warm-db candidates for this problem, the same for every run */
  const double *extra_dist;  /* [n_extra] their problems' distances to this one */
  int n_extra;
  int project;               /* this problem opens a new regime: tune_warm_order may project */
  uint64_t *found_pt;        /* [strategy][seed][N_BUDGETS] this problem's best point per evaluation budget */
  double *curve;             /* [strategy][seed][cap] [ns] best found after 1..cap evaluations (INFINITY: none
                                yet), in the run of the largest budget (its warm start: a run without --budget) */
  long cap;                  /* bench_trajectory_cap(points) */
  int parallel;              /* --parallel: points measured at once (search_strategy_set_parallel) */
  long *rounds;              /* [strategy][seed][cap] rounds of `parallel` concurrent evaluations
                                elapsed when each evaluation of curve completes (wall time in units of
                                one evaluation; = the evaluation count when parallel is 1) */
  int *has_pt;               /* [strategy][seed][N_BUDGETS] 1: found_pt is set */
  atomic_int next;           /* next job: strategy * repeats + seed index */
  pthread_mutex_t lock;
  tune_err err;              /* first failure */
} bench_run;

/* Every strategy for every seed on br's problem, on `jobs` threads: fills found, spent, found_pt
 * and has_pt. */
int bench_run_all(bench_run *br, int jobs, tune_err *err);

/* After a problem: each run's best point per evaluation budget joins its warm-start candidates. */
void bench_hist_append(bench_run *br);

/* [kind] 0: the best found within each evaluation budget, 1: within each time budget [ns]. */
double *bench_found_at(const bench_run *br, int s, int seed_i, int kind);

/* Evaluations a trajectory covers: criterion (c)'s bar, at least 20 (all of a smaller space). B98
 * beyond it fails (a) and (c) whatever it is; Kernel Tuner's trajectories go further
 * (kernel_tuner_sim.py's trajectory_cap: half the space), so its B98 is known where tune's is. */
long bench_trajectory_cap(size_t n);

/* ---- scores and output (report.c) ---- */

/* B98 and the criteria of one strategy on one problem (docs/search.md, "The criteria"). 0 where
 * not reached within the trajectory's cap. */
typedef struct bench_b98 {
  long b98;                  /* fewest evaluations at which the median over seeds of optimum / found >= NEAR_OPT */
  long w90;                  /* fewest evaluations at which WORST_SHARE of the seeds have optimum / found >= NEAR_OPT */
  long r98;                  /* as b98 in rounds (--parallel): the wall time to 98 %, in evaluation times */
} bench_b98;

/* The criteria's bars on a space of n points: (a) B98 <= max(10 %, 5); (c) W90 <= max(25 %, 10). */
long bench_bar_a(size_t n);
long bench_bar_c(size_t n);

/* Strategy s's B98 and W90 from its trajectories. tmp: repeats doubles of scratch. */
bench_b98 bench_b98_of(const bench_run *br, int s, double *tmp);


typedef struct bench_cell {
  double median, q1, q3;     /* of P */
  double perf_median;        /* median of optimum / found */
  double frac98;             /* share of seeds with optimum / found >= 0.98 */
} bench_cell;

typedef bench_cell bench_cells[2][N_BUDGETS]; /* [kind][budget] of one strategy */

/* Strategy s's cell at budget j of kind (0 evaluations, 1 time) against baseline base.
 * tmp, tmp2: repeats doubles of scratch each. */
bench_cell bench_summarize(const bench_run *br, int s, int kind, int j, double base, double *tmp, double *tmp2);

/* The text report of one problem: header, both tables, the goal line, and with --halving the time
 * spent by the default strategy without (a) and with (h) halving. tmp: repeats doubles. */
void bench_print_problem(const bench_run *br, const tune_recipe *r, const tune_problem *p, const char *device,
                         size_t n_rejected, bench_cells *cells, int a, int h, double *tmp);

/* The JSON of one problem (every number of the tables, the baselines, every run's best); NULL
 * when out of memory. The caller owns it. */
json_t *bench_problem_json(const bench_run *br, const tune_recipe *r, const tune_problem *p,
                           bench_cells *cells, double *tmp);

#endif
