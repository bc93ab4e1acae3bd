/* plan.c: a step's family, variant and launches through libtunert (see plan.h). */
#include "plan.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void append(char *buf, size_t n, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, n - len, fmt, ap);
  va_end(ap);
}

/* The value names of an "enum(a|b|c)" dim type; returns their count. */
static int enum_values(const char *type, char vals[][16], int max) {
  if (strncmp(type, "enum(", 5)) return 0;
  int n = 0;
  const char *s = type + 5;
  while (*s && *s != ')' && n < max) {
    size_t k = strcspn(s, "|)");
    snprintf(vals[n++], 16, "%.*s", (int)k, s);
    s += k + (s[k] == '|');
  }
  return n;
}

typedef struct cand {
  int set;
  char family[64];
  tunert_ctx *ctx;
  const tunert_selection *sel;
  int chunks;
  int64_t chunk_rows;
  char layout[16];
  double est_ns;
  char tuned[128];
} cand;

/* Keep c in *best when it is an exact candidate faster in total than *best. */
static void consider(cand *best, const cand *c) {
  if (!best->set || c->est_ns < best->est_ns) *best = *c;
}

int plan_make(tunert_ctx *const *ctxs, int n_ctx, const plan_req *req, plan *p) {
  memset(p, 0, sizeof *p);
  cand best = {0}, nearest = {0};
  double nearest_dist = INFINITY;
  for (int f = 0; f < req->n_families; ++f) {
    const char *fam = req->families[f];
    tunert_family_info fi = {.struct_size = sizeof fi};
    tunert_ctx *ctx = NULL;
    for (int i = 0; i < n_ctx && !ctx; ++i)
      if (!tunert_family_info_get(ctxs[i], fam, &fi, NULL)) ctx = ctxs[i];
    if (!ctx) { append(p->why_not, sizeof p->why_not, "%sno family '%s' in the bundle", p->why_not[0] ? "; " : "", fam); continue; }
    int64_t dims[32];
    int row = -1, lay = -1, unknown = 0;
    if (fi.n_dims > 32) { append(p->why_not, sizeof p->why_not, "%s%s: too many dims", p->why_not[0] ? "; " : "", fam); continue; }
    for (int d = 0; d < fi.n_dims; ++d) {
      int found = 0;
      if (req->layout_dim && !strcmp(fi.dims[d], req->layout_dim)) { lay = d; found = 1; dims[d] = 0; }
      for (int k = 0; k < req->n_dims && !found; ++k)
        if (!strcmp(req->dims[k].name, fi.dims[d])) { dims[d] = req->dims[k].v; found = 1; }
      if (req->row_dim && !strcmp(fi.dims[d], req->row_dim)) row = d;
      if (!found) {
        append(p->why_not, sizeof p->why_not, "%s%s has a dim '%s' this program does not know", p->why_not[0] ? "; " : "", fam, fi.dims[d]);
        unknown = 1;
      }
    }
    if (unknown) continue;
    char lay_vals[8][16];
    int n_lay = lay >= 0 ? enum_values(fi.dim_types[lay], lay_vals, 8) : 1;
    for (int li = 0; li < n_lay; ++li) {
      if (lay >= 0) dims[lay] = li;
      const char *lname = lay >= 0 ? lay_vals[li] : "";
      /* the problem itself */
      const tunert_selection *sel;
      tunert_err e;
      if (!tunert_select(ctx, fam, dims, fi.n_dims, &sel, &e)) {
        tunert_selection_info si = {.struct_size = sizeof si};
        tunert_selection_info_get(sel, &si);
        cand c = {1, "", ctx, sel, 1, row >= 0 ? dims[row] : 0, "", si.measured_ns, ""};
        snprintf(c.family, sizeof c.family, "%s", fam);
        snprintf(c.layout, sizeof c.layout, "%.15s", lname);
        snprintf(c.tuned, sizeof c.tuned, "%s", si.tuned_problem);
        if (si.exact) consider(&best, &c);
        else if (si.distance < nearest_dist) { nearest = c; nearest_dist = si.distance; }
      } else {
        append(p->why_not, sizeof p->why_not, "%s%s%s%s: %.400s", p->why_not[0] ? "; " : "", fam, lname[0] ? " " : "", lname, e.msg);
      }
      /* row chunks that are tuned problems */
      for (int pi = 0; row >= 0; ++pi) {
        const char *pname;
        const int64_t *pd;
        if (tunert_family_problem(ctx, fam, pi, &pname, &pd, NULL)) break;
        int same = pd[row] > 0 && pd[row] < dims[row] && dims[row] % pd[row] == 0;
        for (int d = 0; d < fi.n_dims && same; ++d) same = d == row || pd[d] == dims[d];
        if (!same || tunert_select(ctx, fam, pd, fi.n_dims, &sel, NULL)) continue;
        tunert_selection_info si = {.struct_size = sizeof si};
        tunert_selection_info_get(sel, &si);
        int chunks = (int)(dims[row] / pd[row]);
        cand c = {1, "", ctx, sel, chunks, pd[row], "", chunks * si.measured_ns, ""};
        snprintf(c.family, sizeof c.family, "%s", fam);
        snprintf(c.layout, sizeof c.layout, "%.15s", lname);
        snprintf(c.tuned, sizeof c.tuned, "%s", pname);
        consider(&best, &c);
      }
    }
  }
  cand *c = best.set ? &best : nearest.set ? &nearest : NULL;
  if (!c) return 0;
  p->ok = 1;
  p->exact = best.set;
  snprintf(p->family, sizeof p->family, "%s", c->family);
  p->ctx = c->ctx;
  p->sel = c->sel;
  p->si.struct_size = sizeof p->si;
  tunert_selection_info_get(c->sel, &p->si);
  p->chunks = c->chunks;
  p->chunk_rows = c->chunk_rows;
  snprintf(p->layout, sizeof p->layout, "%s", c->layout);
  p->est_ns = best.set ? c->est_ns : 0;
  if (!best.set) {
    if (snprintf(p->how, sizeof p->how, "nearest tuned problem %s (distance %.3f): %s", c->tuned, nearest_dist,
                 p->si.reason) >= (int)sizeof p->how)
      memcpy(p->how + sizeof p->how - 4, "...", 4); /* a long reason is cut: say so */
  } else if (c->chunks == 1)
    snprintf(p->how, sizeof p->how, "tuned for this problem (%s)", c->tuned);
  else
    snprintf(p->how, sizeof p->how, "%d launches of the tuned problem %s (%s = %lld rows each; the whole problem was not tuned)",
             c->chunks, c->tuned, req->row_dim, (long long)c->chunk_rows);
  if (c->layout[0]) append(p->how, sizeof p->how, "; %s = %s", req->layout_dim, c->layout);
  for (int a = 0; a < p->si.n_args; ++a)
    if (p->si.args[a].role == TUNERT_ROLE_SCRATCH && p->si.args[a].bytes > p->scratch_bytes) p->scratch_bytes = p->si.args[a].bytes;
  return 1;
}

int plan_bind(plan *p, const plan_buf *bufs, int n, char *why, size_t why_n) {
  if (p->si.n_args > PLAN_MAX_ARGS) { snprintf(why, why_n, "%s: more than %d arguments", p->family, PLAN_MAX_ARGS); return -1; }
  for (int a = 0; a < p->si.n_args; ++a) {
    const tunert_arg_info *x = &p->si.args[a];
    p->chunk_stride[a] = 0;
    /* scalars: the bundle's value; tensor maps: built by libtunert from the tensor they map */
    if (x->role == TUNERT_ROLE_SCALAR || x->role == TUNERT_ROLE_TENSORMAP) { p->args[a] = tunert_arg_auto(); continue; }
    const plan_buf *b = NULL;
    for (int k = 0; k < n && !b; ++k)
      if (!strcmp(bufs[k].name, x->name)) b = &bufs[k];
    if (!b) { snprintf(why, why_n, "%s: argument '%s' is not one this program binds", p->family, x->name); return -1; }
    if (strcmp(b->dtype, x->dtype)) {
      snprintf(why, why_n, "%s: argument '%s' is %s in the bundle, %s here", p->family, x->name, x->dtype, b->dtype);
      return -1;
    }
    int64_t want = x->role == TUNERT_ROLE_SCRATCH ? 0 : b->rows ? x->numel * p->chunks : x->numel;
    if (x->role != TUNERT_ROLE_SCRATCH && b->numel != want) {
      snprintf(why, why_n, "%s: argument '%s' has %lld elements for this problem, the program's buffer %lld", p->family, x->name,
               (long long)want, (long long)b->numel);
      return -1;
    }
    int64_t have = b->numel * (strcmp(b->dtype, "bf16") ? 4 : 2);
    if (x->role == TUNERT_ROLE_SCRATCH && have < x->bytes) {
      snprintf(why, why_n, "%s: scratch '%s' needs %lld bytes, the program's buffer has %lld", p->family, x->name,
               (long long)x->bytes, (long long)have);
      return -1;
    }
    p->args[a] = tunert_arg_devptr(b->ptr);
    if (b->rows) p->chunk_stride[a] = x->bytes;
  }
  return 0;
}

int plan_launch(const plan *p, void *stream, tunert_err *err) {
  tunert_arg args[PLAN_MAX_ARGS];
  memcpy(args, p->args, sizeof args[0] * (size_t)p->si.n_args);
  for (int c = 0; c < p->chunks; ++c) {
    for (int a = 0; a < p->si.n_args; ++a)
      if (p->chunk_stride[a]) args[a].v.ptr = p->args[a].v.ptr + (uint64_t)(c * p->chunk_stride[a]);
    int rc = tunert_launch(p->ctx, p->sel, stream, args, p->si.n_args, err);
    if (rc) return rc;
  }
  return TUNERT_OK;
}
