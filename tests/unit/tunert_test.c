/* tunert_test.c: unit tests of libtunert on synthetic bundles written with
 * db/db_bundle.h: the selection policy (exact, nearest in log scale,
 * requirements, compile-time defines, exact-only entries, architectures), the
 * selection cache (same pointer, growth, threads), argument layout, launch
 * without a driver, and bundles that are corrupt, truncated, of another
 * version or not bundles at all (a clear error, never a crash), the
 * allocator (balanced, every allocation failure handled), and opening from
 * memory (the file's bytes, truncated buffers, garbage).
 * Prints "N passed, M failed"; exits nonzero on any failure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db_bundle.h"
#include "tunert.h"
#include "tunert_format.h"

static int n_pass, n_fail;
#define CHECK(c)                                                                 \
  do {                                                                           \
    if (c) n_pass++;                                                             \
    else { n_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); } \
  } while (0)
#define CHECK_MSG(c, m)                                                          \
  do {                                                                           \
    if (c) n_pass++;                                                             \
    else { n_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #c, (m)); } \
  } while (0)

static char dir[256];
static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* ---- a synthetic bundle ------------------------------------------------------------------
 * family "attn": dims L, S, causal (sorted by name), params BM, PACK.
 *   e1: BM=64  at L=1024 S=512  causal  portable, requires S % BM == 0, define causal = 1
 *   e2: BM=128 at L=4096 S=4096 causal  portable, same requirements
 *   e3: BM=64  at L=100  S=64   !causal exact-only
 * family "copy": dims N; one exact-only entry. */
typedef struct mk {
  int format_major;
  const char *grid_e1;   /* override e1's grid text */
  int v2_ptx80;          /* give variant 2 a compute_80 PTX (JIT fallback) */
  int n_extra;           /* extra portable entries (cache growth and open time) */
} mk;

static int make_bundle(const char *path, const mk *m) {
  tune_err err;
  tune_err_clear(&err);
  db_bundle_writer *w = NULL;
  unlink(path);
  if (db_bundle_create(path, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
  int rc = 0;
  if (m->format_major) {
    char v[16];
    snprintf(v, sizeof v, "%d", m->format_major);
    rc |= db_bundle_meta(w, "format_major", v, &err);
  }
  rc |= db_bundle_meta(w, "device_name", "Test GPU", &err);
  rc |= db_bundle_meta(w, "archs", "sm_90a,compute_90a", &err);
  db_bundle_family fa = {"attn", "abc", "recipes/attn.lua", "return {}", "templates/attn.cuh", "L:int,S:int,causal:bool", "BM:int,PACK:bool", NULL};
  int64_t fid, cid, v1, v2, v3, eid;
  rc |= db_bundle_family_put(w, &fa, &fid, &err);
  rc |= db_bundle_arg_put(w, fid, 0, "x", "input", "f32", &err);
  rc |= db_bundle_arg_put(w, fid, 1, "y", "output", "bf16", &err);
  rc |= db_bundle_arg_put(w, fid, 2, "ws", "scratch", "f32", &err);
  rc |= db_bundle_arg_put(w, fid, 3, "n", "scalar", "i32", &err);
  rc |= db_bundle_arg_put(w, fid, 4, "scale", "scalar", "f32", &err);
  db_bundle_variant va = {fid, "h1", "{\"BM\":64,\"PACK\":true}", "64, true", "-DBM=64 -DPACK=1", "attn_a attn_b"};
  rc |= db_bundle_variant_put(w, &va, &v1, &err);
  db_bundle_variant vb = {fid, "h2", "{\"BM\":128,\"PACK\":false}", "128, false", "-DBM=128 -DPACK=0", "attn_a attn_b"};
  rc |= db_bundle_variant_put(w, &vb, &v2, &err);
  static unsigned char blob[3000];
  for (size_t i = 0; i < sizeof blob; ++i) blob[i] = (unsigned char)(i * 7 + 3);
  int64_t vs[2] = {v1, v2};
  for (int i = 0; i < 2; ++i) {
    db_bundle_binary b = {vs[i], "cubin", "sm_90a", "k", blob, sizeof blob, 40, 0, 0, 0, 0};
    rc |= db_bundle_binary_put(w, &b, &err);
    db_bundle_binary p = {vs[i], "ptx", (i == 1 && m->v2_ptx80) ? "compute_80" : "compute_90a", "-", "// ptx", 6, -1, -1, -1, -1, -1};
    rc |= db_bundle_binary_put(w, &p, &err);
  }
  struct { int64_t v; const char *name, *dims, *json; int portable; double ns; } es[3] = {
      {v1, "l1024s512c", "1024, 512, true", "{\"L\":1024,\"S\":512,\"causal\":true}", 1, 100e3},
      {v2, "l4096s4096c", "4096, 4096, true", "{\"L\":4096,\"S\":4096,\"causal\":true}", 1, 900e3},
      {v1, "l100s64", "100, 64, false", "{\"L\":100,\"S\":64,\"causal\":false}", 0, 5e3}};
  for (int i = 0; i < 3; ++i) {
    db_bundle_entry e = {.family_id = fid, .variant_id = es[i].v, .problem_name = es[i].name, .problem_hash = "ph",
                         .dims = es[i].dims, .dims_json = es[i].json, .portable = es[i].portable,
                         .exact_why = es[i].portable ? "" : "launch grid: a Lua function (recipes/attn.lua:9)",
                         .requires = "S % BM == 0, L >= 1", .define_exprs = "causal", .define_values = i == 2 ? "0" : "1",
                         .median_ns = es[i].ns, .device_name = "Test GPU", .same_binary = 1};
    rc |= db_bundle_entry_put(w, &e, &eid, &err);
    const char *grid = i == 0 && m->grid_e1 ? m->grid_e1 : es[i].portable ? "ceil(S / BM), L, 1" : "2, 100, 1";
    rc |= db_bundle_launch_put(w, eid, 0, grid, "128, 1, 1", "BM * 256", &err);
    rc |= db_bundle_launch_put(w, eid, 1, "1, 1, 1", "32, 1, 1", "0", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 0, "S, L", "", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 1, "S * 2", "", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 2, "L // BM + 1", "", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 3, "", "S", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 4, "", "1.5 / BM", &err);
  }
  /* extra portable entries of variant 1 at other problems */
  for (int i = 0; i < m->n_extra; ++i) {
    char nm[32], dims[64], js[96];
    int L = 2048 + 64 * i, S = 64 * (i + 1);
    snprintf(nm, sizeof nm, "x%d", i);
    snprintf(dims, sizeof dims, "%d, %d, true", L, S);
    snprintf(js, sizeof js, "{\"L\":%d,\"S\":%d,\"causal\":true}", L, S);
    db_bundle_entry e = {.family_id = fid, .variant_id = v1, .problem_name = nm, .problem_hash = "ph", .dims = dims,
                         .dims_json = js, .portable = 1, .exact_why = "", .requires = "S % BM == 0", .define_exprs = "causal",
                         .define_values = "1", .median_ns = 1e3, .device_name = "Test GPU", .same_binary = 1};
    rc |= db_bundle_entry_put(w, &e, &eid, &err);
    rc |= db_bundle_launch_put(w, eid, 0, "ceil(S / BM), L, 1", "128, 1, 1", "BM * 256", &err);
    rc |= db_bundle_launch_put(w, eid, 1, "1, 1, 1", "32, 1, 1", "0", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 0, "S, L", "", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 1, "S * 2", "", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 2, "L // BM + 1", "", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 3, "", "S", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 4, "", "1.5 / BM", &err);
  }
  db_bundle_family fc = {"copy", "def", "recipes/copy.lua", "", "templates/copy/copy.cuh", "N:int,lay:enum(col|row)", "VEC:int", NULL};
  rc |= db_bundle_family_put(w, &fc, &cid, &err);
  rc |= db_bundle_arg_put(w, cid, 0, "src", "input", "f32", &err);
  rc |= db_bundle_arg_put(w, cid, 1, "dst", "output", "f32", &err);
  rc |= db_bundle_arg_put(w, cid, 2, "n", "scalar", "i64", &err);
  db_bundle_variant vc = {cid, "h3", "{\"VEC\":16}", "16", "-DVEC=16", "copy_kernel"};
  rc |= db_bundle_variant_put(w, &vc, &v3, &err);
  db_bundle_binary b3 = {v3, "cubin", "sm_90a", "k", blob, 100, -1, -1, -1, -1, -1};
  rc |= db_bundle_binary_put(w, &b3, &err);
  db_bundle_entry e4 = {.family_id = cid, .variant_id = v3, .problem_name = "64MiB", .problem_hash = "p", .dims = "16777216, 1",
                        .dims_json = "{\"N\":16777216,\"lay\":\"row\"}", .portable = 0, .exact_why = "launch grid: a Lua function",
                        .requires = "", .define_exprs = "", .define_values = "", .median_ns = 35e3, .device_name = "Test GPU"};
  rc |= db_bundle_entry_put(w, &e4, &eid, &err);
  rc |= db_bundle_launch_put(w, eid, 0, "16384, 1, 1", "256, 1, 1", "0", &err);
  rc |= db_bundle_entry_arg_put(w, eid, 0, "N", "", &err);
  rc |= db_bundle_entry_arg_put(w, eid, 1, "N", "", &err);
  rc |= db_bundle_entry_arg_put(w, eid, 2, "", "N", &err);
  if (rc) { fprintf(stderr, "make_bundle: %s\n", err.msg); db_bundle_abort(w); return -1; }
  if (db_bundle_commit(w, &err)) { fprintf(stderr, "make_bundle: %s\n", err.msg); return -1; }
  return 0;
}

static tunert_ctx *open_arch(const char *path, const char *arch, uint32_t flags, tunert_err *e) {
  tunert_options o;
  tunert_options_init(&o);
  o.arch = arch;
  o.flags = flags | TUNERT_OPEN_NO_DEVICE;
  tunert_ctx *ctx = NULL;
  if (tunert_open(path, &o, &ctx, e)) return NULL;
  return ctx;
}

/* ---- selection ----------------------------------------------------------------------------- */

static void test_select(void) {
  char path[300];
  path_in(path, sizeof path, "a.bundle");
  mk m = {0};
  CHECK(make_bundle(path, &m) == 0);
  tunert_err e;
  tunert_ctx *ctx = open_arch(path, "sm_90a", 0, &e);
  CHECK_MSG(ctx != NULL, e.msg);
  if (!ctx) return;
  CHECK(tunert_family_count(ctx) == 2);
  CHECK(!strcmp(tunert_family_name(ctx, 0), "attn") && tunert_family_name(ctx, 2) == NULL);
  tunert_family_info fi = {.struct_size = sizeof fi};
  CHECK(tunert_family_info_get(ctx, "attn", &fi, &e) == 0);
  CHECK(fi.n_dims == 3 && !strcmp(fi.dims[0], "L") && !strcmp(fi.dims[2], "causal") && !strcmp(fi.dim_types[2], "bool"));
  CHECK(fi.n_args == 5 && fi.arg_roles[2] == TUNERT_ROLE_SCRATCH && !strcmp(fi.arg_dtypes[1], "bf16"));
  CHECK(fi.n_problems == 3 && fi.n_variants == 2);
  CHECK(tunert_family_info_get(ctx, "nope", &fi, &e) == TUNERT_ENOFAMILY && strstr(e.msg, "attn, copy"));
  const char *pname;
  const int64_t *pd;
  CHECK(tunert_family_problem(ctx, "attn", 1, &pname, &pd, &e) == 0 && !strcmp(pname, "l4096s4096c") && pd[1] == 4096);
  CHECK(tunert_family_problem(ctx, "attn", 3, &pname, &pd, &e) == TUNERT_EINVAL);

  /* exact */
  const tunert_selection *s = NULL, *s2 = NULL;
  int64_t d1[3] = {1024, 512, 1};
  CHECK_MSG(tunert_select(ctx, "attn", d1, 3, &s, &e) == 0, e.msg);
  tunert_selection_info si = {.struct_size = sizeof si};
  CHECK(tunert_selection_info_get(s, &si) == 0);
  CHECK(si.exact == 1 && si.distance == 0 && !strcmp(si.tuned_problem, "l1024s512c"));
  CHECK(!strcmp(si.variant, "{\"BM\":64,\"PACK\":true}") && strstr(si.reason, "exact"));
  CHECK(si.n_launches == 2 && si.launches[0].grid[0] == 8 && si.launches[0].grid[1] == 1024 && si.launches[0].shared == 64 * 256);
  CHECK(!strcmp(si.launches[0].kernel, "attn_a") && !strcmp(si.launches[1].kernel, "attn_b"));
  CHECK(!strcmp(si.binary, "cubin sm_90a") && si.measured_ns == 100e3 && !strcmp(si.measured_on, "Test GPU"));
  CHECK(si.n_args == 5 && si.args[0].rank == 2 && si.args[0].shape[0] == 512 && si.args[0].numel == 512 * 1024 &&
        si.args[0].bytes == 512 * 1024 * 4);
  CHECK(si.args[1].numel == 1024 && si.args[1].bytes == 2048);               /* bf16 */
  CHECK(si.args[2].numel == 1024 / 64 + 1 && si.args[2].role == TUNERT_ROLE_SCRATCH);
  CHECK(si.args[3].has_value && si.args[3].value == 512);
  CHECK(si.args[4].has_value && si.args[4].value == 1.5 / 64);
  /* cached: the same pointer */
  CHECK(tunert_select(ctx, "attn", d1, 3, &s2, &e) == 0 && s2 == s);
  /* an exact-only entry answers its own problem */
  int64_t d3[3] = {100, 64, 0};
  CHECK_MSG(tunert_select(ctx, "attn", d3, 3, &s, &e) == 0, e.msg);
  tunert_selection_info_get(s, &si);
  CHECK(si.exact && si.launches[0].grid[0] == 2 && si.launches[0].grid[1] == 100);

  /* nearest: L=2048 S=1024 causal: e1 at log-distance sqrt(2) ln 2, e2 farther */
  int64_t dn[3] = {2048, 1024, 1};
  CHECK_MSG(tunert_select(ctx, "attn", dn, 3, &s, &e) == 0, e.msg);
  tunert_selection_info_get(s, &si);
  CHECK(!si.exact && !strcmp(si.tuned_problem, "l1024s512c") && fabs(si.distance - sqrt(2) * log(2)) < 1e-12);
  CHECK(strstr(si.reason, "nearest") && strstr(si.reason, "l1024s512c") && strstr(si.reason, "1 exact-only"));
  CHECK(si.launches[0].grid[0] == 16 && si.launches[0].grid[1] == 2048);   /* evaluated for this problem */
  CHECK(si.args[3].value == 1024 && si.args[2].numel == 2048 / 64 + 1);
  /* nearer to e2 */
  int64_t dn2[3] = {4096, 2048, 1};
  CHECK(tunert_select(ctx, "attn", dn2, 3, &s, &e) == 0);
  tunert_selection_info_get(s, &si);
  CHECK(!strcmp(si.tuned_problem, "l4096s4096c") && si.launches[0].grid[0] == 16 && si.args[4].value == 1.5 / 128);
  /* requirement fails for both portable entries: S % BM */
  int64_t dr[3] = {2048, 1000, 1};
  CHECK(tunert_select(ctx, "attn", dr, 3, &s, &e) == TUNERT_ENOVARIANT);
  CHECK_MSG(strstr(e.msg, "requirement 1 of 'S % BM == 0, L >= 1' is false") && strstr(e.msg, "usable only for their own"), e.msg);
  /* e2's requirement holds (S % 128 != 0 for 64 * 3 = 192? no: 192 % 128 = 64), e1's holds: nearest e1 */
  int64_t dq[3] = {1024, 192, 1};
  CHECK(tunert_select(ctx, "attn", dq, 3, &s, &e) == 0);
  tunert_selection_info_get(s, &si);
  CHECK(!strcmp(si.tuned_problem, "l1024s512c"));
  CHECK(tunert_select(ctx, "attn", (int64_t[3]){4096, 4096 + 64, 1}, 3, &s, &e) == 0);
  tunert_selection_info_get(s, &si);
  CHECK_MSG(!strcmp(si.tuned_problem, "l1024s512c") && strstr(si.reason, "rejected: l4096s4096c: requirement"), si.reason);
  /* compile-time define differs: causal = 0 at a non-tuned problem */
  int64_t dc[3] = {2048, 1024, 0};
  CHECK(tunert_select(ctx, "attn", dc, 3, &s, &e) == TUNERT_ENOVARIANT);
  CHECK_MSG(strstr(e.msg, "compiled for define 1 of 'causal' = 1, this problem needs 0"), e.msg);
  /* argument errors */
  CHECK(tunert_select(ctx, "attn", d1, 2, &s, &e) == TUNERT_EINVAL && strstr(e.msg, "L, S, causal"));
  CHECK(tunert_select(ctx, "nope", d1, 3, &s, &e) == TUNERT_ENOFAMILY && strstr(e.msg, "attn, copy"));
  CHECK(tunert_select(ctx, "attn", NULL, 3, &s, &e) == TUNERT_EINVAL);
  CHECK(tunert_select(NULL, "attn", d1, 3, &s, &e) == TUNERT_EINVAL);
  /* exact-only family: other sizes are refused with the reason */
  int64_t n1[2] = {16777216, 1}, n2[2] = {1000, 1}, n3[2] = {16777216, 2}, n4[2] = {16777216, 0};
  CHECK(tunert_select(ctx, "copy", n1, 2, &s, &e) == 0);
  CHECK(tunert_select(ctx, "copy", n2, 2, &s, &e) == TUNERT_ENOVARIANT && strstr(e.msg, "launch grid: a Lua function"));
  /* a string dim of the recipe is an enum: the index of its value */
  tunert_family_info fc = {.struct_size = sizeof fc};
  CHECK(tunert_family_info_get(ctx, "copy", &fc, &e) == 0 && fc.n_dims == 2 && !strcmp(fc.dim_types[1], "enum(col|row)"));
  CHECK(tunert_select(ctx, "copy", n3, 2, &s, &e) == TUNERT_EINVAL && strstr(e.msg, "0..1"));
  CHECK(tunert_select(ctx, "copy", n4, 2, &s, &e) == TUNERT_ENOVARIANT);
  /* launch: argument checks, then no driver (or, with one, a clean CUDA error for the fake binary) */
  tunert_arg args[5] = {tunert_arg_devptr(0x1000), tunert_arg_devptr(0x2000), tunert_arg_devptr(0x3000), tunert_arg_auto(),
                        tunert_arg_float(0.125)};
  CHECK(tunert_select(ctx, "attn", d1, 3, &s, &e) == 0);
  CHECK(tunert_launch(ctx, s, NULL, args, 4, &e) == TUNERT_EINVAL && strstr(e.msg, "4 args given"));
  int rc = tunert_launch(ctx, s, NULL, args, 5, &e);
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) CHECK_MSG(rc == TUNERT_ENODRIVER && strstr(e.msg, "no NVIDIA driver") && strstr(e.msg, "select here"), e.msg);
  else { CHECK_MSG(rc != TUNERT_OK && e.msg[0], e.msg); dlclose(cuda); }
  CHECK(tunert_launch(ctx, s, NULL, args, 5, &e) == rc); /* the same answer the second time */
  tunert_bundle_info bi = {.struct_size = sizeof bi};
  CHECK(tunert_bundle_info_get(ctx, &bi) == 0 && bi.format_major == 1 && !strcmp(bi.device_name, "Test GPU") &&
        !strcmp(bi.device_arch_here, "sm_90") && bi.open_ms >= 0);
  tunert_close(ctx);

  /* exact-only mode */
  ctx = open_arch(path, "sm_90a", TUNERT_OPEN_EXACT_ONLY, &e);
  CHECK(ctx && tunert_select(ctx, "attn", dn, 3, &s, &e) == TUNERT_ENOVARIANT && strstr(e.msg, "TUNERT_OPEN_EXACT_ONLY"));
  CHECK(ctx && tunert_select(ctx, "attn", d1, 3, &s, &e) == 0);
  tunert_close(ctx);

  /* architectures: sm_80 has no binary at all -> refused at open, unless asked */
  ctx = open_arch(path, "sm_80", 0, &e);
  CHECK(ctx == NULL && e.code == TUNERT_EARCH && strstr(e.msg, "no binary runs on sm_80") && strstr(e.msg, "--arch sm_80"));
  ctx = open_arch(path, "sm_80", TUNERT_OPEN_ANY_ARCH, &e);
  CHECK(ctx != NULL);
  CHECK(ctx && tunert_select(ctx, "attn", d1, 3, &s, &e) == TUNERT_ENOVARIANT && strstr(e.msg, "no binary runs on sm_80"));
  tunert_close(ctx);
  ctx = open_arch(path, "compute_90", 0, &e);
  CHECK(ctx == NULL && e.code == TUNERT_EINVAL);
  /* a PTX for compute_80 is the JIT fallback of variant 2 on an sm_86 */
  mk m2 = {.v2_ptx80 = 1};
  CHECK(make_bundle(path, &m2) == 0);
  ctx = open_arch(path, "sm_86", TUNERT_OPEN_ANY_ARCH, &e);
  CHECK_MSG(ctx != NULL, e.msg);
  if (ctx) {
    CHECK_MSG(tunert_select(ctx, "attn", d1, 3, &s, &e) == 0, e.msg); /* e1 has no binary here: e2 is nearest */
    tunert_selection_info_get(s, &si);
    CHECK(!si.exact && !strcmp(si.tuned_problem, "l4096s4096c") && !strcmp(si.binary, "ptx compute_80 (JIT by the driver)"));
    CHECK_MSG(strstr(si.reason, "rejected: l1024s512c: no binary runs on sm_86"), si.reason);
    tunert_close(ctx);
  }
  /* device unknown (no driver, no arch option): selection works, binaries are chosen at launch */
  tunert_options o;
  tunert_options_init(&o);
  o.flags = TUNERT_OPEN_NO_DEVICE;
  CHECK(tunert_open(path, &o, &ctx, &e) == 0);
  CHECK(tunert_select(ctx, "attn", d1, 3, &s, &e) == 0);
  tunert_selection_info_get(s, &si);
  CHECK(si.exact && strstr(si.binary, "chosen at the first launch"));
  tunert_close(ctx);
}

/* ---- cache growth and threads ----------------------------------------------------------------- */

typedef struct th_arg { tunert_ctx *ctx; int id; int errors; const tunert_selection *seen[64]; } th_arg;

static void *th_main(void *p) {
  th_arg *a = p;
  tunert_err e;
  for (int it = 0; it < 3000; ++it) {
    int k = (it * 7 + a->id) % 64;
    int64_t d[3] = {1024 + 64 * k, 512, 1};
    const tunert_selection *s;
    if (tunert_select(a->ctx, "attn", d, 3, &s, &e)) { a->errors++; continue; }
    if (!a->seen[k]) a->seen[k] = s;
    else if (a->seen[k] != s) a->errors++;
  }
  return NULL;
}

static void test_threads(void) {
  char path[300];
  path_in(path, sizeof path, "a.bundle");
  mk m = {0};
  make_bundle(path, &m);
  tunert_options o;
  tunert_options_init(&o);
  o.flags = TUNERT_OPEN_NO_DEVICE;
  o.arch = "sm_90a";
  o.max_selections = 4; /* forces the cache to grow while threads read it */
  tunert_ctx *ctx = NULL;
  tunert_err e;
  CHECK(tunert_open(path, &o, &ctx, &e) == 0);
  if (!ctx) return;
  pthread_t th[8];
  th_arg args[8];
  memset(args, 0, sizeof args);
  for (int i = 0; i < 8; ++i) { args[i].ctx = ctx; args[i].id = i; pthread_create(&th[i], NULL, th_main, &args[i]); }
  int errors = 0, mismatch = 0;
  for (int i = 0; i < 8; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < 8; ++i) {
    errors += args[i].errors;
    for (int k = 0; k < 64; ++k)
      if (args[i].seen[k] && args[0].seen[k] && args[i].seen[k] != args[0].seen[k]) mismatch++;
  }
  CHECK(errors == 0 && mismatch == 0);
  tunert_close(ctx);
}

/* ---- bad files ------------------------------------------------------------------------------------- */

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (n) fwrite(data, 1, n, f);
  fclose(f);
}

static int open_code(const char *path, tunert_err *e) {
  tunert_ctx *ctx = open_arch(path, "sm_90a", 0, e);
  if (ctx) { tunert_close(ctx); return 0; }
  return e->code;
}

static void sql(const char *path, const char *text) {
  sqlite3 *db;
  sqlite3_open(path, &db);
  char *msg = NULL;
  if (sqlite3_exec(db, text, NULL, NULL, &msg) != SQLITE_OK) fprintf(stderr, "sql: %s: %s\n", text, msg);
  sqlite3_free(msg);
  sqlite3_close(db);
}

static void test_bad_files(void) {
  char path[300], bad[300];
  path_in(path, sizeof path, "good.bundle");
  path_in(bad, sizeof bad, "bad.bundle");
  mk m = {0};
  make_bundle(path, &m);
  tunert_err e;
  CHECK(open_code(path, &e) == 0);
  CHECK(open_code("/nonexistent/x.bundle", &e) == TUNERT_EIO && strstr(e.msg, "cannot open"));
  CHECK(open_code(dir, &e) == TUNERT_EIO && strstr(e.msg, "not a regular file"));
  write_file(bad, "", 0);
  CHECK_MSG(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "not a tune bundle"), e.msg);
  write_file(bad, "hello, this is not a database at all, just some text that goes on for a while......", 84);
  CHECK_MSG(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "not a tune bundle"), e.msg);
  /* a tune results database */
  unlink(bad);
  char app[128];
  snprintf(app, sizeof app, "PRAGMA application_id = %d; CREATE TABLE results(x);", TUNERT_TUNE_DB_APPLICATION_ID);
  sql(bad, app);
  CHECK_MSG(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "results database, not a bundle"), e.msg);
  /* other format versions */
  mk mv = {.format_major = 2};
  make_bundle(bad, &mv);
  CHECK_MSG(open_code(bad, &e) == TUNERT_EVERSION && strstr(e.msg, "bundle format 2.") && strstr(e.msg, "reads format 1.x") &&
                strstr(e.msg, "upgrade libtunert"), e.msg);
  mk m0 = {.format_major = 0};
  make_bundle(bad, &m0);
  sql(bad, "UPDATE meta SET value = '0' WHERE key = 'format_major'");
  CHECK(open_code(bad, &e) == TUNERT_EVERSION && strstr(e.msg, "again"));
  make_bundle(bad, &m0);
  sql(bad, "UPDATE meta SET value = '1' WHERE key = 'format_minor'"); /* a newer minor opens */
  CHECK(open_code(bad, &e) == 0);
  sql(bad, "DELETE FROM meta WHERE key = 'format_major'");
  CHECK(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "no format version"));
  /* damaged contents */
  make_bundle(bad, &m0);
  sql(bad, "DROP TABLE launches");
  CHECK_MSG(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "no such table: launches"), e.msg);
  mk mg = {.grid_e1 = "S // "};
  make_bundle(bad, &mg);
  CHECK_MSG(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "grid") && strstr(e.msg, "unexpected end"), e.msg);
  mk mg2 = {.grid_e1 = "1, 2"};
  make_bundle(bad, &mg2);
  CHECK_MSG(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "2 items, want 3"), e.msg);
  mk mg3 = {.grid_e1 = "S // (BM - 64), 1, 1"}; /* parses; fails only for a problem: n//0 */
  make_bundle(bad, &mg3);
  {
    tunert_ctx *ctx = open_arch(bad, "sm_90a", 0, &e);
    const tunert_selection *s;
    CHECK(ctx && tunert_select(ctx, "attn", (int64_t[3]){1024, 512, 1}, 3, &s, &e) == 0);
    tunert_selection_info si = {.struct_size = sizeof si};
    tunert_selection_info_get(s, &si);
    CHECK_MSG(!si.exact && strstr(si.reason, "rejected: l1024s512c: expression 'S // (BM - 64)") && strstr(si.reason, "n//0"), si.reason);
    tunert_close(ctx);
  }
  make_bundle(bad, &m0);
  sql(bad, "UPDATE entries SET dims = '1, 2' WHERE id = 1");
  CHECK(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "2 values, want 3"));
  make_bundle(bad, &m0);
  sql(bad, "UPDATE families SET dims = 'L:float,S:int,causal:bool' WHERE id = 1");
  CHECK(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "type 'float'"));
  make_bundle(bad, &m0);
  sql(bad, "DELETE FROM binaries WHERE variant_id = 3");
  CHECK(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "has no binary"));
  make_bundle(bad, &m0);
  sql(bad, "DELETE FROM entries WHERE family_id = 2");
  CHECK(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "no tuned problem"));
  /* one byte of one binary changed: refused at open, naming the variant */
  make_bundle(bad, &m0);
  {
    sqlite3 *db;
    sqlite3_blob *blob = NULL;
    sqlite3_int64 bid = 0;
    sqlite3_open(bad, &db);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT id FROM binaries WHERE variant_id = 2 AND kind = 'cubin'", -1, &st, NULL);
    if (sqlite3_step(st) == SQLITE_ROW) bid = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    unsigned char byte = 0;
    CHECK(bid > 0 && sqlite3_blob_open(db, "main", "binaries", "data", bid, 1, &blob) == SQLITE_OK);
    sqlite3_blob_read(blob, &byte, 1, 1234);
    byte ^= 0x01;
    CHECK(sqlite3_blob_write(blob, &byte, 1, 1234) == SQLITE_OK);
    sqlite3_blob_close(blob);
    sqlite3_close(db);
    CHECK_MSG(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "family attn: variant 2 {\"BM\":128,\"PACK\":false}") &&
                  strstr(e.msg, "sm_90a binary") && strstr(e.msg, "is damaged") && strstr(e.msg, "make the bundle again"), e.msg);
    byte ^= 0x01; /* restored: opens again (the check is of the bytes, not of the file) */
    sqlite3_open(bad, &db);
    sqlite3_blob_open(db, "main", "binaries", "data", bid, 1, &blob);
    sqlite3_blob_write(blob, &byte, 1, 1234);
    sqlite3_blob_close(blob);
    sqlite3_close(db);
    CHECK_MSG(open_code(bad, &e) == 0, e.msg);
    sql(bad, "UPDATE binaries SET hash = '0123456789abcdef' WHERE variant_id = 3"); /* the recorded hash damaged */
    CHECK_MSG(open_code(bad, &e) == TUNERT_EFORMAT && strstr(e.msg, "family copy: variant 3") && strstr(e.msg, "0123456789abcdef"), e.msg);
  }
  /* truncated: at every 1/8 of the file, and inside the header */
  struct stat sb;
  stat(path, &sb);
  FILE *f = fopen(path, "rb");
  unsigned char *data = malloc((size_t)sb.st_size);
  size_t n = fread(data, 1, (size_t)sb.st_size, f);
  fclose(f);
  for (int k = 1; k < 8; ++k) {
    write_file(bad, data, n * (size_t)k / 8);
    int rc = open_code(bad, &e);
    CHECK_MSG(rc == TUNERT_EFORMAT && (strstr(e.msg, "truncated") || strstr(e.msg, "not a")), e.msg);
  }
  write_file(bad, data, 50);
  CHECK(open_code(bad, &e) == TUNERT_EFORMAT);
  /* damaged bytes anywhere: an error or a working bundle, never a crash */
  int opened = 0, refused = 0;
  for (size_t off = 100; off < n; off += 97) {
    unsigned char save = data[off];
    data[off] ^= 0x5a;
    write_file(bad, data, n);
    data[off] = save;
    tunert_ctx *ctx = open_arch(bad, "sm_90a", TUNERT_OPEN_ANY_ARCH, &e);
    if (!ctx) { refused++; CHECK(e.code != 0 && e.msg[0]); continue; }
    opened++;
    for (int fi = 0; fi < tunert_family_count(ctx); ++fi) {
      tunert_family_info info = {.struct_size = sizeof info};
      if (tunert_family_info_get(ctx, tunert_family_name(ctx, fi), &info, &e)) continue;
      for (int pi = 0; pi < info.n_problems; ++pi) {
        const int64_t *dims;
        const tunert_selection *s;
        if (!tunert_family_problem(ctx, info.name, pi, NULL, &dims, &e)) tunert_select(ctx, info.name, dims, info.n_dims, &s, &e);
      }
    }
    tunert_close(ctx);
  }
  printf("damaged bundles: %d refused with a message, %d opened (damage in data pages)\n", refused, opened);
  CHECK(refused + opened > 100);
  free(data);
}

/* ---- allocator ------------------------------------------------------------------------------------ */

typedef struct counting { long n_alloc, n_free; long long bytes; long fail_at; } counting;
static void *c_alloc(void *ud, size_t n) {
  counting *c = ud;
  if (c->fail_at && c->n_alloc + 1 == c->fail_at) return NULL;
  c->n_alloc++;
  c->bytes += (long long)n;
  return malloc(n);
}
static void c_free(void *ud, void *p, size_t n) {
  counting *c = ud;
  c->n_free++;
  c->bytes -= (long long)n;
  free(p);
}

static void test_allocator(void) {
  char path[300];
  path_in(path, sizeof path, "a.bundle");
  mk m = {.n_extra = 40};
  make_bundle(path, &m);
  counting c = {0};
  tunert_allocator al = {c_alloc, c_free, &c};
  tunert_options o;
  tunert_options_init(&o);
  o.flags = TUNERT_OPEN_NO_DEVICE;
  o.arch = "sm_90a";
  o.allocator = &al;
  o.max_selections = 2;
  tunert_ctx *ctx = NULL;
  tunert_err e;
  CHECK(tunert_open(path, &o, &ctx, &e) == 0);
  long after_open = c.n_alloc;
  const tunert_selection *s;
  for (int k = 0; k < 200; ++k) tunert_select(ctx, "attn", (int64_t[3]){1024 + k, 512, 1}, 3, &s, &e);
  CHECK(c.n_alloc > after_open); /* cache growth and selections come from it too */
  long before_hot = c.n_alloc;
  for (int k = 0; k < 200; ++k) tunert_select(ctx, "attn", (int64_t[3]){1024 + k, 512, 1}, 3, &s, &e);
  CHECK(c.n_alloc == before_hot); /* hot path: no allocation */
  tunert_close(ctx);
  CHECK(c.n_alloc == c.n_free && c.bytes == 0);
  /* every allocation of open can fail: ENOMEM, nothing leaked */
  int all_ok = 1;
  long total = after_open;
  for (long k = 1; k <= total; ++k) {
    counting f = {.fail_at = k};
    tunert_allocator fa = {c_alloc, c_free, &f};
    o.allocator = &fa;
    ctx = NULL;
    int rc = tunert_open(path, &o, &ctx, &e);
    if (rc != TUNERT_ENOMEM || ctx != NULL || f.n_alloc != f.n_free || f.bytes != 0) {
      all_ok = 0;
      fprintf(stderr, "allocation %ld failing: rc %d (%s), %ld allocs, %ld frees\n", k, rc, e.msg, f.n_alloc, f.n_free);
      tunert_close(ctx);
      break;
    }
  }
  CHECK(all_ok);
}

/* ---- open from memory ------------------------------------------------------------------------------- */

/* The file's bytes in a malloc'd buffer (*n its size); caller frees. */
static unsigned char *read_all(const char *path, size_t *n) {
  struct stat sb;
  if (stat(path, &sb)) return NULL;
  unsigned char *data = malloc((size_t)sb.st_size + 1);
  FILE *f = fopen(path, "rb");
  *n = f ? fread(data + 0, 1, (size_t)sb.st_size, f) : 0;
  if (f) fclose(f);
  return data;
}

static int open_mem_code(const void *data, size_t n, tunert_err *e) {
  tunert_options o;
  tunert_options_init(&o);
  o.arch = "sm_90a";
  o.flags = TUNERT_OPEN_NO_DEVICE;
  tunert_ctx *ctx = NULL;
  int rc = tunert_open_memory(data, n, &o, &ctx, e);
  CHECK((rc == 0) == (ctx != NULL));
  tunert_close(ctx);
  return rc;
}

static void test_open_memory(void) {
  char path[300];
  path_in(path, sizeof path, "mem.bundle");
  mk m = {0};
  make_bundle(path, &m);
  size_t n = 0;
  unsigned char *data = read_all(path, &n);
  CHECK(data && n > 4096);
  unsigned char *copy = malloc(n);
  memcpy(copy, data, n);
  tunert_options o;
  tunert_options_init(&o);
  o.arch = "sm_90a";
  o.flags = TUNERT_OPEN_NO_DEVICE;
  tunert_ctx *ctx = NULL, *fctx = open_arch(path, "sm_90a", 0, &(tunert_err){0});
  tunert_err e;
  CHECK_MSG(tunert_open_memory(data, n, &o, &ctx, &e) == 0, e.msg);
  CHECK(ctx && tunert_family_count(ctx) == 2 && !strcmp(tunert_family_name(ctx, 1), "copy"));
  /* the same selections as the file gives */
  const tunert_selection *s = NULL, *fs = NULL;
  int64_t dims[3] = {2048, 1024, 1};
  CHECK(ctx && tunert_select(ctx, "attn", dims, 3, &s, &e) == 0 && tunert_select(fctx, "attn", dims, 3, &fs, &e) == 0);
  tunert_selection_info si = {.struct_size = sizeof si}, fsi = {.struct_size = sizeof fsi};
  if (s && fs) {
    tunert_selection_info_get(s, &si);
    tunert_selection_info_get(fs, &fsi);
    CHECK(!strcmp(si.variant, fsi.variant) && !strcmp(si.tuned_problem, fsi.tuned_problem) && !strcmp(si.reason, fsi.reason));
  }
  tunert_bundle_info bi = {.struct_size = sizeof bi};
  CHECK(ctx && tunert_bundle_info_get(ctx, &bi) == 0 && !strcmp(bi.device_name, "Test GPU") && bi.format_major == 1);
  tunert_close(ctx);
  tunert_close(fctx);
  CHECK(memcmp(copy, data, n) == 0); /* read in place, never written */
  /* any alignment */
  unsigned char *odd = malloc(n + 1);
  memcpy(odd + 1, data, n);
  CHECK_MSG(open_mem_code(odd + 1, n, &e) == 0, e.msg);
  free(odd);
  /* truncated: refused, at every 1/8 and inside the header */
  for (int k = 1; k < 8; ++k) {
    int rc = open_mem_code(data, n * (size_t)k / 8, &e);
    CHECK_MSG(rc == TUNERT_EFORMAT && strstr(e.msg, "bundle in memory (") && (strstr(e.msg, "truncated") || strstr(e.msg, "not a")), e.msg);
  }
  CHECK(open_mem_code(data, n - 1, &e) == TUNERT_EFORMAT && strstr(e.msg, "truncated"));
  CHECK(open_mem_code(data, 50, &e) == TUNERT_EFORMAT);
  CHECK(open_mem_code(data, 0, &e) == TUNERT_EFORMAT && strstr(e.msg, "not a tune bundle"));
  /* garbage: refused */
  unsigned char junk[8192];
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = (unsigned char)(i * 2654435761u >> 13);
  CHECK_MSG(open_mem_code(junk, sizeof junk, &e) == TUNERT_EFORMAT && strstr(e.msg, "not a tune bundle"), e.msg);
  memcpy(junk, data, 100); /* a bundle's header over garbage pages */
  CHECK_MSG(open_mem_code(junk, sizeof junk, &e) == TUNERT_EFORMAT, e.msg);
  CHECK(open_mem_code(NULL, n, &e) == TUNERT_EINVAL);
  CHECK(tunert_open_memory(data, n, &o, NULL, &e) == TUNERT_EINVAL);
  /* other versions: the same checks as tunert_open */
  char bad[300];
  path_in(bad, sizeof bad, "mem_v2.bundle");
  mk mv = {.format_major = 2};
  make_bundle(bad, &mv);
  size_t nv = 0;
  unsigned char *v2 = read_all(bad, &nv);
  CHECK_MSG(open_mem_code(v2, nv, &e) == TUNERT_EVERSION && strstr(e.msg, "bundle format 2."), e.msg);
  free(v2);
  /* every allocation of the open can fail: ENOMEM, nothing leaked */
  int all_ok = 1;
  for (long k = 1; all_ok && k < 100000; ++k) {
    counting f = {.fail_at = k};
    tunert_allocator fa = {c_alloc, c_free, &f};
    o.allocator = &fa;
    ctx = NULL;
    int rc = tunert_open_memory(data, n, &o, &ctx, &e);
    if (rc == 0 && f.n_alloc < k) { tunert_close(ctx); CHECK(f.n_alloc == f.n_free && f.bytes == 0); break; } /* past the last */
    if (rc != TUNERT_ENOMEM || ctx != NULL || f.n_alloc != f.n_free || f.bytes != 0) {
      all_ok = 0;
      fprintf(stderr, "open_memory, allocation %ld failing: rc %d (%s)\n", k, rc, e.msg);
      tunert_close(ctx);
    }
  }
  CHECK(all_ok);
  free(copy);
  free(data);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/tunert_test.XXXXXX");
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
  test_select();
  test_threads();
  test_bad_files();
  test_allocator();
  test_open_memory();
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd)) {}
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
