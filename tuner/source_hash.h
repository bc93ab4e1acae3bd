/* source_hash.h: content hashes of a CUDA source with every local header it
 * includes (#include "x", resolved next to the including file, then under the
 * include root), and of a recipe's Lua text with the modules it requires.
 * System headers (<...>) are covered by the NVRTC version in the compile key.
 *
 * Two kinds:
 *  raw         the bytes of every file and its name under the root: any edit
 *              changes it. Compile keys use it (a cached cubin's line table
 *              must match its source), and so does the recipe source hash that
 *              recordings made before the normalised hash carry. A process
 *              reads each file once while it is unchanged (source_memo.h says
 *              why a kept file is never stale); names are resolved every time.
 *  normalised  what a compiler reads: comments removed (each one a space),
 *              blank runs collapsed to one space, blank lines dropped, line
 *              splices joined; string and character literals kept as written
 *              (C/CUDA keeps line breaks, which end preprocessor directives;
 *              Lua needs none). A local #include "x" is replaced by x's
 *              normalised text where x is first included (a later include of
 *              x by a marker of its text), and require "a.b" is followed the
 *              same way, so the path a file is found at does not count: editing
 *              a comment or moving a header leaves the hash as it was. */
#ifndef TUNE_SOURCE_HASH_H
#define TUNE_SOURCE_HASH_H

#include <xxhash.h>

#include "tune_err.h"

/* Feed path's text and its local includes (depth first, each file once) into h. */
int tune_source_hash_update(XXH64_state_t *h, const char *path, const char *include_root, tune_err *err);

/* Feed the normalised text of path and its local includes into h. */
int tune_source_hash_normalized_update(XXH64_state_t *h, const char *path, const char *include_root, tune_err *err);

/* Feed the normalised text of the Lua file at path and of the recipe modules it
 * requires (<root>/recipes/a/b.lua for require "a.b") into h. TUNE_EINVAL
 * when a require's argument is not a string literal: which module it loads is
 * then known only when the recipe runs, so no normalised hash is given. */
int tune_lua_hash_normalized_update(XXH64_state_t *h, const char *path, const char *root, tune_err *err);

/* The normalised hash of a recipe (16 hex digits and a NUL in out): the file that
 * defines it (tune_recipe.module_file: the module a list file requires, not the
 * list) with the modules it requires, its template tree and its reference tree,
 * the templates resolved under <root>/templates. Errors as above; out is "" then. */
int tune_recipe_hash_normalized(const char *recipe_file, const char *template_path, const char *ref_source,
                                const char *root, char out[17], tune_err *err);

#endif
