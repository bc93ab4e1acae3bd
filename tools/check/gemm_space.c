/* gemm_space.c: how many variants a recipe measures per problem, without a GPU or a compiler: the
 * constrained space of each recipe of the file, then applies() and requires per problem (the configs
 * a `tune run` would compile and time), with the number that use the TMA producer (-DUSE_TMA=1).
 * Written to size recipes/gemm.lua for one device call; works for any recipe.
 * Usage: gemm_space RECIPE.lua [PROBLEM]   (PROBLEM: also list its configs, launch and tensor maps) */
#include <stdio.h>
#include <string.h>

#include "recipe.h"
#include "search.h"

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: gemm_space RECIPE.lua [PROBLEM]\n"); return 2; }
  tune_err err;
  tune_err_clear(&err);
  tune_recipes *set = NULL;
  if (tune_recipes_load(argv[1], &set, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
  const char *list = argc > 2 ? argv[2] : NULL;
  /* an H200 as the worker reports it (only launch geometry reads these) */
  tune_device_facts d = {.sm_count = 132, .smem_per_block = 232448, .l2_bytes = 50331648};
  snprintf(d.arch, sizeof d.arch, "sm_90a");
  long total = 0;
  int rc = 0;
  for (int k = 0; k < set->n && !rc; ++k) {
    tune_recipe *r = &set->r[k];
    int nv[SEARCH_MAX_PARAMS];
    for (int i = 0; i < r->n_params; ++i) nv[i] = r->params[i].n_values;
    search_space_def def = {.n_params = r->n_params, .n_values = nv, .n_constraints = r->n_constraints,
                            .check = tune_recipe_check, .ctx = r};
    search_space *sp = NULL;
    if (search_space_enumerate(&def, &sp, &err)) { fprintf(stderr, "%s\n", err.msg); rc = 1; break; }
    printf("%s: %zu configs satisfy the constraints\n", r->name, sp->n_points);
    for (int p = 0; p < r->n_problems && !rc; ++p) {
      int n = 0, n_tma = 0;
      for (size_t i = 0; i < sp->n_points; ++i) {
        int vi[SEARCH_MAX_PARAMS];
        tune_variant v;
        search_point_decode(sp, sp->points[i], vi);
        if (tune_recipe_eval_variant(r, vi, &r->problems[p], &d, &v, &err)) { fprintf(stderr, "%s\n", err.msg); rc = 1; break; }
        if (v.skip) continue;
        ++n;
        for (int j = 0; j < v.n_defines; ++j) n_tma += !strcmp(v.defines[j], "-DUSE_TMA=1");
        if (!list || strcmp(list, r->problems[p].name)) continue;
        char js[4096];
        tune_recipe_config_json(r, vi, js, sizeof js);
        printf("  %s grid %u,%u block %u smem %u", js, v.launch[0].grid[0], v.launch[0].grid[1], v.launch[0].block[0], v.launch[0].shared);
        for (int a = 0; a < r->n_args; ++a)
          if (v.tmap[a].rank == 2) printf(" %s box {%u, %u}", r->args[a].name, v.tmap[a].box[0], v.tmap[a].box[1]);
        for (int l = 0; l < v.n_launches; ++l) { /* a cluster, and the steps after the first (0 blocks: not launched) */
          const tune_launch *st = &v.launch[l];
          if (l > 0) printf(" step %d grid %u,%u,%u", l + 1, st->grid[0], st->grid[1], st->grid[2]);
          if (st->cluster[0] * st->cluster[1] * st->cluster[2] > 1)
            printf(" cluster %u,%u,%u", st->cluster[0], st->cluster[1], st->cluster[2]);
        }
        printf("\n");
      }
      printf("  %-28s %5d variants (%d TMA)\n", r->problems[p].name, n, n_tma);
      total += n;
    }
    search_space_free(sp);
  }
  printf("total %ld variants\n", total);
  tune_recipes_free(set);
  return rc;
}
