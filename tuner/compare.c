/* compare.c: tune compare (compare.h). */
#define _POSIX_C_SOURCE 200809L
#include "compare.h"

#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "compare_report.h"
#include "compile.h"
#include "db.h"
#include "db_compare.h"
#include "peer_client.h"
#include "problem_space.h"
#include "reselect.h"
#include "retime.h"
#include "recipe.h"
#include "reference_job.h"
#include "search.h"
#include "session.h"
#include "variant_job.h"

/* What one recipe's comparison works with. */
typedef struct cmp_ctx {
  const tune_compare_opts *o;
  tune_recipe *r;
  db_conn *db;
  tune_backend *be;
  tune_peer_client *peer;
  const json_t *hello;          /* the peer server's hello: the comparison's peer provenance */
  int64_t recipe_id, device_id, comparison_id;
  tune_device_facts facts;
  struct peer_acc {             /* a problem's peer timings per (peer, mode), stored as results */
    int64_t config_id;
    int sustained, n, sm_mhz, power_w;
    double ns[64];
    char library[256];          /* the peer's library and version, as it reported them */
  } acc[16];
  int n_acc;
} cmp_ctx;

typedef tune_retimed cmp_variant;

#define CMP_MAX_TOP 8

static int problem_wanted(const tune_compare_opts *o, const tune_problem *p) {
  if (!o->n_problems) return 1;
  for (int i = 0; i < o->n_problems; ++i)
    if (tune_problem_filter_match(o->problems[i], p)) return 1;
  return 0;
}

/* The reference (reference_job.h) and the worker given the problem (its inputs and reference outputs). */
static int set_problem(cmp_ctx *c, tune_problem *p, tune_problem_setup *setup, tune_err *err) {
  char templates[PATH_MAX + 16];
  snprintf(templates, sizeof templates, "%s/templates", c->r->root);
  if (tune_recipe_eval_problem_drawn(c->r, p, &c->facts, c->o->seed, setup, err)) return err->code;
  tune_compile_job ref;
  int rc = tune_reference_binary(c->db, c->r, setup, templates, c->be->device.arch, &ref, err);
  if (!rc) rc = c->be->set_problem(c->be, c->r, p, setup, &ref.bin, ref.lowered[0], c->o->seed, err);
  db_binary_release(&ref.bin);
  return rc;
}

/* The candidates' variants from the current recipe, and their binaries from the compile cache
 * or compiled now (in parallel) and cached: the comparison times the current source. */
static int prepare_variants(cmp_ctx *c, tune_problem *p, cmp_variant *cv, int n, tune_err *err) {
  return tune_retime_prepare(c->db, c->r, p, &c->facts, c->be->device.arch, cv, n, err);
}

/* tune's side of one round in one mode: every prepared candidate once; ns[i] its median, NAN when
 * it was not timed or failed. */
static int time_tune(cmp_ctx *c, tune_problem *p, int64_t problem_id, const tune_problem_setup *setup,
                     cmp_variant *cv, int n, int round, int sustained, double *ns, tune_err *err) {
  for (int i = 0; i < n; ++i) {
    ns[i] = NAN;
    if (!cv[i].ready) continue;
    db_result res;
    if (tune_retime_once(c->be, c->r, p, setup, &cv[i], sustained, &res, err)) return err->code;
    db_measurement m = {.comparison_id = c->comparison_id, .problem_id = problem_id, .config_id = cv[i].top.config_id,
                        .result_id = cv[i].top.result_id, .round = round};
    snprintf(m.timing, sizeof m.timing, "%s", sustained ? "sustained" : "burst");
    tune_measurement_from_result(&m, &res);
    if (m.status == DB_OK && strcmp(m.timer, "cupti")) { /* only CUPTI-timed results are compared */
      m.status = DB_SKIPPED;
      snprintf(m.error_text, sizeof m.error_text, "not timed by CUPTI (timer '%s')", m.timer);
    }
    if (db_measurement_put(c->db, &m, err)) return err->code;
    if (m.status == DB_OK) ns[i] = m.median_ns;
    printf("  round %d %-9s tune %-10s %s %s\n", round, m.timing, db_status_name(res.status), cv[i].top.params_json,
           res.status == DB_OK ? "" : res.error_text);
    if (res.status == DB_OK) printf("    %.2f us (SM %d MHz, %d W)\n", res.median_ns / 1e3, res.sm_mhz, res.power_w);
  }
  return TUNE_OK;
}

/* The peer's config row: params {"peer": name}, origin peer:name. */
static int peer_config(cmp_ctx *c, const char *name, int64_t *config_id, tune_err *err) {
  char origin[96], hash[17], params[160];
  snprintf(origin, sizeof origin, DB_PEER_ORIGIN_PREFIX "%.80s", name);
  tune_hash_hex(origin, strlen(origin), hash);
  snprintf(params, sizeof params, "{\"peer\":\"%.80s\"}", name);
  return db_config_put(c->db, c->r->name, hash, params, origin, config_id, err);
}

static void peer_measurement(db_measurement *m, const json_t *res) {
  m->status = DB_OK;
  m->median_ns = json_number_value(json_object_get(res, "median_ns"));
  m->min_ns = json_number_value(json_object_get(res, "min_ns"));
  m->max_ns = json_number_value(json_object_get(res, "max_ns"));
  m->samples = (int)json_integer_value(json_object_get(res, "samples"));
  m->rel_ci = json_number_value(json_object_get(res, "rel_ci"));
  snprintf(m->timer, sizeof m->timer, "%s", json_string_value(json_object_get(res, "timer")) ?: "");
  snprintf(m->kernels, sizeof m->kernels, "%s", json_string_value(json_object_get(res, "kernels")) ?: "");
  snprintf(m->library, sizeof m->library, "%s", json_string_value(json_object_get(res, "library")) ?: "");
  json_t *sm = json_object_get(res, "sm_mhz"), *mem = json_object_get(res, "mem_mhz");
  m->sm_mhz = sm ? (int)json_integer_value(sm) : -1;
  m->mem_mhz = mem ? (int)json_integer_value(mem) : -1;
  m->power_w = (int)json_integer_value(json_object_get(res, "power_w"));
  m->clock_reasons = (int64_t)json_integer_value(json_object_get(res, "clock_reasons"));
  if (!(m->median_ns > 0) || strcmp(m->timer, "cupti")) { /* only CUPTI-timed peers are compared */
    m->status = DB_SKIPPED;
    snprintf(m->error_text, sizeof m->error_text, "peer not timed by CUPTI (timer '%s')", m->timer);
  }
}

/* Keep a peer's round time for its result (peer_results). */
static void peer_accumulate(cmp_ctx *c, const db_measurement *m, int sustained) {
  struct peer_acc *a = NULL;
  for (int i = 0; i < c->n_acc && !a; ++i)
    if (c->acc[i].config_id == m->config_id && c->acc[i].sustained == sustained) a = &c->acc[i];
  if (!a && c->n_acc < (int)(sizeof c->acc / sizeof c->acc[0])) {
    a = &c->acc[c->n_acc++];
    memset(a, 0, sizeof *a);
    a->config_id = m->config_id;
    a->sustained = sustained;
    a->sm_mhz = -1;
  }
  if (!a || a->n >= (int)(sizeof a->ns / sizeof a->ns[0])) return;
  a->ns[a->n++] = m->median_ns;
  if (m->sm_mhz > 0 && (a->sm_mhz < 0 || m->sm_mhz < a->sm_mhz)) a->sm_mhz = m->sm_mhz;
  if (m->power_w > a->power_w) a->power_w = m->power_w;
  if (!a->library[0]) snprintf(a->library, sizeof a->library, "%s", m->library);
}

/* Each peer's median over the rounds, per mode, as a result of the problem (origin peer:<name>),
 * so the database answers "did tune beat the vendor here?" like any other query of results. */
static int peer_results(cmp_ctx *c, int64_t problem_id, tune_err *err) {
  for (int i = 0; i < c->n_acc; ++i) {
    struct peer_acc *a = &c->acc[i];
    db_result res;
    memset(&res, 0, sizeof res);
    res.recipe_id = c->recipe_id;
    res.device_id = c->device_id;
    res.config_id = a->config_id;
    res.problem_id = problem_id;
    res.status = DB_OK;
    res.median_ns = tune_median(a->ns, a->n);
    res.min_ns = res.max_ns = a->ns[0];
    for (int k = 1; k < a->n; ++k) {
      if (a->ns[k] < res.min_ns) res.min_ns = a->ns[k];
      if (a->ns[k] > res.max_ns) res.max_ns = a->ns[k];
    }
    res.samples = a->n;
    res.registers = res.shared_bytes = res.local_bytes = res.spill_stores = res.spill_loads = -1;
    res.err_rel_l2 = res.err_max_abs = -1;
    res.sm_mhz = a->sm_mhz;
    res.mem_mhz = -1;
    res.power_w = a->power_w;
    res.seed = c->o->seed;
    snprintf(res.timing, sizeof res.timing, "%s", a->sustained ? "sustained" : "burst");
    snprintf(res.timer, sizeof res.timer, "cupti");
    /* the library stands where a variant's binary does in a result's identity (db_identity.h):
       the same library timed again is a re-timing, another version a result of its own */
    char lib_hash[17];
    tune_hash_hex(a->library, strlen(a->library), lib_hash);
    snprintf(res.binary_key, sizeof res.binary_key, "peer-lib-%s", lib_hash);
    snprintf(res.error_text, sizeof res.error_text, "peer: median of %d interleaved rounds of comparison %lld", a->n,
             (long long)c->comparison_id);
    if (db_result_put(c->db, &res, err)) return err->code;
  }
  c->n_acc = 0;
  return TUNE_OK;
}

/* The peers' side of one round in one mode. */
static int time_peers(cmp_ctx *c, tune_problem *p, int64_t problem_id, int round, int sustained, tune_err *err) {
  json_error_t je;
  json_t *dims = json_loads(p->dims_json, 0, &je), *rep = NULL;
  json_t *req = json_pack("{s:s,s:s,s:s,s:o,s:s,s:I}", "op", "measure", "recipe", c->r->name, "problem", p->name, "dims",
                          dims ? dims : json_object(), "timing", sustained ? "sustained" : "burst", "seed",
                          (json_int_t)c->o->seed);
  int rc = tune_peer_call(c->peer, req, &rep, err);
  json_decref(req);
  if (rc) return rc;
  json_t *results = json_object_get(rep, "results"), *res;
  size_t i;
  json_array_foreach(results, i, res) {
    const char *name = json_string_value(json_object_get(res, "peer")) ?: "?";
    db_measurement m = {.comparison_id = c->comparison_id, .problem_id = problem_id, .peer = 1, .round = round};
    snprintf(m.timing, sizeof m.timing, "%s", sustained ? "sustained" : "burst");
    if ((rc = peer_config(c, name, &m.config_id, err))) break;
    peer_measurement(&m, res);
    if ((rc = db_measurement_put(c->db, &m, err))) break;
    if (m.status == DB_OK) peer_accumulate(c, &m, sustained);
    printf("  round %d %-9s peer %-10s %s %.2f us (SM %d MHz, %d W) %s\n", round, m.timing, db_status_name(m.status), name,
           m.median_ns / 1e3, m.sm_mhz, m.power_w, m.kernels);
  }
  json_t *skipped = json_object_get(rep, "skipped");
  json_array_foreach(skipped, i, res)
    if (round == 1)
      printf("  peer %s skipped: %s\n", json_string_value(json_object_get(res, "peer")) ?: "?",
             json_string_value(json_object_get(res, "reason")) ?: "");
  if (!rc && !json_is_true(json_object_get(rep, "ok")))
    printf("  peer server: %s\n", json_string_value(json_object_get(rep, "error")) ?: "request refused");
  json_decref(rep);
  return rc;
}

/* With sustained rounds: tune's candidates chosen among by their sustained round medians (ns[i *
 * rounds + k], NAN where a round failed), by tune run's selection rule, and recorded as a selection
 * of this comparison, so that `tune db best` and bundles take the winner of the mode deployments
 * run in. Says whether it is the database's fastest (the run's burst-timed best). */
static int select_sustained(cmp_ctx *c, tune_problem *p, int64_t problem_id, const cmp_variant *cv, int n,
                            const double *ns, tune_err *err) {
  tune_reselect_cand cand[CMP_MAX_TOP];
  memset(cand, 0, sizeof cand);
  for (int i = 0; i < n; ++i) {
    cand[i].result_id = cv[i].top.result_id;
    cand[i].ok = cv[i].ready;
    for (int k = 0; k < c->o->rounds; ++k) cand[i].ok = cand[i].ok && !isnan(ns[i * c->o->rounds + k]);
    tune_reselect_resources(&cand[i], &cv[i]);
  }
  tune_reselect_req q = {.db = c->db, .r = c->r, .p = p, .recipe_id = c->recipe_id, .problem_id = problem_id,
                         .device_id = c->device_id, .sustained = 1};
  int pick = -1;
  if (tune_reselect_record(&q, c->comparison_id, cand, ns, c->o->rounds, n, &pick, err)) return err->code;
  if (pick > 0)
    printf("  sustained choice %s is not the database's fastest %s (burst-timed by the run): bundles now take it\n",
           cv[pick].top.params_json, cv[0].top.params_json);
  return TUNE_OK;
}

/* One problem: its candidates, then its burst rounds and its sustained rounds, the side that goes
 * first alternating between rounds; with sustained rounds, the sustained selection. */
static int compare_problem(cmp_ctx *c, tune_problem *p, tune_err *err) {
  int64_t problem_id;
  cmp_variant *cv = calloc(CMP_MAX_TOP, sizeof *cv);
  double *sus = malloc((size_t)CMP_MAX_TOP * (size_t)c->o->rounds * sizeof *sus); /* [candidate][round] */
  db_top top[CMP_MAX_TOP];
  int n_top = 0, rc;
  tune_problem_setup setup;
  if (!cv || !sus) {
    free(cv);
    free(sus);
    return tune_fail(err, TUNE_ENOMEM, "compare: out of memory");
  }
  if ((rc = db_problem_put(c->db, c->r->name, p->name, p->hash, p->dims_json, &problem_id, err))) goto done;
  int k = c->o->top_k < CMP_MAX_TOP ? c->o->top_k : CMP_MAX_TOP;
  if ((rc = db_top_results(c->db, c->r->name, problem_id, c->device_id, k, top, &n_top, err))) goto done;
  printf("\n== %s / %s: the %d fastest config(s) the database holds for this architecture\n", c->r->name, p->name, n_top);
  for (int i = 0; i < n_top; ++i) cv[i].top = top[i];
  if ((rc = prepare_variants(c, p, cv, n_top, err))) goto done;
  if (n_top && (rc = set_problem(c, p, &setup, err))) goto done;
  /* burst rounds first, then sustained ones: a burst sample right after a sustained phase would
     start at the power-limited clock that phase left, on whichever side came first */
  for (int mode = 0; mode < 2; ++mode) {
    int sustained = mode == 1;
    if ((sustained && !c->o->sustained) || (!sustained && !c->o->burst)) continue;
    if (!sustained && c->o->sustained) nanosleep(&(struct timespec){1, 0}, NULL); /* the last problem's sustained phase */
    for (int round = 1; round <= c->o->rounds; ++round) {
      for (int side = 0; side < 2; ++side) {
        int peer_turn = (side + round + 1) % 2; /* round 1: tune first; round 2: peers first */
        double ns[CMP_MAX_TOP];
        if (peer_turn && c->peer) rc = time_peers(c, p, problem_id, round, sustained, err);
        else if (!peer_turn && n_top) rc = time_tune(c, p, problem_id, &setup, cv, n_top, round, sustained, ns, err);
        if (rc) goto done;
        if (!peer_turn && n_top && sustained)
          for (int i = 0; i < n_top; ++i) sus[i * c->o->rounds + round - 1] = ns[i];
      }
    }
  }
  rc = peer_results(c, problem_id, err);
  if (!rc && n_top && c->o->sustained) rc = select_sustained(c, p, problem_id, cv, n_top, sus, err);
done:
  tune_retime_release(cv, CMP_MAX_TOP);
  free(cv);
  free(sus);
  return rc;
}

/* Print comparison id's table (and write it to o->out_path). */
static int report(const tune_compare_opts *o, db_conn *db, int64_t id, tune_err *err) {
  json_t *info = NULL, *rows = NULL;
  int rc = db_comparison_info(db, id, &info, err);
  if (!rc) rc = db_comparison_rows(db, id, &rows, err);
  if (!rc) {
    printf("\n");
    tune_compare_print(stdout, info, rows);
    if (o->out_path) {
      FILE *f = fopen(o->out_path, "a");
      if (!f) rc = tune_fail(err, TUNE_EIO, "%s: cannot write", o->out_path);
      else {
        tune_compare_print(f, info, rows);
        fputc('\n', f);
        fclose(f);
      }
    }
  }
  json_decref(info);
  json_decref(rows);
  return rc;
}

static int compare_recipe(cmp_ctx *c, const char *file_text, tune_err *err) {
  tune_recipe *r = c->r;
  int rc = TUNE_OK;
  char *peer_info = c->hello ? json_dumps(c->hello, JSON_COMPACT) : NULL;
  if (tune_recipe_put(c->db, r, file_text, &c->recipe_id, err)) return err->code;
  char timings[32];
  snprintf(timings, sizeof timings, "%s%s%s", c->o->burst ? "burst" : "", c->o->burst && c->o->sustained ? "," : "",
           c->o->sustained ? "sustained" : "");
  if (db_comparison_begin(c->db, c->recipe_id, c->device_id, c->o->command, c->o->rounds, c->o->top_k, timings,
                          &c->comparison_id, err))
    return err->code;
  for (int pi = 0; pi < r->n_problems && !rc && !tune_interrupted; ++pi)
    if (problem_wanted(c->o, &r->problems[pi])) rc = compare_problem(c, &r->problems[pi], err);
  tune_err e;
  tune_err_clear(&e);
  const char *status = tune_interrupted ? "interrupted" : rc ? "failed" : "done";
  if (rc && tune_interrupted) { /* the work in flight failed with the stop: what finished stands */
    fprintf(stderr, "tune compare: interrupted during a problem: %s\n", err->msg);
    tune_err_clear(err);
    rc = TUNE_OK;
  }
  db_comparison_end(c->db, c->comparison_id, status, peer_info, &e);
  free(peer_info);
  if (!rc) rc = report(c->o, c->db, c->comparison_id, err);
  return rc;
}

int tune_compare_run(const tune_compare_opts *o, tune_err *err) {
  tune_recipes *set = NULL;
  db_conn *db = NULL;
  tune_backend *be = NULL;
  tune_peer_client *peer = NULL;
  const json_t *hello = NULL;
  int rc = TUNE_OK;
  /* a report only reads: a committed database (data/compare/) stays as it is */
  if (db_open(o->db_path ? o->db_path : "tune.db", o->report_id != 0, &db, err)) return err->code;
  if (o->report_id) { /* > 0: that comparison; < 0: the latest of every recipe */
    int64_t ids[64];
    int n = 1;
    ids[0] = o->report_id;
    if (o->report_id < 0) rc = db_comparison_latest(db, ids, 64, &n, err);
    if (!rc && !n) rc = tune_fail(err, TUNE_ENOTFOUND, "%s holds no comparison", o->db_path ? o->db_path : "tune.db");
    for (int i = 0; i < n && !rc; ++i) rc = report(o, db, ids[i], err);
    db_close(db);
    return rc;
  }
  signal(SIGPIPE, SIG_IGN); /* a peer server that died is an error value, not a signal */
  if ((rc = tune_recipes_load(o->recipe_path, &set, err))) goto done;
  for (int i = 0; i < o->n_problems && !rc; ++i) rc = tune_problem_filter_check(set, o->problems[i], o->recipe_path, err);
  if (rc) goto done;
  int ordinal = o->device && !strncmp(o->device, "cuda:", 5) ? atoi(o->device + 5) : 0;
  if (o->device && (strncmp(o->device, "cuda:", 5) || !o->device[5] || strspn(o->device + 5, "0123456789") != strlen(o->device + 5))) {
    rc = tune_fail(err, TUNE_EINVAL, "--device %s: tune compare measures on one GPU (cuda:N): tune and its peers"
                   " are timed on the same card", o->device);
    goto done;
  }
  if ((rc = tune_backend_cuda_open(o->exe, ordinal, &be, err))) goto done;
  printf("comparing on %s (%s, %d SMs, driver %s); kernel timer: %s\n", be->device.name, be->device.arch,
         be->device.sm_count, be->device.driver, be->provenance);
  char cmd[PATH_MAX + 64];
  if (!o->peer_cmd) snprintf(cmd, sizeof cmd, "python3 %s/tools/peers/peer_server.py", set->r[0].root);
  else snprintf(cmd, sizeof cmd, "%s", o->peer_cmd);
  if (cmd[0]) {
    if ((rc = tune_peer_start(cmd, &peer, &hello, err))) goto done;
    char *h = json_dumps(hello, JSON_COMPACT);
    printf("peers: %s\n", h ? h : "?");
    free(h);
  } else printf("peers: none (--no-peers)\n");
  int64_t device_id;
  if ((rc = db_device_put(db, &be->device, &device_id, err))) goto done;
  for (int ri = 0; ri < set->n && !rc && !tune_interrupted; ++ri) {
    cmp_ctx c = {.o = o, .r = &set->r[ri], .db = db, .be = be, .peer = peer, .hello = hello, .device_id = device_id};
    tune_device_facts_from(&be->device, &c.facts);
    rc = compare_recipe(&c, set->file_text, err);
  }
done:
  tune_peer_stop(peer);
  if (be) be->close(be);
  db_close(db);
  tune_recipes_free(set);
  return rc;
}
