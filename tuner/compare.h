/* compare.h: tune compare - tune's best variants against the peers, even-handed.
 *
 * For each problem of a recipe, the top-k verified variants the database holds for this GPU
 * are re-timed by the worker, and the peers (cuBLAS, cuDNN, PyTorch) by the peer server
 * (peer_client.h) with the same CUPTI timer and protocol, interleaved round by round (the side
 * that goes first alternates); all burst rounds of a problem, after a second of rest, then all
 * its sustained rounds. Every round's timing is a measurement; a
 * peer's median over the rounds is also stored as its result (origin peer:<name>). The table
 * (compare_report.h) is printed at the end, and `--report` prints it again from the database
 * without a GPU. docs/measurement.md states the protocol. */
#ifndef TUNE_COMPARE_H
#define TUNE_COMPARE_H

#include <stdint.h>

#include "session.h"
#include "tune_err.h"

typedef struct tune_compare_opts {
  const char *recipe_path;
  const char *db_path;          /* default tune.db */
  const char *device;           /* cuda:N, default cuda:0 */
  int top_k;                    /* variants per problem, default 3 */
  int rounds;                   /* default 3, at least 1 */
  int burst, sustained;         /* timing modes; neither given: both */
  const char *peer_cmd;         /* NULL: python3 <root>/tools/peers/peer_server.py; "" none */
  int n_problems;
  const char *problems[TUNE_MAX_PROBLEM_FILTERS];
  uint64_t seed;                /* inputs of the re-timed variants, default 1 */
  const char *exe;              /* this binary, for `tune worker` */
  const char *command;          /* the command line, recorded */
  const char *out_path;         /* also write the table here (Markdown); NULL none */
  int64_t report_id;            /* > 0: only print comparison report_id; -1: the latest */
} tune_compare_opts;

int tune_compare_run(const tune_compare_opts *o, tune_err *err);
/* `tune compare ARGS...` (compare_cmd.c): the exit status. */
int tune_compare_main(int argc, char **argv);

#endif
