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
    const char *names[3] = {"grid", "block", "shared"};
    tune_field_text *fs[3] = {&out->grid[l], &out->block[l], &out->shared[l]};
    for (int k = 0; k < 3; ++k) {
      lua_getfield(L, e, names[k]);
      int fr = lua_isnil(L, -1) ? (snprintf(fs[k]->text, sizeof fs[k]->text, "0"), 0) : field_text(L, lua_gettop(L), r, k < 2, fs[k]);
      lua_pop(L, 1);
      if (fr < 0) { rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': launch %s: a form the bundle cannot store", r->file, r->name, names[k]); goto done; }
      if (fr == 1) {
        const tune_launch *x = &v->launch[l];
        if (k == 0) snprintf(fs[k]->text, sizeof fs[k]->text, "%u, %u, %u", x->grid[0], x->grid[1], x->grid[2]);
        else if (k == 1) snprintf(fs[k]->text, sizeof fs[k]->text, "%u, %u, %u", x->block[0], x->block[1], x->block[2]);
        else snprintf(fs[k]->text, sizeof fs[k]->text, "%u", x->shared);
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
