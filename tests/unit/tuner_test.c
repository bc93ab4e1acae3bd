/* tuner_test.c: recipe loading and evaluation, inputs and comparison, ptxas
 * report parsing, the worker protocol. CPU only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile.h"
#include "inputs.h"
#include "protocol.h"
#include "recipe.h"
#include "search.h"

#include "check.h"

static void test_recipe_copy(const char *src) {
  char path[4096];
  snprintf(path, sizeof path, "%s/recipes/copy.lua", src);
  tune_recipes *set = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_recipes_load(path, &set, &err) == TUNE_OK);
  if (!set) { fprintf(stderr, "%s\n", err.msg); return; }
  tune_recipe *r = &set->r[0];
  CHECK(set->n == 1 && !strcmp(r->name, "copy"));
  CHECK(r->n_params == 5 && !strcmp(r->params[0].name, "VEC_BYTES") && r->params[0].n_values == 3);
  CHECK(r->n_problems == 2 && strlen(r->problems[0].hash) == 16);
  CHECK(!strcmp(r->problems[0].dims_json, "{\"N\":16777216}"));
  /* enumerate with the recipe's constraints and compare with brute force */
  int nv[SEARCH_MAX_PARAMS];
  for (int i = 0; i < r->n_params; ++i) nv[i] = r->params[i].n_values;
  search_space_def def = {.n_params = r->n_params, .n_values = nv, .n_constraints = r->n_constraints,
                          .check = tune_recipe_check, .ctx = r};
  search_space *sp = NULL;
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  size_t brute = 0;
  int vi[5];
  for (vi[0] = 0; vi[0] < 3; ++vi[0])
    for (vi[1] = 0; vi[1] < 4; ++vi[1])
      for (vi[2] = 0; vi[2] < 4; ++vi[2])
        for (vi[3] = 0; vi[3] < 2; ++vi[3])
          for (vi[4] = 0; vi[4] < 2; ++vi[4]) {
            long long vec = r->params[0].values[vi[0]].i, ilp = r->params[1].values[vi[1]].i;
            long long blk = r->params[2].values[vi[2]].i, minb = r->params[4].values[vi[4]].i;
            brute += blk * minb <= 2048 && blk * ilp * vec <= 64 * 1024;
          }
  CHECK(sp && sp->n_points == brute);
  /* a config: json, hash stability, variant geometry */
  int cfg[5] = {2, 1, 1, 0, 0}; /* VEC 16, ILP 2, BLOCK 256, one-shot, MIN_BLOCKS 1 */
  char json[512], h1[17], h2[17];
  tune_recipe_config_json(r, cfg, json, sizeof json);
  CHECK(!strcmp(json, "{\"VEC_BYTES\":16,\"ILP\":2,\"BLOCK\":256,\"GRID_STRIDE\":false,\"MIN_BLOCKS\":1}"));
  tune_recipe_config_hash(r, cfg, h1);
  tune_recipe_config_hash(r, cfg, h2);
  CHECK(!strcmp(h1, h2));
  tune_device_facts d = {.sm_count = 132, .smem_per_block = 232448, .l2_bytes = 50 << 20};
  snprintf(d.arch, sizeof d.arch, "sm_90a");
  tune_variant v;
  CHECK(tune_recipe_eval_variant(r, cfg, &r->problems[0], &d, &v, &err) == TUNE_OK);
  /* 16 M floats / (256 threads x 2 x 4 floats) = 8192 blocks */
  CHECK(v.n_launches == 1 && v.launch[0].grid[0] == 8192 && v.launch[0].block[0] == 256);
  CHECK(v.n_defines == 5 && !strcmp(v.defines[3], "-DGRID_STRIDE=0"));
  cfg[3] = 1; /* grid-stride: capped at SMs x 2048 / BLOCK */
  CHECK(tune_recipe_eval_variant(r, cfg, &r->problems[0], &d, &v, &err) == TUNE_OK);
  CHECK(v.launch[0].grid[0] == 132 * 8);
  tune_problem_setup s;
  CHECK(tune_recipe_eval_problem(r, &r->problems[0], &d, &s, &err) == TUNE_OK);
  CHECK(s.n_args == 3 && s.numel[0] == 16777216 && s.def[1].output && s.scalar_i[2] == 16777216);
  CHECK(s.bytes == 8.0 * 16777216 && s.tol_rel_l2 == 0);
  CHECK(s.ref_launch.grid[0] == 65536 && s.ref_launch.block[0] == 256);
  search_space_free(sp);
  tune_recipes_free(set);
}

/* A list recipe's elements returned by modules are hashed with their module's texts only (and the
 * modules those require): editing one sibling leaves the other's source hash as it was. */
static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* A project root in dir (a mkdtemp template): recipes/, and templates/t.cuh with kernel k. */
static void scratch_project(char *dir) {
  CHECK(mkdtemp(dir) != NULL);
  char p[4200];
  snprintf(p, sizeof p, "%s/recipes", dir); CHECK(mkdir(p, 0700) == 0);
  snprintf(p, sizeof p, "%s/templates", dir); CHECK(mkdir(p, 0700) == 0);
  snprintf(p, sizeof p, "%s/templates/t.cuh", dir); write_text(p, "extern \"C\" __global__ void k(float *d) {}\n");
}

static void remove_tree(const char *dir) {
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

static const char *module_recipe(char *buf, size_t n, const char *name, const char *extra) {
  snprintf(buf, n,
           "local common = require \"fam.common\"\n%s\n"
           "return { name = \"%s\", template = \"templates/t.cuh\", kernel = \"k\",\n"
           "  params = { { \"X\", { 1, 2 } } },\n"
           "  problems = { { name = \"p\", N = common.N } },\n"
           "  launch = { grid = { 1, 1, 1 }, block = { 32, 1, 1 } },\n"
           "  args = { { \"dst\", tensor = \"f32\", shape = { \"N\" }, output = true } },\n"
           "  reference = { source = \"templates/t.cuh\", kernel = \"r\", grid = { 1, 1, 1 }, block = { 32, 1, 1 } },\n"
           "  tolerance = { rel_l2 = 0, max_abs = 0 }, metrics = { bytes = 4, flops = 0 } }\n",
           extra, name);
  return buf;
}

static int load_hashes(const char *top, char (*h)[32]) {
  tune_recipes *set = NULL;
  tune_err err;
  tune_err_clear(&err);
  int rc = tune_recipes_load(top, &set, &err);
  if (rc) { fprintf(stderr, "%s\n", err.msg); return rc; }
  CHECK(set->n == 3);
  for (int i = 0; i < set->n && i < 3; ++i) snprintf(h[i], 32, "%s", set->r[i].source_hash);
  tune_recipes_free(set);
  return 0;
}

static void test_module_hashes(void) {
  char dir[] = "/tmp/tune_hash_XXXXXX";
  scratch_project(dir);
  char p[4200], buf[2048], top[4200];
  snprintf(p, sizeof p, "%s/recipes/fam", dir); CHECK(mkdir(p, 0700) == 0);
  snprintf(p, sizeof p, "%s/recipes/fam/common.lua", dir); write_text(p, "return { N = 64 }\n");
  snprintf(p, sizeof p, "%s/recipes/fam/a.lua", dir); write_text(p, module_recipe(buf, sizeof buf, "fam.a", ""));
  snprintf(p, sizeof p, "%s/recipes/fam/b.lua", dir); write_text(p, module_recipe(buf, sizeof buf, "fam.b", ""));
  snprintf(top, sizeof top, "%s/recipes/fam.lua", dir);
  write_text(top, "local inline = require \"fam.a\"\n"
                  "local c = { name = \"fam.c\" }\n"
                  "for k, v in pairs(inline) do if k ~= \"name\" then c[k] = v end end\n"
                  "return { require \"fam.a\", require \"fam.b\", c }\n");
  char h0[3][32], h1[3][32], h2[3][32], h3[3][32];
  CHECK(load_hashes(top, h0) == 0);
  CHECK(strcmp(h0[0], h0[1]) != 0);  /* different module texts */
  snprintf(p, sizeof p, "%s/recipes/fam/b.lua", dir); write_text(p, module_recipe(buf, sizeof buf, "fam.b", "-- edited"));
  CHECK(load_hashes(top, h1) == 0);
  CHECK(!strcmp(h0[0], h1[0]));      /* a: untouched by b's edit */
  CHECK(strcmp(h0[1], h1[1]) != 0);  /* b: changed */
  CHECK(strcmp(h0[2], h1[2]) != 0);  /* c (written in the top file): covers every text loaded */
  snprintf(p, sizeof p, "%s/recipes/fam/common.lua", dir); write_text(p, "return { N = 64 } -- edited\n");
  CHECK(load_hashes(top, h2) == 0);
  CHECK(strcmp(h1[0], h2[0]) != 0 && strcmp(h1[1], h2[1]) != 0);  /* a shared module counts for both */
  write_text(top, "-- the list file edited\n"
                  "local inline = require \"fam.a\"\n"
                  "local c = { name = \"fam.c\" }\n"
                  "for k, v in pairs(inline) do if k ~= \"name\" then c[k] = v end end\n"
                  "return { require \"fam.a\", require \"fam.b\", c }\n");
  CHECK(load_hashes(top, h3) == 0);
  CHECK(!strcmp(h2[0], h3[0]) && !strcmp(h2[1], h3[1]));  /* the list file is not part of a module's source */
  CHECK(strcmp(h2[2], h3[2]) != 0);
  /* a module recipe run as a file of its own has the source hash it has in the list, so a
     recording made either way replays either way */
  tune_recipes *alone = NULL;
  tune_err err;
  tune_err_clear(&err);
  snprintf(p, sizeof p, "%s/recipes/fam/a.lua", dir);
  CHECK(tune_recipes_load(p, &alone, &err) == TUNE_OK);
  CHECK(alone && alone->n == 1 && !strcmp(alone->r[0].source_hash, h3[0]));
  tune_recipes_free(alone);
  /* the file defining each recipe (its normalised hash's): the module that returned it, or the list
     file for one written there */
  tune_recipes *set = NULL;
  CHECK(tune_recipes_load(top, &set, &err) == TUNE_OK && set && set->n == 3);
  if (set && set->n == 3) {
    snprintf(p, sizeof p, "%s/recipes/fam/a.lua", dir);
    CHECK(!strcmp(set->r[0].module_file, p));
    snprintf(p, sizeof p, "%s/recipes/fam/b.lua", dir);
    CHECK(!strcmp(set->r[1].module_file, p));
    CHECK(!strcmp(set->r[2].module_file, top));
  }
  tune_recipes_free(set);
  remove_tree(dir);
}

#define X_NORMAL "{ \"x\", tensor = \"bf16\", shape = { \"N\" }, init = { \"normal\", 0, 1 } }"

/* Load a one-problem recipe in dir with input x_arg, an output of out_dtype and tolerance extras. */
static int load_small(const char *dir, const char *x_arg, const char *out_dtype, const char *tolerance, tune_recipes **set,
                      tune_err *err) {
  char p[4200], text[2048];
  snprintf(p, sizeof p, "%s/recipes/h.lua", dir);
  snprintf(text, sizeof text,
           "return { name = \"h\", template = \"templates/t.cuh\", kernel = \"k\", params = { { \"X\", { 1 } } },\n"
           "  problems = { { name = \"p\", N = 64 } }, launch = { grid = { 1, 1, 1 }, block = { 32, 1, 1 } },\n"
           "  args = { %s,\n"
           "           { \"y\", tensor = \"%s\", shape = { \"N\" }, output = true } },\n"
           "  reference = { source = \"templates/t.cuh\", kernel = \"r\", grid = { 1, 1, 1 }, block = { 32, 1, 1 } },\n"
           "  tolerance = { rel_l2 = 1e-2, max_abs = 1, %s }, metrics = { bytes = 4, flops = 0 } }\n",
           x_arg, out_dtype, tolerance);
  write_text(p, text);
  tune_err_clear(err);
  *set = NULL;
  return tune_recipes_load(p, set, err);
}

static int load_honest(const char *dir, const char *out_dtype, const char *honest, tune_recipes **set, tune_err *err) {
  return load_small(dir, X_NORMAL, out_dtype, honest, set, err);
}

static const tune_device_facts test_device = {.sm_count = 132, .smem_per_block = 232448, .l2_bytes = 50 << 20, .arch = "sm_90a"};

/* tolerance.honest: a number above 1, for recipes with a bf16, f16 or e4m3 output; handed to each
 * problem's setup. */
static void test_tolerance_honest(void) {
  char dir[] = "/tmp/tune_honest_XXXXXX";
  scratch_project(dir);
  tune_recipes *set = NULL;
  tune_err err;
  CHECK(load_honest(dir, "bf16", "honest = 1.25", &set, &err) == TUNE_OK);
  if (set) {
    CHECK(set->r[0].tol_honest == 1.25);
    tune_problem_setup ps;
    CHECK(tune_recipe_eval_problem(&set->r[0], &set->r[0].problems[0], &test_device, &ps, &err) == TUNE_OK);
    CHECK(ps.tol_honest == 1.25 && ps.tol_rel_l2 == 1e-2);
    tune_recipes_free(set);
  }
  CHECK(load_honest(dir, "e4m3", "", &set, &err) == TUNE_OK); /* not given: off */
  if (set) { CHECK(set->r[0].tol_honest == 0); tune_recipes_free(set); }
  CHECK(load_honest(dir, "bf16", "honest = 1", &set, &err) == TUNE_ERECIPE);
  CHECK(strstr(err.msg, "tolerance.honest must be a number above 1") != NULL);
  CHECK(load_honest(dir, "f16", "honest = 0.5", &set, &err) == TUNE_ERECIPE);
  CHECK(load_honest(dir, "bf16", "honest = 0/0", &set, &err) == TUNE_ERECIPE); /* NaN */
  CHECK(load_honest(dir, "f32", "honest = 2", &set, &err) == TUNE_ERECIPE);
  CHECK(strstr(err.msg, "tolerance.honest judges bf16, f16 and e4m3 outputs") && strstr(err.msg, "recipe 'h'"));
  CHECK(load_honest(dir, "i32", "honest = 2", &set, &err) == TUNE_ERECIPE);
  CHECK(load_honest(dir, "bf16", "honest = '2'", &set, &err) == TUNE_ERECIPE);
  CHECK(strstr(err.msg, "tolerance.honest must be a number (not a string)") != NULL);
  remove_tree(dir);
}

/* init and adversarial {"wide", lo_exp2, hi_exp2}: floating-point tensors, lo < hi, hi within the
 * dtype's finite range; bounds may be expressions of the problem. */
static int load_wide(const char *dir, const char *x_arg, tune_recipes **set, tune_err *err) {
  return load_small(dir, x_arg, "f32", "", set, err);
}

static void test_init_wide(void) {
  char dir[] = "/tmp/tune_wide_XXXXXX";
  scratch_project(dir);
  tune_recipes *set = NULL;
  tune_err err;
  CHECK(load_wide(dir, "{ \"x\", tensor = \"bf16\", shape = { \"N\" }, init = { \"normal\", 0, 1 }, adversarial = { \"wide\", -30, 30 } }",
                  &set, &err) == TUNE_OK);
  if (set) {
    const tune_arg_def *x = &set->r[0].args[0];
    CHECK(x->init == TUNE_INIT_NORMAL && x->adv_init == TUNE_INIT_WIDE && x->adv_a == -30 && x->adv_b == 30);
    tune_recipes_free(set);
  }
  CHECK(load_wide(dir, "{ \"x\", tensor = \"f16\", shape = { \"N\" }, init = { \"wide\", \"-N // 8\", 15 } }", &set, &err) == TUNE_OK);
  if (set) {
    tune_problem_setup ps;
    CHECK(tune_recipe_eval_problem(&set->r[0], &set->r[0].problems[0], &test_device, &ps, &err) == TUNE_OK);
    CHECK(ps.def[0].init == TUNE_INIT_WIDE && ps.def[0].init_a == -8 && ps.def[0].init_b == 15);
    tune_recipes_free(set);
  }
  CHECK(load_wide(dir, "{ \"x\", tensor = \"f16\", shape = { \"N\" }, init = { \"wide\", \"N\", 15 } }", &set, &err) == TUNE_OK);
  if (set) { /* bounds that are expressions are checked per problem */
    tune_problem_setup ps;
    CHECK(tune_recipe_eval_problem(&set->r[0], &set->r[0].problems[0], &test_device, &ps, &err) == TUNE_ERECIPE);
    CHECK(strstr(err.msg, "needs lo_exp2 < hi_exp2") != NULL);
    tune_recipes_free(set);
  }
  CHECK(load_wide(dir, "{ \"x\", tensor = \"f16\", shape = { \"N\" }, init = { \"wide\", 0, 16 } }", &set, &err) == TUNE_ERECIPE);
  CHECK(strstr(err.msg, "hi_exp2 16 is past f16's largest finite values (at most 15)") != NULL);
  CHECK(load_wide(dir, "{ \"x\", tensor = \"i32\", shape = { \"N\" }, init = { \"wide\", 0, 4 } }", &set, &err) == TUNE_ERECIPE);
  CHECK(strstr(err.msg, "init \"wide\" is for floating-point tensors") != NULL);
  CHECK(load_wide(dir, "{ \"x\", tensor = \"f32\", shape = { \"N\" }, init = { \"normal\", 0, 1 }, adversarial = { \"wide\", 3, 3 } }",
                  &set, &err) == TUNE_ERECIPE);
  CHECK(strstr(err.msg, "adversarial {\"wide\", lo_exp2, hi_exp2} needs lo_exp2 < hi_exp2") != NULL);
  CHECK(load_wide(dir, "{ \"x\", tensor = \"e4m3\", shape = { \"N\" }, init = { \"normal\", 0, 1 }, adversarial = { \"wide\", -6, 9 } }",
                  &set, &err) == TUNE_ERECIPE);
  CHECK(strstr(err.msg, "at most 8") != NULL);
  remove_tree(dir);
}

static void test_inputs(void) {
  tune_arg_def d = {.name = "x", .is_tensor = 1, .dtype = TUNE_BF16, .init = TUNE_INIT_NORMAL, .init_a = 0, .init_b = 1};
  int64_t n = 5 << 20;
  unsigned short *a = malloc(n * 2), *b = malloc(n * 2);
  tune_inputs_fill(&d, n, 42, 3, a);
  tune_inputs_fill(&d, n, 42, 3, b);
  CHECK(memcmp(a, b, n * 2) == 0);          /* the same values for a seed */
  double sum = 0, sq = 0;
  int zeros = 0;
  for (int64_t i = 0; i < n; ++i) {
    double x = tune_inputs_get(TUNE_BF16, a, i);
    sum += x; sq += x * x; zeros += x == 0;
  }
  CHECK(fabs(sum / n) < 0.01 && fabs(sq / n - 1) < 0.02); /* normal(0, 1) */
  CHECK(zeros < n / 1000);
  tune_inputs_fill(&d, n, 43, 3, b);
  CHECK(memcmp(a, b, n * 2) != 0);          /* another seed, other values */
  /* permutation: every value once */
  tune_arg_def p = {.name = "t", .is_tensor = 1, .dtype = TUNE_I32, .init = TUNE_INIT_PERMUTATION};
  int perm[1000], seen[1000] = {0}, moved = 0;
  tune_inputs_fill(&p, 1000, 7, 0, perm);
  for (int i = 0; i < 1000; ++i) { if (perm[i] >= 0 && perm[i] < 1000) seen[perm[i]]++; moved += perm[i] != i; }
  int all_once = 1;
  for (int i = 0; i < 1000; ++i) all_once &= seen[i] == 1;
  CHECK(all_once && moved > 900);
  free(a);
  free(b);
}

static void test_ptxas_parse(void) {
  const char *log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'split' for 'sm_90a'\n"
      "ptxas info    : Function properties for split\n"
      "ptxas         .     48 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 48 bytes cumulative stack size, 1024 bytes smem\n"
      "ptxas info    : Compiling entry function 'combine' for 'sm_90a'\n"
      "ptxas info    : Function properties for combine\n"
      "ptxas         .     0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers\n";
  db_binary b;
  memset(&b, 0, sizeof b);
  tune_compile_parse_resources(log, &b);
  CHECK(b.registers == 168 && b.shared_bytes == 1024 && b.local_bytes == 48);
  CHECK(b.spill_stores == 16 && b.spill_loads == 20); /* summed over kernels */
  tune_compile_parse_resources("ptxas info    : Used 10 registers, used 0 barriers\n", &b);
  CHECK(b.registers == 10 && b.shared_bytes == 0 && b.spill_stores == 0);
}

static void test_protocol(void) {
  int fd[2];
  CHECK(pipe(fd) == 0);
  tune_err err;
  tune_err_clear(&err);
  json_t *m = json_pack("{s:s,s:i}", "op", "measure", "n", 7);
  unsigned char blob[5] = {1, 0, 2, 0, 3};
  CHECK(tune_msg_write(fd[1], m, blob, 5, &err) == TUNE_OK);
  json_decref(m);
  json_t *got = NULL;
  void *b = NULL;
  size_t bn = 0;
  CHECK(tune_msg_read(fd[0], &got, &b, &bn, 1000, &err) == TUNE_OK);
  CHECK(got && !strcmp(json_string_value(json_object_get(got, "op")), "measure") && bn == 5 && !memcmp(b, blob, 5));
  json_decref(got);
  free(b);
  /* nothing more: a read times out */
  tune_err_clear(&err);
  CHECK(tune_msg_read(fd[0], &got, &b, &bn, 50, &err) == TUNE_EWORKER && strstr(err.msg, "timeout"));
  /* the writer is gone: closed */
  close(fd[1]);
  tune_err_clear(&err);
  CHECK(tune_msg_read(fd[0], &got, &b, &bn, 1000, &err) == TUNE_EIO && strstr(err.msg, "closed"));
  close(fd[0]);
  /* an oversized frame is refused */
  CHECK(pipe(fd) == 0);
  unsigned hdr[2] = {TUNE_MSG_MAX_JSON + 1, 0};
  CHECK(write(fd[1], hdr, sizeof hdr) == sizeof hdr);
  tune_err_clear(&err);
  CHECK(tune_msg_read(fd[0], &got, &b, &bn, 1000, &err) == TUNE_EWORKER && strstr(err.msg, "oversized"));
  close(fd[0]);
  close(fd[1]);
}

/* A metric function's third argument: the integer inputs as the worker draws them for the seed
 * (tune_recipe_eval_problem_drawn), nil without one (tune_recipe_eval_problem). */
static void test_metrics_drawn(void) {
  char dir[] = "/tmp/tune_metrics_XXXXXX";
  scratch_project(dir);
  char p[4200];
  snprintf(p, sizeof p, "%s/recipes/m.lua", dir);
  write_text(p, "return { name = \"m\", template = \"templates/t.cuh\", kernel = \"k\", params = { { \"X\", { 1 } } },\n"
                "  problems = { { name = \"p\", N = 64 } }, launch = { grid = { 1, 1, 1 }, block = { 32, 1, 1 } },\n"
                "  args = { { \"lens\", tensor = \"i32\", shape = { \"N\" }, init = { \"randint\", 1, \"N * 100\" } },\n"
                "           { \"y\", tensor = \"f32\", shape = { \"N\" }, output = true } },\n"
                "  reference = { source = \"templates/t.cuh\", kernel = \"r\", grid = { 1, 1, 1 }, block = { 32, 1, 1 } },\n"
                "  tolerance = { rel_l2 = 1e-2, max_abs = 1 },\n"
                "  metrics = { bytes = function(p, d, inputs)\n"
                "                if not inputs then return -1 end\n"
                "                local s = 0; for _, v in ipairs(inputs.lens) do s = s + v end; return s end,\n"
                "              flops = \"N\" } }\n");
  tune_recipes *set = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_recipes_load(p, &set, &err) == TUNE_OK);
  if (!set) { fprintf(stderr, "%s\n", err.msg); remove_tree(dir); return; }
  tune_recipe *r = &set->r[0];
  tune_problem_setup plain, drawn;
  CHECK(tune_recipe_eval_problem(r, &r->problems[0], &test_device, &plain, &err) == TUNE_OK);
  CHECK(plain.bytes == -1 && plain.flops == 64);
  CHECK(tune_recipe_eval_problem_drawn(r, &r->problems[0], &test_device, 7, &drawn, &err) == TUNE_OK);
  int32_t v[64];
  tune_inputs_fill(&drawn.def[0], 64, 7, 0, v);
  double sum = 0;
  for (int i = 0; i < 64; ++i) sum += v[i];
  CHECK(drawn.bytes == sum && drawn.flops == 64 && sum > 64 && sum < 64 * 6400);
  tune_problem_setup other;
  CHECK(tune_recipe_eval_problem_drawn(r, &r->problems[0], &test_device, 8, &other, &err) == TUNE_OK);
  CHECK(other.bytes != drawn.bytes); /* another seed, other lengths */
  tune_recipes_free(set);
  remove_tree(dir);
}

int main(int argc, char **argv) {
  const char *src = getenv("SRC");
  if (!src) src = argc > 1 ? argv[1] : ".";
  test_recipe_copy(src);
  test_module_hashes();
  test_tolerance_honest();
  test_init_wide();
  test_metrics_drawn();
  test_inputs();
  test_ptxas_parse();
  test_protocol();
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
