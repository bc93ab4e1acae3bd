/* recipe_schema_test.c: the recipe schema (tuner/recipe_schema.h) on recipe tables written inline,
 * the edit-distance helpers, and every shipped recipe and fixture passing it. CPU only. */
#include <dirent.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

#include "recipe.h"
#include "recipe_schema.h"

#include "check.h"

/* A valid recipe table with `extra` spliced in at the top level. */
#define RECIPE(extra)                                                                                    \
  "return { name = 'x', template = 'templates/x.cuh', kernel = 'k', " extra                             \
  " params = { { 'A', { 1, 2 } }, { 'B', { true, 'y' } } }, constraints = { 'A < 2', function(c) return true end },\n" \
  " problems = { { name = 'p', N = 4, causal = true, layout = 'row' } },\n"                             \
  " launch = { grid = { 'N', 1, 1 }, block = function(c) return { 32 } end, shared = 0, cluster = 1 },\n" \
  " args = { { 'x', tensor = 'f32', shape = { 'N' }, init = { 'uniform', -1, 1 } },\n"                  \
  "          { 'y', tensor = 'f32', shape = function(p) return { p.N } end, output = true } },\n"        \
  " reference = { source = 'templates/r.cuh', kernel = 'r', grid = { 1 }, block = { 32 } },\n"          \
  " tolerance = { rel_l2 = 0, max_abs = 0 }, metrics = { flops = 'N', bytes = function(p) return 8 end } }"

/* Check the table returned by text; the message in msg ("" when it passes). */
static int check_text(const char *text, char *msg, size_t n) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  int rc = luaL_dostring(L, text);
  if (rc != LUA_OK) { snprintf(msg, n, "lua: %s", lua_tostring(L, -1)); lua_close(L); return -1; }
  tune_err err;
  tune_err_clear(&err);
  int top = lua_gettop(L);
  rc = tune_recipe_schema_check(L, -1, "r.lua", &err);
  CHECK(lua_gettop(L) == top); /* the stack as it was */
  snprintf(msg, n, "%s", err.msg);
  lua_close(L);
  return rc;
}

/* The recipe with extra fails with a message that starts with want. */
static int fails_with(const char *text, const char *want) {
  char m[2048];
  int rc = check_text(text, m, sizeof m);
  if (rc != TUNE_ERECIPE || strncmp(m, want, strlen(want))) {
    fprintf(stderr, "  want '%s'\n  got  rc %d '%s'\n", want, rc, m);
    return 0;
  }
  return 1;
}

static void test_names(void) {
  CHECK(tune_edit_distance("", "") == 0);
  CHECK(tune_edit_distance("rel_12", "rel_l2") == 1);
  CHECK(tune_edit_distance("constraint", "constraints") == 1);
  CHECK(tune_edit_distance("kitten", "sitting") == 3);
  CHECK(tune_edit_distance("abc", "") == 3 && tune_edit_distance("", "abc") == 3);
  const char *names[] = {"rel_l2", "max_abs"};
  CHECK(!strcmp(tune_nearest_name("rel_12", names, 2), "rel_l2"));
  CHECK(!strcmp(tune_nearest_name("maxabs", names, 2), "max_abs"));
  CHECK(tune_nearest_name("colour", names, 2) == NULL);
}

static void test_valid(void) {
  char m[2048];
  CHECK(check_text(RECIPE(""), m, sizeof m) == TUNE_OK);
  /* the other forms docs/recipes.md allows */
  CHECK(check_text(RECIPE("strategy = 'bayes', min_occupancy = 0.5, halving = true, requires = { 'N % 2 == 0' },"
                          "defines = { D = 'N', C = true }, applies = function() return true end,"), m, sizeof m) == TUNE_OK);
  CHECK(check_text("return { name = 'x', params = { A = { 1 }, B = { 2 } }, launch = { { grid = 1, block = 32 },"
                   " { kernel = 'c', grid = function() return 1 end, block = { '32' }, stream = 'side' } },"
                   " args = { { 's', scalar = 'f32', value = 'N' }, { 'm', tensormap = { tensor = 'x', box = { 1 } } } } }",
                   m, sizeof m) == TUNE_OK);
  CHECK(m[0] == 0);
}

static void test_errors(void) {
  CHECK(fails_with(RECIPE("constraint = { 'A < 2' },"), "r.lua: constraint: unknown field (did you mean constraints?)"));
  CHECK(fails_with(RECIPE("colour = 'red',"), "r.lua: colour: unknown field (known: name, template, kernel, params"));
  CHECK(fails_with(RECIPE("[1] = 2,"), "r.lua: [1]: unexpected list entry"));
  CHECK(fails_with(RECIPE("strategy = 3,"), "r.lua: strategy must be a string (not a number)"));
  CHECK(fails_with(RECIPE("applies = true,"), "r.lua: applies must be a function (not a boolean)"));
  CHECK(fails_with(RECIPE("halving = 'yes',"), "r.lua: halving must be a number or boolean (not a string)"));
  CHECK(fails_with(RECIPE("requires = { 'N > 1', 2 },"), "r.lua: requires[2] must be a string (not a number)"));
  CHECK(fails_with(RECIPE("requires = { 'N > 1', x = 'N' },"), "r.lua: requires.x: unknown field (requires is a list"));
  CHECK(fails_with(RECIPE("defines = { D = {} },"), "r.lua: defines.D must be a number, string or boolean (not a table)"));
  CHECK(fails_with(RECIPE("defines = 'D',"), "r.lua: defines must be a table or function (not a string)"));
  /* nested: each level of the format */
  const struct { const char *from, *to, *want; } cases[] = {
    {"rel_l2 = 0", "rel_12 = 0", "r.lua: tolerance.rel_12: unknown field (did you mean rel_l2?)"},
    {"rel_l2 = 0", "rel_l2 = '0'", "r.lua: tolerance.rel_l2 must be a number (not a string)"},
    {"rel_l2 = 0", "rel_l2 = 0, honest = true", "r.lua: tolerance.honest must be a number (not a boolean)"},
    {"rel_l2 = 0", "rel_l2 = 0, honset = 2", "r.lua: tolerance.honset: unknown field (did you mean honest?)"},
    {"flops = 'N'", "flop = 'N'", "r.lua: metrics.flop: unknown field (did you mean flops?)"},
    {"{ 'A', { 1, 2 } }", "{ 'A', { 1, {} } }", "r.lua: params[1][2][2] must be a number, string or boolean (not a table)"},
    {"{ 'A', { 1, 2 } }", "{ 'A', { 1, 2 }, 3 }", "r.lua: params[1][3]: unexpected list entry"},
    {"{ 'A', { 1, 2 } }", "{ 'A', { 1, 2 }, values = 3 }", "r.lua: params[1].values: unknown field"},
    {"'A < 2', function", "'A < 2', 7, function", "r.lua: constraints[2] must be a string or function (not a number)"},
    {"N = 4,", "N = {},", "r.lua: problems[1].N must be a number, string or boolean (not a table)"},
    {"name = 'p'", "name = 1", "r.lua: problems[1].name must be a string (not a number)"},
    {"shared = 0", "shard = 0", "r.lua: launch.shard: unknown field (did you mean shared?)"},
    {"cluster = 1", "cluster = true", "r.lua: launch.cluster must be a table, number, string or function (not a boolean)"},
    {"grid = { 'N', 1, 1 }", "grid = { 'N', true }", "r.lua: launch.grid[2] must be a number or string (not a boolean)"},
    {"output = true", "output = 1", "r.lua: args[2].output must be a boolean (not a number)"},
    {"output = true", "outptu = true", "r.lua: args[2].outptu: unknown field (did you mean output?)"},
    {"init = { 'uniform', -1, 1 }", "init = { 'uniform', lo = -1 }", "r.lua: args[1].init.lo: unknown field (args[1].init is a list"},
    {"{ 'x', tensor", "{ 'x', 'f32', tensor", "r.lua: args[1][2]: unexpected list entry"},
    {"shape = { 'N' }", "shape = { {} }", "r.lua: args[1].shape[1] must be a number, string or function (not a table)"},
    {"kernel = 'r'", "kernal = 'r'", "r.lua: reference.kernal: unknown field (did you mean kernel?)"},
    {"block = { 32 } }", "block = { 32 }, defines = { X = {} } }", "r.lua: reference.defines.X must be"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    char text[4096];
    const char *base = RECIPE("");
    const char *at = strstr(base, cases[i].from);
    if (!at) { fprintf(stderr, "  case %zu: '%s' not in the recipe\n", i, cases[i].from); CHECK(0); continue; }
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - base), base, cases[i].to, at + strlen(cases[i].from));
    CHECK(fails_with(text, cases[i].want));
  }
  /* a list launch: the step is named by its index */
  CHECK(fails_with("return { name = 'x', launch = { { grid = 1 }, { gird = 1 } } }", "r.lua: launch[2].gird: unknown field (did you mean grid?)"));
  /* a table that contains itself ends, with an error, instead of recursing without end */
  CHECK(fails_with("local t = { name = 'x' } t.params = { { 'A', t } } return t", "r.lua: params[1][2]"));
}

/* Every recipe and fixture of the tree loads (and so passes the schema); fixtures made to fail do not. */
static void test_tree(const char *src, const char *dir, int recurse) {
  char path[8400];
  snprintf(path, sizeof path, "%s/%s", src, dir);
  DIR *d = opendir(path);
  CHECK(d != NULL);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
    if (recurse && e->d_name[0] != '.' && !strchr(e->d_name, '.')) { test_tree(src, sub, 0); continue; }
    if (n < 5 || strcmp(e->d_name + n - 4, ".lua")) continue;
    /* the fixtures made to fail while loading; limit_*_constraint.lua fail only when evaluated */
    int bad = !strncmp(e->d_name, "schema_", 7) || !strcmp(e->d_name, "limit_loop_load.lua") ||
              !strcmp(e->d_name, "limit_memory.lua");
    snprintf(path, sizeof path, "%s/%s", src, sub);
    tune_recipes *set = NULL;
    tune_err err;
    tune_err_clear(&err);
    int rc = tune_recipes_load(path, &set, &err);
    if ((rc == TUNE_OK) == bad) fprintf(stderr, "  %s: rc %d %s\n", sub, rc, err.msg);
    CHECK((rc == TUNE_OK) != bad);
    tune_recipes_free(set);
  }
  closedir(d);
}

int main(void) {
  test_names();
  test_valid();
  test_errors();
  const char *src = getenv("SRC");
  if (src) {
    setenv("TUNE_LUA_MAX_INSTRUCTIONS", "1e7", 1); /* the runaway fixtures fail fast */
    setenv("TUNE_LUA_MAX_MB", "64", 1);
    test_tree(src, "recipes", 1);
    test_tree(src, "tests/fixtures/recipes", 0);
  }
  printf("recipe_schema_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
