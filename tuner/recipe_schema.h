/* recipe_schema.h: the fields a recipe table may have, at every level, and their types.
 *
 * Owns: one data table describing the recipe format (docs/recipes.md) and the walk that
 * checks a recipe table against it before the loader reads any field: an unknown or misspelt
 * field is an error naming its path and the nearest valid name ("tolerance.rel_12: unknown
 * field (did you mean rel_l2?)"), as is a value of the wrong type ("launch.cluster must be a
 * table, number, string or function (not a boolean)"); a misspelt field never silently stops
 * applying. Must not: call recipe code (functions are only type-checked) or check values,
 * ranges and rules between fields (recipe.c does); tensormap tables are checked by recipe.c.
 * Also: the edit distance and nearest-name helpers, for any "did you mean" message. */
#ifndef TUNE_RECIPE_SCHEMA_H
#define TUNE_RECIPE_SCHEMA_H

#include <lua.h>
#include <stddef.h>

#include "tune_err.h"

/* Check the recipe table at stack index idx. where prefixes every message (the recipe file,
 * and the recipe's name in a list file). Leaves the stack as it was. */
int tune_recipe_schema_check(lua_State *L, int idx, const char *where, tune_err *err);

/* Levenshtein distance (insertions, deletions, substitutions) between a and b; names are short,
 * longer inputs are compared on their first 63 bytes. */
int tune_edit_distance(const char *a, const char *b);

/* The name among names[0..n) nearest to word, or NULL when none is close enough to be a
 * plausible misspelling (distance above max(2, strlen(word) / 3)). */
const char *tune_nearest_name(const char *word, const char *const *names, int n);

#endif
