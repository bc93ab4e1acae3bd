/* recipe_schema.c: the recipe format as data, and the walk that checks a recipe against it
 * (see recipe_schema.h). */
#include "recipe_schema.h"

#include <string.h>

/* Lua types a field may take (a bit set). */
enum { T_STR = 1, T_NUM = 2, T_BOOL = 4, T_FN = 8, T_TAB = 16 };

typedef enum node_kind {
  N_RECORD,         /* named fields (and optional leading list entries) */
  N_LIST,           /* entries 1..n only */
  N_MAP,            /* any names, values of one kind */
  N_RECORD_OR_LIST, /* a record, or a list of such records (launch) */
  N_LIST_OR_MAP,    /* a list of items, or names mapped to values (params) */
} node_kind;

typedef struct node node;

typedef struct field {
  const char *name;  /* NULL ends a field list */
  unsigned types;    /* allowed Lua types */
  const node *sub;   /* when a table: its shape (NULL: checked by the loader) */
} field;

struct node {
  node_kind kind;
  const field *fields; /* N_RECORD: the names it takes */
  field item;          /* N_LIST, N_MAP, N_RECORD_OR_LIST: entries; N_LIST_OR_MAP: list entries */
  field map_item;      /* N_LIST_OR_MAP: map values */
  const field *pos;    /* N_RECORD: leading list entries [1], [2]... (name NULL ends) */
  unsigned open;       /* N_RECORD: types of other named entries (0: none allowed) */
};

/* ---- the recipe format (docs/recipes.md) ---------------------------------- */

#define SCALAR (T_STR | T_NUM | T_BOOL)
#define EXPR (T_NUM | T_STR | T_FN) /* a number, an expression string or a function */

static const node values_list = {.kind = N_LIST, .item = {"value", SCALAR, NULL}};
static const field param_pos[] = {{"name", T_STR, NULL}, {"values", T_TAB, &values_list}, {NULL, 0, NULL}};
/* absent: the value configs recorded before the param existed have (its place among the values:
   recipe.c parse_params) */
static const field param_fields[] = {{"absent", SCALAR, NULL}, {NULL, 0, NULL}};
static const node param_entry = {.kind = N_RECORD, .fields = param_fields, .pos = param_pos};
static const node params = {.kind = N_LIST_OR_MAP, .item = {"param", T_TAB, &param_entry},
                            .map_item = {"values", T_TAB, &values_list}};

static const node dim3 = {.kind = N_LIST, .item = {"entry", T_NUM | T_STR, NULL}};
static const field launch_fields[] = {
  {"kernel", T_STR | T_FN, NULL},         {"grid", EXPR | T_TAB, &dim3},   {"block", EXPR | T_TAB, &dim3},
  {"shared", EXPR, NULL},                 {"cluster", EXPR | T_TAB, &dim3}, {"stream", T_STR, NULL},
  {NULL, 0, NULL}};
static const node launch_step = {.kind = N_RECORD, .fields = launch_fields};
static const node launch = {.kind = N_RECORD_OR_LIST, .item = {"launch step", T_TAB, &launch_step}};

static const node shape = {.kind = N_LIST, .item = {"entry", EXPR, NULL}};
static const node init = {.kind = N_LIST, .item = {"entry", T_STR | T_NUM, NULL}};
static const field arg_pos[] = {{"name", T_STR, NULL}, {NULL, 0, NULL}};
static const field arg_fields[] = {
  {"tensor", T_STR, NULL},   {"scalar", T_STR, NULL},   {"shape", T_STR | T_FN | T_TAB, &shape},
  {"init", T_TAB, &init},    {"adversarial", T_TAB, &init}, {"output", T_BOOL, NULL},  {"scratch", T_BOOL, NULL},
  {"zero", T_BOOL, NULL},    {"value", EXPR | T_BOOL, NULL},
  {"tensormap", T_TAB, NULL}, /* its fields: recipe.c parse_tmap_fields */
  {NULL, 0, NULL}};
static const node arg = {.kind = N_RECORD, .fields = arg_fields, .pos = arg_pos};
static const node args = {.kind = N_LIST, .item = {"arg", T_TAB, &arg}};

static const field problem_fields[] = {{"name", T_STR, NULL}, {NULL, 0, NULL}};
static const node problem = {.kind = N_RECORD, .fields = problem_fields, .open = SCALAR}; /* dims */
static const node problems = {.kind = N_LIST, .item = {"problem", T_TAB, &problem}};

static const node defines_map = {.kind = N_MAP, .item = {"define", SCALAR, NULL}};
static const field reference_fields[] = {
  {"source", T_STR, NULL}, {"kernel", T_STR, NULL}, {"grid", EXPR | T_TAB, &dim3}, {"block", EXPR | T_TAB, &dim3},
  {"shared", EXPR, NULL},  {"defines", T_FN | T_TAB, &defines_map}, {NULL, 0, NULL}};
static const node reference = {.kind = N_RECORD, .fields = reference_fields};

static const field tolerance_fields[] = {
  {"rel_l2", T_NUM, NULL}, {"max_abs", T_NUM, NULL}, {"honest", T_NUM, NULL}, {NULL, 0, NULL}};
static const node tolerance = {.kind = N_RECORD, .fields = tolerance_fields};
static const field metrics_fields[] = {{"flops", EXPR, NULL}, {"bytes", EXPR, NULL}, {NULL, 0, NULL}};
static const node metrics = {.kind = N_RECORD, .fields = metrics_fields};

static const node constraints = {.kind = N_LIST, .item = {"constraint", T_STR | T_FN, NULL}};
static const node requires = {.kind = N_LIST, .item = {"requirement", T_STR, NULL}};
static const node domain = {.kind = N_LIST, .item = {"domain expression", T_STR, NULL}};
static const node fallback = {.kind = N_MAP, .item = {"fallback value", SCALAR, NULL}};

static const field recipe_fields[] = {
  {"name", T_STR, NULL},
  {"template", T_STR, NULL},
  {"kernel", T_STR | T_FN, NULL},
  {"params", T_TAB, &params},
  {"defines", T_FN | T_TAB, &defines_map},
  {"constraints", T_TAB, &constraints},
  {"applies", T_FN, NULL},
  {"requires", T_TAB, &requires},
  {"domain", T_TAB, &domain},     /* docs/runtime.md: the problems the family serves */
  {"fallback", T_TAB, &fallback}, /* docs/runtime.md: the family's generic config */
  {"problems", T_TAB, &problems},
  {"launch", T_TAB, &launch},
  {"args", T_TAB, &args},
  {"reference", T_TAB, &reference},
  {"tolerance", T_TAB, &tolerance},
  {"metrics", T_TAB, &metrics},
  {"strategy", T_STR, NULL},      /* search_config.c */
  {"min_occupancy", T_NUM, NULL}, /* search_config.c */
  {"halving", T_NUM | T_BOOL, NULL},
  {NULL, 0, NULL}};
static const node recipe = {.kind = N_RECORD, .fields = recipe_fields};

/* ---- names -------------------------------------------------------------------- */

int tune_edit_distance(const char *a, const char *b) {
  enum { MAX = 64 };
  size_t na = strnlen(a, MAX - 1), nb = strnlen(b, MAX - 1);
  int row[MAX];
  for (size_t j = 0; j <= nb; ++j) row[j] = (int)j;
  for (size_t i = 1; i <= na; ++i) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= nb; ++j) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[nb];
}

const char *tune_nearest_name(const char *word, const char *const *names, int n) {
  int limit = (int)strlen(word) / 3;
  if (limit < 2) limit = 2;
  const char *best = NULL;
  int best_d = limit + 1;
  for (int i = 0; i < n; ++i) {
    int d = tune_edit_distance(word, names[i]);
    if (d < best_d) { best_d = d; best = names[i]; }
  }
  return best;
}

/* ---- the walk ----------------------------------------------------------------- */

static const char *type_name(int t) {
  switch (t) {
  case LUA_TSTRING: return "a string";
  case LUA_TNUMBER: return "a number";
  case LUA_TBOOLEAN: return "a boolean";
  case LUA_TFUNCTION: return "a function";
  case LUA_TTABLE: return "a table";
  default: return "something else";
  }
}

static unsigned type_bit(int t) {
  switch (t) {
  case LUA_TSTRING: return T_STR;
  case LUA_TNUMBER: return T_NUM;
  case LUA_TBOOLEAN: return T_BOOL;
  case LUA_TFUNCTION: return T_FN;
  case LUA_TTABLE: return T_TAB;
  default: return 0;
  }
}

/* "a table, number or function" */
static void types_text(unsigned types, char *buf, size_t n) {
  static const char *const names[] = {"string", "number", "boolean", "function", "table"};
  static const unsigned order[] = {T_TAB, T_NUM, T_STR, T_BOOL, T_FN};
  int total = 0, k = 0;
  for (int i = 0; i < 5; ++i) total += (types & order[i]) != 0;
  size_t len = (size_t)snprintf(buf, n, "a");
  for (int i = 0; i < 5; ++i) {
    if (!(types & order[i])) continue;
    int b = 0;
    while ((1u << b) != order[i]) ++b;
    const char *sep = k == 0 ? " " : k == total - 1 ? " or " : ", ";
    if (len < n) len += (size_t)snprintf(buf + len, n - len, "%s%s", sep, names[b]);
    ++k;
  }
}

typedef struct walk {
  lua_State *L;
  const char *where;
  tune_err *err;
  int depth; /* tables nested: a recipe table that contains itself stops here */
} walk;

static int check_table(walk *w, int idx, const node *nd, char *path, size_t cap);

/* Append ".name" or "[i]" to path; returns the old length to restore. */
static size_t push_path(char *path, size_t cap, const char *name, long long i) {
  size_t len = strlen(path);
  if (name) snprintf(path + len, cap - len, "%s%s", len ? "." : "", name);
  else snprintf(path + len, cap - len, "[%lld]", i);
  return len;
}

/* The value at the top is the content of field f at path: its type, then its shape. */
static int check_value(walk *w, const field *f, char *path, size_t cap) {
  int t = lua_type(w->L, -1);
  if (!(type_bit(t) & f->types)) {
    char want[96];
    types_text(f->types, want, sizeof want);
    return tune_fail(w->err, TUNE_ERECIPE, "%s: %s must be %s (not %s)", w->where, path, want, type_name(t));
  }
  if (t == LUA_TTABLE && f->sub) return check_table(w, lua_gettop(w->L), f->sub, path, cap);
  return TUNE_OK;
}

static int unknown_field(walk *w, const field *fields, const char *key, const char *path) {
  const char *names[64];
  int n = 0;
  for (const field *f = fields; f && f->name && n < 64; ++f) names[n++] = f->name;
  const char *near = tune_nearest_name(key, names, n);
  if (near) return tune_fail(w->err, TUNE_ERECIPE, "%s: %s: unknown field (did you mean %s?)", w->where, path, near);
  char all[512] = "";
  size_t len = 0;
  for (int i = 0; i < n && len < sizeof all; ++i) len += (size_t)snprintf(all + len, sizeof all - len, "%s%s", i ? ", " : "", names[i]);
  if (!n) return tune_fail(w->err, TUNE_ERECIPE, "%s: %s: unknown field (this table takes no named fields)", w->where, path);
  return tune_fail(w->err, TUNE_ERECIPE, "%s: %s: unknown field (known: %s)", w->where, path, all);
}

/* One entry of a record (key at -2, value at -1). */
static int check_record_entry(walk *w, const node *nd, char *path, size_t cap) {
  lua_State *L = w->L;
  int npos = 0;
  while (nd->pos && nd->pos[npos].name) ++npos;
  if (lua_type(L, -2) == LUA_TNUMBER) {
    lua_Integer i = lua_tointeger(L, -2);
    size_t old = push_path(path, cap, NULL, (long long)i);
    int rc = i >= 1 && i <= npos && lua_isinteger(L, -2)
               ? check_value(w, &nd->pos[i - 1], path, cap)
               : tune_fail(w->err, TUNE_ERECIPE, "%s: %s: unexpected list entry (%s)", w->where, path,
                           npos ? "only the leading entries listed in docs/recipes.md" : "this table takes named fields only");
    path[old] = 0;
    return rc;
  }
  if (lua_type(L, -2) != LUA_TSTRING)
    return tune_fail(w->err, TUNE_ERECIPE, "%s: %s: a key that is not a name (%s)", w->where, path[0] ? path : "recipe", type_name(lua_type(L, -2)));
  const char *key = lua_tostring(L, -2);
  size_t old = push_path(path, cap, key, 0);
  int rc = TUNE_OK;
  const field *f = nd->fields;
  while (f && f->name && strcmp(f->name, key)) ++f;
  if (f && f->name) rc = check_value(w, f, path, cap);
  else if (nd->open) {
    field any = {key, nd->open, NULL};
    rc = check_value(w, &any, path, cap);
  } else rc = unknown_field(w, nd->fields, key, path);
  path[old] = 0;
  return rc;
}

/* Entries 1..n of a list (no named entries): each checked as item. */
static int check_list(walk *w, int t, const field *item, char *path, size_t cap) {
  lua_State *L = w->L;
  lua_Unsigned n = lua_rawlen(L, t);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    int is_index = lua_type(L, -2) == LUA_TNUMBER && lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 &&
                   (lua_Unsigned)lua_tointeger(L, -2) <= n;
    if (!is_index) {
      const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
      int rc = k ? tune_fail(w->err, TUNE_ERECIPE, "%s: %s.%s: unknown field (%s is a list: { %s, ... })", w->where, path, k, path, item->name)
                 : tune_fail(w->err, TUNE_ERECIPE, "%s: %s: a list with a gap or a key that is not 1..n", w->where, path);
      lua_pop(L, 2);
      return rc;
    }
    size_t old = push_path(path, cap, NULL, (long long)lua_tointeger(L, -2));
    int rc = check_value(w, item, path, cap);
    path[old] = 0;
    lua_pop(L, 1);
    if (rc) { lua_pop(L, 1); return rc; }
  }
  return TUNE_OK;
}

static int check_map(walk *w, int t, const field *item, char *path, size_t cap) {
  lua_State *L = w->L;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 2);
      return tune_fail(w->err, TUNE_ERECIPE, "%s: %s: keys must be names", w->where, path);
    }
    size_t old = push_path(path, cap, lua_tostring(L, -2), 0);
    int rc = check_value(w, item, path, cap);
    path[old] = 0;
    lua_pop(L, 1);
    if (rc) { lua_pop(L, 1); return rc; }
  }
  return TUNE_OK;
}

static int has_names(lua_State *L, int t) {
  lua_pushnil(L);
  while (lua_next(L, t)) {
    if (lua_type(L, -2) == LUA_TSTRING) { lua_pop(L, 2); return 1; }
    lua_pop(L, 1);
  }
  return 0;
}

static int check_table(walk *w, int t, const node *nd, char *path, size_t cap) {
  lua_State *L = w->L;
  if (++w->depth > 32) return tune_fail(w->err, TUNE_ERECIPE, "%s: %s: tables nested too deep", w->where, path);
  int rc = TUNE_OK;
  switch (nd->kind) {
  case N_RECORD:
    lua_pushnil(L);
    while (!rc && lua_next(L, t)) {
      rc = check_record_entry(w, nd, path, cap);
      lua_pop(L, 1);
    }
    if (rc) lua_pop(L, 1);
    break;
  case N_LIST: rc = check_list(w, t, &nd->item, path, cap); break;
  case N_MAP: rc = check_map(w, t, &nd->item, path, cap); break;
  case N_RECORD_OR_LIST:
    rc = has_names(L, t) ? check_table(w, t, nd->item.sub, path, cap) : check_list(w, t, &nd->item, path, cap);
    break;
  case N_LIST_OR_MAP:
    rc = lua_rawlen(L, t) > 0 ? check_list(w, t, &nd->item, path, cap) : check_map(w, t, &nd->map_item, path, cap);
    break;
  }
  --w->depth;
  return rc;
}

int tune_recipe_schema_check(lua_State *L, int idx, const char *where, tune_err *err) {
  walk w = {L, where, err, 0};
  char path[512] = "";
  int top = lua_gettop(L);
  int t = lua_absindex(L, idx);
  int rc = check_table(&w, t, &recipe, path, sizeof path);
  lua_settop(L, top);
  return rc;
}
