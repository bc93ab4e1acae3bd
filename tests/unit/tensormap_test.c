/* tensormap_test.c: tensor-map args on the CPU: the fixture recipe's evaluation (dims from the
 * tensor's shape, packed strides, box per config), the wire form, and the checks the worker makes
 * before cuTensorMapEncodeTiled. docs/tensormap-args.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe.h"
#include "search.h"
#include "tensormap.h"

#include "check.h"

static void test_fixture(const char *src) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/fixtures/recipes/tensormap.lua", src);
  tune_recipes *set = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_recipes_load(path, &set, &err) == TUNE_OK);
  if (!set) { fprintf(stderr, "%s\n", err.msg); return; }
  tune_recipe *r = &set->r[0];
  CHECK(r->n_args == 8);
  CHECK(r->args[2].scratch && r->args[2].zero && !r->args[0].zero);
  CHECK(r->args[6].is_tmap && r->args[7].is_tmap && !r->args[6].is_tensor);
  CHECK(r->args[6].tmap.tensor == 0 && r->args[6].dtype == TUNE_BF16);
  CHECK(r->args[6].tmap.swizzle == 0 && r->args[6].tmap.l2_promotion == 256 && !r->args[6].tmap.oob_nan);
  CHECK(r->args[7].tmap.swizzle == 128 && r->args[7].tmap.l2_promotion == 128);
  tune_device_facts d = {.sm_count = 132, .smem_per_block = 232448, .l2_bytes = 50 << 20};
  strcpy(d.arch, "sm_90a");
  int vi[2] = {1, 1}; /* SWZ = 128, BOX_R = 32 */
  tune_variant v;
  CHECK(tune_recipe_eval_variant(r, vi, &r->problems[1], &d, &v, &err) == TUNE_OK);
  for (int a = 6; a < 8; ++a) {
    CHECK(v.tmap[a].rank == 2);
    CHECK(v.tmap[a].dims[0] == 384 && v.tmap[a].dims[1] == 500); /* shape {R, C} reversed */
    CHECK(v.tmap[a].strides[0] == 384 * 2);
    CHECK(v.tmap[a].box[0] == 64 && v.tmap[a].box[1] == 32);
  }
  CHECK(v.tmap[0].rank == 0 && v.tmap[5].rank == 0);
  CHECK(v.scratch_numel[2] == 1);
  /* wire form round trip */
  json_t *j = tune_tmap_var_json(&v.tmap[7]), *k = tune_tmap_def_json(&r->args[7].tmap);
  tune_tmap_var v2;
  tune_tmap_def d2;
  CHECK(tune_tmap_var_from_json(j, &v2) == 0 && !memcmp(&v2, &v.tmap[7], sizeof v2));
  CHECK(tune_tmap_def_from_json(k, &d2) == 0 && !memcmp(&d2, &r->args[7].tmap, sizeof d2));
  json_decref(j);
  json_decref(k);
  j = tune_tmap_var_json(&v.tmap[0]);
  CHECK(json_is_null(j) && tune_tmap_var_from_json(j, &v2) == 0 && v2.rank == 0);
  json_decref(j);
  /* the worker's checks */
  char why[256];
  const size_t bytes = 500 * 384 * 2;
  tune_tmap_var t = v.tmap[7];
  const tune_tmap_def *sw = &r->args[7].tmap, *plain = &r->args[6].tmap;
  CHECK(tune_tmap_check(sw, &t, 2, 0x10000, bytes, why, sizeof why) == 0);
  CHECK(tune_tmap_check(sw, &t, 2, 0x10008, bytes, why, sizeof why) != 0 && strstr(why, "16-byte aligned"));
  CHECK(tune_tmap_check(sw, &t, 2, 0x10000, bytes - 2, why, sizeof why) != 0 && strstr(why, "reaches byte"));
  t.box[1] = 257;
  CHECK(tune_tmap_check(sw, &t, 2, 0x10000, bytes, why, sizeof why) != 0 && strstr(why, "box 2 is 257"));
  t = v.tmap[7];
  t.box[0] = 128; /* 256 bytes: over the 128-byte swizzle span, fine without swizzle */
  CHECK(tune_tmap_check(sw, &t, 2, 0x10000, bytes, why, sizeof why) != 0 && strstr(why, "swizzle span"));
  CHECK(tune_tmap_check(plain, &t, 2, 0x10000, bytes, why, sizeof why) == 0);
  t.box[0] = 4; /* 8 bytes */
  CHECK(tune_tmap_check(plain, &t, 2, 0x10000, bytes, why, sizeof why) != 0 && strstr(why, "multiple of 16 bytes"));
  t = v.tmap[7];
  t.strides[0] = 770;
  CHECK(tune_tmap_check(plain, &t, 2, 0x10000, 1 << 20, why, sizeof why) != 0 && strstr(why, "stride 2 is 770"));
  tune_recipes_free(set);
}

int main(void) {
  const char *src = getenv("SRC");
  test_fixture(src ? src : ".");
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
