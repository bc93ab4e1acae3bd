/* project_root.c: the project root of a recipe (see project_root.h). */
#include "project_root.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int is_dir(const char *dir, const char *name) {
  char p[PATH_MAX + 64];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *dir, const char *name) {
  char p[PATH_MAX + 64];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* A directory given by the user (flag or environment), made absolute. */
static int given_root(const char *dir, const char *what, char *out, size_t n, tune_err *err) {
  char abs[PATH_MAX];
  if (!realpath(dir, abs) || !is_dir(abs, "."))
    return tune_fail(err, TUNE_EINVAL, "%s %s: no such directory", what, dir);
  if (!is_dir(abs, "templates"))
    return tune_fail(err, TUNE_EINVAL, "%s %s: not a project root (it has no templates/ directory)", what, dir);
  snprintf(out, n, "%s", abs);
  return TUNE_OK;
}

int tune_project_root(const char *recipe_path, const char *explicit_root, char *out, size_t n, const char **how,
                      tune_err *err) {
  if (explicit_root && explicit_root[0]) {
    *how = "given by --root";
    return given_root(explicit_root, "--root", out, n, err);
  }
  const char *env = getenv(TUNE_ROOT_ENV);
  if (env && env[0]) {
    *how = "given by " TUNE_ROOT_ENV;
    return given_root(env, TUNE_ROOT_ENV, out, n, err);
  }
  char dir[PATH_MAX];
  if (!realpath(recipe_path, dir)) return tune_fail(err, TUNE_EINVAL, "%s: no such recipe file", recipe_path);
  char *slash = strrchr(dir, '/');
  const char *child = NULL; /* the path component below dir on the way up */
  while (slash) {
    child = slash + 1;
    *slash = 0;
    const char *d = dir[0] ? dir : "/";
    if (is_file(d, TUNE_ROOT_MARKER)) { *how = "its " TUNE_ROOT_MARKER " marker"; break; }
    if (!strcmp(child, "recipes") && is_dir(d, "templates")) { *how = "recipes/ beside templates/"; break; }
    slash = dir[0] ? strrchr(dir, '/') : NULL;
  }
  if (!slash)
    return tune_fail(err, TUNE_EINVAL,
                     "%s: no project root above it (no directory holds a " TUNE_ROOT_MARKER
                     " file, or recipes/ beside templates/); pass --root DIR or set " TUNE_ROOT_ENV,
                     recipe_path);
  snprintf(out, n, "%s", dir[0] ? dir : "/");
  return TUNE_OK;
}
