/* bundle_expr.c: a family's dims and params, and each bundled entry's launch geometry, shapes,
 * scalar values, requirements, defines and tensor maps as expressions libtunert evaluates
 * (runtime/tunert_expr.h). The texts come from the recipe (recipe_expr.h); each is parsed and
 * evaluated here by the runtime's own evaluator against the values Lua gave for the tuned problem,
 * so a bundle never holds an expression the runtime reads differently. A text the runtime cannot
 * take (a Lua function, an unparsable expression) is frozen to the tuned problem's values and the
 * entry becomes exact-only, with the reason. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle_int.h"

/* env: dims (family order), params, then the device fact sm_count of the measured device. */
int bundle_make_env(const bfamily *f, const tune_problem *p, const tune_recipe *r, const int *vi, int sm_count,
                    tunert_xval *env, char *why, size_t n) {
  json_error_t je;
  json_t *dims = json_loads(p->dims_json, 0, &je);
  if (!dims) { snprintf(why, n, "problem %s: dims are not JSON", p->name); return -1; }
  for (int d = 0; d < f->n_dims; ++d) {
    json_t *v = json_object_get(dims, f->dim_names[d]);
    if (json_is_integer(v)) env[d] = tunert_xint(json_integer_value(v));
    else if (json_is_boolean(v)) env[d] = tunert_xbool(json_is_true(v));
    else if (json_is_string(v) && f->dim_enum[d]) { /* the index of the value */
      env[d] = tunert_xint(-1);
      for (int e = 0; e < f->n_enum[d]; ++e)
        if (!strcmp(f->enum_vals[d][e], json_string_value(v))) env[d] = tunert_xint(e);
    }
    else {
      snprintf(why, n, "problem %s: dim %s is %s: libtunert takes integer, boolean and string (enum) dims only", p->name, f->dim_names[d],
               v ? "not an integer" : "missing");
      json_decref(dims);
      return -1;
    }
  }
  json_decref(dims);
  for (int k = 0; k < r->n_params; ++k) {
    const tune_value *v = &r->params[k].values[vi[k]];
    env[f->n_dims + k] = v->kind == 'b' ? tunert_xbool((int)v->i) : tunert_xint(v->kind == 'i' ? v->i : 0);
  }
  env[f->n_dims + r->n_params] = tunert_xint(sm_count); /* the device fact, last (names: bundle_family_layout) */
  return 0;
}

/* Family dims and params from the recipe's first problem. */
static void enum_literals(const bfamily *f, char *text, size_t n);

int bundle_family_layout(bfamily *f, tune_recipe *r, tune_err *err) {
  json_error_t je;
  f->dims[0] = 0;
  f->n_dims = 0;
  for (int pi = 0; pi < r->n_problems; ++pi) {
    json_t *dims = json_loads(r->problems[pi].dims_json, 0, &je);
    if (!dims) return tune_fail(err, TUNE_EINVAL, "%s: problem %s: dims are not JSON", r->name, r->problems[pi].name);
    const char *k;
    json_t *v;
    int n = 0;
    json_object_foreach(dims, k, v) {
      if (pi == 0) {
        if (f->n_dims == TUNERT_MAX_DIMS) { json_decref(dims); return tune_fail(err, TUNE_EINVAL, "%s: more than %d dims", r->name, TUNERT_MAX_DIMS); }
        snprintf(f->dim_names[f->n_dims], sizeof f->dim_names[0], "%s", k);
        f->dim_bool[f->n_dims] = json_is_boolean(v);
        f->dim_enum[f->n_dims] = json_is_string(v);
        f->n_dims++;
      }
      if (n < f->n_dims && f->dim_enum[n] && json_is_string(v)) { /* collect the values, sorted */
        const char *sv = json_string_value(v);
        int seen = 0;
        for (int e = 0; e < f->n_enum[n]; ++e) seen |= !strcmp(f->enum_vals[n][e], sv);
        if (!seen) {
          if (f->n_enum[n] == 16 || strlen(sv) >= 64 || strpbrk(sv, ",:| ")) { json_decref(dims); return tune_fail(err, TUNE_EINVAL, "%s: string dim %s: at most 16 short values without , : | or spaces", r->name, k); }
          int at = f->n_enum[n]++;
          while (at > 0 && strcmp(f->enum_vals[n][at - 1], sv) > 0) { memcpy(f->enum_vals[n][at], f->enum_vals[n][at - 1], 64); --at; }
          snprintf(f->enum_vals[n][at], 64, "%s", sv);
        }
      }
      if (pi > 0 && (n >= f->n_dims || strcmp(f->dim_names[n], k))) {
        json_decref(dims);
        return tune_fail(err, TUNE_EINVAL, "%s: problems %s and %s have different dims: libtunert needs the same dims in every problem of a family",
                         r->name, r->problems[0].name, r->problems[pi].name);
      }
      ++n;
    }
    json_decref(dims);
  }
  /* jansson objects iterate in insertion order; dims_json is sorted by name */
  size_t len = 0;
  for (int d = 0; d < f->n_dims; ++d) {
    if (f->dim_enum[d]) {
      len += (size_t)snprintf(f->dims + len, sizeof f->dims - len, "%s%s:enum", d ? "," : "", f->dim_names[d]);
      for (int e = 0; e < f->n_enum[d]; ++e) len += (size_t)snprintf(f->dims + len, sizeof f->dims - len, "%s%s", e ? "|" : "(", f->enum_vals[d][e]);
      len += (size_t)snprintf(f->dims + len, sizeof f->dims - len, ")");
    } else
      len += (size_t)snprintf(f->dims + len, sizeof f->dims - len, "%s%s:%s", d ? "," : "", f->dim_names[d], f->dim_bool[d] ? "bool" : "int");
    f->names[d] = f->dim_names[d];
  }
  len = 0;
  for (int k = 0; k < r->n_params; ++k) {
    char kind = r->params[k].values[0].kind;
    len += (size_t)snprintf(f->params + len, sizeof f->params - len, "%s%s:%s", k ? "," : "", r->params[k].name,
                            kind == 'b' ? "bool" : kind == 'i' ? "int" : "str");
    f->names[f->n_dims + k] = kind == 's' ? NULL : r->params[k].name;
  }
  /* the device fact sm_count after the params, as libtunert names it (tunert.c read_families) */
  f->names[f->n_dims + r->n_params] = "sm_count";
  f->n_names = f->n_dims + r->n_params + 1;
  tune_recipe_domain_text(r, f->domain, sizeof f->domain);
  if (strchr(f->domain, '\'') || strchr(f->domain, '"')) enum_literals(f, f->domain, sizeof f->domain);
  return TUNE_OK;
}

/* The index of string value v among the family's enum values: the one enum dim that has it, or the
 * same index in every enum dim that has it; -1 (no problem's index) for a value no problem of the
 * family has, e.g. 'col' in a family tuned on 'row' only; -2 without enum dims or when ambiguous. */
static int enum_index(const bfamily *f, const char *v, size_t len) {
  int at = -1, n_enum_dims = 0;
  for (int d = 0; d < f->n_dims; ++d) {
    n_enum_dims += f->dim_enum[d] != 0;
    for (int e = 0; f->dim_enum[d] && e < f->n_enum[d]; ++e)
      if (strlen(f->enum_vals[d][e]) == len && !strncmp(f->enum_vals[d][e], v, len)) {
        if (at >= 0 && at != e) return -2;
        at = e;
      }
  }
  return n_enum_dims ? at : -2;
}

/* String literals ('col' or "col") become the index of that value of the family's enum dim, which
 * is how libtunert sees an enum dim: Lua compares b_layout == 'col' as strings at tune time, the
 * runtime compares b_layout == 0 as integers. A literal no enum dim has is left for the parser to
 * refuse. Rewrites text in place (n bytes). */
static void enum_literals(const bfamily *f, char *text, size_t n) {
  char out[2048];
  size_t o = 0;
  const char *c = text;
  while (*c && o + 24 < sizeof out) {
    const char *close = (*c == '\'' || *c == '"') ? strchr(c + 1, *c) : NULL;
    int idx = close ? enum_index(f, c + 1, (size_t)(close - c - 1)) : -2;
    if (idx >= -1) {
      o += (size_t)snprintf(out + o, sizeof out - o, "%d", idx);
      c = close + 1;
    } else
      out[o++] = *c++;
  }
  out[o] = 0;
  if (!*c && o < n) memcpy(text, out, o + 1); /* (a text too long to rewrite stays as it is) */
}

/* Parse text over names[0..n_names); on failure mark the field frozen with the reason. *e NULL then. */
static int parse_names_or_freeze(const bfamily *f, const char *const *names, int n_names, tune_field_text *t, int want_items,
                                 tunert_expr **e, char *why, size_t n) {
  char msg[600];
  *e = NULL;
  if (t->frozen) return 0;
  if (strchr(t->text, '\'') || strchr(t->text, '"')) enum_literals(f, t->text, sizeof t->text);
  if (tunert_expr_parse(t->text, names, n_names, NULL, e, msg, sizeof msg)) {
    snprintf(why, n, "%s", msg);
    return -1;
  }
  if (want_items > 0 && tunert_expr_items(*e) != want_items) {
    snprintf(why, n, "expression '%.300s' has %d items, want %d", t->text, tunert_expr_items(*e), want_items);
    tunert_expr_free(*e, NULL);
    *e = NULL;
    return -1;
  }
  return 0;
}

/* parse_names_or_freeze over the family's names (dims, params, sm_count). */
static int parse_or_freeze(const bfamily *f, tune_field_text *t, int want_items, tunert_expr **e, char *why, size_t n) {
  return parse_names_or_freeze(f, f->names, f->n_names, t, want_items, e, why, n);
}

static int eval_i64(const tunert_expr *e, int item, const tunert_xval *env, int64_t *out, char *why, size_t n) {
  tunert_xval v;
  if (tunert_expr_eval(e, item, env, &v, why, n)) return -1;
  if (tunert_xval_to_i64(&v, out)) { snprintf(why, n, "'%s' item %d is not an integer", tunert_expr_text(e), item + 1); return -1; }
  return 0;
}

static void freeze(bentry *be, tune_field_text *t, const char *what, const char *why) {
  t->frozen = 1;
  if (be->portable) {
    be->portable = 0;
    snprintf(be->exact_why, sizeof be->exact_why, "%.100s: %.480s", what, why);
  }
}

/* The names tensor-map strides see, as libtunert reads them (runtime/tunert.c read_args): the
 * family's, then the scalar args no dim, param or sm_count names, with the tuned problem's values. */
static int strides_names(const bfamily *f, const bentry *be, const tunert_xval *env, const char **names, tunert_xval *senv) {
  const tune_recipe *r = f->r;
  int n = f->n_names;
  memcpy(names, f->names, sizeof *names * (size_t)n);
  memcpy(senv, env, sizeof *senv * (size_t)n);
  for (int a = 0; a < r->n_args; ++a) {
    const tune_arg_def *ad = &r->args[a];
    if (ad->is_tensor || ad->is_tmap) continue;
    int taken = 0;
    for (int k = 0; k < n && !taken; ++k) taken = names[k] && !strcmp(names[k], ad->name);
    if (taken) continue;
    int is_f = ad->dtype == TUNE_F32 || ad->dtype == TUNE_F64;
    senv[n] = is_f ? tunert_xfloat(be->setup.scalar_f[a]) : tunert_xint(be->setup.scalar_i[a]);
    names[n++] = ad->name;
  }
  return n;
}

/* Tensor maps' dims, strides and box: the runtime evaluator against the values Lua gave
 * (be->var.tmap); a frozen or unparsable text is stored as those values (exact-only). Strides
 * may name a scalar arg (the tensor's row stride, format 1.6): be->tm_row_stride says so. */
static int check_tmaps(bstate *s, bentry *be, const tunert_xval *env, tune_err *err) {
  bfamily *f = &s->fam[be->family];
  tune_recipe *r = f->r;
  const char *names[TUNERT_MAX_DIMS + 65 + TUNE_MAX_ARGS];
  tunert_xval senv[TUNERT_MAX_DIMS + 65 + TUNE_MAX_ARGS];
  int n_names = strides_names(f, be, env, names, senv);
  be->tm_row_stride = 0;
  for (int a = 0; a < r->n_args; ++a) {
    if (!r->args[a].is_tmap) continue;
    const tune_tmap_var *tv = &be->var.tmap[a];
    tune_tmap_texts *tt = &be->tm[a];
    tune_field_text *ft[3] = {&tt->dims, &tt->strides, &tt->box};
    const char *nm[3] = {"dims", "strides", "box"};
    int want[3] = {tv->rank, tv->rank - 1, tv->rank};
    for (int k = 0; k < 3; ++k) {
      char what[160], why[700];
      snprintf(what, sizeof what, "arg %s tensormap %s", r->args[a].name, nm[k]);
      if (want[k] == 0) continue; /* strides of rank 1 */
      if (ft[k]->frozen) { freeze(be, ft[k], what, ft[k]->where); continue; }
      tunert_expr *e = NULL;
      if (k == 1 ? parse_names_or_freeze(f, names, n_names, ft[k], want[k], &e, why, sizeof why)
                 : parse_or_freeze(f, ft[k], want[k], &e, why, sizeof why)) {
        freeze(be, ft[k], what, why);
        uint64_t box[TUNE_TMAP_MAX_RANK];
        for (int i = 0; i < tv->rank; ++i) box[i] = tv->box[i];
        const uint64_t *x = k == 0 ? tv->dims : k == 1 ? tv->strides : box;
        size_t len = 0;
        ft[k]->text[0] = 0;
        for (int i = 0; i < want[k]; ++i)
          len += (size_t)snprintf(ft[k]->text + len, sizeof ft[k]->text - len, "%s%llu", i ? ", " : "", (unsigned long long)x[i]);
        continue;
      }
      for (int j = f->n_names; k == 1 && j < n_names; ++j) be->tm_row_stride |= tunert_expr_uses(e, j);
      for (int i = 0; i < want[k]; ++i) {
        int64_t got;
        if (eval_i64(e, i, k == 1 ? senv : env, &got, why, sizeof why)) { tunert_expr_free(e, NULL); return tune_fail(err, TUNE_ERECIPE, "%s / %s: %s: %s", r->name, be->p->name, what, why); }
        uint64_t lua = k == 0 ? tv->dims[i] : k == 1 ? tv->strides[i] : tv->box[i];
        if (got < 0 || (uint64_t)got != lua) {
          tunert_expr_free(e, NULL);
          return tune_fail(err, TUNE_EINTERNAL, "%s / %s: %s: the bundle expression gives a different value than Lua (item %d: %lld vs %llu): please report this",
                           r->name, be->p->name, what, i + 1, (long long)got, (unsigned long long)lua);
        }
      }
      tunert_expr_free(e, NULL);
    }
  }
  return TUNE_OK;
}

/* One entry's check: what every part of it reads. */
typedef struct echeck {
  bentry *be;
  const bfamily *f;
  const tune_recipe *r;
  const tunert_xval *env;      /* the tuned problem's dims and the variant's params */
  char why[700];               /* scratch for the evaluator's messages */
  tune_err *err;
} echeck;

/* A value the runtime computes differently from Lua: a bug of the tuner or the runtime. */
#define MISMATCH(c, what, lua_fmt, ...)                                                                       \
  tune_fail((c)->err, TUNE_EINTERNAL, "%s / %s: %s: the bundle expression gives a different value than Lua (" \
            lua_fmt "): please report this", (c)->r->name, (c)->be->p->name, what, __VA_ARGS__)

static int eval_failed(echeck *c, tunert_expr *e, const char *what) {
  tunert_expr_free(e, NULL);
  return tune_fail(c->err, TUNE_ERECIPE, "%s / %s: %s: %s", c->r->name, c->be->p->name, what, c->why);
}

/* A field given as a Lua function: frozen, with where the function is. */
static void freeze_fn(bentry *be, tune_field_text *t, const char *what) {
  char w[400];
  snprintf(w, sizeof w, "a Lua function (%s)", t->where);
  freeze(be, t, what, w);
}

/* The launch's field k (grid, block, shared, cluster) as Lua gave it. */
static int64_t launch_value(const tune_launch *x, int k, int i) {
  const unsigned *cl = x->cluster;
  return k == 0 ? x->grid[i] : k == 1 ? x->block[i] : k == 2 ? x->shared : (cl[i] ? cl[i] : 1);
}

/* Launch geometry: grid, block and cluster of 3 items, shared of 1. */
static int check_launches(echeck *c) {
  bentry *be = c->be;
  tune_variant_exprs *ex = &be->ex;
  const char *nm[4] = {"launch grid", "launch block", "launch shared", "launch cluster"};
  for (int l = 0; l < ex->n_launches; ++l) {
    tune_field_text *ft[4] = {&ex->grid[l], &ex->block[l], &ex->shared[l], &ex->cluster[l]};
    const tune_launch *x = &be->var.launch[l];
    for (int k = 0; k < 4; ++k) {
      int items = k != 2 ? 3 : 1;
      tunert_expr *e = NULL;
      if (ft[k]->frozen) { freeze_fn(be, ft[k], nm[k]); continue; }
      if (parse_or_freeze(c->f, ft[k], items, &e, c->why, sizeof c->why)) {
        freeze(be, ft[k], nm[k], c->why);
        size_t len = 0;
        ft[k]->text[0] = 0;
        for (int i = 0; i < items; ++i)
          len += (size_t)snprintf(ft[k]->text + len, sizeof ft[k]->text - len, "%s%u", i ? ", " : "", (unsigned)launch_value(x, k, i));
        continue;
      }
      for (int i = 0; i < items; ++i) {
        int64_t got, want = launch_value(x, k, i);
        if (eval_i64(e, i, c->env, &got, c->why, sizeof c->why)) return eval_failed(c, e, nm[k]);
        if (got != want) { tunert_expr_free(e, NULL); return MISMATCH(c, nm[k], "%lld vs %lld", (long long)got, (long long)want); }
      }
      tunert_expr_free(e, NULL);
    }
  }
  return TUNE_OK;
}

/* A tensor's shape (its element count) or a scalar's value. */
static int check_arg(echeck *c, int a) {
  bentry *be = c->be;
  const tune_arg_def *ad = &c->r->args[a];
  tune_field_text *t = ad->is_tensor ? &be->ex.shape[a] : &be->ex.value[a];
  int is_f = ad->dtype == TUNE_F32 || ad->dtype == TUNE_F64;
  int64_t numel_lua = ad->scratch ? be->var.scratch_numel[a] : be->setup.numel[a];
  char what[160];
  snprintf(what, sizeof what, "arg %s %s", ad->name, ad->is_tensor ? "shape" : "value");
  if (t->frozen) { freeze_fn(be, t, what); return TUNE_OK; }
  tunert_expr *e = NULL;
  if (parse_or_freeze(c->f, t, ad->is_tensor ? 0 : 1, &e, c->why, sizeof c->why)) {
    freeze(be, t, what, c->why);
    if (ad->is_tensor) snprintf(t->text, sizeof t->text, "%lld", (long long)numel_lua);
    else if (is_f) snprintf(t->text, sizeof t->text, "%.17g", be->setup.scalar_f[a]);
    else snprintf(t->text, sizeof t->text, "%lld", be->setup.scalar_i[a]);
    return TUNE_OK;
  }
  if (ad->is_tensor) {
    int64_t numel = 1;
    for (int i = 0; i < tunert_expr_items(e); ++i) {
      int64_t x;
      if (eval_i64(e, i, c->env, &x, c->why, sizeof c->why)) return eval_failed(c, e, what);
      numel *= x;
    }
    tunert_expr_free(e, NULL);
    if (numel != numel_lua) return MISMATCH(c, what, "%lld vs %lld elements", (long long)numel, (long long)numel_lua);
    return TUNE_OK;
  }
  tunert_xval v;
  if (tunert_expr_eval(e, 0, c->env, &v, c->why, sizeof c->why)) return eval_failed(c, e, what);
  tunert_expr_free(e, NULL);
  double got = tunert_xval_to_f64(&v);
  double want = is_f ? be->setup.scalar_f[a] : (double)be->setup.scalar_i[a];
  if (ad->dtype == TUNE_F32 ? (float)got != (float)want : got != want) return MISMATCH(c, what, "%.17g vs %.17g", got, want);
  return TUNE_OK;
}

/* A list the runtime cannot parse makes the entry exact-only and is dropped; *e NULL then. */
static int parse_list(echeck *c, char *text, size_t text_n, const char *what, tunert_expr **e) {
  tune_field_text t = {.frozen = 0};
  if ((size_t)snprintf(t.text, sizeof t.text, "%s", text) >= sizeof t.text)
    return tune_fail(c->err, TUNE_ERECIPE, "%s: %s too long", c->r->name, what);
  if (parse_or_freeze(c->f, &t, 0, e, c->why, sizeof c->why) && c->be->portable) {
    c->be->portable = 0;
    snprintf(c->be->exact_why, sizeof c->be->exact_why, "%s: %.580s", what, c->why);
  }
  if (*e) snprintf(text, text_n, "%s", t.text); /* enum literals rewritten: the text the runtime parses */
  return TUNE_OK;
}

/* requires: all true for the problem the variant was measured on. */
static int check_requires(echeck *c) {
  tune_variant_exprs *ex = &c->be->ex;
  tunert_expr *e = NULL;
  if (!ex->requires[0]) return TUNE_OK;
  if (parse_list(c, ex->requires, sizeof ex->requires, "requires", &e)) return c->err->code;
  if (!e) { ex->requires[0] = 0; return TUNE_OK; }
  for (int i = 0; i < tunert_expr_items(e); ++i) {
    tunert_xval v;
    if (tunert_expr_eval(e, i, c->env, &v, c->why, sizeof c->why) || v.t != TUNERT_XBOOL || !v.i) {
      tunert_expr_free(e, NULL);
      return MISMATCH(c, "requires", "item %d is not true here", i + 1);
    }
  }
  tunert_expr_free(e, NULL);
  return TUNE_OK;
}

/* defines given as expressions: their values in the compiled binary, into be->define_values. */
static int check_defines(echeck *c) {
  bentry *be = c->be;
  tune_variant_exprs *ex = &be->ex;
  tunert_expr *e = NULL;
  be->define_values[0] = 0;
  if (!ex->define_exprs[0]) return TUNE_OK;
  if (parse_list(c, ex->define_exprs, sizeof ex->define_exprs, "defines", &e)) return c->err->code;
  if (!e) { ex->define_exprs[0] = 0; return TUNE_OK; }
  char names[1024];
  snprintf(names, sizeof names, "%s", ex->define_names);
  int i = 0;
  for (char *save = NULL, *nm = strtok_r(names, " ", &save); nm; nm = strtok_r(NULL, " ", &save), ++i) {
    char pre[200];
    snprintf(pre, sizeof pre, "-D%s=", nm);
    const char *val = NULL;
    for (int k = 0; k < be->var.n_defines; ++k)
      if (!strncmp(be->var.defines[k], pre, strlen(pre))) val = be->var.defines[k] + strlen(pre);
    tunert_xval v;
    if (!val || tunert_expr_eval(e, i, c->env, &v, c->why, sizeof c->why)) { tunert_expr_free(e, NULL); return MISMATCH(c, "defines", "%s", nm); }
    char *end;
    double compiled = strtod(val, &end);
    if (*end || compiled != tunert_xval_to_f64(&v)) { tunert_expr_free(e, NULL); return MISMATCH(c, "defines", "%s = %s", nm, val); }
    size_t len = strlen(be->define_values);
    snprintf(be->define_values + len, sizeof be->define_values - len, "%s%s", len ? ", " : "", val);
  }
  tunert_expr_free(e, NULL);
  return TUNE_OK;
}

/* Parts of the recipe given as Lua functions make the entry exact-only, the first one says why. */
static void lua_function_parts(bentry *be) {
  const tune_variant_exprs *ex = &be->ex;
  /* with `requires`, applies only prunes the search (which configs to try): the requires decide
     where a variant runs */
  const char *why = ex->applies_fn && !ex->requires[0] ? "applies is a Lua function (%s): give its conditions as `requires` expressions"
                  : ex->defines_fn ? "defines is a Lua function (%s): give a table of expressions"
                  : ex->kernel_fn ? "a kernel name is a Lua function (%s)" : NULL;
  be->portable = why == NULL;
  be->exact_why[0] = 0;
  if (why) snprintf(be->exact_why, sizeof be->exact_why, why, ex->fn_where);
}

/* Check every expression of an entry with the runtime evaluator against the
 * values Lua gave; decide portability. A mismatch is a hard error. */
int bundle_check_entry(bstate *s, bentry *be, tune_err *err) {
  bfamily *f = &s->fam[be->family];
  tunert_xval env[TUNERT_MAX_DIMS + 65];
  echeck c = {.be = be, .f = f, .r = f->r, .env = env, .err = err};
  if (bundle_make_env(f, be->p, f->r, s->var[be->variant].vi, be->result.device.sm_count, env, c.why, sizeof c.why))
    return tune_fail(err, TUNE_EINVAL, "%s: %s", f->r->name, c.why);
  lua_function_parts(be);
  if (check_launches(&c)) return err->code;
  for (int a = 0; a < f->r->n_args; ++a)
    if (!f->r->args[a].is_tmap && check_arg(&c, a)) return err->code; /* tensor maps: check_tmaps */
  if (check_requires(&c) || check_defines(&c)) return err->code;
  if (be->tm && check_tmaps(s, be, env, err)) return err->code;
  /* the tuned problem's dims as literals */
  size_t len = 0;
  be->dims_text[0] = 0;
  for (int d = 0; d < f->n_dims; ++d) {
    char b[64];
    tunert_xval_format(&env[d], b, sizeof b);
    len += (size_t)snprintf(be->dims_text + len, sizeof be->dims_text - len, "%s%s", d ? ", " : "", b);
  }
  return TUNE_OK;
}
