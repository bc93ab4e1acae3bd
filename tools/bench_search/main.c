/* main.c: tune-bench-search RECIPE [options]: the options, the strategies to run, and the walk over
 * the recipe file's recipes and problems in their order (the warm start learns along it). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "argv.h"
#include "bench_search.h"
#include "halving.h"
#include "problem_space.h"
#include "search_config.h"
#include "session.h"
#include "warm_start.h"

#define MAX_PROBLEMS 32     /* --problem, at most */
#define MAX_HIST 256        /* earlier problems a warm start learns from, at most */

static const char *usage_bench =
    "usage: tune-bench-search RECIPE [options]\n"
    "\n"
    "Replays a recorded exhaustive database: runs each search strategy on the recipe's\n"
    "space with the recorded times as costs, for seeds 1..N, and prints per problem the\n"
    "P score (Willemsen et al., FGCS 2024) at budgets of 1-50 % of the space, in\n"
    "evaluations and in recorded compile+measure time: P = (random - found) /\n"
    "(random - optimum), with random search's expected best as the baseline (0) and the\n"
    "optimum as 1. Cells: median [first quartile, third quartile] over the seeds.\n"
    "A problem's space is the configs its recipe does not reject (applies/requires).\n"
    "Problems run in the recipe's order and, as in tune run, each strategy starts a\n"
    "problem from the bests it found on the earlier ones at the same budget (the warm\n"
    "start: a quarter of the budget, at most 8 configs, the nearest problems' first).\n"
    "\n"
    "options:\n"
    "  --device replay:FILE   the recorded database (default data/recorded/<recipe>.db)\n"
    "  --repeats N            seeds 1..N per strategy (default 100)\n"
    "  --strategies A,B,...   strategies to run (default random,anneal,genetic,bayes,bandit,\n"
    "                         bayes:cold); NAME:cold runs NAME without the warm start\n"
    "  --no-warm-start        no strategy starts warm\n"
    "  --warm-db FILE         also warm-start from the bests FILE holds, as tune run does\n"
    "                         from its --db: this GPU's, another recipe's with the same\n"
    "                         parameters (bf16 GEMM results for gemm.f16), and other GPUs'\n"
    "                         of the same architecture (docs/search.md)\n"
    "  --problem P            only problems named P (repeatable; the warm start then\n"
    "                         learns from the selected earlier problems only)\n"
    "  --jobs N               threads (default: number of cores)\n"
    "  --compile-features     give the strategies each config's compile-time facts (registers,\n"
    "                         shared memory, spills, as recorded) before any measurement, as\n"
    "                         if every variant were compiled first (search_strategy_set_features)\n"
    "  --parallel K           K points measured at once (one worker per GPU): every strategy\n"
    "                         gets search_strategy_set_parallel(K); adds R98, B98 in rounds of K\n"
    "                         concurrent evaluations (wall time), to each problem's criteria\n"
    "  --json                 print JSON (every number of the tables, and the baselines)\n"
    "  --halving[=F]          also run the default strategy (" TUNE_DEFAULT_STRATEGY ") with successive\n"
    "                         halving (margin F, default 0.1), as tune run --halving drives it:\n"
    "                         a quick measure costs the recorded measure time x 3 / its samples,\n"
    "                         a contender's full timing the recorded measure time again; the\n"
    "                         quick answer is the recorded time (replay cannot re-time). Adds\n"
    "                         the row " TUNE_DEFAULT_STRATEGY "+halving and the time spent per evaluation budget\n";

typedef struct bench_opts {
  const char *recipe_path, *device; /* device: "replay:FILE" or NULL (the recipe's recording) */
  const char *problems[MAX_PROBLEMS];
  int n_problems, repeats, json, no_warm, jobs;
  int features;                     /* --compile-features */
  int parallel;                     /* --parallel */
  const char *warm_db_path;         /* --warm-db */
  double halving;                   /* --halving: margin of the extra default-strategy run, 0 none */
  const char *strategies;           /* comma list */
} bench_opts;

/* The rows of the tables: the strategies as asked, and with --halving the default one again. */
typedef struct bench_strategies {
  const char *names[MAX_STRATEGIES + 2];
  const char *labels[MAX_STRATEGIES + 2];
  int warm[MAX_STRATEGIES + 2];
  double margins[MAX_STRATEGIES + 2];
  int n;
  int plain_default;                /* the default strategy without halving (--halving), else -1 */
  char name_buf[MAX_STRATEGIES][64];
  char list_buf[512];               /* the comma list, cut into labels */
} bench_strategies;

/* What every problem of the run shares: the databases and the per-run buffers. */
typedef struct bench_ctx {
  const bench_opts *o;
  const bench_strategies *st;
  char path[PATH_MAX + 64];         /* the recorded database */
  db_conn *db, *wdb;                /* it; --warm-db's */
  double *found, *spent, *tmp, *tmp2;
  uint64_t *found_pt;
  int *has_pt;
  bench_cells *cells;
  json_t *out;                      /* --json: every problem's object */
} bench_ctx;

/* The warm-start history along one recipe's problems. */
typedef struct bench_hist {
  uint64_t *pts;                    /* bench_run.hist */
  int n, max;
  int pi[MAX_HIST];                 /* the problem of each column */
  double dist[MAX_HIST];            /* its distance to the problem at hand */
  uint64_t *before;                 /* the union of the spaces of the recipe's problems so far (ascending) */
  size_t n_before;
} bench_hist;

/* The options into o: 0, 2 (a usage error, printed) or -1 (--help, printed). */
static int parse_opts(int argc, char **argv, bench_opts *o) {
  tune_argv ap;
  tune_argv_init(&ap, "tune-bench-search", argc, argv);
  while (tune_argv_next(&ap)) {
    const char *v, *h;
    int has_v;
    if (tune_argv_flag(&ap, "--help") || tune_argv_flag(&ap, "-h")) { fputs(usage_bench, stdout); return -1; }
    if (tune_argv_str(&ap, "--device", &o->device) || tune_argv_str(&ap, "--strategies", &o->strategies) ||
        tune_argv_str(&ap, "--warm-db", &o->warm_db_path))
      continue;
    if (tune_argv_int(&ap, "--repeats", &o->repeats)) { if (o->repeats < 1 || o->repeats > 100000) tune_argv_bad(&ap, "want 1..100000"); }
    else if (tune_argv_int(&ap, "--jobs", &o->jobs)) { if (o->jobs < 1) tune_argv_bad(&ap, "want a positive count"); }
    else if (tune_argv_int(&ap, "--parallel", &o->parallel)) {
      if (o->parallel < 1 || o->parallel > SEARCH_MAX_PARALLEL) tune_argv_bad(&ap, "want 1..64");
    }
    else if (tune_argv_str(&ap, "--problem", &v)) {
      if (o->n_problems == MAX_PROBLEMS) tune_argv_error(&ap, "too many --problem");
      else o->problems[o->n_problems++] = v;
    } else if (tune_argv_flag(&ap, "--json")) o->json = 1;
    else if (tune_argv_flag(&ap, "--no-warm-start")) o->no_warm = 1;
    else if (tune_argv_flag(&ap, "--compile-features")) o->features = 1;
    else if (tune_argv_opt_str(&ap, "--halving", &has_v, &h)) {
      o->halving = TUNE_HALVING_DEFAULT_MARGIN;
      if (has_v && (tune_parse_double(h, &o->halving) || !(o->halving > 0 && o->halving < 1)))
        tune_argv_bad(&ap, "want a margin in (0, 1), e.g. --halving=0.1");
    } else if (!tune_argv_positional(&ap, &v)) tune_argv_unknown(&ap);
    else if (o->recipe_path) tune_argv_error(&ap, "one recipe at a time (got %s and %s)", o->recipe_path, v);
    else o->recipe_path = v;
  }
  if (ap.failed) { fprintf(stderr, "%s\n", ap.msg); return 2; }
  if (!o->recipe_path) { fputs(usage_bench, stderr); return 2; }
  if (o->device && strncmp(o->device, "replay:", 7)) {
    fprintf(stderr, "tune-bench-search: --device %s: want replay:FILE (a recorded database)\n", o->device);
    return 2;
  }
  return 0;
}

/* One item of --strategies (NAME or NAME:cold) into st; 0, or 2 with the message printed. */
static int add_strategy(bench_strategies *st, char *t, int no_warm) {
  /* NAME:cold: the strategy without the warm start (warm_start.h) */
  const char *colon = strchr(t, ':');
  if (colon && strcmp(colon, ":cold")) {
    fprintf(stderr, "tune-bench-search: %s: the only suffix is :cold (no warm start)\n", t);
    return 2;
  }
  int n = st->n;
  if (n < MAX_STRATEGIES)
    snprintf(st->name_buf[n], sizeof st->name_buf[0], "%.*s", colon ? (int)(colon - t) : (int)strlen(t), t);
  const char *base = n < MAX_STRATEGIES ? st->name_buf[n] : t;
  int known = 0;
  for (int k = 0; search_strategy_names[k]; k++) known |= !strcmp(search_strategy_names[k], base);
  if (!known) {
    fprintf(stderr, "tune-bench-search: unknown strategy %s (known:", t);
    for (int k = 0; search_strategy_names[k]; k++) fprintf(stderr, " %s", search_strategy_names[k]);
    fprintf(stderr, ")\n");
    return 2;
  }
  if (n == MAX_STRATEGIES) {
    fprintf(stderr, "tune-bench-search: at most %d strategies\n", MAX_STRATEGIES);
    return 2;
  }
  st->labels[n] = t;
  st->warm[n] = !colon && !no_warm;
  st->names[st->n++] = base;
  return 0;
}

/* The rows: --strategies, then with --halving the default strategy once more, with halving, beside
 * the plain one (added when not asked for). 0, or 2 with the message printed. */
static int parse_strategies(const bench_opts *o, bench_strategies *st) {
  memset(st, 0, sizeof *st);
  snprintf(st->list_buf, sizeof st->list_buf, "%s", o->strategies);
  for (char *save = NULL, *t = strtok_r(st->list_buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
    if (add_strategy(st, t, o->no_warm)) return 2;
  if (st->n == 0) {
    fprintf(stderr, "tune-bench-search: --strategies names none\n");
    return 2;
  }
  st->plain_default = -1;
  for (int s = 0; s < st->n; s++)
    if (!strcmp(st->labels[s], TUNE_DEFAULT_STRATEGY)) st->plain_default = s;
  if (o->halving > 0) {
    if (st->plain_default < 0) {
      st->plain_default = st->n;
      st->names[st->n] = st->labels[st->n] = TUNE_DEFAULT_STRATEGY;
      st->warm[st->n++] = !o->no_warm;
    }
    st->names[st->n] = TUNE_DEFAULT_STRATEGY;
    st->labels[st->n] = TUNE_DEFAULT_STRATEGY "+halving";
    st->warm[st->n] = !o->no_warm;
    st->margins[st->n++] = o->halving;
  }
  return 0;
}

/* Open the databases and allocate the buffers every problem reuses. */
static int ctx_open(bench_ctx *c, tune_recipes *set, tune_err *err) {
  const bench_opts *o = c->o;
  if (o->device) snprintf(c->path, sizeof c->path, "%s", o->device + 7);
  else tune_default_replay_path(set, o->recipe_path, c->path, sizeof c->path);
  if (access(c->path, R_OK))
    return tune_fail(err, TUNE_ENOTFOUND, "%s: no recorded database (--device replay:FILE names one)", c->path);
  if (db_open(c->path, 1, &c->db, err)) return err->code;
  if (o->warm_db_path) {
    if (access(o->warm_db_path, R_OK)) return tune_fail(err, TUNE_ENOTFOUND, "--warm-db %s: no such database", o->warm_db_path);
    if (db_open(o->warm_db_path, 1, &c->wdb, err)) return err->code;
  }
  size_t runs = (size_t)c->st->n * (size_t)o->repeats;
  c->found = malloc(runs * 2 * N_BUDGETS * sizeof(double));
  c->spent = malloc(runs * N_BUDGETS * sizeof(double));
  c->found_pt = malloc(runs * N_BUDGETS * sizeof(uint64_t));
  c->has_pt = malloc(runs * N_BUDGETS * sizeof(int));
  c->tmp = malloc((size_t)o->repeats * sizeof(double));
  c->tmp2 = malloc((size_t)o->repeats * sizeof(double));
  c->cells = malloc((size_t)c->st->n * sizeof *c->cells);
  c->out = json_array();
  if (!c->found || !c->spent || !c->found_pt || !c->has_pt || !c->tmp || !c->tmp2 || !c->cells || !c->out)
    return tune_fail(err, TUNE_ENOMEM, "bench-search: out of memory");
  return TUNE_OK;
}

static void ctx_close(bench_ctx *c) {
  json_decref(c->out);
  free(c->found);
  free(c->spent);
  free(c->found_pt);
  free(c->has_pt);
  free(c->tmp);
  free(c->tmp2);
  free(c->cells);
  db_close(c->db);
  db_close(c->wdb);
}

/* The problem's report: text now, or its JSON object kept for the end. */
static int report_problem(bench_ctx *c, const bench_run *br, const tune_recipe *r, const tune_problem *p,
                          const db_device *dev, size_t n_rejected, tune_err *err) {
  const bench_strategies *st = c->st;
  for (int s = 0; s < st->n; s++)
    for (int j = 0; j < N_BUDGETS; j++) {
      c->cells[s][0][j] = bench_summarize(br, s, 0, j, br->b->base_eval[j], c->tmp, c->tmp2);
      c->cells[s][1][j] = bench_summarize(br, s, 1, j, br->b->base_time[j], c->tmp, c->tmp2);
    }
  if (!c->o->json) {
    bench_print_problem(br, r, p, dev->name, n_rejected, c->cells, st->plain_default, st->n - 1, c->tmp);
    return TUNE_OK;
  }
  json_t *pj = bench_problem_json(br, r, p, c->cells, c->tmp);
  if (!pj) return tune_fail(err, TUNE_ENOMEM, "bench-search: out of memory");
  json_object_set_new(pj, "device", json_string(dev->name));
  json_object_set_new(pj, "n_rejected", json_integer((json_int_t)n_rejected));
  json_object_set_new(pj, "database", json_string(c->path));
  json_array_append_new(c->out, pj);
  return TUNE_OK;
}

/* Every strategy and seed on problem pi of r (its space pspace), then its report; the problem's
 * bests join the history. A problem with nothing verified recorded is skipped, and said so. */
static int bench_problem(bench_ctx *c, tune_recipe *r, int pi, const db_device *dev, const search_space *pspace,
                         size_t n_rejected, int project, bench_hist *h, tune_err *err) {
  const tune_problem *p = &r->problems[pi];
  const bench_strategies *st = c->st;
  bench_space b;
  tune_err e;
  tune_err_clear(&e);
  if (bench_space_load(&b, c->db, r, p, pspace, &e)) {
    if (e.code != TUNE_ENOTFOUND) return tune_fail(err, e.code, "%s", e.msg);
    if (!c->o->json) printf("\n%s / %s: %s, skipped\n", r->name, p->name, e.msg);
    return TUNE_OK;
  }
  for (int k = 0; k < h->n; k++) h->dist[k] = tune_problem_distance(p->dims_json, r->problems[h->pi[k]].dims_json);
  uint64_t *extra = NULL;
  double *extra_dist = NULL;
  int n_extra = 0;
  int rc = c->wdb ? tune_warm_bests_db(c->wdb, r, dev->name, dev->arch, p, pspace, &extra, &extra_dist, &n_extra, err) : 0;
  if (n_extra > WARM_DB_MAX) n_extra = WARM_DB_MAX;
  if (c->o->features && bench_features_load(&b, c->path, r, p, err)) {
    bench_space_free(&b);
    return err->code;
  }
  long cap = bench_trajectory_cap(b.n);
  double *curve = malloc((size_t)st->n * (size_t)c->o->repeats * (size_t)cap * sizeof(double));
  long *rounds = malloc((size_t)st->n * (size_t)c->o->repeats * (size_t)cap * sizeof(long));
  if (!curve || !rounds) {
    free(curve);
    free(rounds);
    bench_space_free(&b);
    return tune_fail(err, TUNE_ENOMEM, "bench-search: out of memory");
  }
  bench_run br = {.b = &b, .names = st->names, .curve = curve, .rounds = rounds, .parallel = c->o->parallel, .cap = cap, .labels = st->labels, .halving = st->margins,
                  .with_halving = c->o->halving > 0, .n_strategies = st->n, .repeats = c->o->repeats,
                  .found = c->found, .spent = c->spent, .warm = st->warm, .hist = h->pts, .hist_dist = h->dist,
                  .n_hist = h->n, .max_problems = h->max, .found_pt = c->found_pt, .has_pt = c->has_pt,
                  .extra = extra, .extra_dist = extra_dist, .n_extra = n_extra, .project = project};
  if (!rc) rc = bench_run_all(&br, c->o->jobs, err);
  free(extra);
  free(extra_dist);
  if (!rc) {
    bench_hist_append(&br);
    if (br.n_hist > h->n) h->pi[h->n] = pi;
    h->n = br.n_hist;
    rc = report_problem(c, &br, r, p, dev, n_rejected, err);
  }
  free(curve);
  free(rounds);
  bench_space_free(&b);
  return rc;
}

static int selected(const bench_opts *o, const tune_problem *p) {
  int sel = o->n_problems == 0;
  for (int k = 0; k < o->n_problems; k++) sel |= !strcmp(o->problems[k], p->name);
  return sel;
}

/* Recipe r's problems in its order: each one's space, then the run on the selected ones. */
static int bench_recipe(bench_ctx *c, tune_recipe *r, tune_err *err) {
  db_device dev;
  tune_err e;
  tune_err_clear(&e);
  if (db_device_recorded(c->db, r->name, &dev, NULL, &e)) {
    if (e.code != TUNE_ENOTFOUND) return tune_fail(err, e.code, "%s", e.msg);
    if (!c->o->json) printf("\n%s: nothing recorded in %s, skipped\n", r->name, c->path);
    return TUNE_OK;
  }
  tune_device_facts facts; /* what the recipe's applies saw when it was recorded */
  tune_device_facts_from(&dev, &facts);
  int nv[SEARCH_MAX_PARAMS];
  for (int i = 0; i < r->n_params; ++i) nv[i] = r->params[i].n_values;
  search_space_def def = {.n_params = r->n_params, .n_values = nv, .n_constraints = r->n_constraints,
                          .constraint_level = NULL, .check = tune_recipe_check, .ctx = r};
  search_space *space = NULL, *pspace = NULL; /* the recipe's; the configs that apply to a problem */
  tune_rejections rej;
  memset(&rej, 0, sizeof rej);
  /* warm-start candidates of this recipe's problems, in the recipe's order (as tune run meets them);
     the new regime is a matter of one recipe's problems */
  bench_hist h = {.max = r->n_problems < MAX_HIST ? r->n_problems : MAX_HIST};
  size_t n_cols = (size_t)c->st->n * (size_t)c->o->repeats * N_BUDGETS * (size_t)(r->n_problems ? r->n_problems : 1);
  int rc = search_space_enumerate(&def, &space, err);
  if (!rc && !(h.pts = malloc(n_cols * sizeof(uint64_t)))) rc = tune_fail(err, TUNE_ENOMEM, "bench-search: out of memory");
  for (int pi = 0; !rc && pi < r->n_problems; ++pi) {
    search_space_free(pspace);
    pspace = NULL;
    if ((rc = tune_problem_space(r, &r->problems[pi], &facts, space, &pspace, &rej, err))) break;
    /* a new regime (as tune run decides it): no config shared with the recipe's problems before
       this one, selected or not */
    int project = 0;
    if (tune_warm_next_problem(&h.before, &h.n_before, pspace, &project)) rc = tune_fail(err, TUNE_ENOMEM, "bench-search: out of memory");
    else if (selected(c->o, &r->problems[pi])) rc = bench_problem(c, r, pi, &dev, pspace, rej.n, project, &h, err);
  }
  free(h.pts);
  free(h.before);
  search_space_free(pspace);
  search_space_free(space);
  return rc;
}

int main(int argc, char **argv) {
  bench_opts o = {.repeats = 100, .parallel = 1, .jobs = (int)sysconf(_SC_NPROCESSORS_ONLN),
                  .strategies = "random,anneal,genetic,bayes,bandit,bayes:cold"};
  int rc = parse_opts(argc - 1, argv + 1, &o);
  if (rc) return rc < 0 ? 0 : rc;
  static bench_strategies st;
  if (parse_strategies(&o, &st)) return 2;
  tune_err err;
  tune_err_clear(&err);
  tune_recipes *set = NULL;
  bench_ctx c = {.o = &o, .st = &st};
  rc = 1;
  if (tune_recipes_load(o.recipe_path, &set, &err) || ctx_open(&c, set, &err)) goto out;
  if (!o.json) {
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    printf("tune-bench-search %s, replay %s, %d seeds per strategy (%s)\n", o.recipe_path, c.path, o.repeats, date);
  }
  for (int ri = 0; ri < set->n; ++ri)
    if (bench_recipe(&c, &set->r[ri], &err)) goto out;
  if (o.json) {
    json_dumpf(c.out, stdout, JSON_INDENT(1));
    puts("");
  }
  rc = 0;
out:
  if (rc && err.code) fprintf(stderr, "tune-bench-search: %s\n", err.msg);
  ctx_close(&c);
  tune_recipes_free(set);
  return rc;
}
