/* compare_cmd.c: the command line of `tune compare` (compare.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"

static const char usage_compare[] =
    "usage: tune compare RECIPE [options]\n"
    "       tune compare --report ID|last [--db FILE] [-o FILE]\n"
    "\n"
    "Re-times the fastest verified variants of each problem that the database holds for this\n"
    "GPU (and this recipe source) against the peers (cuBLAS, cuDNN, PyTorch; the peer server\n"
    "tools/peers/peer_server.py times them with tune's own CUPTI timer by the same protocol),\n"
    "interleaved round by round, and prints per problem and timing mode the ratio peer time /\n"
    "tune time as its median and min-max range over the rounds: \"faster\" only when the whole\n"
    "range is above 1 (docs/measurement.md). Every round is stored (measurements table), and\n"
    "each peer's median is stored as a result of origin peer:<name>. Needs a GPU.\n"
    "\n"
    "options:\n"
    "  --db FILE        results database (default tune.db): the variants come from it\n"
    "  --device cuda:N  the GPU (default cuda:0)\n"
    "  --top-k N        variants re-timed per problem (default 3, at most 8)\n"
    "  --rounds N       interleaved rounds (default 3)\n"
    "  --timing M       burst, sustained, or both (default both)\n"
    "  --problem P      only the problem named P; repeatable\n"
    "  --peers CMD      the peer server command (default python3 <root>/tools/peers/peer_server.py)\n"
    "  --no-peers       re-time tune's variants only\n"
    "  --seed N         seed of the inputs (default 1)\n"
    "  -o FILE          also append the table(s) to FILE (Markdown)\n"
    "  --report ID|last print the table of comparison ID, or the latest of each recipe, from\n"
    "                   the database (no GPU needed)\n";

static int parse_int(const char *opt, const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "tune compare: %s %s: want an integer in %ld..%ld\n", opt, s, lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

/* The options into o; 2: a usage error (printed), 1: --help printed, 0: go on. */
static int parse(int argc, char **argv, tune_compare_opts *o, char *cmd, size_t cmd_n) {
  size_t used = (size_t)snprintf(cmd, cmd_n, "tune compare");
  for (int i = 0; i < argc; ++i)
    if (used < cmd_n) used += (size_t)snprintf(cmd + used, cmd_n - used, " %s", argv[i]);
  for (int i = 0; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage_compare, stdout); return 1; }
    if (!strcmp(a, "--no-peers")) { o->peer_cmd = ""; continue; }
    if (a[0] != '-') {
      if (o->recipe_path) { fprintf(stderr, "tune compare: one recipe at a time (%s and %s)\n", o->recipe_path, a); return 2; }
      o->recipe_path = a;
      continue;
    }
    if (!v) { fprintf(stderr, "tune compare: %s needs a value\n%s", a, usage_compare); return 2; }
    ++i;
    if (!strcmp(a, "--db")) o->db_path = v;
    else if (!strcmp(a, "--device")) o->device = v;
    else if (!strcmp(a, "--peers")) o->peer_cmd = v;
    else if (!strcmp(a, "-o")) o->out_path = v;
    else if (!strcmp(a, "--top-k")) { if (parse_int(a, v, 1, 8, &n)) return 2; o->top_k = (int)n; }
    else if (!strcmp(a, "--rounds")) { if (parse_int(a, v, 1, 64, &n)) return 2; o->rounds = (int)n; }
    else if (!strcmp(a, "--seed")) { if (parse_int(a, v, 0, LONG_MAX, &n)) return 2; o->seed = (uint64_t)n; }
    else if (!strcmp(a, "--problem")) {
      if (o->n_problems >= TUNE_MAX_PROBLEM_FILTERS) { fprintf(stderr, "tune compare: too many --problem\n"); return 2; }
      o->problems[o->n_problems++] = v;
    } else if (!strcmp(a, "--timing")) {
      if (!strcmp(v, "burst")) o->burst = 1;
      else if (!strcmp(v, "sustained")) o->sustained = 1;
      else if (!strcmp(v, "both")) o->burst = o->sustained = 1;
      else { fprintf(stderr, "tune compare: --timing %s: want burst, sustained or both\n", v); return 2; }
    } else if (!strcmp(a, "--report")) {
      if (!strcmp(v, "last")) o->report_id = -1;
      else if (parse_int(a, v, 1, LONG_MAX, &n)) return 2;
      else o->report_id = n;
    } else { fprintf(stderr, "tune compare: unknown option %s\n%s", a, usage_compare); return 2; }
  }
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
  o.exe = exe;
  o.command = cmd;
  tune_err err;
  tune_err_clear(&err);
  if (tune_compare_run(&o, &err)) {
    fprintf(stderr, "tune compare: %s\n", err.msg);
    return 1;
  }
  return 0;
}
