/* proposal_source.h: where a problem run's variants come from, behind one interface.
 *
 * A source proposes variants (points of the problem's space, or code variants of the LLM
 * hook) and observes results. The sources of one problem form a chain, asked in order for
 * each batch: the first `lead` source that proposes anything gives the batch's configs (a warm
 * start's configs make a batch of their own, before the strategy proposes anything), then
 * every `fill` source tops the batch up (the code proposals not yet evaluated on this
 * problem). A result goes back to the source that proposed it, and to every source that
 * observes all results (the LLM proposer learns from every variant).
 *
 * The sources: the search strategy (search/), the warm start (warm_start.h: its configs are
 * observed by the strategy as its own), the LLM proposer (proposer.h) with the random strategy
 * filling batches it leaves empty, and the recipe's code-proposal set (code_proposal.h).
 * Must not: compile, measure or touch the database (problem_run.c does).
 * Memory: a chain owns its sources (tune_source_chain_free); a source owns what its
 * constructor says. */
#ifndef TUNE_PROPOSAL_SOURCE_H
#define TUNE_PROPOSAL_SOURCE_H

#include <stdint.h>

#include "code_proposal.h"
#include "db.h"
#include "proposer.h"
#include "search.h"
#include "tune_err.h"

#define TUNE_MAX_SOURCES 4
#define TUNE_SOURCE_MAX_WANT 32 /* proposals per batch at most: a problem run's batch */

typedef struct tune_source tune_source;

/* One proposed variant. */
typedef struct tune_proposal {
  uint64_t point;       /* a point of the problem's space (code == -1) */
  int code;             /* index into the code set: a code variant; -1: a config of the template */
  char origin[32];      /* configs.origin: the strategy's name, "llm:<id>", "llm-code:<id>" */
  tune_source *source;  /* who proposed it: observes its result */
} tune_proposal;

typedef enum { TUNE_SOURCE_LEAD, TUNE_SOURCE_FILL } tune_source_role;

struct tune_source {
  const char *name;       /* for messages and tests */
  tune_source_role role;
  int observes_all;       /* 1: observes every result of the problem, not only its own */
  /* Up to want (<= TUNE_SOURCE_MAX_WANT) proposals into out[] (their source set to s), *n of them; 0 when it has none
   * now. Non-zero only when it cannot go on (database, memory). */
  int (*next)(tune_source *s, tune_proposal *out, int want, int *n, tune_err *err);
  /* The result of p (params_json: its config) for the source's own choices. */
  void (*observe)(tune_source *s, const tune_proposal *p, const char *params_json, const db_result *res);
  void (*free)(tune_source *s); /* NULL: nothing to free */
};

typedef struct tune_source_chain {
  int n;
  tune_source *s[TUNE_MAX_SOURCES]; /* in the order they are asked; owned */
} tune_source_chain;

/* Append s (the chain takes it; on failure, -1: full, s is freed). */
int tune_source_chain_add(tune_source_chain *c, tune_source *s);
/* A batch of up to want proposals: the first lead source that has any, then the fill sources. */
int tune_source_chain_next(tune_source_chain *c, tune_proposal *out, int want, int *n, tune_err *err);
/* Hand p's result to its source and to the sources that observe all, in chain order. */
void tune_source_chain_observe(tune_source_chain *c, const tune_proposal *p, const char *params_json,
                               const db_result *res);
void tune_source_chain_free(tune_source_chain *c);

/* A search strategy (search_strategy_new(name, space, seed)); its proposals carry `origin`.
 * It observes its proposals' times (failures as -1). */
int tune_source_strategy_new(const char *name, const search_space *space, uint64_t seed, const char *origin,
                             tune_source **out, tune_err *err);
/* Proposals for k GPUs at once (search_strategy_set_parallel): before the first proposal. */
int tune_source_strategy_set_parallel(tune_source *s, int k, tune_err *err);
/* The strategy of the chain's first strategy source (for its guesses, search_strategy_peek), NULL
 * when it has none. Borrowed: the chain owns it. */
const search_strategy *tune_source_chain_strategy(const tune_source_chain *c);
/* The warm start: pts[n] (tune_warm_order's order) a batch of its own at a time, each with
 * `origin`; their results go to `observer` (the strategy, which takes them as its own; not
 * owned, may be NULL). NULL on no memory. */
tune_source *tune_source_warm_new(const uint64_t *pts, int n, const char *origin, tune_source *observer);
/* The LLM proposer (owns llm; its code proposals join `codes`); observes every result. */
tune_source *tune_source_llm_new(tune_llm *llm, tune_code_set *codes);
/* The random strategy `random` (owned) filling a batch the proposer left empty, without the
 * points the proposer has seen (llm, not owned), and only while no code variant waits for
 * problem pi; says so when it does. NULL on no memory (random is freed). */
tune_source *tune_source_llm_fill_new(tune_source *random, tune_llm *llm, const tune_code_set *codes, int pi);
/* The code variants of `codes` not yet evaluated on problem pi (named `problem`), as a fill
 * source: each counted in the set's verdict over the problems. NULL on no memory. */
tune_source *tune_source_code_new(tune_code_set *codes, int pi, const char *problem);

#endif
