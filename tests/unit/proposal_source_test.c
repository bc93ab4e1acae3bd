/* proposal_source_test.c: the chain of a problem run's proposal sources (tuner/proposal_source.c):
 * the warm start's configs as batches of their own before the strategy's, code variants topping
 * up every batch, each result observed by its source (the warm start's by the strategy) and by
 * the sources that observe all, the LLM's random fill held back while code variants wait.
 * Exit status 0 when every CHECK passed. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "proposal_source.h"

/* A source that proposes the points it was given and counts what it observes. */
typedef struct fake_source {
  tune_source base;
  const uint64_t *pts;
  int n, next;
  int per_call;    /* at most this many per batch; 0: as many as asked */
  int n_observed;
  uint64_t last_observed;
  double last_ns;
} fake_source;

static int fake_next(tune_source *s, tune_proposal *out, int want, int *n, tune_err *err) {
  (void)err;
  fake_source *f = (fake_source *)s;
  *n = 0;
  while (*n < want && f->next < f->n && (!f->per_call || *n < f->per_call)) {
    out[*n] = (tune_proposal){.point = f->pts[f->next++], .code = -1, .source = s};
    snprintf(out[*n].origin, sizeof out[*n].origin, "%s", s->name);
    ++*n;
  }
  return TUNE_OK;
}

static void fake_observe(tune_source *s, const tune_proposal *p, const char *json, const db_result *res) {
  (void)json;
  fake_source *f = (fake_source *)s;
  f->n_observed++;
  f->last_observed = p->point;
  f->last_ns = res->status == DB_OK ? res->median_ns : -1;
}

static void fake_init(fake_source *f, const char *name, tune_source_role role, int all, const uint64_t *pts, int n) {
  memset(f, 0, sizeof *f);
  f->base = (tune_source){.name = name, .role = role, .observes_all = all, .next = fake_next, .observe = fake_observe};
  f->pts = pts;
  f->n = n;
}

static db_result ok_result(double ns) {
  db_result r;
  memset(&r, 0, sizeof r);
  r.status = DB_OK;
  r.median_ns = ns;
  return r;
}

/* warm start -> strategy: the warm configs a batch of their own at a time, then the strategy's */
static void warm_then_strategy(void) {
  int nv[2] = {4, 4};
  search_space_def def = {.n_params = 2, .n_values = nv};
  search_space *sp = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK && sp && sp->n_points == 16);
  tune_source *strat = NULL;
  CHECK(tune_source_strategy_new("exhaustive", sp, 1, "exhaustive", &strat, &err) == TUNE_OK && strat);
  uint64_t warm_pts[3] = {5, 2, 9};
  tune_source *warm = tune_source_warm_new(warm_pts, 3, "exhaustive", strat);
  tune_source_chain c = {0};
  CHECK(tune_source_chain_add(&c, warm) == 0);
  CHECK(tune_source_chain_add(&c, strat) == 0);
  tune_proposal out[TUNE_SOURCE_MAX_WANT];
  int n = -1;
  CHECK(tune_source_chain_next(&c, out, 2, &n, &err) == TUNE_OK && n == 2);
  CHECK(out[0].point == 5 && out[1].point == 2 && out[0].source == warm && out[0].code == -1);
  CHECK(!strcmp(out[0].origin, "exhaustive"));
  /* the last warm config alone: not topped up by the strategy */
  CHECK(tune_source_chain_next(&c, out, 4, &n, &err) == TUNE_OK && n == 1 && out[0].point == 9);
  CHECK(tune_source_chain_next(&c, out, 4, &n, &err) == TUNE_OK && n == 4);
  CHECK(out[0].source == strat && out[3].source == strat);
  /* a warm config's result reaches the strategy (through the warm source), once */
  tune_proposal wp = {.point = 5, .code = -1, .source = warm};
  db_result r = ok_result(100);
  tune_source_chain_observe(&c, &wp, "{}", &r);
  tune_source_chain_free(&c);
  CHECK(c.n == 0);
  search_space_free(sp);
}

/* results go to their source and to the sources that observe all, never to the others */
static void observe_routing(void) {
  uint64_t a_pts[2] = {1, 2}, b_pts[2] = {3, 4};
  fake_source a, b, all, obs;
  fake_init(&a, "a", TUNE_SOURCE_LEAD, 0, a_pts, 2);
  fake_init(&b, "b", TUNE_SOURCE_LEAD, 0, b_pts, 2);
  fake_init(&all, "all", TUNE_SOURCE_LEAD, 1, NULL, 0);
  fake_init(&obs, "obs", TUNE_SOURCE_LEAD, 0, NULL, 0);
  tune_source_chain c = {0};
  tune_source_chain_add(&c, &all.base);
  tune_source_chain_add(&c, &a.base);
  tune_source_chain_add(&c, &b.base);
  tune_proposal out[TUNE_SOURCE_MAX_WANT];
  int n = 0;
  tune_err err;
  tune_err_clear(&err);
  /* `all` has nothing: the first lead with any proposal gives the batch, b waits */
  CHECK(tune_source_chain_next(&c, out, 8, &n, &err) == TUNE_OK && n == 2 && out[1].point == 2);
  db_result r = ok_result(42);
  tune_source_chain_observe(&c, &out[1], "{}", &r);
  CHECK(a.n_observed == 1 && a.last_observed == 2 && a.last_ns == 42);
  CHECK(all.n_observed == 1 && b.n_observed == 0);
  r.status = DB_WRONG;
  tune_source_chain_observe(&c, &out[0], "{}", &r);
  CHECK(a.n_observed == 2 && a.last_ns == -1 && all.n_observed == 2);
  CHECK(tune_source_chain_next(&c, out, 8, &n, &err) == TUNE_OK && n == 2 && out[0].source == &b.base);
  CHECK(tune_source_chain_next(&c, out, 8, &n, &err) == TUNE_OK && n == 0);
  /* the warm start hands its results to its observer */
  uint64_t w_pts[1] = {7};
  tune_source *warm = tune_source_warm_new(w_pts, 1, "bayes", &obs.base);
  CHECK(warm && warm->next(warm, out, 8, &n, &err) == TUNE_OK && n == 1 && !strcmp(out[0].origin, "bayes"));
  warm->observe(warm, &out[0], "{}", &r);
  CHECK(obs.n_observed == 1 && obs.last_observed == 7);
  warm->free(warm);
  /* a full chain refuses (and frees) one more */
  tune_source_chain_add(&c, &obs.base);
  tune_source *extra = tune_source_warm_new(w_pts, 1, "x", NULL);
  CHECK(tune_source_chain_add(&c, extra) == -1 && c.n == TUNE_MAX_SOURCES);
}

/* code variants top up every batch; they are counted in the code set's verdict */
static void code_fill(void) {
  tune_code_set codes;
  tune_code_set_init(&codes, 2);
  int vi[SEARCH_MAX_PARAMS] = {0};
  CHECK(tune_code_set_add(&codes, 11, "body", "x;", "src", vi, 1, "aaaaaaaaaaaaaaaa") == 0);
  CHECK(tune_code_set_add(&codes, 12, "body", "y;", "src", vi, 1, "bbbbbbbbbbbbbbbb") == 1);
  uint64_t pts[5] = {1, 2, 3, 4, 5};
  fake_source lead;
  fake_init(&lead, "lead", TUNE_SOURCE_LEAD, 0, pts, 5);
  lead.per_call = 2;
  tune_source_chain c = {0};
  tune_source *code = tune_source_code_new(&codes, 0, "p0");
  CHECK(tune_source_chain_add(&c, code) == 0); /* a fill source comes after the leads, wherever it stands */
  CHECK(tune_source_chain_add(&c, &lead.base) == 0);
  tune_proposal out[TUNE_SOURCE_MAX_WANT];
  int n = 0;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_source_chain_next(&c, out, 3, &n, &err) == TUNE_OK && n == 3);
  CHECK(out[0].point == 1 && out[0].code == -1 && out[1].point == 2);
  CHECK(out[2].code == 0 && out[2].source == code && !strcmp(out[2].origin, "llm-code:11"));
  CHECK(tune_code_set_pending(&codes, 0) == 1 && tune_code_set_pending(&codes, 1) == 2);
  /* the llm's random fill waits while a code variant waits for this problem */
  tune_source *fill = tune_source_llm_fill_new(&lead.base, NULL, &codes, 0);
  int m = -1;
  CHECK(fill && fill->next(fill, out, 3, &m, &err) == TUNE_OK && m == 0 && lead.next == 2);
  CHECK(tune_source_chain_next(&c, out, 3, &n, &err) == TUNE_OK && n == 3 && out[2].code == 1);
  CHECK(tune_source_chain_next(&c, out, 3, &n, &err) == TUNE_OK && n == 1 && out[0].point == 5);
  db_result r = ok_result(9);
  tune_proposal cp = {.code = 1, .source = code};
  tune_source_chain_observe(&c, &cp, "{}", &r);
  CHECK(codes.v[1].n_ok == 1 && codes.v[0].n_ok == 0 && lead.n_observed == 0);
  fill->observe(fill, &out[0], "{}", &r); /* forwarded to the strategy it wraps */
  CHECK(lead.n_observed == 1 && lead.last_observed == 5);
  free(fill); /* not fill->free: the fake lead is not heap memory */
  tune_source_chain_free(&c);
  tune_code_set_free(&codes);
}

int main(void) {
  warm_then_strategy();
  observe_routing();
  code_fill();
  printf("proposal_source_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
