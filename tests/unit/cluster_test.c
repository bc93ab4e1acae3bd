/* cluster_test.c: the launch field `cluster` of a recipe (docs/recipes.md): every form (table,
 * number, expression strings, function(c, p, d), missing), every validation error (a dim < 1, over
 * 8 blocks, a grid not divisible, below sm_90: the variant is skipped with the reason; a bad form
 * or a Lua error: a recipe error), zero-block steps, lists of steps; and the worker protocol's
 * launch step with and without a cluster. CPU only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"
#include "recipe.h"
#include "tunert_cluster.h"

#include "check.h"
#include "recipe_fixture.h"

static char dir[256];

/* A recipe in dir/recipes/c.lua with the given launch table (text), params CL {2, 4}. */
static void write_recipe(const char *launch) {
  char p[512];
  snprintf(p, sizeof p, "%s/recipes/c.lua", dir);
  FILE *f = fopen(p, "w");
  if (!f) { perror(p); exit(1); }
  fprintf(f,
          "return {\n  name = \"c\",\n  template = \"templates/k.cuh\",\n  kernel = \"k\",\n"
          "  params = { { \"CL\", { 2, 4 } } },\n"
          "  problems = { { name = \"nb64r2\", NB = 64, ROWS = 2 }, { name = \"nb6r1\", NB = 6, ROWS = 1 } },\n"
          "  launch = %s,\n"
          "  args = { { \"out\", tensor = \"i32\", shape = { \"ROWS\", \"NB\" }, output = true } },\n"
          "  reference = { source = \"templates/k.cuh\", kernel = \"r\", grid = { 1, 1, 1 }, block = { 32, 1, 1 } },\n"
          "  tolerance = { rel_l2 = 0, max_abs = 0 },\n}\n",
          launch);
  fclose(f);
}

typedef struct outcome {
  int load_rc, eval_rc;
  tune_variant v;
  char msg[1024];
} outcome;

/* Load the recipe with launch text, evaluate config CL = cl (index 0: 2, 1: 4) on problem pi for arch. */
static outcome eval(const char *launch, int cl, int pi, const char *arch) {
  outcome o;
  memset(&o, 0, sizeof o);
  write_recipe(launch);
  char p[512];
  snprintf(p, sizeof p, "%s/recipes/c.lua", dir);
  tune_recipes *set = NULL;
  tune_err err;
  tune_err_clear(&err);
  o.load_rc = tune_recipes_load(p, &set, &err);
  if (o.load_rc) { snprintf(o.msg, sizeof o.msg, "%s", err.msg); o.eval_rc = -1; return o; }
  tune_device_facts d = {.sm_count = 132, .smem_per_block = 232448, .l2_bytes = 50 << 20};
  snprintf(d.arch, sizeof d.arch, "%s", arch);
  int vi[1] = {cl};
  o.eval_rc = tune_recipe_eval_variant(&set->r[0], vi, &set->r[0].problems[pi], &d, &o.v, &err);
  if (o.eval_rc) snprintf(o.msg, sizeof o.msg, "%s", err.msg);
  tune_recipes_free(set);
  return o;
}

static int cl_is(const tune_launch *l, unsigned x, unsigned y, unsigned z) {
  return l->cluster[0] == x && l->cluster[1] == y && l->cluster[2] == z;
}

static int skipped_with(const outcome *o, const char *text) {
  if (o->eval_rc || !o->v.skip || !strstr(o->v.skip_reason, text)) {
    fprintf(stderr, "  want skipped with '%s'; got rc %d skip %d '%s' %s\n", text, o->eval_rc, o->v.skip, o->v.skip_reason, o->msg);
    return 0;
  }
  return 1;
}

static int recipe_error_with(const outcome *o, const char *text) {
  if (!o->eval_rc || !strstr(o->msg, text)) {
    fprintf(stderr, "  want a recipe error with '%s'; got rc %d '%s' skip '%s'\n", text, o->eval_rc, o->msg, o->v.skip_reason);
    return 0;
  }
  return 1;
}

#define GRID "grid = { \"NB\", \"ROWS\", 1 }, block = { 32, 1, 1 }"

static void test_forms(void) {
  /* missing: a plain launch */
  outcome o = eval("{ " GRID " }", 0, 0, "sm_90a");
  CHECK(o.eval_rc == 0 && !o.v.skip && cl_is(&o.v.launch[0], 1, 1, 1) && !tunert_cluster_used(o.v.launch[0].cluster));
  /* a table of numbers; short tables pad with 1 */
  o = eval("{ " GRID ", cluster = { 2, 2, 1 } }", 0, 0, "sm_90a");
  CHECK(o.eval_rc == 0 && !o.v.skip && cl_is(&o.v.launch[0], 2, 2, 1));
  o = eval("{ " GRID ", cluster = { 4 } }", 0, 0, "sm_90a");
  CHECK(o.eval_rc == 0 && !o.v.skip && cl_is(&o.v.launch[0], 4, 1, 1));
  /* a number */
  o = eval("{ " GRID ", cluster = 8 }", 0, 0, "sm_90a");
  CHECK(o.eval_rc == 0 && !o.v.skip && cl_is(&o.v.launch[0], 8, 1, 1));
  /* expression strings over params and dims */
  o = eval("{ " GRID ", cluster = { \"CL\", \"ROWS\", 1 } }", 0, 0, "sm_90a");
  CHECK(o.eval_rc == 0 && !o.v.skip && cl_is(&o.v.launch[0], 2, 2, 1));
  o = eval("{ " GRID ", cluster = { \"CL\", 1, 1 } }", 1, 0, "sm_90a");
  CHECK(o.eval_rc == 0 && !o.v.skip && cl_is(&o.v.launch[0], 4, 1, 1));
  /* a function(c, p, d), the calling convention of grid */
  o = eval("{ " GRID ", cluster = function(c, p, d) return { c.CL, p.ROWS, d.sm_count // 132 } end }", 1, 0, "sm_90a");
  CHECK(o.eval_rc == 0 && !o.v.skip && cl_is(&o.v.launch[0], 4, 2, 1));
  o = eval("{ " GRID ", cluster = function(c) return c.CL end }", 0, 0, "sm_90a");
  CHECK(o.eval_rc == 0 && !o.v.skip && cl_is(&o.v.launch[0], 2, 1, 1));
  /* a list of steps: each its own cluster, missing = 1x1x1 */
  o = eval("{ { " GRID ", cluster = { \"CL\", 1, 1 } }, { grid = { 1, 1, 1 }, block = { 32, 1, 1 } } }", 0, 0, "sm_90a");
  CHECK(o.eval_rc == 0 && !o.v.skip && o.v.n_launches == 2 && cl_is(&o.v.launch[0], 2, 1, 1) && cl_is(&o.v.launch[1], 1, 1, 1));
  /* a step with zero blocks is not launched: no divisibility to check */
  o = eval("{ grid = { \"NB - NB\", 1, 1 }, block = { 32, 1, 1 }, cluster = { 2, 2, 1 } }", 0, 0, "sm_90a");
  CHECK(o.eval_rc == 0 && !o.v.skip && o.v.launch[0].grid[0] == 0 && cl_is(&o.v.launch[0], 2, 2, 1));
  /* a plain launch needs no sm_90 */
  o = eval("{ " GRID ", cluster = { 1, 1, 1 } }", 0, 0, "sm_80");
  CHECK(o.eval_rc == 0 && !o.v.skip && cl_is(&o.v.launch[0], 1, 1, 1));
}

static void test_errors(void) {
  /* values that cannot launch: this variant is skipped with the reason */
  outcome o = eval("{ " GRID ", cluster = { 0, 1, 1 } }", 0, 0, "sm_90a");
  CHECK(skipped_with(&o, "launch step 1: cluster {0, 1, 1}: x is 0, want >= 1"));
  o = eval("{ " GRID ", cluster = { 1, 1, \"ROWS - 3\" } }", 0, 0, "sm_90a");
  CHECK(skipped_with(&o, "z is -1, want >= 1"));
  o = eval("{ " GRID ", cluster = { 4, 2, 2 } }", 0, 0, "sm_90a");
  CHECK(skipped_with(&o, "cluster {4, 2, 2}: 16 blocks, over the portable limit of 8 blocks per cluster"));
  o = eval("{ " GRID ", cluster = 16 }", 0, 0, "sm_90a");
  CHECK(skipped_with(&o, "more than 8 blocks, over the portable limit"));
  o = eval("{ " GRID ", cluster = { 2147483647, 2147483647, 2147483647 } }", 0, 0, "sm_90a");
  CHECK(skipped_with(&o, "over the portable limit"));
  o = eval("{ " GRID ", cluster = { \"CL\", 1, 1 } }", 1, 1, "sm_90a"); /* 4 into 6 blocks */
  CHECK(skipped_with(&o, "launch step 1: cluster {4, 1, 1} does not divide grid {6, 1, 1} (x: 6 % 4 = 2)"));
  o = eval("{ " GRID ", cluster = { 1, 2, 1 } }", 0, 1, "sm_90a"); /* 2 into 1 row */
  CHECK(skipped_with(&o, "(y: 1 % 2 = 1)"));
  o = eval("{ " GRID ", cluster = { 2, 1, 2 } }", 0, 0, "sm_90a");
  CHECK(skipped_with(&o, "(z: 1 % 2 = 1)"));
  o = eval("{ { grid = { 1, 1, 1 }, block = { 32, 1, 1 } }, { " GRID ", cluster = { 3, 1, 1 } } }", 0, 0, "sm_90a");
  CHECK(skipped_with(&o, "launch step 2: cluster {3, 1, 1} does not divide grid {64, 2, 1}"));
  o = eval("{ " GRID ", cluster = { 2, 1, 1 } }", 0, 0, "sm_80");
  CHECK(skipped_with(&o, "thread-block clusters need sm_90 or newer; the target is sm_80"));
  /* forms that are no cluster, and Lua errors: recipe errors (as for grid) */
  o = eval("{ " GRID ", cluster = { 1, 2, 3, 4 } }", 0, 0, "sm_90a");
  CHECK(recipe_error_with(&o, "cluster must be a positive integer or {x, y, z}"));
  o = eval("{ " GRID ", cluster = true }", 0, 0, "sm_90a");
  CHECK(recipe_error_with(&o, "cluster must be"));
  o = eval("{ " GRID ", cluster = { 1.5, 1, 1 } }", 0, 0, "sm_90a");
  CHECK(recipe_error_with(&o, "cluster must be"));
  o = eval("{ " GRID ", cluster = {} }", 0, 0, "sm_90a");
  CHECK(recipe_error_with(&o, "cluster must be"));
  o = eval("{ " GRID ", cluster = { \"CLX\", 1, 1 } }", 0, 0, "sm_90a");
  CHECK(recipe_error_with(&o, "cluster"));
  o = eval("{ " GRID ", cluster = function() error(\"no cluster today\") end }", 0, 0, "sm_90a");
  CHECK(recipe_error_with(&o, "no cluster today"));
}

/* The launch step through a real frame and back. */
static void roundtrip(const tune_launch *in, tune_launch *out, int *has_key) {
  int fd[2];
  memset(out, 0, sizeof *out);
  *has_key = -1;
  if (pipe(fd)) { CHECK(0); return; }
  tune_err err;
  tune_err_clear(&err);
  json_t *j = tune_launch_to_json(in, "k_lowered"), *msg = json_pack("{s:s,s:[o]}", "op", "measure", "launches", j);
  CHECK(tune_msg_write(fd[1], msg, NULL, 0, &err) == TUNE_OK);
  json_decref(msg);
  json_t *got = NULL;
  CHECK(tune_msg_read(fd[0], &got, NULL, NULL, 1000, &err) == TUNE_OK);
  close(fd[0]);
  close(fd[1]);
  if (!got) return;
  json_t *step = json_array_get(json_object_get(got, "launches"), 0);
  *has_key = json_object_get(step, "cluster") != NULL;
  tune_launch_from_json(step, out);
  json_decref(got);
}

static void test_protocol(void) {
  tune_launch a, b;
  int has;
  memset(&a, 0, sizeof a);
  a.grid[0] = 64, a.grid[1] = 2, a.grid[2] = 1, a.block[0] = 128, a.block[1] = a.block[2] = 1;
  a.shared = 4096, a.side_stream = 1;
  a.cluster[0] = 2, a.cluster[1] = 2, a.cluster[2] = 1;
  roundtrip(&a, &b, &has);
  CHECK(has == 1 && cl_is(&b, 2, 2, 1) && !strcmp(b.kernel, "k_lowered"));
  CHECK(!memcmp(a.grid, b.grid, sizeof a.grid) && !memcmp(a.block, b.block, sizeof a.block) && b.shared == 4096 && b.side_stream == 1);
  /* a plain launch: the message has no cluster (as before clusters), and reads back 1x1x1 */
  a.cluster[0] = a.cluster[1] = a.cluster[2] = 1;
  roundtrip(&a, &b, &has);
  CHECK(has == 0 && cl_is(&b, 1, 1, 1));
  a.cluster[0] = a.cluster[1] = a.cluster[2] = 0; /* a tune_launch never given one (the reference's) */
  roundtrip(&a, &b, &has);
  CHECK(has == 0 && cl_is(&b, 1, 1, 1));
  /* the exact text of a plain step: unchanged by clusters */
  json_t *j = tune_launch_to_json(&a, "k");
  char *t = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
  CHECK(t && !strcmp(t, "{\"block\":[128,1,1],\"grid\":[64,2,1],\"kernel\":\"k\",\"shared\":4096,\"stream\":1}"));
  free(t);
  json_decref(j);
  /* a malformed cluster reads as none */
  json_t *m = json_loads("{\"kernel\":\"k\",\"grid\":[2,1,1],\"block\":[32,1,1],\"shared\":0,\"stream\":0,\"cluster\":[0,\"x\"]}", 0, NULL);
  tune_launch_from_json(m, &b);
  CHECK(cl_is(&b, 1, 1, 1) && b.grid[0] == 2);
  json_decref(m);
}

static void test_fixture(const char *src) {
  /* the fixture of the GPU test: CL = 2 and 4 on 64 blocks, 4 skipped on 6 */
  char p[4096];
  snprintf(p, sizeof p, "%s/tests/fixtures/recipes/cluster.lua", src);
  tune_recipes *set = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_recipes_load(p, &set, &err) == TUNE_OK);
  if (!set) { fprintf(stderr, "%s\n", err.msg); return; }
  tune_recipe *r = &set->r[0];
  tune_device_facts d = {.sm_count = 132, .smem_per_block = 232448, .l2_bytes = 50 << 20};
  snprintf(d.arch, sizeof d.arch, "sm_90a");
  tune_variant v;
  int vi[2] = {1, 0}; /* CL 4, THREADS 32 */
  CHECK(tune_recipe_eval_variant(r, vi, &r->problems[0], &d, &v, &err) == TUNE_OK && !v.skip && cl_is(&v.launch[0], 4, 1, 1));
  CHECK(tune_recipe_eval_variant(r, vi, &r->problems[1], &d, &v, &err) == TUNE_OK && v.skip && strstr(v.skip_reason, "does not divide"));
  vi[0] = 0;
  CHECK(tune_recipe_eval_variant(r, vi, &r->problems[1], &d, &v, &err) == TUNE_OK && !v.skip && cl_is(&v.launch[0], 2, 1, 1));
  tune_recipes_free(set);
}

int main(void) {
  if (fixture_project(dir, sizeof dir, "cluster_test")) return 1;
  test_forms();
  test_errors();
  test_protocol();
  const char *src = getenv("SRC");
  CHECK(src != NULL); /* ctest sets it: the fixture part must run */
  if (src) test_fixture(src);
  fixture_remove(dir);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
