/* run_cmd.c: `tune run RECIPE [options]`: the command line of a tuning session (session.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "argv.h"
#include "commands.h"
#include "session.h"
#include "shard.h"
#include "stop_signal.h"

static const char *usage_run =
    "usage: tune run RECIPE [options]\n"
    "\n"
    "Enumerates the recipe's configurations (pruned by its constraints), compiles each\n"
    "variant with NVRTC, verifies it against the recipe's reference kernel and times it,\n"
    "storing every result in the database as it comes. A second run on the same database\n"
    "skips what is already measured for the same recipe source, device and problem.\n"
    "At the end of each problem on a GPU, its 4 fastest configs are timed again in 3\n"
    "interleaved rounds and the choice recorded (a tie within the spread goes to the\n"
    "variant with fewer resources; docs/measurement.md).\n"
    "\n"
    "options:\n"
    "  --db FILE            results database (default tune.db; created if missing)\n"
    "  --device D           cuda:N to measure on GPU N; cuda:all (or cuda:0,1,...) for\n"
    "                       one worker per GPU of one model, fed from one queue, results\n"
    "                       pooled (docs/cluster.md); or replay:FILE to answer from a\n"
    "                       recorded database (default: cuda:0 when a GPU is present,\n"
    "                       else replay of data/recorded/<recipe file>.db, for\n"
    "                       recipes/<family>/<sub>.lua <family>.<sub>.db where that\n"
    "                       exists, or of data/recorded/<recipe name>.db for a\n"
    "                       sub-recipe recorded on its own)\n"
    "  --strategy S         bayes (the default, unless the recipe sets strategy = ...),\n"
    "                       exhaustive, random, anneal, genetic, bandit, or llm: an\n"
    "                       external proposer command (--proposer) suggests configs;\n"
    "                       batches it leaves empty come from random (docs/search.md)\n"
    "  --min-occupancy F    after compiling, skip (as pruned) variants whose theoretical\n"
    "                       occupancy is under F (0..1; default: the recipe's\n"
    "                       min_occupancy, else 0); variants that cannot launch are\n"
    "                       always pruned\n"
    "  --halving[=F]        successive halving: verify and time each variant with 3\n"
    "                       samples first; only those within F (default: the recipe's\n"
    "                       halving, else 0.1) of the best time so far get the full\n"
    "                       timing (a second measure, verified again); the others keep\n"
    "                       the quick timing, stored as ok with samples 3 and an\n"
    "                       error_text \"halving: quick timing only ...\"; tune db best\n"
    "                       prefers fully timed results. The command line wins over the\n"
    "                       recipe's halving = F|true; --no-halving turns it off. Off by\n"
    "                       default. Replay answers a quick timing with the recorded\n"
    "                       full one (docs/search.md)\n"
    "  --proposer CMD       the llm strategy's proposer, run as sh -c CMD per request,\n"
    "                       JSON on stdin and stdout (docs/llm-hook.md; adapters in\n"
    "                       tools/llm/)\n"
    "  --proposer-env NAME  pass environment variable NAME to the proposer (it gets\n"
    "                       only PATH, HOME and LANG otherwise); repeatable\n"
    "  --proposer-timeout MS  kill a proposer that has not answered (default 60000)\n"
    "  --budget N|DURATION  stop each problem after N evaluations (configs the recipe's\n"
    "                       applies rejects are not evaluations), or the recipe after a\n"
    "                       duration such as 90s, 10m, 1h\n"
    "  --no-warm-start      do not evaluate first the configs the database holds as best\n"
    "                       for the recipe's other problems on this GPU, for recipes with\n"
    "                       the same parameters, and on other GPUs of the same\n"
    "                       architecture, nearest problems first (a quarter of --budget,\n"
    "                       at most 8; they count as evaluations; docs/search.md); for a\n"
    "                       problem whose space shares no config with the earlier\n"
    "                       problems' (a new regime), the configs nearest to their bests\n"
    "  --problem P          only problems named P, or whose dims match K=V[,K=V...]\n"
    "                       (a string value with or without quotes: kv_scale=page);\n"
    "                       repeatable\n"
    "  --problems-from FILE the problems of each recipe are those of its family in FILE, a\n"
    "                       log of shapes served without a tuned entry (libtunert writes\n"
    "                       it when TUNERT_LOG_UNTUNED=FILE; one JSON object per line,\n"
    "                       docs/runtime.md); recipes FILE does not name are skipped\n"
    "  --only K=V[,K=V]     only configs whose parameters match; repeatable\n"
    "  --shard I/N          run share I of N (1 <= I <= N), so that N processes with the\n"
    "                       same command line and their own --db cover the work once\n"
    "                       (Slurm job arrays, Kubernetes Indexed Jobs: docs/cluster.md).\n"
    "                       The problems --problem keeps are numbered in recipe order across\n"
    "                       the file; when N divides their count P, or P >= 4N, shard I\n"
    "                       takes whole problems I, I+N, I+2N, ...; otherwise each problem\n"
    "                       is cut into S = N/gcd(P,N) parts by config hash (hash mod S)\n"
    "                       and the parts go round robin, so every shard gets P*S/N parts.\n"
    "                       An exhaustive run's shards hold exactly its configs; --budget\n"
    "                       counts per shard's part of a problem. Resume: run the same\n"
    "                       shard again on its database; tune db merge combines them\n"
    "  --jobs N             compile threads (default: number of cores); with more than one,\n"
    "                       each compiles in a `tune compile-server` child at niceness +10,\n"
    "                       so that the measuring worker is not kept waiting. exhaustive and\n"
    "                       random queue the next batch's compiles behind this batch's\n"
    "  --compile-only       compile every variant and store its resource usage; no GPU\n"
    "  --arch ARCH          target for --compile-only (default sm_90a)\n"
    "  --timing MODE        burst (default): one launch per sample after an L2 flush, each\n"
    "                       at the clock it finds; sustained: back-to-back launches over\n"
    "                       rotating buffers at the power-limited clock, as inference runs\n"
    "                       (docs/measurement.md); recorded with every result\n"
    "  --root DIR           the project root holding templates/ (default: TUNE_ROOT, else the\n"
    "                       nearest folder above the recipe with .tune-root)\n"
    "  --seed N             seed of the random inputs and of the strategy (default: new\n"
    "                       each run, recorded in the database)\n"
    "  --timeout MS         watchdog per variant (default: 30 s + 400x the reference time)\n"
    "  --quiet              only summaries, no line per variant\n"
    "\n"
    "environment:\n"
    "  TUNE_WORKER_PROGRAM  program started as the worker, with the arguments\n"
    "                       `worker --device N` (default: this tune); e.g. a script that\n"
    "                       runs `compute-sanitizer tune \"$@\"`\n"
    "  TUNE_COMPILE_IN_PROCESS=1  compile in this process instead of one `tune\n"
    "                       compile-server` child per compile thread (with --jobs > 1);\n"
    "                       the binaries are the same\n";

/* Append the current option's value to list[*n] (at most max of them). */
static void add_value(tune_argv *ap, const char *v, const char **list, int *n, int max) {
  if (*n == max) tune_argv_error(ap, "too many %s", ap->name);
  else list[(*n)++] = v;
}

/* sm_NN or sm_NNa (two or three digits): what NVRTC's --gpu-architecture takes for a cubin. */
static int arch_valid(const char *a) {
  if (strncmp(a, "sm_", 3)) return 0;
  size_t d = strspn(a + 3, "0123456789");
  return (d == 2 || d == 3) && (!a[3 + d] || (a[3 + d] == 'a' && !a[4 + d]));
}

/* One option of tune run into o; 0 when the argument is none of them. */
static int run_option(tune_argv *ap, tune_run_opts *o) {
  const char *v = NULL, *h;
  int has_v;
  if (tune_argv_str(ap, "--db", &o->db_path) || tune_argv_str(ap, "--device", &o->device) ||
      tune_argv_str(ap, "--strategy", &o->strategy) ||
      tune_argv_str(ap, "--proposer", &o->proposer) || tune_argv_str(ap, "--root", &o->root))
    return 1;
  if (tune_argv_str(ap, "--arch", &o->arch)) {
    if (o->arch && !arch_valid(o->arch)) tune_argv_bad(ap, "want sm_NN or sm_NNa (e.g. sm_90a, sm_80)");
    return 1;
  }
  if (tune_argv_str(ap, "--timing", &v)) {
    if (!strcmp(v, "sustained")) o->sustained = 1;
    else if (strcmp(v, "burst")) tune_argv_bad(ap, "want burst or sustained");
    return 1;
  }
  if (tune_argv_double(ap, "--min-occupancy", &o->min_occupancy)) {
    if (!(o->min_occupancy >= 0 && o->min_occupancy < 1)) tune_argv_bad(ap, "want a fraction in [0, 1)");
    o->min_occupancy_given = 1;
  } else if (tune_argv_opt_str(ap, "--halving", &has_v, &h)) {
    o->halving_on = 1;
    if (has_v && (tune_parse_double(h, &o->halving) || !(o->halving > 0 && o->halving < 1)))
      tune_argv_bad(ap, "want a margin in (0, 1), e.g. --halving=0.1");
  } else if (tune_argv_flag(ap, "--no-halving")) o->halving = -1, o->halving_on = 0;
  else if (tune_argv_flag(ap, "--no-warm-start")) o->no_warm_start = 1;
  else if (tune_argv_count_or_duration(ap, "--budget", &o->budget, &o->budget_s)) {}
  else if (tune_argv_str(ap, "--problems-from", &o->problems_from)) {}
  else if (tune_argv_str(ap, "--problem", &v)) add_value(ap, v, o->problems, &o->n_problems, TUNE_MAX_PROBLEM_FILTERS);
  else if (tune_argv_str(ap, "--only", &v)) add_value(ap, v, o->only, &o->n_only, TUNE_MAX_PROBLEM_FILTERS);
  else if (tune_argv_int(ap, "--jobs", &o->jobs)) { if (o->jobs < 1) tune_argv_bad(ap, "want a positive count"); }
  else if (tune_argv_flag(ap, "--compile-only")) o->compile_only = 1;
  else if (tune_argv_str(ap, "--shard", &v)) {
    tune_err e;
    tune_err_clear(&e);
    if (tune_shard_parse(v, &o->shard_index, &o->shard_count, &e)) tune_argv_bad(ap, "want I/N with 1 <= I <= N (e.g. 2/8)");
  }
  else if (tune_argv_u64(ap, "--seed", &o->seed)) o->seed_given = 1;
  else if (tune_argv_int(ap, "--timeout", &o->timeout_ms)) { if (o->timeout_ms < 0) tune_argv_bad(ap, "want milliseconds"); }
  else if (tune_argv_flag(ap, "--quiet")) o->quiet = 1;
  else if (tune_argv_str(ap, "--proposer-env", &v)) add_value(ap, v, o->proposer_env, &o->n_proposer_env, 16);
  else if (tune_argv_int(ap, "--proposer-timeout", &o->proposer_timeout_ms)) {
    if (o->proposer_timeout_ms < 1) tune_argv_bad(ap, "want milliseconds");
  } else return 0;
  return 1;
}

/* The options that only make sense together; 0 when they agree. */
static int check_run_opts(const tune_run_opts *o) {
  const char *why = NULL;
  int is_llm = o->strategy && !strcmp(o->strategy, "llm");
  if (o->device && o->compile_only) why = "--compile-only and --device exclude each other";
  else if (is_llm && !o->proposer) why = "--strategy llm needs --proposer 'COMMAND' (docs/llm-hook.md)";
  else if (!is_llm && (o->proposer || o->n_proposer_env || o->proposer_timeout_ms)) why = "--proposer options need --strategy llm";
  else if (o->arch && !o->compile_only) why = "--arch only applies with --compile-only (a GPU gives its own)";
  if (why) fprintf(stderr, "tune run: %s\n", why);
  return why != NULL;
}

int tune_cmd_run(int argc, char **argv) {
  tune_run_opts o;
  memset(&o, 0, sizeof o);
  o.jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  /* a wrapper (compute-sanitizer around `tune worker`) or a test's stand-in may take its place */
  const char *worker = getenv("TUNE_WORKER_PROGRAM");
  o.exe = worker && *worker ? worker : exe;
  tune_argv ap;
  tune_argv_init(&ap, "tune run", argc, argv);
  while (tune_argv_next(&ap)) {
    const char *pos;
    if (tune_argv_flag(&ap, "--help") || tune_argv_flag(&ap, "-h")) { fputs(usage_run, stdout); return 0; }
    if (run_option(&ap, &o)) continue;
    if (!tune_argv_positional(&ap, &pos)) tune_argv_unknown(&ap);
    else if (o.recipe_path) tune_argv_error(&ap, "one recipe at a time (got %s and %s)", o.recipe_path, pos);
    else o.recipe_path = pos;
  }
  if (ap.failed) { fprintf(stderr, "%s\n", ap.msg); return 2; }
  if (!o.recipe_path) { fputs(usage_run, stderr); return 2; }
  if (check_run_opts(&o)) return 2;
  tune_stop_signals_install();
  tune_err err;
  tune_err_clear(&err);
  int usage_error = 0;
  if (tune_session_run(&o, &usage_error, &err)) {
    fprintf(stderr, "tune run: %s\n", err.msg);
    return usage_error ? 2 : err.code == TUNE_ENOGPU ? 3 : 1;
  }
  return tune_interrupted ? 128 + tune_interrupted : 0;
}
