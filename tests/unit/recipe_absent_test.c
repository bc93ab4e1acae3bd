/* recipe_absent_test.c: a param's `absent` value (docs/recipes.md, "Adding a parameter"): a config
 * at it keeps the hash it had before the param existed (its JSON names the param), the define is
 * still passed, a
 * stored config without the key takes it (tune_param_index_in), the loader's errors; then the
 * recorded gemm.fp8 database, made before PART_BUFFERS, still warm-starts recipes/gemm/fp8.lua.
 * CPU only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "problem_space.h"
#include "recipe.h"
#include "search.h"
#include "warm_start.h"

#include "check.h"
#include "recipe_fixture.h"

static char dir[256];

/* dir/recipes/<name>.lua: a recipe with the given params list (text). */
static void write_recipe(const char *name, const char *params) {
  char p[512];
  snprintf(p, sizeof p, "%s/recipes/%s.lua", dir, name);
  FILE *f = fopen(p, "w");
  if (!f) { perror(p); exit(1); }
  fprintf(f,
          "return {\n  name = \"a\",\n  template = \"templates/k.cuh\",\n  kernel = \"k\",\n"
          "  params = %s,\n"
          "  problems = { { name = \"n64\", N = 64 } },\n"
          "  launch = { grid = { 1, 1, 1 }, block = { 32, 1, 1 } },\n"
          "  args = { { \"out\", tensor = \"i32\", shape = { \"N\" }, output = true } },\n"
          "  reference = { source = \"templates/k.cuh\", kernel = \"r\", grid = { 1, 1, 1 }, block = { 32, 1, 1 } },\n"
          "  tolerance = { rel_l2 = 0, max_abs = 0 },\n}\n",
          params);
  fclose(f);
}

/* Load dir/recipes/<name>.lua with params; NULL (the message in msg) when it fails. */
static tune_recipes *load(const char *name, const char *params, char *msg, size_t n) {
  write_recipe(name, params);
  char p[512];
  snprintf(p, sizeof p, "%s/recipes/%s.lua", dir, name);
  tune_recipes *set = NULL;
  tune_err err;
  tune_err_clear(&err);
  if (tune_recipes_load(p, &set, &err)) {
    snprintf(msg, n, "%s", err.msg);
    tune_recipes_free(set);
    return NULL;
  }
  msg[0] = 0;
  return set;
}

static int same_hash(const tune_recipe *a, const int *va, const tune_recipe *b, const int *vb) {
  char ha[17], hb[17];
  tune_recipe_config_hash(a, va, ha);
  tune_recipe_config_hash(b, vb, hb);
  return !strcmp(ha, hb);
}

static int has_define(const tune_variant *v, const char *d) {
  for (int i = 0; i < v->n_defines; ++i)
    if (!strcmp(v->defines[i], d)) return 1;
  return 0;
}

/* (a) the hash at the absent value is that of the recipe without the param; the JSON names it. */
static void test_identity(void) {
  char m[2048];
  tune_recipes *old = load("old", "{ { \"CL\", { 2, 4 } }, { \"R\", { 1, 8 } } }", m, sizeof m);
  /* the new param in the middle, its absent value second among its values */
  tune_recipes *mid = load("mid", "{ { \"CL\", { 2, 4 } }, { \"PB\", { 2, 1 }, absent = 1 }, { \"R\", { 1, 8 } } }", m, sizeof m);
  /* and first: no separator left before the next key */
  tune_recipes *first = load("first", "{ { \"PB\", { 1, 2 }, absent = 1 }, { \"CL\", { 2, 4 } }, { \"R\", { 1, 8 } } }", m, sizeof m);
  CHECK(old && mid && first);
  if (!old || !mid || !first) { fprintf(stderr, "  %s\n", m); goto done; }
  const tune_recipe *o = &old->r[0], *md = &mid->r[0], *fs = &first->r[0];
  CHECK(o->params[0].absent == -1 && o->params[1].absent == -1);
  CHECK(md->params[1].absent == 1 && md->params[0].absent == -1 && md->params[2].absent == -1);
  CHECK(fs->params[0].absent == 0);
  for (int cl = 0; cl < 2; ++cl)
    for (int rr = 0; rr < 2; ++rr) {
      int vo[2] = {cl, rr}, vm_abs[3] = {cl, 1, rr}, vm_other[3] = {cl, 0, rr};
      int vf_abs[3] = {0, cl, rr}, vf_other[3] = {1, cl, rr};
      CHECK(same_hash(o, vo, md, vm_abs));
      CHECK(same_hash(o, vo, fs, vf_abs));
      CHECK(!same_hash(o, vo, md, vm_other));
      CHECK(!same_hash(o, vo, fs, vf_other));
    }
  char json[512];
  int v_abs[3] = {1, 1, 0}, v_other[3] = {1, 0, 0}, f_abs[3] = {0, 1, 1}, f_other[3] = {1, 1, 1};
  tune_recipe_config_json(md, v_abs, json, sizeof json);
  CHECK(!strcmp(json, "{\"CL\":4,\"PB\":1,\"R\":1}"));
  tune_recipe_config_json(md, v_other, json, sizeof json);
  CHECK(!strcmp(json, "{\"CL\":4,\"PB\":2,\"R\":1}"));
  tune_recipe_config_json(fs, f_abs, json, sizeof json);
  CHECK(!strcmp(json, "{\"PB\":1,\"CL\":4,\"R\":8}"));
  tune_recipe_config_json(fs, f_other, json, sizeof json);
  CHECK(!strcmp(json, "{\"PB\":2,\"CL\":4,\"R\":8}"));
  /* the template still gets the define at the absent value */
  tune_device_facts d = {.sm_count = 132, .smem_per_block = 232448, .l2_bytes = 50 << 20};
  snprintf(d.arch, sizeof d.arch, "sm_90a");
  tune_variant v;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_recipe_eval_variant(&mid->r[0], v_abs, &mid->r[0].problems[0], &d, &v, &err) == TUNE_OK);
  CHECK(has_define(&v, "-DPB=1") && has_define(&v, "-DCL=4") && has_define(&v, "-DR=1"));
done:
  tune_recipes_free(old);
  tune_recipes_free(mid);
  tune_recipes_free(first);
}

/* (b) a stored config's JSON back to value indexes. */
static void test_index_in(void) {
  char m[2048];
  tune_recipes *set = load("idx", "{ { \"CL\", { 2, 4 } }, { \"PB\", { 2, 1 }, absent = 1 }, { \"S\", { \"x\", \"y\" } } }",
                           m, sizeof m);
  CHECK(set != NULL);
  if (!set) { fprintf(stderr, "  %s\n", m); return; }
  const tune_recipe *r = &set->r[0];
  json_t *before = json_loads("{\"CL\":4,\"S\":\"y\"}", 0, NULL);     /* recorded before PB */
  json_t *at = json_loads("{\"CL\":2,\"PB\":1,\"S\":\"x\"}", 0, NULL);  /* the key given at the absent value */
  json_t *other = json_loads("{\"CL\":2,\"PB\":2}", 0, NULL);
  json_t *bad = json_loads("{\"CL\":3,\"PB\":7,\"S\":1}", 0, NULL);
  CHECK(tune_param_index_in(&r->params[1], before) == 1);
  CHECK(tune_param_index_in(&r->params[0], before) == 1 && tune_param_index_in(&r->params[2], before) == 1);
  CHECK(tune_param_index_in(&r->params[1], at) == 1 && tune_param_index_in(&r->params[2], at) == 0);
  CHECK(tune_param_index_in(&r->params[1], other) == 0);
  CHECK(tune_param_index_in(&r->params[2], other) == -1); /* missing, no absent value */
  CHECK(tune_param_index_in(&r->params[0], bad) == -1 && tune_param_index_in(&r->params[1], bad) == -1 &&
        tune_param_index_in(&r->params[2], bad) == -1);   /* present, none of the values */
  CHECK(tune_param_index_in(&r->params[1], NULL) == 1 && tune_param_index_in(&r->params[0], NULL) == -1);
  json_decref(before);
  json_decref(at);
  json_decref(other);
  json_decref(bad);
  tune_recipes_free(set);
  /* the map form has no place for it */
  set = load("map", "{ CL = { 2, 4 }, PB = { 1, 2 } }", m, sizeof m);
  CHECK(set && set->r[0].params[0].absent == -1 && set->r[0].params[1].absent == -1);
  tune_recipes_free(set);
}

static int fails_with(const char *params, const char *want) {
  char m[2048];
  tune_recipes *set = load("bad", params, m, sizeof m);
  tune_recipes_free(set);
  if (set || !strstr(m, want)) {
    fprintf(stderr, "  want an error with '%s'\n  got '%s'\n", want, set ? "(loaded)" : m);
    return 0;
  }
  return 1;
}

/* (c) the loader's errors. */
static void test_errors(void) {
  CHECK(fails_with("{ { \"CL\", { 2, 4 } }, { \"PB\", { 1, 2 }, absent = 3 } }", "bad.lua: param PB: absent = 3 is not one of its values"));
  CHECK(fails_with("{ { \"PB\", { 1, 2 }, absent = true } }", "bad.lua: param PB: absent = true is not one of its values"));
  CHECK(fails_with("{ { \"PB\", { 1, 2 }, absent = \"1\" } }", "bad.lua: param PB: absent = '1' is not one of its values"));
  CHECK(fails_with("{ { \"PB\", { 1, 2 }, absent = 1.5 } }", "bad.lua: param PB: absent = 1.5 is not one of its values"));
  CHECK(fails_with("{ { \"PB\", { 1, 2 }, absent = { 1 } } }", "params[1].absent must be"));
  CHECK(fails_with("{ { \"PB\", { 1, 2 }, absnt = 1 } }", "params[1].absnt: unknown field (did you mean absent?)"));
}

/* The configs of PART_BUFFERS 2 (index 1): a space none of the recorded configs is in. */
static int keep_pb2(const void *ctx, const tune_recipe *r, const int *vi, int *keep, tune_err *err) {
  (void)r;
  (void)err;
  *keep = vi[*(const int *)ctx] == 1;
  return TUNE_OK;
}

/* The warm start's points from db for r's first problem in space sp: n > 0, each at PART_BUFFERS 1. */
static void warm_points_at_pb1(db_conn *db, const tune_recipe *r, const search_space *sp, int pb) {
  uint64_t *pts = NULL;
  double *dist = NULL;
  int n = 0;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_warm_bests_db(db, r, "NVIDIA H100 80GB HBM3", "sm_90a", &r->problems[0], sp, &pts, &dist, &n, &err) == TUNE_OK);
  CHECK(n > 0);
  for (int k = 0; k < n; ++k) {
    int vi[SEARCH_MAX_PARAMS];
    search_point_decode(sp, pts[k], vi);
    CHECK(vi[pb] == 0);
  }
  free(pts);
  free(dist);
}

/* The recorded gemm.fp8 database holds configs without PART_BUFFERS: they are still configs of
 * recipes/gemm/fp8.lua (at PART_BUFFERS 1), so a warm start of one problem finds the others' bests:
 * by their hash in the recipe's space, and by their parameters in a space that lacks them. */
static void test_recorded_fp8(const char *src) {
  char path[4096];
  snprintf(path, sizeof path, "%s/recipes/gemm/fp8.lua", src);
  tune_recipes *set = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_recipes_load(path, &set, &err) == TUNE_OK);
  if (!set) { fprintf(stderr, "  %s\n", err.msg); return; }
  const tune_recipe *r = &set->r[0];
  int pb = -1;
  for (int i = 0; i < r->n_params; ++i)
    if (!strcmp(r->params[i].name, "PART_BUFFERS")) pb = i;
  CHECK(!strcmp(r->name, "gemm.fp8") && pb >= 0 && pb < r->n_params && r->params[pb].absent == 0);
  int nv[SEARCH_MAX_PARAMS];
  for (int i = 0; i < r->n_params; ++i) nv[i] = r->params[i].n_values;
  search_space_def def = {.n_params = r->n_params, .n_values = nv, .n_constraints = r->n_constraints,
                          .check = tune_recipe_check, .ctx = (void *)r};
  search_space *sp = NULL;
  CHECK(search_space_enumerate(&def, &sp, &err) == TUNE_OK);
  snprintf(path, sizeof path, "%s/data/recorded/gemm.fp8.db", src);
  db_conn *db = NULL;
  CHECK(db_open(path, 1, &db, &err) == TUNE_OK);
  search_space *pb2 = NULL;
  if (sp) CHECK(tune_space_cut(r, sp, keep_pb2, &pb, &pb2, &err) == TUNE_OK);
  if (db && sp) warm_points_at_pb1(db, r, sp, pb);
  if (db && pb2) warm_points_at_pb1(db, r, pb2, pb);
  search_space_free(pb2);
  db_close(db);
  search_space_free(sp);
  tune_recipes_free(set);
}

int main(void) {
  if (fixture_project(dir, sizeof dir, "recipe_absent_test")) return 1;
  test_identity();
  test_index_in();
  test_errors();
  const char *src = getenv("SRC");
  CHECK(src != NULL); /* ctest sets it: the recorded database part must run */
  if (src) test_recorded_fp8(src);
  fixture_remove(dir);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
