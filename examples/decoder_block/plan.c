/* plan.c: a step's family, selection, arguments and launch through libtunert (see plan.h). */
#include "plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void append(char *buf, size_t n, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= n) return;
  if (len) {
    snprintf(buf + len, n - len, "; ");
    len = strlen(buf);
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, n - len, fmt, ap);
  va_end(ap);
}

/* The index of value in an "enum(a|b|c)" dim type, or -1. */
static int enum_index(const char *type, const char *value) {
  if (strncmp(type, "enum(", 5)) return -1;
  const char *s = type + 5;
  for (int i = 0; *s && *s != ')'; ++i) {
    size_t k = strcspn(s, "|)");
    if (strlen(value) == k && !strncmp(s, value, k)) return i;
    s += k + (s[k] == '|');
  }
  return -1;
}

static const char *kind_of(const tunert_selection_info *si) {
  return si->kind ? si->kind : si->exact ? "tuned" : "nearest";
}

/* Ranking of a selection across families: lower is better. */
static int kind_rank(const tunert_selection_info *si) {
  const char *k = kind_of(si);
  if (!strcmp(k, "tuned") || !strcmp(k, "vendor")) return 0;
  return !strcmp(k, "nearest") ? 1 : 2;
}

static int better(const tunert_selection_info *a, const tunert_selection_info *b) {
  if (kind_rank(a) != kind_rank(b)) return kind_rank(a) < kind_rank(b);
  if (a->distance != b->distance) return a->distance < b->distance;
  return a->measured_ns < b->measured_ns;
}

/* The problem's dims in the family's order; 0, or -1 with the reason appended to why. */
static int family_dims(const tunert_family_info *fi, const plan_req *req, int64_t *dims, char *why, size_t why_n) {
  if (fi->n_dims > 32) { append(why, why_n, "%s: too many dims", fi->name); return -1; }
  for (int d = 0; d < fi->n_dims; ++d) {
    const plan_dim *pd = NULL;
    for (int k = 0; k < req->n_dims && !pd; ++k)
      if (!strcmp(req->dims[k].name, fi->dims[d])) pd = &req->dims[k];
    if (!pd) { append(why, why_n, "%s has a dim '%s' this program does not know", fi->name, fi->dims[d]); return -1; }
    dims[d] = pd->v;
    if (pd->enum_value && (dims[d] = enum_index(fi->dim_types[d], pd->enum_value)) < 0) {
      append(why, why_n, "%s: '%s' is no value of its dim %s (%s)", fi->name, pd->enum_value, pd->name, fi->dim_types[d]);
      return -1;
    }
  }
  return 0;
}

int plan_make(tunert_ctx *const *ctxs, int n_ctx, const plan_req *req, plan *p) {
  memset(p, 0, sizeof *p);
  p->si.struct_size = sizeof p->si;
  for (int f = 0; f < req->n_families; ++f) {
    const char *fam = req->families[f];
    tunert_family_info fi = {.struct_size = sizeof fi};
    tunert_ctx *ctx = NULL;
    for (int i = 0; i < n_ctx && !ctx; ++i)
      if (!tunert_family_info_get(ctxs[i], fam, &fi, NULL)) ctx = ctxs[i];
    if (!ctx) { append(p->why_not, sizeof p->why_not, "no family '%s' in the bundle", fam); continue; }
    int64_t dims[32];
    if (family_dims(&fi, req, dims, p->why_not, sizeof p->why_not)) continue;
    const tunert_selection *sel;
    tunert_err e;
    if (tunert_select(ctx, fam, dims, fi.n_dims, &sel, &e)) {
      append(p->why_not, sizeof p->why_not, "%s: %.600s", fam, e.msg);
      continue;
    }
    tunert_selection_info si = {.struct_size = sizeof si};
    tunert_selection_info_get(sel, &si);
    if (!strcmp(kind_of(&si), "vendor") && si.vendor && strcmp(si.vendor, "cublaslt")) {
      append(p->why_not, sizeof p->why_not, "%s: a vendor entry (%s) that libtunert does not run, and this program has no own "
             "path for it (bundle with --no-vendor)", fam, si.vendor);
      continue;
    }
    if (p->ok && !better(&si, &p->si)) continue;
    p->ok = 1;
    snprintf(p->family, sizeof p->family, "%s", fam);
    p->ctx = ctx;
    p->sel = sel;
    p->si = si;
  }
  if (!p->ok) return 0;
  const tunert_selection_info *si = &p->si;
  const char *kind = kind_of(si);
  if (!strcmp(kind, "tuned"))
    snprintf(p->how, sizeof p->how, "tuned for this problem (%s)", si->tuned_problem);
  else if (!strcmp(kind, "vendor"))
    snprintf(p->how, sizeof p->how, "vendor entry (%s measured faster on %s)", si->vendor, si->tuned_problem);
  else if (!strcmp(kind, "nearest"))
    snprintf(p->how, sizeof p->how, "nearest tuned problem %s (distance %.2f)", si->tuned_problem, si->distance);
  else
    snprintf(p->how, sizeof p->how, "the family's fallback variant (checked on %s)", si->tuned_problem);
  for (int a = 0; a < si->n_args; ++a)
    if (si->args[a].role == TUNERT_ROLE_SCRATCH && si->args[a].bytes > p->scratch_bytes) p->scratch_bytes = si->args[a].bytes;
  return 1;
}

static int64_t dtype_bytes(const char *dt) { return !strcmp(dt, "bf16") || !strcmp(dt, "f16") ? 2 : !strcmp(dt, "f64") || !strcmp(dt, "i64") ? 8 : 4; }

static const plan_buf *find_buf(const plan_buf *bufs, int n, const char *name) {
  for (int k = 0; k < n; ++k)
    if (!strcmp(bufs[k].name, name)) return &bufs[k];
  return NULL;
}

int plan_bind(plan *p, const plan_buf *bufs, int n, char *why, size_t why_n) {
  if (p->si.n_args > PLAN_MAX_ARGS) { snprintf(why, why_n, "%s: more than %d arguments", p->family, PLAN_MAX_ARGS); return -1; }
  for (int a = 0; a < p->si.n_args; ++a) {
    const tunert_arg_info *x = &p->si.args[a];
    const plan_buf *b = find_buf(bufs, n, x->name);
    p->args[a] = tunert_arg_auto(); /* scalars: the bundle's value; tensor maps: built by libtunert */
    if (x->role == TUNERT_ROLE_TENSORMAP) continue;
    if (x->role == TUNERT_ROLE_SCALAR) {
      if (b && !b->scalar) { snprintf(why, why_n, "%s: '%s' is a scalar, the program gives a tensor", p->family, x->name); return -1; }
      if (b) p->args[a] = tunert_arg_int(b->value);
      else if (!x->has_value) { snprintf(why, why_n, "%s: scalar '%s' has no value in the bundle", p->family, x->name); return -1; }
      continue;
    }
    if (!b || b->scalar) { snprintf(why, why_n, "%s: argument '%s' is not a tensor this program binds", p->family, x->name); return -1; }
    if (strcmp(b->dtype, x->dtype)) {
      snprintf(why, why_n, "%s: argument '%s' is %s in the bundle, %s here", p->family, x->name, x->dtype, b->dtype);
      return -1;
    }
    if (x->role == TUNERT_ROLE_SCRATCH) {
      if (b->numel * dtype_bytes(b->dtype) < x->bytes) {
        snprintf(why, why_n, "%s: scratch '%s' needs %lld bytes, the program's buffer has %lld", p->family, x->name,
                 (long long)x->bytes, (long long)(b->numel * dtype_bytes(b->dtype)));
        return -1;
      }
    } else if (b->view ? b->numel < x->numel : b->numel != x->numel) {
      snprintf(why, why_n, "%s: argument '%s' has %lld elements for this problem, the program's %s %lld", p->family, x->name,
               (long long)x->numel, b->view ? "view spans" : "buffer has", (long long)b->numel);
      return -1;
    }
    p->args[a] = tunert_arg_devptr(b->ptr);
  }
  return 0;
}

double plan_scalar(const plan *p, const char *name, double dflt) {
  for (int a = 0; p->ok && a < p->si.n_args; ++a) {
    if (strcmp(p->si.args[a].name, name)) continue;
    if (p->args[a].kind == TUNERT_ARG_INT) return (double)p->args[a].v.i;
    return p->si.args[a].has_value ? p->si.args[a].value : dflt;
  }
  return dflt;
}

int plan_param_is(const plan *p, const char *name, int value) {
  if (!p->ok || !p->si.variant) return 0;
  char key[80];
  snprintf(key, sizeof key, "\"%s\":%d", name, value);
  for (const char *s = strstr(p->si.variant, key); s; s = strstr(s + 1, key)) {
    char next = s[strlen(key)];
    if (next == ',' || next == '}') return 1;
  }
  return 0;
}

int plan_map_follows(const plan *p, const char *name) {
  if (!p->ok || !p->si.tensormap_row_strides) return 0; /* a bundle before format 1.6: dense rows */
  for (int a = 0; a < p->si.n_args; ++a) {
    int s = p->si.tensormap_row_strides[a];
    if (s >= 0 && s < p->si.n_args && !strcmp(p->si.args[s].name, name)) return 1;
  }
  return 0;
}

int plan_launch(const plan *p, void *stream, tunert_err *err) {
  return tunert_launch(p->ctx, p->sel, stream, p->args, p->si.n_args, err);
}
