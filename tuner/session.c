/* session.c: one `tune run`: the recipe file's recipes, each on its device and backend, with its
 * run row, space and summary; each problem goes through the pipeline of problem_run.h. */
#include "session.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "code_proposal.h"
#include "compile.h"
#include "cuda_dl.h"
#include "db.h"
#include "halving.h"
#include "peaks.h"
#include "problem_run.h"
#include "problem_space.h"
#include "progress.h"
#include "recipe.h"
#include "recipe_schema.h"
#include "source_hash.h"
#include "run_lock.h"
#include "search.h"
#include "search_config.h"
#include "served_log.h"
#include "shard.h"
#include "speculate.h"
#include "version.h"
#include "warm_start.h"

volatile int tune_interrupted;

/* Does a canonical JSON object (compact) hold "key":value, value as JSON writes it? */
static int json_has(const char *json, const char *key, const char *value) {
  char pat[300];
  snprintf(pat, sizeof pat, "\"%s\":%s", key, value);
  size_t n = strlen(pat);
  for (const char *hit = strstr(json, pat); hit; hit = strstr(hit + 1, pat))
    if ((hit[n] == ',' || hit[n] == '}') && (hit == json || hit[-1] == '{' || hit[-1] == ',')) return 1;
  return 0;
}

/* A filter's value as JSON: as given (128, true, "row"), or a bare word that is neither a number
 * nor a boolean quoted (row -> "row"), so that string dims and parameters match without the shell
 * quoting a user would otherwise need. */
static void filter_value_json(const char *v, char *out, size_t n) {
  char *end = NULL;
  (void)strtod(v, &end);
  int literal = v[0] == '"' || (v[0] && end && !*end) || !strcmp(v, "true") || !strcmp(v, "false");
  snprintf(out, n, literal ? "%s" : "\"%s\"", v);
}

/* Does a canonical JSON object (sorted or ordered keys, compact) hold every
 * K=V pair of one filter "K=V[,K=V...]"? */
static int json_matches(const char *json, const char *filter) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", filter);
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq) return 0;
    *eq = 0;
    char value[256];
    filter_value_json(eq + 1, value, sizeof value);
    if (!json_has(json, kv, value)) return 0;
  }
  return 1;
}

int tune_run_opts_select_config(const tune_run_opts *o, const char *json) {
  if (o->n_only == 0) return 1;
  for (int i = 0; i < o->n_only; ++i)
    if (json_matches(json, o->only[i])) return 1;
  return 0;
}

int tune_problem_filter_match(const char *filter, const tune_problem *p) {
  return strchr(filter, '=') ? json_matches(p->dims_json, filter) : !strcmp(filter, p->name);
}

/* Does problem p pass the --problem filters? */
static int problem_selected(const tune_run_opts *o, const tune_problem *p) {
  if (o->n_problems == 0) return 1;
  for (int i = 0; i < o->n_problems; ++i)
    if (tune_problem_filter_match(o->problems[i], p)) return 1;
  return 0;
}

/* ---- the filters against the recipe file ---------------------------------- */

/* names[0..n) as "a, b, c" into out (cut short with "..." when it does not fit). */
static void name_list(const char *const *names, int n, char *out, size_t len) {
  size_t used = 0;
  out[0] = 0;
  for (int i = 0; i < n && used < len; ++i) {
    int w = snprintf(out + used, len - used, "%s%s", i ? ", " : "", names[i]);
    if (w < 0 || (size_t)w >= len - used) { snprintf(out + (len > 4 ? len - 4 : 0), len > 4 ? 4 : len, "..."); return; }
    used += (size_t)w;
  }
}

/* Append name to names[*n] (at most max) unless it is there: a file's recipes share names. */
static void add_name(const char **names, int *n, int max, const char *name) {
  for (int i = 0; i < *n; ++i)
    if (!strcmp(names[i], name)) return;
  if (*n < max) names[(*n)++] = name;
}

/* "; did you mean X?" when X is near word among names, else "". */
static void did_you_mean(const char *word, const char *const *names, int n, char *out, size_t len) {
  const char *near = tune_nearest_name(word, names, n);
  snprintf(out, len, "%s%s%s", near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
}

int tune_problem_filter_check(const tune_recipes *set, const char *f, const char *file, tune_err *err) {
  const char *names[256];
  int n = 0, by_dims = strchr(f, '=') != NULL;
  for (int ri = 0; ri < set->n; ++ri)
    for (int pi = 0; pi < set->r[ri].n_problems; ++pi) {
      const tune_problem *p = &set->r[ri].problems[pi];
      if (tune_problem_filter_match(f, p)) return TUNE_OK;
      add_name(names, &n, 256, p->name);
    }
  char list[1024], hint[128] = "";
  name_list(names, n, list, sizeof list);
  if (!by_dims) did_you_mean(f, names, n, hint, sizeof hint);
  return tune_fail(err, TUNE_EINVAL, "--problem %s: no problem of %s %s (its problems: %s)%s", f, file,
                   by_dims ? "has those dims" : "has that name", list, hint);
}

/* A parameter value as configs' JSON writes it: 128, true, "row". */
static void value_json(const tune_value *v, char *out, size_t n) {
  if (v->kind == 'b') snprintf(out, n, "%s", v->i ? "true" : "false");
  else if (v->kind == 's') snprintf(out, n, "\"%s\"", v->s);
  else snprintf(out, n, "%lld", v->i);
}

/* One K=V of an --only filter: K a parameter of some recipe of the file, V one of its values there. */
static int check_only_pair(const tune_recipes *set, const char *filter, const char *kv, tune_err *err) {
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv) return tune_fail(err, TUNE_EINVAL, "--only %s: want PARAM=VALUE[,PARAM=VALUE...]", filter);
  const char *names[SEARCH_MAX_PARAMS * 4];
  const tune_param *param = NULL;
  int n = 0;
  for (int ri = 0; ri < set->n; ++ri)
    for (int k = 0; k < set->r[ri].n_params; ++k) {
      const tune_param *pa = &set->r[ri].params[k];
      if (strlen(pa->name) == (size_t)(eq - kv) && !strncmp(pa->name, kv, (size_t)(eq - kv))) {
        param = pa;
        char want[256];
        filter_value_json(eq + 1, want, sizeof want);
        for (int j = 0; j < pa->n_values; ++j) {
          char v[256];
          value_json(&pa->values[j], v, sizeof v);
          if (!strcmp(v, want)) return TUNE_OK;
        }
      } else add_name(names, &n, (int)(sizeof names / sizeof names[0]), pa->name);
    }
  char list[1024], hint[128] = "";
  if (!param) {
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
    name_list(names, n, list, sizeof list);
    did_you_mean(key, names, n, hint, sizeof hint);
    return tune_fail(err, TUNE_EINVAL, "--only %s: no parameter %s (parameters: %s)%s", filter, key, list, hint);
  }
  char vals[64][64];
  const char *vp[64];
  int nv = param->n_values < 64 ? param->n_values : 64;
  for (int j = 0; j < nv; ++j) value_json(&param->values[j], vals[j], sizeof vals[j]), vp[j] = vals[j];
  name_list(vp, nv, list, sizeof list);
  return tune_fail(err, TUNE_EINVAL, "--only %s: %s has no value %s (its values: %s)", filter, param->name, eq + 1, list);
}

int tune_run_opts_check(const tune_run_opts *o, const tune_recipes *set, tune_err *err) {
  for (int i = 0; i < o->n_problems; ++i)
    if (tune_problem_filter_check(set, o->problems[i], o->recipe_path, err)) return err->code;
  for (int i = 0; i < o->n_only; ++i) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", o->only[i]);
    int pairs = 0;
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save), ++pairs)
      if (check_only_pair(set, o->only[i], kv, err)) return err->code;
    if (!pairs) return tune_fail(err, TUNE_EINVAL, "--only %s: want PARAM=VALUE[,PARAM=VALUE...]", o->only[i]);
  }
  return TUNE_OK;
}

void tune_default_replay_path(const tune_recipes *set, const char *recipe_path, char *out, size_t n) {
  const char *base = strrchr(recipe_path, '/');
  base = base ? base + 1 : recipe_path;
  char stem[256];
  snprintf(stem, sizeof stem, "%s", base);
  char *dot = strrchr(stem, '.');
  if (dot) *dot = 0;
  /* a sub-recipe's own file, recipes/<family>/<sub>.lua, is recorded as <family>.<sub>.db */
  char family[256] = "";
  if (base > recipe_path + 1) {
    const char *end = base - 1, *start = end;
    while (start > recipe_path && start[-1] != '/') --start;
    snprintf(family, sizeof family, "%.*s", (int)(end - start), start);
  }
  if (family[0] && strcmp(family, "recipes")) {
    snprintf(out, n, "%s/data/recorded/%s.%s.db", set->r[0].root, family, stem);
    if (access(out, R_OK) == 0) return;
  }
  snprintf(out, n, "%s/data/recorded/%s.db", set->r[0].root, stem);
}

/* The successive-halving margin of a run (halving.h), 0 = off: --no-halving, --halving=F,
 * then the recipe's `halving`; a plain --halving takes the recipe's margin, else the default. */
static double halving_margin(const tune_run_opts *o, const tune_search_config *sc) {
  if (o->halving < 0) return 0;
  if (o->halving > 0) return o->halving;
  if (o->halving_on && !(sc->halving > 0)) return TUNE_HALVING_DEFAULT_MARGIN;
  return sc->halving;
}


/* ---- a problem's space ---------------------------------------------------- */

/* --shard I/N (shard.h): which problems and parts of problems this run takes. */
typedef struct shard_cursor {
  int index, count;  /* I and N; count 0: no sharding */
  int parts;         /* S: the parts each problem is cut into */
  int next;          /* the ordinal of the next problem --problem keeps, across the file's recipes */
} shard_cursor;

/* Configs tune_space_cut keeps: those of part `part` of `parts` (a shard's share, shard.h), and
 * those --only selects. */
typedef struct shard_part { int parts, part; } shard_part;

static int shard_keeps(const void *ctx, const tune_recipe *r, const int *vi, int *keep, tune_err *err) {
  const shard_part *s = ctx;
  char hash[17];
  tune_recipe_config_hash(r, vi, hash);
  *keep = tune_shard_keeps_config(hash, s->parts, s->part);
  return TUNE_OK;
}

static int only_keeps(const void *ctx, const tune_recipe *r, const int *vi, int *keep, tune_err *err) {
  char json[2048];
  tune_recipe_config_json(r, vi, json, sizeof json);
  *keep = tune_run_opts_select_config(ctx, json);
  return TUNE_OK;
}

/* A problem over the configs that apply to it (problem_space.h): the strategy walks only
 * those; `recipe_space` is the recipe's constrained space. *before (n_before points,
 * ascending; NULL for a sweep) unites the spaces of the recipe's problems before p: p opens a
 * new regime when it shares no config with them (warm_start.h), and its space joins them.
 * With run 0 p is only added to *before. parts > 1: only the configs of part `part` run (a
 * shard's share, shard.h); the union takes the whole space, as every shard computes it. */
static int run_problem_space(const tune_recipe_run *rr, int pi, const search_space *recipe_space, int sweep,
                             uint64_t **before, size_t *n_before, int run, int parts, int part, tune_err *err) {
  tune_problem *p = &rr->r->problems[pi];
  tune_device_facts facts;
  tune_device_facts_from(rr->dev, &facts);
  search_space *space = NULL, *share = NULL;
  tune_rejections rej;
  if (tune_problem_space(rr->r, p, &facts, recipe_space, &space, &rej, err)) return err->code;
  const search_space *own = space ? space : recipe_space; /* NULL: too large to filter ahead */
  int project = 0, rc = TUNE_OK;
  if (!space && !rr->o->quiet && run)
    printf("%s %s: %zu configs, more than %zu: not filtered ahead; a config this problem rejects is recorded "
           "as skipped when proposed\n", rr->r->name, p->name, recipe_space->n_points, TUNE_PROBLEM_FILTER_MAX);
  if (before && tune_warm_next_problem(before, n_before, own, &project))
    rc = tune_fail(err, TUNE_ENOMEM, "session: out of memory");
  /* --only narrows the space the strategy walks (and its counters and budget) where the space
   * is filtered ahead; a streamed space leaves other configs out as they are proposed */
  search_space *only = NULL;
  if (!rc && run && space && rr->o->n_only) {
    rc = tune_space_cut(rr->r, own, only_keeps, rr->o, &only, err);
    if (!rc) own = only;
  }
  if (!rc && run && parts > 1) {
    shard_part sp = {parts, part};
    rc = tune_space_cut(rr->r, own, shard_keeps, &sp, &share, err);
    if (!rc && !rr->o->quiet)
      printf("shard %d/%d: %s %s: %zu of its %zu configs (config hash mod %d = %d)\n", rr->o->shard_index,
             rr->o->shard_count, rr->r->name, p->name, share->n_points, own->n_points, parts, part);
    if (!rc && !share->n_points) run = 0;
  }
  if (!rc && run) rc = tune_run_problem(rr, p, pi, share ? share : own, &rej, sweep, project, err);
  search_space_free(share);
  search_space_free(only);
  search_space_free(space);
  return rc;
}

/* The recipe's problems that pass --problem and are in this shard (the others, with the warm start
 * on, only join the union of spaces before the next), then the code proposals on every problem of
 * the recipe (a region that is right only for some sizes must not win elsewhere): the problems
 * tuned before they came, and those --problem left out. *selected: how many problems passed
 * --problem; *taken: how many of them this shard runs (a part of, with parts > 1). */
static int run_problems(const tune_recipe_run *rr, const search_space *space, shard_cursor *sh, int *selected,
                        int *taken, tune_err *err) {
  const tune_run_opts *o = rr->o;
  tune_recipe *r = rr->r;
  uint64_t *before = NULL; /* the union of the spaces of the problems so far (warm_start.h: a new regime) */
  size_t n_before = 0;
  int warm_on = !o->no_warm_start && !o->compile_only, rc = TUNE_OK;
  for (int pi = 0; pi < r->n_problems && !tune_interrupted; ++pi) {
    int sel = problem_selected(o, &r->problems[pi]), part = 0;
    *selected += sel;
    if (sel && sh->count) {
      part = tune_shard_part(sh->index, sh->count, sh->parts, sh->next++);
      sel = part >= 0;
    }
    if (!sel && !warm_on) continue;
    *taken += sel;
    rc = run_problem_space(rr, pi, space, 0, warm_on ? &before : NULL, &n_before, sel, sh->parts, part, err);
    if (rc) break;
  }
  free(before);
  for (int pi = 0; !rc && pi < r->n_problems && !tune_interrupted; ++pi)
    if (tune_code_set_pending(rr->codes, pi)) rc = run_problem_space(rr, pi, space, 1, NULL, NULL, 1, 1, 0, err);
  return rc;
}

/* ---- a recipe -------------------------------------------------------------- */

typedef struct session {
  const tune_run_opts *o;
  tune_recipes *set;
  db_conn *db;
  const char *db_path;
  int run_lock_fd;                 /* the lock of the recipe's run row (run_lock.h), -1: none */
  tune_backend *be;                /* NULL: compile-only, or a recipe that is not replayed */
  tune_peaks_ahead *peaks_ahead;   /* the matrix peak's kernel, compiled while the worker starts */
  const char *device;              /* --device, or "cuda:0" where a driver loads */
  int replay_default;              /* no GPU and no --device: the recipe file's recording */
  char replay_path[PATH_MAX + 64];
  uint64_t seed;
  unsigned char *not_served;       /* --problems-from: 1 for recipes the log has no problem of */
  shard_cursor shard;              /* --shard I/N */
} session;

/* The recipe's constrained space, its run row (strategy, budgets, seed) and the device's
 * limits; fills rr's run and recipe ids and sc. */
static int recipe_begin(session *s, tune_recipe_run *rr, tune_search_config *sc, tune_peaks *peaks,
                        search_space **space, tune_err *err) {
  const tune_run_opts *o = s->o;
  tune_recipe *r = rr->r;
  if (db_device_put(s->db, rr->dev, &rr->device_id, err)) return err->code;
  if (tune_recipe_put(s->db, r, s->set->file_text, &rr->recipe_id, err)) return err->code;
  /* the space, pruned by the recipe's constraints as parameters are bound */
  int nv[SEARCH_MAX_PARAMS];
  for (int i = 0; i < r->n_params; ++i) nv[i] = r->params[i].n_values;
  search_space_def def = {.n_params = r->n_params, .n_values = nv, .n_constraints = r->n_constraints,
                          .constraint_level = NULL, .check = tune_recipe_check, .ctx = r};
  double t0 = tune_now_s();
  if (search_space_enumerate(&def, space, err)) return err->code;
  printf("%s: %zu of %llu configs satisfy the constraints (%.3f s)\n", r->name, (*space)->n_points,
         (unsigned long long)(*space)->n_total, tune_now_s() - t0);
  if (!(*space)->n_points)
    return tune_fail(err, TUNE_EINVAL, "%s: recipe %s: its constraints reject every one of its %llu configs: nothing to tune",
                     r->file, r->name, (unsigned long long)(*space)->n_total);
  db_run run;
  memset(&run, 0, sizeof run);
  run.recipe_id = rr->recipe_id;
  run.device_id = rr->device_id;
  snprintf(run.backend, sizeof run.backend, "%.63s", s->be ? s->be->name : "compile-only");
  if (tune_search_config_get(r, o->strategy, o->min_occupancy_given ? o->min_occupancy : -1, -1, sc, err)) return err->code;
  /* runs has no field of its own for the shard (a schema change is the integrator's): its
     strategy text carries it, "exhaustive shard 2/3", which nothing parses back */
  if (o->shard_count) snprintf(run.strategy, sizeof run.strategy, "%.15s shard %d/%d", sc->strategy, o->shard_index, o->shard_count);
  else snprintf(run.strategy, sizeof run.strategy, "%s", sc->strategy);
  rr->halving = halving_margin(o, sc);
  if (s->be && rr->halving > 0)
    printf("halving: each variant is verified and timed with %d samples first; the full timing only for those within "
           "%g %% of the best\n", TUNE_HALVING_QUICK_SAMPLES, 100 * rr->halving);
  run.budget = o->budget;
  run.budget_s = o->budget_s;
  run.seed = s->seed;
  snprintf(run.tool_version, sizeof run.tool_version, "%s", TUNE_VERSION);
  if (db_run_begin(s->db, &run, &rr->run_id, err)) return err->code;
  tune_run_lock_take(s->db_path, rr->run_id, &s->run_lock_fd);
  double t_peaks = tune_now_s();
  if (tune_peaks_ensure(s->db, rr->device_id, rr->dev, s->be, s->peaks_ahead, peaks, err)) return err->code;
  if (peaks->copy_GBps > 0 && s->be && s->be->measure_copy_peak) {
    char when[48] = "";
    if (peaks->measured_now) snprintf(when, sizeof when, "; measured now, %.2f s", tune_now_s() - t_peaks);
    char dram[48] = "";
    if (peaks->dram_GBps > 0) snprintf(dram, sizeof dram, ", DRAM %.0f GB/s (bound)", peaks->dram_GBps);
    printf("device limits: copy %.0f GB/s (measured)%s, dense bf16 %.0f TFLOP/s (%s)%s\n", peaks->copy_GBps, dram,
           peaks->tensor_TFLOPs, peaks->tensor_measured ? "measured" : "computed bound", when);
  }
  return TUNE_OK;
}

/* A stop signal fails the recipe code running when it comes (lua_limits.h): a failure once
 * tune_interrupted is set is that stop, so the run ends as interrupted, with its summary. */
static int stopped(tune_err *err) {
  printf("stopped: %s\n", err->msg);
  tune_err_clear(err);
  return TUNE_OK;
}

/* One recipe on the device dev: its problems, its code proposals' verdicts, the last compiles
 * ahead of the strategy, the run row closed, and the summary. */
static int run_recipe(session *s, tune_recipe *r, const db_device *dev, tune_err *err) {
  const tune_run_opts *o = s->o;
  search_space *space = NULL;
  tune_search_config sc;
  tune_peaks peaks;
  tune_run_stats st;
  memset(&st, 0, sizeof st);
  tune_code_set codes;
  tune_recipe_run rr = {.o = o, .r = r, .db = s->db, .be = s->be, .dev = dev, .sc = &sc, .seed = s->seed,
                        .peaks = &peaks, .st = &st, .codes = &codes};
  if (recipe_begin(s, &rr, &sc, &peaks, &space, err)) {
    search_space_free(space);
    if (rr.run_id) db_run_end(s->db, rr.run_id, tune_interrupted ? "interrupted" : "failed", &(tune_err){0});
    tune_run_lock_release(s->db_path, rr.run_id, s->run_lock_fd);
    s->run_lock_fd = -1;
    return tune_interrupted ? stopped(err) : err->code;
  }
  rr.deadline = o->budget_s > 0 ? tune_now_s() + o->budget_s : 0;
  double t_recipe = tune_now_s();
  int selected = 0, taken = 0, rc = TUNE_OK;
  tune_code_set_init(&codes, r->n_problems);
  /* the recipe's compiles ahead of the strategy (speculate.h): may outlive a problem */
  if (tune_spec_new(&rr.spec, err)) {
    tune_code_set_free(&codes);
    search_space_free(space);
    return err->code;
  }
  rc = run_problems(&rr, space, &s->shard, &selected, &taken, err);
  if (rc && tune_interrupted) rc = stopped(err);
  if (!rc && codes.n) rc = tune_code_set_finish(&codes, s->db, o->quiet, err);
  tune_code_set_free(&codes);
  double t_s = tune_now_s(); /* the last guesses: finished and cached (or dropped after a failure) */
  if (!rc) rc = tune_spec_flush(rr.spec, s->db, &st.compiled, err);
  st.t_compile += tune_now_s() - t_s;
  tune_spec_free(rr.spec);
  db_run_end(s->db, rr.run_id, rc ? "failed" : tune_interrupted ? "interrupted" : "done", &(tune_err){0});
  tune_run_lock_release(s->db_path, rr.run_id, s->run_lock_fd);
  s->run_lock_fd = -1;
  search_space_free(space);
  if (rc) return rc;
  if (!selected) printf("%s: no problem matches --problem\n", r->name);
  else if (!taken) printf("%s: shard %d/%d: none of its %d problems is in this shard\n", r->name, o->shard_index,
                          o->shard_count, selected);
  tune_progress_recipe(r->name, &st, rr.halving, tune_now_s() - t_recipe, s->be, sc.strategy);
  return TUNE_OK;
}

/* ---- devices and backends --------------------------------------------------- */

/* Without --device: the GPU where a driver loads, else the recipe file's recording. */
static int choose_device(session *s, tune_err *err) {
  s->device = s->o->device;
  if (s->o->compile_only || s->device) return TUNE_OK;
  tune_err probe;
  tune_err_clear(&probe);
  if (tune_cuda_load(&probe) == TUNE_OK) {
    s->device = "cuda:0";
    return TUNE_OK;
  }
  tune_default_replay_path(s->set, s->o->recipe_path, s->replay_path, sizeof s->replay_path);
  if (access(s->replay_path, R_OK))
    return tune_fail(err, TUNE_ENOGPU, "%s\nand there is no recorded data to replay at %s (use --compile-only to compile without a GPU)",
                     probe.msg, s->replay_path);
  s->replay_default = 1;
  printf("no GPU here (no usable NVIDIA driver): replaying recorded measurements; --compile-only compiles\n");
  return TUNE_OK;
}

/* --compile-only: the architecture compiled for, with Hopper's launch facts, stated as such. */
static void compile_only_device(const tune_run_opts *o, db_device *dev) {
  snprintf(dev->kind, sizeof dev->kind, "arch");
  snprintf(dev->arch, sizeof dev->arch, "%s", o->arch ? o->arch : "sm_90a");
  snprintf(dev->name, sizeof dev->name, "%s", dev->arch);
  snprintf(dev->cuda, sizeof dev->cuda, "%s", tune_nvrtc_version());
  dev->sm_count = 132;
  dev->smem_per_block_optin = 232448;
  dev->l2_bytes = 50 * 1024 * 1024;
}

/* The recording replayed for recipe r; *skip = 1 when the default replay of a file of several
 * recipes lacks r (added after the recording): the run goes on, saying so. An explicit
 * replay:FILE must hold what it is asked. */
static int open_replay(session *s, tune_recipe *r, db_device *dev, int *skip, tune_err *err) {
  const char *path = s->replay_default ? s->replay_path : s->device + 7;
  if (s->be) { s->be->close(s->be); s->be = NULL; }
  /* a sub-recipe recorded in a device call of its own lives beside the file's recording, as
     data/recorded/<recipe name>.db (e.g. attention.prefill_sm90.db) */
  char own[PATH_MAX + 64];
  if (s->replay_default) {
    snprintf(own, sizeof own, "%.*s/%s.db", (int)(strrchr(s->replay_path, '/') - s->replay_path), s->replay_path, r->name);
    if (!access(own, R_OK)) path = own;
  }
  if (tune_backend_replay_open(path, r->name, &s->be, err)) {
    if (!(s->replay_default && s->set->n > 1 && err->code == TUNE_ENOTFOUND)) return err->code;
    printf("%s: not replayed: %s\n", r->name, err->msg);
    tune_err_clear(err);
    s->be = NULL;
    *skip = 1;
    return TUNE_OK;
  }
  *dev = s->be->device;
  printf("replaying %s from %s:\n  measurements made on %s (%s, %d SMs, driver %s); %s\n", r->name, path, dev->name,
         dev->arch, dev->sm_count, dev->driver, s->be->provenance[0] ? s->be->provenance : "");
  if (s->be->recorded_hash[0] && tune_backend_replay_current(s->be, r) == TUNE_REPLAY_OTHER_SOURCE)
    printf("  note: recorded with another version of this recipe or its template (source %s, now %s):\n"
           "  the answers are those measurements, not of the current source\n", s->be->recorded_hash, r->source_hash);
  return TUNE_OK;
}

/* Whether --device names several GPUs: cuda:all or a list (cuda:0,1). */
static int several_gpus(const char *device) {
  return device && !strncmp(device, "cuda:", 5) && (!strcmp(device + 5, "all") || strchr(device, ','));
}

/* The worker on GPU N (cuda:N), or one per GPU (cuda:all, cuda:0,1), started once for the
 * file's recipes. */
static int open_cuda(session *s, tune_err *err) {
  int ordinal = 0;
  if (s->device && strncmp(s->device, "cuda", 4))
    return tune_fail(err, TUNE_EINVAL, "--device %s: want cuda:N, cuda:all, cuda:N,M,... or replay:FILE", s->device);
  double t0 = tune_now_s();
  if (several_gpus(s->device)) {
    if (tune_backend_pool_open(s->o->exe, s->device + 5, &s->be, err)) return err->code;
  } else {
    if (s->device && s->device[4] == ':') ordinal = atoi(s->device + 5);
    if (tune_backend_cuda_open(s->o->exe, ordinal, &s->be, err)) return err->code;
  }
  s->be->timeout_ms = s->o->timeout_ms;
  const db_device *dev = &s->be->device;
  printf("measuring on %s (%s, %d SMs, driver %s) as %s; kernel timer: %s; worker up in %.2f s\n", dev->name,
         dev->arch, dev->sm_count, dev->driver, s->be->name, s->be->provenance, tune_now_s() - t0);
  if (tune_backend_cards(s->be) > 1)
    printf("  %d GPUs of this model, one variant in flight on each; results pool under one device\n",
           tune_backend_cards(s->be));
  return TUNE_OK;
}

/* The device recipe r's results are attributed to, and its backend (*skip: not replayed). */
static int recipe_device(session *s, tune_recipe *r, db_device *dev, int *skip, tune_err *err) {
  memset(dev, 0, sizeof *dev);
  *skip = 0;
  if (s->o->compile_only) {
    compile_only_device(s->o, dev);
    return TUNE_OK;
  }
  if (s->replay_default || (s->device && !strncmp(s->device, "replay:", 7))) return open_replay(s, r, dev, skip, err);
  if (!s->be) {
    if (!s->peaks_ahead && tune_peaks_compile_ahead(s->db, &s->peaks_ahead, err)) return err->code;
    if (open_cuda(s, err)) return err->code;
  }
  *dev = s->be->device;
  return TUNE_OK;
}

/* --shard I/N: the file's problems that --problem keeps (of the recipes --problems-from keeps),
 * and the parts each is cut into (shard.h). */
static void shard_plan(session *s) {
  const tune_run_opts *o = s->o;
  int n = 0;
  for (int ri = 0; ri < s->set->n; ++ri)
    for (int pi = 0; !(s->not_served && s->not_served[ri]) && pi < s->set->r[ri].n_problems; ++pi)
      n += problem_selected(o, &s->set->r[ri].problems[pi]);
  s->shard = (shard_cursor){.index = o->shard_index, .count = o->shard_count,
                            .parts = tune_shard_parts(n, o->shard_count)};
  if (!o->shard_count) return;
  if (s->shard.parts == 1)
    printf("shard %d/%d: whole problems, round robin in recipe order (%d problems)\n", o->shard_index, o->shard_count, n);
  else
    printf("shard %d/%d: each of the %d problems cut into %d parts by config hash, parts round robin\n", o->shard_index,
           o->shard_count, n, s->shard.parts);
}

/* --problems-from: each recipe's problems become the log's problems of its family; recipes the
 * log does not name are skipped. */
static int apply_served_log(session *s, tune_err *err) {
  tune_served_log log;
  if (tune_served_log_load(s->o->problems_from, &log, err)) return err->code;
  const char **dims = calloc((size_t)log.n + 1, sizeof *dims);
  s->not_served = calloc((size_t)s->set->n, 1);
  int rc = dims && s->not_served ? TUNE_OK : tune_fail(err, TUNE_ENOMEM, "out of memory");
  int used = 0;
  for (int ri = 0; !rc && ri < s->set->n; ++ri) {
    tune_recipe *r = &s->set->r[ri];
    int n = tune_served_log_dims(&log, r->name, dims, log.n);
    used += n;
    if (n == 0) s->not_served[ri] = 1;
    else rc = tune_recipe_set_problems(r, dims, n, err);
    if (!rc) printf("%s: %s: %d served problem%s\n", s->o->problems_from, r->name, n, n == 1 ? "" : "s");
  }
  if (!rc && used == 0) rc = tune_fail(err, TUNE_EINVAL, "%s: no problem of any recipe of %s (%d lines of other families)",
                                       s->o->problems_from, s->o->recipe_path, log.n);
  free(dims);
  tune_served_log_free(&log);
  return rc;
}

int tune_session_run(const tune_run_opts *o, int *usage_error, tune_err *err) {
  session s;
  memset(&s, 0, sizeof s);
  s.o = o;
  *usage_error = 0;
  if (tune_recipes_load_root(o->recipe_path, o->root, &s.set, err)) return err->code;
  if ((o->problems_from && apply_served_log(&s, err)) || tune_run_opts_check(o, s.set, err)) {
    *usage_error = err->code == TUNE_EINVAL;
    free(s.not_served);
    tune_recipes_free(s.set);
    return err->code;
  }
  {
    char line[PATH_MAX + 64];
    tune_recipes_root_line(s.set, line, sizeof line);
    printf("%s\n", line);
  }
  shard_plan(&s);
  s.db_path = o->db_path ? o->db_path : "tune.db";
  s.run_lock_fd = -1;
  int rc = db_open(s.db_path, 0, &s.db, err), n_reaped = 0;
  if (!rc) rc = tune_run_lock_reap(s.db, s.db_path, &n_reaped, err);
  if (n_reaped) printf("%s: %d run%s left running by a process that is gone: marked interrupted\n", s.db_path, n_reaped,
                       n_reaped == 1 ? "" : "s");
  if (!rc) rc = choose_device(&s, err);
  s.seed = o->seed_given ? o->seed : ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
  for (int ri = 0; !rc && ri < s.set->n && !tune_interrupted; ++ri) {
    db_device dev;
    int skip = 0;
    if (s.not_served && s.not_served[ri]) continue;
    rc = recipe_device(&s, &s.set->r[ri], &dev, &skip, err);
    if (!rc && !skip) rc = run_recipe(&s, &s.set->r[ri], &dev, err);
  }
  if (!rc && tune_interrupted) printf("interrupted: results so far are stored; run again to resume\n");
  if (s.be) s.be->close(s.be);
  tune_peaks_ahead_free(s.peaks_ahead);
  db_close(s.db);
  free(s.not_served);
  tune_recipes_free(s.set);
  return rc ? err->code : TUNE_OK;
}

int tune_recipe_put(db_conn *db, const tune_recipe *r, const char *file_text, int64_t *id, tune_err *err) {
  if (db_recipe_put(db, r->name, r->source_hash, r->file, file_text, id, err)) return err->code;
  char code[17];
  tune_err e;
  tune_err_clear(&e);
  /* a recipe whose requires are computed at run time has no normalised hash: only the raw one */
  if (tune_recipe_hash_normalized(r->module_file, r->template_path, r->ref_source, r->root, code, &e)) return TUNE_OK;
  return db_recipe_set_code_hash(db, *id, code, err);
}
