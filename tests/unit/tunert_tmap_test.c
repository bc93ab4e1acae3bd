/* tunert_tmap_test.c: tensor-map args in libtunert without a GPU (docs/tensormap-args.md):
 *  - the parameter layout (runtime/tunert_pack.h) against a table of the offsets the tuner's worker
 *    packs (tuner/worker.c pack_args: natural alignment, tensor maps 128 bytes at 64);
 *  - the runtime's map checks (runtime/tunert_tmap.c) against the worker's (tune_tmap_check): the
 *    same verdict and the same message on every case;
 *  - a synthetic format-1.1 bundle with a tensormap family: the selection's map spec (expressions
 *    evaluated for tuned and nearby problems), offsets, a map the driver would refuse rejecting the
 *    entry with the reason, launch without a driver; malformed entry_tensormaps rows refused; a
 *    1.0 bundle (no entry_tensormaps table) still opens;
 *  - a format-1.6 bundle whose map strides name the tensor's row-stride scalar: the selection's map
 *    at the bundle's value, the map re-evaluated for a caller's row stride (a strided view) and
 *    checked against that view's extent, a stride off 16 bytes refused, malformed uses refused.
 * Prints "N passed, M failed"; exits nonzero on any failure. */
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db_bundle.h"
#include "tensormap.h"
#include "tunert.h"
#include "tunert_int.h"
#include "tunert_pack.h"
#include "tunert_tmap.h"

static int n_pass, n_fail;
#define CHECK_MSG(c, m)                                                                            \
  do {                                                                                             \
    if (c) n_pass++;                                                                               \
    else { n_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #c, (m)); } \
  } while (0)
#define CHECK(c) CHECK_MSG(c, "")

/* ---- packing --------------------------------------------------------------------------------- */

typedef struct layout_case {
  const char *what;
  int n;
  int kind[12], size[12];
  uint32_t want[12], total;
} layout_case;

#define T TUNERT_PACK_TENSOR
#define S TUNERT_PACK_SCALAR
#define M TUNERT_PACK_TENSORMAP
/* Offsets worked out by hand from the worker's rule (pack_args: tensors 8 bytes, scalars their
 * dtype size, each aligned to its size; a tensor map 128 bytes aligned to 64). */
static const layout_case cases[] = {
    {"recipes/gemm.lua: a b c ws M N K tmA tmB", 9, {T, T, T, T, S, S, S, M, M}, {0, 0, 0, 0, 4, 4, 4, 0, 0},
     {0, 8, 16, 24, 32, 36, 40, 64, 192}, 320},
    {"tests/fixtures/recipes/tensormap.lua: src dst acc count R C tm0 tm128", 8, {T, T, T, T, S, S, M, M}, {0, 0, 0, 0, 4, 4, 0, 0},
     {0, 8, 16, 24, 32, 36, 64, 192}, 320},
    {"i32 f64 map i32 tensor", 5, {S, S, M, S, T}, {4, 8, 0, 4, 0}, {0, 8, 64, 192, 200}, 208},
    {"map first, then f16 and i64", 3, {M, S, S}, {0, 2, 8}, {0, 128, 136}, 144},
    {"i32 f16 tensor (no map)", 3, {S, S, T}, {4, 2, 0}, {0, 4, 8}, 16},
    {"f32 map: 60 bytes of padding", 2, {S, M}, {4, 0}, {0, 64}, 192},
};
#undef T
#undef S
#undef M

static void test_layout(void) {
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    uint32_t off[12];
    uint32_t total = tunert_pack_layout(cases[c].n, cases[c].kind, cases[c].size, off);
    int same = total == cases[c].total;
    for (int i = 0; i < cases[c].n; ++i) same &= off[i] == cases[c].want[i];
    CHECK_MSG(same, cases[c].what);
    for (int i = 0; i < cases[c].n; ++i)
      if (cases[c].kind[i] == TUNERT_PACK_TENSORMAP) CHECK_MSG(off[i] % 64 == 0, cases[c].what);
  }
}

/* ---- checks: runtime vs worker ------------------------------------------------------------------- */

typedef struct check_case {
  const char *what;
  int elsize, swizzle, rank, n_estr;
  uint64_t dims[5], strides[4];
  unsigned box[5], estr[5];
  uint64_t tensor_bytes;
  int ok;
} check_case;

static const check_case checks[] = {
    {"fixture tm128 at r512c384", 2, 128, 2, 0, {384, 512}, {768}, {64, 32}, {0}, 384 * 512 * 2, 1},
    {"box 512 rows", 2, 128, 2, 0, {384, 512}, {768}, {64, 512}, {0}, 384 * 512 * 2, 0},
    {"box 0", 2, 0, 2, 0, {384, 512}, {768}, {64, 0}, {0}, 384 * 512 * 2, 0},
    {"inner box of 12 bytes", 2, 0, 2, 0, {384, 512}, {768}, {6, 8}, {0}, 384 * 512 * 2, 0},
    {"inner box over the 64-byte swizzle", 2, 64, 2, 0, {384, 512}, {768}, {64, 8}, {0}, 384 * 512 * 2, 0},
    {"stride of 200 bytes", 2, 0, 2, 0, {100, 512}, {200}, {8, 8}, {0}, 100 * 512 * 2, 0},
    {"map past the tensor", 2, 0, 2, 0, {384, 512}, {768}, {64, 8}, {0}, 384 * 511 * 2, 0},
    {"exactly the tensor", 4, 0, 3, 0, {32, 8, 4}, {128, 1024}, {32, 8, 1}, {0}, 32 * 8 * 4 * 4, 1},
    {"element stride 9", 4, 0, 2, 2, {32, 8}, {128}, {32, 8}, {1, 9}, 32 * 8 * 4, 0},
    {"element strides 2", 4, 0, 2, 2, {32, 8}, {128}, {32, 8}, {2, 2}, 32 * 8 * 4, 1},
    {"rank 0", 4, 0, 0, 0, {0}, {0}, {0}, {0}, 1024, 0},
    {"dim 0", 4, 0, 1, 0, {0}, {0}, {4}, {0}, 1024, 0},
    {"gemm tmB, b [K][N] bf16", 2, 128, 2, 0, {4096, 4096}, {8192}, {64, 64}, {0}, 4096ull * 4096 * 2, 1},
};

static void test_checks(void) {
  for (size_t c = 0; c < sizeof checks / sizeof checks[0]; ++c) {
    const check_case *k = &checks[c];
    tune_tmap_def d = {.tensor = 0, .swizzle = k->swizzle, .l2_promotion = 256, .n_estr = k->n_estr};
    tune_tmap_var v = {.rank = k->rank};
    rt_tmap_spec m = {.elsize = k->elsize, .swizzle = k->swizzle, .l2_promotion = 256, .rank = k->rank};
    for (int i = 0; i < 5; ++i) {
      d.estr[i] = k->estr[i];
      m.estr[i] = k->n_estr ? k->estr[i] : 1;
      v.dims[i] = m.dims[i] = k->dims[i];
      v.box[i] = m.box[i] = k->box[i];
      if (i < 4) v.strides[i] = m.strides[i] = k->strides[i];
    }
    char w1[512] = "", w2[512] = "";
    int worker = tune_tmap_check(&d, &v, k->elsize, 0x10000, (size_t)k->tensor_bytes, w1, sizeof w1);
    int rt = rt_tmap_check(&m, k->tensor_bytes, w2, sizeof w2);
    char msg[1200];
    snprintf(msg, sizeof msg, "%s: worker %d '%s', runtime %d '%s'", k->what, worker, w1, rt, w2);
    CHECK_MSG((worker == 0) == k->ok && (rt == 0) == k->ok, msg);
    CHECK_MSG(!strcmp(w1, w2), msg);
  }
}

/* ---- a synthetic bundle ------------------------------------------------------------------------ */

static char dir[256];

static void sql(const char *path, const char *text) {
  sqlite3 *db;
  sqlite3_open(path, &db);
  char *msg = NULL;
  if (sqlite3_exec(db, text, NULL, NULL, &msg) != SQLITE_OK) fprintf(stderr, "sql: %s: %s\n", text, msg);
  sqlite3_free(msg);
  sqlite3_close(db);
}

/* family "tm": dims C, R; param BOX_R; args src (bf16 in), dst (bf16 out), R (i32), tm (map of src).
 * e1 (R=512, C=384, BOX_R=32): portable, map dims "C, R", strides "2 * (C)", box "64, BOX_R",
 * swizzle 128. e2 (R=500, C=384, BOX_R=8): exact-only, the map as values. with_map 0: the same
 * family without the map (a bundle that 1.0 readers can take). */
static int make_bundle(const char *path, int with_map, const char *tm_dtype) {
  tune_err err;
  tune_err_clear(&err);
  db_bundle_writer *w = NULL;
  unlink(path);
  if (db_bundle_create(path, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
  int rc = db_bundle_meta(w, "device_name", "Test GPU", &err);
  db_bundle_family fa = {"tm", "abc", "recipes/tm.lua", "return {}", "templates/tm.cuh", "C:int,R:int", "BOX_R:int", NULL};
  int64_t fid, v1, v2;
  rc |= db_bundle_family_put(w, &fa, &fid, &err);
  rc |= db_bundle_arg_put(w, fid, 0, "src", "input", "bf16", &err);
  rc |= db_bundle_arg_put(w, fid, 1, "dst", "output", "bf16", &err);
  rc |= db_bundle_arg_put(w, fid, 2, "R", "scalar", "i32", &err);
  if (with_map) rc |= db_bundle_arg_put(w, fid, 3, "tm", "tensormap", "bf16", &err);
  db_bundle_variant va = {fid, "h1", "{\"BOX_R\":32}", "32", "-DBOX_R=32", "tmap_copy"};
  db_bundle_variant vb = {fid, "h2", "{\"BOX_R\":8}", "8", "-DBOX_R=8", "tmap_copy"};
  rc |= db_bundle_variant_put(w, &va, &v1, &err);
  rc |= db_bundle_variant_put(w, &vb, &v2, &err);
  static const unsigned char blob[64] = {0x7f, 'E', 'L', 'F'};
  int64_t vs[2] = {v1, v2};
  for (int i = 0; i < 2; ++i) {
    db_bundle_binary b = {vs[i], "cubin", "sm_90a", "k", blob, sizeof blob, 40, 0, 0, 0, 0};
    rc |= db_bundle_binary_put(w, &b, &err);
  }
  struct { const char *name, *dims, *js; int64_t v; int portable; } es[2] = {
      {"r512c384", "384, 512", "{\"C\":384,\"R\":512}", v1, 1}, {"r500c384", "384, 500", "{\"C\":384,\"R\":500}", v2, 0}};
  for (int i = 0; i < 2; ++i) {
    db_bundle_entry e = {.family_id = fid, .variant_id = es[i].v, .problem_name = es[i].name, .problem_hash = "ph", .dims = es[i].dims,
                         .dims_json = es[i].js, .portable = es[i].portable, .exact_why = es[i].portable ? "" : "tensormap box: a Lua function",
                         .median_ns = 1e3 * (i + 1), .device_name = "Test GPU", .same_binary = 1};
    int64_t eid;
    rc |= db_bundle_entry_put(w, &e, &eid, &err);
    rc |= db_bundle_launch_put(w, eid, 0, i ? "6, 63, 1" : "C // 64, (R + BOX_R - 1) // BOX_R, 1", "128, 1, 1", "0", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 0, "R, C", "", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 1, "R, C", "", &err);
    rc |= db_bundle_entry_arg_put(w, eid, 2, "", "R", &err);
    if (!with_map) continue;
    rc |= db_bundle_entry_arg_put(w, eid, 3, "", "", &err);
    db_bundle_tensormap t = {.entry_id = eid, .idx = 3, .tensor = 0, .dtype = tm_dtype, .dims = i ? "384, 500" : "C, R",
                             .strides = i ? "768" : "2 * (C)", .box = i ? "64, 8" : "64, BOX_R", .swizzle = i ? 0 : 128,
                             .l2_promotion = i ? 256 : 128, .oob_nan = i, .element_strides = i ? "1, 1" : ""};
    rc |= db_bundle_tensormap_put(w, &t, &err);
  }
  if (rc) { fprintf(stderr, "make_bundle: %s\n", err.msg); db_bundle_abort(w); return -1; }
  return db_bundle_commit(w, &err) ? -1 : 0;
}

static tunert_ctx *open_b(const char *path, tunert_err *e) {
  tunert_options o;
  tunert_options_init(&o);
  o.arch = "sm_90a";
  o.flags = TUNERT_OPEN_NO_DEVICE;
  tunert_ctx *ctx = NULL;
  if (tunert_open(path, &o, &ctx, e)) return NULL;
  return ctx;
}

static void test_bundle(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/tm.bundle", dir);
  CHECK(make_bundle(path, 1, "bf16") == 0);
  tunert_err e = {0};
  tunert_ctx *ctx = open_b(path, &e);
  CHECK_MSG(ctx != NULL, e.msg);
  if (!ctx) return;
  tunert_bundle_info bi = {.struct_size = sizeof bi};
  tunert_bundle_info_get(ctx, &bi);
  CHECK(bi.format_major == 1 && bi.format_minor >= 1); /* a tensor-map bundle is 1.1 or later */
  tunert_family_info fi = {.struct_size = sizeof fi};
  CHECK(tunert_family_info_get(ctx, "tm", &fi, &e) == 0 && fi.n_args == 4 && fi.arg_roles[3] == TUNERT_ROLE_TENSORMAP &&
        !strcmp(fi.arg_dtypes[3], "bf16"));
  /* the tuned problem: expressions evaluated */
  int64_t d1[2] = {384, 512};
  const tunert_selection *s;
  CHECK_MSG(tunert_select(ctx, "tm", d1, 2, &s, &e) == 0, e.msg);
  tunert_selection_info si = {.struct_size = sizeof si};
  tunert_selection_info_get(s, &si);
  const tunert_tensormap_info *t = si.tensormaps ? &si.tensormaps[3] : NULL;
  CHECK(t && t->tensor == 0 && t->rank == 2 && t->dims[0] == 384 && t->dims[1] == 512 && t->strides[0] == 768 && t->box[0] == 64 &&
        t->box[1] == 32 && t->swizzle == 128 && t->l2_promotion == 128 && !t->oob_nan && t->element_strides[0] == 1 &&
        t->element_strides[1] == 1);
  CHECK(si.tensormaps && si.tensormaps[0].tensor == -1 && si.tensormaps[2].tensor == -1);
  /* strides over dims only (the scalar R is the dim R to expressions): dense rows */
  CHECK(si.tensormap_row_strides && si.tensormap_row_strides[3] == -1);
  CHECK(si.param_offsets && si.param_offsets[0] == 0 && si.param_offsets[1] == 8 && si.param_offsets[2] == 16 &&
        si.param_offsets[3] == 64 && si.param_bytes == 192);
  CHECK(si.args[3].role == TUNERT_ROLE_TENSORMAP && si.args[3].rank == 0);
  /* the exact-only entry: its values, oob nan, element strides given */
  int64_t d2[2] = {384, 500};
  CHECK_MSG(tunert_select(ctx, "tm", d2, 2, &s, &e) == 0, e.msg);
  tunert_selection_info_get(s, &si);
  t = &si.tensormaps[3];
  CHECK(t->dims[1] == 500 && t->box[1] == 8 && t->swizzle == 0 && t->oob_nan && t->l2_promotion == 256 && si.exact);
  /* a nearby problem through the portable entry: the map follows the problem */
  int64_t d3[2] = {384, 1024};
  CHECK_MSG(tunert_select(ctx, "tm", d3, 2, &s, &e) == 0, e.msg);
  tunert_selection_info_get(s, &si);
  t = &si.tensormaps[3];
  CHECK(!si.exact && t->dims[0] == 384 && t->dims[1] == 1024 && t->strides[0] == 768 && t->box[1] == 32);
  /* C = 200: stride 400 bytes is fine; C = 100: 200-byte stride, which the driver refuses: the entry is rejected with the reason */
  int64_t d4[2] = {100, 1024};
  int rc = tunert_select(ctx, "tm", d4, 2, &s, &e);
  CHECK_MSG(rc == TUNERT_ENOVARIANT && strstr(e.msg, "tensor map tm of src: stride 2 is 200 bytes, want a multiple of 16") &&
                strstr(e.msg, "dims {100, 1024}"), e.msg);
  /* launching needs the driver (none here, or no device opened) */
  int64_t d5[2] = {384, 512};
  CHECK(tunert_select(ctx, "tm", d5, 2, &s, &e) == 0);
  tunert_arg args[4] = {tunert_arg_devptr(0x10000), tunert_arg_devptr(0x20000), tunert_arg_auto(), tunert_arg_auto()};
  rc = tunert_launch(ctx, s, NULL, args, 4, &e);
  CHECK_MSG(rc == TUNERT_ENODRIVER || rc == TUNERT_ECUDA || rc == TUNERT_ECONTEXT, e.msg);
  tunert_close(ctx);

  /* malformed: a dtype that is not the tensor's; a missing row */
  CHECK(make_bundle(path, 1, "f32") == 0);
  ctx = open_b(path, &e);
  CHECK_MSG(!ctx && e.code == TUNERT_EFORMAT && strstr(e.msg, "tensor map tm has dtype f32, its tensor src is bf16"), e.msg);
  tunert_close(ctx);
  CHECK(make_bundle(path, 1, "bf16") == 0);
  sql(path, "DELETE FROM entry_tensormaps WHERE entry_id = 2");
  ctx = open_b(path, &e);
  CHECK_MSG(!ctx && e.code == TUNERT_EFORMAT && strstr(e.msg, "no spec for tensor map tm"), e.msg);
  tunert_close(ctx);
  CHECK(make_bundle(path, 1, "bf16") == 0);
  sql(path, "UPDATE entry_tensormaps SET box = '64' WHERE entry_id = 1");
  ctx = open_b(path, &e);
  CHECK_MSG(!ctx && e.code == TUNERT_EFORMAT && strstr(e.msg, "has 1 items, want 2"), e.msg);
  tunert_close(ctx);
  CHECK(make_bundle(path, 1, "bf16") == 0);
  sql(path, "UPDATE entry_tensormaps SET element_strides = '1, 9' WHERE entry_id = 2");
  ctx = open_b(path, &e);
  CHECK_MSG(!ctx && e.code == TUNERT_EFORMAT && strstr(e.msg, "element stride 2 out of 1..8"), e.msg);
  tunert_close(ctx);

  /* a 1.0 bundle (written before tensor maps: no entry_tensormaps table) opens and selects */
  CHECK(make_bundle(path, 0, "bf16") == 0);
  sql(path, "DROP TABLE entry_tensormaps; UPDATE meta SET value = '0' WHERE key = 'format_minor'");
  ctx = open_b(path, &e);
  CHECK_MSG(ctx != NULL, e.msg);
  if (ctx) {
    tunert_bundle_info_get(ctx, &bi);
    CHECK(bi.format_minor == 0);
    CHECK_MSG(tunert_select(ctx, "tm", d1, 2, &s, &e) == 0, e.msg);
    tunert_selection_info_get(s, &si);
    CHECK(si.n_args == 3 && si.param_bytes == 20 && si.tensormaps[2].tensor == -1);
    tunert_close(ctx);
  }
}

/* ---- row strides: maps over a strided view (format 1.6) ---------------------------------------- */

/* family "rows": dims C, R; args src (bf16 in, [R, C]), dst (bf16 out), ld (i64, value C: the rows
 * of src are dense in the tuned problem), tm (map of src, dims "C, R", strides ld_text, box 64, 32).
 * ld_dtype: ld's dtype; a second scalar pad (i64, value 8) is named by no map unless ld_text does. */
static int make_rows_bundle(const char *path, const char *ld_text, const char *ld_dtype) {
  tune_err err;
  tune_err_clear(&err);
  db_bundle_writer *w = NULL;
  unlink(path);
  if (db_bundle_create(path, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return -1; }
  int rc = db_bundle_meta(w, "device_name", "Test GPU", &err) | db_bundle_meta(w, "min_reader_minor", "6", &err);
  db_bundle_family fa = {"rows", "abc", "recipes/rows.lua", "return {}", "templates/rows.cuh", "C:int,R:int", "BOX_R:int", NULL};
  int64_t fid, v1, eid;
  rc |= db_bundle_family_put(w, &fa, &fid, &err);
  rc |= db_bundle_arg_put(w, fid, 0, "src", "input", "bf16", &err);
  rc |= db_bundle_arg_put(w, fid, 1, "dst", "output", "bf16", &err);
  rc |= db_bundle_arg_put(w, fid, 2, "ld", "scalar", ld_dtype, &err);
  rc |= db_bundle_arg_put(w, fid, 3, "pad", "scalar", "i64", &err);
  rc |= db_bundle_arg_put(w, fid, 4, "tm", "tensormap", "bf16", &err);
  db_bundle_variant va = {fid, "h1", "{\"BOX_R\":32}", "32", "-DBOX_R=32", "rows_copy"};
  rc |= db_bundle_variant_put(w, &va, &v1, &err);
  static const unsigned char blob[64] = {0x7f, 'E', 'L', 'F'};
  db_bundle_binary b = {v1, "cubin", "sm_90a", "k", blob, sizeof blob, 40, 0, 0, 0, 0};
  rc |= db_bundle_binary_put(w, &b, &err);
  db_bundle_entry e = {.family_id = fid, .variant_id = v1, .problem_name = "r512c384", .problem_hash = "ph", .dims = "384, 512",
                       .dims_json = "{\"C\":384,\"R\":512}", .portable = 1, .exact_why = "", .median_ns = 1e3,
                       .device_name = "Test GPU", .same_binary = 1};
  rc |= db_bundle_entry_put(w, &e, &eid, &err);
  rc |= db_bundle_launch_put(w, eid, 0, "C // 64, R // BOX_R, 1", "128, 1, 1", "0", &err);
  rc |= db_bundle_entry_arg_put(w, eid, 0, "R, C", "", &err);
  rc |= db_bundle_entry_arg_put(w, eid, 1, "R, C", "", &err);
  rc |= db_bundle_entry_arg_put(w, eid, 2, "", "C", &err);
  rc |= db_bundle_entry_arg_put(w, eid, 3, "", "8", &err);
  rc |= db_bundle_entry_arg_put(w, eid, 4, "", "", &err);
  db_bundle_tensormap t = {.entry_id = eid, .idx = 4, .tensor = 0, .dtype = "bf16", .dims = "C, R", .strides = ld_text,
                           .box = "64, BOX_R", .swizzle = 128, .l2_promotion = 128, .oob_nan = 0, .element_strides = ""};
  rc |= db_bundle_tensormap_put(w, &t, &err);
  if (rc) { fprintf(stderr, "make_rows_bundle: %s\n", err.msg); db_bundle_abort(w); return -1; }
  return db_bundle_commit(w, &err) ? -1 : 0;
}

static void test_row_strides(void) {
  /* the extent of a strided view: (rows - 1) * ld + a row, in bytes; dense without ld */
  int64_t shape[2] = {512, 384};
  CHECK(rt_tmap_view_bytes(shape, 2, 512 * 384, 2, -1) == 512ull * 384 * 2);
  CHECK(rt_tmap_view_bytes(shape, 2, 512 * 384, 2, 384) == 512ull * 384 * 2);
  CHECK(rt_tmap_view_bytes(shape, 2, 512 * 384, 2, 1152) == (511ull * 1152 + 384) * 2);
  CHECK(rt_tmap_view_bytes(shape, 2, 512 * 384, 2, INT64_MAX) == UINT64_MAX);

  char path[300];
  snprintf(path, sizeof path, "%s/rows.bundle", dir);
  CHECK(make_rows_bundle(path, "ld * 2", "i64") == 0);
  tunert_err e = {0};
  tunert_ctx *ctx = open_b(path, &e);
  CHECK_MSG(ctx != NULL, e.msg);
  if (!ctx) return;
  tunert_bundle_info bi = {.struct_size = sizeof bi};
  tunert_bundle_info_get(ctx, &bi);
  CHECK(bi.format_minor == TUNERT_FORMAT_MINOR && TUNERT_FORMAT_MINOR >= 6);
  const tunert_selection *s;
  int64_t d[2] = {384, 512};
  CHECK_MSG(tunert_select(ctx, "rows", d, 2, &s, &e) == 0, e.msg);
  tunert_selection_info si = {.struct_size = sizeof si};
  tunert_selection_info_get(s, &si);
  /* the bundle's value of ld (dense rows) at selection; the map says which scalar is its row stride */
  CHECK(si.tensormaps[4].strides[0] == 768 && si.tensormaps[4].dims[1] == 512);
  CHECK(si.tensormap_row_strides && si.tensormap_row_strides[4] == 2 && si.tensormap_row_strides[0] == -1 &&
        si.tensormap_row_strides[2] == -1);
  /* a caller's row stride: the rows of a fused buffer three times as wide, read in place */
  rt_tmap_spec m;
  CHECK_MSG(rt_tmap_for_row_stride(ctx, s, 0, 3 * 384, &m, &e) == 0, e.msg);
  CHECK(m.strides[0] == 3 * 384 * 2 && m.dims[0] == 384 && m.dims[1] == 512 && m.box[1] == 32 && m.ld == 3 * 384 && m.swizzle == 128);
  /* its extent is the view's, past the dense tensor's numel: the selection's check would refuse it */
  char why[300];
  CHECK(rt_tmap_check(&m, 512ull * 384 * 2, why, sizeof why) != 0 && strstr(why, "reaches byte"));
  CHECK(rt_tmap_check(&m, rt_tmap_view_bytes(shape, 2, 512 * 384, 2, 3 * 384), why, sizeof why) == 0);
  /* a stride TMA cannot take: 388 elements are 776 bytes, not a multiple of 16 */
  int rc = rt_tmap_for_row_stride(ctx, s, 0, 388, &m, &e);
  CHECK_MSG(rc == TUNERT_EINVAL && strstr(e.msg, "tensor map tm of src with ld = 388") && strstr(e.msg, "want a multiple of 16"), e.msg);
  /* the selection's own map is untouched */
  tunert_selection_info_get(s, &si);
  CHECK(si.tensormaps[4].strides[0] == 768);
  /* a nearby problem: the bundle's ld follows C */
  int64_t d2[2] = {512, 1000};
  CHECK_MSG(tunert_select(ctx, "rows", d2, 2, &s, &e) == 0, e.msg);
  tunert_selection_info_get(s, &si);
  CHECK(si.tensormaps[4].strides[0] == 1024 && si.tensormaps[4].dims[1] == 1000);
  tunert_close(ctx);

  /* refused at open: two scalars in one map's strides; a float row stride */
  CHECK(make_rows_bundle(path, "(ld + pad) * 2", "i64") == 0);
  ctx = open_b(path, &e);
  CHECK_MSG(!ctx && e.code == TUNERT_EFORMAT && strstr(e.msg, "its strides name ld and pad"), e.msg);
  tunert_close(ctx);
  CHECK(make_rows_bundle(path, "ld * 2", "f32") == 0);
  ctx = open_b(path, &e);
  CHECK_MSG(!ctx && e.code == TUNERT_EFORMAT && strstr(e.msg, "a f32 scalar"), e.msg);
  tunert_close(ctx);
}

/* ---- allocation failures: open and selections of a tensormap family (their map caches) ---------- */

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

/* open, then 100 distinct problems selected; returns the first failing status (0 none) */
static int open_and_select(const char *path, counting *c, tunert_err *e) {
  tunert_allocator al = {c_alloc, c_free, c};
  tunert_options o;
  tunert_options_init(&o);
  o.flags = TUNERT_OPEN_NO_DEVICE;
  o.arch = "sm_90a";
  o.allocator = &al;
  o.max_selections = 2;
  tunert_ctx *ctx = NULL;
  int rc = tunert_open(path, &o, &ctx, e);
  for (int k = 0; !rc && k < 100; ++k) {
    const tunert_selection *s;
    rc = tunert_select(ctx, "tm", (int64_t[2]){384, 600 + 8 * k}, 2, &s, e);
    tunert_selection_info si = {.struct_size = sizeof si};
    if (!rc && (tunert_selection_info_get(s, &si) || si.tensormaps[3].dims[1] != (uint64_t)(600 + 8 * k))) rc = -1;
  }
  tunert_close(ctx);
  return rc;
}

static void test_alloc_failures(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/alloc.bundle", dir);
  CHECK(make_bundle(path, 1, "bf16") == 0);
  counting c = {0};
  tunert_err e = {0};
  CHECK_MSG(open_and_select(path, &c, &e) == 0, e.msg);
  CHECK(c.n_alloc > 3 && c.n_alloc == c.n_free && c.bytes == 0);
  int all_ok = 1;
  for (long k = 1; k <= c.n_alloc; ++k) {
    counting f = {.fail_at = k};
    int rc = open_and_select(path, &f, &e);
    if (rc != TUNERT_ENOMEM || f.n_alloc != f.n_free || f.bytes != 0) {
      all_ok = 0;
      fprintf(stderr, "allocation %ld failing: rc %d (%s), %ld allocs, %ld frees\n", k, rc, e.msg, f.n_alloc, f.n_free);
      break;
    }
  }
  CHECK(all_ok);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/tunert_tmap_test.XXXXXX");
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
  test_layout();
  test_checks();
  test_bundle();
  test_row_strides();
  test_alloc_failures();
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
