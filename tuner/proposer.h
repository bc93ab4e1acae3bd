/* proposer.h: the LLM hook, an external proposer command (docs/llm-hook.md).
 *
 * Owns: spawning the proposer per request (sh -c COMMAND, a cleared
 * environment, a timeout after which its process group is killed), building
 * the versioned JSON request (recipe, problem, device, best results, recent
 * failures, budget; never input or output data), and validating the response
 * strictly (unknown fields, size limits, values from the recipe's lists, points
 * in the enumerated space, code only inside a template's TUNE:REGION). Every
 * proposal is recorded in the database's proposals table, accepted or not.
 * Must not: measure, compile or choose a fallback; the session does that.
 * Memory: tune_llm is owned by the caller of tune_llm_new (tune_llm_free);
 * tune_proposer_exchange returns a malloc'd response owned by the caller. */
#ifndef TUNE_PROPOSER_H
#define TUNE_PROPOSER_H

#include <stddef.h>
#include <stdint.h>

#include "code_proposal.h"
#include "db.h"
#include "peaks.h"
#include "recipe.h"
#include "search.h"
#include "tune_err.h"

#define TUNE_PROPOSER_VERSION 1
#define TUNE_PROPOSER_MAX_ENV 16
#define TUNE_PROPOSER_MAX_BYTES (1 << 20) /* request and response limit [bytes] */
#define TUNE_PROPOSER_MAX_CODE (64 << 10) /* code of one region proposal [bytes] */

typedef struct tune_proposer_opts {
  const char *command;                    /* run as sh -c COMMAND */
  int n_env;
  const char *env[TUNE_PROPOSER_MAX_ENV]; /* names passed through besides PATH, HOME, LANG */
  int timeout_ms;                         /* per request; 0 = 60 s */
} tune_proposer_opts;

/* Run the proposer once: write request to its stdin, read its stdout (at
 * most TUNE_PROPOSER_MAX_BYTES). On success *resp (NUL-terminated, malloc'd)
 * and *resp_n are set. On failure (spawn, timeout: killed, too large, exit
 * status not 0) returns TUNE_EIO with why filled and *resp NULL. */
int tune_proposer_exchange(const tune_proposer_opts *o, const char *request, size_t request_n,
                           char **resp, size_t *resp_n, char *why, size_t why_n);

/* Per problem state of the llm strategy. */
typedef struct tune_llm tune_llm;

typedef struct tune_llm_ctx {
  const tune_proposer_opts *opts;
  tune_recipe *recipe;
  const tune_problem *problem;
  const search_space *space;   /* borrowed: outlives the tune_llm */
  const db_device *device;
  const tune_peaks *peaks;
  double bytes, flops;         /* per launch, for GB/s and TFLOP/s */
  db_conn *db;
  int64_t run_id, problem_id;
  int quiet;                   /* 1: no line per rejected proposal */
  tune_code_set *codes;        /* borrowed: accepted code proposals become variants here */
} tune_llm_ctx;

int tune_llm_new(const tune_llm_ctx *c, tune_llm **out, tune_err *err);
void tune_llm_free(tune_llm *l);

/* Ask the proposer for up to max variants. Accepted points not seen before go
 * to out[], with origins[i] = "llm:<proposal id>"; accepted code proposals
 * are added to the context's code set (*n_code of them; points and code
 * together at most max). Both may be 0 when it gave nothing usable (the
 * reasons are printed and stored). Returns non-zero only when the database
 * fails or memory runs out. */
int tune_llm_propose(tune_llm *l, uint64_t *out, char (*origins)[32], int max, int *n_out,
                     int *n_code, tune_err *err);

/* The validating half of tune_llm_propose: parse the proposer's response resp[0..resp_n) (need not
 * be NUL-terminated), check and record each proposal under the request's hash req_hash, and
 * fill out/origins and the code set as tune_llm_propose does; n numbers the request in printed
 * lines. A separate entry point so that the response parser can be fuzzed (tests/fuzz) without
 * spawning a proposer. Returns non-zero only when the database fails or memory runs out. */
int tune_llm_take_response(tune_llm *l, int n, const char *req_hash, const char *resp, size_t resp_n,
                           uint64_t *out, char (*origins)[32], int max, int *n_out, int *n_code,
                           tune_err *err);

/* Points already measured or proposed in this problem are not measured again. */
void tune_llm_mark_seen(tune_llm *l, uint64_t point);
int tune_llm_seen(const tune_llm *l, uint64_t point);

/* A result of this problem, for the next request's best and failures lists;
 * code_proposal: the proposal id of a code variant, 0 for a config of the template. */
void tune_llm_observe(tune_llm *l, const char *params_json, int64_t code_proposal, const db_result *res);

#endif
