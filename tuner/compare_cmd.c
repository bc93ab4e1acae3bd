/* compare_cmd.c: the command line of `tune compare` (compare.h). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argv.h"
#include "compare.h"
#include "session.h"
#include "stop_signal.h"

static const char usage_compare[] =
    "usage: tune compare RECIPE [options]\n"
    "       tune compare --report ID|last [--db FILE] [-o FILE]\n"
    "\n"
    "Re-times the fastest verified variants of each problem that the database holds for this\n"
    "GPU (and this recipe source) against the peers (cuBLAS, cuDNN, PyTorch; the peer server\n"
    "tools/peers/peer_server.py times them with tune's own CUPTI timer by the same protocol,\n"
    "once each peer's output matches a float64 reference of the same inputs: a peer that does\n"
    "not is reported as skipped (\"wrong values\") and is not timed; docs/peers.md),\n"
    "interleaved round by round, and prints per problem and timing mode the ratio peer time /\n"
    "tune time as its median and min-max range over the rounds: \"faster\" only when the whole\n"
    "range is above 1 (docs/measurement.md). Every round is stored (measurements table), and\n"
    "each peer's median is stored as a result of origin peer:<name>. With sustained rounds,\n"
    "tune's candidates are chosen among by their sustained medians (tune run's selection rule)\n"
    "and the choice is recorded as a selection, which `tune db best` and bundles take first:\n"
    "a bundle ships the winner of the mode deployments run in. Needs a GPU.\n"
    "\n"
    "options:\n"
    "  --db FILE        results database (default tune.db): the variants come from it\n"
    "  --device cuda:N  the GPU (default cuda:0)\n"
    "  --top-k N        variants re-timed per problem (default 3, at most 8)\n"
    "  --rounds N       interleaved rounds (default 3)\n"
    "  --timing M       burst, sustained, or both (default both)\n"
    "  --problem P      only the problem named P, or whose dims match K=V[,K=V...];\n"
    "                   repeatable\n"
    "  --peers CMD      the peer server command (default python3 <root>/tools/peers/peer_server.py)\n"
    "  --no-peers       re-time tune's variants only\n"
    "  --seed N         seed of the inputs (default 1)\n"
    "  -o FILE          also append the table(s) to FILE (Markdown)\n"
    "  --report ID|last print the table of comparison ID, or the latest of each recipe, from\n"
    "                   the database (no GPU needed)\n"
    "\n"
    "environment:\n"
    "  TUNE_WORKER_PROGRAM  program started as the worker, as for tune run\n";

/* The options into o; 2: a usage error (printed), 1: --help printed, 0: go on. */
static int parse(int argc, char **argv, tune_compare_opts *o, char *cmd, size_t cmd_n) {
  size_t used = (size_t)snprintf(cmd, cmd_n, "tune compare");
  for (int i = 0; i < argc; ++i)
    if (used < cmd_n) used += (size_t)snprintf(cmd + used, cmd_n - used, " %s", argv[i]);
  tune_argv ap;
  const char *v = NULL;
  tune_argv_init(&ap, "tune compare", argc, argv);
  while (tune_argv_next(&ap)) {
    if (tune_argv_flag(&ap, "--help") || tune_argv_flag(&ap, "-h")) { fputs(usage_compare, stdout); return 1; }
    else if (tune_argv_flag(&ap, "--no-peers")) o->peer_cmd = "";
    else if (tune_argv_str(&ap, "--db", &o->db_path) || tune_argv_str(&ap, "--device", &o->device) ||
             tune_argv_str(&ap, "--peers", &o->peer_cmd) || tune_argv_str(&ap, "-o", &o->out_path)) {}
    else if (tune_argv_int(&ap, "--top-k", &o->top_k)) { if (o->top_k < 1 || o->top_k > 8) tune_argv_bad(&ap, "want 1..8"); }
    else if (tune_argv_int(&ap, "--rounds", &o->rounds)) { if (o->rounds < 1 || o->rounds > 64) tune_argv_bad(&ap, "want 1..64"); }
    else if (tune_argv_u64(&ap, "--seed", &o->seed)) {}
    else if (tune_argv_str(&ap, "--problem", &v)) {
      if (o->n_problems >= TUNE_MAX_PROBLEM_FILTERS) tune_argv_bad(&ap, "too many --problem");
      else o->problems[o->n_problems++] = v;
    } else if (tune_argv_str(&ap, "--timing", &v)) {
      if (!strcmp(v, "burst")) o->burst = 1;
      else if (!strcmp(v, "sustained")) o->sustained = 1;
      else if (!strcmp(v, "both")) o->burst = o->sustained = 1;
      else tune_argv_bad(&ap, "want burst, sustained or both");
    } else if (tune_argv_str(&ap, "--report", &v)) {
      int id = 0;
      if (!strcmp(v, "last")) o->report_id = -1;
      else if (tune_parse_int(v, &id) || id < 1) tune_argv_bad(&ap, "want a comparison id or last");
      else o->report_id = id;
    } else if (tune_argv_positional(&ap, &v)) {
      if (o->recipe_path) tune_argv_error(&ap, "one recipe at a time (%s and %s)", o->recipe_path, v);
      o->recipe_path = v;
    } else tune_argv_unknown(&ap);
  }
  if (ap.failed) { fprintf(stderr, "%s\n", ap.msg); return 2; }
  if (!o->recipe_path && !o->report_id) { fprintf(stderr, "%s", usage_compare); return 2; }
  if (!o->burst && !o->sustained) o->burst = o->sustained = 1;
  return 0;
}

int tune_compare_main(int argc, char **argv) {
  tune_compare_opts o = {.top_k = 3, .rounds = 3, .seed = 1};
  char cmd[2048], exe[PATH_MAX];
  int p = parse(argc, argv, &o, cmd, sizeof cmd);
  if (p) return p == 1 ? 0 : 2;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  const char *worker = getenv("TUNE_WORKER_PROGRAM"); /* a wrapper or a test's stand-in, as tune run's */
  o.exe = worker && *worker ? worker : exe;
  o.command = cmd;
  tune_err err;
  tune_err_clear(&err);
  tune_stop_signals_install();
  if (tune_compare_run(&o, &err)) {
    fprintf(stderr, "tune compare: %s\n", err.msg);
    return 1;
  }
  return tune_interrupted ? 128 + tune_interrupted : 0;
}
