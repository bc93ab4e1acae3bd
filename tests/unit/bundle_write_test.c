/* bundle_write_test.c: the bundle writer (tuner/bundle_write.c) and the expression stage before it
 * (bundle_expr.c) on a plan made by hand, no results database and no compiler: the copy recipe of
 * tests/fixtures/bundle/copy_expr.lua (geometry as expressions), two tuned problems with different
 * configs, stand-in cubins. The file is read back through libtunert: the tuned problems select
 * their variants exactly, an untuned size selects the nearest one with the geometry its expressions
 * give, and a failed write leaves no file. Needs SRC (the source tree). Exit status 0 when every
 * CHECK passed. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle_int.h"
#include "check.h"
#include "tunert.h"

static char dir[256];

/* dir/recipes/copy.lua (the fixture) beside dir/templates (the tree's): a recipe root. */
static int make_root(const char *src) {
  char from[1024], to[512], cmd[4096];
  snprintf(dir, sizeof dir, "/tmp/bundle_write_test.XXXXXX");
  if (!mkdtemp(dir)) return -1;
  snprintf(from, sizeof from, "%s/tests/fixtures/bundle/copy_expr.lua", src);
  snprintf(to, sizeof to, "%s/recipes", dir);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s' '%s/copy.lua' && ln -s '%s/templates' '%s/templates'", to, from, to,
           src, dir);
  return system(cmd);
}

static const int cfg_a[64] = {1, 1, 1, 0, 0}; /* VEC_BYTES 8, ILP 2, BLOCK 256, GRID_STRIDE false, MIN_BLOCKS 1 */
static const int cfg_b[64] = {2, 0, 0, 1, 0}; /* VEC_BYTES 16, ILP 1, BLOCK 128, GRID_STRIDE true: grid uses sm_count */

/* One tuned problem of the plan: its best result, as the databases would give it. */
static int add_entry(bstate *s, int problem, const int *vi, db_bundle_best *best, double median_ns, tune_err *err) {
  tune_recipe *r = s->fam[0].r;
  static char hashes[4][17];
  tune_recipe_config_hash(r, vi, hashes[s->n_entries]);
  *best = (db_bundle_best){.recipe = r->name, .problem = r->problems[problem].name, .problem_hash = r->problems[problem].hash,
                           .device = s->models[0].name, .arch = "sm_90a", .source_hash = r->source_hash,
                           .config_hash = hashes[s->n_entries], .created_at = "now", .median_ns = median_ns,
                           .min_ns = median_ns, .stddev_ns = 0, .samples = 5, .result_id = 100 + s->n_entries};
  bentry *be = &s->ent[s->n_entries++];
  be->p = &r->problems[problem];
  be->best = best;
  be->result = (db_bundle_result){.recipe_path = "recipes/copy.lua", .binary_key = "", .origin = "", .backend = "test",
                                  .seed = "1", .device = s->models[0].device};
  return bundle_entry_eval(s, be, vi, err) || bundle_entry_variant(s, be, vi, err);
}

/* Stand-ins for the compiled binaries: libtunert opened without a device never loads them. */
static int fake_binaries(bstate *s) {
  s->n_jobs = s->n_variants; /* one arch, no PTX */
  if (!(s->jobs = calloc((size_t)s->n_jobs, sizeof *s->jobs))) return -1;
  for (int v = 0; v < s->n_variants; ++v) {
    tune_compile_job *j = &s->jobs[v];
    j->arch = s->archs[0];
    j->bin.ok = 1;
    j->bin.cubin_size = 4;
    if (!(j->bin.cubin = malloc(4))) return -1;
    memcpy(j->bin.cubin, "\x7f" "ELF", 4);
    snprintf(j->bin.key, sizeof j->bin.key, "key%d", v);
    s->var[v].job0 = v;
    snprintf(s->var[v].lowered[0], sizeof s->var[0].lowered[0], "copy_kernel");
  }
  return 0;
}

static bstate *make_plan(tune_bundle_opts *o, db_bundle_best *bests, tune_err *err) {
  bstate *s = calloc(1, sizeof *s);
  char path[512];
  snprintf(path, sizeof path, "%s/recipes/copy.lua", dir);
  s->o = o;
  s->ent = calloc(4, sizeof *s->ent);
  s->var = calloc(4, sizeof *s->var);
  CHECK(tune_recipes_load(path, &s->sets[0], err) == 0);
  if (!s->sets[0]) return s;
  s->n_sets = 1;
  s->n_archs = 1;
  snprintf(s->archs[0], sizeof s->archs[0], "sm_90a");
  snprintf(s->db_list, sizeof s->db_list, "test.db");
  s->n_models = 1;
  snprintf(s->models[0].name, sizeof s->models[0].name, "synthetic test device");
  s->models[0].device = (db_device){.kind = "gpu", .name = "synthetic test device", .arch = "sm_90a", .sm_count = 132,
                          .smem_per_block_optin = 232448, .l2_bytes = 50 << 20, .uuid = "GPU-test", .driver = "test"};
  bfamily *f = &s->fam[s->n_families++];
  f->r = &s->sets[0]->r[0];
  snprintf(f->name, sizeof f->name, "%s", f->r->name);
  snprintf(f->recipe_file, sizeof f->recipe_file, "recipes/copy.lua");
  CHECK(bundle_family_layout(f, f->r, err) == 0);
  CHECK(add_entry(s, 0, cfg_a, &bests[0], 33000, err) == 0); /* 64MiB */
  CHECK(add_entry(s, 1, cfg_b, &bests[1], 126000, err) == 0); /* 256MiB */
  CHECK(bundle_add_fallbacks(s, err) == 0); /* the fixture's fallback: one entry (its defines are the same everywhere) */
  CHECK(s->n_entries == 3 && s->n_variants == 3 && s->ent[2].kind == BUNDLE_FALLBACK);
  CHECK(fake_binaries(s) == 0);
  for (int i = 0; i < s->n_entries; ++i) CHECK(bundle_check_entry(s, &s->ent[i], err) == 0);
  return s;
}

static void test_write_and_read_back(void) {
  tune_err err;
  tune_err_clear(&err);
  char out[512];
  snprintf(out, sizeof out, "%s/t.bundle", dir);
  tune_bundle_opts o = {.out = out, .no_ptx = 1, .jobs = 1, .quiet = 1};
  db_bundle_best bests[2];
  bstate *s = make_plan(&o, bests, &err);
  CHECK(s->ent[0].portable && s->ent[1].portable); /* every field of the fixture is an expression */
  CHECK(bundle_write(s, &err) == 0);
  CHECK(bundle_verify(s, &err) == 0);
  if (err.code) fprintf(stderr, "  %s\n", err.msg);
  tunert_options opt;
  tunert_options_init(&opt);
  opt.arch = "sm_90a";
  opt.flags = TUNERT_OPEN_NO_DEVICE;
  tunert_ctx *ctx = NULL;
  tunert_err te;
  char log[600];
  snprintf(log, sizeof log, "%s/untuned.jsonl", dir);
  setenv("TUNERT_LOG_UNTUNED", log, 1);
  CHECK(tunert_open(out, &opt, &ctx, &te) == 0);
  unsetenv("TUNERT_LOG_UNTUNED");
  if (ctx) {
    const tunert_selection *sel;
    tunert_selection_info info = {.struct_size = sizeof info};
    int64_t n64 = 16 * 1024 * 1024, n_near = 20 * 1000 * 1000;
    CHECK(tunert_select(ctx, "copy", &n64, 1, &sel, &te) == 0);
    tunert_selection_info_get(sel, &info);
    CHECK(info.exact && !strcmp(info.variant, s->var[s->ent[0].variant].params_json));
    CHECK(info.measured_ns == 33000 && !strcmp(info.measured_on, "synthetic test device"));
    CHECK(info.n_launches == 1 && info.launches[0].block[0] == 256);
    CHECK(info.launches[0].grid[0] == 16 * 1024 * 1024 / (256 * 2 * 2)); /* N / (BLOCK * ILP * VEC_BYTES / 4) */
    CHECK(info.n_args == 3 && info.args[0].numel == n64 && info.args[1].numel == n64);
    /* an untuned size: the nearest tuned problem's variant, the geometry from its expressions */
    CHECK(tunert_select(ctx, "copy", &n_near, 1, &sel, &te) == 0);
    tunert_selection_info_get(sel, &info);
    CHECK(!info.exact && !strcmp(info.tuned_problem, "64MiB"));
    CHECK(info.launches[0].grid[0] == (unsigned)((n_near + 1023) / 1024) && info.args[0].numel == n_near);
    /* the grid-stride entry: min(N / 512, sm_count * 16), sm_count the bundle's device_sm_count without a driver */
    int64_t n256 = 64 * 1024 * 1024;
    CHECK(tunert_select(ctx, "copy", &n256, 1, &sel, &te) == 0);
    tunert_selection_info_get(sel, &info);
    CHECK(info.exact && info.launches[0].grid[0] == 132 * 16);
    CHECK(!strcmp(info.kind, "tuned") && !info.vendor);
    /* an odd N: no tuned variant's whole vectors fit, the fallback (4-byte vectors) serves it */
    int64_t odd = 1000001;
    CHECK(tunert_select(ctx, "copy", &odd, 1, &sel, &te) == 0);
    tunert_selection_info_get(sel, &info);
    CHECK(!strcmp(info.kind, "fallback") && !info.exact && info.launches[0].grid[0] == (unsigned)((odd + 255) / 256));
    CHECK(strstr(info.reason, "fallback: ") == info.reason);
    tunert_family_info fi = {.struct_size = sizeof fi};
    CHECK(tunert_family_info_get(ctx, "copy", &fi, &te) == 0 && fi.n_problems == 2); /* the fallback is no tuned problem */
    CHECK(tunert_select(ctx, "copy", &odd, 1, &sel, &te) == 0); /* cached: not logged again */
    /* the ranked candidates: the fallback first (what tunert_select chose), then the rejected */
    tunert_candidate cand[4];
    cand[0].struct_size = sizeof cand[0];
    int nc = 0;
    CHECK(tunert_select_candidates(ctx, "copy", &odd, 1, cand, 4, &nc, &te) == 0 && nc == 3);
    CHECK(cand[0].ok && !strcmp(cand[0].kind, "fallback") && !cand[1].ok && !cand[2].ok);
    CHECK(strstr(cand[1].why, "requirement 1 of 'N % (VEC_BYTES // 4) == 0' is false") != NULL);
    CHECK(tunert_select_candidates(ctx, "copy", &n64, 1, cand, 4, &nc, &te) == 0 && nc == 3);
    CHECK(cand[0].ok && !strcmp(cand[0].kind, "tuned") && !strcmp(cand[0].tuned_problem, "64MiB") && cand[0].distance == 0);
    CHECK(cand[1].ok && !strcmp(cand[1].kind, "nearest") && cand[1].distance > 0 && cand[2].ok && !strcmp(cand[2].kind, "fallback"));
    CHECK(tunert_select_candidates(ctx, "copy", &n64, 1, cand, 1, &nc, &te) == 0 && nc == 1);
    int64_t big = 5000000000;
    int brc = tunert_select(ctx, "copy", &big, 1, &sel, &te);
    CHECK(brc == TUNERT_ENOVARIANT && strstr(te.msg, "outside the domain of copy: N <= 4294967296"));
    if (brc != TUNERT_ENOVARIANT) fprintf(stderr, "  %s\n", te.msg);
    CHECK(tunert_select(ctx, "copy", &big, 1, &sel, &te) == TUNERT_ENOVARIANT); /* a failure again: logged once */
    tunert_close(ctx);
    /* one line per distinct problem without an exact tuned entry */
    char text[2048] = "";
    FILE *fp = fopen(log, "r");
    size_t got = fp ? fread(text, 1, sizeof text - 1, fp) : 0;
    if (fp) fclose(fp);
    text[got] = 0;
    CHECK(!strcmp(text, "{\"family\":\"copy\",\"dims\":{\"N\":20000000},\"served_by\":\"nearest\"}\n"
                        "{\"family\":\"copy\",\"dims\":{\"N\":1000001},\"served_by\":\"fallback\"}\n"
                        "{\"family\":\"copy\",\"dims\":{\"N\":5000000000},\"served_by\":\"none\"}\n"));
    if (strstr(text, "5000000000") == NULL) fprintf(stderr, "  log: %s\n", text);
  }
  /* the same bundle recorded on a device of 100 SMs: the runtime's sm_count follows it */
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "sqlite3 '%s' \"update meta set value = '100' where key = 'device_sm_count'\"", out);
  CHECK(system(cmd) == 0);
  ctx = NULL;
  CHECK(tunert_open(out, &opt, &ctx, &te) == 0);
  if (ctx) {
    const tunert_selection *sel;
    tunert_selection_info info = {.struct_size = sizeof info};
    int64_t n256 = 64 * 1024 * 1024;
    CHECK(tunert_select(ctx, "copy", &n256, 1, &sel, &te) == 0);
    tunert_selection_info_get(sel, &info);
    CHECK(info.launches[0].grid[0] == 100 * 16);
    tunert_close(ctx);
  }
  bundle_state_free(s);
}

/* A vendor entry (a peer measured faster at the 64MiB problem): selected as kind vendor exactly
 * there, its kernel serving nearby problems; a launch runs none of the bundle's kernels: copy is
 * no GEMM cuBLASLt runs, and an attention library's entry goes back to the caller, both
 * TUNERT_EVENDOR with or without a driver. */
static void test_vendor_entry(void) {
  tune_err err;
  tune_err_clear(&err);
  char out[512];
  snprintf(out, sizeof out, "%s/v.bundle", dir);
  tune_bundle_opts o = {.out = out, .no_ptx = 1, .jobs = 1, .quiet = 1};
  db_bundle_best bests[2];
  bstate *s = make_plan(&o, bests, &err);
  s->ent[0].kind = BUNDLE_VENDOR;
  snprintf(s->ent[0].vendor, sizeof s->ent[0].vendor, "cublaslt");
  s->ent[0].vendor_ns = 30000;
  CHECK(bundle_write(s, &err) == 0);
  if (err.code) fprintf(stderr, "  %s\n", err.msg);
  tunert_options opt;
  tunert_options_init(&opt);
  opt.arch = "sm_90a";
  opt.flags = TUNERT_OPEN_NO_DEVICE;
  tunert_ctx *ctx = NULL;
  tunert_err te;
  CHECK(tunert_open(out, &opt, &ctx, &te) == 0);
  if (ctx) {
    const tunert_selection *sel;
    tunert_selection_info info = {.struct_size = sizeof info};
    int64_t n64 = 16 * 1024 * 1024, n_near = 20 * 1000 * 1000;
    CHECK(tunert_select(ctx, "copy", &n64, 1, &sel, &te) == 0);
    tunert_selection_info_get(sel, &info);
    CHECK(info.exact && !strcmp(info.kind, "vendor") && info.vendor && !strcmp(info.vendor, "cublaslt"));
    CHECK(!strcmp(info.variant, s->var[s->ent[0].variant].params_json)); /* the kernel stays, for older readers */
    CHECK(strstr(info.reason, "vendor: ") == info.reason && strstr(info.reason, "cublaslt (30.00 us)"));
    tunert_arg args[3] = {tunert_arg_devptr(0x1000), tunert_arg_devptr(0x2000), tunert_arg_auto()};
    int rc = tunert_launch(ctx, sel, NULL, args, 3, &te);
    CHECK(rc == TUNERT_EVENDOR && strstr(te.msg, "vendor entry (cublaslt): call your own path (not a GEMM"));
    CHECK(!strcmp(tunert_status_name(TUNERT_EVENDOR), "vendor entry"));
    CHECK(tunert_select(ctx, "copy", &n_near, 1, &sel, &te) == 0);
    tunert_selection_info_get(sel, &info);
    CHECK(!info.exact && !strcmp(info.kind, "nearest") && !info.vendor && !strcmp(info.tuned_problem, "64MiB"));
    tunert_close(ctx);
  }
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "sqlite3 '%s' \"update entries set vendor = 'sdpa' where kind = 'vendor'\"", out);
  CHECK(system(cmd) == 0);
  ctx = NULL;
  CHECK(tunert_open(out, &opt, &ctx, &te) == 0);
  if (ctx) {
    const tunert_selection *sel;
    int64_t n64 = 16 * 1024 * 1024;
    tunert_arg args[3] = {tunert_arg_devptr(0x1000), tunert_arg_devptr(0x2000), tunert_arg_auto()};
    CHECK(tunert_select(ctx, "copy", &n64, 1, &sel, &te) == 0);
    CHECK(tunert_launch(ctx, sel, NULL, args, 3, &te) == TUNERT_EVENDOR && strstr(te.msg, "vendor entry (sdpa): call your own path"));
    tunert_close(ctx);
  }
  bundle_state_free(s);
}

static void test_failed_write_leaves_nothing(void) {
  tune_err err;
  tune_err_clear(&err);
  char out[512];
  snprintf(out, sizeof out, "%s/nodir/t.bundle", dir); /* a directory that does not exist */
  tune_bundle_opts o = {.out = out, .no_ptx = 1, .jobs = 1, .quiet = 1};
  db_bundle_best bests[2];
  bstate *s = make_plan(&o, bests, &err);
  CHECK(bundle_write(s, &err) != 0 && err.msg[0]);
  CHECK(access(out, F_OK) != 0);
  bundle_state_free(s);
}

/* The fixture with one substitution (sed expression) loads with an error containing want. */
static void recipe_key_error(const char *sed_expr, const char *want) {
  char path[512], cmd[2048];
  snprintf(path, sizeof path, "%s/recipes/bad.lua", dir);
  snprintf(cmd, sizeof cmd, "sed -e '%s' '%s/recipes/copy.lua' > '%s'", sed_expr, dir, path);
  CHECK(system(cmd) == 0);
  tune_recipes *set = NULL;
  tune_err err;
  tune_err_clear(&err);
  int rc = tune_recipes_load(path, &set, &err);
  CHECK(rc != 0 && strstr(err.msg, want));
  if (rc == 0 || !strstr(err.msg, want)) fprintf(stderr, "  want '%s', got: %s\n", want, rc ? err.msg : "(loaded)");
  tune_recipes_free(set);
}

/* domain and fallback (docs/runtime.md): what the loader refuses, and what it keeps. */
static void test_recipe_keys(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/recipes/copy.lua", dir);
  tune_recipes *set = NULL;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_recipes_load(path, &set, &err) == 0);
  if (set) {
    const tune_recipe *r = &set->r[0];
    CHECK(r->n_domain == 2 && r->has_fallback);
    CHECK(r->fallback_vi[0] == 0 && r->fallback_vi[2] == 1); /* VEC_BYTES 4, BLOCK 256 */
    char dom[256];
    tune_recipe_domain_text(&set->r[0], dom, sizeof dom);
    CHECK(!strcmp(dom, "N >= 1, N <= 4294967296"));
    tune_recipes_free(set);
  }
  recipe_key_error("s/ILP = 1, BLOCK = 256/ILP = 1, BLOCKS = 256/", "fallback: unknown param 'BLOCKS'");
  recipe_key_error("s/MIN_BLOCKS = 1 }/}/", "fallback: missing param MIN_BLOCKS");
  recipe_key_error("s/ILP = 1, BLOCK = 256/ILP = 3, BLOCK = 256/", "fallback: ILP = 3 is not one of its values");
  recipe_key_error("s/VEC_BYTES = 4, ILP = 1, BLOCK = 256/VEC_BYTES = 16, ILP = 8, BLOCK = 1024/",
                   "fallback violates constraint 2: BLOCK * ILP * VEC_BYTES <= 64 * 1024");
  recipe_key_error("s/\"N <= 4294967296\"/\"N <= 1000\"/", "problem 64MiB is outside its own domain: \"N <= 1000\" is false");
  recipe_key_error("s/\"N >= 1\"/\"N >= BLOCK\"/", "domain[1]");
  recipe_key_error("s/domain = {/domain = 3, x = {/", "domain");
}

int main(void) {
  const char *src = getenv("SRC");
  if (!src || make_root(src)) { fprintf(stderr, "bundle_write_test: set SRC to the source tree\n"); return 1; }
  test_recipe_keys();
  test_write_and_read_back();
  test_vendor_entry();
  test_failed_write_leaves_nothing();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) {}
  printf("bundle_write_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
