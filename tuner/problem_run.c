/* problem_run.c: one problem of a recipe run, stage by stage (problem_run.h). */
#include "problem_run.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code_proposal.h"
#include "compile.h"
#include "compile_ptx.h"
#include "halving.h"
#include "lookahead.h"
#include "proposer.h"
#include "prune.h"
#include "reference_job.h"
#include "reselect.h"
#include "variant_job.h"
#include "warm_start.h"

/* ---- the decisions between the stages ------------------------------------- */

int tune_batch_want(long long budget, long long evaluated, int sweep) {
  int want = TUNE_BATCH;
  /* a sweep is not bounded by the budgets: a code variant is verified on every problem */
  if (!sweep && budget > 0 && budget - evaluated < want) want = (int)(budget - evaluated);
  return want;
}

void tune_best_init(tune_best *b) {
  memset(b, 0, sizeof *b);
  b->ns = INFINITY;
}

int tune_best_offer(tune_best *b, const db_result *res, int quick_only, const tune_proposal *p, const char *label) {
  if (res->status != DB_OK || !(res->median_ns < b->ns) || quick_only) return 0;
  b->ns = res->median_ns;
  size_t n = strlen(label) < sizeof b->label ? strlen(label) : sizeof b->label - 1; /* a long label is cut */
  memcpy(b->label, label, n);
  b->label[n] = 0;
  if (p->code < 0) {
    b->point = p->point;
    b->have_point = 1;
  }
  return 1;
}

/* The strategies whose next batch search_strategy_peek gives exactly, before this one is measured. */
static int next_batch_known(const char *strategy) {
  return !strcmp(strategy, "exhaustive") || !strcmp(strategy, "random");
}

tune_pass tune_first_pass(double halving) { return halving > 0 ? TUNE_PASS_QUICK : TUNE_PASS_FULL; }

int tune_pass_samples(tune_pass pass) { return pass == TUNE_PASS_QUICK ? TUNE_HALVING_QUICK_SAMPLES : 0; }

int tune_pass_keeps_quick(tune_pass pass, int has_quick, int full) {
  return pass == TUNE_PASS_FULL && has_quick && !full;
}

void tune_pass_select_full(int n, const int *has_quick, const db_result *quick, double best_ns, double margin,
                           int *full) {
  double qns[TUNE_BATCH] = {0};
  for (int i = 0; i < n; ++i) qns[i] = has_quick[i] && quick[i].status == DB_OK ? quick[i].median_ns : -1;
  tune_halving_batch(qns, n, best_ns, margin, full);
  for (int i = 0; i < n; ++i) full[i] = full[i] || (has_quick[i] && quick[i].status == DB_SUSPICIOUS);
}

/* ---- the state of a problem run ------------------------------------------- */

/* One variant of the batch on its way through the stages. */
typedef struct candidate {
  tune_proposal prop;        /* what was proposed, by which source */
  int vi[SEARCH_MAX_PARAMS]; /* value index per parameter */
  char hash[17];             /* config hash */
  char json[2048];           /* config as JSON */
  char label[TUNE_LABEL_MAX]; /* what the progress lines print: the config, and the code's origin */
  int64_t config_id;
  tune_variant v;
  int done;                  /* result final (resumed, left out by --only, recorded in the quick pass) */
  int job;                   /* index into the batch's jobs, -1 none */
  int has_quick, full;       /* halving: quick result in quick[i]; chosen for the full timing */
} candidate;

/* where a job's binary comes from: compiled for the batch, the cache, a guess taken from a round
   (speculate.h), a guess compiled ahead on the problem's pool (lookahead.h) */
typedef enum { JOB_COMPILE, JOB_CACHED, JOB_GUESSED, JOB_AHEAD } job_origin;

typedef struct batch {
  int n;                          /* candidates: configs, then code variants */
  candidate *c;                   /* [TUNE_BATCH] */
  db_result *quick;               /* [TUNE_BATCH] halving: quick results; NULL without halving */
  db_result *res;                 /* [TUNE_BATCH] this pass's result per candidate, filled while in flight */
  int sync_tag;                   /* a backend without submit: the candidate measured at submit */
  tune_compile_job *jobs;         /* [TUNE_BATCH] */
  int n_jobs;
  job_origin origin[TUNE_BATCH];
  int aidx[TUNE_BATCH];           /* place on the problem's compile pool; -1: from the cache or a round */
  int ahead_ref[TUNE_BATCH];      /* JOB_AHEAD: the guess (tune_ahead_claim) */
  int stored[TUNE_BATCH];         /* binary written to the database */
  int n_todo;                     /* compiles of the batch's own on the pool */
  int in_flight;                  /* candidates sent to the backend, not yet collected */
  int guess_due;                  /* the batch's round of guesses is yet to start (guess_round) */
} batch;

typedef struct tune_problem_run {
  const tune_recipe_run *rr;
  tune_problem *p;
  int pi, sweep, project;
  const search_space *space;
  int64_t problem_id;
  tune_device_facts facts;
  tune_problem_setup setup;
  const char *arch;              /* --arch, else the device's */
  char templates[PATH_MAX + 16]; /* include root */
  tune_sm_limits lim;
  int prune_on;
  double halving;                /* 0 with compile-only: nothing to time */
  tune_spec *spec;               /* guesses for an adaptive strategy; NULL: none for this problem */
  tune_ahead *ahead;             /* the next batch's compiles, for a strategy that knows it; NULL: none */
  tune_compile_async *pool;      /* the problem's compiles, in the order queued: batches' and guesses' */
  tune_proposer_opts popts;      /* the LLM proposer's, borrowed by it */
  tune_source_chain sources;
  batch b;
  tune_best best;
  long long evaluated, resumed;  /* this problem's new and resumed results */
  tune_progress pg;
} tune_problem_run;

/* ---- setting up ------------------------------------------------------------ */

/* The reference (also compiled by --compile-only, so a reference that NVRTC rejects is found
 * without a GPU), handed to the backend with the problem. */
static int set_reference(tune_problem_run *x, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  tune_compile_job ref;
  if (tune_reference_binary(rr->db, rr->r, &x->setup, x->templates, rr->dev->arch, &ref, err)) {
    db_binary_release(&ref.bin);
    return err->code;
  }
  int rc = rr->be ? rr->be->set_problem(rr->be, rr->r, x->p, &x->setup, &ref.bin, ref.lowered[0], rr->seed, err)
                  : TUNE_OK;
  db_binary_release(&ref.bin);
  return rc;
}

static int add_source(tune_problem_run *x, tune_source *s, tune_err *err) {
  if (!s || tune_source_chain_add(&x->sources, s)) return tune_fail(err, TUNE_ENOMEM, "session: out of memory");
  return TUNE_OK;
}

/* --strategy llm: the proposer drives, the random strategy fills batches it leaves empty. */
static int open_llm_sources(tune_problem_run *x, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  const tune_run_opts *o = rr->o;
  tune_source *random;
  if (tune_source_strategy_new("random", x->space, rr->seed, "random", &random, err)) return err->code;
  x->popts = (tune_proposer_opts){.command = o->proposer, .n_env = o->n_proposer_env, .timeout_ms = o->proposer_timeout_ms};
  for (int i = 0; i < o->n_proposer_env && i < TUNE_PROPOSER_MAX_ENV; ++i) x->popts.env[i] = o->proposer_env[i];
  tune_llm_ctx lc = {.opts = &x->popts, .recipe = rr->r, .problem = x->p, .space = x->space, .device = rr->dev,
                     .peaks = rr->peaks, .bytes = x->setup.bytes, .flops = x->setup.flops, .db = rr->db,
                     .run_id = rr->run_id, .problem_id = x->problem_id, .quiet = o->quiet, .codes = rr->codes};
  tune_llm *llm;
  if (tune_llm_new(&lc, &llm, err)) {
    random->free(random);
    return err->code;
  }
  if (add_source(x, tune_source_llm_new(llm, rr->codes), err)) {
    tune_llm_free(llm);
    random->free(random);
    return err->code;
  }
  return add_source(x, tune_source_llm_fill_new(random, llm, rr->codes, x->pi), err);
}

/* The warm start's configs (warm_start.h): the bests of the recipe's other problems, nearest first. */
static int warm_points(tune_problem_run *x, uint64_t *warm, int *n_warm, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  uint64_t *bests = NULL;
  double *dist = NULL;
  int n_bests = 0;
  if (tune_warm_bests_db(rr->db, rr->r, rr->dev->name, rr->dev->arch, x->p, x->space, &bests, &dist, &n_bests, err))
    return err->code;
  *n_warm = tune_warm_order(bests, dist, n_bests, x->space, tune_warm_max(rr->o->budget), x->project, warm);
  free(bests);
  free(dist);
  if (*n_warm && !rr->o->quiet)
    printf("warm start: %d config(s) best on the nearest other problems (of %s, or of a recipe with its parameters) first\n",
           *n_warm, rr->r->name);
  return TUNE_OK;
}

/* The strategy, after the warm start's configs when there are any. */
static int open_search_sources(tune_problem_run *x, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  tune_source *strat;
  if (tune_source_strategy_new(rr->sc->strategy, x->space, rr->seed, rr->sc->strategy, &strat, err)) return err->code;
  /* several GPUs: a strategy that proposes one point at a time would leave the others idle; compile
     only (no backend, no measurement comes back): it would leave the compile pool one job a batch */
  int par = rr->be ? tune_backend_cards(rr->be) : (rr->o->jobs < SEARCH_MAX_PARALLEL ? rr->o->jobs : SEARCH_MAX_PARALLEL);
  if (par > 1 && tune_source_strategy_set_parallel(strat, par, err)) {
    strat->free(strat);
    return err->code;
  }
  uint64_t warm[TUNE_WARM_MAX];
  int n_warm = 0;
  if (rr->be && !rr->o->no_warm_start && warm_points(x, warm, &n_warm, err)) {
    strat->free(strat);
    return err->code;
  }
  if (n_warm && add_source(x, tune_source_warm_new(warm, n_warm, rr->sc->strategy, strat), err)) {
    strat->free(strat);
    return err->code;
  }
  return add_source(x, strat, err);
}

static int open_sources(tune_problem_run *x, tune_err *err) {
  int llm = !strcmp(x->rr->sc->strategy, "llm");
  if (!x->sweep && (llm ? open_llm_sources(x, err) : open_search_sources(x, err))) return err->code;
  /* code proposals' variants not yet evaluated on this problem (this one's, earlier problems') */
  return add_source(x, tune_source_code_new(x->rr->codes, x->pi, x->p->name), err);
}

/* Everything before the first batch: the problem's row and setup, its heading, the reference,
 * the sources, the batch's buffers. */
static int problem_open(tune_problem_run *x, const tune_rejections *rej, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  tune_backend *be = rr->be;
  tune_device_facts_from(rr->dev, &x->facts);
  x->arch = rr->o->arch ? rr->o->arch : rr->dev->arch;
  snprintf(x->templates, sizeof x->templates, "%s/templates", rr->r->root);
  tune_best_init(&x->best);
  if (db_problem_put(rr->db, rr->r->name, x->p->name, x->p->hash, x->p->dims_json, &x->problem_id, err)) return err->code;
  if (tune_recipe_eval_problem_drawn(rr->r, x->p, &x->facts, rr->seed, &x->setup, err)) return err->code;
  tune_progress_problem(rr->r->name, x->p, x->space->n_points, rej, be ? be->name : "compile-only", rr->o->quiet,
                        x->sweep ? tune_code_set_pending(rr->codes, x->pi) : 0);
  double t_setup = tune_now_s();
  if ((!be || be->needs_binaries) && set_reference(x, err)) return err->code;
  rr->st->t_setup += tune_now_s() - t_setup;
  x->prune_on = tune_sm_limits_for(x->arch, rr->dev->smem_per_block_optin, &x->lim) == 0;
  if (open_sources(x, err)) return err->code;
  x->halving = be ? rr->halving : 0;
  int llm = !strcmp(rr->sc->strategy, "llm");
  int compiles = !be || be->needs_binaries, guessing = compiles && !x->sweep && !llm;
  /* bayes proposes one point per batch after its design: guess its next ones while this one is measured */
  x->spec = guessing && !strcmp(rr->sc->strategy, "bayes") ? rr->spec : NULL;
  if (guessing && next_batch_known(rr->sc->strategy) && tune_ahead_new(&x->ahead, err)) return err->code;
  if (compiles && tune_compile_open(rr->o->jobs, &x->pool, err)) return err->code;
  batch *b = &x->b;
  b->c = calloc(TUNE_BATCH, sizeof *b->c);
  b->jobs = calloc(TUNE_BATCH, sizeof *b->jobs);
  b->quick = x->halving > 0 ? calloc(TUNE_BATCH, sizeof *b->quick) : NULL;
  b->res = calloc(TUNE_BATCH, sizeof *b->res);
  if (!b->c || !b->jobs || !b->res || (x->halving > 0 && !b->quick))
    return tune_fail(err, TUNE_ENOMEM, "session: out of memory");
  tune_progress_init(&x->pg, rr->o->quiet, rr->o->budget, x->space->n_points, &x->setup);
  return TUNE_OK;
}

/* The problem's compiles done and stored: guesses no batch took go to the compile cache. */
static int problem_drain(tune_problem_run *x, tune_err *err) {
  tune_compile_finish(x->pool);
  x->pool = NULL;
  return x->ahead ? tune_ahead_flush(x->ahead, x->rr->db, &x->rr->st->compiled, err) : TUNE_OK;
}

static void problem_close(tune_problem_run *x) {
  batch *b = &x->b;
  tune_compile_finish(x->pool); /* joins the pool's threads before their jobs are freed */
  tune_ahead_free(x->ahead);
  for (int i = 0; b->jobs && i < TUNE_BATCH; ++i) db_binary_release(&b->jobs[i].bin);
  free(b->jobs);
  free(b->c);
  free(b->quick);
  free(b->res);
  tune_source_chain_free(&x->sources);
}

/* ---- resolve: config rows, resumed results, binaries at hand --------------- */

/* What the candidate is: its values, hash, JSON and label, from its proposal. */
static void describe(tune_problem_run *x, candidate *c, const tune_proposal *p) {
  tune_recipe *r = x->rr->r;
  memset(c, 0, sizeof *c);
  c->job = -1;
  c->prop = *p;
  const tune_code_variant *cv = p->code >= 0 ? &x->rr->codes->v[p->code] : NULL;
  if (cv) {
    memcpy(c->vi, cv->vi, sizeof c->vi);
    snprintf(c->hash, sizeof c->hash, "%s", cv->hash);
    tune_recipe_config_json(r, c->vi, c->json, sizeof c->json);
  } else {
    search_point_decode(x->space, p->point, c->vi);
    tune_recipe_config_json(r, c->vi, c->json, sizeof c->json);
    tune_recipe_config_hash(r, c->vi, c->hash);
  }
  snprintf(c->label, sizeof c->label, "%s%s%s", c->json, cv ? " " : "", cv ? cv->origin : "");
}

/* A result the database holds for this config, problem and device is this run's answer: the
 * sources observe it as if it had been measured now. Returns 1 when it did. A --compile-only
 * run (no backend) answers from compile-only rows too. */
static int resume(tune_problem_run *x, candidate *c) {
  const tune_recipe_run *rr = x->rr;
  db_result prev;
  tune_err e;
  tune_err_clear(&e);
  const char *timing = rr->o->sustained ? "sustained" : "burst";
  int missing = rr->be ? db_result_find_timing(rr->db, rr->recipe_id, rr->device_id, c->config_id, x->problem_id,
                                               timing, &prev, &e)
                       : db_result_find_compiled(rr->db, rr->recipe_id, rr->device_id, c->config_id, x->problem_id,
                                                 &prev, &e);
  if (missing) return 0;
  c->done = 1;
  rr->st->resumed++;
  x->resumed++;
  tune_source_chain_observe(&x->sources, &c->prop, c->json, &prev);
  tune_best_offer(&x->best, &prev, tune_halving_is_quick(prev.error_text), &c->prop, c->label);
  rr->st->n_status[prev.status]++;
  rr->st->compile_only += prev.status == DB_SKIPPED && !strcmp(prev.error_text, DB_REASON_COMPILE_ONLY);
  return 1;
}

/* The candidate's compile job: its binary from the cache, from a guess compiled ahead (stored
 * now, like a compile of this batch), or to be compiled. */
static int prepare_job(tune_problem_run *x, candidate *c, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  batch *b = &x->b;
  tune_compile_job *j = &b->jobs[b->n_jobs];
  db_binary_release(&j->bin);
  tune_variant_job(j, rr->r->template_path, x->templates, x->arch, &c->v);
  if (c->prop.code >= 0) { /* the template with the proposed region: its own source text and compile key */
    j->source_text = rr->codes->v[c->prop.code].source;
    j->text_of_template = 1;
  }
  if (tune_compile_key(j, err)) return err->code;
  int hit, taken = 0;
  if (tune_compile_from_cache(rr->db, j, &hit, err)) return err->code;
  b->origin[b->n_jobs] = hit ? JOB_CACHED : JOB_COMPILE;
  if (hit && x->spec && tune_spec_claim_stored(x->spec, j->bin.key)) rr->st->guessed++; /* compiled (counted) by a round */
  else if (hit) rr->st->cached++;
  else if (x->spec && tune_spec_take(x->spec, j, &taken, &rr->st->t_compile, err)) return err->code;
  else if (x->ahead && tune_ahead_claim(x->ahead, j->bin.key, &b->aidx[b->n_jobs], &b->ahead_ref[b->n_jobs]))
    b->origin[b->n_jobs] = JOB_AHEAD;
  if (taken) {
    if (db_binary_put(rr->db, &j->bin, err)) return err->code;
    rr->st->compiled++;
    rr->st->guessed++;
    b->origin[b->n_jobs] = JOB_GUESSED;
  }
  c->job = b->n_jobs++;
  return TUNE_OK;
}

static int stage_resolve(tune_problem_run *x, const tune_proposal *props, int n, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  batch *b = &x->b;
  b->n = n;
  b->n_jobs = 0;
  for (int i = 0; i < n; ++i) {
    candidate *c = &b->c[i];
    describe(x, c, &props[i]);
    if (c->prop.code < 0 && !tune_run_opts_select_config(rr->o, c->json)) { c->done = 1; continue; }
    if (db_config_put(rr->db, rr->r->name, c->hash, c->json, c->prop.origin, &c->config_id, err)) return err->code;
    if (tune_recipe_eval_variant(rr->r, c->vi, x->p, &x->facts, &c->v, err)) return err->code;
    if (resume(x, c)) continue;
    if (c->v.skip || (rr->be && !rr->be->needs_binaries)) continue;
    if (prepare_job(x, c, err)) return err->code;
  }
  return TUNE_OK;
}

/* ---- compile: the misses in the background -------------------------------- */

/* An adaptive strategy's round of guesses (speculate.h): it stores the last round's guesses and
 * starts compiling the next on threads of its own. */
static int spec_round(tune_problem_run *x, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  batch *b = &x->b;
  int n_thr = rr->o->jobs - b->n_todo > 1 ? rr->o->jobs - b->n_todo : 1;
  int max = rr->o->jobs < TUNE_SPEC_MAX ? rr->o->jobs : TUNE_SPEC_MAX;
  uint64_t best = x->best.have_point ? x->best.point : TUNE_SPEC_NO_BEST;
  return tune_spec_round(x->spec, rr->r, x->p, &x->facts, x->space, tune_source_chain_strategy(&x->sources), best,
                         x->arch, x->templates, rr->db, b->jobs, b->n_jobs, max, n_thr, &rr->st->compiled, err);
}

/* The next batch's guesses (lookahead.h): the strategy's next points, as many as the next batch
 * can take and --only selects, queued on the pool behind this batch's compiles. */
static int ahead_round(tune_problem_run *x, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  batch *b = &x->b;
  const search_strategy *strat = tune_source_chain_strategy(&x->sources);
  int want = tune_batch_want(rr->o->budget, x->evaluated + b->n, 0), n = 0;
  uint64_t pts[TUNE_AHEAD_MAX];
  if (!strat || want <= 0) return TUNE_OK;
  if (want > TUNE_AHEAD_MAX) want = TUNE_AHEAD_MAX;
  if (search_strategy_peek(strat, pts, want, &n, err) ||
      tune_ahead_begin(x->ahead, x->pool, rr->db, &rr->st->compiled, err))
    return err->code;
  for (int i = 0; i < n; ++i) {
    int vi[SEARCH_MAX_PARAMS];
    char json[2048];
    search_point_decode(x->space, pts[i], vi);
    tune_recipe_config_json(rr->r, vi, json, sizeof json);
    if (tune_run_opts_select_config(rr->o, json) &&
        tune_ahead_guess(x->ahead, rr->r, x->p, &x->facts, vi, x->arch, x->templates, rr->db, b->jobs, b->n_jobs, err))
      return err->code;
  }
  return tune_ahead_queue(x->ahead, x->pool, err);
}

/* The batch's round of guesses, either kind. A strategy's peek and the keys of the points take
 * main-thread time, so the round waits for a moment the GPU does not wait on: the batch's first
 * variant sent (before the main thread blocks collecting it), or a wait for one of the batch's
 * compiles, or the end of the batch when neither came. It runs before the batch's first result is
 * recorded, so it sees the strategy and the best config that it saw when it proposed the batch:
 * the same guesses, and proposals that never depend on them (a peek changes nothing). Its time
 * counts as measuring while a variant is in flight (the GPU works meanwhile), else as waiting
 * for compiles. */
static int guess_round(tune_problem_run *x, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  batch *b = &x->b;
  if (!b->guess_due) return TUNE_OK;
  b->guess_due = 0;
  double t_s = tune_now_s();
  if (x->ahead ? ahead_round(x, err) : spec_round(x, err)) return err->code;
  double dt = tune_now_s() - t_s;
  if (b->in_flight && rr->be->submit) rr->st->t_measure += dt; /* a backend without submit measured already */
  else rr->st->t_compile += dt;
  return TUNE_OK;
}

/* Job k, compiled in the background: waits for it, then stores its binary (the database is the
 * main thread's). Nothing to do for a job from the cache or a round, or one already stored. */
static int job_ready(tune_problem_run *x, int k, tune_err *err) {
  batch *b = &x->b;
  tune_run_stats *st = x->rr->st;
  if (b->aidx[k] < 0 || b->stored[k]) return TUNE_OK;
  if (b->guess_due && !tune_compile_done(x->pool, b->aidx[k]) && guess_round(x, err)) return err->code;
  if (tune_compile_wait(x->pool, b->aidx[k], &st->t_compile, err)) return err->code;
  if (b->origin[k] == JOB_AHEAD) {
    tune_ahead_move(x->ahead, b->ahead_ref[k], &b->jobs[k]);
    st->guessed++;
  }
  if (db_binary_put(x->rr->db, &b->jobs[k].bin, err)) return err->code;
  b->stored[k] = 1;
  st->compiled++;
  return TUNE_OK;
}

/* The misses are queued on the pool in batch order, behind the guesses compiled ahead for this
 * batch: the measure stage takes each variant as soon as its own compile is done, while the later
 * ones compile (job_ready). The next guesses are due. */
static int stage_compile(tune_problem_run *x, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  batch *b = &x->b;
  tune_compile_job *todo[TUNE_BATCH];
  int at[TUNE_BATCH], first = 0;
  b->n_todo = 0;
  for (int i = 0; i < b->n_jobs; ++i) {
    b->stored[i] = 0;
    if (b->origin[i] == JOB_AHEAD) continue; /* its place on the pool is the claimed guess's */
    at[i] = b->origin[i] == JOB_COMPILE ? b->n_todo : -1;
    if (at[i] >= 0) todo[b->n_todo++] = &b->jobs[i];
  }
  if (b->n_todo && tune_compile_add(x->pool, todo, b->n_todo, &first, err)) return err->code;
  for (int i = 0; i < b->n_jobs; ++i)
    if (b->origin[i] != JOB_AHEAD) b->aidx[i] = at[i] >= 0 ? first + at[i] : -1;
  /* before the first result, only a space guessed whole has an adaptive strategy's guesses worth
     compiling; a known next batch is always worth it */
  b->guess_due = x->ahead || (x->spec && (x->best.have_point || tune_spec_whole(x->space, rr->o->jobs)));
  return TUNE_OK;
}

/* Every compile of the batch is stored, also those an interrupt left unmeasured. */
static int stage_store_compiles(tune_problem_run *x, tune_err *err) {
  for (int k = 0; k < x->b.n_jobs; ++k)
    if (job_ready(x, k, err)) return err->code;
  return TUNE_OK;
}

/* ---- measure: passes over the batch ---------------------------------------- */

static void result_init(const tune_problem_run *x, const candidate *c, db_result *res) {
  const tune_recipe_run *rr = x->rr;
  memset(res, 0, sizeof *res);
  res->run_id = rr->run_id;
  res->recipe_id = rr->recipe_id;
  res->device_id = rr->device_id;
  res->config_id = c->config_id;
  res->problem_id = x->problem_id;
  res->seed = rr->seed;
  res->err_rel_l2 = res->err_max_abs = -1;
  res->sm_mhz = res->mem_mhz = -1;
  res->registers = res->shared_bytes = res->local_bytes = res->spill_stores = res->spill_loads = -1;
}

/* The backend verifies and times candidate i (bin NULL: a backend that needs no binaries) into
 * b->res[i]: sent to a free GPU, or, for a backend of one variant at a time, measured now. */
static int backend_submit(tune_problem_run *x, int i, const tune_compile_job *j, int samples, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  const candidate *c = &x->b.c[i];
  tune_measure_req req = {.recipe = rr->r, .problem = x->p, .setup = &x->setup, .variant = &c->v,
                          .bin = j ? &j->bin : NULL, .lowered = j ? (const char(*)[512])j->lowered : NULL,
                          .config_hash = c->hash, .samples = samples, .sustained = rr->o->sustained};
  double t_m = tune_now_s();
  int rc;
  if (rr->be->submit) {
    rc = rr->be->submit(rr->be, &req, &x->b.res[i], i, err);
  } else {
    x->b.sync_tag = i;
    rc = rr->be->measure(rr->be, &req, &x->b.res[i], err);
  }
  rr->st->t_measure += tune_now_s() - t_m;
  return rc;
}

/* The next candidate the backend finished (*i), its figures in b->res[*i]. */
static int backend_collect(tune_problem_run *x, int *i, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  if (!rr->be->collect) {
    *i = x->b.sync_tag;
    return TUNE_OK;
  }
  double t_m = tune_now_s();
  int rc = rr->be->collect(rr->be, i, err);
  rr->st->t_measure += tune_now_s() - t_m;
  return rc;
}

/* A code proposal's variant compiled once more to PTX and checked statically (code_proposal.h):
 * 1 with the reason in why when refused; 0 when not, or with err set when the compile pool failed. */
static int code_refused(const tune_compile_job *j, char *why, size_t why_n, tune_err *err) {
  tune_compile_job pj = *j;
  char arch[32];
  memset(&pj.bin, 0, sizeof pj.bin);
  tune_compute_arch(j->arch, arch, sizeof arch);
  pj.arch = arch;
  if (tune_compile_ptx_batch(&pj, 1, 1, err)) return 1;
  int refused = pj.bin.ok && tune_code_ptx_refused(pj.bin.ptx, pj.bin.ptx_size, why, why_n);
  db_binary_release(&pj.bin);
  return refused;
}

/* Pruned after compiling (prune.h): cannot launch, or under the recipe's min_occupancy. */
static int pruned(const tune_problem_run *x, const candidate *c, const db_binary *b, db_result *res) {
  const tune_launch *l = &c->v.launch[0];
  if (!x->prune_on || c->v.n_launches != 1 || b->registers < 0) return 0;
  return tune_prune_check(&x->lim, (int)(l->block[0] * l->block[1] * l->block[2]), b->registers,
                          (b->shared_bytes > 0 ? b->shared_bytes : 0) + (int)l->shared, x->rr->sc->min_occupancy,
                          res->error_text, sizeof res->error_text);
}

/* The tensor-core rate of the problem's operands against bf16's: 2 where an input is 8-bit (fp8
 * wgmma runs at twice the bf16 rate), else 1. */
static double mma_rate(const tune_problem_setup *s) {
  for (int i = 0; i < s->n_args; ++i)
    if (s->def[i].is_tensor && !s->def[i].output && !s->def[i].scratch && s->def[i].dtype == TUNE_E4M3) return 2;
  return 1;
}

/* A compiled variant: its binary's resources, then compile error, pruned, compile-only (final
 * now), or sent to the backend (*sent). */
static int start_binary(tune_problem_run *x, int i, int samples, int *sent, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  const candidate *c = &x->b.c[i];
  db_result *res = &x->b.res[i];
  if (job_ready(x, c->job, err)) return err->code;
  const tune_compile_job *j = &x->b.jobs[c->job];
  const db_binary *b = &j->bin;
  res->registers = b->registers;
  res->shared_bytes = b->shared_bytes;
  res->local_bytes = b->local_bytes;
  res->spill_stores = b->spill_stores;
  res->spill_loads = b->spill_loads;
  res->compile_ms = x->b.origin[c->job] == JOB_CACHED ? 0 : b->compile_ms;
  res->dyn_shared_bytes = (int)c->v.launch[0].shared;
  snprintf(res->binary_key, sizeof res->binary_key, "%s", b->key);
  /* counted once per variant: a halving's full timing comes after its quick one (has_quick) */
  if (b->ok && !c->has_quick && tune_compile_wgmma_serialized(b->log) && rr->st->wgmma_serialized++ == 0)
    snprintf(rr->st->wgmma_example, sizeof rr->st->wgmma_example, "%s", c->label);
  if (!b->ok) {
    res->status = DB_COMPILE_ERROR;
    snprintf(res->error_text, sizeof res->error_text, "%s", b->log ? b->log : "compile error");
  } else if (c->prop.code >= 0 && code_refused(j, res->error_text, sizeof res->error_text, err)) {
    if (err->code) return err->code;
    res->status = DB_WRONG; /* never sent to the GPU, never a best, and its proposal is rejected */
  } else if (pruned(x, c, b, res)) {
    res->status = DB_SKIPPED; /* never sent to the GPU */
    rr->st->pruned++;
  } else if (!rr->be) {
    res->status = DB_SKIPPED;
    snprintf(res->error_text, sizeof res->error_text, DB_REASON_COMPILE_ONLY);
  } else {
    if (backend_submit(x, i, j, samples, err)) return err->code;
    *sent = 1;
  }
  return TUNE_OK;
}

/* Candidate i in this pass into b->res[i]: final now (*sent = 0; *quick_only when it keeps a
 * quick timing as its result), or sent to the backend (*sent = 1) to be collected. */
static int start_candidate(tune_problem_run *x, int i, tune_pass pass, int *sent, int *quick_only, tune_err *err) {
  const candidate *c = &x->b.c[i];
  db_result *res = &x->b.res[i];
  *sent = *quick_only = 0;
  result_init(x, c, res);
  if (tune_pass_keeps_quick(pass, c->has_quick, c->full)) {
    *res = x->b.quick[i]; /* verified, or failed verification: final either way */
    if (res->status == DB_OK) {
      *quick_only = 1;
      tune_halving_note(res->error_text, sizeof res->error_text, res->samples, x->halving, res->error_text);
      x->rr->st->quick_only++;
    }
    return TUNE_OK;
  }
  if (c->v.skip) {
    res->status = DB_SKIPPED;
    snprintf(res->error_text, sizeof res->error_text, "%s", c->v.skip_reason);
    return TUNE_OK;
  }
  if (x->rr->be && !x->rr->be->needs_binaries) {
    *sent = 1;
    return backend_submit(x, i, NULL, tune_pass_samples(pass), err);
  }
  return start_binary(x, i, tune_pass_samples(pass), sent, err);
}

/* The backend's verdict on candidate i, with a time beyond the device's limits suspicious
 * (peaks.h). */
static void judge_measured(tune_problem_run *x, int i) {
  db_result *res = &x->b.res[i];
  if (res->status == DB_OK && x->rr->be->needs_binaries &&
      tune_peaks_judge(x->rr->peaks, x->setup.bytes, x->setup.flops, mma_rate(&x->setup), res->median_ns,
                       res->error_text, sizeof res->error_text) != DB_OK)
    res->status = DB_SUSPICIOUS;
}

/* ---- record: one transaction per result ----------------------------------- */

/* res gets its id from the database before the sources observe it. */
static int record(tune_problem_run *x, const candidate *c, db_result *res, int quick_only, tune_err *err) {
  const tune_recipe_run *rr = x->rr;
  if (db_result_put(rr->db, res, err)) return err->code;
  ++x->evaluated;
  rr->st->total++;
  rr->st->n_status[res->status]++;
  rr->st->compile_only += res->status == DB_SKIPPED && !strcmp(res->error_text, DB_REASON_COMPILE_ONLY);
  tune_source_chain_observe(&x->sources, &c->prop, c->json, res);
  tune_best_offer(&x->best, res, quick_only, &c->prop, c->label);
  tune_progress_result(&x->pg, res, c->label, c->v.launch[0].shared, quick_only, x->evaluated, x->resumed,
                       x->best.ns, rr->st);
  return TUNE_OK;
}

/* Between the passes: which quick-timed variants get the full timing. */
static void select_full(tune_problem_run *x) {
  batch *b = &x->b;
  int has_quick[TUNE_BATCH], full[TUNE_BATCH];
  for (int i = 0; i < b->n; ++i) has_quick[i] = b->c[i].has_quick;
  tune_pass_select_full(b->n, has_quick, b->quick, x->best.ns, x->halving, full);
  for (int i = 0; i < b->n; ++i) b->c[i].full = full[i];
}

/* Candidate i's result of this pass, final or measured: kept as its quick timing, or recorded. */
static int pass_done(tune_problem_run *x, int i, tune_pass pass, int measured, int quick_only, tune_err *err) {
  batch *b = &x->b;
  candidate *c = &b->c[i];
  db_result *res = &b->res[i];
  if (pass == TUNE_PASS_QUICK) {
    if (measured) { b->quick[i] = *res; c->has_quick = 1; return TUNE_OK; }
    c->done = 1; /* never reaches the backend (skipped, compile error, pruned): final now */
  } else if (c->has_quick && measured) {
    res->measure_ms += b->quick[i].measure_ms; /* what this result cost: both passes */
    x->rr->st->quick_full++;
  }
  return record(x, c, res, quick_only, err);
}

/* One pass over the batch: candidates go to the backend in batch order, as many at once as it
 * has GPUs, and are recorded as they finish. An interrupt sends nothing more and waits for
 * those in flight. The batch's guesses start before its first result counts (guess_round). */
static int measure_pass(tune_problem_run *x, tune_pass pass, tune_err *err) {
  batch *b = &x->b;
  int next = 0;
  b->in_flight = 0;
  for (;;) {
    while (!tune_interrupted && next < b->n && b->in_flight < tune_backend_cards(x->rr->be)) {
      int i = next++, sent = 0, quick_only = 0;
      if (b->c[i].done) continue;
      if (start_candidate(x, i, pass, &sent, &quick_only, err)) return err->code;
      if (sent) ++b->in_flight;
      else if (guess_round(x, err) || pass_done(x, i, pass, 0, quick_only, err)) return err->code;
    }
    if (!b->in_flight) return TUNE_OK;
    int i;
    if (guess_round(x, err) || backend_collect(x, &i, err)) return err->code;
    --b->in_flight;
    judge_measured(x, i);
    if (pass_done(x, i, pass, 1, 0, err)) return err->code;
  }
}

/* With halving, the quick pass times each variant quickly (after the same verification) and
 * records those that never reach the backend; the full pass times the contenders fully and
 * records the rest. An interrupt between the passes records nothing of the quick ones: a
 * resumed run measures them again. */
static int stage_measure(tune_problem_run *x, tune_err *err) {
  for (int pass = tune_first_pass(x->halving); pass <= TUNE_PASS_FULL && !tune_interrupted; ++pass) {
    if (pass == TUNE_PASS_FULL && x->halving > 0) select_full(x);
    if (measure_pass(x, (tune_pass)pass, err)) return err->code;
  }
  return TUNE_OK;
}

/* ---- the pipeline ---------------------------------------------------------- */

/* One batch through the stages; *more = 0 when the sources had nothing left. */
static int run_batch(tune_problem_run *x, int want, int *more, tune_err *err) {
  tune_proposal props[TUNE_BATCH];
  int n = 0;
  if (tune_source_chain_next(&x->sources, props, want, &n, err)) return err->code;
  *more = n > 0;
  if (!n) return TUNE_OK;
  if (stage_resolve(x, props, n, err) || stage_compile(x, err) || stage_measure(x, err)) return err->code;
  if (guess_round(x, err)) return err->code; /* a batch that sent nothing and recorded nothing */
  return stage_store_compiles(x, err);
}

int tune_run_problem(const tune_recipe_run *rr, tune_problem *p, int pi, const search_space *space,
                     const tune_rejections *rej, int sweep, int project, tune_err *err) {
  tune_problem_run *x = calloc(1, sizeof *x);
  if (!x) return tune_fail(err, TUNE_ENOMEM, "session: out of memory");
  x->rr = rr;
  x->p = p;
  x->pi = pi;
  x->sweep = sweep;
  x->project = project;
  x->space = space;
  int rc = problem_open(x, rej, err), more = 1;
  while (!rc && more && !tune_interrupted) {
    int want = tune_batch_want(rr->o->budget, x->evaluated, sweep);
    if (want <= 0) break;
    if (!sweep && rr->deadline > 0 && tune_now_s() > rr->deadline) { printf("time budget reached\n"); break; }
    rc = run_batch(x, want, &more, err);
  }
  if (!rc) rc = problem_drain(x, err);
  if (!rc) tune_progress_problem_end(&x->pg, p->name, sweep, x->best.ns, x->best.label);
  /* a run that only resumed leaves the last selection standing: nothing new to choose among */
  if (!rc && !sweep && !tune_interrupted && rr->be && rr->be->needs_binaries && x->evaluated > 0) {
    tune_reselect_req q = {.db = rr->db, .be = rr->be, .r = rr->r, .p = p, .setup = &x->setup, .facts = &x->facts,
                           .run_id = rr->run_id, .recipe_id = rr->recipe_id, .problem_id = x->problem_id,
                           .device_id = rr->device_id, .sustained = rr->o->sustained, .t_measure = &rr->st->t_select};
    rc = tune_reselect(&q, err);
  }
  /* the kernel time of this problem's measures and selection rounds, for the recipe's summary */
  if (rr->be) tune_kernel_time_take(&rr->be->kernels, &rr->st->kernels);
  problem_close(x);
  free(x);
  return rc;
}
