/* source_hash_test.c: raw and normalised source hashes (tuner/source_hash.c) and the replay
 * backend's "recorded with this source" rule (tune_backend_replay_current), on a small tree of
 * CUDA and Lua files written to a temporary folder. Exit status 0 when every CHECK passed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "check.h"
#include "source_hash.h"

static char root[256];

static void write_file(const char *rel, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *f = fopen(path, "w");
  if (!f) { perror(path); exit(2); }
  fputs(text, f);
  fclose(f);
}

/* Hash of templates/<rel> and its includes: raw (normalised = 0) or normalised, as hex. */
static void tree_hash(const char *rel, int normalised, char out[17]) {
  char path[512], inc[512];
  snprintf(path, sizeof path, "%s/templates/%s", root, rel);
  snprintf(inc, sizeof inc, "%s/templates", root);
  XXH64_state_t *h = XXH64_createState();
  XXH64_reset(h, 0);
  tune_err err;
  tune_err_clear(&err);
  int rc = normalised ? tune_source_hash_normalized_update(h, path, inc, &err)
                      : tune_source_hash_update(h, path, inc, &err);
  if (rc) snprintf(out, 17, "error");
  else snprintf(out, 17, "%016llx", (unsigned long long)XXH64_digest(h));
  XXH64_freeState(h);
}

/* Raw and normalised hash of the kernel k.cuh after `text` is written there. */
static void kernel_hashes(const char *text, char raw[17], char norm[17]) {
  write_file("templates/fam/k.cuh", text);
  tree_hash("fam/k.cuh", 0, raw);
  tree_hash("fam/k.cuh", 1, norm);
}

static const char *kBase =
    "// k.cuh: a kernel\n#pragma once\n#include \"common/h.cuh\"\n"
    "#define TWO 1 + \\\n  1\n"
    "__global__ void k(float *y) { y[0] = helper(TWO); asm(\"mov.u32 %0, 1;\" ::\"r\"(0)); }\n";

static void check_c(void) {
  write_file("templates/common/h.cuh", "#pragma once\n__device__ float helper(int x) { return x; }\n");
  char raw0[17], norm0[17], raw[17], norm[17];
  kernel_hashes(kBase, raw0, norm0);
  CHECK(strcmp(raw0, "error") && strcmp(norm0, "error") && strcmp(raw0, norm0));

  /* comments, blank lines and blanks: the raw hash moves, the normalised one does not */
  kernel_hashes("/* k.cuh:\n   a kernel, said twice */\n#pragma once\n\n#include \"common/h.cuh\"  // helper\n"
                "#define TWO 1 + \\\n  1\n"
                "__global__   void k(float *y)\t{ y[0] = helper(TWO); /* one */ asm(\"mov.u32 %0, 1;\" ::\"r\"(0)); }\n",
                raw, norm);
  CHECK(strcmp(raw, raw0) != 0);
  CHECK(strcmp(norm, norm0) == 0);

  /* a line splice joined by hand reads the same to the compiler */
  kernel_hashes("#pragma once\n#include \"common/h.cuh\"\n#define TWO 1 + 1\n"
                "__global__ void k(float *y) { y[0] = helper(TWO); asm(\"mov.u32 %0, 1;\" ::\"r\"(0)); }\n",
                raw, norm);
  CHECK(strcmp(norm, norm0) == 0);

  /* code, and blanks inside a string literal, count */
  kernel_hashes("#pragma once\n#include \"common/h.cuh\"\n#define TWO 1 + 1\n"
                "__global__ void k(float *y) { y[0] = helper(TWO) + 1; asm(\"mov.u32 %0, 1;\" ::\"r\"(0)); }\n",
                raw, norm);
  CHECK(strcmp(norm, norm0) != 0);
  kernel_hashes("#pragma once\n#include \"common/h.cuh\"\n#define TWO 1 + 1\n"
                "__global__ void k(float *y) { y[0] = helper(TWO); asm(\"mov.u32  %0, 1;\" ::\"r\"(0)); }\n",
                raw, norm);
  CHECK(strcmp(norm, norm0) != 0);
  /* "//" in a string is no comment: what follows it counts */
  kernel_hashes("const char *s = \"a // b\";\n", raw, norm0);
  kernel_hashes("const char *s = \"a // c\";\n", raw, norm);
  CHECK(strcmp(norm, norm0) != 0);
  /* a comment that spans lines is one space: the directive goes on past it, unlike a line break */
  kernel_hashes("#define X 1 /*\n*/ + 2\nint y = X;\n", raw, norm0);
  kernel_hashes("#define X 1\n+ 2\nint y = X;\n", raw, norm);
  CHECK(strcmp(norm, norm0) != 0);

  /* a header moved (another folder, the include line changed): the same normalised hash */
  kernel_hashes(kBase, raw0, norm0);
  char moved[512];
  snprintf(moved, sizeof moved, "%s/templates/shared", root);
  mkdir(moved, 0700);
  write_file("templates/shared/helpers.cuh", "#pragma once\n__device__ float helper(int x) { return x; }\n");
  char text[1024];
  snprintf(text, sizeof text, "%s", kBase);
  char *at = strstr(text, "common/h.cuh");
  memcpy(at, "shared/helpers.cuh", 18);
  snprintf(at + 18, sizeof text - (size_t)(at + 18 - text), "%s", strstr(kBase, "common/h.cuh") + 12);
  kernel_hashes(text, raw, norm);
  CHECK(strcmp(raw, raw0) != 0);
  CHECK(strcmp(norm, norm0) == 0);
  /* ... but not a header whose code changed */
  write_file("templates/shared/helpers.cuh", "#pragma once\n__device__ float helper(int x) { return 2 * x; }\n");
  kernel_hashes(text, raw, norm);
  CHECK(strcmp(norm, norm0) != 0);
  /* a second include of the same header counts (it would matter without #pragma once) */
  kernel_hashes(kBase, raw0, norm0);
  snprintf(text, sizeof text, "%s#include \"common/h.cuh\"\n", kBase);
  kernel_hashes(text, raw, norm);
  CHECK(strcmp(norm, norm0) != 0);
}

/* Normalised hash of the recipe recipes/r.lua over templates/fam/k.cuh (reference: the same). */
static int recipe_hash(char out[17]) {
  char file[512], tpl[512];
  snprintf(file, sizeof file, "%s/recipes/r.lua", root);
  snprintf(tpl, sizeof tpl, "%s/templates/fam/k.cuh", root);
  tune_err err;
  tune_err_clear(&err);
  return tune_recipe_hash_normalized(file, tpl, tpl, root, out, &err);
}

static void check_lua(void) {
  write_file("templates/fam/k.cuh", kBase);
  write_file("recipes/m.lua", "return { block = 128 } -- the module\n");
  write_file("recipes/r.lua", "-- r.lua: a recipe\nlocal m = require \"m\"\nreturn { name = 'r', s = [[a  b]] }\n");
  char h0[17], h[17];
  CHECK(recipe_hash(h0) == TUNE_OK && strlen(h0) == 16);
  write_file("recipes/r.lua", "--[[ r.lua:\n a recipe ]]\nlocal m =   require(\"m\")\n\nreturn {\n  name = 'r', s = [[a  b]] }\n");
  CHECK(recipe_hash(h) == TUNE_OK && strcmp(h, h0) != 0); /* require(...) vs require "...": other tokens */
  write_file("recipes/r.lua", "--[[ r.lua:\n a recipe ]]\nlocal m =   require \"m\"\n\nreturn {\n  name = 'r', s = [[a  b]] }\n");
  CHECK(recipe_hash(h) == TUNE_OK && strcmp(h, h0) == 0);
  write_file("recipes/r.lua", "local m = require \"m\"\nreturn { name = 'r', s = [[a b]] }\n");
  CHECK(recipe_hash(h) == TUNE_OK && strcmp(h, h0) != 0); /* a long string's blanks count */
  /* the required module's code counts, its comments do not */
  write_file("recipes/r.lua", "-- r.lua: a recipe\nlocal m = require \"m\"\nreturn { name = 'r', s = [[a  b]] }\n");
  write_file("recipes/m.lua", "return { block = 128 } --[==[ another\n comment ]==]\n");
  CHECK(recipe_hash(h) == TUNE_OK && strcmp(h, h0) == 0);
  write_file("recipes/m.lua", "return { block = 256 }\n");
  CHECK(recipe_hash(h) == TUNE_OK && strcmp(h, h0) != 0);
  /* a require whose module is known only at run time: no normalised hash */
  write_file("recipes/r.lua", "local n = 'm'\nlocal m = require(n)\nreturn { name = 'r' }\n");
  CHECK(recipe_hash(h) == TUNE_EINVAL && h[0] == 0);
}

static void check_replay_rule(void) {
  write_file("templates/fam/k.cuh", kBase);
  write_file("recipes/m.lua", "return { block = 128 }\n");
  write_file("recipes/r.lua", "local m = require \"m\"\nreturn { name = 'r' }\n");
  char file[512], tpl[512], norm[17];
  snprintf(file, sizeof file, "%s/recipes/r.lua", root);
  snprintf(tpl, sizeof tpl, "%s/templates/fam/k.cuh", root);
  CHECK(recipe_hash(norm) == TUNE_OK);
  tune_recipe r = {.file = file, .module_file = file, .root = root, .template_path = tpl, .ref_source = tpl};
  snprintf(r.source_hash, sizeof r.source_hash, "0123456789abcdef"); /* the raw hash, as recipe.c made it */
  tune_backend b = {0};
  CHECK(tune_backend_replay_current(&b, &r) == TUNE_REPLAY_OTHER_SOURCE); /* nothing recorded */
  snprintf(b.recorded_hash, sizeof b.recorded_hash, "%s", r.source_hash);
  CHECK(tune_backend_replay_current(&b, &r) == TUNE_REPLAY_SAME_TEXT);
  snprintf(b.recorded_hash, sizeof b.recorded_hash, "%s", norm);
  CHECK(tune_backend_replay_current(&b, &r) == TUNE_REPLAY_SAME_NORMALISED);
  char commented[1024];
  snprintf(commented, sizeof commented, "// a comment more\n%s", kBase);
  write_file("templates/fam/k.cuh", commented);
  CHECK(tune_backend_replay_current(&b, &r) == TUNE_REPLAY_SAME_NORMALISED);
  write_file("templates/fam/k.cuh", "__global__ void k(float *y) { y[0] = 3; }\n");
  CHECK(tune_backend_replay_current(&b, &r) == TUNE_REPLAY_OTHER_SOURCE);
  snprintf(b.recorded_hash, sizeof b.recorded_hash, "fedcba9876543210"); /* an older raw hash */
  CHECK(tune_backend_replay_current(&b, &r) == TUNE_REPLAY_OTHER_SOURCE);
}

int main(void) {
  snprintf(root, sizeof root, "%s/tune_source_hash_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(root)) { perror("mkdtemp"); return 2; }
  const char *dirs[] = {"templates", "templates/common", "templates/fam", "recipes"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; ++i) {
    char d[512];
    snprintf(d, sizeof d, "%s/%s", root, dirs[i]);
    mkdir(d, 0700);
  }
  check_c();
  check_lua();
  check_replay_rule();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", root);
  printf("source_hash_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
