/* project_root.h: which source tree a recipe belongs to.
 *
 * Owns: the rule that picks the project root (the directory whose templates/
 * a recipe compiles, whose recipes/ `require` reads and whose data/recorded/
 * tune replays). The root is chosen deliberately, never by looking for a
 * substring in a path: an explicit directory (tune run --root) wins, then the
 * environment variable TUNE_ROOT, then the nearest ancestor directory of the
 * recipe file that either holds the marker file .tune-root or holds the
 * recipes/ directory the file lies in next to a templates/ directory. The
 * nearest one wins, so a checkout nested in another, or one under a path that
 * contains "/recipes/", uses its own templates.
 * Must not: read recipe contents. No allocation; the caller owns the buffers. */
#ifndef TUNE_PROJECT_ROOT_H
#define TUNE_PROJECT_ROOT_H

#include <stddef.h>

#include "tune_err.h"

#define TUNE_ROOT_MARKER ".tune-root"
#define TUNE_ROOT_ENV "TUNE_ROOT"

/* Find the root for recipe_path. explicit_root: a directory given by the user
 * (NULL or "": none). On success out[n] holds the absolute root and *how
 * (static text) says which rule chose it, e.g. "its .tune-root marker". On
 * failure err names the recipe and how to say which root is meant. */
int tune_project_root(const char *recipe_path, const char *explicit_root, char *out, size_t n, const char **how,
                      tune_err *err);

#endif
