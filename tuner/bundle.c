/* bundle.c: `tune bundle`: best verified variants -> one bundle file for libtunert. */
#define _GNU_SOURCE
#include "bundle.h"
#include "commands.h"
#include "code_proposal.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "compile.h"
#include "compile_ptx.h"
#include "db.h"
#include "db_bundle.h"
#include "recipe.h"
#include "recipe_expr.h"
#include "tunert.h"
#include "tunert_expr.h"
#include "tunert_format.h"
#include "version.h"

#define MAX_ENTRIES 4096
#define MAX_SETS 16

typedef struct bvariant {
  int family;                  /* index into families */
  int vi[64];                  /* value index per param */
  char config_hash[17];
  char params_json[2048];
  tune_variant var;            /* defines and kernel names (of its first entry) */
  char defines_text[4096];
  int64_t id;                  /* in the bundle */
  int job0;                    /* first compile job (cubins, then PTX) */
  char lowered[TUNE_MAX_LAUNCHES][512];
  char *source_text;           /* a code proposal's variant: the template with the proposed region
                                  (malloc'd); NULL: the template itself */
} bvariant;

typedef struct bentry {
  int family, variant;
  const tune_problem *p;
  json_t *best;                /* the db_query_best row (borrowed) */
  json_t *show;                /* db_query_show of its result (owned) */
  tune_variant var;
  tune_problem_setup setup;
  tune_variant_exprs ex;
  int portable;
  char exact_why[600];
  char dims_text[1024];        /* literals, family dim order */
  char define_values[1024];
  int mismatch_source;         /* measured with another recipe source */
  int same_binary;
  tune_tmap_texts *tm;         /* per arg (malloc'd when the recipe has tensor maps), else NULL */
} bentry;

typedef struct bfamily {
  tune_recipe *r;
  char name[128];
  char dims[1024];             /* "B:int,causal:bool" */
  int n_dims;
  char dim_names[TUNERT_MAX_DIMS][64];
  int dim_bool[TUNERT_MAX_DIMS];
  int dim_enum[TUNERT_MAX_DIMS];            /* string dims: passed as the index of the value */
  int n_enum[TUNERT_MAX_DIMS];
  char enum_vals[TUNERT_MAX_DIMS][16][64];  /* the values, sorted */
  char params[2048];
  const char *names[TUNERT_MAX_DIMS + 64]; /* expression env names */
  int n_names;
  char measured_arch[16];
  char recipe_file[PATH_MAX];  /* as recorded in the results database */
  int64_t id;
} bfamily;

typedef struct bstate {
  const tune_bundle_opts *o;
  int n_dbs;
  const char *db_paths[TUNE_BUNDLE_MAX_DBS];
  db_conn *dbs[TUNE_BUNDLE_MAX_DBS];
  char db_list[2048];          /* "a.db, b.db": for messages and the bundle's meta */
  json_t *best_rows;           /* every database's best rows, each with "db_index" */
  int n_sets;
  tune_recipes *sets[MAX_SETS];
  char set_paths[MAX_SETS][PATH_MAX];
  int n_families;
  bfamily fam[64];
  int n_variants;
  bvariant *var;
  int n_entries;
  bentry *ent;
  int n_archs;
  char archs[TUNE_BUNDLE_MAX_ARCHS][16];
  char device_name[128];
  json_t *device;              /* device object of the first entry (owned) */
  char templates[64][PATH_MAX + 16];  /* include root per family (the jobs point here) */
  char ptx_archs[TUNE_BUNDLE_MAX_ARCHS][24];
} bstate;

static const char *jstr(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}
static double jnum(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}
static long long jint(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static void fmt_ns(double ns, char *b, size_t n) {
  if (ns >= 1e6) snprintf(b, n, "%.3f ms", ns / 1e6);
  else snprintf(b, n, "%.2f us", ns / 1e3);
}

/* ---- finding and loading recipes -------------------------------------------------------- */

static int file_ok(const char *p) { return p && !access(p, R_OK); }

/* Resolve a recipe path as recorded in the db: as given, then next to this binary's repo. */
static int resolve_recipe(const bstate *s, const char *recorded, char *out, size_t n) {
  if (file_ok(recorded)) { snprintf(out, n, "%s", recorded); return 0; }
  char exe_dir[PATH_MAX];
  snprintf(exe_dir, sizeof exe_dir, "%s", s->o->exe ? s->o->exe : "");
  char *slash = strrchr(exe_dir, '/');
  if (slash) {
    *slash = 0;
    const char *ups[] = {"..", "."};
    for (int i = 0; i < 2; ++i) {
      if ((size_t)snprintf(out, n, "%s/%s/%s", exe_dir, ups[i], recorded) >= n) continue;
      if (file_ok(out)) return 0;
    }
  }
#ifdef TUNE_SOURCE_DIR
  snprintf(out, n, "%s/%s", TUNE_SOURCE_DIR, recorded);
  if (file_ok(out)) return 0;
#endif
  return -1;
}

static int load_set(bstate *s, const char *path, tune_recipes **out, tune_err *err) {
  char real[PATH_MAX];
  if (!realpath(path, real)) snprintf(real, sizeof real, "%s", path);
  for (int i = 0; i < s->n_sets; ++i)
    if (!strcmp(s->set_paths[i], real)) { *out = s->sets[i]; return TUNE_OK; }
  if (s->n_sets == MAX_SETS) return tune_fail(err, TUNE_EINVAL, "bundle: too many recipe files");
  if (tune_recipes_load(path, &s->sets[s->n_sets], err)) return err->code;
  snprintf(s->set_paths[s->n_sets], PATH_MAX, "%s", real);
  *out = s->sets[s->n_sets++];
  return TUNE_OK;
}

/* ---- config and problem values ------------------------------------------------------------- */

static int params_to_vi(const tune_recipe *r, json_t *params, int *vi) {
  for (int i = 0; i < r->n_params; ++i) {
    json_t *j = json_object_get(params, r->params[i].name);
    vi[i] = -1;
    for (int k = 0; j && k < r->params[i].n_values; ++k) {
      const tune_value *v = &r->params[i].values[k];
      int match = (v->kind == 'i' && json_is_integer(j) && json_integer_value(j) == v->i) ||
                  (v->kind == 'b' && json_is_boolean(j) && json_is_true(j) == (v->i != 0)) ||
                  (v->kind == 's' && json_is_string(j) && !strcmp(json_string_value(j), v->s));
      if (match) { vi[i] = k; break; }
    }
    if (vi[i] < 0) return -1;
  }
  return 0;
}

/* env: dims (family order) then params. */
static int make_env(const bfamily *f, const tune_problem *p, const tune_recipe *r, const int *vi, tunert_xval *env,
                    char *why, size_t n) {
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
  return 0;
}

/* Family dims and params from the recipe's first problem. */
static int family_layout(bfamily *f, tune_recipe *r, tune_err *err) {
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
  f->n_names = f->n_dims + r->n_params;
  return TUNE_OK;
}

/* ---- checking expressions against Lua's values ---------------------------------------------------- */

/* Parse text; on failure mark the field frozen with the reason. *e NULL then. */
static int parse_or_freeze(const bfamily *f, tune_field_text *t, int want_items, tunert_expr **e, char *why, size_t n) {
  char msg[600];
  *e = NULL;
  if (t->frozen) return 0;
  if (tunert_expr_parse(t->text, f->names, f->n_names, NULL, e, msg, sizeof msg)) {
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

/* Tensor maps' dims, strides and box: the runtime evaluator against the values Lua gave
 * (be->var.tmap); a frozen or unparsable text is stored as those values (exact-only). */
static int check_tmaps(bstate *s, bentry *be, const tunert_xval *env, tune_err *err) {
  bfamily *f = &s->fam[be->family];
  tune_recipe *r = f->r;
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
      if (parse_or_freeze(f, ft[k], want[k], &e, why, sizeof why)) {
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
      for (int i = 0; i < want[k]; ++i) {
        int64_t got;
        if (eval_i64(e, i, env, &got, why, sizeof why)) { tunert_expr_free(e, NULL); return tune_fail(err, TUNE_ERECIPE, "%s / %s: %s: %s", r->name, be->p->name, what, why); }
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

/* Check every expression of an entry with the runtime evaluator against the
 * values Lua gave; decide portability. A mismatch is a hard error. */
static int check_entry(bstate *s, bentry *be, tune_err *err) {
  bfamily *f = &s->fam[be->family];
  tune_recipe *r = f->r;
  bvariant *bv = &s->var[be->variant];
  tunert_xval env[TUNERT_MAX_DIMS + 64];
  char why[700];
  if (make_env(f, be->p, r, bv->vi, env, why, sizeof why)) return tune_fail(err, TUNE_EINVAL, "%s: %s", r->name, why);
  tune_variant_exprs *ex = &be->ex;
  be->portable = 1;
  be->exact_why[0] = 0;
  if (ex->applies_fn) { be->portable = 0; snprintf(be->exact_why, sizeof be->exact_why, "applies is a Lua function (%s): give its conditions as `requires` expressions", ex->fn_where); }
  else if (ex->defines_fn) { be->portable = 0; snprintf(be->exact_why, sizeof be->exact_why, "defines is a Lua function (%s): give a table of expressions", ex->fn_where); }
  else if (ex->kernel_fn) { be->portable = 0; snprintf(be->exact_why, sizeof be->exact_why, "a kernel name is a Lua function (%s)", ex->fn_where); }
#define MISMATCH(what, lua_fmt, ...)                                                                         \
  return tune_fail(err, TUNE_EINTERNAL, "%s / %s: %s: the bundle expression gives a different value than Lua (" lua_fmt \
                   "): please report this", r->name, be->p->name, what, __VA_ARGS__)
  for (int l = 0; l < ex->n_launches; ++l) {
    tune_field_text *ft[4] = {&ex->grid[l], &ex->block[l], &ex->shared[l], &ex->cluster[l]};
    const char *nm[4] = {"launch grid", "launch block", "launch shared", "launch cluster"};
    const unsigned *cl = be->var.launch[l].cluster;
    for (int k = 0; k < 4; ++k) {
      tunert_expr *e = NULL;
      if (ft[k]->frozen) {
        char w[400];
        snprintf(w, sizeof w, "a Lua function (%s)", ft[k]->where);
        freeze(be, ft[k], nm[k], w);
        continue;
      }
      if (parse_or_freeze(f, ft[k], k != 2 ? 3 : 1, &e, why, sizeof why)) {
        const tune_launch *x = &be->var.launch[l];
        freeze(be, ft[k], nm[k], why);
        if (k == 0) snprintf(ft[k]->text, sizeof ft[k]->text, "%u, %u, %u", x->grid[0], x->grid[1], x->grid[2]);
        else if (k == 1) snprintf(ft[k]->text, sizeof ft[k]->text, "%u, %u, %u", x->block[0], x->block[1], x->block[2]);
        else if (k == 2) snprintf(ft[k]->text, sizeof ft[k]->text, "%u", x->shared);
        else snprintf(ft[k]->text, sizeof ft[k]->text, "%u, %u, %u", cl[0] ? cl[0] : 1, cl[1] ? cl[1] : 1, cl[2] ? cl[2] : 1);
        continue;
      }
      for (int i = 0; i < (k != 2 ? 3 : 1); ++i) {
        int64_t got;
        if (eval_i64(e, i, env, &got, why, sizeof why)) { tunert_expr_free(e, NULL); return tune_fail(err, TUNE_ERECIPE, "%s / %s: %s: %s", r->name, be->p->name, nm[k], why); }
        int64_t want = k == 0 ? be->var.launch[l].grid[i] : k == 1 ? be->var.launch[l].block[i]
                     : k == 2 ? be->var.launch[l].shared : (cl[i] ? cl[i] : 1);
        if (got != want) { tunert_expr_free(e, NULL); MISMATCH(nm[k], "%lld vs %lld", (long long)got, (long long)want); }
      }
      tunert_expr_free(e, NULL);
    }
  }
  for (int a = 0; a < r->n_args; ++a) {
    const tune_arg_def *ad = &r->args[a];
    if (ad->is_tmap) continue; /* check_tmaps */
    tune_field_text *t = ad->is_tensor ? &ex->shape[a] : &ex->value[a];
    char what[160];
    snprintf(what, sizeof what, "arg %s %s", ad->name, ad->is_tensor ? "shape" : "value");
    if (t->frozen) {
      char w[400];
      snprintf(w, sizeof w, "a Lua function (%s)", t->where);
      freeze(be, t, what, w);
      continue;
    }
    tunert_expr *e = NULL;
    if (parse_or_freeze(f, t, ad->is_tensor ? 0 : 1, &e, why, sizeof why)) {
      freeze(be, t, what, why);
      if (ad->is_tensor) snprintf(t->text, sizeof t->text, "%lld", (long long)(ad->scratch ? be->var.scratch_numel[a] : be->setup.numel[a]));
      else if (ad->dtype == TUNE_F32 || ad->dtype == TUNE_F64) snprintf(t->text, sizeof t->text, "%.17g", be->setup.scalar_f[a]);
      else snprintf(t->text, sizeof t->text, "%lld", be->setup.scalar_i[a]);
      continue;
    }
    if (ad->is_tensor) {
      int64_t numel = 1;
      for (int i = 0; i < tunert_expr_items(e); ++i) {
        int64_t x;
        if (eval_i64(e, i, env, &x, why, sizeof why)) { tunert_expr_free(e, NULL); return tune_fail(err, TUNE_ERECIPE, "%s / %s: %s: %s", r->name, be->p->name, what, why); }
        numel *= x;
      }
      int64_t want = ad->scratch ? be->var.scratch_numel[a] : be->setup.numel[a];
      tunert_expr_free(e, NULL);
      if (numel != want) MISMATCH(what, "%lld vs %lld elements", (long long)numel, (long long)want);
    } else {
      tunert_xval v;
      if (tunert_expr_eval(e, 0, env, &v, why, sizeof why)) { tunert_expr_free(e, NULL); return tune_fail(err, TUNE_ERECIPE, "%s / %s: %s: %s", r->name, be->p->name, what, why); }
      tunert_expr_free(e, NULL);
      double got = tunert_xval_to_f64(&v);
      int is_f = ad->dtype == TUNE_F32 || ad->dtype == TUNE_F64;
      double want = is_f ? be->setup.scalar_f[a] : (double)be->setup.scalar_i[a];
      if (ad->dtype == TUNE_F32 ? (float)got != (float)want : got != want) MISMATCH(what, "%.17g vs %.17g", got, want);
    }
  }
  /* requires: all true for the problem the variant was measured on */
  if (ex->requires[0]) {
    tune_field_text t = {.frozen = 0};
    if ((size_t)snprintf(t.text, sizeof t.text, "%s", ex->requires) >= sizeof t.text) return tune_fail(err, TUNE_ERECIPE, "%s: requires too long", r->name);
    tunert_expr *e = NULL;
    if (parse_or_freeze(f, &t, 0, &e, why, sizeof why)) {
      if (be->portable) { be->portable = 0; snprintf(be->exact_why, sizeof be->exact_why, "requires: %.580s", why); }
      ex->requires[0] = 0;
    } else {
      for (int i = 0; i < tunert_expr_items(e); ++i) {
        tunert_xval v;
        if (tunert_expr_eval(e, i, env, &v, why, sizeof why) || v.t != TUNERT_XBOOL || !v.i) {
          tunert_expr_free(e, NULL);
          MISMATCH("requires", "item %d is not true here", i + 1);
        }
      }
      tunert_expr_free(e, NULL);
    }
  }
  /* defines given as expressions: their values in the compiled binary */
  be->define_values[0] = 0;
  if (ex->define_exprs[0]) {
    tune_field_text t = {.frozen = 0};
    snprintf(t.text, sizeof t.text, "%s", ex->define_exprs);
    tunert_expr *e = NULL;
    if (parse_or_freeze(f, &t, 0, &e, why, sizeof why)) {
      if (be->portable) { be->portable = 0; snprintf(be->exact_why, sizeof be->exact_why, "defines: %.580s", why); }
      ex->define_exprs[0] = 0;
    } else {
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
        if (!val || tunert_expr_eval(e, i, env, &v, why, sizeof why)) { tunert_expr_free(e, NULL); MISMATCH("defines", "%s", nm); }
        char *end;
        double compiled = strtod(val, &end);
        if (*end || compiled != tunert_xval_to_f64(&v)) { tunert_expr_free(e, NULL); MISMATCH("defines", "%s = %s", nm, val); }
        size_t len = strlen(be->define_values);
        snprintf(be->define_values + len, sizeof be->define_values - len, "%s%s", len ? ", " : "", val);
      }
      tunert_expr_free(e, NULL);
    }
  }
#undef MISMATCH
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

/* ---- the run ------------------------------------------------------------------------------------ */

static int name_matches(const char *recipe, const char *want) {
  size_t n = strlen(want);
  return !strcmp(recipe, want) || (!strncmp(recipe, want, n) && recipe[n] == '.');
}

static int parse_archs(bstate *s, const char *text, tune_err *err) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  for (char *save = NULL, *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
    if (strncmp(t, "sm_", 3) || strlen(t) < 5 || strlen(t) > 8)
      return tune_fail(err, TUNE_EINVAL, "--arch %s: want sm_XY names, e.g. sm_90a,sm_80", t);
    if (s->n_archs == TUNE_BUNDLE_MAX_ARCHS) return tune_fail(err, TUNE_EINVAL, "--arch: at most %d", TUNE_BUNDLE_MAX_ARCHS);
    snprintf(s->archs[s->n_archs++], sizeof s->archs[0], "%s", t);
  }
  if (!s->n_archs) return tune_fail(err, TUNE_EINVAL, "--arch: no architecture given");
  return TUNE_OK;
}

static void facts_from(json_t *dev, tune_device_facts *f) {
  memset(f, 0, sizeof *f);
  f->sm_count = (int)jint(dev, "sm_count");
  f->smem_per_block = (int)jint(dev, "smem_per_block_optin");
  f->l2_bytes = (int)jint(dev, "l2_bytes");
  snprintf(f->arch, sizeof f->arch, "%s", jstr(dev, "arch"));
}

/* The best rows of every database, in --db order, each tagged with its database's index. */
static int query_best_all(bstate *s, tune_err *err) {
  if (!(s->best_rows = json_array())) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  for (int d = 0; d < s->n_dbs; ++d) {
    json_t *rows = NULL, *row;
    size_t i;
    if (db_query_best(s->dbs[d], NULL, NULL, &rows, err)) return err->code;
    json_array_foreach(rows, i, row) {
      if (json_object_set_new(row, "db_index", json_integer(d)) || json_array_append(s->best_rows, row)) {
        json_decref(rows);
        return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
      }
    }
    json_decref(rows);
  }
  return TUNE_OK;
}

static int collect(bstate *s, tune_err *err) {
  const tune_bundle_opts *o = s->o;
  const char *dbs = s->db_list;
  if (query_best_all(s, err)) return err->code;
  /* the device */
  size_t i;
  json_t *row;
  char names[8][128];
  int n_names = 0;
  json_array_foreach(s->best_rows, i, row) {
    int wanted = 0;
    for (int k = 0; k < o->n_recipes; ++k) wanted |= name_matches(jstr(row, "recipe"), o->recipes[k]);
    if (!wanted) continue;
    const char *dn = jstr(row, "device");
    if (o->device && !strcasestr(dn, o->device)) continue;
    int seen = 0;
    for (int k = 0; k < n_names; ++k) seen |= !strcmp(names[k], dn);
    if (!seen && n_names < 8) snprintf(names[n_names++], sizeof names[0], "%s", dn);
  }
  if (n_names == 0) {
    char have[1024] = "";
    size_t len = 0;
    json_array_foreach(s->best_rows, i, row) {
      char item[300];
      snprintf(item, sizeof item, "%s on %s", jstr(row, "recipe"), jstr(row, "device"));
      if (!strstr(have, item) && len < sizeof have) len += (size_t)snprintf(have + len, sizeof have - len, "%s%s", len ? ", " : "", item);
    }
    return tune_fail(err, TUNE_ENOTFOUND, "%s: no verified (ok) result for %s%s%s (it has: %s)", dbs, o->recipes[0],
                     o->device ? " on a device matching " : "", o->device ? o->device : "", have[0] ? have : "nothing");
  }
  if (n_names > 1) {
    char list[1024] = "";
    size_t len = 0;
    for (int k = 0; k < n_names; ++k) len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'", k ? ", " : "", names[k]);
    return tune_fail(err, TUNE_EINVAL, "%s has results on several devices (%s): choose one with --device NAME", dbs, list);
  }
  snprintf(s->device_name, sizeof s->device_name, "%s", names[0]);
  /* entries: per recipe and problem, the best row we may take */
  s->ent = calloc(MAX_ENTRIES, sizeof *s->ent);
  s->var = calloc(MAX_ENTRIES, sizeof *s->var);
  if (!s->ent || !s->var) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  for (int k = 0; k < o->n_recipes; ++k) {
    int found = 0;
    json_array_foreach(s->best_rows, i, row) {
      if (!name_matches(jstr(row, "recipe"), o->recipes[k]) || strcmp(jstr(row, "device"), s->device_name)) continue;
      found = 1;
      /* the family */
      const char *rname = jstr(row, "recipe");
      int fi = -1;
      for (int j = 0; j < s->n_families; ++j)
        if (!strcmp(s->fam[j].name, rname)) fi = j;
      json_t *show = NULL;
      if (db_query_show(s->dbs[jint(row, "db_index")], (int64_t)jint(row, "result_id"), &show, err)) return err->code;
      if (fi < 0) {
        if (s->n_families == 64) { json_decref(show); return tune_fail(err, TUNE_EINVAL, "bundle: too many families"); }
        const char *recorded = jstr(json_object_get(show, "recipe"), "path");
        char path[PATH_MAX];
        if (resolve_recipe(s, recorded, path, sizeof path)) {
          json_decref(show);
          return tune_fail(err, TUNE_EINVAL, "recipe %s: its file %s (as recorded in %s) is not found here or next to tune", rname, recorded, dbs);
        }
        char real[PATH_MAX];
        if (realpath(path, real)) snprintf(path, sizeof path, "%s", real);
        tune_recipes *set = NULL;
        if (load_set(s, path, &set, err)) { json_decref(show); return err->code; }
        tune_recipe *r = NULL;
        for (int j = 0; j < set->n; ++j)
          if (!strcmp(set->r[j].name, rname)) r = &set->r[j];
        if (!r) { json_decref(show); return tune_fail(err, TUNE_EINVAL, "%s no longer defines recipe %s", path, rname); }
        fi = s->n_families++;
        bfamily *f = &s->fam[fi];
        memset(f, 0, sizeof *f);
        f->r = r;
        snprintf(f->name, sizeof f->name, "%s", rname);
        snprintf(f->measured_arch, sizeof f->measured_arch, "%s", jstr(row, "arch"));
        snprintf(f->recipe_file, sizeof f->recipe_file, "%s", recorded);
        if (family_layout(f, r, err)) { json_decref(show); return err->code; }
        if (!s->device) s->device = json_incref(json_object_get(show, "device"));
      }
      bfamily *f = &s->fam[fi];
      const tune_problem *p = NULL;
      for (int j = 0; j < f->r->n_problems; ++j)
        if (!strcmp(f->r->problems[j].hash, jstr(row, "problem_hash"))) p = &f->r->problems[j];
      int same_source = !strcmp(jstr(row, "source_hash"), f->r->source_hash);
      if (!p) {
        if (!o->quiet) printf("  note: %s / %s: problem no longer in the recipe: left out\n", rname, jstr(row, "problem"));
        json_decref(show);
        continue;
      }
      /* another row for the same problem (another source): keep the current source's, else the faster */
      int prev = -1;
      for (int j = 0; j < s->n_entries; ++j)
        if (s->ent[j].family == fi && s->ent[j].p == p) prev = j;
      if (prev >= 0) {
        bentry *q = &s->ent[prev];
        int keep_prev = (!q->mismatch_source && !same_source) ||
                        (q->mismatch_source == !same_source && jnum(q->best, "median_ns") <= jnum(row, "median_ns"));
        if (keep_prev) { json_decref(show); continue; }
        json_decref(q->show);
      } else {
        if (s->n_entries == MAX_ENTRIES) { json_decref(show); return tune_fail(err, TUNE_EINVAL, "bundle: too many entries"); }
        prev = s->n_entries++;
      }
      bentry *be = &s->ent[prev];
      memset(be, 0, sizeof *be);
      be->family = fi;
      be->p = p;
      be->best = row;
      be->show = show;
      be->mismatch_source = !same_source;
    }
    if (!found)
      return tune_fail(err, TUNE_ENOTFOUND, "%s: no verified result for recipe %s on %s", dbs, o->recipes[k], s->device_name);
  }
  return TUNE_OK;
}

/* Evaluate each entry, group them into variants (config + defines). */
static int evaluate(bstate *s, tune_err *err) {
  for (int i = 0; i < s->n_entries; ++i) {
    bentry *be = &s->ent[i];
    bfamily *f = &s->fam[be->family];
    tune_recipe *r = f->r;
    int vi[64];
    if (r->n_params > 64 || params_to_vi(r, json_object_get(be->best, "params"), vi)) {
      char *pj = json_dumps(json_object_get(be->best, "params"), JSON_COMPACT);
      tune_fail(err, TUNE_EINVAL, "%s / %s: config %s is not in the recipe's space any more", r->name, be->p->name, pj ? pj : "?");
      free(pj);
      return err->code;
    }
    tune_device_facts facts;
    facts_from(json_object_get(be->show, "device"), &facts);
    if (tune_recipe_eval_variant(r, vi, be->p, &facts, &be->var, err)) return err->code;
    if (be->var.skip) return tune_fail(err, TUNE_ERECIPE, "%s / %s: the recipe now skips the measured config: %s", r->name, be->p->name, be->var.skip_reason);
    if (tune_recipe_eval_problem(r, be->p, &facts, &be->setup, err)) return err->code;
    if (tune_recipe_exprs(r, &be->var, &be->setup, &be->ex, err)) return err->code;
    /* tensor maps (docs/tensormap-args.md): their spec as texts, checked in check_tmaps */
    for (int a = 0; a < r->n_args; ++a) {
      if (!r->args[a].is_tmap) continue;
      if (!be->tm && !(be->tm = calloc((size_t)r->n_args, sizeof *be->tm))) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
      if (tune_recipe_tmap_exprs(r, a, &be->var, &be->tm[a], err)) return err->code;
    }
    for (int a = 0; a < r->n_args; ++a)
      if (!r->args[a].is_tensor && !r->args[a].is_tmap && (r->args[a].dtype == TUNE_F16 || r->args[a].dtype == TUNE_BF16))
        return tune_fail(err, TUNE_ERECIPE, "%s: scalar %s of dtype %s: the tuner passes no half scalars, so none is bundled", r->name, r->args[a].name, tune_dtype_name(r->args[a].dtype));
    /* the variant: same family, config and defines */
    char defs[4096];
    size_t len = 0;
    defs[0] = 0;
    for (int k = 0; k < be->var.n_defines; ++k)
      len += (size_t)snprintf(defs + len, len < sizeof defs ? sizeof defs - len : 0, "%s%s", k ? " " : "", be->var.defines[k]);
    const char *ch = jstr(be->best, "config_hash");
    int vid = -1;
    for (int k = 0; k < s->n_variants; ++k)
      if (s->var[k].family == be->family && !strcmp(s->var[k].config_hash, ch) && !strcmp(s->var[k].defines_text, defs)) vid = k;
    if (vid < 0) {
      vid = s->n_variants++;
      bvariant *bv = &s->var[vid];
      bv->family = be->family;
      memcpy(bv->vi, vi, sizeof vi);
      snprintf(bv->config_hash, sizeof bv->config_hash, "%s", ch);
      tune_recipe_config_json(r, vi, bv->params_json, sizeof bv->params_json);
      bv->var = be->var;
      snprintf(bv->defines_text, sizeof bv->defines_text, "%s", defs);
      /* a code proposal's variant (docs/llm-hook.md) is rebuilt from its stored code */
      const char *origin = jstr(json_object_get(be->show, "config"), "origin");
      if (!strncmp(origin, TUNE_CODE_ORIGIN, strlen(TUNE_CODE_ORIGIN))) {
        json_t *pr = json_object_get(be->show, "proposal");
        char why[300];
        if (!pr || strcmp(jstr(pr, "kind"), "code") ||
            tune_code_splice_file(r->template_path, jstr(pr, "region"), jstr(pr, "code"), &bv->source_text, why, sizeof why))
          return tune_fail(err, TUNE_ERECIPE, "%s / %s: the best result is the code of proposal %s, which cannot be rebuilt: %s",
                           r->name, be->p->name, origin + strlen(TUNE_CODE_ORIGIN), pr ? why : "the proposal is not in the database");
      }
    }
    be->variant = vid;
  }
  return TUNE_OK;
}

static int compile_all(bstate *s, tune_compile_job **jobs_out, int *n_out, tune_err *err) {
  int per = s->n_archs * (s->o->no_ptx ? 1 : 2);
  int n = s->n_variants * per;
  tune_compile_job *jobs = calloc((size_t)n, sizeof *jobs);
  char (*templates)[PATH_MAX + 16] = s->templates;
  char (*ptx_archs)[24] = s->ptx_archs;
  if (!jobs) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  *jobs_out = jobs;
  *n_out = n;
  for (int a = 0; a < s->n_archs; ++a) tune_compute_arch(s->archs[a], ptx_archs[a], sizeof ptx_archs[a]);
  for (int fi = 0; fi < s->n_families; ++fi) snprintf(templates[fi], sizeof templates[fi], "%s/templates", s->fam[fi].r->root);
  for (int v = 0; v < s->n_variants; ++v) {
    bvariant *bv = &s->var[v];
    bv->job0 = v * per;
    for (int k = 0; k < per; ++k) {
      tune_compile_job *j = &jobs[v * per + k];
      int ptx = k >= s->n_archs;
      j->source_path = s->fam[bv->family].r->template_path;
      if (bv->source_text) { j->source_text = bv->source_text; j->text_of_template = 1; }
      j->include_root = templates[bv->family];
      j->arch = ptx ? ptx_archs[k - s->n_archs] : s->archs[k];
      j->n_defines = bv->var.n_defines;
      j->defines = (const char(*)[160])bv->var.defines;
      j->n_names = bv->var.n_launches;
      for (int l = 0; l < bv->var.n_launches; ++l) { j->names[l] = bv->var.launch[l].kernel; j->is_expr[l] = bv->var.launch[l].is_expr; }
      if (!ptx && tune_compile_key(j, err)) return err->code;
    }
  }
  /* cubins then PTX, each batch on the pool; the jobs of one kind are contiguous per variant */
  tune_compile_job *cub = calloc((size_t)s->n_variants * (size_t)s->n_archs, sizeof *cub);
  tune_compile_job *px = s->o->no_ptx ? NULL : calloc((size_t)s->n_variants * (size_t)s->n_archs, sizeof *px);
  if (!cub || (!s->o->no_ptx && !px)) { free(cub); free(px); return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory"); }
  int nc = 0, np = 0;
  for (int v = 0; v < s->n_variants; ++v)
    for (int k = 0; k < per; ++k) {
      if (k < s->n_archs) cub[nc++] = jobs[v * per + k];
      else px[np++] = jobs[v * per + k];
    }
  int rc = tune_compile_batch(cub, nc, s->o->jobs, err);
  if (!rc && np) rc = tune_compile_ptx_batch(px, np, s->o->jobs, err);
  nc = np = 0;
  for (int v = 0; v < s->n_variants; ++v)
    for (int k = 0; k < per; ++k) jobs[v * per + k] = k < s->n_archs ? cub[nc++] : px[np++];
  free(cub);
  free(px);
  if (rc) return rc;
  for (int i = 0; i < n; ++i) {
    if (!jobs[i].bin.ok) {
      bvariant *bv = &s->var[i / per];
      return tune_fail(err, TUNE_ERECIPE, "%s variant %s does not compile for %s now:\n%.2000s", s->fam[bv->family].name,
                       bv->params_json, jobs[i].arch, jobs[i].bin.log ? jobs[i].bin.log : "");
    }
  }
  for (int v = 0; v < s->n_variants; ++v)
    for (int l = 0; l < s->var[v].var.n_launches; ++l)
      snprintf(s->var[v].lowered[l], sizeof s->var[v].lowered[l], "%s", jobs[v * per].lowered[l]);
  return TUNE_OK;
}

static const char *role_of(const tune_arg_def *a) {
  return a->is_tmap ? "tensormap" : !a->is_tensor ? "scalar" : a->scratch ? "scratch" : a->output ? "output" : "input";
}

static int write_bundle(bstate *s, tune_compile_job *jobs, tune_err *err) {
  const tune_bundle_opts *o = s->o;
  db_bundle_writer *w = NULL;
  int per = s->n_archs * (o->no_ptx ? 1 : 2);
  if (db_bundle_create(o->out, &w, err)) return err->code;
  char archs[256] = "", ptxs[256] = "";
  for (int a = 0; a < s->n_archs; ++a) {
    char c[24];
    tune_compute_arch(s->archs[a], c, sizeof c);
    snprintf(archs + strlen(archs), sizeof archs - strlen(archs), "%s%s", a ? "," : "", s->archs[a]);
    snprintf(ptxs + strlen(ptxs), sizeof ptxs - strlen(ptxs), "%s%s", a ? "," : "", c);
  }
  char all_archs[520];
  snprintf(all_archs, sizeof all_archs, "%s%s%s", archs, o->no_ptx ? "" : ",", o->no_ptx ? "" : ptxs);
  char smc[32];
  snprintf(smc, sizeof smc, "%lld", jint(s->device, "sm_count"));
  struct { const char *k, *v; } meta[] = {
      {"tool_version", TUNE_VERSION}, {"nvrtc_version", tune_nvrtc_version()}, {"device_name", s->device_name},
      {"device_arch", jstr(s->device, "arch")}, {"device_uuid", jstr(s->device, "uuid")},
      {"device_driver", jstr(s->device, "driver")}, {"device_sm_count", smc}, {"archs", all_archs},
      {"source_db", s->db_list}, {"made_by", "tune bundle"}};
  for (size_t i = 0; i < sizeof meta / sizeof meta[0]; ++i)
    if (db_bundle_meta(w, meta[i].k, meta[i].v, err)) goto fail;
  for (int fi = 0; fi < s->n_families; ++fi) {
    bfamily *f = &s->fam[fi];
    tune_recipe *r = f->r;
    const char *tpl = r->template_path;
    size_t rl = strlen(r->root);
    if (!strncmp(tpl, r->root, rl) && tpl[rl] == '/') tpl += rl + 1;
    db_bundle_family df = {.name = f->name, .source_hash = r->source_hash, .recipe_file = f->recipe_file,
                           .recipe_source = r->set->file_text ? r->set->file_text : "", .template_path = tpl,
                           .dims = f->dims, .params = f->params};
    if (db_bundle_family_put(w, &df, &f->id, err)) goto fail;
    for (int a = 0; a < r->n_args; ++a)
      if (db_bundle_arg_put(w, f->id, a, r->args[a].name, role_of(&r->args[a]), tune_dtype_name(r->args[a].dtype), err)) goto fail;
  }
  for (int v = 0; v < s->n_variants; ++v) {
    bvariant *bv = &s->var[v];
    tune_recipe *r = s->fam[bv->family].r;
    char values[2048] = "", kernels[2100] = "";
    for (int k = 0; k < r->n_params; ++k) {
      const tune_value *x = &r->params[k].values[bv->vi[k]];
      char item[64];
      if (x->kind == 'b') snprintf(item, sizeof item, "%s", x->i ? "true" : "false");
      else if (x->kind == 'i') snprintf(item, sizeof item, "%lld", x->i);
      else snprintf(item, sizeof item, "0");
      snprintf(values + strlen(values), sizeof values - strlen(values), "%s%s", k ? ", " : "", item);
    }
    for (int l = 0; l < bv->var.n_launches; ++l)
      snprintf(kernels + strlen(kernels), sizeof kernels - strlen(kernels), "%s%s", l ? " " : "", bv->lowered[l]);
    db_bundle_variant dv = {.family_id = s->fam[bv->family].id, .config_hash = bv->config_hash, .params_json = bv->params_json,
                            .param_values = values, .defines = bv->defines_text, .kernels = kernels};
    if (db_bundle_variant_put(w, &dv, &bv->id, err)) goto fail;
    for (int k = 0; k < per; ++k) {
      tune_compile_job *j = &jobs[v * per + k];
      int ptx = k >= s->n_archs;
      db_bundle_binary b = {.variant_id = bv->id, .kind = ptx ? "ptx" : "cubin", .arch = j->arch,
                            .compile_key = j->bin.key[0] ? j->bin.key : "-",
                            .data = ptx ? (const void *)j->bin.ptx : (const void *)j->bin.cubin,
                            .size = ptx ? j->bin.ptx_size : j->bin.cubin_size, .registers = j->bin.registers,
                            .shared_bytes = j->bin.shared_bytes, .local_bytes = j->bin.local_bytes,
                            .spill_stores = j->bin.spill_stores, .spill_loads = j->bin.spill_loads};
      if (db_bundle_binary_put(w, &b, err)) goto fail;
    }
  }
  for (int i = 0; i < s->n_entries; ++i) {
    bentry *be = &s->ent[i];
    bfamily *f = &s->fam[be->family];
    bvariant *bv = &s->var[be->variant];
    json_t *sh = be->show;
    char seed[32];
    json_t *sj = json_object_get(sh, "seed");
    if (json_is_integer(sj)) snprintf(seed, sizeof seed, "%llu", (unsigned long long)json_integer_value(sj));
    else snprintf(seed, sizeof seed, "%s", json_string_value(sj) ? json_string_value(sj) : "");
    json_t *run = json_object_get(sh, "run");
    db_bundle_entry de = {
        .family_id = f->id, .variant_id = bv->id, .problem_name = be->p->name, .problem_hash = be->p->hash,
        .dims = be->dims_text, .dims_json = be->p->dims_json, .portable = be->portable, .exact_why = be->exact_why,
        .requires = be->ex.requires, .define_exprs = be->ex.define_exprs, .define_values = be->define_values,
        .median_ns = jnum(be->best, "median_ns"), .min_ns = jnum(be->best, "min_ns"), .stddev_ns = jnum(be->best, "stddev_ns"),
        .samples = (int)jint(be->best, "samples"), .err_rel_l2 = jnum(sh, "err_rel_l2"), .result_id = jint(be->best, "result_id"),
        .measured_at = jstr(be->best, "created_at"), .device_name = s->device_name,
        .device_uuid = jstr(json_object_get(sh, "device"), "uuid"), .driver = jstr(json_object_get(sh, "device"), "driver"),
        .backend = json_is_object(run) ? jstr(run, "backend") : "", .seed = seed,
        .measured_source_hash = jstr(be->best, "source_hash"), .same_binary = be->same_binary};
    int64_t eid;
    if (db_bundle_entry_put(w, &de, &eid, err)) goto fail;
    for (int l = 0; l < be->ex.n_launches; ++l)
      if (db_bundle_launch_put(w, eid, l, be->ex.grid[l].text, be->ex.block[l].text, be->ex.shared[l].text, err) ||
          (strcmp(be->ex.cluster[l].text, "1, 1, 1") && /* a cluster: readers before 1.2 must not take it */
           (db_bundle_launch_cluster_put(w, eid, l, be->ex.cluster[l].text, err) || db_bundle_meta(w, "min_reader_minor", "2", err))))
        goto fail;
    for (int a = 0; a < f->r->n_args; ++a) {
      const tune_arg_def *ad = &f->r->args[a];
      int t = ad->is_tensor;
      if (ad->is_tmap) {
        char estr[64] = "";
        for (int k = 0; k < ad->tmap.n_estr; ++k) snprintf(estr + strlen(estr), sizeof estr - strlen(estr), "%s%u", k ? ", " : "", ad->tmap.estr[k]);
        db_bundle_tensormap tm = {.entry_id = eid, .idx = a, .tensor = ad->tmap.tensor, .dtype = tune_dtype_name(f->r->args[ad->tmap.tensor].dtype),
                                  .dims = be->tm[a].dims.text, .strides = be->tm[a].strides.text, .box = be->tm[a].box.text,
                                  .swizzle = ad->tmap.swizzle, .l2_promotion = ad->tmap.l2_promotion, .oob_nan = ad->tmap.oob_nan,
                                  .element_strides = estr};
        if (db_bundle_entry_arg_put(w, eid, a, "", "", err) || db_bundle_tensormap_put(w, &tm, err)) goto fail;
        continue;
      }
      if (db_bundle_entry_arg_put(w, eid, a, t ? be->ex.shape[a].text : "", t ? "" : be->ex.value[a].text, err)) goto fail;
    }
  }
  return db_bundle_commit(w, err);
fail:
  db_bundle_abort(w);
  return err->code;
}

/* Open the written bundle with libtunert and select every tuned problem. */
/* The cluster libtunert selected (NULL: a library without clusters, read as 1x1x1) against the tuner's. */
static int same_cluster(const unsigned *got, const unsigned want[3]) {
  for (int k = 0; k < 3; ++k)
    if ((got ? got[k] : 1) != (want[k] ? want[k] : 1)) return 0;
  return 1;
}

static int verify(bstate *s, tune_err *err) {
  tunert_options opt;
  tunert_options_init(&opt);
  opt.arch = s->archs[0];
  opt.flags = TUNERT_OPEN_NO_DEVICE;
  tunert_ctx *ctx = NULL;
  tunert_err te;
  if (tunert_open(s->o->out, &opt, &ctx, &te)) return tune_fail(err, TUNE_EINTERNAL, "the bundle does not open: %s", te.msg);
  int rc = TUNE_OK;
  for (int i = 0; i < s->n_entries && !rc; ++i) {
    bentry *be = &s->ent[i];
    bfamily *f = &s->fam[be->family];
    tunert_xval env[TUNERT_MAX_DIMS + 64];
    char why[256];
    int64_t dims[TUNERT_MAX_DIMS];
    make_env(f, be->p, f->r, s->var[be->variant].vi, env, why, sizeof why);
    for (int d = 0; d < f->n_dims; ++d) dims[d] = env[d].i;
    const tunert_selection *sel;
    if (tunert_select(ctx, f->name, dims, f->n_dims, &sel, &te)) { rc = tune_fail(err, TUNE_EINTERNAL, "bundle check: %s", te.msg); break; }
    tunert_selection_info info = {.struct_size = sizeof info};
    tunert_selection_info_get(sel, &info);
    if (!info.exact || strcmp(info.variant, s->var[be->variant].params_json)) {
      rc = tune_fail(err, TUNE_EINTERNAL, "bundle check: %s / %s selects %s, want %s", f->name, be->p->name, info.variant, s->var[be->variant].params_json);
      break;
    }
    for (int l = 0; l < info.n_launches; ++l) {
      const tune_launch *x = &be->var.launch[l];
      if (memcmp(info.launches[l].grid, x->grid, sizeof x->grid) || memcmp(info.launches[l].block, x->block, sizeof x->block) ||
          info.launches[l].shared != x->shared || !same_cluster(info.clusters ? info.clusters[l] : NULL, x->cluster)) {
        rc = tune_fail(err, TUNE_EINTERNAL, "bundle check: %s / %s: launch %d geometry differs from the tuner's", f->name, be->p->name, l);
        break;
      }
    }
    for (int a = 0; a < f->r->n_args && !rc; ++a) {
      if (!f->r->args[a].is_tmap) continue;
      const tune_tmap_var *tv = &be->var.tmap[a];
      const tunert_tensormap_info *ti = info.tensormaps ? &info.tensormaps[a] : NULL;
      int same = ti && ti->tensor == f->r->args[a].tmap.tensor && ti->rank == tv->rank;
      for (int k = 0; same && k < tv->rank; ++k)
        same = ti->dims[k] == tv->dims[k] && ti->box[k] == tv->box[k] && (k + 1 == tv->rank || ti->strides[k] == tv->strides[k]);
      if (!same) rc = tune_fail(err, TUNE_EINTERNAL, "bundle check: %s / %s: tensor map %s differs from the tuner's", f->name, be->p->name, f->r->args[a].name);
    }
  }
  tunert_close(ctx);
  return rc;
}

int tune_bundle_run(const tune_bundle_opts *o, tune_err *err) {
  bstate *s = calloc(1, sizeof *s);
  if (!s) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  s->o = o;
  tune_compile_job *jobs = NULL;
  int n_jobs = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  s->n_dbs = o->n_dbs > 0 ? o->n_dbs : 1;
  for (int d = 0; d < s->n_dbs; ++d) {
    s->db_paths[d] = o->n_dbs > 0 ? o->db_paths[d] : o->db_path;
    size_t len = strlen(s->db_list);
    snprintf(s->db_list + len, sizeof s->db_list - len, "%s%s", d ? ", " : "", s->db_paths[d]);
    if (db_open(s->db_paths[d], 1, &s->dbs[d], err)) goto fail;
  }
  if (collect(s, err)) goto fail;
  if (parse_archs(s, o->archs ? o->archs : s->fam[0].measured_arch, err)) goto fail;
  if (evaluate(s, err)) goto fail;
  if (!o->quiet)
    printf("bundling %d famil%s, %d tuned problems, %d variants measured on %s; compiling for %s%s on %d threads\n",
           s->n_families, s->n_families == 1 ? "y" : "ies", s->n_entries, s->n_variants, s->device_name,
           o->archs ? o->archs : s->archs[0], o->no_ptx ? "" : " (cubin + PTX)", o->jobs);
  fflush(stdout);
  if (compile_all(s, &jobs, &n_jobs, err)) goto fail;
  /* same binary as measured? then a changed recipe source does not matter */
  int refused = 0;
  for (int i = 0; i < s->n_entries; ++i) {
    bentry *be = &s->ent[i];
    const char *measured_key = jstr(be->show, "binary_key");
    be->same_binary = -1;
    for (int a = 0; a < s->n_archs; ++a)
      if (!strcmp(s->archs[a], jstr(be->best, "arch")) && measured_key[0])
        be->same_binary = !strcmp(jobs[s->var[be->variant].job0 + a].bin.key, measured_key);
    if (be->mismatch_source && be->same_binary != 1) {
      if (!o->allow_source_change) {
        if (!refused++)
          fprintf(stderr, "tune bundle: %s / %s was measured with recipe source %s; the recipe and templates now hash to %s "
                          "and compile to a different binary.\n",
                  s->fam[be->family].name, be->p->name, jstr(be->best, "source_hash"), s->fam[be->family].r->source_hash);
      } else if (!o->quiet)
        printf("  warning: %s / %s: measured with source %s, bundled from source %s (--allow-source-change; recorded in the bundle)\n",
               s->fam[be->family].name, be->p->name, jstr(be->best, "source_hash"), s->fam[be->family].r->source_hash);
    }
  }
  if (refused) {
    tune_fail(err, TUNE_EINVAL, "%d tuned problem(s) were measured with other code than the current recipe/templates: "
              "measure again (tune run) or pass --allow-source-change to bundle the current code with those measurements", refused);
    goto fail;
  }
  for (int i = 0; i < s->n_entries; ++i)
    if (check_entry(s, &s->ent[i], err)) goto fail;
  if (write_bundle(s, jobs, err)) goto fail;
  if (verify(s, err)) { unlink(o->out); goto fail; }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!o->quiet) {
    for (int fi = 0; fi < s->n_families; ++fi) {
      bfamily *f = &s->fam[fi];
      printf("\n%s (%s, source %s):\n", f->name, f->recipe_file, f->r->source_hash);
      for (int i = 0; i < s->n_entries; ++i) {
        bentry *be = &s->ent[i];
        if (be->family != fi) continue;
        char t[32];
        fmt_ns(jnum(be->best, "median_ns"), t, sizeof t);
        printf("  %-22s %10s  %s\n  %-22s %10s  %s%s\n", be->p->name, t, s->var[be->variant].params_json, "", "",
               be->portable ? "portable: expressions, usable for nearby problems" : "exact-only: ",
               be->portable ? "" : be->exact_why);
      }
    }
    long size = 0;
    FILE *fp = fopen(o->out, "rb");
    if (fp) { fseek(fp, 0, SEEK_END); size = ftell(fp); fclose(fp); }
    printf("\nwrote %s: %d famil%s, %d problems, %d variants, %d binaries (%s), %.1f KiB in %.1f s; checked with libtunert\n",
           o->out, s->n_families, s->n_families == 1 ? "y" : "ies", s->n_entries, s->n_variants, n_jobs,
           o->archs ? o->archs : s->archs[0], size / 1024.0,
           (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
  }
fail:
  for (int i = 0; i < n_jobs; ++i) db_binary_release(&jobs[i].bin);
  free(jobs);
  for (int i = 0; s->ent && i < s->n_entries; ++i) { json_decref(s->ent[i].show); free(s->ent[i].tm); }
  free(s->ent);
  for (int i = 0; s->var && i < s->n_variants; ++i) free(s->var[i].source_text);
  free(s->var);
  json_decref(s->best_rows);
  json_decref(s->device);
  for (int i = 0; i < s->n_sets; ++i) tune_recipes_free(s->sets[i]);
  for (int d = 0; d < s->n_dbs; ++d) db_close(s->dbs[d]);
  free(s);
  return err->code;
}

static const char *usage_bundle =
    "usage: tune bundle --recipe NAME [--recipe NAME...] -o FILE [options]\n"
    "\n"
    "Writes a bundle for libtunert (docs/runtime.md): per kernel family and tuned\n"
    "problem, the fastest verified variant in the database for one device, its\n"
    "cubin per architecture and its PTX (compiled now with NVRTC), its launch\n"
    "geometry as expressions, its arguments and where it all came from.\n"
    "\n"
    "  --recipe NAME          a recipe name (copy, attention.prefill) or a family\n"
    "                         prefix (attention); repeatable, or comma-separated\n"
    "  -o, --out FILE         the bundle to write (replaced atomically)\n"
    "  --db FILE              results database (default tune.db); repeatable: the\n"
    "                         results of all are taken together (one device)\n"
    "  --device NAME          the device whose results to take, when the database has\n"
    "                         several (a case-insensitive part of its name)\n"
    "  --arch LIST            architectures to compile for, e.g. sm_90a,sm_80\n"
    "                         (default: the one the results were measured on)\n"
    "  --no-ptx               cubins only (no JIT fallback)\n"
    "  --allow-source-change  take results measured with an older recipe or template\n"
    "                         source (the bundle records both hashes)\n"
    "  --jobs N               compile threads (default: cores)\n"
    "  --quiet                no per-problem summary\n";

int tune_cmd_bundle(int argc, char **argv) {
  tune_bundle_opts o;
  memset(&o, 0, sizeof o);
  o.db_path = "tune.db";
  o.jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
  static char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  o.exe = exe;
  static char recipes_buf[TUNE_BUNDLE_MAX_RECIPES][128];
  for (int i = 0; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED() do { if (!v) { fprintf(stderr, "tune bundle: %s needs a value\n", a); return 2; } ++i; } while (0)
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage_bundle, stdout); return 0; }
    else if (!strcmp(a, "--recipe")) {
      NEED();
      char buf[1024];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o.n_recipes == TUNE_BUNDLE_MAX_RECIPES) { fprintf(stderr, "tune bundle: too many --recipe\n"); return 2; }
        snprintf(recipes_buf[o.n_recipes], sizeof recipes_buf[0], "%s", t);
        o.recipes[o.n_recipes] = recipes_buf[o.n_recipes];
        o.n_recipes++;
      }
    } else if (!strcmp(a, "-o") || !strcmp(a, "--out")) { NEED(); o.out = v; }
    else if (!strcmp(a, "--db")) {
      NEED();
      if (o.n_dbs == TUNE_BUNDLE_MAX_DBS) { fprintf(stderr, "tune bundle: at most %d --db\n", TUNE_BUNDLE_MAX_DBS); return 2; }
      o.db_paths[o.n_dbs++] = o.db_path = v;
    }
    else if (!strcmp(a, "--device")) { NEED(); o.device = v; }
    else if (!strcmp(a, "--arch")) { NEED(); o.archs = v; }
    else if (!strcmp(a, "--jobs")) { NEED(); o.jobs = atoi(v); if (o.jobs < 1) { fprintf(stderr, "tune bundle: --jobs %s: want a positive count\n", v); return 2; } }
    else if (!strcmp(a, "--no-ptx")) o.no_ptx = 1;
    else if (!strcmp(a, "--allow-source-change")) o.allow_source_change = 1;
    else if (!strcmp(a, "--quiet")) o.quiet = 1;
    else { fprintf(stderr, "tune bundle: unknown argument %s (see tune bundle --help)\n", a); return 2; }
#undef NEED
  }
  if (!o.n_recipes || !o.out) { fputs(usage_bundle, stderr); return 2; }
  if (o.n_dbs) o.db_path = o.db_paths[0];
  for (int d = 0; d < (o.n_dbs ? o.n_dbs : 1); ++d) {
    const char *p = o.n_dbs ? o.db_paths[d] : o.db_path;
    if (access(p, R_OK)) { fprintf(stderr, "tune bundle: %s: no such database (--db FILE)\n", p); return 1; }
  }
  tune_err err;
  tune_err_clear(&err);
  if (tune_bundle_run(&o, &err)) {
    fprintf(stderr, "tune bundle: %s\n", err.msg);
    return 1;
  }
  return 0;
}
