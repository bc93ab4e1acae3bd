/* progress.h: what `tune run` prints while it tunes: a problem's heading, a line per stored
 * result, the progress bar (redrawn in place on a terminal, a "progress:" line every ~10 %
 * elsewhere), a problem's best, and a recipe's summary (statuses, compiles, halving, GPU busy).
 *
 * Owns: the wording and layout of those lines and the counts a recipe run reports
 * (tune_run_stats). Must not: decide anything about the search; every function only reads
 * what it is given and writes to stdout. */
#ifndef TUNE_PROGRESS_H
#define TUNE_PROGRESS_H

#include <stddef.h>

#include "backend.h"
#include "db.h"
#include "problem_space.h"
#include "recipe.h"

/* Bytes of a config's progress label (its JSON and its code's origin), with the terminating 0. */
#define TUNE_LABEL_MAX 2100

/* The counts of one recipe run, summed over its problems. */
typedef struct tune_run_stats {
  int n_status[DB_STATUS_COUNT]; /* results by status, new and resumed */
  int compiled, cached, resumed, total; /* binaries compiled / from the cache; results resumed / stored */
  int guessed;                /* compiles started ahead of the strategy and then proposed (speculate.h) */
  int pruned;                 /* skipped after compiling: cannot launch or under min_occupancy (prune.h) */
  int compile_only;           /* of the skipped: compiled fine, not timed (--compile-only) */
  int wgmma_serialized;       /* compiled variants whose ptxas report says their wgmma were serialized */
  char wgmma_example[TUNE_LABEL_MAX]; /* the first of them: its progress label */
  int quick_only, quick_full; /* halving: verified variants that kept their quick timing / were then timed fully */
  double t_measure, t_compile; /* [s] wall time in the backend's measure / waiting for the compile pool */
  double t_select;            /* [s] in the backend's measure for the selection rounds (reselect.h) */
  double t_setup;             /* [s] setting problems up: the reference compiled, inputs and reference outputs made */
  tune_kernel_time kernels;   /* the worker's CUPTI kernel time in the measures of t_measure and t_select
                                 (backend.h); none reported: the summary says nothing of it */
} tune_run_stats;

/* [s] a monotonic clock: the times of the progress lines and the summary */
double tune_now_s(void);

/* "  12.34 us   567.8 GB/s   9.1 TFLOP/s" for a median of ns [ns]; the rates where the
 * problem states bytes or flops. */
void tune_print_metrics(double ns, const tune_problem_setup *s, char *buf, size_t n);

/* The count a result line shows and the total it is shown against: this problem's stored
 * results against min(budget, n_points), where resumed ones count too unless the budget is
 * the smaller (they do not use it). *limit receives the total. */
long long tune_progress_done(long long budget, size_t n_points, long long evaluated, long long resumed,
                             size_t *limit);

/* One problem's output state. */
typedef struct tune_progress {
  int tty;                         /* stdout is a terminal: the bar is redrawn in place */
  int quiet;                       /* no line per result, no plain progress lines */
  int n_width;                     /* digits of the space size, for aligned counts */
  double t_start;                  /* [s] monotonic, when the problem started */
  long long budget;                /* --budget, 0 = none */
  size_t n_points;                 /* configs of the problem's space */
  const tune_problem_setup *setup; /* bytes and flops for the rates */
} tune_progress;

void tune_progress_init(tune_progress *pg, int quiet, long long budget, size_t n_points,
                        const tune_problem_setup *setup);

/* "== recipe / problem dims: N configs ..., backend B" and what the recipe rejected;
 * n_sweep > 0: the problem only verifies that many code proposals made for other problems. */
void tune_progress_problem(const char *recipe, const tune_problem *p, size_t n_points, const tune_rejections *rej,
                           const char *backend, int quiet, int n_sweep);

/* A stored result: its line (status, label, figures or the error's first line) and the bar.
 * dyn_shared [bytes]: the variant's dynamic shared memory (compile-only lines); quick_only:
 * the result keeps a halving quick timing; best [ns]: the problem's best so far. */
void tune_progress_result(const tune_progress *pg, const db_result *res, const char *label, unsigned dyn_shared,
                          int quick_only, long long evaluated, long long resumed, double best,
                          const tune_run_stats *st);

/* The end of a problem: the bar erased, then its best (unless it only verified code proposals). */
void tune_progress_problem_end(const tune_progress *pg, const char *problem, int sweep, double best,
                               const char *best_label);

/* A recipe's summary. halving: its margin (for the halving line); wall [s]: the recipe's time;
 * be NULL: compile-only. */
void tune_progress_recipe(const char *recipe, const tune_run_stats *st, double halving, double wall,
                          const tune_backend *be, const char *strategy);

#endif
