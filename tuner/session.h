/* session.h: one `tune run`: for each recipe of a file, a device and backend,
 * a run row, and each problem through the pipeline of problem_run.h, which
 * asks its sources for batches, compiles them on the pool, measures them on
 * the backend and stores each result in its own transaction, so a killed run
 * loses at most the variant in flight and a second run resumes where it
 * stopped. */
#ifndef TUNE_SESSION_H
#define TUNE_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "tune_err.h"

#define TUNE_MAX_PROBLEM_FILTERS 32

typedef struct tune_run_opts {
  const char *recipe_path;
  const char *db_path;         /* default "tune.db" */
  const char *device;          /* "cuda:N", "replay:FILE" or NULL (auto) */
  const char *strategy;        /* NULL: the recipe's `strategy`, else TUNE_DEFAULT_STRATEGY (search_config.h) */
  double min_occupancy;        /* --min-occupancy: prune under this theoretical occupancy (prune.h) */
  int min_occupancy_given;     /* 0: the recipe's min_occupancy, else off */
  int halving_on;              /* --halving: successive halving, with the recipe's margin or 0.1 (halving.h) */
  double halving;              /* --halving=F: margin F (> 0); --no-halving: < 0; 0: not given */
  long long budget;            /* evaluations per problem, 0 = all */
  int no_warm_start;           /* 1: do not try other problems' bests first (warm_start.h) */
  double budget_s;             /* seconds per recipe, 0 = none */
  int n_problems;
  const char *problems[TUNE_MAX_PROBLEM_FILTERS]; /* NAME or K=V[,K=V] filters */
  int n_only;
  const char *only[TUNE_MAX_PROBLEM_FILTERS];    /* K=V[,K=V] filters on configs */
  int jobs;                    /* compile threads, default: cores */
  int compile_only;
  const char *arch;            /* "sm_90a"; default from the device */
  uint64_t seed;
  int seed_given;
  int timeout_ms;              /* watchdog override, 0 = derived */
  const char *exe;             /* this binary, for `tune worker` */
  int quiet;
  const char *root;            /* --root: the project root (else TUNE_ROOT, else found: project_root.h) */
  const char *problems_from;   /* --problems-from: a served-problem log (served_log.h) as the problem list */
  int sustained;               /* --timing sustained: every variant timed back to back (docs/measurement.md) */
  int shard_index, shard_count; /* --shard I/N: this run's share of the work (shard.h); 0/0: all of it */
  /* --strategy llm (docs/llm-hook.md) */
  const char *proposer;        /* the proposer command, run as sh -c */
  int n_proposer_env;
  const char *proposer_env[16]; /* environment variables passed to it by name */
  int proposer_timeout_ms;     /* per request, 0 = 60 s */
} tune_run_opts;

/* Does a config (its JSON, as the database stores it) pass the --only filters? */
int tune_run_opts_select_config(const tune_run_opts *o, const char *params_json);

/* One --problem filter (tune run, tune compare): a problem's name, or K=V[,K=V] on its dims (a bare
 * word that is not a number or boolean matches a string dim). The check fails with TUNE_EINVAL when
 * no problem of the file's recipes matches, listing their names (and the nearest to a misspelt one). */
struct tune_problem;
struct tune_recipes;
int tune_problem_filter_match(const char *filter, const struct tune_problem *p);
int tune_problem_filter_check(const struct tune_recipes *set, const char *filter, const char *file, tune_err *err);

/* Check the --problem and --only filters against the recipe file's recipes: each --problem must
 * name a problem of one of them (or match its dims), each K=V of --only a parameter and one of its
 * values. TUNE_EINVAL otherwise, naming the option and listing the valid names. */
struct tune_recipes;
int tune_run_opts_check(const tune_run_opts *o, const struct tune_recipes *set, tune_err *err);

/* Run the recipe file's recipes. Returns TUNE_OK when the run completed (even
 * if variants failed: those are results). *usage_error = 1 when it failed
 * because an option does not fit the recipe (tune_run_opts_check). */
int tune_session_run(const tune_run_opts *o, int *usage_error, tune_err *err);

/* The recorded database a recipe file replays by default:
 * <root>/data/recorded/<recipe file stem>.db, written into out[n]; for a
 * file recipes/<family>/<sub>.lua, <family>.<sub>.db where that exists
 * (a sub-recipe file recorded on its own, e.g. gemm.f16.db). */
void tune_default_replay_path(const struct tune_recipes *set, const char *recipe_path, char *out, size_t n);

/* The recipe's row in db (name, raw source hash, file, text), with its normalised code hash
 * (source_hash.h) so that a replay of what is measured under it survives comment edits. */
struct db_conn;
struct tune_recipe;
int tune_recipe_put(struct db_conn *db, const struct tune_recipe *r, const char *file_text, int64_t *id, tune_err *err);

/* Set by SIGINT: the session stops after the variant in flight. */
extern volatile int tune_interrupted;

#endif
