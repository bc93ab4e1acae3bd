/* proposal_source.c: the sources of a problem run's variants and their chain (proposal_source.h). */
#include "proposal_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the chain ------------------------------------------------------------ */

int tune_source_chain_add(tune_source_chain *c, tune_source *s) {
  if (c->n == TUNE_MAX_SOURCES) {
    if (s->free) s->free(s);
    return -1;
  }
  c->s[c->n++] = s;
  return 0;
}

int tune_source_chain_next(tune_source_chain *c, tune_proposal *out, int want, int *n, tune_err *err) {
  *n = 0;
  for (int i = 0; i < c->n && *n == 0; ++i)
    if (c->s[i]->role == TUNE_SOURCE_LEAD && c->s[i]->next(c->s[i], out, want, n, err)) return err->code;
  for (int i = 0; i < c->n; ++i) {
    int m = 0;
    if (c->s[i]->role != TUNE_SOURCE_FILL) continue;
    if (c->s[i]->next(c->s[i], out + *n, want - *n, &m, err)) return err->code;
    *n += m;
  }
  return TUNE_OK;
}

void tune_source_chain_observe(tune_source_chain *c, const tune_proposal *p, const char *params_json,
                               const db_result *res) {
  for (int i = 0; i < c->n; ++i)
    if (c->s[i] == p->source || c->s[i]->observes_all) c->s[i]->observe(c->s[i], p, params_json, res);
}

void tune_source_chain_free(tune_source_chain *c) {
  for (int i = 0; i < c->n; ++i)
    if (c->s[i]->free) c->s[i]->free(c->s[i]);
  c->n = 0;
}

static void propose(tune_proposal *out, tune_source *s, uint64_t point, int code, const char *origin) {
  out->point = point;
  out->code = code;
  snprintf(out->origin, sizeof out->origin, "%s", origin);
  out->source = s;
}

/* ---- the search strategy -------------------------------------------------- */

typedef struct strategy_source {
  tune_source base;
  search_strategy *strat;
  char origin[32];
} strategy_source;

static int strategy_next(tune_source *s, tune_proposal *out, int want, int *n, tune_err *err) {
  strategy_source *ss = (strategy_source *)s;
  uint64_t pts[TUNE_SOURCE_MAX_WANT];
  if (search_strategy_next_batch(ss->strat, pts, want, n, err)) return err->code;
  for (int i = 0; i < *n; ++i) propose(&out[i], s, pts[i], -1, ss->origin);
  return TUNE_OK;
}

static void strategy_observe(tune_source *s, const tune_proposal *p, const char *params_json, const db_result *res) {
  (void)params_json;
  search_strategy_observe(((strategy_source *)s)->strat, p->point, res->status == DB_OK ? res->median_ns : -1);
}

static void strategy_free(tune_source *s) {
  search_strategy_free(((strategy_source *)s)->strat);
  free(s);
}

int tune_source_strategy_new(const char *name, const search_space *space, uint64_t seed, const char *origin,
                             tune_source **out, tune_err *err) {
  *out = NULL;
  strategy_source *ss = calloc(1, sizeof *ss);
  if (!ss) return tune_fail(err, TUNE_ENOMEM, "session: out of memory");
  if (search_strategy_new(name, space, seed, &ss->strat, err)) {
    free(ss);
    return err->code;
  }
  ss->base = (tune_source){.name = "strategy", .role = TUNE_SOURCE_LEAD, .next = strategy_next,
                           .observe = strategy_observe, .free = strategy_free};
  snprintf(ss->origin, sizeof ss->origin, "%s", origin);
  *out = &ss->base;
  return TUNE_OK;
}

int tune_source_strategy_set_parallel(tune_source *s, int k, tune_err *err) {
  return search_strategy_set_parallel(((strategy_source *)s)->strat, k, err);
}

const search_strategy *tune_source_chain_strategy(const tune_source_chain *c) {
  for (int i = 0; i < c->n; ++i)
    if (c->s[i]->next == strategy_next) return ((const strategy_source *)c->s[i])->strat;
  return NULL;
}

/* ---- the warm start ------------------------------------------------------- */

typedef struct warm_source {
  tune_source base;
  tune_source *observer; /* the strategy: observes the warm configs as its own */
  char origin[32];
  int n, next;
  uint64_t pts[];
} warm_source;

static int warm_next(tune_source *s, tune_proposal *out, int want, int *n, tune_err *err) {
  (void)err;
  warm_source *w = (warm_source *)s;
  *n = w->n - w->next < want ? w->n - w->next : want;
  for (int i = 0; i < *n; ++i) propose(&out[i], s, w->pts[w->next + i], -1, w->origin);
  w->next += *n;
  return TUNE_OK;
}

static void warm_observe(tune_source *s, const tune_proposal *p, const char *params_json, const db_result *res) {
  tune_source *obs = ((warm_source *)s)->observer;
  if (obs) obs->observe(obs, p, params_json, res);
}

static void plain_free(tune_source *s) { free(s); }

tune_source *tune_source_warm_new(const uint64_t *pts, int n, const char *origin, tune_source *observer) {
  warm_source *w = calloc(1, sizeof *w + (size_t)(n > 0 ? n : 0) * sizeof *pts);
  if (!w) return NULL;
  w->base = (tune_source){.name = "warm start", .role = TUNE_SOURCE_LEAD, .next = warm_next,
                          .observe = warm_observe, .free = plain_free};
  w->observer = observer;
  snprintf(w->origin, sizeof w->origin, "%s", origin);
  w->n = n > 0 ? n : 0;
  if (w->n) memcpy(w->pts, pts, (size_t)w->n * sizeof *pts);
  return &w->base;
}

/* ---- the LLM proposer ----------------------------------------------------- */

typedef struct llm_source {
  tune_source base;
  tune_llm *llm;
  tune_code_set *codes;
} llm_source;

static int llm_next(tune_source *s, tune_proposal *out, int want, int *n, tune_err *err) {
  llm_source *ls = (llm_source *)s;
  uint64_t pts[TUNE_SOURCE_MAX_WANT];
  char origins[TUNE_SOURCE_MAX_WANT][32];
  int n_code = 0; /* accepted code proposals join the code set: the code source takes them */
  if (tune_llm_propose(ls->llm, pts, origins, want, n, &n_code, err)) return err->code;
  for (int i = 0; i < *n; ++i) propose(&out[i], s, pts[i], -1, origins[i]);
  return TUNE_OK;
}

static void llm_observe(tune_source *s, const tune_proposal *p, const char *params_json, const db_result *res) {
  llm_source *ls = (llm_source *)s;
  tune_llm_observe(ls->llm, params_json, p->code >= 0 ? ls->codes->v[p->code].proposal_id : 0, res);
}

static void llm_free(tune_source *s) {
  tune_llm_free(((llm_source *)s)->llm);
  free(s);
}

tune_source *tune_source_llm_new(tune_llm *llm, tune_code_set *codes) {
  llm_source *ls = calloc(1, sizeof *ls);
  if (!ls) return NULL;
  ls->base = (tune_source){.name = "llm", .role = TUNE_SOURCE_LEAD, .observes_all = 1, .next = llm_next,
                           .observe = llm_observe, .free = llm_free};
  ls->llm = llm;
  ls->codes = codes;
  return &ls->base;
}

typedef struct llm_fill_source {
  tune_source base;
  tune_source *random; /* owned */
  tune_llm *llm;
  const tune_code_set *codes;
  int pi;
} llm_fill_source;

/* Nothing usable from the proposer (no config, no code variant waiting): the batch comes from
   random, without the points already measured or proposed. */
static int llm_fill_next(tune_source *s, tune_proposal *out, int want, int *n, tune_err *err) {
  llm_fill_source *f = (llm_fill_source *)s;
  *n = 0;
  if (tune_code_set_pending(f->codes, f->pi)) return TUNE_OK;
  tune_proposal tmp[TUNE_SOURCE_MAX_WANT];
  int m = 0;
  do {
    if (f->random->next(f->random, tmp, want, &m, err)) return err->code;
    for (int k = 0; k < m; ++k)
      if (!tune_llm_seen(f->llm, tmp[k].point)) {
        tune_llm_mark_seen(f->llm, tmp[k].point);
        propose(&out[(*n)++], s, tmp[k].point, -1, tmp[k].origin);
      }
  } while (*n == 0 && m > 0);
  if (*n) printf("llm: no valid proposal: %d config(s) of this batch come from the random strategy\n", *n);
  return TUNE_OK;
}

static void llm_fill_observe(tune_source *s, const tune_proposal *p, const char *params_json, const db_result *res) {
  tune_source *r = ((llm_fill_source *)s)->random;
  r->observe(r, p, params_json, res);
}

static void llm_fill_free(tune_source *s) {
  tune_source *r = ((llm_fill_source *)s)->random;
  if (r->free) r->free(r);
  free(s);
}

tune_source *tune_source_llm_fill_new(tune_source *random, tune_llm *llm, const tune_code_set *codes, int pi) {
  llm_fill_source *f = calloc(1, sizeof *f);
  if (!f) {
    if (random->free) random->free(random);
    return NULL;
  }
  f->base = (tune_source){.name = "llm fill", .role = TUNE_SOURCE_LEAD, .next = llm_fill_next,
                          .observe = llm_fill_observe, .free = llm_fill_free};
  f->random = random;
  f->llm = llm;
  f->codes = codes;
  f->pi = pi;
  return &f->base;
}

/* ---- the code proposals --------------------------------------------------- */

typedef struct code_source {
  tune_source base;
  tune_code_set *codes;
  int pi;
  const char *problem;
} code_source;

static int code_next(tune_source *s, tune_proposal *out, int want, int *n, tune_err *err) {
  (void)err;
  code_source *cs = (code_source *)s;
  int idx[TUNE_SOURCE_MAX_WANT];
  *n = tune_code_set_take(cs->codes, cs->pi, idx, want);
  for (int i = 0; i < *n; ++i) propose(&out[i], s, 0, idx[i], cs->codes->v[idx[i]].origin);
  return TUNE_OK;
}

static void code_observe(tune_source *s, const tune_proposal *p, const char *params_json, const db_result *res) {
  (void)params_json;
  code_source *cs = (code_source *)s;
  tune_code_set_note(cs->codes, p->code, cs->problem, res);
}

tune_source *tune_source_code_new(tune_code_set *codes, int pi, const char *problem) {
  code_source *cs = calloc(1, sizeof *cs);
  if (!cs) return NULL;
  cs->base = (tune_source){.name = "code proposals", .role = TUNE_SOURCE_FILL, .next = code_next,
                           .observe = code_observe, .free = plain_free};
  cs->codes = codes;
  cs->pi = pi;
  cs->problem = problem;
  return &cs->base;
}
