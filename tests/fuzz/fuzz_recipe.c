/* fuzz_recipe.c: the recipe loader (tuner/recipe.c) on arbitrary Lua text.
 *
 * The input is written to recipes/fuzz_input.lua under a scratch project root
 * (a .tune-root marker; in templates/ and recipes/ links to the entries of the
 * source tree's and the test fixtures' folders, so `require` and real template
 * paths resolve) and loaded
 * with tune_recipes_load_root. A recipe that loads is then evaluated as tune
 * run would: every constraint on the first config, and the first problem with
 * its first variant. Lua is kept small and short (TUNE_LUA_MAX_INSTRUCTIONS,
 * TUNE_LUA_MAX_MB) so a looping or growing input fails fast as a recipe
 * error. Errors are expected results; only crashes and sanitizer reports
 * count. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "lua_limits.h"
#include "project_root.h"
#include "recipe.h"

static char root[PATH_MAX], input_path[PATH_MAX + 32];

static void link_or_abort(const char *target, const char *name) {
  if (symlink(target, name)) { perror(name); abort(); }
}

/* root/sub/NAME -> src/NAME for each entry of src (root/sub made when missing). */
static void link_entries(const char *sub, const char *src) {
  char path[2 * PATH_MAX], target[2 * PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, sub);
  mkdir(path, 0700);
  DIR *d = opendir(src);
  if (!d) { perror(src); abort(); }
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    snprintf(target, sizeof target, "%s/%s", src, e->d_name);
    snprintf(path, sizeof path, "%s/%s/%s", root, sub, e->d_name);
    link_or_abort(target, path);
  }
  closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  setenv(TUNE_LUA_INSTRUCTIONS_ENV, "1000000", 1);
  setenv(TUNE_LUA_MB_ENV, "64", 1);
  unsetenv(TUNE_ROOT_ENV);
  snprintf(root, sizeof root, "%s", fuzz_scratch_dir());
  char path[2 * PATH_MAX];
  snprintf(path, sizeof path, "%s/" TUNE_ROOT_MARKER, root);
  fuzz_write_file(path, (const uint8_t *)"", 0);
  link_entries("templates", TUNE_FUZZ_SRC "/templates");
  link_entries("templates", TUNE_FUZZ_SRC "/tests/fixtures/templates");
  link_entries("recipes", TUNE_FUZZ_SRC "/recipes");
  link_entries("recipes", TUNE_FUZZ_SRC "/tests/fixtures/recipes");
  snprintf(input_path, sizeof input_path, "%s/recipes/fuzz_input.lua", root);
  return 0;
}

/* What tune run does with a loaded recipe before compiling anything. */
static void evaluate(tune_recipe *r) {
  static const tune_device_facts dev = {.sm_count = 132, .smem_per_block = 232448, .l2_bytes = 50 << 20,
                                        .arch = "sm_90a"};
  int vi[64] = {0};
  if (r->n_params > 64) return;
  tune_err err = {0};
  for (int c = 0; c < r->n_constraints; ++c) {
    tune_err_clear(&err);
    tune_recipe_check(r, c, vi, r->n_params, &err);
  }
  char buf[1024], hash[17];
  tune_recipe_config_json(r, vi, buf, sizeof buf);
  tune_recipe_config_hash(r, vi, hash);
  tune_recipe_constraint_text(r, 0, buf, sizeof buf);
  if (r->n_problems < 1) return;
  static tune_problem_setup setup;
  static tune_variant variant;
  tune_err_clear(&err);
  int rc = tune_recipe_eval_problem(r, &r->problems[0], &dev, &setup, &err);
  fuzz_note("%s: problem %s: %s", r->name, r->problems[0].name, rc ? err.msg : "evaluated");
  tune_err_clear(&err);
  rc = tune_recipe_eval_variant(r, vi, &r->problems[0], &dev, &variant, &err);
  fuzz_note("%s: first variant: %s", r->name, rc ? err.msg : "evaluated");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write_file(input_path, data, size);
  tune_recipes *set = NULL;
  tune_err err = {0};
  if (tune_recipes_load_root(input_path, root, &set, &err) == TUNE_OK) {
    char line[PATH_MAX + 128];
    tune_recipes_root_line(set, line, sizeof line);
    fuzz_note("loaded %d recipe(s)", set->n);
    for (int i = 0; i < set->n; ++i) evaluate(&set->r[i]);
  } else if (!err.msg[0]) {
    fprintf(stderr, "fuzz_recipe: a failed load left no message\n");
    abort();
  }
  else fuzz_note("refused: %s", err.msg);
  tune_recipes_free(set);
  return 0;
}
