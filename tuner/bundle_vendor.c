/* bundle_vendor.c: vendor entries (docs/runtime.md "Selection policy"). A tuned problem where a
 * peer (tune compare: cuBLAS, cuDNN or flash SDPA, eager torch) measured faster on the entry's
 * GPU model, in the timing mode of the entry's result, becomes kind 'vendor': libtunert runs cuBLAS
 * peers' entries through cuBLASLt and tells the caller to use its own path for the others, so
 * a deployment is never slower than what it had. The entry keeps its variant: a reader that
 * does not know vendor entries launches that kernel, a correct answer.
 * Faster means: the latest comparison's verdict where one timed the problem ("slower": every
 * round's peer/tune ratio below 1, tuner/compare_report.h), else the peer's best median below
 * the entry's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bundle_int.h"
#include "compare_report.h"

#define VENDOR_MAX_ROUNDS TUNE_CMP_MAX_ROUNDS
#define VENDOR_MAX_SIDES TUNE_CMP_MAX_SIDES

/* The library libtunert names for a peer: the one it runs, or the caller's own path. */
static const char *vendor_of(const char *peer) {
  if (!strcmp(peer, "cublas")) return "cublaslt";
  if (!strcmp(peer, "flash-sdpa")) return "sdpa";
  return peer; /* "cudnn-sdpa", "torch" */
}

typedef struct vkey {
  const char *recipe, *problem_hash, *device, *timing;
} vkey;

static int key_is(const vkey *k, const char *recipe, const char *problem_hash, const char *device, const char *timing) {
  return !strcmp(k->recipe, recipe) && !strcmp(k->problem_hash, problem_hash) && !strcmp(k->device, device) && !strcmp(k->timing, timing);
}

/* The fastest peer timing of k (name: NULL any peer), NULL when none. */
static const db_bundle_peer *best_peer(const db_bundle_peers *ps, const vkey *k, const char *name) {
  const db_bundle_peer *best = NULL;
  for (int i = 0; i < ps->n; ++i) {
    const db_bundle_peer *p = &ps->a[i];
    if (!key_is(k, p->recipe, p->problem_hash, p->device, p->timing) || (name && strcmp(p->peer, name)) || !(p->median_ns > 0)) continue;
    if (!best || p->median_ns < best->median_ns) best = p;
  }
  return best;
}

typedef struct verdict {
  tune_ratio r;                  /* peer / tune over the rounds; r.n 0: no comparison */
  const char *peer;              /* the comparison's fastest peer */
  double peer_ns;                /* its median over the rounds [ns] */
  int64_t comparison_id;
} verdict;

/* The latest comparison's rounds of k (the first database's that has them): each side's fastest
 * candidate over the rounds and their ratio round by round, as tune compare reports it. */
static void comparison_verdict(const db_bundle_peers *ps, const vkey *k, verdict *v) {
  tune_cmp_side sides[2][VENDOR_MAX_SIDES];
  const char *names[2][VENDOR_MAX_SIDES]; /* the rows' labels, which outlive this call */
  int n[2] = {0, 0}, rounds = 0, db = -1;
  memset(v, 0, sizeof *v);
  for (int i = 0; i < ps->n_rounds; ++i) {
    const db_bundle_round *r = &ps->rounds[i];
    if (!key_is(k, r->recipe, r->problem_hash, r->device, r->timing) || r->round < 1 || r->round > VENDOR_MAX_ROUNDS) continue;
    if (db < 0) db = r->db_index, v->comparison_id = r->comparison_id;
    if (r->db_index != db) continue;
    tune_cmp_side *arr = sides[r->peer != 0];
    int *cnt = &n[r->peer != 0], j = 0;
    while (j < *cnt && strcmp(arr[j].label, r->label)) ++j;
    if (j == *cnt) {
      if (*cnt == VENDOR_MAX_SIDES) continue;
      memset(&arr[j], 0, sizeof arr[j]);
      snprintf(arr[j].label, sizeof arr[j].label, "%s", r->label);
      names[r->peer != 0][j] = r->label;
      ++*cnt;
    }
    arr[j].ns[r->round - 1] = r->median_ns;
    if (r->round > rounds) rounds = r->round;
  }
  const tune_cmp_side *t = tune_cmp_best(sides[0], n[0], rounds), *p = tune_cmp_best(sides[1], n[1], rounds);
  if (!t || !p) return;
  v->r = tune_ratio_of(p->ns, t->ns, rounds);
  v->peer = names[1][p - sides[1]];
  v->peer_ns = tune_median(p->ns, rounds);
}

static void fmt_us(double ns, char *b, size_t n) { snprintf(b, n, "%.2f us", ns / 1e3); }

/* be becomes a vendor entry when a peer measured faster at its problem. */
static void weigh_entry(bstate *s, const db_bundle_peers *ps, bentry *be) {
  const db_bundle_best *b = be->best;
  vkey k = {s->fam[be->family].name, b->problem_hash, s->models[be->model].name, b->timing};
  const db_bundle_peer *any = best_peer(ps, &k, NULL);
  if (!any) return;
  be->weighed = 1;
  verdict v;
  comparison_verdict(ps, &k, &v);
  char tt[32], pt[32];
  fmt_us(b->median_ns, tt, sizeof tt);
  if (v.r.n) {
    if (strcmp(tune_ratio_verdict(&v.r), "slower")) return;
    const db_bundle_peer *p = best_peer(ps, &k, v.peer);
    be->vendor_ns = p ? p->median_ns : v.peer_ns;
    snprintf(be->vendor, sizeof be->vendor, "%s", vendor_of(v.peer));
    snprintf(be->vendor_why, sizeof be->vendor_why, "%s %s: comparison %lld, peer/tune ratio %.3f (%.3f-%.3f, %d rounds): tune slower",
             v.peer, b->timing, (long long)v.comparison_id, v.r.median, v.r.lo, v.r.hi, v.r.n);
  } else {
    if (!(any->median_ns < b->median_ns)) return;
    be->vendor_ns = any->median_ns;
    snprintf(be->vendor, sizeof be->vendor, "%s", vendor_of(any->peer));
    fmt_us(any->median_ns, pt, sizeof pt);
    snprintf(be->vendor_why, sizeof be->vendor_why, "%s %s median %s, tune's %s (no comparison rounds)", any->peer, b->timing, pt, tt);
  }
  be->kind = BUNDLE_VENDOR;
}

int bundle_vendor_kept(const tune_bundle_opts *o, const char *family) {
  for (int k = 0; k < o->n_no_vendor_for; ++k)
    if (bundle_name_matches(family, o->no_vendor_for[k])) return 1;
  return 0;
}

int bundle_mark_vendors(bstate *s, tune_err *err) {
  db_bundle_peers ps;
  memset(&ps, 0, sizeof ps);
  int rc = TUNE_OK;
  for (int d = 0; d < s->n_dbs && !rc; ++d) rc = db_bundle_peers_add(&ps, s->dbs[d], d, err);
  for (int i = 0; i < s->n_entries && !rc; ++i) {
    bentry *be = &s->ent[i];
    if (be->kind == BUNDLE_TUNED && !bundle_vendor_kept(s->o, s->fam[be->family].name)) weigh_entry(s, &ps, be);
  }
  db_bundle_peers_free(&ps);
  return rc;
}
