/* reselect.c: the end-of-problem selection of tune run (reselect.h). */
#include "reselect.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_report.h"
#include "db_select.h"
#include "progress.h"
#include "retime.h"

/* a before b in the resource order of reselect.h */
static int fewer_resources(const tune_reselect_cand *a, const tune_reselect_cand *b) {
  if (a->launches != b->launches) return a->launches < b->launches;
  if (a->shared_bytes != b->shared_bytes) return a->shared_bytes < b->shared_bytes;
  if (a->registers != b->registers) return a->registers < b->registers;
  return a->median_ns < b->median_ns;
}

int tune_reselect_choose(const tune_reselect_cand *c, int n, const char **rule, char *why, size_t why_n) {
  int lead = -1, n_ok = 0;
  for (int i = 0; i < n; ++i)
    if (c[i].ok && (n_ok++, lead < 0 || c[i].median_ns < c[lead].median_ns)) lead = i;
  if (lead < 0) { *rule = "only"; snprintf(why, why_n, "no candidate verified in every round"); return -1; }
  if (n_ok == 1) {
    *rule = "only";
    snprintf(why, why_n, "the only candidate verified in every round (%.2f us)", c[lead].median_ns / 1e3);
    return lead;
  }
  int pick = lead, tied = 0;
  for (int i = 0; i < n; ++i) {
    if (i == lead || !c[i].ok || c[i].lo_ns > c[lead].hi_ns) continue;
    ++tied;
    if (fewer_resources(&c[i], &c[pick])) pick = i;
  }
  if (pick == lead) {
    *rule = "fastest";
    snprintf(why, why_n, "fastest of %d re-timed (%.2f us, rounds %.2f-%.2f)%s", n_ok, c[lead].median_ns / 1e3,
             c[lead].lo_ns / 1e3, c[lead].hi_ns / 1e3, tied ? "; the tied ones use no fewer resources" : "");
    return lead;
  }
  *rule = "tie-fewer-resources";
  snprintf(why, why_n,
           "%.2f us (rounds %.2f-%.2f) is within the spread of the fastest, result %lld at %.2f us (rounds %.2f-%.2f), "
           "and uses fewer resources (%d vs %d launches, %d vs %d B shared, %d vs %d registers)",
           c[pick].median_ns / 1e3, c[pick].lo_ns / 1e3, c[pick].hi_ns / 1e3, (long long)c[lead].result_id,
           c[lead].median_ns / 1e3, c[lead].lo_ns / 1e3, c[lead].hi_ns / 1e3, c[pick].launches, c[lead].launches,
           c[pick].shared_bytes, c[lead].shared_bytes, c[pick].registers, c[lead].registers);
  return pick;
}

void tune_reselect_resources(tune_reselect_cand *c, const tune_retimed *v) {
  c->launches = v->v.n_launches;
  c->shared_bytes = (v->bin.shared_bytes > 0 ? v->bin.shared_bytes : 0) + (int)v->v.launch[0].shared;
  c->registers = v->bin.registers;
}

/* Candidate i's timing in round `round`: a measurement of the comparison; a failure marks it. */
static int note_round(const tune_reselect_req *q, int64_t comparison_id, int round, const tune_retimed *cv, int i,
                      const db_result *res, double (*ns)[TUNE_RESELECT_ROUNDS], tune_reselect_cand *cand, tune_err *err) {
  db_measurement m = {.comparison_id = comparison_id, .problem_id = q->problem_id,
                      .config_id = cv[i].top.config_id, .result_id = cv[i].top.result_id, .round = round};
  snprintf(m.timing, sizeof m.timing, "%s", q->sustained ? "sustained" : "burst");
  tune_measurement_from_result(&m, res);
  if (db_measurement_put(q->db, &m, err)) return err->code;
  if (res->status != DB_OK) cand[i].ok = 0;
  else ns[i][round - 1] = res->median_ns;
  return TUNE_OK;
}

/* Round r of every ready candidate, in order. */
static int one_round(const tune_reselect_req *q, int64_t comparison_id, int round, tune_retimed *cv, int n,
                     double (*ns)[TUNE_RESELECT_ROUNDS], tune_reselect_cand *cand, tune_err *err) {
  for (int i = 0; i < n; ++i) {
    if (!cand[i].ok) continue;
    db_result res;
    double t0 = tune_now_s();
    int rc = tune_retime_once(q->be, q->r, q->p, q->setup, &cv[i], q->sustained, &res, err);
    if (q->t_measure) *q->t_measure += tune_now_s() - t0;
    if (rc || note_round(q, comparison_id, round, cv, i, &res, ns, cand, err)) return err->code;
  }
  return TUNE_OK;
}

/* Several GPUs (backend_pool.c): the rounds of a wave at once, each on a card of its own with
 * its candidates in order there, so every candidate meets the same cards in the same order and
 * the comparison stays even; S cards take S rounds in the time of one. at[k]: the candidate of
 * round first + k in flight. */
static int rounds_on_cards(const tune_reselect_req *q, int64_t comparison_id, tune_retimed *cv, int n,
                           double (*ns)[TUNE_RESELECT_ROUNDS], tune_reselect_cand *cand, tune_err *err) {
  db_result res[TUNE_RESELECT_ROUNDS];
  int at[TUNE_RESELECT_ROUNDS];
  for (int first = 1; first <= TUNE_RESELECT_ROUNDS; first += tune_backend_cards(q->be)) {
    int cards = tune_backend_cards(q->be);
    int rounds = TUNE_RESELECT_ROUNDS - first + 1 < cards ? TUNE_RESELECT_ROUNDS - first + 1 : cards;
    int in_flight = 0;
    for (int k = 0; k < rounds; ++k) at[k] = -1;
    for (int k = -1;;) { /* k: the round whose card is free (-1: start every round) */
      for (int w = k < 0 ? 0 : k; w < (k < 0 ? rounds : k + 1); ++w) {
        do ++at[w]; while (at[w] < n && !cand[at[w]].ok);
        if (at[w] >= n) continue;
        if (tune_retime_submit(q->be, q->r, q->p, q->setup, &cv[at[w]], q->sustained, w + 1, &res[w], w, err))
          return err->code;
        ++in_flight;
      }
      if (!in_flight) break;
      double t0 = tune_now_s();
      int rc = q->be->collect(q->be, &k, err);
      if (q->t_measure) *q->t_measure += tune_now_s() - t0;
      if (rc) return err->code;
      --in_flight;
      if (note_round(q, comparison_id, first + k, cv, at[k], &res[k], ns, cand, err)) return err->code;
    }
  }
  return TUNE_OK;
}

static void summarize(tune_reselect_cand *c, const double *ns, int rounds) {
  double s[64];
  if (rounds > 64) rounds = 64;
  memcpy(s, ns, (size_t)rounds * sizeof *s);
  c->median_ns = tune_median(s, rounds);
  c->lo_ns = c->hi_ns = ns[0];
  for (int k = 1; k < rounds; ++k) {
    if (ns[k] < c->lo_ns) c->lo_ns = ns[k];
    if (ns[k] > c->hi_ns) c->hi_ns = ns[k];
  }
}

static char *candidates_json(const tune_reselect_cand *c, int n) {
  json_t *a = json_array();
  for (int i = 0; a && i < n; ++i)
    json_array_append_new(a, json_pack("{sI sb sf sf sf si si si}", "result_id", (json_int_t)c[i].result_id, "ok",
                                       c[i].ok, "median_ns", c[i].median_ns, "lo_ns", c[i].lo_ns, "hi_ns", c[i].hi_ns,
                                       "launches", c[i].launches, "shared_bytes", c[i].shared_bytes, "registers",
                                       c[i].registers));
  char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
  json_decref(a);
  return s;
}

static int record(const tune_reselect_req *q, int64_t comparison_id, const tune_reselect_cand *c, int n,
                  int *chosen, tune_err *err) {
  const char *rule;
  char why[600];
  int pick = tune_reselect_choose(c, n, &rule, why, sizeof why);
  if (chosen) *chosen = pick;
  if (pick < 0) return TUNE_OK;
  char *cj = candidates_json(c, n);
  if (!cj) return tune_fail(err, TUNE_ENOMEM, "selection: out of memory");
  db_selection s = {.run_id = q->run_id, .recipe_id = q->recipe_id, .problem_id = q->problem_id,
                    .device_id = q->device_id, .comparison_id = comparison_id, .result_id = c[pick].result_id,
                    .rule = rule, .why = why, .candidates = cj};
  snprintf(s.timing, sizeof s.timing, "%s", q->sustained ? "sustained" : "burst");
  int rc = db_selection_put(q->db, &s, err);
  free(cj);
  if (!rc) printf("selection %s: result %lld, %s: %s\n", q->p->name, (long long)c[pick].result_id, rule, why);
  return rc;
}

int tune_reselect(const tune_reselect_req *q, tune_err *err) {
  db_top top[TUNE_RESELECT_TOP];
  int n = 0;
  const char *timing = q->sustained ? "sustained" : "burst";
  if (db_selection_candidates(q->db, q->recipe_id, q->problem_id, q->device_id, timing, TUNE_RESELECT_TOP, top, &n, err))
    return err->code;
  if (n == 0) return TUNE_OK;
  tune_retimed cv[TUNE_RESELECT_TOP];
  tune_reselect_cand cand[TUNE_RESELECT_TOP];
  double ns[TUNE_RESELECT_TOP][TUNE_RESELECT_ROUNDS];
  memset(cv, 0, sizeof cv);
  memset(cand, 0, sizeof cand);
  for (int i = 0; i < n; ++i) cv[i].top = top[i];
  int64_t comparison_id = 0;
  int rc = n > 1 ? tune_retime_prepare(q->db, q->r, q->p, q->facts, q->be->device.arch, cv, n, err) : TUNE_OK;
  for (int i = 0; !rc && i < n; ++i) {
    cand[i].result_id = top[i].result_id;
    cand[i].ok = n == 1 || cv[i].ready;
    cand[i].median_ns = cand[i].lo_ns = cand[i].hi_ns = top[i].median_ns;
    tune_reselect_resources(&cand[i], &cv[i]);
  }
  if (!rc && n > 1)
    rc = db_selection_rounds_begin(q->db, q->recipe_id, q->device_id, TUNE_RESELECT_ROUNDS, n, timing, &comparison_id, err);
  if (!rc && n > 1 && tune_backend_cards(q->be) > 1) {
    rc = rounds_on_cards(q, comparison_id, cv, n, ns, cand, err);
  } else {
    for (int round = 1; !rc && n > 1 && round <= TUNE_RESELECT_ROUNDS; ++round)
      rc = one_round(q, comparison_id, round, cv, n, ns, cand, err);
  }
  for (int i = 0; !rc && n > 1 && i < n; ++i)
    if (cand[i].ok) summarize(&cand[i], ns[i], TUNE_RESELECT_ROUNDS);
  if (!rc) rc = record(q, comparison_id, cand, n, NULL, err);
  tune_retime_release(cv, n);
  return rc;
}

int tune_reselect_record(const tune_reselect_req *q, int64_t comparison_id, tune_reselect_cand *c, const double *ns,
                         int rounds, int n, int *pick, tune_err *err) {
  for (int i = 0; i < n; ++i)
    if (c[i].ok) summarize(&c[i], ns + (size_t)i * (size_t)rounds, rounds);
  return record(q, comparison_id, c, n, pick, err);
}
