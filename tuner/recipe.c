/* recipe.c: the sandboxed Lua state, recipe validation and evaluation. */
#include "recipe.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <unistd.h>
#include <xxhash.h>

#include "file_util.h"
#include "inputs.h"
#include "lua_limits.h"
#include "project_root.h"
#include "recipe_schema.h"
#include "search.h"
#include "source_hash.h"
#include "tunert_cluster.h"

static char unbound_sentinel; /* error value: a constraint read an unbound param */

void tune_hash_hex(const void *data, size_t n, char out[17]) {
  snprintf(out, 17, "%016llx", (unsigned long long)XXH64(data, n, 0));
}

int tune_dtype_size(tune_dtype t) {
  static const int s[] = {4, 2, 2, 4, 8, 8, 1};
  return s[t];
}
const char *tune_dtype_name(tune_dtype t) {
  static const char *n[] = {"f32", "f16", "bf16", "i32", "i64", "f64", "e4m3"};
  return n[t];
}
int tune_dtype_is_narrow_float(tune_dtype t) { return t == TUNE_F16 || t == TUNE_BF16 || t == TUNE_E4M3; }
static int dtype_parse(const char *s, tune_dtype *t) {
  for (int i = 0; i <= TUNE_E4M3; ++i)
    if (!strcmp(s, tune_dtype_name((tune_dtype)i))) { *t = (tune_dtype)i; return 0; }
  return -1;
}

/* ---- sandbox ------------------------------------------------------------ */

#define MODULE_DEPTH 16
typedef struct loader_state {
  char root[PATH_MAX];
  /* the recipe file (mod[0]) and the modules being loaded (require nests): each one's hash covers
     its own text and the hashes of the modules it requires, so that a recipe returned by a module
     does not change its source hash when a sibling module changes, and has the same hash whether
     its file is run itself or required by another (recipes/attention.lua) */
  XXH64_state_t *mod[MODULE_DEPTH];
  int depth;
} loader_state;

static loader_state *get_loader(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, "tune.loader");
  loader_state *ls = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return ls;
}


/* Load a text chunk from a file, hashing its text. Pushes the chunk. */
static int load_text_file(lua_State *L, const char *path, const char *chunkname) {
  size_t n;
  char *text = tune_read_file(path, &n);
  if (!text) { lua_pushfstring(L, "cannot read %s", path); return LUA_ERRFILE; }
  loader_state *ls = get_loader(L);
  if (ls->depth > 0) XXH64_update(ls->mod[ls->depth - 1], text, n);
  int rc = luaL_loadbufferx(L, text, n, chunkname, "t");
  free(text);
  return rc;
}

/* recipes/a/b.lua: the file of module "a.b" under the root. */
static void module_rel_path(const char *name, char *rel, size_t n) {
  snprintf(rel, n, "recipes/%s.lua", name);
  for (char *c = rel + 8; *c; ++c)
    if (*c == '.' && strcmp(c, ".lua")) *c = '/';
}

/* require "a.b" -> <root>/recipes/a/b.lua, text only, cached. */
static int sandbox_require(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  for (const char *c = name; *c; ++c)
    if (!(*c == '.' || *c == '_' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
          (*c >= 'A' && *c <= 'Z')))
      return luaL_error(L, "require '%s': only recipe modules (letters, digits, '_', '.')", name);
  loader_state *ls = get_loader(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "tune.module_hash");
  lua_getfield(L, LUA_REGISTRYINDEX, "tune.required");
  lua_getfield(L, -1, name);
  if (!lua_isnil(L, -1)) {  /* cached: its hash still counts for the module requiring it */
    lua_getfield(L, -3, name);
    XXH64_hash_t mh = (XXH64_hash_t)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (ls->depth > 0) XXH64_update(ls->mod[ls->depth - 1], &mh, sizeof mh);
    return 1;
  }
  lua_pop(L, 1);
  if (ls->depth == MODULE_DEPTH) return luaL_error(L, "require '%s': modules nested deeper than %d", name, MODULE_DEPTH);
  char rel[512], path[PATH_MAX + 600];
  module_rel_path(name, rel, sizeof rel);
  snprintf(path, sizeof path, "%s/%s", ls->root, rel);
  char chunk[600];
  snprintf(chunk, sizeof chunk, "@%s", rel);
  XXH64_state_t *mh = ls->mod[ls->depth];
  if (!mh && !(mh = ls->mod[ls->depth] = XXH64_createState())) return luaL_error(L, "require '%s': out of memory", name);
  XXH64_reset(mh, 0);
  ls->depth++;
  if (load_text_file(L, path, chunk) != LUA_OK) {
    ls->depth--;
    return luaL_error(L, "require '%s': %s", name, lua_tostring(L, -1));
  }
  int rc = tune_lua_pcall(L, 0, 1, 0);
  ls->depth--;
  if (rc != LUA_OK) return lua_error(L);
  XXH64_hash_t h = XXH64_digest(mh);
  if (ls->depth > 0) XXH64_update(ls->mod[ls->depth - 1], &h, sizeof h);
  if (lua_isnil(L, -1)) { lua_pop(L, 1); lua_pushboolean(L, 1); }
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
  lua_pushinteger(L, (lua_Integer)h);
  lua_setfield(L, -4, name);
  if (lua_istable(L, -1)) {  /* the recipe table -> its module (table_module); an outer module returning it wins */
    lua_getfield(L, LUA_REGISTRYINDEX, "tune.table_module");
    lua_pushvalue(L, -2);
    lua_pushstring(L, name);
    lua_settable(L, -3);
    lua_pop(L, 1);
  }
  return 1;
}

static lua_State *sandbox_new(loader_state *ls, const tune_lua_limits *lim) {
  lua_State *L = tune_lua_newstate(lim);
  if (!L) return NULL;
  static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},     {LUA_STRLIBNAME, luaopen_string},
                                  {LUA_MATHLIBNAME, luaopen_math}, {LUA_TABLIBNAME, luaopen_table},
                                  {LUA_UTF8LIBNAME, luaopen_utf8}, {NULL, NULL}};
  for (const luaL_Reg *l = libs; l->func; ++l) {
    luaL_requiref(L, l->name, l->func, 1);
    lua_pop(L, 1);
  }
  static const char *removed[] = {"dofile", "loadfile", "load", "collectgarbage", NULL};
  for (const char **r = removed; *r; ++r) {
    lua_pushnil(L);
    lua_setglobal(L, *r);
  }
  lua_pushcfunction(L, sandbox_require);
  lua_setglobal(L, "require");
  lua_pushlightuserdata(L, ls);
  lua_setfield(L, LUA_REGISTRYINDEX, "tune.loader");
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "tune.required");
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "tune.module_hash");
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "tune.table_module");
  return L;
}

/* ---- validation helpers --------------------------------------------------- */

static char *sdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* "file:line" of the function at stack index idx, or the file alone. */
static void func_where(lua_State *L, int idx, const char *file, char *buf, size_t n) {
  lua_Debug ar;
  lua_pushvalue(L, idx);
  if (lua_isfunction(L, -1) && lua_getinfo(L, ">S", &ar) && ar.linedefined > 0)
    snprintf(buf, n, "%s:%d", ar.short_src, ar.linedefined);
  else {
    if (!lua_isfunction(L, -1)) lua_pop(L, 1);
    snprintf(buf, n, "%s", file);
  }
}

/* The value at idx as an integer (integral floats accepted). */
static int to_int(lua_State *L, int idx, long long *out) {
  int isnum;
  lua_Integer i = lua_tointegerx(L, idx, &isnum);
  if (isnum) { *out = i; return 0; }
  if (lua_type(L, idx) == LUA_TBOOLEAN) { *out = lua_toboolean(L, idx); return 0; }
  if (lua_type(L, idx) == LUA_TNUMBER) {
    double d = lua_tonumber(L, idx);
    if (d == floor(d) && fabs(d) < 9e18) { *out = (long long)d; return 0; }
  }
  return -1;
}

static int value_from_lua(lua_State *L, int idx, tune_value *v) {
  switch (lua_type(L, idx)) {
  case LUA_TBOOLEAN: v->kind = 'b'; v->i = lua_toboolean(L, idx); return 0;
  case LUA_TNUMBER:
    if (to_int(L, idx, &v->i)) return -1;
    v->kind = 'i';
    return 0;
  case LUA_TSTRING: v->kind = 's'; v->s = sdup(lua_tostring(L, idx)); return v->s ? 0 : -1;
  default: return -1;
  }
}

static void push_value(lua_State *L, const tune_value *v) {
  if (v->kind == 'b') lua_pushboolean(L, (int)v->i);
  else if (v->kind == 's') lua_pushstring(L, v->s);
  else lua_pushinteger(L, v->i);
}

/* ---- config tables -------------------------------------------------------- */

/* __index of config tables: an unbound parameter raises the sentinel, a
 * global (math...) is returned for expression strings, anything else is an
 * error naming the unknown key. Upvalue 1: set of parameter names; 2: the
 * problem table; 3: the device's sm_count (nil where no device is known).
 * Lookup order as libtunert's (runtime/tunert_expr.h): params, dims, then the
 * device fact sm_count. */
static int config_index(lua_State *L) {
  const char *key = lua_tostring(L, 2);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) {
    lua_pushlightuserdata(L, &unbound_sentinel);
    return lua_error(L);
  }
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(2)) != LUA_TNIL) return 1; /* problem dim */
  if (key && !strcmp(key, "sm_count") && !lua_isnoneornil(L, lua_upvalueindex(3))) {
    lua_pushvalue(L, lua_upvalueindex(3));
    return 1;
  }
  lua_getglobal(L, key ? key : "");
  if (!lua_isnil(L, -1)) return 1;
  /* the functions of the bundle expression language (runtime/tunert_expr.h) */
  static const char *const expr_funcs[] = {"min", "max", "floor", "ceil", "abs", "sqrt", NULL};
  for (int i = 0; key && expr_funcs[i]; ++i)
    if (!strcmp(key, expr_funcs[i])) { lua_getglobal(L, "math"); lua_getfield(L, -1, key); return 1; }
  if (key && !strcmp(key, "sm_count"))
    return luaL_error(L, "sm_count: no device is known here (constraints are checked without one): use it in requires, "
                         "launch geometry, shapes or defines");
  return luaL_error(L, "unknown name '%s' (not a parameter, problem dimension or library)",
                    key ? key : "?");
}

/* Push a config table for r with the first n_bound values set; its
 * metatable also resolves problem dims (problem may be NULL) and the device
 * fact sm_count (d may be NULL: none). */
static void push_config(lua_State *L, tune_recipe *r, const int *vi, int n_bound, const tune_problem *p,
                        const tune_device_facts *d) {
  lua_createtable(L, 0, r->n_params);
  for (int i = 0; i < n_bound; ++i) {
    push_value(L, &r->params[i].values[vi[i]]);
    lua_setfield(L, -2, r->params[i].name);
  }
  lua_createtable(L, 0, 1);
  lua_newtable(L); /* names of unbound params */
  for (int i = n_bound; i < r->n_params; ++i) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, r->params[i].name);
  }
  if (p) lua_rawgeti(L, LUA_REGISTRYINDEX, p->ref);
  else lua_newtable(L);
  if (d) lua_pushinteger(L, d->sm_count);
  else lua_pushnil(L);
  lua_pushcclosure(L, config_index, 3);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
}

static void push_device(lua_State *L, const tune_device_facts *d) {
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, d->sm_count);
  lua_setfield(L, -2, "sm_count");
  lua_pushinteger(L, d->smem_per_block);
  lua_setfield(L, -2, "smem_per_block");
  lua_pushinteger(L, d->l2_bytes);
  lua_setfield(L, -2, "l2_bytes");
  lua_pushstring(L, d->arch);
  lua_setfield(L, -2, "arch");
}

/* Registry table of the recipe: field f pushed (nil if absent). */
static int push_field(lua_State *L, tune_recipe *r, const char *f) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, r->ref);
  int t = lua_getfield(L, -1, f);
  lua_remove(L, -2);
  return t;
}

static int msgh(lua_State *L) {
  if (lua_touserdata(L, 1) == &unbound_sentinel) return 1;
  if (!lua_isstring(L, 1)) lua_pushliteral(L, "(error object is not a string)");
  return 1;
}

/* Call the function below nargs arguments with a message handler; leaves 1 result. */
static int pcall1(lua_State *L, int nargs) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, msgh);
  lua_insert(L, base);
  int rc = tune_lua_pcall(L, nargs, 1, base);
  lua_remove(L, base);
  return rc;
}

/* Evaluate a recipe value at the top of the stack: a function is called with
 * (a1, a2, a3) already pushed by the caller as n args... For simplicity the
 * value is replaced by its evaluation: functions are called with the config
 * (index cfg, may be 0), problem and device; strings are expressions over the
 * config/problem names; other values stay. Returns LUA_OK or an error with the
 * message at the top. */
static int eval_top(lua_State *L, int cfg, int prob, int dev, int problem_first) {
  int t = lua_type(L, -1);
  if (t == LUA_TFUNCTION) {
    if (problem_first && !cfg) { /* problem-level: f(p, d) */
      lua_pushvalue(L, prob);
      lua_pushvalue(L, dev);
      return pcall1(L, 2);
    }
    if (problem_first) {
      lua_pushvalue(L, prob);
      if (cfg) lua_pushvalue(L, cfg); else lua_pushnil(L);
    } else {
      if (cfg) lua_pushvalue(L, cfg); else lua_pushnil(L);
      lua_pushvalue(L, prob);
    }
    lua_pushvalue(L, dev);
    return pcall1(L, 3);
  }
  if (t == LUA_TSTRING) {
    const char *expr = lua_tostring(L, -1);
    char buf[1024];
    snprintf(buf, sizeof buf, "return (%s)", expr);
    char chunk[300];
    snprintf(chunk, sizeof chunk, "=expression \"%.200s\"", expr);
    if (luaL_loadbufferx(L, buf, strlen(buf), chunk, "t") != LUA_OK) { lua_remove(L, -2); return LUA_ERRSYNTAX; }
    lua_remove(L, -2);
    /* _ENV: the config table if any (its metatable falls back to problem dims
     * and globals), else the problem table with globals behind it. */
    if (cfg) lua_pushvalue(L, cfg);
    else {
      lua_newtable(L);
      lua_newtable(L);
      lua_newtable(L);
      lua_pushvalue(L, prob);
      lua_getfield(L, dev, "sm_count");
      lua_pushcclosure(L, config_index, 3);
      lua_setfield(L, -2, "__index");
      lua_setmetatable(L, -2);
    }
    lua_setupvalue(L, -2, 1);
    return pcall1(L, 0);
  }
  return LUA_OK;
}

/* ---- loading ---------------------------------------------------------------- */

/* A Lua error message as a recipe error that names the file: Lua's own position already does,
 * unless the message came from error(msg, 0), a non-string error or a module's chunk. */
static int recipe_lua_fail(tune_err *err, const char *file, const char *msg) {
  if (!msg) msg = "(error object is not a string)";
  if (!strncmp(msg, file, strlen(file))) return tune_fail(err, TUNE_ERECIPE, "%s", msg);
  return tune_fail(err, TUNE_ERECIPE, "%s: %s", file, msg);
}

#define RFAIL(...) do { tune_fail(err, TUNE_ERECIPE, __VA_ARGS__); goto fail; } while (0)

/* Names collected before they belong to a recipe's params: names[0..k) and the array. */
static void free_names(const char **names, int k) {
  for (int i = 0; i < k; ++i) free((char *)names[i]);
  free(names);
}

/* The index of the Lua value at idx among p's values, -1 when it is none of them (compared as
 * Lua compares them: nothing is allocated). */
static int lua_value_index(lua_State *L, int idx, const tune_param *p) {
  idx = lua_absindex(L, idx);
  for (int j = 0; j < p->n_values; ++j) {
    push_value(L, &p->values[j]);
    int same = lua_rawequal(L, idx, -1);
    lua_pop(L, 1);
    if (same) return j;
  }
  return -1;
}

/* p->absent from entry `entry` (1-based) of the list-form params table at tidx: the index of
 * its `absent` field among the values parsed already, -1 when it has none. */
static int parse_absent(lua_State *L, tune_recipe *r, int tidx, int entry, tune_param *p, tune_err *err) {
  int top = lua_gettop(L), rc = TUNE_OK;
  lua_rawgeti(L, tidx, entry);
  int t = lua_getfield(L, -1, "absent");
  if (t == LUA_TNUMBER || t == LUA_TBOOLEAN || t == LUA_TSTRING) {
    p->absent = lua_value_index(L, -1, p);
    const char *q = t == LUA_TSTRING ? "'" : "";
    if (p->absent < 0)
      rc = tune_fail(err, TUNE_ERECIPE, "%s: param %s: absent = %s%s%s is not one of its values", r->file, p->name,
                     q, luaL_tolstring(L, -1, NULL), q);
  } else if (t != LUA_TNIL) {
    rc = tune_fail(err, TUNE_ERECIPE, "%s: param %s: absent must be an integer, boolean or string (not a %s)",
                   r->file, p->name, lua_typename(L, t));
  }
  lua_settop(L, top);
  return rc;
}

static int parse_params(lua_State *L, tune_recipe *r, int tidx, tune_err *err) {
  /* Accept an ordered list { {"NAME", {values}} } or a map NAME -> {values} (sorted by name). */
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, tidx)) { ++n; lua_pop(L, 1); }
  if (n == 0) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': params is empty", r->file, r->name);
  if (n > SEARCH_MAX_PARAMS) return tune_fail(err, TUNE_ERECIPE, "%s: too many params (%d > %d)", r->file, n, SEARCH_MAX_PARAMS);
  r->params = calloc((size_t)n, sizeof *r->params);
  r->n_params = n;
  int is_list = lua_rawlen(L, tidx) == (lua_Unsigned)n;
  const char **names = calloc((size_t)n, sizeof *names);
  int k = 0;
  if (is_list) {
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, tidx, i);
      if (!lua_istable(L, -1) || lua_rawgeti(L, -1, 1) != LUA_TSTRING) {
        free_names(names, k);
        return tune_fail(err, TUNE_ERECIPE, "%s: params[%d] must be {\"NAME\", {values...}}", r->file, i);
      }
      names[k++] = sdup(lua_tostring(L, -1));
      lua_pop(L, 2);
    }
  } else {
    lua_pushnil(L);
    while (lua_next(L, tidx)) {
      if (lua_type(L, -2) != LUA_TSTRING) { free_names(names, k); return tune_fail(err, TUNE_ERECIPE, "%s: params keys must be names", r->file); }
      names[k++] = sdup(lua_tostring(L, -2));
      lua_pop(L, 1);
    }
    for (int i = 1; i < n; ++i) /* insertion sort: small n */
      for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; --j) {
        const char *t = names[j]; names[j] = names[j - 1]; names[j - 1] = t;
      }
  }
  /* from here the names belong to r->params (tune_recipes_free), whichever check fails */
  for (int i = 0; i < n; ++i) r->params[i].name = names[i];
  for (int i = 0; i < n; ++i) {
    tune_param *pp = &r->params[i];
    pp->absent = -1;
    for (int j = 0; j < i; ++j)
      if (!strcmp(r->params[j].name, pp->name)) { free(names); return tune_fail(err, TUNE_ERECIPE, "%s: param %s given twice", r->file, pp->name); }
    if (is_list) { lua_rawgeti(L, tidx, i + 1); lua_rawgeti(L, -1, 2); lua_remove(L, -2); }
    else lua_getfield(L, tidx, pp->name);
    int m = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
    if (m == 0) { free(names); return tune_fail(err, TUNE_ERECIPE, "%s: param %s: values must be a non-empty list", r->file, pp->name); }
    pp->values = calloc((size_t)m, sizeof *pp->values);
    pp->n_values = m;
    for (int j = 0; j < m; ++j) {
      lua_rawgeti(L, -1, j + 1);
      if (value_from_lua(L, -1, &pp->values[j])) {
        free(names);
        return tune_fail(err, TUNE_ERECIPE, "%s: param %s: value %d must be an integer, boolean or string", r->file, pp->name, j + 1);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    /* the map form has no place for it: a param there has no absent value */
    if (is_list && parse_absent(L, r, tidx, i + 1, pp, err)) { free(names); return err->code; }
  }
  free(names);
  return TUNE_OK;
}

/* Canonical JSON of a problem's dims (sorted keys, "name" excluded). */
static int problem_json(lua_State *L, int tidx, char **out) {
  const char *keys[128];
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, tidx)) {
    if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "name") && n < 128)
      keys[n++] = lua_tostring(L, -2);
    lua_pop(L, 1);
  }
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; --j) { const char *t = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = t; }
  size_t cap = 64 + (size_t)n * 96, len = 0;
  char *s = malloc(cap);
  if (!s) return -1;
  len += (size_t)snprintf(s + len, cap - len, "{");
  for (int i = 0; i < n; ++i) {
    lua_getfield(L, tidx, keys[i]);
    char v[64];
    long long iv;
    if (lua_type(L, -1) == LUA_TBOOLEAN) snprintf(v, sizeof v, "%s", lua_toboolean(L, -1) ? "true" : "false");
    else if (lua_type(L, -1) == LUA_TNUMBER && !to_int(L, -1, &iv)) snprintf(v, sizeof v, "%lld", iv);
    else if (lua_type(L, -1) == LUA_TNUMBER) snprintf(v, sizeof v, "%.17g", lua_tonumber(L, -1));
    else if (lua_type(L, -1) == LUA_TSTRING) snprintf(v, sizeof v, "\"%.58s\"", lua_tostring(L, -1));
    else { lua_pop(L, 1); free(s); return -2; }
    lua_pop(L, 1);
    len += (size_t)snprintf(s + len, cap - len, "%s\"%.40s\":%s", i ? "," : "", keys[i], v);
  }
  snprintf(s + len, cap - len, "}");
  *out = s;
  return 0;
}

static int parse_problems(lua_State *L, tune_recipe *r, int tidx, tune_err *err) {
  int n = lua_istable(L, tidx) ? (int)lua_rawlen(L, tidx) : 0;
  if (n == 0) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': problems must be a non-empty list", r->file, r->name);
  r->problems = calloc((size_t)n, sizeof *r->problems);
  r->n_problems = n;
  for (int i = 0; i < n; ++i) {
    tune_problem *p = &r->problems[i];
    lua_rawgeti(L, tidx, i + 1);
    if (!lua_istable(L, -1)) return tune_fail(err, TUNE_ERECIPE, "%s: problems[%d] must be a table", r->file, i + 1);
    if (lua_getfield(L, -1, "name") != LUA_TSTRING) return tune_fail(err, TUNE_ERECIPE, "%s: problems[%d] needs a name", r->file, i + 1);
    p->name = sdup(lua_tostring(L, -1));
    lua_pop(L, 1);
    int rc = problem_json(L, lua_gettop(L), &p->dims_json);
    if (rc) return tune_fail(err, TUNE_ERECIPE, "%s: problem %s: dims must be numbers, booleans or strings", r->file, p->name);
    tune_hash_hex(p->dims_json, strlen(p->dims_json), p->hash);
    for (int j = 0; j < i; ++j) {
      if (!strcmp(r->problems[j].name, p->name)) return tune_fail(err, TUNE_ERECIPE, "%s: problem name %s used twice", r->file, p->name);
      if (!strcmp(r->problems[j].hash, p->hash)) return tune_fail(err, TUNE_ERECIPE, "%s: problems %s and %s have the same dims", r->file, r->problems[j].name, p->name);
    }
    p->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  return TUNE_OK;
}

/* ---- tensormap args (docs/tensormap-args.md) ------------------------------ */

/* An integer field of the tensormap table at t that must be one of allowed[] (def if absent). */
static int tmap_enum(lua_State *L, int t, const char *f, const int *allowed, int n, int def, int *out) {
  int ty = lua_getfield(L, t, f);
  long long x = def;
  int bad = ty != LUA_TNIL && to_int(L, -1, &x);
  lua_pop(L, 1);
  if (bad) return -1;
  for (int i = 0; i < n; ++i)
    if (allowed[i] == x) { *out = (int)x; return 0; }
  return -1;
}

/* The fixed fields of { "name", tensormap = { ... } } (arg table at e); the tensor name is
 * resolved once every arg is known (resolve_tmap_tensors). */
static int parse_tmap_fields(lua_State *L, tune_recipe *r, tune_arg_def *a, int e, tune_err *err) {
  static const char *const arg_keys[] = {"tensormap", NULL};
  static const char *const keys[] = {"tensor", "box", "dims", "strides", "swizzle", "element_strides",
                                     "l2_promotion", "oob", NULL};
  lua_pushnil(L);
  while (lua_next(L, e)) { /* nothing but the name and tensormap = */
    int ok = lua_type(L, -2) == LUA_TNUMBER && lua_tointeger(L, -2) == 1;
    for (int k = 0; !ok && arg_keys[k]; ++k) ok = lua_type(L, -2) == LUA_TSTRING && !strcmp(lua_tostring(L, -2), arg_keys[k]);
    if (!ok) {
      const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "(non-name key)";
      return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: a tensormap arg takes no field '%s'", r->file, a->name, key);
    }
    lua_pop(L, 1);
  }
  lua_getfield(L, e, "tensormap");
  int t = lua_gettop(L);
  if (!lua_istable(L, t)) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap must be a table { tensor = ..., box = ... }", r->file, a->name);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    int ok = 0;
    for (int k = 0; !ok && keys[k]; ++k) ok = lua_type(L, -2) == LUA_TSTRING && !strcmp(lua_tostring(L, -2), keys[k]);
    if (!ok) {
      const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "(non-name key)";
      const char *near = tune_nearest_name(key, keys, (int)(sizeof keys / sizeof keys[0]) - 1);
      if (near) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: unknown tensormap field '%s' (did you mean %s?)", r->file, a->name, key, near);
      return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: unknown tensormap field '%s' (tensor, box, dims, strides, swizzle, element_strides, l2_promotion, oob)", r->file, a->name, key);
    }
    lua_pop(L, 1);
  }
  a->is_tmap = 1;
  if (lua_getfield(L, t, "tensor") != LUA_TSTRING) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap needs tensor = \"name of a tensor arg\"", r->file, a->name);
  lua_pop(L, 1);
  int bt = lua_getfield(L, t, "box");
  lua_pop(L, 1);
  if (bt != LUA_TTABLE && bt != LUA_TFUNCTION) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap needs box = { sizes, innermost first } or a function(p, c)", r->file, a->name);
  for (int k = 0; k < 2; ++k) {
    int ty = lua_getfield(L, t, k ? "strides" : "dims");
    lua_pop(L, 1);
    if (ty != LUA_TNIL && ty != LUA_TTABLE && ty != LUA_TFUNCTION) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap %s must be a list or a function(p, c)", r->file, a->name, k ? "strides" : "dims");
  }
  static const int swz[] = {0, 32, 64, 128}, l2[] = {0, 64, 128, 256};
  if (tmap_enum(L, t, "swizzle", swz, 4, 0, &a->tmap.swizzle)) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap swizzle must be 0, 32, 64 or 128", r->file, a->name);
  if (tmap_enum(L, t, "l2_promotion", l2, 4, 256, &a->tmap.l2_promotion)) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap l2_promotion must be 0, 64, 128 or 256", r->file, a->name);
  int ot = lua_getfield(L, t, "oob");
  const char *oob = ot == LUA_TSTRING ? lua_tostring(L, -1) : ot == LUA_TNIL ? "zero" : "";
  int oob_ok = !strcmp(oob, "zero") || !strcmp(oob, "nan");
  a->tmap.oob_nan = !strcmp(oob, "nan");
  lua_pop(L, 1);
  if (!oob_ok) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap oob must be \"zero\" or \"nan\"", r->file, a->name);
  int et = lua_getfield(L, t, "element_strides");
  if (et != LUA_TNIL) {
    int n = et == LUA_TTABLE ? (int)lua_rawlen(L, -1) : 0;
    if (n < 1 || n > TUNE_TMAP_MAX_RANK) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap element_strides must be a list of 1..%d integers", r->file, a->name, TUNE_TMAP_MAX_RANK);
    for (int j = 0; j < n; ++j) {
      long long x;
      lua_rawgeti(L, -1, j + 1);
      int bad = to_int(L, -1, &x) || x < 1 || x > 8;
      lua_pop(L, 1);
      if (bad) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap element_strides entries must be 1..8", r->file, a->name);
      a->tmap.estr[j] = (unsigned)x;
    }
    a->tmap.n_estr = n;
  }
  lua_pop(L, 2); /* element_strides, tensormap */
  return TUNE_OK;
}

/* tensormap.tensor -> the index of a tensor arg; the map takes that tensor's dtype. */
static int resolve_tmap_tensors(lua_State *L, tune_recipe *r, int tidx, tune_err *err) {
  for (int i = 0; i < r->n_args; ++i) {
    tune_arg_def *a = &r->args[i];
    if (!a->is_tmap) continue;
    lua_rawgeti(L, tidx, i + 1);
    lua_getfield(L, -1, "tensormap");
    lua_getfield(L, -1, "tensor");
    const char *want = lua_tostring(L, -1);
    a->tmap.tensor = -1;
    for (int j = 0; j < r->n_args; ++j)
      if (r->args[j].is_tensor && !strcmp(r->args[j].name, want)) a->tmap.tensor = j;
    if (a->tmap.tensor < 0) {
      tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap tensor '%s' is not a tensor arg of recipe '%s'", r->file, a->name, want, r->name);
      lua_pop(L, 3);
      return err->code;
    }
    a->dtype = r->args[a->tmap.tensor].dtype;
    lua_pop(L, 3);
  }
  return TUNE_OK;
}

/* The largest power of two below a floating-point dtype's largest finite value: the top of a "wide"
 * init's range (-1 for integer dtypes, which take no "wide"). */
static int wide_max_exp2(tune_dtype t) {
  switch (t) {
  case TUNE_F16: return 15;
  case TUNE_BF16: case TUNE_F32: return 127;
  case TUNE_F64: return 1023;
  case TUNE_E4M3: return 8;
  default: return -1;
  }
}

/* {"wide", lo_exp2, hi_exp2} for arg a in `field` (init or adversarial), bounds known (numbers): a
 * floating-point tensor, lo < hi, hi within the dtype's finite range. */
static int check_wide(const tune_recipe *r, const tune_arg_def *a, const char *field, double lo, double hi, tune_err *err) {
  int top = wide_max_exp2(a->dtype);
  if (top < 0) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: %s \"wide\" is for floating-point tensors", r->file, a->name, field);
  if (!(lo < hi)) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: %s {\"wide\", lo_exp2, hi_exp2} needs lo_exp2 < hi_exp2", r->file, a->name, field);
  if (hi > top)
    return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: %s \"wide\": hi_exp2 %g is past %s's largest finite values (at most %d)", r->file,
                     a->name, field, hi, tune_dtype_name(a->dtype), top);
  return TUNE_OK;
}

/* adversarial = {"uniform", lo, hi}, {"normal", mean, std} or {"wide", lo_exp2, hi_exp2} (numbers): the
 * data of the second input set, for floating-point inputs (the integer structure is the same in both
 * sets). */
static int parse_adversarial(lua_State *L, int e, tune_recipe *r, tune_arg_def *a, tune_err *err) {
  int rc = TUNE_OK;
  if (lua_getfield(L, e, "adversarial") == LUA_TNIL) { lua_pop(L, 1); return TUNE_OK; }
  const char *why = "must be {\"uniform\", lo, hi}, {\"normal\", mean, std} or {\"wide\", lo_exp2, hi_exp2} with numbers";
  lua_rawgeti(L, -1, 1);
  int t2 = lua_rawgeti(L, -2, 2), t3 = lua_rawgeti(L, -3, 3);
  const char *k = lua_type(L, -3) == LUA_TSTRING ? lua_tostring(L, -3) : NULL;
  a->adv_a = lua_tonumber(L, -2);
  a->adv_b = lua_tonumber(L, -1);
  if (!k || t2 != LUA_TNUMBER || t3 != LUA_TNUMBER) rc = tune_fail(err, TUNE_ERECIPE, "%s: arg %s: adversarial %s", r->file, a->name, why);
  else if (a->output || a->scratch || a->dtype == TUNE_I32 || a->dtype == TUNE_I64)
    rc = tune_fail(err, TUNE_ERECIPE, "%s: arg %s: adversarial is for floating-point inputs", r->file, a->name);
  else if (!strcmp(k, "uniform") && a->adv_b > a->adv_a) a->adv_init = TUNE_INIT_UNIFORM;
  else if (!strcmp(k, "normal") && a->adv_b > 0) a->adv_init = TUNE_INIT_NORMAL;
  else if (!strcmp(k, "wide")) {
    if (!(rc = check_wide(r, a, "adversarial", a->adv_a, a->adv_b, err))) a->adv_init = TUNE_INIT_WIDE;
  } else rc = tune_fail(err, TUNE_ERECIPE, "%s: arg %s: adversarial %s (lo < hi, std > 0)", r->file, a->name, why);
  lua_pop(L, 4);
  return rc;
}

static int parse_args(lua_State *L, tune_recipe *r, int tidx, tune_err *err) {
  int n = lua_istable(L, tidx) ? (int)lua_rawlen(L, tidx) : 0;
  if (n == 0 || n > TUNE_MAX_ARGS) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': args must be a list of 1..%d entries", r->file, r->name, TUNE_MAX_ARGS);
  r->n_args = n;
  int n_out = 0;
  for (int i = 0; i < n; ++i) {
    tune_arg_def *a = &r->args[i];
    lua_rawgeti(L, tidx, i + 1);
    int e = lua_gettop(L);
    if (!lua_istable(L, e) || lua_rawgeti(L, e, 1) != LUA_TSTRING) return tune_fail(err, TUNE_ERECIPE, "%s: args[%d] must start with its name", r->file, i + 1);
    a->name = sdup(lua_tostring(L, -1));
    lua_pop(L, 1);
    int tm = lua_getfield(L, e, "tensormap");
    lua_pop(L, 1);
    if (tm != LUA_TNIL) {
      if (parse_tmap_fields(L, r, a, e, err)) return err->code;
      lua_pop(L, 1);
      continue;
    }
    const char *dt = NULL;
    if (lua_getfield(L, e, "tensor") == LUA_TSTRING) { a->is_tensor = 1; dt = lua_tostring(L, -1); }
    lua_pop(L, 1);
    if (!dt) { if (lua_getfield(L, e, "scalar") == LUA_TSTRING) dt = lua_tostring(L, -1); lua_pop(L, 1); }
    if (!dt || dtype_parse(dt, &a->dtype)) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: needs tensor = or scalar = one of f32, f16, bf16, i32, i64, f64 (tensors also e4m3)", r->file, a->name);
    if (!a->is_tensor && a->dtype == TUNE_E4M3) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: e4m3 is a tensor dtype (pass fp8 scalars as f32)", r->file, a->name);
    lua_getfield(L, e, "output"); a->output = lua_toboolean(L, -1); lua_pop(L, 1);
    lua_getfield(L, e, "scratch"); a->scratch = lua_toboolean(L, -1); lua_pop(L, 1);
    lua_getfield(L, e, "zero"); a->zero = lua_toboolean(L, -1); lua_pop(L, 1);
    if (a->zero && !(a->is_tensor && a->scratch)) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: zero = true is for scratch tensors", r->file, a->name);
    n_out += a->output;
    if (a->is_tensor) {
      if (lua_getfield(L, e, "shape") == LUA_TNIL) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensor needs a shape", r->file, a->name);
      lua_pop(L, 1);
      if (lua_getfield(L, e, "init") == LUA_TTABLE) {
        lua_rawgeti(L, -1, 1);
        const char *k = lua_tostring(L, -1);
        lua_rawgeti(L, -2, 2); a->init_a = lua_tonumber(L, -1);
        lua_rawgeti(L, -3, 3); a->init_b = lua_tonumber(L, -1);
        lua_pop(L, 3);
        if (!k) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: init must be {\"uniform\", lo, hi}, {\"normal\", mean, std}, {\"randint\", lo, hi}, {\"permutation\"}, {\"offsets\", total, min_part} or {\"wide\", lo_exp2, hi_exp2}", r->file, a->name);
        if (!strcmp(k, "uniform")) a->init = TUNE_INIT_UNIFORM;
        else if (!strcmp(k, "normal")) { a->init = TUNE_INIT_NORMAL; if (a->init_b == 0) a->init_b = 1; }
        else if (!strcmp(k, "randint")) a->init = TUNE_INIT_RANDINT;
        else if (!strcmp(k, "permutation")) a->init = TUNE_INIT_PERMUTATION;
        else if (!strcmp(k, "offsets")) a->init = TUNE_INIT_OFFSETS;
        else if (!strcmp(k, "wide")) a->init = TUNE_INIT_WIDE;
        else return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: unknown init '%s'", r->file, a->name, k);
        /* lo, hi may be expressions over problem dims, evaluated per problem (tune_recipe_eval_problem) */
        int lo_num = lua_rawgeti(L, -1, 2) == LUA_TNUMBER, hi_num = lua_rawgeti(L, -2, 3) == LUA_TNUMBER;
        lua_pop(L, 2);
        if (a->init == TUNE_INIT_UNIFORM && lo_num && hi_num && !(a->init_b > a->init_a)) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: uniform needs lo < hi", r->file, a->name);
        /* an integer tensor is refused whatever its bounds (check_wide looks at the dtype first) */
        if (a->init == TUNE_INIT_WIDE && ((lo_num && hi_num) || wide_max_exp2(a->dtype) < 0) &&
            check_wide(r, a, "init", a->init_a, a->init_b, err))
          return err->code;
      }
      lua_pop(L, 1);
      if (!a->output && !a->scratch && a->init == TUNE_INIT_NONE) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: an input tensor needs init (never zeros)", r->file, a->name);
      if (parse_adversarial(L, e, r, a, err)) return err->code;
    } else {
      if (lua_getfield(L, e, "value") == LUA_TNIL) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: scalar needs a value", r->file, a->name);
      lua_pop(L, 1);
      if (a->output || a->scratch) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: a scalar cannot be output or scratch", r->file, a->name);
    }
    lua_pop(L, 1);
  }
  if (n_out == 0) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': no arg has output = true: nothing could be verified", r->file, r->name);
  return resolve_tmap_tensors(L, r, tidx, err);
}

/* tolerance.honest = F (docs/measurement.md): F > 1, and an output it can judge. f32 and f64 outputs
 * are left to rel_l2 and max_abs: their rounding error is far below the accumulation-order
 * differences of correct variants, so a multiple of it would fail those. */
static int parse_tolerance(lua_State *L, tune_recipe *r, int t, tune_err *err) {
  int top = lua_gettop(L), rc = TUNE_OK;
  if (lua_getfield(L, t, "tolerance") != LUA_TTABLE || lua_getfield(L, -1, "honest") == LUA_TNIL) goto done;
  double f = lua_tonumber(L, -1);
  if (!(f > 1) || !isfinite(f)) {
    rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': tolerance.honest must be a number above 1 (the multiple of the "
                   "honest error a variant may reach), not %g", r->file, r->name, f);
    goto done;
  }
  int judged = 0;
  for (int i = 0; i < r->n_args; ++i) judged += r->args[i].output && tune_dtype_is_narrow_float(r->args[i].dtype);
  if (!judged) {
    rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': tolerance.honest judges bf16, f16 and e4m3 outputs, and this "
                   "recipe has none (f32, f64 and integer outputs are judged by rel_l2 and max_abs alone)", r->file, r->name);
    goto done;
  }
  r->tol_honest = f;
done:
  lua_settop(L, top);
  return rc;
}

/* domain = { "expr", ... } (docs/recipes.md): expressions over problem dims only; every tuned
 * problem must be inside it. */
static int parse_domain(lua_State *L, tune_recipe *r, int t, tune_err *err) {
  int top = lua_gettop(L);
  if (lua_getfield(L, t, "domain") != LUA_TTABLE) { lua_settop(L, top); return TUNE_OK; }
  int dt = lua_gettop(L);
  r->n_domain = (int)lua_rawlen(L, dt);
  lua_newtable(L); /* a device table without facts: the domain sees dims only */
  int dev = lua_gettop(L);
  for (int i = 1; i <= r->n_domain; ++i) {
    lua_rawgeti(L, dt, i);
    char text[256];
    snprintf(text, sizeof text, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    for (int pi = 0; pi < r->n_problems; ++pi) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, r->problems[pi].ref);
      int prob = lua_gettop(L);
      lua_rawgeti(L, dt, i);
      int rc = eval_top(L, 0, prob, dev, 1);
      if (rc != LUA_OK) {
        tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': domain[%d] \"%s\": %s (the domain is over problem dims only)", r->file,
                  r->name, i, text, lua_tostring(L, -1));
        lua_settop(L, top);
        return err->code;
      }
      if (lua_type(L, -1) != LUA_TBOOLEAN || !lua_toboolean(L, -1)) {
        tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': problem %s is outside its own domain: \"%s\" is %s", r->file, r->name,
                  r->problems[pi].name, text, lua_type(L, -1) == LUA_TBOOLEAN ? "false" : "not a boolean");
        lua_settop(L, top);
        return err->code;
      }
      lua_settop(L, dev);
    }
  }
  lua_settop(L, top);
  return TUNE_OK;
}

/* fallback = { PARAM = value, ... }: one config, every param given with one of its values, that
 * passes every constraint (whether its requires hold is checked per problem by tune bundle). */
static int parse_fallback(lua_State *L, tune_recipe *r, int t, tune_err *err) {
  int top = lua_gettop(L);
  if (lua_getfield(L, t, "fallback") != LUA_TTABLE) { lua_settop(L, top); return TUNE_OK; }
  int ft = lua_gettop(L);
  if (r->n_params > TUNE_MAX_FALLBACK_PARAMS) {
    lua_settop(L, top);
    return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': fallback: at most %d params", r->file, r->name, TUNE_MAX_FALLBACK_PARAMS);
  }
  int rc = TUNE_OK;
  lua_pushnil(L);
  while (!rc && lua_next(L, ft)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (tune_recipe_param_index(r, k) < 0) {
      char names[512] = "";
      for (int i = 0; i < r->n_params; ++i) snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", r->params[i].name);
      rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': fallback: unknown param '%s' (params: %s)", r->file, r->name,
                     k ? k : "(not a name)", names);
    }
    lua_pop(L, 1);
  }
  for (int i = 0; !rc && i < r->n_params; ++i) {
    const tune_param *pm = &r->params[i];
    if (lua_getfield(L, ft, pm->name) == LUA_TNIL) {
      rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': fallback: missing param %s (give every param a value)", r->file, r->name, pm->name);
      break;
    }
    tune_value v = {0};
    int ok = !value_from_lua(L, -1, &v);
    r->fallback_vi[i] = -1;
    for (int k = 0; ok && k < pm->n_values; ++k) {
      const tune_value *x = &pm->values[k];
      if (x->kind == v.kind && (v.kind == 's' ? !strcmp(x->s, v.s) : x->i == v.i)) { r->fallback_vi[i] = k; break; }
    }
    if (v.kind == 's') free((char *)v.s);
    if (r->fallback_vi[i] < 0)
      rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': fallback: %s = %s is not one of its values", r->file, r->name, pm->name,
                     luaL_tolstring(L, -1, NULL));
    lua_settop(L, ft);
  }
  lua_settop(L, top);
  if (rc) return rc;
  for (int c = 0; c < r->n_constraints; ++c) {
    tune_err ce;
    tune_err_clear(&ce);
    int ans = tune_recipe_check(r, c, r->fallback_vi, r->n_params, &ce);
    if (ans == SEARCH_ERROR) return tune_fail(err, TUNE_ERECIPE, "%s (checking the fallback)", ce.msg);
    if (ans != SEARCH_PASS) {
      char text[300];
      tune_recipe_constraint_text(r, c, text, sizeof text);
      return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': fallback violates constraint %d: %s", r->file, r->name, c + 1, text);
    }
  }
  r->has_fallback = 1;
  return TUNE_OK;
}

static int resolve_path(const char *root, const char *rel, const char **out) {
  char buf[PATH_MAX * 2];
  snprintf(buf, sizeof buf, "%s/%s", root, rel);
  *out = sdup(buf);
  return *out ? 0 : -1;
}

static int parse_recipe(lua_State *L, tune_recipes *set, tune_recipe *r, const char *file,
                        const char *root, XXH64_hash_t texts_hash, tune_err *err) {
  int t = lua_gettop(L);
  r->set = set;
  r->file = file;
  r->root = root;
  /* every field known and of its type before any is read: a misspelt one must not silently drop out */
  char where[PATH_MAX + 160];
  if (set->n == 1) snprintf(where, sizeof where, "%s", file);
  else if (lua_getfield(L, t, "name") == LUA_TSTRING) snprintf(where, sizeof where, "%s: recipe '%.120s'", file, lua_tostring(L, -1));
  else snprintf(where, sizeof where, "%s: recipe %d of the list", file, (int)(r - set->r) + 1);
  lua_settop(L, t);
  if (tune_recipe_schema_check(L, t, where, err)) return err->code;
  if (lua_getfield(L, t, "name") != LUA_TSTRING) return tune_fail(err, TUNE_ERECIPE, "%s: recipe needs name = \"...\"", file);
  r->name = sdup(lua_tostring(L, -1));
  lua_pop(L, 1);
  if (lua_getfield(L, t, "template") != LUA_TSTRING) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s' needs template = \"templates/...\"", file, r->name);
  resolve_path(root, lua_tostring(L, -1), &r->template_path);
  lua_pop(L, 1);
  if (lua_getfield(L, t, "params") != LUA_TTABLE) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s' needs params", file, r->name);
  if (parse_params(L, r, lua_gettop(L), err)) return err->code;
  lua_pop(L, 1);
  /* constraints: compile expression strings into functions now, so syntax errors show at load */
  int ct = lua_getfield(L, t, "constraints");
  if (ct != LUA_TNIL && ct != LUA_TTABLE) return tune_fail(err, TUNE_ERECIPE, "%s: constraints must be a list", file);
  lua_newtable(L); /* compiled constraints */
  if (ct == LUA_TTABLE) {
    int n = (int)lua_rawlen(L, -2);
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, -2, i);
      if (lua_type(L, -1) == LUA_TSTRING) {
        const char *expr = lua_tostring(L, -1);
        char buf[2048], chunk[300];
        snprintf(buf, sizeof buf, "return (%s)", expr);
        snprintf(chunk, sizeof chunk, "=%s: constraint %d \"%.200s\"", file, i, expr);
        if (luaL_loadbufferx(L, buf, strlen(buf), chunk, "t") != LUA_OK)
          return tune_fail(err, TUNE_ERECIPE, "%s", lua_tostring(L, -1));
        lua_remove(L, -2);
      } else if (!lua_isfunction(L, -1))
        return tune_fail(err, TUNE_ERECIPE, "%s: constraint %d must be a function(c) or an expression string", file, i);
      lua_rawseti(L, -2, i);
      r->n_constraints = i;
    }
  }
  lua_setfield(L, t, "__constraints");
  lua_pop(L, 1);
  if (lua_getfield(L, t, "problems") != LUA_TTABLE) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s' needs problems", file, r->name);
  if (parse_problems(L, r, lua_gettop(L), err)) return err->code;
  lua_pop(L, 1);
  if (lua_getfield(L, t, "args") != LUA_TTABLE) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s' needs args", file, r->name);
  if (parse_args(L, r, lua_gettop(L), err)) return err->code;
  lua_pop(L, 1);
  if (lua_getfield(L, t, "launch") != LUA_TTABLE) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s' needs launch = {grid=..., block=..., shared=...} or a list of them", file, r->name);
  lua_pop(L, 1);
  int qtype = lua_getfield(L, t, "requires");
  lua_pop(L, 1);
  if (qtype != LUA_TNIL && qtype != LUA_TTABLE) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': requires must be a list of expression strings", file, r->name);
  if (lua_getfield(L, t, "reference") != LUA_TTABLE) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s' needs reference = {source=..., kernel=..., grid=..., block=...}", file, r->name);
  if (lua_getfield(L, -1, "source") != LUA_TSTRING) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': reference needs source", file, r->name);
  resolve_path(root, lua_tostring(L, -1), &r->ref_source);
  lua_pop(L, 2);
  /* both sources exist under the root: a wrong root or a misspelt path says which recipe and root */
  const char *srcs[2] = {r->template_path, r->ref_source}, *field[2] = {"template", "reference.source"};
  for (int i = 0; i < 2; ++i)
    if (!srcs[i] || access(srcs[i], R_OK))
      return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': %s %s: no such file (project root %s, %s)", file, r->name, field[i],
                       srcs[i] ? srcs[i] : "?", root, set->root_how ? set->root_how : "");
  /* source hash: every recipe text loaded + template tree + reference tree */
  XXH64_state_t *h = XXH64_createState();
  XXH64_reset(h, 0);
  XXH64_update(h, &texts_hash, sizeof texts_hash);
  char inc[PATH_MAX + 16];
  snprintf(inc, sizeof inc, "%s/templates", root);
  int rc = tune_source_hash_update(h, r->template_path, inc, err);
  if (!rc) rc = tune_source_hash_update(h, r->ref_source, inc, err);
  snprintf(r->source_hash, sizeof r->source_hash, "%016llx", (unsigned long long)XXH64_digest(h));
  XXH64_freeState(h);
  if (rc) return rc;
  lua_pushvalue(L, t);
  r->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (parse_domain(L, r, t, err) || parse_fallback(L, r, t, err) || parse_tolerance(L, r, t, err)) return err->code;
  return TUNE_OK;
}

/* The module that returned the table on top of the stack (require "attention.decode" in a list
 * file): its hash (its text and the modules it requires) and its file, malloc'd. 0 where the table
 * was written in the recipe file itself. */
static int table_module(lua_State *L, const char *root, XXH64_hash_t *hash, char **file) {
  int top = lua_gettop(L), found = 0;
  lua_getfield(L, LUA_REGISTRYINDEX, "tune.table_module");
  lua_pushvalue(L, top);
  if (lua_gettable(L, -2) == LUA_TSTRING) {
    const char *name = lua_tostring(L, -1);
    char rel[512], path[PATH_MAX + 600];
    module_rel_path(name, rel, sizeof rel);
    snprintf(path, sizeof path, "%s/%s", root, rel);
    lua_getfield(L, LUA_REGISTRYINDEX, "tune.module_hash");
    lua_getfield(L, -1, name);
    *hash = (XXH64_hash_t)lua_tointeger(L, -1);
    *file = sdup(path);
    found = 1;
  }
  lua_settop(L, top);
  return found;
}

int tune_recipes_load(const char *path, tune_recipes **out, tune_err *err) {
  return tune_recipes_load_root(path, NULL, out, err);
}

int tune_recipes_load_root(const char *path, const char *root, tune_recipes **out, tune_err *err) {
  *out = NULL;
  tune_recipes *set = calloc(1, sizeof *set);
  loader_state *ls = calloc(1, sizeof *ls);
  if (!set || !ls) { free(set); free(ls); return tune_fail(err, TUNE_ENOMEM, "recipe: out of memory"); }
  if (!(ls->mod[0] = XXH64_createState())) { free(set); free(ls); return tune_fail(err, TUNE_ENOMEM, "recipe: out of memory"); }
  XXH64_reset(ls->mod[0], 0);
  char abs[PATH_MAX];
  if (!realpath(path, abs)) { tune_fail(err, TUNE_EINVAL, "%s: no such recipe file", path); goto fail_early; }
  const char *how = NULL;
  if (tune_project_root(path, root, ls->root, sizeof ls->root, &how, err)) goto fail_early;
  set->root_how = how;
  tune_lua_limits lim;
  if (tune_lua_limits_init(&lim, err)) goto fail_early;
  lua_State *L = sandbox_new(ls, &lim);
  if (!L) { tune_fail(err, TUNE_ENOMEM, "lua: cannot create a state"); goto fail_early; }
  set->L = L;
  lua_pushlightuserdata(L, ls);
  lua_setfield(L, LUA_REGISTRYINDEX, "tune.loader_owned");
  char chunk[PATH_MAX + 2];
  snprintf(chunk, sizeof chunk, "@%s", path);
  set->file_text = tune_read_file(path, NULL);
  ls->depth = 1; /* the file is the outermost module */
  if (load_text_file(L, path, chunk) != LUA_OK) { recipe_lua_fail(err, path, lua_tostring(L, -1)); goto fail; }
  tune_lua_evaluating(L, "while loading the recipe file");
  int loaded = pcall1(L, 0);
  ls->depth = 0;
  if (loaded != LUA_OK) { recipe_lua_fail(err, path, lua_tostring(L, -1)); goto fail; }
  if (!lua_istable(L, -1)) { tune_fail(err, TUNE_ERECIPE, "%s: the recipe must return a table", path); goto fail; }
  int top = lua_gettop(L);
  int single = lua_getfield(L, top, "name") != LUA_TNIL;
  lua_pop(L, 1);
  set->n = single ? 1 : (int)lua_rawlen(L, top);
  if (set->n == 0) {
    if (tune_recipe_schema_check(L, top, path, err)) goto fail; /* e.g. a misspelt name = */
    tune_fail(err, TUNE_ERECIPE, "%s: the recipe returned neither a recipe (with name) nor a list of recipes", path);
    goto fail;
  }
  set->r = calloc((size_t)set->n, sizeof *set->r);
  if (!set->r) { tune_fail(err, TUNE_ENOMEM, "recipe: out of memory"); goto fail; }
  XXH64_hash_t texts = XXH64_digest(ls->mod[0]);
  const char *file = sdup(path), *root_dir = sdup(ls->root);
  /* the first recipe owns the shared strings (tune_recipes_free), also when the list fails before it is parsed */
  set->r[0].file = file;
  set->r[0].root = root_dir;
  for (int i = 0; i < set->n; ++i) {
    if (single) lua_pushvalue(L, top);
    else lua_rawgeti(L, top, i + 1);
    if (!lua_istable(L, -1)) { tune_fail(err, TUNE_ERECIPE, "%s: element %d of the recipe list is not a table", path, i + 1); goto fail; }
    /* an element that a module returned (require "attention.decode") is hashed with that module's
       texts only and defined by that module's file; a recipe written in the file itself with every
       text loaded, defined by the file */
    XXH64_hash_t own = texts;
    char *module_file = NULL;
    int from_module = !single && table_module(L, ls->root, &own, &module_file);
    if (!from_module) module_file = sdup(path);
    if (!(set->r[i].module_file = module_file)) { tune_fail(err, TUNE_ENOMEM, "recipe: out of memory"); goto fail; }
    if (parse_recipe(L, set, &set->r[i], file, root_dir, own, err)) goto fail;
    lua_pop(L, 1);
    for (int j = 0; j < i; ++j)
      if (!strcmp(set->r[j].name, set->r[i].name)) { tune_fail(err, TUNE_ERECIPE, "%s: two recipes are named %s", path, set->r[i].name); goto fail; }
  }
  lua_settop(L, 0);
  *out = set;
  return TUNE_OK;
fail:
  tune_recipes_free(set);
  return err->code;
fail_early:
  XXH64_freeState(ls->mod[0]);
  free(ls);
  free(set);
  return err->code;
}

void tune_recipes_root_line(const tune_recipes *set, char *buf, size_t n) {
  const char *root = set && set->n > 0 && set->r[0].root ? set->r[0].root : "?";
  snprintf(buf, n, "root %s (%s)", root, set && set->root_how ? set->root_how : "unknown");
}

void tune_recipes_free(tune_recipes *set) {
  if (!set) return;
  if (set->L) {
    lua_State *L = set->L;
    lua_getfield(L, LUA_REGISTRYINDEX, "tune.loader_owned");
    loader_state *ls = lua_touserdata(L, -1);
    if (ls) {
      for (int i = 0; i < MODULE_DEPTH; ++i)
        if (ls->mod[i]) XXH64_freeState(ls->mod[i]);
      free(ls);
    }
    tune_lua_close(L);
  }
  for (int i = 0; set->r && i < set->n; ++i) {
    tune_recipe *r = &set->r[i];
    for (int j = 0; j < r->n_params; ++j) {
      for (int k = 0; k < r->params[j].n_values; ++k)
        if (r->params[j].values[k].kind == 's') free((char *)r->params[j].values[k].s);
      free(r->params[j].values);
      free((char *)r->params[j].name);
    }
    free(r->params);
    for (int j = 0; j < r->n_problems; ++j) { free((char *)r->problems[j].name); free(r->problems[j].dims_json); }
    free(r->problems);
    for (int j = 0; j < r->n_args; ++j) free((char *)r->args[j].name);
    free((char *)r->name);
    free((char *)r->template_path);
    free((char *)r->ref_source);
    free((char *)r->module_file);
    if (i == 0) { free((char *)r->file); free((char *)r->root); }
  }
  free(set->r);
  free(set->file_text);
  free(set);
}

/* ---- constraints --------------------------------------------------------- */

int tune_recipe_check(void *ctx, int ci, const int *vi, int n_bound, tune_err *err) {
  tune_recipe *r = ctx;
  lua_State *L = r->set->L;
  int top = lua_gettop(L);
  push_field(L, r, "__constraints");
  lua_rawgeti(L, -1, ci + 1);
  int is_expr = 0;
  lua_Debug ar;
  lua_pushvalue(L, -1);
  if (lua_getinfo(L, ">S", &ar) && ar.source[0] == '=') is_expr = 1;
  push_config(L, r, vi, n_bound, NULL, NULL);
  char what[48];
  snprintf(what, sizeof what, "while evaluating constraint %d", ci + 1);
  tune_lua_evaluating(L, what);
  int rc;
  if (is_expr) {
    lua_setupvalue(L, -2, 1);
    rc = pcall1(L, 0);
  } else rc = pcall1(L, 1);
  int ans;
  if (rc != LUA_OK) {
    if (lua_touserdata(L, -1) == &unbound_sentinel) ans = SEARCH_UNDECIDED;
    else { recipe_lua_fail(err, r->file, lua_tostring(L, -1)); ans = SEARCH_ERROR; }
  } else if (lua_type(L, -1) != LUA_TBOOLEAN) {
    char where[PATH_MAX + 32];
    lua_rawgeti(L, top + 1, ci + 1);
    func_where(L, -1, r->file, where, sizeof where);
    tune_fail(err, TUNE_ERECIPE, "%s: constraint %d returned %s, want a boolean", where, ci + 1, luaL_typename(L, -2));
    ans = SEARCH_ERROR;
  } else ans = lua_toboolean(L, -1) ? SEARCH_PASS : SEARCH_FAIL;
  tune_lua_evaluating(L, NULL);
  lua_settop(L, top);
  return ans;
}

/* ---- configs --------------------------------------------------------------- */

static void value_text(const tune_value *v, char *buf, size_t n, int json) {
  if (v->kind == 'b') snprintf(buf, n, json ? "%s" : "%s", v->i ? (json ? "true" : "1") : (json ? "false" : "0"));
  else if (v->kind == 's') snprintf(buf, n, json ? "\"%s\"" : "%s", v->s);
  else snprintf(buf, n, "%lld", v->i);
}

/* The config's JSON, every parameter in recipe order; with skip_absent, a parameter at its absent
 * value left out, as configs recorded before the parameter existed were written. */
static void config_json(const tune_recipe *r, const int *vi, int skip_absent, char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "{");
  int first = 1;
  for (int i = 0; i < r->n_params && len < n; ++i) {
    if (skip_absent && vi[i] == r->params[i].absent) continue;
    char v[256];
    value_text(&r->params[i].values[vi[i]], v, sizeof v, 1);
    len += (size_t)snprintf(buf + len, n - len, "%s\"%s\":%s", first ? "" : ",", r->params[i].name, v);
    first = 0;
  }
  if (len < n) snprintf(buf + len, n - len, "}");
}

void tune_recipe_config_json(const tune_recipe *r, const int *vi, char *buf, size_t n) {
  config_json(r, vi, 0, buf, n);
}

/* The hash leaves absent-valued parameters out, so that a config at those values keeps the hash
 * (the identity results are found by) it had before the parameters existed. */
void tune_recipe_config_hash(const tune_recipe *r, const int *vi, char out[17]) {
  char buf[8192];
  config_json(r, vi, 1, buf, sizeof buf);
  tune_hash_hex(buf, strlen(buf), out);
}

int tune_param_value_index(const tune_param *param, const json_t *v) {
  for (int j = 0; v && j < param->n_values; j++) {
    const tune_value *tv = &param->values[j];
    if ((tv->kind == 'i' && json_is_integer(v) && json_integer_value(v) == tv->i) ||
        (tv->kind == 'b' && json_is_boolean(v) && json_is_true(v) == (tv->i != 0)) ||
        (tv->kind == 's' && json_is_string(v) && tv->s && !strcmp(json_string_value(v), tv->s)))
      return j;
  }
  return -1;
}

int tune_param_index_in(const tune_param *param, const json_t *params_obj) {
  const json_t *v = json_object_get(params_obj, param->name);
  return v ? tune_param_value_index(param, v) : param->absent;
}

int tune_recipe_param_index(const tune_recipe *r, const char *name) {
  for (int i = 0; name && i < r->n_params; ++i)
    if (!strcmp(r->params[i].name, name)) return i;
  return -1;
}

int tune_recipe_config_indexes(const tune_recipe *r, const json_t *params, int *vi) {
  for (int i = 0; i < r->n_params; ++i)
    if ((vi[i] = tune_param_index_in(&r->params[i], params)) < 0) return -1;
  return 0;
}

/* ---- evaluation -------------------------------------------------------------- */

/* 1 for an arch name "sm_XY..." below sm_90 (clusters need Hopper); 0 for newer or unknown. */
static int arch_below_90(const char *arch) {
  if (strncmp(arch, "sm_", 3) || arch[3] < '0' || arch[3] > '9') return 0;
  return atoi(arch + 3) < 90;
}

static int lua_fail(lua_State *L, tune_err *err, const char *what, tune_recipe *r) {
  const char *m = lua_tostring(L, -1);
  return tune_fail(err, TUNE_ERECIPE, "%s: %s: %s", r->file, what, m ? m : "error");
}

/* Read {x,y,z} (or a number) at the top into v[3]; missing entries are 1. */
/* min: 1 for blocks; 0 for a variant step's grid (a step with no blocks is not launched). */
static int read_dim3(lua_State *L, unsigned v[3], long long min) {
  v[0] = v[1] = v[2] = 1;
  long long x;
  if (lua_type(L, -1) == LUA_TNUMBER) {
    if (to_int(L, -1, &x) || x < min || x > 0x7fffffff) return -1;
    v[0] = (unsigned)x;
    return 0;
  }
  if (!lua_istable(L, -1)) return -1;
  int n = (int)lua_rawlen(L, -1);
  if (n < 1 || n > 3) return -1;
  for (int i = 0; i < n; ++i) {
    lua_rawgeti(L, -1, i + 1);
    int bad = to_int(L, -1, &x) || x < min || x > 0x7fffffff;
    lua_pop(L, 1);
    if (bad) return -1;
    v[i] = (unsigned)x;
  }
  return 0;
}

static int add_define(char (*defs)[160], int *n, const char *name, lua_State *L, int idx) {
  if (*n >= TUNE_MAX_DEFINES) return -1;
  char v[128];
  long long iv;
  int t = lua_type(L, idx);
  if (t == LUA_TBOOLEAN) snprintf(v, sizeof v, "%d", lua_toboolean(L, idx));
  else if (t == LUA_TNUMBER && !to_int(L, idx, &iv)) snprintf(v, sizeof v, "%lld", iv);
  else if (t == LUA_TNUMBER) snprintf(v, sizeof v, "%.17g", lua_tonumber(L, idx));
  else if (t == LUA_TSTRING) snprintf(v, sizeof v, "%s", lua_tostring(L, idx));
  else return -2;
  snprintf(defs[(*n)++], 160, "-D%s=%s", name, v);
  return 0;
}

/* Add the defines returned by the function at the top (a table) to defs. */
static int add_define_table(lua_State *L, char (*defs)[160], int *n, tune_recipe *r, tune_err *err) {
  if (lua_isnil(L, -1)) return TUNE_OK;
  if (!lua_istable(L, -1)) return tune_fail(err, TUNE_ERECIPE, "%s: defines must return a table NAME -> value", r->file);
  /* sorted, so the compile key does not depend on table order */
  const char *keys[TUNE_MAX_DEFINES];
  int k = 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -2) == LUA_TSTRING && k < TUNE_MAX_DEFINES) keys[k++] = lua_tostring(L, -2);
    lua_pop(L, 1);
  }
  for (int i = 1; i < k; ++i)
    for (int j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; --j) { const char *t = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = t; }
  for (int i = 0; i < k; ++i) {
    lua_getfield(L, -1, keys[i]);
    int rc = add_define(defs, n, keys[i], L, -1);
    lua_pop(L, 1);
    if (rc) return tune_fail(err, TUNE_ERECIPE, "%s: define %s: too many defines or a value that is not a number, boolean or string", r->file, keys[i]);
  }
  return TUNE_OK;
}

/* Entries of the table at the top that are expression strings are replaced
 * (in a copy) by their values: grid = {"ceil(N / 256)", 1, 1}. On error the
 * message is at the top. */
static int eval_entries(lua_State *L, int cfg, int prob, int dev) {
  if (!lua_istable(L, -1)) return LUA_OK;
  int t = lua_gettop(L);
  int n = (int)lua_rawlen(L, t);
  lua_createtable(L, n, 0);
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, t, i);
    if (lua_type(L, -1) == LUA_TSTRING) {
      int rc = eval_top(L, cfg, prob, dev, 0);
      if (rc != LUA_OK) { lua_replace(L, t); lua_settop(L, t); return rc; }
    }
    lua_rawseti(L, -2, i);
  }
  lua_replace(L, t);
  return LUA_OK;
}

/* cluster = {x, y, z} (or a number, or a function(c, p, d) returning either, entries may be expression
 * strings: the calling convention of grid) of the launch table at lt into out->cluster; missing: {1, 1, 1}.
 * A form that is not 1..3 integers, or a Lua error, is a recipe error (err); values that cannot launch
 * (a dim < 1, more than TUNERT_CLUSTER_MAX blocks, a grid dim that is no multiple) are this variant's
 * problem: bad gets the reason (the variant is skipped with it), out->cluster stays {1, 1, 1}. */
static int eval_cluster(lua_State *L, tune_recipe *r, int lt, int cfg, int prob, int dev, tune_launch *out, char *bad,
                        size_t bad_n, tune_err *err) {
  out->cluster[0] = out->cluster[1] = out->cluster[2] = 1;
  if (lua_getfield(L, lt, "cluster") == LUA_TNIL) { lua_pop(L, 1); return TUNE_OK; }
  if (eval_top(L, cfg, prob, dev, 0) != LUA_OK) return lua_fail(L, err, "cluster", r);
  if (eval_entries(L, cfg, prob, dev) != LUA_OK) return lua_fail(L, err, "cluster", r);
  int64_t c[3] = {1, 1, 1};
  long long x;
  int n = lua_type(L, -1) == LUA_TNUMBER ? 1 : lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  int ok = n >= 1 && n <= 3;
  for (int i = 0; ok && i < n; ++i) {
    if (lua_istable(L, -1)) lua_rawgeti(L, -1, i + 1); else lua_pushvalue(L, -1);
    ok = lua_type(L, -1) == LUA_TNUMBER && !to_int(L, -1, &x) && x >= -0x7fffffffLL && x <= 0x7fffffffLL;
    lua_pop(L, 1);
    if (ok) c[i] = x;
  }
  lua_pop(L, 1);
  if (!ok)
    return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': cluster must be a positive integer or {x, y, z} (or a function(c, p, d) returning one)",
                     r->file, r->name);
  if (tunert_cluster_check(c, out->grid, bad, bad_n)) return TUNE_OK;
  for (int i = 0; i < 3; ++i) out->cluster[i] = (unsigned)c[i];
  return TUNE_OK;
}

static int eval_launch(lua_State *L, tune_recipe *r, int lt, int cfg, int prob, int dev,
                       const char *top_kernel_or_null, int top_kernel_idx, tune_launch *out, char *bad, size_t bad_n,
                       tune_err *err) {
  memset(out, 0, sizeof *out);
  /* kernel: this launch's, else the recipe's */
  int kt = lua_getfield(L, lt, "kernel");
  if (kt == LUA_TNIL) { lua_pop(L, 1); if (top_kernel_idx) lua_pushvalue(L, top_kernel_idx); else lua_pushnil(L); }
  if (lua_isfunction(L, -1)) {
    lua_pushvalue(L, cfg); lua_pushvalue(L, prob);
    if (pcall1(L, 2) != LUA_OK) return lua_fail(L, err, "kernel", r);
  }
  if (lua_type(L, -1) != LUA_TSTRING) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': kernel must be a name or a function returning one", r->file, r->name);
  snprintf(out->kernel, sizeof out->kernel, "%s", lua_tostring(L, -1));
  out->is_expr = strchr(out->kernel, '<') || strchr(out->kernel, ':');
  lua_pop(L, 1);
  const char *f[3] = {"grid", "block", "shared"};
  for (int i = 0; i < 3; ++i) {
    lua_getfield(L, lt, f[i]);
    if (lua_isnil(L, -1) && i == 2) { lua_pop(L, 1); break; }
    if (eval_top(L, cfg, prob, dev, 0) != LUA_OK) return lua_fail(L, err, f[i], r);
    if (i < 2 && eval_entries(L, cfg, prob, dev) != LUA_OK) return lua_fail(L, err, f[i], r);
    if (i < 2) {
      if (read_dim3(L, i == 0 ? out->grid : out->block, i == 0 ? 0 : 1))
        return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': %s must be %s integer or {x, y, z}", r->file, r->name, f[i],
                         i == 0 ? "a non-negative (0: the step is not launched)" : "a positive");
    } else {
      long long s;
      if (to_int(L, -1, &s) || s < 0) return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': shared must be bytes >= 0", r->file, r->name);
      out->shared = (unsigned)s;
    }
    lua_pop(L, 1);
  }
  /* stream: "main" (default) or "side" (a second stream of the worker, for steps meant to overlap;
     timing still counts every kernel of the context, and libtunert runs all steps in order on the
     caller's stream) */
  int st = lua_getfield(L, lt, "stream");
  if (st == LUA_TSTRING && !strcmp(lua_tostring(L, -1), "side")) out->side_stream = 1;
  else if (!(st == LUA_TNIL || (st == LUA_TSTRING && !strcmp(lua_tostring(L, -1), "main"))))
    return tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': launch stream must be \"main\" or \"side\"", r->file, r->name);
  lua_pop(L, 1);
  if (eval_cluster(L, r, lt, cfg, prob, dev, out, bad, bad_n, err)) return err->code;
  (void)top_kernel_or_null;
  return TUNE_OK;
}

/* The value at the top (a list, or a function(p, c, d) returning one) -> at most max integers,
 * each entry a number or an expression string over params and dims. Pops it. 0: ok; 1: a Lua
 * error, its message at the top; 2: not a list of 1..max integers. */
static int eval_int_list(lua_State *L, int cfg, int prob, int dev, long long *out, int max, int *n) {
  int top = lua_gettop(L) - 1;
  if (eval_top(L, cfg, prob, dev, 1) != LUA_OK) { lua_copy(L, -1, top + 1); lua_settop(L, top + 1); return 1; }
  *n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  if (*n < 1 || *n > max) { lua_settop(L, top); return 2; }
  for (int j = 0; j < *n; ++j) {
    lua_rawgeti(L, -1, j + 1);
    if (eval_top(L, cfg, prob, dev, 1) != LUA_OK) { lua_copy(L, -1, top + 1); lua_settop(L, top + 1); return 1; }
    int bad = to_int(L, -1, &out[j]);
    lua_pop(L, 1);
    if (bad) { lua_settop(L, top); return 2; }
  }
  lua_settop(L, top);
  return 0;
}

/* Push the config as tensor-map strides see it: the problem's scalar args by name (a row stride
 * such as q_ld, which the runtime takes from the launch), then cfg's params, dims and sm_count.
 * A scalar named as a param or dim is left to that. 0, or 1 with a Lua error at the top. */
static int push_strides_env(lua_State *L, tune_recipe *r, int at, int cfg, int prob, int dev) {
  lua_newtable(L);
  int env = lua_gettop(L);
  for (int i = 0; i < r->n_args; ++i) {
    const tune_arg_def *a = &r->args[i];
    if (a->is_tensor || a->is_tmap) continue;
    int taken = lua_getfield(L, prob, a->name) != LUA_TNIL;
    lua_pop(L, 1);
    for (int k = 0; k < r->n_params && !taken; ++k) taken = !strcmp(r->params[k].name, a->name);
    if (taken) continue;
    lua_rawgeti(L, at, i + 1);
    lua_getfield(L, -1, "value");
    if (eval_top(L, 0, prob, dev, 1) != LUA_OK) { lua_copy(L, -1, env); lua_settop(L, env); return 1; }
    lua_setfield(L, env, a->name);
    lua_pop(L, 1);
  }
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, cfg);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, env);
  return 0;
}

/* dims, strides and box of tensormap arg i (args table at `at`) for one variant. Ranges are the
 * worker's to check (a bad box is that variant's launch_error, docs/tensormap-args.md). */
static int eval_tmap(lua_State *L, tune_recipe *r, int at, int i, int cfg, int prob, int dev,
                     const tune_problem *p, tune_tmap_var *v, tune_err *err) {
  const tune_arg_def *a = &r->args[i];
  const int t = a->tmap.tensor, elsize = tune_dtype_size(r->args[t].dtype);
  long long dims[TUNE_TMAP_MAX_RANK], strides[TUNE_TMAP_MAX_RANK], box[TUNE_TMAP_MAX_RANK];
  int rank = 0, n = 0, rc;
  char what[200];
  lua_rawgeti(L, at, i + 1);
  lua_getfield(L, -1, "tensormap");
  int tm = lua_gettop(L);
  /* dims: given, or the tensor's shape reversed */
  if (lua_getfield(L, tm, "dims") != LUA_TNIL) {
    snprintf(what, sizeof what, "arg %s: tensormap dims", a->name);
    rc = eval_int_list(L, cfg, prob, dev, dims, TUNE_TMAP_MAX_RANK, &rank);
  } else {
    lua_pop(L, 1);
    snprintf(what, sizeof what, "arg %s: the shape of tensor %s (the map's default dims)", a->name, r->args[t].name);
    lua_rawgeti(L, at, t + 1);
    lua_getfield(L, -1, "shape");
    lua_remove(L, -2);
    long long shape[TUNE_TMAP_MAX_RANK];
    rc = eval_int_list(L, cfg, prob, dev, shape, TUNE_TMAP_MAX_RANK, &rank);
    for (int j = 0; !rc && j < rank; ++j) dims[j] = shape[rank - 1 - j];
  }
  if (rc == 1) { rc = lua_fail(L, err, what, r); goto out; }
  if (rc == 2) { rc = tune_fail(err, TUNE_ERECIPE, "%s: %s: want a list of 1..%d integers (problem %s)", r->file, what, TUNE_TMAP_MAX_RANK, p->name); goto out; }
  for (int j = 0; j < rank; ++j)
    if (dims[j] < 1) { rc = tune_fail(err, TUNE_ERECIPE, "%s: %s: entry %d is %lld, want >= 1 (problem %s)", r->file, what, j + 1, dims[j], p->name); goto out; }
  /* strides: given (bytes, dims 2..rank), or packed */
  if (lua_getfield(L, tm, "strides") != LUA_TNIL) {
    snprintf(what, sizeof what, "arg %s: tensormap strides", a->name);
    if (push_strides_env(L, r, at, cfg, prob, dev)) { rc = lua_fail(L, err, what, r); goto out; }
    lua_insert(L, -2); /* the list on top, its env below */
    rc = rank > 1 ? eval_int_list(L, lua_gettop(L) - 1, prob, dev, strides, TUNE_TMAP_MAX_RANK - 1, &n) : 2;
    if (rc != 1) lua_pop(L, 1); /* the env (an error replaces the list and stays on top) */
    if (rc == 1) { rc = lua_fail(L, err, what, r); goto out; }
    if (rc == 2 || n != rank - 1) { rc = tune_fail(err, TUNE_ERECIPE, "%s: %s: want %d integers (byte strides of dims 2..%d; problem %s)", r->file, what, rank - 1, rank, p->name); goto out; }
  } else {
    lua_pop(L, 1);
    long long s = elsize;
    for (int j = 0; j + 1 < rank; ++j) strides[j] = s *= dims[j];
  }
  lua_getfield(L, tm, "box");
  snprintf(what, sizeof what, "arg %s: tensormap box", a->name);
  rc = eval_int_list(L, cfg, prob, dev, box, TUNE_TMAP_MAX_RANK, &n);
  if (rc == 1) { rc = lua_fail(L, err, what, r); goto out; }
  if (rc == 2 || n != rank) { rc = tune_fail(err, TUNE_ERECIPE, "%s: %s: want %d integers, one per dim (problem %s)", r->file, what, rank, p->name); goto out; }
  if (a->tmap.n_estr && a->tmap.n_estr != rank) { rc = tune_fail(err, TUNE_ERECIPE, "%s: arg %s: tensormap element_strides has %d entries for %d dims", r->file, a->name, a->tmap.n_estr, rank); goto out; }
  v->rank = rank;
  for (int j = 0; j < rank; ++j) {
    v->dims[j] = (uint64_t)dims[j];
    v->box[j] = box[j] < 0 || box[j] > 0xffffffffLL ? 0u : (unsigned)box[j]; /* 0: refused by the worker */
    if (j + 1 < rank) v->strides[j] = strides[j] < 0 ? 0 : (uint64_t)strides[j];
  }
  rc = TUNE_OK;
out:
  lua_settop(L, tm - 2);
  return rc;
}

static int eval_variant(tune_recipe *r, const int *vi, const tune_problem *p, const tune_device_facts *d,
                        int prune, tune_variant *out, tune_err *err);

int tune_recipe_eval_variant(tune_recipe *r, const int *vi, const tune_problem *p,
                             const tune_device_facts *d, tune_variant *out, tune_err *err) {
  return eval_variant(r, vi, p, d, 1, out, err);
}

/* With `requires`, applies only prunes the search: requires decide where a config runs. */
static int has_requires(tune_recipe *r) {
  lua_State *L = r->set->L;
  int t = push_field(L, r, "requires"), n = t == LUA_TTABLE ? (int)lua_rawlen(L, -1) : 0;
  lua_pop(L, 1);
  return n > 0;
}

int tune_recipe_eval_variant_runs(tune_recipe *r, const int *vi, const tune_problem *p,
                                  const tune_device_facts *d, tune_variant *out, tune_err *err) {
  return eval_variant(r, vi, p, d, !has_requires(r), out, err);
}

static int eval_variant(tune_recipe *r, const int *vi, const tune_problem *p, const tune_device_facts *d,
                        int prune, tune_variant *out, tune_err *err) {
  lua_State *L = r->set->L;
  int top = lua_gettop(L);
  memset(out, 0, sizeof *out);
  push_config(L, r, vi, r->n_params, p, d);
  int cfg = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->ref);
  int prob = lua_gettop(L);
  push_device(L, d);
  int dev = lua_gettop(L);
  int rc = TUNE_OK;
  char what[160];
  snprintf(what, sizeof what, "while evaluating a config for problem %.100s", p->name);
  tune_lua_evaluating(L, what);
  /* applies(c, p) */
  if (prune && push_field(L, r, "applies") == LUA_TFUNCTION) {
    lua_pushvalue(L, cfg); lua_pushvalue(L, prob);
    int base = lua_gettop(L) - 3;
    lua_pushcfunction(L, msgh); lua_insert(L, base + 1);
    if (tune_lua_pcall(L, 2, 2, base + 1) != LUA_OK) { rc = lua_fail(L, err, "applies", r); goto done; }
    if (!lua_toboolean(L, -2)) {
      out->skip = 1;
      snprintf(out->skip_reason, sizeof out->skip_reason, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "applies() returned false");
      goto done;
    }
  }
  lua_settop(L, dev);
  /* requires: expression strings over params and dims that must all be true
     (the form of applies that libtunert can check without Lua) */
  if (push_field(L, r, "requires") == LUA_TTABLE) {
    int qt = lua_gettop(L);
    int nq = (int)lua_rawlen(L, qt);
    for (int i = 1; i <= nq; ++i) {
      lua_rawgeti(L, qt, i);
      const char *q = lua_tostring(L, -1);
      if (lua_type(L, -1) != LUA_TSTRING) { rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': requires[%d] must be an expression string", r->file, r->name, i); goto done; }
      char qtext[256];
      snprintf(qtext, sizeof qtext, "%s", q);
      if (eval_top(L, cfg, prob, dev, 0) != LUA_OK) { rc = lua_fail(L, err, "requires", r); goto done; }
      if (lua_type(L, -1) != LUA_TBOOLEAN) { rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': requires \"%s\" gave %s, want a boolean", r->file, r->name, qtext, luaL_typename(L, -1)); goto done; }
      if (!lua_toboolean(L, -1)) {
        out->skip = 1;
        snprintf(out->skip_reason, sizeof out->skip_reason, "requires %.240s", qtext);
        goto done;
      }
      lua_pop(L, 1);
    }
  }
  lua_settop(L, dev);
  /* defines: params, then defines(c, p) */
  for (int i = 0; i < r->n_params; ++i) {
    push_value(L, &r->params[i].values[vi[i]]);
    add_define(out->defines, &out->n_defines, r->params[i].name, L, -1);
    lua_pop(L, 1);
  }
  if (push_field(L, r, "defines") != LUA_TNIL) {
    if (lua_istable(L, -1)) { /* NAME = "expression" (bundle expression language) or a constant */
      int t = lua_gettop(L);
      lua_newtable(L);
      lua_pushnil(L);
      while (lua_next(L, t)) {
        if (lua_type(L, -1) == LUA_TSTRING && eval_top(L, cfg, prob, dev, 0) != LUA_OK) { rc = lua_fail(L, err, "defines", r); goto done; }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, t + 1);
      }
      lua_replace(L, t);
    } else if (eval_top(L, cfg, prob, dev, 0) != LUA_OK) { rc = lua_fail(L, err, "defines", r); goto done; }
    if ((rc = add_define_table(L, out->defines, &out->n_defines, r, err))) goto done;
  }
  lua_settop(L, dev);
  /* launches */
  push_field(L, r, "kernel");
  int kidx = lua_isnil(L, -1) ? 0 : lua_gettop(L);
  push_field(L, r, "launch");
  int lt = lua_gettop(L);
  lua_getfield(L, lt, "grid");
  int single = !lua_isnil(L, -1);
  lua_pop(L, 1);
  out->n_launches = single ? 1 : (int)lua_rawlen(L, lt);
  if (out->n_launches < 1 || out->n_launches > TUNE_MAX_LAUNCHES) { rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe '%s': launch must be {grid=...} or a list of 1..%d of them", r->file, r->name, TUNE_MAX_LAUNCHES); goto done; }
  for (int i = 0; i < out->n_launches; ++i) {
    char bad[224] = "";
    if (single) lua_pushvalue(L, lt); else lua_rawgeti(L, lt, i + 1);
    if ((rc = eval_launch(L, r, lua_gettop(L), cfg, prob, dev, NULL, kidx, &out->launch[i], bad, sizeof bad, err))) goto done;
    lua_pop(L, 1);
    if (!bad[0] && tunert_cluster_used(out->launch[i].cluster) && arch_below_90(d->arch))
      snprintf(bad, sizeof bad, "thread-block clusters need sm_90 or newer; the target is %s", d->arch);
    if (bad[0]) { /* a geometry the driver would refuse: this variant is not run, and says why */
      out->skip = 1;
      snprintf(out->skip_reason, sizeof out->skip_reason, "launch step %d: %s", i + 1, bad);
      goto done;
    }
  }
  /* scratch sizes: shape(p, c) */
  push_field(L, r, "args");
  int at = lua_gettop(L);
  for (int i = 0; i < r->n_args; ++i) {
    if (!r->args[i].scratch) continue;
    lua_rawgeti(L, at, i + 1);
    lua_getfield(L, -1, "shape");
    if (eval_top(L, cfg, prob, dev, 1) != LUA_OK) { rc = lua_fail(L, err, r->args[i].name, r); goto done; }
    int64_t numel = 1;
    int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
    for (int j = 0; j < n; ++j) {
      lua_rawgeti(L, -1, j + 1);
      if (eval_top(L, cfg, prob, dev, 1) != LUA_OK) { rc = lua_fail(L, err, r->args[i].name, r); goto done; }
      long long x;
      if (to_int(L, -1, &x) || x < 1) { rc = tune_fail(err, TUNE_ERECIPE, "%s: arg %s: shape entries must be positive integers", r->file, r->args[i].name); goto done; }
      numel *= x;
      lua_pop(L, 1);
    }
    if (n == 0) { rc = tune_fail(err, TUNE_ERECIPE, "%s: arg %s: shape must be a list", r->file, r->args[i].name); goto done; }
    out->scratch_numel[i] = numel;
    lua_pop(L, 2);
  }
  for (int i = 0; i < r->n_args; ++i)
    if (r->args[i].is_tmap && (rc = eval_tmap(L, r, at, i, cfg, prob, dev, p, &out->tmap[i], err))) goto done;
done:
  tune_lua_evaluating(L, NULL);
  lua_settop(L, top);
  return rc;
}

/* An input's init range {"randint"|"uniform"|"wide", lo, hi} whose bounds are expressions or functions
 * of the problem: their values for this problem into def (the args entry is on the top of the stack). */
static int eval_init_range(lua_State *L, tune_recipe *r, int i, int prob, int dev, tune_arg_def *def, tune_err *err) {
  if (def->init != TUNE_INIT_RANDINT && def->init != TUNE_INIT_UNIFORM && def->init != TUNE_INIT_OFFSETS &&
      def->init != TUNE_INIT_WIDE)
    return TUNE_OK;
  lua_getfield(L, -1, "init");
  double *bound[2] = {&def->init_a, &def->init_b};
  for (int k = 0; k < 2; ++k) {
    int t = lua_rawgeti(L, -1, k + 2);
    if (t == LUA_TSTRING || t == LUA_TFUNCTION) {
      if (eval_top(L, 0, prob, dev, 1) != LUA_OK) return lua_fail(L, err, r->args[i].name, r);
      if (lua_type(L, -1) != LUA_TNUMBER) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: init bound %d is not a number", r->file, r->args[i].name, k + 1);
      *bound[k] = lua_tonumber(L, -1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (def->init == TUNE_INIT_OFFSETS) return TUNE_OK; /* {total, min_part}: checked against the shape */
  if (def->init == TUNE_INIT_WIDE) return check_wide(r, def, "init", def->init_a, def->init_b, err);
  if (!(def->init_b >= def->init_a)) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: init range is empty (lo > hi)", r->file, r->args[i].name);
  return TUNE_OK;
}

/* offsets {total, min_part} over numel = parts + 1 entries: integers, parts * min_part <= total. */
static int check_offsets(const tune_recipe *r, const tune_arg_def *def, int64_t numel, const char *problem, tune_err *err) {
  double total = def->init_a, min_part = def->init_b;
  if (def->dtype != TUNE_I32 && def->dtype != TUNE_I64) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: offsets are i32 or i64", r->file, def->name);
  if (numel < 2) return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: offsets need a shape of parts + 1 >= 2 entries", r->file, def->name);
  if (total != floor(total) || min_part != floor(min_part) || min_part < 0 || total > (def->dtype == TUNE_I32 ? 2147483647.0 : 9.0e15))
    return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: offsets {total, min_part} must be non-negative integers (total within the dtype) for problem %s", r->file, def->name, problem);
  if ((double)(numel - 1) * min_part > total)
    return tune_fail(err, TUNE_ERECIPE, "%s: arg %s: %lld parts of at least %.0f exceed total %.0f for problem %s", r->file, def->name, (long long)(numel - 1), min_part, total, problem);
  return TUNE_OK;
}

/* The table of a metric function's third argument: each integer input of at most
 * TUNE_METRIC_INPUT_MAX elements as the worker draws it from seed. -1 when out of memory (the
 * table is pushed all the same). */
static int push_drawn_inputs(lua_State *L, const tune_problem_setup *s, uint64_t seed) {
  lua_newtable(L);
  for (int i = 0; i < s->n_args; ++i) {
    const tune_arg_def *def = &s->def[i];
    int is_int = def->dtype == TUNE_I32 || def->dtype == TUNE_I64;
    if (!def->is_tensor || def->output || def->scratch || !is_int || s->numel[i] < 1 ||
        s->numel[i] > TUNE_METRIC_INPUT_MAX)
      continue;
    void *buf = malloc((size_t)s->numel[i] * sizeof(int64_t));
    if (!buf) return -1;
    tune_inputs_fill(def, s->numel[i], seed, i, buf);
    lua_createtable(L, (int)s->numel[i], 0);
    for (int64_t k = 0; k < s->numel[i]; ++k) {
      lua_pushinteger(L, (lua_Integer)tune_inputs_get(def->dtype, buf, k));
      lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, def->name);
    free(buf);
  }
  return 0;
}

/* out's flops and bytes from the recipe's metrics; seed (NULL: none) draws a function's third
 * argument, once and only when a metric is a function. */
static int eval_metrics(lua_State *L, tune_recipe *r, int prob, int dev, const uint64_t *seed,
                        tune_problem_setup *out, tune_err *err) {
  if (push_field(L, r, "metrics") != LUA_TTABLE) { lua_pop(L, 1); return TUNE_OK; }
  int mt = lua_gettop(L), inputs = 0;
  const char *m[2] = {"flops", "bytes"};
  double *dst[2] = {&out->flops, &out->bytes};
  for (int i = 0; i < 2; ++i) {
    int rc;
    if (lua_getfield(L, mt, m[i]) == LUA_TFUNCTION) {
      if (seed && !inputs) {
        if (push_drawn_inputs(L, out, *seed))
          return tune_fail(err, TUNE_ENOMEM, "%s: no memory for the drawn inputs of its metrics", r->name);
        inputs = lua_gettop(L);
        lua_insert(L, inputs - 1); /* below the function, which stays on top */
        --inputs;
      }
      lua_pushvalue(L, prob);
      lua_pushvalue(L, dev);
      if (inputs) lua_pushvalue(L, inputs); else lua_pushnil(L);
      rc = pcall1(L, 3);
    } else {
      rc = eval_top(L, 0, prob, dev, 1);
    }
    if (rc != LUA_OK) return lua_fail(L, err, m[i], r);
    *dst[i] = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0;
    lua_pop(L, 1);
  }
  lua_settop(L, mt - 1);
  return TUNE_OK;
}

static int eval_problem(tune_recipe *r, const tune_problem *p, const tune_device_facts *d, const uint64_t *seed,
                        tune_problem_setup *out, tune_err *err);

int tune_recipe_eval_problem(tune_recipe *r, const tune_problem *p, const tune_device_facts *d,
                             tune_problem_setup *out, tune_err *err) {
  return eval_problem(r, p, d, NULL, out, err);
}

int tune_recipe_eval_problem_drawn(tune_recipe *r, const tune_problem *p, const tune_device_facts *d, uint64_t seed,
                                   tune_problem_setup *out, tune_err *err) {
  return eval_problem(r, p, d, &seed, out, err);
}

static int eval_problem(tune_recipe *r, const tune_problem *p, const tune_device_facts *d, const uint64_t *seed,
                        tune_problem_setup *out, tune_err *err) {
  lua_State *L = r->set->L;
  int top = lua_gettop(L);
  memset(out, 0, sizeof *out);
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->ref);
  int prob = lua_gettop(L);
  push_device(L, d);
  int dev = lua_gettop(L);
  int rc = TUNE_OK;
  char what[160];
  snprintf(what, sizeof what, "while evaluating problem %.100s", p->name);
  tune_lua_evaluating(L, what);
  out->n_args = r->n_args;
  push_field(L, r, "args");
  int at = lua_gettop(L);
  tune_dtype out_dt = TUNE_F32;
  for (int i = 0; i < r->n_args; ++i) {
    out->def[i] = r->args[i];
    if (r->args[i].output) out_dt = r->args[i].dtype;
    lua_rawgeti(L, at, i + 1);
    if (r->args[i].is_tensor && !r->args[i].scratch) {
      lua_getfield(L, -1, "shape");
      if (eval_top(L, 0, prob, dev, 1) != LUA_OK) { rc = lua_fail(L, err, r->args[i].name, r); goto done; }
      int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
      if (n == 0) { rc = tune_fail(err, TUNE_ERECIPE, "%s: arg %s: shape must be a list of sizes or dim names", r->file, r->args[i].name); goto done; }
      int64_t numel = 1;
      for (int j = 0; j < n; ++j) {
        lua_rawgeti(L, -1, j + 1);
        if (eval_top(L, 0, prob, dev, 1) != LUA_OK) { rc = lua_fail(L, err, r->args[i].name, r); goto done; }
        long long x;
        if (to_int(L, -1, &x) || x < 1) { rc = tune_fail(err, TUNE_ERECIPE, "%s: arg %s: shape entry %d is not a positive integer for problem %s", r->file, r->args[i].name, j + 1, p->name); goto done; }
        numel *= x;
        lua_pop(L, 1);
      }
      out->numel[i] = numel;
      lua_pop(L, 1);
      if ((rc = eval_init_range(L, r, i, prob, dev, &out->def[i], err))) goto done;
      if (out->def[i].init == TUNE_INIT_OFFSETS && (rc = check_offsets(r, &out->def[i], numel, p->name, err))) goto done;
    } else if (!r->args[i].is_tensor && !r->args[i].is_tmap) { /* tensor maps: per variant */
      lua_getfield(L, -1, "value");
      if (eval_top(L, 0, prob, dev, 1) != LUA_OK) { rc = lua_fail(L, err, r->args[i].name, r); goto done; }
      if (lua_type(L, -1) != LUA_TNUMBER && lua_type(L, -1) != LUA_TBOOLEAN) { rc = tune_fail(err, TUNE_ERECIPE, "%s: arg %s: value must be a number", r->file, r->args[i].name); goto done; }
      if (r->args[i].dtype == TUNE_F32 || r->args[i].dtype == TUNE_F64) out->scalar_f[i] = lua_tonumber(L, -1);
      else if (to_int(L, -1, &out->scalar_i[i])) { rc = tune_fail(err, TUNE_ERECIPE, "%s: arg %s: value must be an integer", r->file, r->args[i].name); goto done; }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_settop(L, dev);
  /* reference */
  push_field(L, r, "reference");
  int rt = lua_gettop(L);
  lua_getfield(L, rt, "kernel");
  if (lua_type(L, -1) != LUA_TSTRING) { rc = tune_fail(err, TUNE_ERECIPE, "%s: reference needs kernel = \"name\"", r->file); goto done; }
  snprintf(out->ref_launch.kernel, sizeof out->ref_launch.kernel, "%s", lua_tostring(L, -1));
  out->ref_launch.is_expr = strchr(out->ref_launch.kernel, '<') != NULL;
  lua_pop(L, 1);
  const char *f[3] = {"grid", "block", "shared"};
  for (int i = 0; i < 3; ++i) {
    lua_getfield(L, rt, f[i]);
    if (lua_isnil(L, -1) && i == 2) { lua_pop(L, 1); break; }
    if (eval_top(L, 0, prob, dev, 1) != LUA_OK) { rc = lua_fail(L, err, "reference", r); goto done; }
    if (i < 2 && eval_entries(L, 0, prob, dev) != LUA_OK) { rc = lua_fail(L, err, "reference", r); goto done; }
    if (i < 2 && read_dim3(L, i == 0 ? out->ref_launch.grid : out->ref_launch.block, 1)) { rc = tune_fail(err, TUNE_ERECIPE, "%s: reference %s must be {x, y, z}", r->file, f[i]); goto done; }
    if (i == 2) { long long s; if (to_int(L, -1, &s) || s < 0) { rc = tune_fail(err, TUNE_ERECIPE, "%s: reference shared must be bytes", r->file); goto done; } out->ref_launch.shared = (unsigned)s; }
    lua_pop(L, 1);
  }
  if (lua_getfield(L, rt, "defines") != LUA_TNIL) {
    if (eval_top(L, 0, prob, dev, 1) != LUA_OK) { rc = lua_fail(L, err, "reference defines", r); goto done; }
    if ((rc = add_define_table(L, out->ref_defines, &out->n_ref_defines, r, err))) goto done;
  }
  lua_settop(L, dev);
  /* tolerance: defaults by output dtype */
  int half = out_dt == TUNE_BF16 || out_dt == TUNE_F16;
  int integer = out_dt == TUNE_I32 || out_dt == TUNE_I64;
  out->tol_rel_l2 = integer ? 0 : half ? 1e-2 : 1e-5;
  out->tol_max_abs = integer ? 0 : half ? 1e-1 : 1e-3;
  if (push_field(L, r, "tolerance") == LUA_TTABLE) {
    if (lua_getfield(L, -1, "rel_l2") == LUA_TNUMBER) out->tol_rel_l2 = lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, -1, "max_abs") == LUA_TNUMBER) out->tol_max_abs = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  out->tol_honest = r->tol_honest;
  lua_settop(L, dev);
  rc = eval_metrics(L, r, prob, dev, seed, out, err);
done:
  tune_lua_evaluating(L, NULL);
  lua_settop(L, top);
  return rc;
}

/* ---- constraint text (for the LLM proposer's request) --------------------- */

void tune_recipe_constraint_text(tune_recipe *r, int i, char *buf, size_t n) {
  lua_State *L = r->set->L;
  int top = lua_gettop(L);
  buf[0] = 0;
  if (push_field(L, r, "constraints") == LUA_TTABLE) {
    int t = lua_rawgeti(L, -1, i + 1);
    if (t == LUA_TSTRING) snprintf(buf, n, "%s", lua_tostring(L, -1));
    else if (t == LUA_TFUNCTION) {
      lua_Debug ar;
      if (lua_getinfo(L, ">S", &ar)) { /* pops the function */
        lua_pushnil(L);
        snprintf(buf, n, "function defined at %s:%d", r->file, ar.linedefined);
      }
    }
  }
  lua_settop(L, top);
}

/* ---- problems from a served-problem log (served_log.h) -------------------- */

/* The key names of a JSON object, comma-joined in order (sorted objects). */
static void json_key_list(const char *json, char *buf, size_t n) {
  buf[0] = 0;
  json_t *o = json_loads(json, 0, NULL);
  const char *k;
  json_t *v;
  if (o) json_object_foreach(o, k, v) snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? "," : "", k);
  json_decref(o);
}

/* Push dims (a JSON object) as a problem table named `given`, or after its values when NULL. */
static int push_problem_from_json(lua_State *L, const char *dims_json, const char *given) {
  json_t *o = json_loads(dims_json, 0, NULL);
  if (!json_is_object(o)) { json_decref(o); return -1; }
  char name[256] = "served";
  lua_newtable(L);
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    size_t len = strlen(name);
    if (json_is_integer(v)) {
      lua_pushinteger(L, (lua_Integer)json_integer_value(v));
      snprintf(name + len, sizeof name - len, "_%s%lld", k, (long long)json_integer_value(v));
    } else if (json_is_boolean(v)) {
      lua_pushboolean(L, json_is_true(v));
      snprintf(name + len, sizeof name - len, "_%s%d", k, json_is_true(v));
    } else {
      lua_pushstring(L, json_string_value(v));
      snprintf(name + len, sizeof name - len, "_%s", json_string_value(v));
    }
    lua_setfield(L, -2, k);
  }
  lua_pushstring(L, given ? given : name);
  lua_setfield(L, -2, "name");
  json_decref(o);
  return 0;
}

/* The recipe's problems become `keep` of its own (0 or all) followed by n from JSON. */
static int rebuild_problems(tune_recipe *r, int keep, const char *const *names, const char *const *dims_json, int n,
                            tune_err *err) {
  char want[512], got[512];
  json_key_list(r->problems[0].dims_json, want, sizeof want);
  for (int i = 0; i < n; ++i) {
    json_key_list(dims_json[i], got, sizeof got);
    if (strcmp(want, got))
      return tune_fail(err, TUNE_EINVAL, "recipe '%s': served problem %s has dims {%s}, the recipe's problems {%s}",
                       r->name, dims_json[i], got, want);
  }
  lua_State *L = r->set->L;
  int top = lua_gettop(L);
  lua_createtable(L, keep + n, 0);
  for (int j = 0; j < keep; ++j) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, r->problems[j].ref);
    lua_rawseti(L, -2, j + 1);
  }
  for (int i = 0; i < n; ++i) {
    if (push_problem_from_json(L, dims_json[i], names ? names[i] : NULL)) {
      lua_settop(L, top);
      return tune_fail(err, TUNE_EINVAL, "recipe '%s': bad dims %s", r->name, dims_json[i]);
    }
    lua_rawseti(L, -2, keep + i + 1);
  }
  for (int j = 0; j < r->n_problems; ++j) {
    luaL_unref(L, LUA_REGISTRYINDEX, r->problems[j].ref);
    free((char *)r->problems[j].name);
    free(r->problems[j].dims_json);
  }
  free(r->problems);
  r->problems = NULL;
  r->n_problems = 0;
  int rc = parse_problems(L, r, lua_gettop(L), err);
  lua_settop(L, top);
  return rc;
}

int tune_recipe_set_problems(tune_recipe *r, const char *const *dims_json, int n, tune_err *err) {
  if (n < 1) return tune_fail(err, TUNE_EINVAL, "recipe '%s': no problems to set", r->name);
  return rebuild_problems(r, 0, NULL, dims_json, n, err);
}

int tune_recipe_add_problems(tune_recipe *r, const char *const *names, const char *const *dims_json, int n,
                             tune_err *err) {
  return n < 1 ? TUNE_OK : rebuild_problems(r, r->n_problems, names, dims_json, n, err);
}
