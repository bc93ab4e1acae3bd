/* main.c: the `tune` command line. Only main() may exit. */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_search.h"
#include "bundle.h"
#include "compare.h"
#include "db.h"
#include "session.h"
#include "version.h"
#include "worker.h"

static const char *usage_main =
    "tune " TUNE_VERSION ": CUDA kernel autotuner\n"
    "\n"
    "usage: tune <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  run RECIPE      tune the kernels a Lua recipe describes (tune run --help)\n"
    "  db best|list|show   query a results database (tune db --help)\n"
    "  bundle          export the best variants for libtunert (tune bundle --help)\n"
    "  compare RECIPE  tune's best variants against cuBLAS/cuDNN/PyTorch, interleaved rounds\n"
    "                  (tune compare --help)\n"
    "  bench-search RECIPE  benchmark the search strategies on recorded data\n"
    "  worker          the GPU worker process (started by tune run; not for direct use)\n"
    "  version         print the version\n"
    "\n"
    "Without a GPU, `tune run RECIPE` replays the measurements recorded on a real GPU\n"
    "for that recipe (data/recorded/<recipe>.db) and says so.\n";

static const char *usage_run =
    "usage: tune run RECIPE [options]\n"
    "\n"
    "Enumerates the recipe's configurations (pruned by its constraints), compiles each\n"
    "variant with NVRTC, verifies it against the recipe's reference kernel and times it,\n"
    "storing every result in the database as it comes. A second run on the same database\n"
    "skips what is already measured for the same recipe source, device and problem.\n"
    "\n"
    "options:\n"
    "  --db FILE            results database (default tune.db; created if missing)\n"
    "  --device D           cuda:N to measure on GPU N, or replay:FILE to answer from a\n"
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
    "  --problem P          only problems named P, or whose dims match K=V[,K=V...];\n"
    "                       repeatable\n"
    "  --only K=V[,K=V]     only configs whose parameters match; repeatable\n"
    "  --jobs N             compile threads (default: number of cores)\n"
    "  --compile-only       compile every variant and store its resource usage; no GPU\n"
    "  --arch ARCH          target for --compile-only (default sm_90a)\n"
    "  --seed N             seed of the random inputs and of the strategy (default: new\n"
    "                       each run, recorded in the database)\n"
    "  --timeout MS         watchdog per variant (default: 30 s + 400x the reference time)\n"
    "  --quiet              only summaries, no line per variant\n";

static const char *usage_db =
    "usage: tune db <best|list|show|export> [options]\n"
    "\n"
    "  best [--recipe R] [--problem P]       fastest verified variant per recipe,\n"
    "                                        problem and device\n"
    "  list [--recipe R] [--problem P] [--status S] [--limit N]\n"
    "                                        results, fastest first\n"
    "  show ID                               one result with its config, device,\n"
    "                                        run and compile log\n"
    "  export --format kernel_tuner|t4 --recipe R --problem P [-o FILE]\n"
    "                                        one problem's results in Kernel Tuner's\n"
    "                                        cache format or the T4 results schema\n"
    "options:\n"
    "  --db FILE    database (default tune.db)\n"
    "  --json       print JSON instead of a table\n";

/* Ctrl-C, or SIGTERM (what `timeout` and service managers send): stop after the variant in flight,
   mark the run interrupted and exit 128 + the signal; a second stop signal leaves at once. */
static void on_stop_signal(int sig) {
  if (tune_interrupted) _exit(128 + sig);
  tune_interrupted = sig;
  static const char m_int[] = "\ninterrupt: finishing the variant in flight (Ctrl-C again to quit now)\n";
  static const char m_term[] = "\nSIGTERM: finishing the variant in flight (SIGTERM again to quit now)\n";
  if (sig == SIGTERM ? write(2, m_term, sizeof m_term - 1) : write(2, m_int, sizeof m_int - 1)) {}
}

static int parse_budget(const char *s, long long *n, double *secs) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v <= 0) return -1;
  if (!*end) { *n = (long long)v; return 0; }
  if (!strcmp(end, "s")) *secs = v;
  else if (!strcmp(end, "m")) *secs = v * 60;
  else if (!strcmp(end, "h")) *secs = v * 3600;
  else return -1;
  return 0;
}

static int cmd_run(int argc, char **argv) {
  tune_run_opts o;
  memset(&o, 0, sizeof o);
  o.jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  o.exe = exe;
  for (int i = 0; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE() do { if (!v) { fprintf(stderr, "tune run: %s needs a value\n", a); return 2; } ++i; } while (0)
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage_run, stdout); return 0; }
    else if (!strcmp(a, "--db")) { NEED_VALUE(); o.db_path = v; }
    else if (!strcmp(a, "--device")) { NEED_VALUE(); o.device = v; }
    else if (!strcmp(a, "--strategy")) { NEED_VALUE(); o.strategy = v; }
    else if (!strcmp(a, "--min-occupancy")) {
      NEED_VALUE();
      char *end;
      o.min_occupancy = strtod(v, &end);
      if (*end || !(o.min_occupancy >= 0 && o.min_occupancy < 1)) { fprintf(stderr, "tune run: --min-occupancy %s: want a fraction in [0, 1)\n", v); return 2; }
      o.min_occupancy_given = 1;
    }
    else if (!strcmp(a, "--halving")) o.halving_on = 1;
    else if (!strncmp(a, "--halving=", 10)) {
      char *end;
      o.halving = strtod(a + 10, &end);
      if (*end || !(o.halving > 0 && o.halving < 1)) { fprintf(stderr, "tune run: %s: want a margin in (0, 1), e.g. --halving=0.1\n", a); return 2; }
      o.halving_on = 1;
    }
    else if (!strcmp(a, "--no-halving")) { o.halving = -1; o.halving_on = 0; }
    else if (!strcmp(a, "--no-warm-start")) o.no_warm_start = 1;
    else if (!strcmp(a, "--budget")) {
      NEED_VALUE();
      if (parse_budget(v, &o.budget, &o.budget_s)) { fprintf(stderr, "tune run: --budget %s: want a count or a duration like 90s, 10m, 1h\n", v); return 2; }
    } else if (!strcmp(a, "--problem")) {
      NEED_VALUE();
      if (o.n_problems == TUNE_MAX_PROBLEM_FILTERS) { fprintf(stderr, "tune run: too many --problem\n"); return 2; }
      o.problems[o.n_problems++] = v;
    } else if (!strcmp(a, "--only")) {
      NEED_VALUE();
      if (o.n_only == TUNE_MAX_PROBLEM_FILTERS) { fprintf(stderr, "tune run: too many --only\n"); return 2; }
      o.only[o.n_only++] = v;
    } else if (!strcmp(a, "--jobs")) {
      NEED_VALUE();
      o.jobs = atoi(v);
      if (o.jobs < 1) { fprintf(stderr, "tune run: --jobs %s: want a positive count\n", v); return 2; }
    } else if (!strcmp(a, "--compile-only")) o.compile_only = 1;
    else if (!strcmp(a, "--arch")) { NEED_VALUE(); o.arch = v; }
    else if (!strcmp(a, "--seed")) { NEED_VALUE(); o.seed = strtoull(v, NULL, 0); o.seed_given = 1; }
    else if (!strcmp(a, "--timeout")) { NEED_VALUE(); o.timeout_ms = atoi(v); }
    else if (!strcmp(a, "--quiet")) o.quiet = 1;
    else if (!strcmp(a, "--proposer")) { NEED_VALUE(); o.proposer = v; }
    else if (!strcmp(a, "--proposer-env")) {
      NEED_VALUE();
      if (o.n_proposer_env == 16) { fprintf(stderr, "tune run: too many --proposer-env\n"); return 2; }
      o.proposer_env[o.n_proposer_env++] = v;
    } else if (!strcmp(a, "--proposer-timeout")) {
      NEED_VALUE();
      o.proposer_timeout_ms = atoi(v);
      if (o.proposer_timeout_ms < 1) { fprintf(stderr, "tune run: --proposer-timeout %s: want milliseconds\n", v); return 2; }
    }
    else if (a[0] == '-') { fprintf(stderr, "tune run: unknown option %s (see tune run --help)\n", a); return 2; }
    else if (!o.recipe_path) o.recipe_path = a;
    else { fprintf(stderr, "tune run: one recipe at a time (got %s and %s)\n", o.recipe_path, a); return 2; }
  }
  if (!o.recipe_path) { fputs(usage_run, stderr); return 2; }
  if (o.device && o.compile_only) { fprintf(stderr, "tune run: --compile-only and --device exclude each other\n"); return 2; }
  int is_llm = o.strategy && !strcmp(o.strategy, "llm");
  if (is_llm && !o.proposer) { fprintf(stderr, "tune run: --strategy llm needs --proposer 'COMMAND' (docs/llm-hook.md)\n"); return 2; }
  if (!is_llm && (o.proposer || o.n_proposer_env || o.proposer_timeout_ms)) { fprintf(stderr, "tune run: --proposer options need --strategy llm\n"); return 2; }
  if (o.arch && !o.compile_only) { fprintf(stderr, "tune run: --arch only applies with --compile-only (a GPU gives its own)\n"); return 2; }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  tune_err err;
  tune_err_clear(&err);
  if (tune_session_run(&o, &err)) {
    fprintf(stderr, "tune run: %s\n", err.msg);
    return err.code == TUNE_ENOGPU ? 3 : 1;
  }
  return tune_interrupted ? 128 + tune_interrupted : 0;
}

/* ---- tune db ----------------------------------------------------------------- */

static void fmt_time(double ns, char *b, size_t n) {
  if (ns <= 0) snprintf(b, n, "-");
  else if (ns >= 1e6) snprintf(b, n, "%.3f ms", ns / 1e6);
  else snprintf(b, n, "%.2f us", ns / 1e3);
}

static void params_text(json_t *params, char *b, size_t n) {
  size_t len = 0;
  const char *k;
  json_t *v;
  b[0] = 0;
  json_object_foreach(params, k, v) {
    char *t = json_dumps(v, JSON_ENCODE_ANY);
    len += (size_t)snprintf(b + len, len < n ? n - len : 0, "%s%s=%s", len ? " " : "", k, t ? t : "?");
    free(t);
    if (len >= n) break;
  }
}

static int cmd_db(int argc, char **argv) {
  const char *db_path = "tune.db", *recipe = NULL, *problem = NULL, *status = NULL, *verb = NULL;
  const char *format = NULL, *out_path = NULL; /* export */
  int json = 0, limit = 0;
  long long id = -1;
  for (int i = 0; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#undef NEED_VALUE
#define NEED_VALUE() do { if (!v) { fprintf(stderr, "tune db: %s needs a value\n", a); return 2; } ++i; } while (0)
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage_db, stdout); return 0; }
    else if (!strcmp(a, "--db")) { NEED_VALUE(); db_path = v; }
    else if (!strcmp(a, "--recipe")) { NEED_VALUE(); recipe = v; }
    else if (!strcmp(a, "--problem")) { NEED_VALUE(); problem = v; }
    else if (!strcmp(a, "--status")) { NEED_VALUE(); status = v; }
    else if (!strcmp(a, "--limit")) { NEED_VALUE(); limit = atoi(v); }
    else if (!strcmp(a, "--json")) json = 1;
    else if (!strcmp(a, "--format")) { NEED_VALUE(); format = v; }
    else if (!strcmp(a, "-o") || !strcmp(a, "--output")) { NEED_VALUE(); out_path = v; }
    else if (a[0] == '-') { fprintf(stderr, "tune db: unknown option %s (see tune db --help)\n", a); return 2; }
    else if (!verb) verb = a;
    else if (!strcmp(verb, "show") && id < 0) id = atoll(a);
    else { fprintf(stderr, "tune db: unexpected argument %s\n", a); return 2; }
  }
  if (!verb) { fputs(usage_db, stderr); return 2; }
  if (status && db_status_parse(status) < 0) { fprintf(stderr, "tune db: unknown status %s\n", status); return 2; }
  if (access(db_path, R_OK)) { fprintf(stderr, "tune db: %s: no such database (tune run creates it; --db FILE names another)\n", db_path); return 1; }
  tune_err err;
  tune_err_clear(&err);
  db_conn *db = NULL;
  json_t *rows = NULL;
  int rc = 1;
  if (db_open(db_path, 1, &db, &err)) goto out;
  if (!strcmp(verb, "best")) {
    if (db_query_best(db, recipe, problem, &rows, &err)) goto out;
    if (json) { json_dumpf(rows, stdout, JSON_INDENT(2)); puts(""); rc = 0; goto out; }
    if (json_array_size(rows) == 0) { printf("no verified results%s%s\n", recipe ? " for " : "", recipe ? recipe : ""); rc = 0; goto out; }
    printf("%-18s %-26s %-12s %10s %5s %5s  %s\n", "recipe", "problem", "device", "median", "samp", "regs", "params");
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
      char t[32], p[1024];
      fmt_time(json_number_value(json_object_get(r, "median_ns")), t, sizeof t);
      params_text(json_object_get(r, "params"), p, sizeof p);
      const char *og = json_string_value(json_object_get(r, "config_origin"));
      if (og && !strncmp(og, "llm-code:", 9)) /* a code proposal's variant of the template */
        snprintf(p + strlen(p), sizeof p - strlen(p), " + code of proposal %s", og + 9);
      if (json_integer_value(json_object_get(r, "quick_only"))) /* successive halving: nothing fully timed here */
        snprintf(p + strlen(p), sizeof p - strlen(p), "  [quick timing only (halving): no fully timed result]");
      printf("%-18s %-26s %-12s %10s %5lld %5lld  %s\n", json_string_value(json_object_get(r, "recipe")),
             json_string_value(json_object_get(r, "problem")), json_string_value(json_object_get(r, "device")), t,
             (long long)json_integer_value(json_object_get(r, "samples")),
             (long long)json_integer_value(json_object_get(r, "registers")), p);
    }
    rc = 0;
  } else if (!strcmp(verb, "list")) {
    if (db_query_list(db, recipe, problem, status, limit, &rows, &err)) goto out;
    if (json) { json_dumpf(rows, stdout, JSON_INDENT(2)); puts(""); rc = 0; goto out; }
    printf("%6s %-20s %-18s %-13s %12s %5s  %s\n", "id", "recipe", "problem", "status", "median", "regs", "params / error");
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
      char t[32], p[1024];
      fmt_time(json_number_value(json_object_get(r, "median_ns")), t, sizeof t);
      params_text(json_object_get(r, "params"), p, sizeof p);
      const char *e = json_string_value(json_object_get(r, "error_text"));
      char e1[160];
      snprintf(e1, sizeof e1, "%.*s", (int)strcspn(e ? e : "", "\n"), e ? e : "");
      e = e1;
      printf("%6lld %-20s %-18s %-13s %12s %5lld  %s%s%s\n", (long long)json_integer_value(json_object_get(r, "id")),
             json_string_value(json_object_get(r, "recipe")), json_string_value(json_object_get(r, "problem")),
             json_string_value(json_object_get(r, "status")), t,
             (long long)json_integer_value(json_object_get(r, "registers")), p, e && *e ? "  | " : "", e ? e : "");
    }
    rc = 0;
  } else if (!strcmp(verb, "export")) {
    rc = tune_db_export_cli(db, format, recipe, problem, out_path);
  } else if (!strcmp(verb, "show")) {
    if (id < 0) { fprintf(stderr, "tune db show: which result? (an id from tune db list)\n"); rc = 2; goto out; }
    json_t *obj = NULL;
    if (db_query_show(db, id, &obj, &err)) goto out;
    json_dumpf(obj, stdout, JSON_INDENT(2));
    puts("");
    json_decref(obj);
    rc = 0;
  } else {
    fprintf(stderr, "tune db: unknown verb %s (best, list, show, export)\n", verb);
    rc = 2;
  }
out:
  if (rc == 1 && err.code) fprintf(stderr, "tune db: %s\n", err.msg);
  json_decref(rows);
  db_close(db);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    fputs(usage_main, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char *verb = argv[1];
  if (!strcmp(verb, "run")) return cmd_run(argc - 2, argv + 2);
  if (!strcmp(verb, "db")) return cmd_db(argc - 2, argv + 2);
  if (!strcmp(verb, "bundle")) return tune_bundle_main(argc - 2, argv + 2);
  if (!strcmp(verb, "compare")) return tune_compare_main(argc - 2, argv + 2);
  if (!strcmp(verb, "bench-search")) return tune_bench_search_main(argc - 2, argv + 2);
  if (!strcmp(verb, "version") || !strcmp(verb, "--version")) { puts("tune " TUNE_VERSION); return 0; }
  if (!strcmp(verb, "worker")) {
    int dev = 0;
    for (int i = 2; i + 1 < argc; ++i)
      if (!strcmp(argv[i], "--device")) dev = atoi(argv[i + 1]);
    /* the tuner decides when the worker stops: a signal to the whole process group (Ctrl-C, a
       group SIGTERM) must not kill it mid-measurement, which would record a false crash */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    int out_fd = dup(1);
    dup2(2, 1);           /* stray prints must not corrupt the protocol */
    return tune_worker_main(dev, 0, out_fd);
  }
  fprintf(stderr, "tune: unknown verb '%s'\n\n%s", verb, usage_main);
  return 2;
}
