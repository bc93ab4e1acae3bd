/* session.c: the tuning loop of `tune run`. */
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
#include "problem_space.h"
#include "proposer.h"
#include "prune.h"
#include "recipe.h"
#include "search_config.h"
#include "speculate.h"
#include "variant_job.h"
#include "search.h"
#include "version.h"
#include "warm_start.h"

volatile int tune_interrupted;

#define BATCH 32

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
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
    char pat[300];
    snprintf(pat, sizeof pat, "\"%s\":%s", kv, eq + 1);
    size_t n = strlen(pat);
    const char *hit = strstr(json, pat);
    if (!hit || (hit[n] != ',' && hit[n] != '}')) return 0;
  }
  return 1;
}

static int config_selected(const tune_run_opts *o, const char *json) {
  if (o->n_only == 0) return 1;
  for (int i = 0; i < o->n_only; ++i)
    if (json_matches(json, o->only[i])) return 1;
  return 0;
}

/* Does problem p pass the --problem filters? NAME, or K=V[,K=V] on its dims. */
static int problem_selected(const tune_run_opts *o, const tune_problem *p) {
  if (o->n_problems == 0) return 1;
  for (int i = 0; i < o->n_problems; ++i) {
    const char *f = o->problems[i];
    if (!strchr(f, '=')) { if (!strcmp(f, p->name)) return 1; continue; }
    if (json_matches(p->dims_json, f)) return 1;
  }
  return 0;
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

typedef struct stats {
  int n_status[DB_STATUS_COUNT];
  int compiled, cached, resumed, total;
  int guessed;                /* compiles started ahead of the strategy and then proposed (speculate.h) */
  int pruned;                 /* skipped after compiling: cannot launch or under min_occupancy (prune.h) */
  int quick_only, quick_full; /* halving: verified variants that kept their quick timing / were then timed fully */
  double t_measure, t_compile; /* [s] wall time in the backend's measure / waiting for the compile pool */
  double best_ns;
  char best_params[1024];
} stats;

static void print_metrics(double ns, const tune_problem_setup *s, char *buf, size_t n) {
  size_t len = 0;
  if (ns >= 1e6) len += (size_t)snprintf(buf, n, "%9.3f ms", ns / 1e6);
  else len += (size_t)snprintf(buf, n, "%9.2f us", ns / 1e3);
  if (s->bytes > 0) len += (size_t)snprintf(buf + len, n - len, " %8.1f GB/s", s->bytes / ns);
  if (s->flops > 0) snprintf(buf + len, n - len, " %7.1f TFLOP/s", s->flops / ns / 1e3);
}

/* Where the wall time went: the share spent in the backend's measure (the
 * GPU's work: verify and time) against waiting for compiles (the pool runs
 * while variants compiled before are measured) and everything else. */
static void print_busy(const stats *st, double wall, const tune_backend *be, const char *strategy) {
  if (st->pruned) printf("pruned after compiling (never sent to the GPU): %d\n", st->pruned);
  if (!be || wall <= 0 || !strncmp(be->name, "replay:", 7)) return; /* replay: no GPU to keep busy */
  printf("GPU busy: %.1f %% of %.1f s wall (measure %.1f s, waiting for compiles %.1f s, other %.1f s; strategy %s, backend %s)\n",
         100.0 * st->t_measure / wall, wall, st->t_measure, st->t_compile, wall - st->t_measure - st->t_compile,
         strategy, be->name);
}

/* Done/total, ETA, best so far, failures: on a terminal one line redrawn in place (no
 * newline, erased before the next output); elsewhere (plain) a "progress:" line of its own. */
static void progress_bar(long long done, long long measured, size_t total, double elapsed, double best_ns,
                         const tune_problem_setup *s, const stats *st, int plain) {
  int width = 24, fill = total ? (int)(width * (double)done / (double)total) : 0;
  char bar[32];
  for (int i = 0; i < width; ++i) bar[i] = i < fill ? '#' : '.';
  bar[width] = 0;
  /* the rate of this run's measurements (resumed results cost nothing) */
  double eta = measured > 0 && (size_t)done < total ? elapsed / (double)measured * (double)(total - (size_t)done) : 0;
  char best[96] = "none yet";
  if (isfinite(best_ns)) print_metrics(best_ns, s, best, sizeof best);
  if (plain) printf("progress: %lld/%zu  ETA %dm%02ds  best %s", done, total, (int)eta / 60, (int)eta % 60, best);
  else printf("[%s] %lld/%zu  ETA %dm%02ds  best %s", bar, done, total, (int)eta / 60, (int)eta % 60, best);
  int fails = 0;
  for (int k = 0; k < DB_STATUS_COUNT; ++k)
    if (k != DB_OK && k != DB_SKIPPED && st->n_status[k]) {
      printf("%s%d %s", fails++ ? ", " : "  | ", st->n_status[k], db_status_name((db_status)k));
    }
  if (plain) printf("\n");
}

typedef struct pending {
  uint64_t point;
  int vi[SEARCH_MAX_PARAMS];
  char hash[17];
  char json[2048];
  int64_t config_id;
  tune_variant v;
  int done;               /* result already known (resumed/skipped) */
  int from_strat;         /* proposed by the search strategy (not the LLM proposer) */
  char origin[32];        /* configs.origin: the strategy name, "llm:<proposal id>" or "llm-code:<id>" */
  int code;               /* index into the code set: a code proposal's variant; -1 none */
  char label[2100];       /* what the progress lines print: the config, and the code's origin */
  int job;                /* index into jobs, -1 none */
  int has_quick, full;    /* halving: quick result in quick[i]; it gets the full timing */
} pending;

/* The successive-halving margin of a run (halving.h), 0 = off: --no-halving, --halving=F,
 * then the recipe's `halving`; a plain --halving takes the recipe's margin, else the default. */
static double halving_margin(const tune_run_opts *o, const tune_search_config *sc) {
  if (o->halving < 0) return 0;
  if (o->halving > 0) return o->halving;
  if (o->halving_on && !(sc->halving > 0)) return TUNE_HALVING_DEFAULT_MARGIN;
  return sc->halving;
}

/* Job k of the batch, compiled in the background (aidx[k] its place in the pool, -1: from the
 * cache or no compile): waits for it, then stores its binary (the database is the main thread's). */
static int job_ready(tune_compile_async *a, tune_compile_job *jobs, int k, const int *aidx, int *stored, db_conn *db,
                     stats *st, tune_err *err) {
  if (aidx[k] < 0 || stored[k]) return TUNE_OK;
  if (tune_compile_wait(a, aidx[k], &st->t_compile, err)) return err->code;
  if (db_binary_put(db, &jobs[k].bin, err)) return err->code;
  stored[k] = 1;
  st->compiled++;
  return TUNE_OK;
}

/* One problem of a recipe. codes: the recipe's code proposals, each evaluated
 * once per problem (pi: this problem's index in the recipe); sweep: evaluate
 * only those (the problem was tuned before they were proposed). */
static int run_problem(const tune_run_opts *o, tune_recipe *r, tune_problem *p, const search_space *space,
                       const tune_rejections *rej, db_conn *db, tune_backend *be, const db_device *dev, int64_t run_id,
                       int64_t recipe_id, int64_t device_id, uint64_t seed, double t_deadline,
                       const tune_peaks *peaks, stats *st, tune_code_set *codes, int pi, int sweep, tune_spec *rspec,
                       int project, tune_err *err) {
  tune_device_facts facts;
  tune_device_facts_from(dev, &facts);
  tune_problem_setup setup;
  int64_t problem_id;
  search_strategy *strat = NULL;
  pending *pend = NULL;
  db_result *quick = NULL; /* halving: each batch member's quick result */
  tune_compile_job *jobs = NULL;
  tune_compile_async *acomp = NULL; /* the batch's compiles, running while its first variants are measured */
  uint64_t best_point = 0;          /* the strategy's best point so far (spec's guesses surround it) */
  int have_best_point = 0;
  char templates[PATH_MAX + 16];
  snprintf(templates, sizeof templates, "%s/templates", r->root);
  if (db_problem_put(db, r->name, p->name, p->hash, p->dims_json, &problem_id, err)) return err->code;
  if (tune_recipe_eval_problem(r, p, &facts, &setup, err)) return err->code;
  printf("\n== %s / %s %s: %zu configs", r->name, p->name, p->dims_json, space->n_points);
  if (rej->n) printf(" (%zu more rejected by the recipe)", rej->n);
  printf(", backend %s\n", be ? be->name : "compile-only");
  for (int i = 0; !o->quiet && i < rej->n_reasons; ++i) printf("  rejected %zu: %s\n", rej->count[i], rej->reason[i]);
  if (!o->quiet && rej->n_other) printf("  rejected %zu for other reasons\n", rej->n_other);
  if (sweep) printf("verifying %d code proposal(s) made for other problems\n", tune_code_set_pending(codes, pi));
  if (!be || be->needs_binaries) {
    /* the reference, compiled like any variant (also by --compile-only, so a
       reference that NVRTC rejects is found without a GPU) */
    tune_compile_job ref;
    memset(&ref, 0, sizeof ref);
    ref.source_path = r->ref_source;
    ref.include_root = templates;
    ref.arch = dev->arch;
    ref.n_defines = setup.n_ref_defines;
    ref.defines = (const char(*)[160])setup.ref_defines;
    ref.n_names = 1;
    ref.names[0] = setup.ref_launch.kernel;
    ref.is_expr[0] = setup.ref_launch.is_expr;
    if (tune_compile_batch(&ref, 1, 1, err)) return err->code;
    if (!ref.bin.ok) {
      tune_fail(err, TUNE_ERECIPE, "%s: the reference %s does not compile:\n%s", r->file, r->ref_source, ref.bin.log ? ref.bin.log : "");
      db_binary_release(&ref.bin);
      return err->code;
    }
    int rc = be ? be->set_problem(be, r, p, &setup, &ref.bin, ref.lowered[0], seed, err) : TUNE_OK;
    db_binary_release(&ref.bin);
    if (rc) return rc;
  }
  /* --strategy llm: the proposer drives, the random strategy fills batches it leaves empty */
  tune_search_config sc; /* strategy and pruning: --strategy, the recipe, the defaults */
  if (tune_search_config_get(r, o->strategy, o->min_occupancy_given ? o->min_occupancy : -1, -1, &sc, err)) return err->code;
  tune_sm_limits lim;
  int prune_on = tune_sm_limits_for(o->arch ? o->arch : dev->arch, dev->smem_per_block_optin, &lim) == 0;
  int llm_run = !strcmp(sc.strategy, "llm"), use_llm = llm_run && !sweep;
  tune_llm *llm = NULL;
  tune_proposer_opts popts = {.command = o->proposer, .n_env = o->n_proposer_env, .timeout_ms = o->proposer_timeout_ms};
  for (int i = 0; i < o->n_proposer_env && i < TUNE_PROPOSER_MAX_ENV; ++i) popts.env[i] = o->proposer_env[i];
  if (search_strategy_new(llm_run ? "random" : sc.strategy, space, seed, &strat, err)) return err->code;
  if (use_llm) {
    tune_llm_ctx lc = {.opts = &popts, .recipe = r, .problem = p, .space = space, .device = dev, .peaks = peaks,
                       .bytes = setup.bytes, .flops = setup.flops, .db = db, .run_id = run_id,
                       .problem_id = problem_id, .quiet = o->quiet, .codes = codes};
    if (tune_llm_new(&lc, &llm, err)) goto fail;
  }
  /* warm start (warm_start.h): the configs best on the recipe's other problems, tried first */
  uint64_t warm[TUNE_WARM_MAX];
  int n_warm = 0, warm_next = 0;
  if (!sweep && !llm_run && be && !o->no_warm_start) {
    uint64_t *bests = NULL;
    double *dist = NULL;
    int n_bests = 0;
    if (tune_warm_bests_db(db, r, dev->name, dev->arch, p, space, &bests, &dist, &n_bests, err)) goto fail;
    n_warm = tune_warm_order(bests, dist, n_bests, space, tune_warm_max(o->budget), project, warm);
    free(bests);
    free(dist);
    if (n_warm && !o->quiet) printf("warm start: %d config(s) best on the nearest other problems (of %s, or of a recipe with its parameters) first\n", n_warm, r->name);
  }
  double halv = be ? halving_margin(o, &sc) : 0; /* compile-only: nothing to time */
  /* bayes proposes one point per batch after its design: guess its next ones while this one is measured */
  tune_spec *spec = (!be || be->needs_binaries) && !sweep && !llm_run && !strcmp(sc.strategy, "bayes") ? rspec : NULL;
  pend = calloc(BATCH, sizeof *pend);
  jobs = calloc(BATCH, sizeof *jobs);
  quick = halv > 0 ? calloc(BATCH, sizeof *quick) : NULL;
  if (!pend || !jobs || (halv > 0 && !quick)) { tune_fail(err, TUNE_ENOMEM, "session: out of memory"); goto fail; }
  long long evaluated = 0, resumed_here = 0; /* this problem's new and resumed results */
  int tty = isatty(1);
  double t_problem = now_s();
  double best = INFINITY;
  int n_width = snprintf(NULL, 0, "%zu", space->n_points);
  while (!tune_interrupted) {
    int want = BATCH;
    /* a sweep is not bounded by the budgets: a code variant is verified on every problem */
    if (!sweep && o->budget > 0 && o->budget - evaluated < want) want = (int)(o->budget - evaluated);
    if (want <= 0) break;
    if (!sweep && t_deadline > 0 && now_s() > t_deadline) { printf("time budget reached\n"); break; }
    uint64_t pts[BATCH];
    char origins[BATCH][32];
    int n = 0, n_llm = 0, n_code = 0, code_idx[BATCH];
    if (sweep) {
      /* only the code set's variants */
    } else if (llm) {
      int n_new_code = 0;
      if (tune_llm_propose(llm, pts, origins, want, &n_llm, &n_new_code, err)) goto fail;
      n = n_llm;
      if (n == 0 && n_new_code == 0 && !tune_code_set_pending(codes, pi)) {
        /* nothing usable from the proposer: this batch comes from random,
           without the points already measured or proposed */
        uint64_t tmp[BATCH];
        int m = 0;
        do {
          if (search_strategy_next_batch(strat, tmp, want, &m, err)) goto fail;
          for (int k = 0; k < m; ++k)
            if (!tune_llm_seen(llm, tmp[k])) { tune_llm_mark_seen(llm, tmp[k]); pts[n++] = tmp[k]; }
        } while (n == 0 && m > 0);
        if (n) printf("llm: no valid proposal: %d config(s) of this batch come from the random strategy\n", n);
      }
    } else if (warm_next < n_warm) { /* a batch of its own: observed before the strategy proposes */
      n = n_warm - warm_next < want ? n_warm - warm_next : want;
      memcpy(pts, warm + warm_next, (size_t)n * sizeof *pts);
      warm_next += n;
    } else if (search_strategy_next_batch(strat, pts, want, &n, err)) goto fail; /* no warm config again */
    /* code proposals' variants not yet evaluated on this problem (this one's, earlier problems') */
    n_code = tune_code_set_take(codes, pi, code_idx, want - n);
    if (n + n_code == 0) break;
    /* 1. evaluate configs, resume, prepare compile jobs */
    int n_jobs = 0;
    enum { JOB_COMPILE, JOB_CACHED, JOB_GUESSED } jsrc[BATCH]; /* where each job's binary comes from */
    for (int i = 0; i < n + n_code; ++i) {
      pending *q = &pend[i];
      memset(q, 0, sizeof *q);
      q->job = -1;
      q->code = i < n ? -1 : code_idx[i - n];
      const tune_code_variant *cv = q->code >= 0 ? &codes->v[q->code] : NULL;
      if (cv) {
        memcpy(q->vi, cv->vi, sizeof q->vi);
        snprintf(q->hash, sizeof q->hash, "%s", cv->hash);
        snprintf(q->origin, sizeof q->origin, "%s", cv->origin);
        tune_recipe_config_json(r, q->vi, q->json, sizeof q->json);
      } else {
        q->point = pts[i];
        q->from_strat = i >= n_llm;
        snprintf(q->origin, sizeof q->origin, "%s", i < n_llm ? origins[i] : use_llm ? "random" : sc.strategy);
        search_point_decode(space, pts[i], q->vi);
        tune_recipe_config_json(r, q->vi, q->json, sizeof q->json);
        tune_recipe_config_hash(r, q->vi, q->hash);
      }
      snprintf(q->label, sizeof q->label, "%s%s%s", q->json, cv ? " " : "", cv ? cv->origin : "");
      if (!cv && !config_selected(o, q->json)) { q->done = 1; continue; }
      if (db_config_put(db, r->name, q->hash, q->json, q->origin, &q->config_id, err)) goto fail;
      if (tune_recipe_eval_variant(r, q->vi, p, &facts, &q->v, err)) goto fail;
      db_result prev;
      tune_err e;
      tune_err_clear(&e);
      if (be && !db_result_find(db, recipe_id, device_id, q->config_id, problem_id, &prev, &e)) {
        q->done = 1;
        st->resumed++;
        resumed_here++;
        if (q->from_strat) search_strategy_observe(strat, q->point, prev.status == DB_OK ? prev.median_ns : -1);
        if (llm) tune_llm_observe(llm, q->json, cv ? cv->proposal_id : 0, &prev);
        if (cv) tune_code_set_note(codes, q->code, p->name, &prev);
        if (prev.status == DB_OK && prev.median_ns < best && !tune_halving_is_quick(prev.error_text)) {
          best = prev.median_ns;
          snprintf(st->best_params, sizeof st->best_params, "%s", q->label);
          if (!cv) { best_point = q->point; have_best_point = 1; }
        }
        st->n_status[prev.status]++;
        continue;
      }
      if (q->v.skip || (be && !be->needs_binaries)) continue;
      tune_compile_job *j = &jobs[n_jobs];
      db_binary_release(&j->bin);
      tune_variant_job(j, r->template_path, templates, o->arch ? o->arch : dev->arch, &q->v);
      if (cv) { /* the template with the proposed region: its own source text and compile key */
        j->source_text = cv->source;
        j->text_of_template = 1;
      }
      if (tune_compile_key(j, err)) goto fail;
      db_binary cached;
      tune_err e2;
      tune_err_clear(&e2);
      int got = db_binary_get(db, j->bin.key, &cached, &e2);
      if (got == TUNE_OK) {
        j->bin = cached;
        /* lowered names are stored space-separated */
        char names[512];
        snprintf(names, sizeof names, "%s", cached.lowered_name);
        int k = 0;
        for (char *save = NULL, *t = strtok_r(names, " ", &save); t && k < TUNE_MAX_LAUNCHES; t = strtok_r(NULL, " ", &save))
          snprintf(j->lowered[k++], sizeof j->lowered[0], "%s", t);
        jsrc[n_jobs] = JOB_CACHED;
        st->cached++;
      } else if (got != TUNE_ENOTFOUND) {
        tune_fail(err, got, "%s", e2.msg);
        goto fail;
      } else {
        jsrc[n_jobs] = JOB_COMPILE;
        int taken = 0; /* compiled ahead as a guess: stored now, like a compile of this batch */
        if (spec && tune_spec_take(spec, j, &taken, &st->t_compile, err)) goto fail;
        if (taken) {
          if (db_binary_put(db, &j->bin, err)) goto fail;
          st->compiled++;
          st->guessed++;
          jsrc[n_jobs] = JOB_GUESSED;
        }
      }
      q->job = n_jobs++;
    }
    /* 2. compile the misses in the background, in batch order: step 3 measures each variant as
       soon as its own compile is done, while the later ones compile (job_ready) */
    tune_compile_job *todo[BATCH];
    int n_todo = 0, aidx[BATCH], stored[BATCH];
    for (int i = 0; i < n_jobs; ++i) {
      aidx[i] = jsrc[i] == JOB_COMPILE ? n_todo : -1; /* -1: the cache or a guess had it */
      stored[i] = 0;
      if (aidx[i] >= 0) todo[n_todo++] = &jobs[i];
    }
    if (n_todo && tune_compile_start(todo, n_todo, o->jobs, &acomp, err)) goto fail;
    if (spec && have_best_point) {
      double t_s = now_s(); /* stores the last round's guesses, evaluates the next: time the GPU waits */
      int n_thr = o->jobs - n_todo > 1 ? o->jobs - n_todo : 1;
      if (tune_spec_round(spec, r, p, &facts, space, best_point, o->arch ? o->arch : dev->arch, templates, db, jobs,
                          n_jobs, o->jobs < TUNE_SPEC_MAX ? o->jobs : TUNE_SPEC_MAX, n_thr, &st->compiled, err))
        goto fail;
      st->t_compile += now_s() - t_s;
    }
    /* 3. measure and store, one transaction per result. With halving (halving.h), pass 0 times
       each variant quickly (after the same verification) and stores those that never reach the
       backend; between the passes the decision; pass 1 times the contenders fully and stores the
       rest. An interrupt between the passes stores nothing of the quick ones: a resumed run
       measures them again. */
    for (int pass = halv > 0 ? 0 : 1; pass < 2 && !tune_interrupted; ++pass) {
    if (pass == 1 && halv > 0) {
      double qns[BATCH];
      int full[BATCH];
      for (int i = 0; i < n + n_code; ++i)
        qns[i] = pend[i].has_quick && quick[i].status == DB_OK ? quick[i].median_ns : -1;
      tune_halving_batch(qns, n + n_code, best, halv, full);
      for (int i = 0; i < n + n_code; ++i) /* a too-fast quick time: the full timing judges it */
        pend[i].full = full[i] || (pend[i].has_quick && quick[i].status == DB_SUSPICIOUS);
    }
    for (int i = 0; i < n + n_code && !tune_interrupted; ++i) {
      pending *q = &pend[i];
      if (q->done) continue;
      db_result res;
      int measured = 0, quick_only = 0;
      int samples = pass == 0 ? TUNE_HALVING_QUICK_SAMPLES : 0;
      memset(&res, 0, sizeof res);
      res.run_id = run_id;
      res.recipe_id = recipe_id;
      res.device_id = device_id;
      res.config_id = q->config_id;
      res.problem_id = problem_id;
      res.seed = seed;
      res.err_rel_l2 = res.err_max_abs = -1;
      res.sm_mhz = res.mem_mhz = -1;
      res.registers = res.shared_bytes = res.local_bytes = res.spill_stores = res.spill_loads = -1;
      if (pass == 1 && q->has_quick && !q->full) {
        res = quick[i]; /* verified, or failed verification: final either way */
        if (res.status == DB_OK) {
          quick_only = 1;
          tune_halving_note(res.error_text, sizeof res.error_text, res.samples, halv, res.error_text);
          st->quick_only++;
        }
      } else if (q->v.skip) {
        res.status = DB_SKIPPED;
        snprintf(res.error_text, sizeof res.error_text, "%s", q->v.skip_reason);
      } else if (be && !be->needs_binaries) {
        tune_measure_req req = {.recipe = r, .problem = p, .setup = &setup, .variant = &q->v, .config_hash = q->hash,
                                .samples = samples};
        double t_m = now_s();
        int mrc = be->measure(be, &req, &res, err);
        st->t_measure += now_s() - t_m;
        if (mrc) goto fail;
        measured = 1;
      } else {
        if (job_ready(acomp, jobs, q->job, aidx, stored, db, st, err)) goto fail;
        tune_compile_job *j = &jobs[q->job];
        db_binary *b = &j->bin;
        res.registers = b->registers;
        res.shared_bytes = b->shared_bytes;
        res.local_bytes = b->local_bytes;
        res.spill_stores = b->spill_stores;
        res.spill_loads = b->spill_loads;
        res.compile_ms = jsrc[q->job] == JOB_CACHED ? 0 : b->compile_ms;
        res.dyn_shared_bytes = (int)q->v.launch[0].shared;
        snprintf(res.binary_key, sizeof res.binary_key, "%s", b->key);
        if (!b->ok) {
          res.status = DB_COMPILE_ERROR;
          snprintf(res.error_text, sizeof res.error_text, "%s", b->log ? b->log : "compile error");
        } else if (prune_on && q->v.n_launches == 1 && b->registers >= 0 &&
                   tune_prune_check(&lim, (int)(q->v.launch[0].block[0] * q->v.launch[0].block[1] * q->v.launch[0].block[2]),
                                    b->registers, (b->shared_bytes > 0 ? b->shared_bytes : 0) + (int)q->v.launch[0].shared,
                                    sc.min_occupancy, res.error_text, sizeof res.error_text)) {
          res.status = DB_SKIPPED; /* never sent to the GPU (prune.h) */
          st->pruned++;
        } else if (!be) {
          res.status = DB_SKIPPED;
          snprintf(res.error_text, sizeof res.error_text, DB_REASON_COMPILE_ONLY);
        } else {
          tune_measure_req req = {.recipe = r, .problem = p, .setup = &setup, .variant = &q->v, .bin = b,
                                  .lowered = (const char(*)[512])j->lowered, .config_hash = q->hash, .samples = samples};
          double t_m = now_s();
          int mrc = be->measure(be, &req, &res, err);
          st->t_measure += now_s() - t_m;
          if (mrc) goto fail;
          measured = 1;
          if (res.status == DB_OK &&
              tune_peaks_judge(peaks, setup.bytes, setup.flops, res.median_ns, res.error_text, sizeof res.error_text) != DB_OK)
            res.status = DB_SUSPICIOUS;
        }
      }
      if (pass == 0) {
        if (measured) { quick[i] = res; q->has_quick = 1; continue; }
        q->done = 1; /* never reaches the backend (skipped, compile error, pruned): final now */
      } else if (q->has_quick && measured) {
        res.measure_ms += quick[i].measure_ms; /* what this result cost: both passes */
        st->quick_full++;
      }
      if (db_result_put(db, &res, err)) goto fail;
      ++evaluated;
      st->total++;
      st->n_status[res.status]++;
      if (q->from_strat) search_strategy_observe(strat, q->point, res.status == DB_OK ? res.median_ns : -1);
      if (llm) tune_llm_observe(llm, q->json, q->code >= 0 ? codes->v[q->code].proposal_id : 0, &res);
      if (q->code >= 0) tune_code_set_note(codes, q->code, p->name, &res);
      char line[256] = "";
      if (res.status == DB_OK) {
        print_metrics(res.median_ns, &setup, line, sizeof line);
        if (res.median_ns < best && !quick_only) {
          best = res.median_ns;
          snprintf(st->best_params, sizeof st->best_params, "%s", q->label);
          if (q->code < 0) { best_point = q->point; have_best_point = 1; }
        }
        if (quick_only) snprintf(line + strlen(line), sizeof line - strlen(line), "  (quick: %d samples, not a contender)", res.samples);
      } else if (res.status == DB_SKIPPED && !strcmp(res.error_text, DB_REASON_COMPILE_ONLY)) {
        snprintf(line, sizeof line, "compiled: %d registers, %d B static smem, %u B dynamic, %d B stack, %d B spilled",
                 res.registers, res.shared_bytes, q->v.launch[0].shared, res.local_bytes,
                 (res.spill_stores > 0 ? res.spill_stores : 0) + (res.spill_loads > 0 ? res.spill_loads : 0));
      } else {
        const char *t = res.error_text;
        snprintf(line, sizeof line, "%.*s", (int)(strcspn(t, "\n") > 100 ? 100 : strcspn(t, "\n")), t);
      }
      if (tty) printf("\r\033[K"); /* erase the progress bar */
      /* this problem's count, against its budget when that is the smaller */
      size_t limit = o->budget > 0 && (size_t)o->budget < space->n_points ? (size_t)o->budget : space->n_points;
      long long done = evaluated + (limit < space->n_points ? 0 : resumed_here);
      if (!o->quiet)
        printf("[%*lld/%zu] %-13s %s %s\n", n_width, done, limit, db_status_name(res.status), q->label, line);
      if (tty) progress_bar(done, evaluated, limit, now_s() - t_problem, best, &setup, st, 0);
      else if (!o->quiet && limit >= 20 && done % (long long)((limit + 9) / 10) == 0) /* every ~10 % */
        progress_bar(done, evaluated, limit, now_s() - t_problem, best, &setup, st, 1);
      fflush(stdout);
    }
    }
    /* every compile of the batch is stored, also those an interrupt left unmeasured */
    for (int k = 0; k < n_jobs; ++k)
      if (job_ready(acomp, jobs, k, aidx, stored, db, st, err)) goto fail;
    tune_compile_finish(acomp);
    acomp = NULL;
  }
  if (tty) printf("\r\033[K");
  st->best_ns = best;
  if (sweep) {
    /* no search here: nothing to report as this problem's best */
  } else if (isfinite(best)) {
    char m[128];
    print_metrics(best, &setup, m, sizeof m);
    printf("best for %s: %s  %s\n", p->name, st->best_params, m);
  } else printf("no verified result for %s\n", p->name);
fail:
  tune_compile_finish(acomp); /* joins the pool's threads before their jobs are freed */
  for (int i = 0; jobs && i < BATCH; ++i) db_binary_release(&jobs[i].bin);
  free(jobs);
  free(pend);
  free(quick);
  tune_llm_free(llm);
  search_strategy_free(strat);
  return err->code;
}

/* run_problem over the configs that apply to p (problem_space.h): the
 * strategy walks only those; `recipe_space` is the recipe's constrained space.
 * *before (n_before points, ascending; NULL for a sweep) unites the spaces of
 * the recipe's problems before p: p opens a new regime when it shares no
 * config with them (warm_start.h), and its space joins them. With run 0 p is
 * only added to *before. */
static int run_problem_space(const tune_run_opts *o, tune_recipe *r, tune_problem *p, const search_space *recipe_space,
                             db_conn *db, tune_backend *be, const db_device *dev, int64_t run_id, int64_t recipe_id,
                             int64_t device_id, uint64_t seed, double t_deadline, const tune_peaks *peaks, stats *st,
                             tune_code_set *codes, int pi, int sweep, tune_spec *spec, uint64_t **before,
                             size_t *n_before, int run, tune_err *err) {
  tune_device_facts facts;
  tune_device_facts_from(dev, &facts);
  search_space *space = NULL;
  tune_rejections rej;
  if (tune_problem_space(r, p, &facts, recipe_space, &space, &rej, err)) return err->code;
  int project = 0, rc = TUNE_OK;
  if (before) {
    if (tune_warm_next_problem(before, n_before, space, &project)) rc = tune_fail(err, TUNE_ENOMEM, "session: out of memory");
  }
  if (!rc && run)
    rc = run_problem(o, r, p, space, &rej, db, be, dev, run_id, recipe_id, device_id, seed, t_deadline, peaks, st,
                     codes, pi, sweep, spec, project, err);
  search_space_free(space);
  return rc;
}

int tune_session_run(const tune_run_opts *o, tune_err *err) {
  tune_recipes *set = NULL;
  db_conn *db = NULL;
  tune_backend *be = NULL;
  search_space *space = NULL;
  int replay_default = 0;
  char replay_path[PATH_MAX + 64];
  if (tune_recipes_load(o->recipe_path, &set, err)) return err->code;
  if (db_open(o->db_path ? o->db_path : "tune.db", 0, &db, err)) goto fail;
  /* choose the backend */
  const char *device = o->device;
  if (!o->compile_only && !device) {
    tune_err probe;
    tune_err_clear(&probe);
    if (tune_cuda_load(&probe) == TUNE_OK) device = "cuda:0";
    else {
      tune_default_replay_path(set, o->recipe_path, replay_path, sizeof replay_path);
      if (access(replay_path, R_OK)) {
        tune_fail(err, TUNE_ENOGPU, "%s\nand there is no recorded data to replay at %s (use --compile-only to compile without a GPU)", probe.msg, replay_path);
        goto fail;
      }
      replay_default = 1;
      printf("no GPU here (no usable NVIDIA driver): replaying recorded measurements; --compile-only compiles\n");
    }
  }
  uint64_t seed = o->seed_given ? o->seed : ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
  for (int ri = 0; ri < set->n && !tune_interrupted; ++ri) {
    tune_recipe *r = &set->r[ri];
    db_device dev;
    memset(&dev, 0, sizeof dev);
    if (o->compile_only) {
      snprintf(dev.kind, sizeof dev.kind, "arch");
      snprintf(dev.arch, sizeof dev.arch, "%s", o->arch ? o->arch : "sm_90a");
      snprintf(dev.name, sizeof dev.name, "%s", dev.arch);
      snprintf(dev.cuda, sizeof dev.cuda, "%s", tune_nvrtc_version());
      /* launch geometry needs some facts: Hopper's, stated as such */
      dev.sm_count = 132;
      dev.smem_per_block_optin = 232448;
      dev.l2_bytes = 50 * 1024 * 1024;
    } else if (replay_default || (device && !strncmp(device, "replay:", 7))) {
      const char *path = replay_default ? replay_path : device + 7;
      if (be) { be->close(be); be = NULL; }
      /* a sub-recipe recorded in a device call of its own lives beside the file's recording, as
         data/recorded/<recipe name>.db (e.g. attention.prefill_sm90.db) */
      char own[PATH_MAX + 64];
      if (replay_default) {
        snprintf(own, sizeof own, "%.*s/%s.db", (int)(strrchr(replay_path, '/') - replay_path), replay_path, r->name);
        if (!access(own, R_OK)) path = own;
      }
      if (tune_backend_replay_open(path, r->name, &be, err)) {
        /* the default replay of a file of several recipes goes on past one that was never recorded
           (added after the recording), saying so; an explicit replay:FILE must hold what it is asked */
        if (!(replay_default && set->n > 1 && err->code == TUNE_ENOTFOUND)) goto fail;
        printf("%s: not replayed: %s\n", r->name, err->msg);
        tune_err_clear(err);
        be = NULL;
        continue;
      }
      dev = be->device;
      printf("replaying %s from %s:\n  measurements made on %s (%s, %d SMs, driver %s); %s\n", r->name, path, dev.name,
             dev.arch, dev.sm_count, dev.driver, be->provenance[0] ? be->provenance : "");
      if (be->recorded_hash[0] && strcmp(be->recorded_hash, r->source_hash))
        printf("  note: recorded with another version of this recipe or its template (source %s, now %s):\n"
               "  the answers are those measurements, not of the current source\n", be->recorded_hash, r->source_hash);
    } else if (!be) {
      int ordinal = 0;
      if (device && strncmp(device, "cuda", 4)) { tune_fail(err, TUNE_EINVAL, "--device %s: want cuda:N or replay:FILE", device); goto fail; }
      if (device && device[4] == ':') ordinal = atoi(device + 5);
      if (tune_backend_cuda_open(o->exe, ordinal, &be, err)) goto fail;
      be->timeout_ms = o->timeout_ms;
      dev = be->device;
      printf("measuring on %s (%s, %d SMs, driver %s) as %s; kernel timer: %s\n", dev.name, dev.arch, dev.sm_count,
             dev.driver, be->name, be->provenance);
    } else dev = be->device;
    int64_t device_id, recipe_id, run_id;
    if (db_device_put(db, &dev, &device_id, err)) goto fail;
    if (db_recipe_put(db, r->name, r->source_hash, r->file, set->file_text, &recipe_id, err)) goto fail;
    /* the space, pruned by the recipe's constraints as parameters are bound */
    int nv[SEARCH_MAX_PARAMS];
    for (int i = 0; i < r->n_params; ++i) nv[i] = r->params[i].n_values;
    search_space_def def = {.n_params = r->n_params, .n_values = nv, .n_constraints = r->n_constraints,
                            .constraint_level = NULL, .check = tune_recipe_check, .ctx = r};
    double t0 = now_s();
    if (search_space_enumerate(&def, &space, err)) goto fail;
    printf("%s: %zu of %llu configs satisfy the constraints (%.3f s)\n", r->name, space->n_points,
           (unsigned long long)space->n_total, now_s() - t0);
    db_run run;
    memset(&run, 0, sizeof run);
    run.recipe_id = recipe_id;
    run.device_id = device_id;
    snprintf(run.backend, sizeof run.backend, "%.63s", be ? be->name : "compile-only");
    tune_search_config sc;
    if (tune_search_config_get(r, o->strategy, o->min_occupancy_given ? o->min_occupancy : -1, -1, &sc, err)) goto fail;
    snprintf(run.strategy, sizeof run.strategy, "%s", sc.strategy);
    if (be && halving_margin(o, &sc) > 0)
      printf("halving: each variant is verified and timed with %d samples first; the full timing only for those within "
             "%g %% of the best\n", TUNE_HALVING_QUICK_SAMPLES, 100 * halving_margin(o, &sc));
    run.budget = o->budget;
    run.budget_s = o->budget_s;
    run.seed = seed;
    snprintf(run.tool_version, sizeof run.tool_version, "%s", TUNE_VERSION);
    if (db_run_begin(db, &run, &run_id, err)) goto fail;
    tune_peaks peaks;
    if (tune_peaks_ensure(db, device_id, &dev, be, &peaks, err)) goto fail;
    if (peaks.copy_GBps > 0 && be && be->measure_copy_peak)
      printf("device limits: copy %.0f GB/s (measured), dense bf16 %.0f TFLOP/s (%s)\n", peaks.copy_GBps, peaks.tensor_TFLOPs,
             peaks.tensor_measured ? "measured" : "computed bound");
    stats st;
    memset(&st, 0, sizeof st);
    double deadline = o->budget_s > 0 ? now_s() + o->budget_s : 0;
    double t_recipe = now_s();
    int selected = 0, rc = TUNE_OK;
    tune_code_set codes;
    tune_code_set_init(&codes, r->n_problems);
    tune_spec *spec = NULL; /* the recipe's compiles ahead of the strategy (speculate.h): may outlive a problem */
    if (tune_spec_new(&spec, err)) {
      tune_code_set_free(&codes);
      goto fail;
    }
    uint64_t *before = NULL; /* the union of the spaces of the problems so far (warm_start.h: a new regime) */
    size_t n_before = 0;
    int warm_on = !o->no_warm_start && !o->compile_only;
    for (int pi = 0; pi < r->n_problems && !tune_interrupted; ++pi) {
      int sel = problem_selected(o, &r->problems[pi]);
      if (!sel && !warm_on) continue;
      selected += sel;
      rc = run_problem_space(o, r, &r->problems[pi], space, db, be, &dev, run_id, recipe_id, device_id, seed, deadline, &peaks, &st,
                       &codes, pi, 0, spec, warm_on ? &before : NULL, &n_before, sel, err);
      if (rc) break;
    }
    free(before);
    /* code proposals are verified on every problem of the recipe (a region that is right only
       for some sizes must not win elsewhere): the problems tuned before they came, and those
       --problem left out */
    for (int pi = 0; !rc && pi < r->n_problems && !tune_interrupted; ++pi)
      if (tune_code_set_pending(&codes, pi))
        rc = run_problem_space(o, r, &r->problems[pi], space, db, be, &dev, run_id, recipe_id, device_id, seed, 0, &peaks, &st,
                         &codes, pi, 1, spec, NULL, NULL, 1, err);
    if (!rc && codes.n) rc = tune_code_set_finish(&codes, db, o->quiet, err);
    tune_code_set_free(&codes);
    {
      double t_s = now_s(); /* the last guesses: finished and cached (or dropped after a failure) */
      if (!rc) rc = tune_spec_flush(spec, db, &st.compiled, err);
      st.t_compile += now_s() - t_s;
      tune_spec_free(spec);
    }
    db_run_end(db, run_id, rc ? "failed" : tune_interrupted ? "interrupted" : "done", &(tune_err){0});
    if (rc) goto fail;
    if (!selected) printf("%s: no problem matches --problem\n", r->name);
    printf("\n%s: %d results", r->name, st.total + st.resumed); /* the statuses below count both */
    for (int s = 0; s < DB_STATUS_COUNT; ++s)
      if (st.n_status[s]) printf(", %d %s", st.n_status[s], db_status_name((db_status)s));
    printf("; %d resumed from the database\n", st.resumed);
    printf("compile: %d compiled, %d from the compile cache%s\n", st.compiled, st.cached,
           st.compiled == 0 && st.cached > 0 ? " (nothing to compile)" : "");
    if (st.guessed)
      printf("compiled ahead: %d of the strategy's proposals were compiled while earlier ones were measured\n", st.guessed);
    if (st.quick_only || st.quick_full)
      printf("halving (margin %g %%): %d verified variant(s) kept a quick timing (%d samples), %d timed fully after it\n",
             100 * halving_margin(o, &sc), st.quick_only, TUNE_HALVING_QUICK_SAMPLES, st.quick_full);
    print_busy(&st, now_s() - t_recipe, be, sc.strategy);
    search_space_free(space);
    space = NULL;
  }
  if (tune_interrupted) printf("interrupted: results so far are stored; run again to resume\n");
  if (be) be->close(be);
  db_close(db);
  tune_recipes_free(set);
  return TUNE_OK;
fail:
  search_space_free(space);
  if (be) be->close(be);
  db_close(db);
  tune_recipes_free(set);
  return err->code;
}
