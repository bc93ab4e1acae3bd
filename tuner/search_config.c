/* search_config.c: the strategy, pruning and halving settings of a run
 * (search_config.h), read from the command line and the recipe table. */
#include "search_config.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <string.h>

#include "recipe.h"

/* Read number field `key` of the recipe table into *v (untouched when
 * absent); it must lie in [0, 1). */
static int number_field(lua_State *L, const tune_recipe *r, const char *key, double *v, tune_err *err) {
  int t = lua_getfield(L, -1, key);
  int rc = TUNE_OK;
  if (t == LUA_TNUMBER) {
    double x = lua_tonumber(L, -1);
    if (!(x >= 0 && x < 1)) rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe %s: %s = %g, want a fraction in [0, 1)", r->file, r->name, key, x);
    else *v = x;
  } else if (t == LUA_TBOOLEAN && !strcmp(key, "halving")) {
    *v = lua_toboolean(L, -1) ? 0.1 : 0;
  } else if (t != LUA_TNIL) {
    rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe %s: %s must be a number", r->file, r->name, key);
  }
  lua_pop(L, 1);
  return rc;
}

int tune_search_config_get(const tune_recipe *r, const char *cli_strategy, double cli_min_occupancy,
                           double cli_halving, tune_search_config *out, tune_err *err) {
  memset(out, 0, sizeof *out);
  snprintf(out->strategy, sizeof out->strategy, "%s", TUNE_DEFAULT_STRATEGY);
  lua_State *L = r && r->set ? r->set->L : NULL;
  if (L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, r->ref);
    int rc = TUNE_OK;
    int t = lua_getfield(L, -1, "strategy");
    if (t == LUA_TSTRING) snprintf(out->strategy, sizeof out->strategy, "%s", lua_tostring(L, -1));
    else if (t != LUA_TNIL) rc = tune_fail(err, TUNE_ERECIPE, "%s: recipe %s: strategy must be a string", r->file, r->name);
    lua_pop(L, 1);
    if (!rc) rc = number_field(L, r, "min_occupancy", &out->min_occupancy, err);
    if (!rc) rc = number_field(L, r, "halving", &out->halving, err);
    lua_pop(L, 1);
    if (rc) return rc;
  }
  if (cli_strategy) snprintf(out->strategy, sizeof out->strategy, "%s", cli_strategy);
  if (cli_min_occupancy >= 0) out->min_occupancy = cli_min_occupancy;
  if (cli_halving >= 0) out->halving = cli_halving;
  return TUNE_OK;
}
