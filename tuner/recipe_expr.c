/* recipe_expr.c: raw recipe fields as bundle expression texts (see recipe_expr.h). */
#include "recipe_expr.h"

#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <string.h>

static void where_of(lua_State *L, int idx, const tune_recipe *r, char *buf, size_t n) {
  lua_Debug ar;
  lua_pushvalue(L, idx);
  if (lua_getinfo(L, ">S", &ar) && ar.linedefined > 0) snprintf(buf, n, "%s:%d", ar.short_src, ar.linedefined);
  else snprintf(buf, n, "%s", r->file);
}

/* Append an item to a comma list. */
static void add_item(char *buf, size_t n, const char *item) {
  size_t len = strlen(buf);
  int paren = strchr(item, ',') != NULL;
  snprintf(buf + len, n - len, "%s%s%s%s", len ? ", " : "", paren ? "(" : "", item, paren ? ")" : "");
}

/* A number or boolean at idx as a literal. */
static int literal(lua_State *L, int idx, char *buf, size_t n) {
  if (lua_type(L, idx) == LUA_TBOOLEAN) { snprintf(buf, n, "%s", lua_toboolean(L, idx) ? "true" : "false"); return 0; }
  if (lua_type(L, idx) != LUA_TNUMBER) return -1;
  if (lua_isinteger(L, idx)) snprintf(buf, n, "%lld", (long long)lua_tointeger(L, idx));
  else {
    double d = lua_tonumber(L, idx);
    snprintf(buf, n, "%.17g", d);
    if (isfinite(d) && !strpbrk(buf, ".eE")) strncat(buf, ".0", n - strlen(buf) - 1);
  }
  return 0;
}

/* The value at idx (number, string, list of them, or function) as an
 * expression list; dim3 pads to 3 items with 1. Returns 1 when it is (or
 * contains) a function (f->frozen set, text left to the caller), 0 when
 * f->text was filled, -1 when the form is not understood. */
static int field_text(lua_State *L, int idx, const tune_recipe *r, int dim3, tune_field_text *f) {
  f->text[0] = 0;
  int t = lua_type(L, idx);
  char item[1024];
  if (t == LUA_TFUNCTION) { f->frozen = 1; where_of(L, idx, r, f->where, sizeof f->where); return 1; }
  if (t == LUA_TNUMBER || t == LUA_TBOOLEAN) {
    literal(L, idx, item, sizeof item);
    add_item(f->text, sizeof f->text, item);
  } else if (t == LUA_TSTRING) {
    const char *s = lua_tostring(L, idx);
    const char *p = s;
    while (*p == ' ') ++p;
    if (*p == '{') snprintf(f->text, sizeof f->text, "%s", s); /* a list constructor */
    else add_item(f->text, sizeof f->text, s);
  } else if (t == LUA_TTABLE) {
    int n = (int)lua_rawlen(L, idx);
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, idx, i);
      int et = lua_type(L, -1);
      if (et == LUA_TFUNCTION) { f->frozen = 1; where_of(L, lua_gettop(L), r, f->where, sizeof f->where); lua_pop(L, 1); return 1; }
      if (et == LUA_TSTRING) add_item(f->text, sizeof f->text, lua_tostring(L, -1));
      else if (!literal(L, -1, item, sizeof item)) add_item(f->text, sizeof f->text, item);
      else { lua_pop(L, 1); return -1; }
      lua_pop(L, 1);
    }
    if (dim3) for (int i = n; i < 3; ++i) add_item(f->text, sizeof f->text, "1");
    return 0;
  } else return -1;
  if (dim3 && f->text[0] != '{') { add_item(f->text, sizeof f->text, "1"); add_item(f->text, sizeof f->text, "1"); }
  return 0;
}

static void note_fn(tune_variant_exprs *out, lua_State *L, int idx, const tune_recipe *r) {
  if (!out->fn_where[0]) where_of(L, idx, r, out->fn_where, sizeof out->fn_where);
}

int tune_recipe_exprs(tune_recipe *r, const tune_variant *v, const tune_problem_setup *s, tune_variant_exprs *out,
                      tune_err *err) {
  lua_State *L = r->set->L;
  int top = lua_gettop(L);
  memset(out, 0, sizeof *out);
  lua_rawgeti(L, LUA_REGISTRYINDEX, r->ref);
  int rt = lua_gettop(L);
  int rc = TUNE_OK;
  /* applies, kernel, defines, requires */
  if (lua_getfield(L, rt, "applies") == LUA_TFUNCTION) { out->applies_fn = 1; note_fn(out, L, -1, r); }
  lua_pop(L, 1);
  if (lua_getfield(L, rt, "kernel") == LUA_TFUNCTION) { out->kernel_fn = 1; note_fn(out, L, -1, r); }
  lua_pop(L, 1);
  int dt = lua_getfield(L, rt, "defines");
  if (dt == LUA_TFUNCTION) { out->defines_fn = 1; note_fn(out, L, -1, r); }
  else if (dt == LUA_TTABLE) {
    const char *keys[TUNE_MAX_DEFINES];
    int k = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING && k < TUNE_MAX_DEFINES) keys[k++] = lua_tostring(L, -2);
      lua_pop(L, 1);
    }
    for (int i = 1; i < k; ++i)
      for (int j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; --j) { const char *x = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = x; }
    for (int i = 0; i < k; ++i) {
      lua_getfield(L, -1, keys[i]);
      add_item(out->define_exprs, sizeof out->define_exprs, lua_tostring(L, -1));
      size_t len = strlen(out->define_names);
      snprintf(out->define_names + len, sizeof out->define_names - len, "%s%s", len ? " " : "", keys[i]);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (lua_getfield(L, rt, "requires") == LUA_TTABLE) {
    int n = (int)lua_rawlen(L, -1);
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      if (lua_type(L, -1) == LUA_TSTRING) add_item(out->requires, sizeof out->requires, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  /* launches: one table with grid, or a list */
  lua_getfield(L, rt, "launch");
  int lt = lua_gettop(L);
  lua_getfield(L, lt, "grid");
  int single = !lua_isnil(L, -1);
  lua_pop(L, 1);
  out->n_launches = v->n_launches;
  for (int l = 0; l < v->n_launches; ++l) {
    if (single) lua_pushvalue(L, lt); else lua_rawgeti(L, lt, l + 1);
    int e = lua_gettop(L);
    if (lua_getfield(L, e, "kernel") == LUA_TFUNCTION) { out->kernel_fn = 1; note_fn(out, L, -1, r); }
    lua_pop(L, 1);
    const char *names[4] = {"grid", "block", "shared", "cluster"};
    tune_field_text *fs[4] = {&out->grid[l], &out->block[l], &out->shared[l], &out->cluster[l]};
    for (int k = 0; k < 4; ++k) {
      lua_getfield(L, e, names[k]);
      int fr = lua_isnil(L, -1) ? (snprintf(fs[k]->text, sizeof fs[k]->text, "%s", k == 3 ? "1, 1, 1" : "0"), 0)
                                : field_text(L, lua_gettop(L), r, k != 2, fs[k]);
      lua_pop(L, 1);
      if (fr < 0) { rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': launch %s: a form the bundle cannot store", r->file, r->name, names[k]); goto done; }
      if (fr == 1) {
        const tune_launch *x = &v->launch[l];
        if (k == 0) snprintf(fs[k]->text, sizeof fs[k]->text, "%u, %u, %u", x->grid[0], x->grid[1], x->grid[2]);
        else if (k == 1) snprintf(fs[k]->text, sizeof fs[k]->text, "%u, %u, %u", x->block[0], x->block[1], x->block[2]);
        else if (k == 2) snprintf(fs[k]->text, sizeof fs[k]->text, "%u", x->shared);
        else snprintf(fs[k]->text, sizeof fs[k]->text, "%u, %u, %u", x->cluster[0] ? x->cluster[0] : 1,
                      x->cluster[1] ? x->cluster[1] : 1, x->cluster[2] ? x->cluster[2] : 1);
      }
    }
    lua_pop(L, 1);
  }
  lua_settop(L, rt);
  /* args: shapes and values */
  lua_getfield(L, rt, "args");
  int at = lua_gettop(L);
  for (int i = 0; i < r->n_args; ++i) {
    lua_rawgeti(L, at, i + 1);
    int e = lua_gettop(L);
    const tune_arg_def *a = &r->args[i];
    if (a->is_tmap) { lua_pop(L, 1); continue; } /* tune_recipe_tmap_exprs */
    tune_field_text *f = a->is_tensor ? &out->shape[i] : &out->value[i];
    lua_getfield(L, e, a->is_tensor ? "shape" : "value");
    int fr = field_text(L, lua_gettop(L), r, 0, f);
    lua_pop(L, 2);
    if (fr < 0) { rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': arg %s: a form the bundle cannot store", r->file, r->name, a->name); goto done; }
    if (fr == 1) {
      if (a->is_tensor) snprintf(f->text, sizeof f->text, "%lld", (long long)(a->scratch ? v->scratch_numel[i] : s->numel[i]));
      else if (a->dtype == TUNE_F32 || a->dtype == TUNE_F64) {
        snprintf(f->text, sizeof f->text, "%.17g", s->scalar_f[i]);
        if (isfinite(s->scalar_f[i]) && !strpbrk(f->text, ".eE")) strncat(f->text, ".0", sizeof f->text - strlen(f->text) - 1);
      } else snprintf(f->text, sizeof f->text, "%lld", s->scalar_i[i]);
    }
  }
done:
  lua_settop(L, top);
  return rc;
}

/* The items of the list at idx (numbers, booleans, expression strings) as texts, at most max.
 * 0 ok; 1 a function (where filled); -1 another form (a string list, a table inside...). */
static int list_items(lua_State *L, int idx, const tune_recipe *r, char items[][256], int max, int *n, char *where, size_t wn) {
  int t = lua_type(L, idx);
  if (t == LUA_TFUNCTION) { where_of(L, idx, r, where, wn); return 1; }
  if (t != LUA_TTABLE) return -1;
  *n = (int)lua_rawlen(L, idx);
  if (*n < 1 || *n > max) return -1;
  for (int i = 1; i <= *n; ++i) {
    lua_rawgeti(L, idx, i);
    int et = lua_type(L, -1), rc = 0;
    if (et == LUA_TFUNCTION) { where_of(L, lua_gettop(L), r, where, wn); rc = 1; }
    else if (et == LUA_TSTRING) {
      if (strlen(lua_tostring(L, -1)) >= 250) rc = -1;
      else snprintf(items[i - 1], 256, "%s", lua_tostring(L, -1));
    } else if (literal(L, -1, items[i - 1], 256)) rc = -1;
    lua_pop(L, 1);
    if (rc) return rc;
  }
  return 0;
}

static void join(char *buf, size_t n, char items[][256], int k) {
  buf[0] = 0;
  for (int i = 0; i < k; ++i) add_item(buf, n, items[i]);
}

static void u64_list(char *buf, size_t n, const uint64_t *x, int k) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < k && len < n; ++i) len += (size_t)snprintf(buf + len, n - len, "%s%llu", i ? ", " : "", (unsigned long long)x[i]);
}

int tune_recipe_tmap_exprs(tune_recipe *r, int i, const tune_variant *v, tune_tmap_texts *out, tune_err *err) {
  lua_State *L = r->set->L;
  int top = lua_gettop(L);
  memset(out, 0, sizeof *out);
  const tune_arg_def *a = &r->args[i];
  const tune_tmap_var *tv = &v->tmap[i];
  if (!a->is_tmap || tv->rank < 1) return tune_fail(err, TUNE_EINTERNAL, "%s: arg %s is not an evaluated tensor map", r->name, a->name);
  const int t = a->tmap.tensor, elsize = tune_dtype_size(r->args[t].dtype);
  char items[TUNE_TMAP_MAX_RANK][256], where[320];
  int n = 0, rc = TUNE_OK;
  lua_rawgeti(L, LUA_REGISTRYINDEX, r->ref);
  lua_getfield(L, -1, "args");
  int at = lua_gettop(L);
  lua_rawgeti(L, at, i + 1);
  lua_getfield(L, -1, "tensormap");
  int tm = lua_gettop(L);
  /* dims: given, or the tensor's shape reversed */
  int dims_ok = 0;
  if (lua_getfield(L, tm, "dims") != LUA_TNIL) {
    int fr = list_items(L, lua_gettop(L), r, items, TUNE_TMAP_MAX_RANK, &n, where, sizeof where);
    if (fr == 0 && n == tv->rank) { join(out->dims.text, sizeof out->dims.text, items, n); dims_ok = 1; }
    else if (fr == 1) snprintf(out->dims.where, sizeof out->dims.where, "a Lua function (%.250s)", where);
    else snprintf(out->dims.where, sizeof out->dims.where, "a form kept whole (%.250s)", r->file);
  } else {
    lua_rawgeti(L, at, t + 1);
    lua_getfield(L, -1, "shape");
    int fr = list_items(L, lua_gettop(L), r, items, TUNE_TMAP_MAX_RANK, &n, where, sizeof where);
    if (fr == 0 && n == tv->rank) {
      char rev[TUNE_TMAP_MAX_RANK][256];
      for (int j = 0; j < n; ++j) memcpy(rev[j], items[n - 1 - j], 256);
      memcpy(items, rev, (size_t)n * sizeof rev[0]);
      join(out->dims.text, sizeof out->dims.text, items, n);
      dims_ok = 1;
    } else if (fr == 1) snprintf(out->dims.where, sizeof out->dims.where, "the shape of %s, a Lua function (%.250s)", r->args[t].name, where);
    else snprintf(out->dims.where, sizeof out->dims.where, "the shape of %s, a form kept whole (%.250s)", r->args[t].name, r->file);
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  if (!dims_ok) { out->dims.frozen = 1; u64_list(out->dims.text, sizeof out->dims.text, tv->dims, tv->rank); }
  /* strides: given, or packed over the dims' texts */
  if (tv->rank > 1) {
    if (lua_getfield(L, tm, "strides") != LUA_TNIL) {
      char st[TUNE_TMAP_MAX_RANK][256];
      int fr = list_items(L, lua_gettop(L), r, st, TUNE_TMAP_MAX_RANK, &n, where, sizeof where);
      if (fr == 0 && n == tv->rank - 1) join(out->strides.text, sizeof out->strides.text, st, n);
      else {
        out->strides.frozen = 1;
        if (fr == 1) snprintf(out->strides.where, sizeof out->strides.where, "a Lua function (%.250s)", where);
        else snprintf(out->strides.where, sizeof out->strides.where, "a form kept whole (%.250s)", r->file);
      }
    } else if (dims_ok) {
      char st[TUNE_TMAP_MAX_RANK][256];
      char acc[256];
      snprintf(acc, sizeof acc, "%d", elsize);
      for (int j = 0; j + 1 < tv->rank; ++j) {
        char next[256];
        if ((size_t)snprintf(next, sizeof next, "%s * (%s)", acc, items[j]) >= sizeof next) { out->strides.frozen = 1; break; }
        memcpy(acc, next, sizeof acc);
        memcpy(st[j], acc, sizeof acc);
      }
      if (!out->strides.frozen) join(out->strides.text, sizeof out->strides.text, st, tv->rank - 1);
      else snprintf(out->strides.where, sizeof out->strides.where, "packed strides over long dims (%s)", r->file);
    } else {
      out->strides.frozen = 1;
      snprintf(out->strides.where, sizeof out->strides.where, "packed over dims that are values (%.250s)", out->dims.where);
    }
    lua_pop(L, 1);
    if (out->strides.frozen) u64_list(out->strides.text, sizeof out->strides.text, tv->strides, tv->rank - 1);
  }
  /* box */
  lua_getfield(L, tm, "box");
  int fr = list_items(L, lua_gettop(L), r, items, TUNE_TMAP_MAX_RANK, &n, where, sizeof where);
  if (fr == 0 && n == tv->rank) join(out->box.text, sizeof out->box.text, items, n);
  else {
    uint64_t box[TUNE_TMAP_MAX_RANK];
    for (int j = 0; j < tv->rank; ++j) box[j] = tv->box[j];
    out->box.frozen = 1;
    if (fr == 1) snprintf(out->box.where, sizeof out->box.where, "a Lua function (%.250s)", where);
    else snprintf(out->box.where, sizeof out->box.where, "a form kept whole (%.250s)", r->file);
    u64_list(out->box.text, sizeof out->box.text, box, tv->rank);
  }
  lua_settop(L, top);
  return rc;
}

void tune_recipe_domain_text(tune_recipe *r, char *buf, size_t n) {
  lua_State *L = r->set->L;
  int top = lua_gettop(L);
  buf[0] = 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, r->ref);
  if (lua_getfield(L, -1, "domain") == LUA_TTABLE) {
    int k = (int)lua_rawlen(L, -1);
    for (int i = 1; i <= k; ++i) {
      lua_rawgeti(L, -1, i);
      if (lua_type(L, -1) == LUA_TSTRING) add_item(buf, n, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
}
