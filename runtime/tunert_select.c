/* tunert_select.c: the selection policy (per GPU model tier: exact, else nearest portable
 * variant whose requirements hold; then the fallback) and the lock-free selection cache. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tunert_cluster.h"
#include "tunert_int.h"
#include "tunert_pack.h"

static uint64_t hash_dims(const int64_t *d, int n) {
  return tunert_fnv1a64(d, (unsigned long long)n * sizeof *d);
}

/* Lock-free lookup in the published table. */
static tunert_selection *cache_find(rt_family *f, const int64_t *dims, int n, uint64_t h) {
  sel_table *t = atomic_load_explicit(&f->cache, memory_order_acquire);
  size_t mask = t->cap - 1;
  for (size_t i = (size_t)h & mask, probes = 0; probes < t->cap; i = (i + 1) & mask, ++probes) {
    tunert_selection *s = atomic_load_explicit(&t->slot[i], memory_order_acquire);
    if (!s) return NULL;
    if (s->hash == h && !memcmp(s->dims, dims, (size_t)n * sizeof *dims)) return s;
  }
  return NULL;
}

/* Insert under ctx->lock; grows (publishing a new table) past half full. */
static int cache_insert(tunert_ctx *ctx, rt_family *f, tunert_selection *s) {
  sel_table *t = atomic_load_explicit(&f->cache, memory_order_relaxed);
  if ((f->cache_count + 1) * 2 > t->cap) {
    size_t cap = t->cap * 2;
    sel_table *nt = rt_alloc(&ctx->arena, sizeof(sel_table) + cap * sizeof(tunert_selection *));
    if (!nt) return -1;
    nt->cap = cap;
    for (size_t i = 0; i < t->cap; ++i) {
      tunert_selection *o = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
      if (!o) continue;
      size_t j = (size_t)o->hash & (cap - 1);
      while (atomic_load_explicit(&nt->slot[j], memory_order_relaxed)) j = (j + 1) & (cap - 1);
      atomic_store_explicit(&nt->slot[j], o, memory_order_relaxed);
    }
    atomic_store_explicit(&f->cache, nt, memory_order_release); /* the old table stays readable until close */
    t = nt;
  }
  size_t j = (size_t)s->hash & (t->cap - 1);
  while (atomic_load_explicit(&t->slot[j], memory_order_relaxed)) j = (j + 1) & (t->cap - 1);
  atomic_store_explicit(&t->slot[j], s, memory_order_release);
  f->cache_count++;
  return 0;
}

/* What one entry gives for a problem. */
typedef struct computed {
  unsigned grid[TUNERT_MAX_LAUNCHES][3], block[TUNERT_MAX_LAUNCHES][3], shared[TUNERT_MAX_LAUNCHES];
  unsigned cluster[TUNERT_MAX_LAUNCHES][3];
  int rank[TUNERT_MAX_ARGS];
  int64_t shape[TUNERT_MAX_ARGS][TUNERT_MAX_RANK];
  int64_t numel[TUNERT_MAX_ARGS];
  int has_value[TUNERT_MAX_ARGS];
  double value[TUNERT_MAX_ARGS];
  rt_tmap_spec tm[TUNERT_MAX_TMAPS];
} computed;

static void dims_text(const rt_family *f, const int64_t *dims, char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "{");
  for (int d = 0; d < f->n_dims && len < n; ++d)
    len += (size_t)snprintf(buf + len, n - len, "%s%s=%lld", d ? ", " : "", f->dims[d], (long long)dims[d]);
  if (len < n) snprintf(buf + len, n - len, "}");
}

static int eval_int(const tunert_expr *e, int item, const tunert_xval *env, int64_t *out, char *why, size_t n) {
  tunert_xval v;
  if (tunert_expr_eval(e, item, env, &v, why, n)) return -1;
  if (tunert_xval_to_i64(&v, out)) {
    char b[64];
    tunert_xval_format(&v, b, sizeof b);
    snprintf(why, n, "'%s' item %d is %s, not an integer", tunert_expr_text(e), item + 1, b);
    return -1;
  }
  return 0;
}

/* Check entry e for dims; fill c. Returns 0 when it may run the problem, else
 * -1 with the reason in why. */
static int entry_check(const tunert_ctx *ctx, const rt_family *f, const rt_entry *e, const int64_t *dims, int exact,
                       computed *c, char *why, size_t n) {
  const rt_variant *v = e->v;
  if (!exact && !e->portable) { snprintf(why, n, "exact-only (%s)", e->exact_why); return -1; }
  if (ctx->dev_known && v->chosen < 0) { snprintf(why, n, "%s", v->binary_desc); return -1; }
  tunert_xval env[TUNERT_MAX_DIMS + TUNERT_MAX_PARAMS + 1 + TUNERT_MAX_ARGS];
  for (int d = 0; d < f->n_dims; ++d) env[d] = f->dim_bool[d] ? tunert_xbool(dims[d] != 0) : tunert_xint(dims[d]);
  for (int k = 0; k < f->n_params; ++k) env[f->n_dims + k] = v->params[k];
  env[f->n_dims + f->n_params] = tunert_xint(rt_sm_count(ctx));
  if (e->requires) {
    for (int i = 0; i < tunert_expr_items(e->requires); ++i) {
      tunert_xval r;
      if (tunert_expr_eval(e->requires, i, env, &r, why, n)) return -1;
      if (r.t == TUNERT_XBOOL && !r.i) {
        /* name the failing item: the list text is "a, b, c" */
        snprintf(why, n, "requirement %d of '%s' is false", i + 1, tunert_expr_text(e->requires));
        return -1;
      }
    }
  }
  if (e->define_exprs) {
    for (int i = 0; i < tunert_expr_items(e->define_exprs); ++i) {
      tunert_xval r;
      if (tunert_expr_eval(e->define_exprs, i, env, &r, why, n)) return -1;
      double want = tunert_xval_to_f64(&e->define_values[i]), got = tunert_xval_to_f64(&r);
      if (got != want) {
        snprintf(why, n, "compiled for define %d of '%s' = %g, this problem needs %g", i + 1,
                 tunert_expr_text(e->define_exprs), want, got);
        return -1;
      }
    }
  }
  for (int l = 0; l < e->n_launches; ++l) {
    for (int k = 0; k < 3; ++k) {
      int64_t g, b;
      if (eval_int(e->grid[l], k, env, &g, why, n) || eval_int(e->block[l], k, env, &b, why, n)) return -1;
      int64_t gmax = k == 0 ? 2147483647 : 65535;
      /* 0: the step has no blocks for this problem and is not launched (as in the tuner) */
      if (g < 0 || g > gmax) { snprintf(why, n, "launch %d: grid[%d] = %lld out of 0..%lld", l, k, (long long)g, (long long)gmax); return -1; }
      if (b < 1 || b > 1024) { snprintf(why, n, "launch %d: block[%d] = %lld out of 1..1024", l, k, (long long)b); return -1; }
      c->grid[l][k] = (unsigned)g;
      c->block[l][k] = (unsigned)b;
    }
    if ((uint64_t)c->block[l][0] * c->block[l][1] * c->block[l][2] > 1024) { snprintf(why, n, "launch %d: block over 1024 threads", l); return -1; }
    int64_t s;
    if (eval_int(e->shared[l], 0, env, &s, why, n)) return -1;
    if (s < 0 || s > 16 * 1024 * 1024) { snprintf(why, n, "launch %d: shared = %lld bytes", l, (long long)s); return -1; }
    c->shared[l] = (unsigned)s;
    /* the cluster: the tuner's rule (tunert_cluster.h), so a geometry it would skip is not selected */
    int64_t cl[3];
    for (int k = 0; k < 3; ++k)
      if (eval_int(e->cluster[l], k, env, &cl[k], why, n)) return -1;
    char cw[200];
    if (tunert_cluster_check(cl, c->grid[l], cw, sizeof cw)) { snprintf(why, n, "launch %d: %s", l, cw); return -1; }
    if ((cl[0] > 1 || cl[1] > 1 || cl[2] > 1) && ctx->dev_known && ctx->dev_major < 9) {
      snprintf(why, n, "launch %d: a thread-block cluster needs sm_90 or newer, the device is %s", l, ctx->dev_arch);
      return -1;
    }
    for (int k = 0; k < 3; ++k) c->cluster[l][k] = (unsigned)cl[k];
  }
  for (int a = 0; a < f->n_args; ++a) {
    c->rank[a] = 0;
    c->numel[a] = 0;
    c->has_value[a] = 0;
    if (e->shape[a]) {
      int r = tunert_expr_items(e->shape[a]);
      int64_t numel = 1;
      for (int k = 0; k < r; ++k) {
        int64_t x;
        if (eval_int(e->shape[a], k, env, &x, why, n)) return -1;
        if (x < 1) { snprintf(why, n, "arg %s: shape entry %d is %lld", f->arg_names[a], k + 1, (long long)x); return -1; }
        c->shape[a][k] = x;
        if (numel > INT64_MAX / x) { snprintf(why, n, "arg %s: too many elements", f->arg_names[a]); return -1; }
        numel *= x;
      }
      if (f->arg_size[a] > 1 && numel > INT64_MAX / f->arg_size[a]) { /* its bytes: a 64-bit size */
        snprintf(why, n, "arg %s: too many bytes", f->arg_names[a]);
        return -1;
      }
      c->rank[a] = r;
      c->numel[a] = numel;
    } else if (e->value[a]) {
      tunert_xval x;
      if (tunert_expr_eval(e->value[a], 0, env, &x, why, n)) return -1;
      c->has_value[a] = 1;
      c->value[a] = tunert_xval_to_f64(&x);
    }
  }
  /* tensor maps: evaluated and checked here, so that a map the driver would refuse rejects the
     entry with the reason (the pointer's alignment is checked at launch); strides that name a
     scalar (the tensor's row stride) take the bundle's value of it here */
  for (int j = 0; j < f->n_names - (f->n_dims + f->n_params + 1); ++j) {
    int a = f->name_arg[j];
    int is_float = f->arg_dtypes[a][0] == 'f' || f->arg_dtypes[a][0] == 'b';
    env[f->n_dims + f->n_params + 1 + j] = is_float ? tunert_xfloat(c->value[a]) : tunert_xint((int64_t)c->value[a]);
  }
  for (int k = 0; k < f->n_tmaps; ++k) {
    const rt_tmap_expr *x = &e->tm[k];
    rt_tmap_spec *m = &c->tm[k];
    const char *nm = f->arg_names[x->arg];
    if (x->ld_arg >= 0 && !c->has_value[x->ld_arg]) {
      snprintf(why, n, "tensor map %s: its strides name %s, which has no value in the bundle", nm, f->arg_names[x->ld_arg]);
      return -1;
    }
    char w[400];
    if (rt_tmap_eval(x, env, x->ld_arg >= 0 ? (int64_t)c->value[x->ld_arg] : -1, 0, m, w, sizeof w)) {
      snprintf(why, n, "tensor map %s: %.400s", nm, w);
      return -1;
    }
    const int t = x->tensor;
    if (rt_tmap_check(m, rt_tmap_view_bytes(c->shape[t], c->rank[t], c->numel[t], f->arg_size[t], m->ld), w, sizeof w)) {
      char d[300];
      rt_tmap_describe(m, d, sizeof d);
      snprintf(why, n, "tensor map %s of %s: %.200s (%.200s)", nm, f->arg_names[t], w, d);
      return -1;
    }
  }
  return 0;
}

static double distance(const rt_family *f, const int64_t *a, const int64_t *b) {
  double s = 0;
  for (int d = 0; d < f->n_dims; ++d) {
    if (a[d] == b[d]) continue;
    if (f->dim_bool[d] || f->dim_enum[d] || a[d] <= 0 || b[d] <= 0) { s += 1; continue; }
    double l = log((double)a[d] / (double)b[d]);
    s += l * l;
  }
  return sqrt(s);
}

static void fmt_ns(double ns, char *b, size_t n) {
  if (ns >= 1e6) snprintf(b, n, "%.3f ms", ns / 1e6);
  else snprintf(b, n, "%.2f us", ns / 1e3);
}

/* The text of item i of an expression list "a, b, (c, d)": top-level commas split items. */
static void list_item_text(const char *list, int item, char *buf, size_t n) {
  int depth = 0, k = 0;
  const char *start = list;
  if (*start == '{') ++start;
  for (const char *c = start;; ++c) {
    if (*c == '(' || *c == '{') ++depth;
    else if ((*c == ')' || *c == '}') && depth) --depth;
    if ((*c == ',' && !depth) || !*c || (*c == '}' && !depth && !c[1])) {
      if (k == item) {
        while (*start == ' ') ++start;
        snprintf(buf, n, "%.*s", (int)(c - start), start);
        return;
      }
      if (!*c) break;
      ++k;
      start = c + 1;
    }
  }
  snprintf(buf, n, "%s", list);
}

/* The family's domain for dims: 0, or TUNERT_ENOVARIANT naming the item that is false. */
static int domain_check(const rt_family *f, const int64_t *dims, tunert_err *err) {
  if (!f->domain) return 0;
  tunert_xval env[TUNERT_MAX_DIMS];
  for (int d = 0; d < f->n_dims; ++d) env[d] = f->dim_bool[d] ? tunert_xbool(dims[d] != 0) : tunert_xint(dims[d]);
  char why[512], dt[512], item[256];
  for (int i = 0; i < tunert_expr_items(f->domain); ++i) {
    tunert_xval r;
    int bad = tunert_expr_eval(f->domain, i, env, &r, why, sizeof why);
    if (!bad && r.t == TUNERT_XBOOL && r.i) continue;
    dims_text(f, dims, dt, sizeof dt);
    list_item_text(tunert_expr_text(f->domain), i, item, sizeof item);
    return rt_fail(err, TUNERT_ENOVARIANT, "outside the domain of %s: %s (%s for %s)", f->name, item,
                   bad ? why : "false", dt);
  }
  return 0;
}

/* The class of an entry for a problem, in selection order. */
enum { CLASS_EXACT = 0, CLASS_NEAREST = 1, CLASS_FALLBACK = 2 };

static const char *kind_name(const rt_entry *e, int cls) {
  return cls == CLASS_FALLBACK ? "fallback" : cls == CLASS_NEAREST ? "nearest" : e->kind == RT_VENDOR ? "vendor" : "tuned";
}

/* Judge entry e for dims: its class, distance, and whether it may serve (0) or why not (-1). */
static int judge(const tunert_ctx *ctx, const rt_family *f, const rt_entry *e, const int64_t *dims, int *cls,
                 double *dist, computed *c, char *why, size_t n) {
  int same = e->kind != RT_FALLBACK && !memcmp(e->dims, dims, (size_t)f->n_dims * sizeof *dims);
  *cls = e->kind == RT_FALLBACK ? CLASS_FALLBACK : same ? CLASS_EXACT : CLASS_NEAREST;
  *dist = *cls == CLASS_NEAREST ? distance(f, dims, e->dims) : 0;
  if (*cls != CLASS_EXACT && (ctx->flags & TUNERT_OPEN_EXACT_ONLY)) { snprintf(why, n, "exact matches only (TUNERT_OPEN_EXACT_ONLY)"); return -1; }
  return entry_check(ctx, f, e, dims, same, c, why, n);
}

/* a before b in selection order? (fallback last; then the GPU model's tier, class, distance, measured
 * time, bundle order) */
static int ranks_before(const rt_family *f, int a, int cls_a, double dist_a, int b, int cls_b, double dist_b) {
  int fb_a = cls_a == CLASS_FALLBACK, fb_b = cls_b == CLASS_FALLBACK;
  if (fb_a != fb_b) return fb_b;
  if (f->entries[a].tier != f->entries[b].tier) return f->entries[a].tier < f->entries[b].tier;
  if (cls_a != cls_b) return cls_a < cls_b;
  if (dist_a != dist_b) return dist_a < dist_b;
  if (f->entries[a].median_ns != f->entries[b].median_ns) return f->entries[a].median_ns < f->entries[b].median_ns;
  return a < b;
}

/* Compute a selection; on success fills *best, its class, distance, c and reason. */
static int choose(tunert_ctx *ctx, rt_family *f, const int64_t *dims, int *best_i, int *cls_out, double *dist_out,
                  computed *c, char *reason, size_t reason_n, tunert_err *err) {
  computed tmp;
  char why[512];
  char rejected[2048] = "";
  size_t rlen = 0;
  int n_rejected = 0, n_exact_only = 0, first_exact_only = 0, exact_rejected = -1, exact_ok = -1;
  int best = -1, best_cls = 0;
  double best_dist = INFINITY;
  if (domain_check(f, dims, err)) return TUNERT_ENOVARIANT;
  for (int i = 0; i < f->n_entries; ++i) {
    rt_entry *e = &f->entries[i];
    int cls;
    double dist;
    if (judge(ctx, f, e, dims, &cls, &dist, &tmp, why, sizeof why)) {
      if (cls != CLASS_EXACT && (ctx->flags & TUNERT_OPEN_EXACT_ONLY)) continue;
      if (cls != CLASS_EXACT && !e->portable) { if (!n_exact_only++) first_exact_only = i; continue; }
      ++n_rejected;
      if (cls == CLASS_EXACT && exact_rejected < 0) exact_rejected = i;
      if (rlen < sizeof rejected)
        rlen += (size_t)snprintf(rejected + rlen, sizeof rejected - rlen, "%s%s%s: %s", n_rejected > 1 ? "; " : "",
                                 e->kind == RT_FALLBACK ? "fallback for " : "", e->problem_name, why);
      continue;
    }
    if (cls == CLASS_EXACT && exact_ok < 0) exact_ok = i;
    if (best < 0 || ranks_before(f, i, cls, dist, best, best_cls, best_dist)) {
      best = i;
      best_cls = cls;
      best_dist = dist;
      *c = tmp;
    }
  }
  char dt[512];
  dims_text(f, dims, dt, sizeof dt);
  if (best < 0) {
    char eo[700] = "";
    if (n_exact_only) snprintf(eo, sizeof eo, "%d usable only for their own tuned problem (%s)", n_exact_only, f->entries[first_exact_only].exact_why);
    return rt_fail(err, TUNERT_ENOVARIANT, "%s: no variant for %s%s among %d entr%s: %s%s%s%s", f->name, dt,
                   (ctx->flags & TUNERT_OPEN_EXACT_ONLY) ? " (exact matches only: TUNERT_OPEN_EXACT_ONLY)" : "",
                   f->n_entries, f->n_entries == 1 ? "y" : "ies", eo, n_exact_only && n_rejected ? "; " : "",
                   n_rejected ? "rejected: " : "", n_rejected ? rejected : "");
  }
  rt_entry *e = &f->entries[best];
  char t[32], untuned[320], model[600];
  fmt_ns(e->median_ns, t, sizeof t);
  rt_model_note(ctx, e, model, sizeof model);
  /* a tuned problem whose own entry cannot serve here (no binary for the device, say) */
  if (exact_rejected >= 0)
    snprintf(untuned, sizeof untuned, "is tuned problem %s, but its entry cannot serve it here (rejected below)",
             f->entries[exact_rejected].problem_name);
  else if (exact_ok >= 0) /* tuned on a GPU model whose entries rank after the one chosen */
    snprintf(untuned, sizeof untuned, "is tuned problem %s on %.80s, whose entries rank after those of this GPU's model",
             f->entries[exact_ok].problem_name, f->entries[exact_ok].device_name);
  else snprintf(untuned, sizeof untuned, "is not a tuned problem");
  if (best_cls == CLASS_EXACT && e->kind == RT_VENDOR) {
    char vt[32];
    fmt_ns(e->vendor_ns, vt, sizeof vt);
    snprintf(reason, reason_n, "vendor: %s is tuned problem %s, where %s (%s) measured faster than the fastest verified variant "
             "(%s on %s): call %s%s", dt, e->problem_name, e->vendor, vt, t, e->device_name, e->vendor, model);
  } else if (best_cls == CLASS_EXACT)
    snprintf(reason, reason_n, "exact: %s is tuned problem %s; its fastest verified variant (%s on %s)%s%s%s",
             dt, e->problem_name, t, e->device_name, model, n_rejected ? "; rejected: " : "", n_rejected ? rejected : "");
  else if (best_cls == CLASS_NEAREST)
    snprintf(reason, reason_n,
             "nearest: %s %s; chose the variant tuned for %s %s (log-distance %.3f, %s there on %s), "
             "whose requirements and defines hold here%s; %d exact-only entr%s skipped%s%s",
             dt, untuned, e->problem_name, e->dims_json, best_dist, t, e->device_name, model, n_exact_only, n_exact_only == 1 ? "y" : "ies",
             n_rejected ? "; rejected: " : "", n_rejected ? rejected : "");
  else
    snprintf(reason, reason_n,
             "fallback: %s %s, and no tuned entry whose requirements hold serves it; chose the family's generic variant "
             "(verified at bundle time on %s); %d exact-only entr%s skipped%s%s", dt, untuned, e->problem_name, n_exact_only, n_exact_only == 1 ? "y" : "ies",
             n_rejected ? "; rejected: " : "", n_rejected ? rejected : "");
  *best_i = best;
  *cls_out = best_cls;
  *dist_out = best_cls == CLASS_NEAREST ? best_dist : 0;
  return TUNERT_OK;
}

/* ---- the untuned-shape log (TUNERT_LOG_UNTUNED) -------------------------------------------- */

#define RT_LOGGED_MAX 4096 /* distinct problems logged per context; later ones are not logged */

/* One JSON line for a problem that had no exact tuned entry, once per distinct problem and
 * context; called on the slow path only. A failed write is ignored: logging never fails a select. */
static void log_untuned(tunert_ctx *ctx, const rt_family *f, const int64_t *dims, uint64_t h, const char *served_by) {
  if (!ctx->log_path) return;
  uint64_t key = h ^ ((uint64_t)(f->index + 1) * 0x9e3779b97f4a7c15ull);
  if (!key) key = 1;
  pthread_mutex_lock(&ctx->lock);
  if (!ctx->logged) ctx->logged = rt_alloc(&ctx->arena, sizeof(uint64_t) * RT_LOGGED_MAX);
  int fresh = 0;
  if (ctx->logged && ctx->n_logged < RT_LOGGED_MAX / 2) {
    size_t i = (size_t)key & (RT_LOGGED_MAX - 1);
    while (ctx->logged[i] && ctx->logged[i] != key) i = (i + 1) & (RT_LOGGED_MAX - 1);
    if (!ctx->logged[i]) { ctx->logged[i] = key; ctx->n_logged++; fresh = 1; }
  }
  if (fresh) {
    char line[2048];
    size_t len = (size_t)snprintf(line, sizeof line, "{\"family\":\"%s\",\"dims\":{", f->name);
    for (int d = 0; d < f->n_dims && len < sizeof line; ++d) {
      const char *sep = d ? "," : "";
      if (f->dim_bool[d]) len += (size_t)snprintf(line + len, sizeof line - len, "%s\"%s\":%s", sep, f->dims[d], dims[d] ? "true" : "false");
      else if (f->dim_enum[d]) { /* the value's name: item dims[d] of "enum(a|b|c)" */
        const char *v = f->dim_types[d] + 5;
        for (int64_t k = 0; k < dims[d] && strchr(v, '|'); ++k) v = strchr(v, '|') + 1;
        int vl = (int)strcspn(v, "|)");
        len += (size_t)snprintf(line + len, sizeof line - len, "%s\"%s\":\"%.*s\"", sep, f->dims[d], vl, v);
      } else len += (size_t)snprintf(line + len, sizeof line - len, "%s\"%s\":%lld", sep, f->dims[d], (long long)dims[d]);
    }
    if (len < sizeof line) snprintf(line + len, sizeof line - len, "},\"served_by\":\"%s\"}\n", served_by);
    FILE *fp = fopen(ctx->log_path, "a");
    if (fp) { fputs(line, fp); fclose(fp); }
  }
  pthread_mutex_unlock(&ctx->lock);
}

/* The family and the dims checked: 0 and *fam, or a failure. */
static int select_args(tunert_ctx *ctx, const char *family, const int64_t *dims, int n_dims, rt_family **fam, tunert_err *err) {
  rt_family *f = rt_family_find(ctx, family);
  if (!f) {
    char list[512] = "";
    size_t len = 0;
    for (int i = 0; i < ctx->n_families && len < sizeof list; ++i)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", ctx->families[i].name);
    return rt_fail(err, TUNERT_ENOFAMILY, "no kernel family '%s' in the bundle (it has: %s)", family ? family : "(null)", list);
  }
  if (n_dims != f->n_dims) {
    char names[512] = "";
    size_t len = 0;
    for (int d = 0; d < f->n_dims && len < sizeof names; ++d)
      len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", d ? ", " : "", f->dims[d]);
    return rt_fail(err, TUNERT_EINVAL, "tunert_select %s: %d dims given, the family has %d (%s)", f->name, n_dims, f->n_dims, names);
  }
  for (int d = 0; d < n_dims; ++d)
    if (f->dim_enum[d] && (dims[d] < 0 || dims[d] >= f->dim_enum[d]))
      return rt_fail(err, TUNERT_EINVAL, "tunert_select %s: dim %s is %s: pass the index of the value, 0..%d (got %lld)", f->name,
                     f->dims[d], f->dim_types[d], f->dim_enum[d] - 1, (long long)dims[d]);
  *fam = f;
  return 0;
}

TUNERT_API int tunert_select_candidates(tunert_ctx *ctx, const char *family, const int64_t *dims, int n_dims,
                                        tunert_candidate *out, int max, int *n_out, tunert_err *err) {
  if (!ctx || !n_out || (!dims && n_dims) || (max > 0 && (!out || out->struct_size < sizeof(uint32_t))))
    return rt_fail(err, TUNERT_EINVAL, "tunert_select_candidates: NULL argument or out[0].struct_size not set");
  *n_out = 0;
  rt_family *f;
  int rc = select_args(ctx, family, dims, n_dims, &f, err);
  if (rc || (rc = domain_check(f, dims, err))) return rc;
  size_t stride = out ? out->struct_size : 0, bytes = sizeof(tunert_candidate) * (size_t)f->n_entries;
  tunert_candidate *c = ctx->arena.al.alloc(ctx->arena.al.ud, bytes);
  int *cls = ctx->arena.al.alloc(ctx->arena.al.ud, sizeof(int) * (size_t)f->n_entries);
  int *order = ctx->arena.al.alloc(ctx->arena.al.ud, sizeof(int) * (size_t)f->n_entries);
  if (!c || !cls || !order) {
    if (c) ctx->arena.al.free(ctx->arena.al.ud, c, bytes);
    if (cls) ctx->arena.al.free(ctx->arena.al.ud, cls, sizeof(int) * (size_t)f->n_entries);
    if (order) ctx->arena.al.free(ctx->arena.al.ud, order, sizeof(int) * (size_t)f->n_entries);
    return rt_fail(err, TUNERT_ENOMEM, "tunert_select_candidates: out of memory");
  }
  computed tmp;
  for (int i = 0; i < f->n_entries; ++i) {
    const rt_entry *e = &f->entries[i];
    memset(&c[i], 0, sizeof c[i]);
    c[i].struct_size = (uint32_t)stride;
    c[i].ok = !judge(ctx, f, e, dims, &cls[i], &c[i].distance, &tmp, c[i].why, sizeof c[i].why);
    if (c[i].ok) c[i].why[0] = 0;
    c[i].tuned_problem = e->problem_name;
    c[i].variant = e->v->params_json;
    c[i].kind = kind_name(e, cls[i]);
    c[i].vendor = cls[i] == CLASS_EXACT && e->kind == RT_VENDOR ? e->vendor : NULL;
    c[i].measured_ns = e->median_ns;
    c[i].measured_on = e->kind == RT_FALLBACK ? "" : e->device_name;
    c[i].tier = e->tier;
    order[i] = i;
  }
  /* insertion sort: ok ones in selection order first, then the others in bundle order */
  for (int i = 1; i < f->n_entries; ++i)
    for (int j = i; j > 0; --j) {
      int a = order[j - 1], b = order[j];
      int swap = c[b].ok && (!c[a].ok || ranks_before(f, b, cls[b], c[b].distance, a, cls[a], c[a].distance));
      if (!swap) break;
      order[j - 1] = b;
      order[j] = a;
    }
  int n = max < f->n_entries ? (max > 0 ? max : 0) : f->n_entries;
  for (int i = 0; i < n; ++i)
    memcpy((char *)out + (size_t)i * stride, &c[order[i]], stride < sizeof *c ? stride : sizeof *c);
  *n_out = n;
  ctx->arena.al.free(ctx->arena.al.ud, c, bytes);
  ctx->arena.al.free(ctx->arena.al.ud, cls, sizeof(int) * (size_t)f->n_entries);
  ctx->arena.al.free(ctx->arena.al.ud, order, sizeof(int) * (size_t)f->n_entries);
  return TUNERT_OK;
}

TUNERT_API int tunert_select(tunert_ctx *ctx, const char *family, const int64_t *dims, int n_dims,
                             const tunert_selection **out, tunert_err *err) {
  if (!ctx || !out || (!dims && n_dims)) return rt_fail(err, TUNERT_EINVAL, "tunert_select: NULL argument");
  rt_family *f;
  int arc = select_args(ctx, family, dims, n_dims, &f, err);
  if (arc) return arc;
  uint64_t h = hash_dims(dims, n_dims);
  tunert_selection *s = cache_find(f, dims, n_dims, h);
  if (s) { *out = s; return TUNERT_OK; }
  /* slow path: compute without the lock (the bundle is immutable), publish under it */
  computed c;
  char reason[3072];
  int best = 0, cls = 0;
  double dist = 0;
  int rc = choose(ctx, f, dims, &best, &cls, &dist, &c, reason, sizeof reason, err);
  if (rc) { log_untuned(ctx, f, dims, h, "none"); return rc; }
  if (cls != CLASS_EXACT) log_untuned(ctx, f, dims, h, kind_name(&f->entries[best], cls));
  rt_entry *e = &f->entries[best];
  /* argument packing with natural alignment, the worker's rule */
  uint32_t offset[TUNERT_MAX_ARGS];
  int kind[TUNERT_MAX_ARGS];
  for (int a = 0; a < f->n_args; ++a)
    kind[a] = f->arg_roles[a] == TUNERT_ROLE_SCALAR ? TUNERT_PACK_SCALAR : f->arg_roles[a] == TUNERT_ROLE_TENSORMAP ? TUNERT_PACK_TENSORMAP : TUNERT_PACK_TENSOR;
  uint32_t off = tunert_pack_layout(f->n_args, kind, f->arg_size, offset);
  if (off > 4096) return rt_fail(err, TUNERT_EINVAL, "%s: %u bytes of kernel parameters (over 4096)", f->name, off);
  pthread_mutex_lock(&ctx->lock);
  s = cache_find(f, dims, n_dims, h);
  if (s) { pthread_mutex_unlock(&ctx->lock); *out = s; return TUNERT_OK; }
  rt_arena *ar = &ctx->arena;
  s = rt_alloc(ar, sizeof *s);
  int64_t *d = rt_alloc(ar, sizeof(int64_t) * (size_t)(n_dims + 1));
  tunert_arg_info *ai = rt_alloc(ar, sizeof(tunert_arg_info) * (size_t)f->n_args);
  tunert_tensormap_info *ti = rt_alloc(ar, sizeof(tunert_tensormap_info) * (size_t)f->n_args);
  int *row_stride = rt_alloc(ar, sizeof(int) * (size_t)f->n_args);
  char *rs = rt_strdup(ar, reason);
  /* the map cache, 64-byte aligned (CUtensorMap's alignment) */
  unsigned char *cache_mem = f->n_tmaps ? rt_alloc(ar, sizeof(rt_tmap_cache) * (size_t)f->n_tmaps + 64) : NULL;
  if (!s || !d || !ai || !ti || !row_stride || !rs || (f->n_tmaps && !cache_mem)) {
    pthread_mutex_unlock(&ctx->lock);
    return rt_fail(err, TUNERT_ENOMEM, "tunert_select: out of memory");
  }
  memcpy(d, dims, (size_t)n_dims * sizeof *dims);
  s->f = f;
  s->entry = e;
  s->v = e->v;
  s->dims = d;
  s->hash = h;
  s->exact = cls == CLASS_EXACT;
  s->kind = kind_name(e, cls);
  s->vendor = cls == CLASS_EXACT && e->kind == RT_VENDOR ? e->vendor : NULL;
  s->distance = dist;
  s->reason = rs;
  s->n_launches = e->n_launches;
  for (int l = 0; l < e->n_launches; ++l) {
    s->launch[l].kernel = e->v->kernels[l];
    memcpy(s->launch[l].grid, c.grid[l], sizeof c.grid[l]);
    memcpy(s->launch[l].block, c.block[l], sizeof c.block[l]);
    s->launch[l].shared = c.shared[l];
    memcpy(s->cluster[l], c.cluster[l], sizeof c.cluster[l]);
  }
  for (int a = 0; a < f->n_args; ++a) {
    ai[a].name = f->arg_names[a];
    ai[a].role = f->arg_roles[a];
    ai[a].dtype = f->arg_dtypes[a];
    ai[a].rank = c.rank[a];
    memcpy(ai[a].shape, c.shape[a], sizeof ai[a].shape);
    ai[a].numel = c.numel[a];
    ai[a].bytes = c.numel[a] * f->arg_size[a];
    ai[a].has_value = c.has_value[a];
    ai[a].value = c.value[a];
    s->offset[a] = offset[a];
  }
  s->args = ai;
  s->param_bytes = off;
  s->n_tmaps = f->n_tmaps;
  s->tm_cache = f->n_tmaps ? (rt_tmap_cache *)(cache_mem + (64 - (uintptr_t)cache_mem % 64) % 64) : NULL;
  for (int a = 0; a < f->n_args; ++a) ti[a].tensor = row_stride[a] = -1;
  for (int k = 0; k < f->n_tmaps; ++k) {
    const rt_tmap_spec *m = &c.tm[k];
    s->tm[k] = *m;
    atomic_init(&s->tm_cache[k].claimed, 0);
    for (int j = 0; j < TUNERT_TMAP_SLOTS; ++j) atomic_init(&s->tm_cache[k].key[j], 0);
    tunert_tensormap_info *t = &ti[m->arg];
    row_stride[m->arg] = m->ld_arg;
    t->tensor = m->tensor;
    t->rank = m->rank;
    for (int i = 0; i < m->rank; ++i) {
      t->dims[i] = m->dims[i];
      t->box[i] = m->box[i];
      t->element_strides[i] = m->estr[i];
      if (i + 1 < m->rank) t->strides[i] = m->strides[i];
    }
    t->swizzle = m->swizzle;
    t->l2_promotion = m->l2_promotion;
    t->oob_nan = m->oob_nan;
  }
  s->tm_info = ti;
  s->tm_row_stride = row_stride;
  atomic_init(&s->ready, 0);
  if (cache_insert(ctx, f, s)) {
    pthread_mutex_unlock(&ctx->lock);
    return rt_fail(err, TUNERT_ENOMEM, "tunert_select: out of memory");
  }
  pthread_mutex_unlock(&ctx->lock);
  *out = s;
  return TUNERT_OK;
}

TUNERT_API int tunert_selection_info_get(const tunert_selection *s, tunert_selection_info *info) {
  if (!s || !info || info->struct_size < sizeof(uint32_t)) return TUNERT_EINVAL;
  tunert_selection_info full;
  memset(&full, 0, sizeof full);
  full.struct_size = info->struct_size;
  full.family = s->f->name;
  full.variant = s->v->params_json;
  full.tuned_problem = s->entry->problem_name;
  full.tuned_dims = s->entry->dims_json;
  full.exact = s->exact;
  full.distance = s->distance;
  full.reason = s->reason;
  full.measured_ns = s->entry->median_ns;
  full.measured_on = s->entry->device_name;
  full.clusters = (const unsigned(*)[3])s->cluster;
  full.kind = s->kind;
  full.vendor = s->vendor;
  full.binary = s->v->binary_desc;
  full.n_launches = s->n_launches;
  full.launches = s->launch;
  full.n_args = s->f->n_args;
  full.args = s->args;
  full.tensormaps = s->tm_info;
  full.tensormap_row_strides = s->tm_row_stride;
  full.param_offsets = s->offset;
  full.param_bytes = s->param_bytes;
  memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
  return TUNERT_OK;
}
