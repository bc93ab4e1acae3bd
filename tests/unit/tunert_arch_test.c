/* tunert_arch_test.c: which binary runs where (runtime/tunert_arch.h), and what libtunert makes of
 * a multi-arch bundle whose variants have different binaries, as `tune bundle --arch sm_90a,sm_80`
 * writes it when one variant does not compile for sm_80 and another uses sm_90a-only code:
 *   family "k", dim N, param ISA; meta archs sm_90a,sm_80,compute_90,compute_80;
 *     ISA 0 at N=1048576: cubin sm_90a, cubin sm_80, ptx compute_90, ptx compute_80
 *     ISA 1 at N=65536:   cubin sm_90a, ptx compute_90          (sm_80 skipped)
 *     ISA 2 at N=1024:    cubin sm_90a                          (sm_80 skipped, no portable PTX)
 *   family "only90a": one variant, cubin sm_90a (sm_80 skipped): nothing for sm_80;
 *   family "old": one variant as older bundles have it, cubin sm_90a and ptx compute_90a.
 * Selection must pass over a variant with no binary for the device, with the reason. Needs no GPU. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "db_bundle.h"
#include "tunert.h"
#include "tunert_arch.h"

static int rank(const char *arch, int dev_major, int dev_minor) {
  int is_ptx, maj, min, spec;
  if (tunert_arch_parse(arch, &is_ptx, &maj, &min, &spec)) return -2;
  return tunert_binary_rank(is_ptx, maj, min, spec, dev_major, dev_minor);
}

static void test_rule(void) {
  int p, a, b, s;
  CHECK(tunert_arch_parse("sm_90a", &p, &a, &b, &s) == 0 && !p && a == 9 && b == 0 && s);
  CHECK(tunert_arch_parse("compute_100", &p, &a, &b, &s) == 0 && p && a == 10 && b == 0 && !s);
  CHECK(tunert_arch_parse("sm_9", &p, &a, &b, &s) == -1 && tunert_arch_parse("gfx90a", &p, &a, &b, &s) == -1);
  CHECK(tunert_arch_parse("sm_90b", &p, &a, &b, &s) == -1);
  /* cubins: exactly the capability (arch-specific first), else same major and a lower minor */
  CHECK(rank("sm_90a", 9, 0) > rank("sm_90", 9, 0) && rank("sm_90", 9, 0) > rank("compute_90", 9, 0));
  CHECK(rank("sm_80", 8, 6) >= 0 && rank("sm_86", 8, 0) < 0 && rank("sm_80", 9, 0) < 0);
  CHECK(rank("sm_90a", 10, 0) < 0 && rank("sm_100a", 10, 3) < 0);
  /* PTX: any later GPU, newest first; arch-specific PTX only on its own capability */
  CHECK(rank("compute_90", 10, 0) >= 0 && rank("compute_90", 10, 0) > rank("compute_80", 10, 0));
  CHECK(rank("compute_90", 8, 9) < 0);
  CHECK(rank("compute_90a", 9, 0) >= 0 && rank("compute_90a", 10, 0) < 0 && rank("compute_90a", 12, 0) < 0);
  CHECK(rank("sm_80", 8, 6) > rank("compute_80", 8, 6)); /* a cubin before the JIT */
}

static unsigned char blob[64];

static int binary(db_bundle_writer *w, int64_t vid, const char *arch, tune_err *err) {
  db_bundle_binary b = {vid, strncmp(arch, "sm_", 3) ? "ptx" : "cubin", arch, "k", blob, sizeof blob, -1, -1, -1, -1, -1};
  return db_bundle_binary_put(w, &b, err);
}

/* A family of one dim N and one param ISA; its entries (variant ISA value at N) and binaries. */
static int family(db_bundle_writer *w, const char *name, int n, const int *isa, const long *at, const char *const *bins,
                  tune_err *err) {
  db_bundle_family fa = {name, "abc", "recipes/k.lua", "return {}", "templates/k.cuh", "N:int", "ISA:int", NULL};
  int64_t fid, vid, eid;
  int rc = db_bundle_family_put(w, &fa, &fid, err);
  rc |= db_bundle_arg_put(w, fid, 0, "y", "output", "f32", err);
  rc |= db_bundle_arg_put(w, fid, 1, "n", "scalar", "i32", err);
  for (int i = 0; i < n && !rc; ++i) {
    char json[32], val[8], hash[8], prob[32], dims[32], dj[48];
    snprintf(json, sizeof json, "{\"ISA\":%d}", isa[i]);
    snprintf(val, sizeof val, "%d", isa[i]);
    snprintf(hash, sizeof hash, "h%d", i);
    db_bundle_variant v = {fid, hash, json, val, "", "k_kernel"};
    rc |= db_bundle_variant_put(w, &v, &vid, err);
    char list[128];
    snprintf(list, sizeof list, "%s", bins[i]);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) rc |= binary(w, vid, t, err);
    snprintf(prob, sizeof prob, "n%ld", at[i]);
    snprintf(dims, sizeof dims, "%ld", at[i]);
    snprintf(dj, sizeof dj, "{\"N\":%ld}", at[i]);
    db_bundle_entry e = {.family_id = fid, .variant_id = vid, .problem_name = prob, .problem_hash = "ph", .dims = dims,
                         .dims_json = dj, .portable = 1, .exact_why = "", .requires = "", .define_exprs = "",
                         .define_values = "", .median_ns = 1000, .device_name = "Test GPU", .same_binary = 1};
    rc |= db_bundle_entry_put(w, &e, &eid, err);
    rc |= db_bundle_launch_put(w, eid, 0, "ceil(N / 128), 1, 1", "128, 1, 1", "0", err);
    rc |= db_bundle_entry_arg_put(w, eid, 0, "N", "", err);
    rc |= db_bundle_entry_arg_put(w, eid, 1, "", "N", err);
  }
  return rc;
}

static int make_bundle(const char *path) {
  tune_err err;
  tune_err_clear(&err);
  db_bundle_writer *w = NULL;
  unlink(path);
  if (db_bundle_create(path, &w, &err)) return -1;
  int rc = db_bundle_meta(w, "device_name", "Test GPU", &err);
  rc |= db_bundle_meta(w, "archs", "sm_90a,sm_80,compute_90,compute_80", &err);
  static const int isa[3] = {0, 1, 2};
  static const long at[3] = {1048576, 65536, 1024};
  static const char *const bins[3] = {"sm_90a,sm_80,compute_90,compute_80", "sm_90a,compute_90", "sm_90a"};
  rc |= family(w, "k", 3, isa, at, bins, &err);
  static const char *const only[1] = {"sm_90a"};
  rc |= family(w, "only90a", 1, isa + 2, at + 2, only, &err);
  static const char *const old[1] = {"sm_90a,compute_90a"};
  rc |= family(w, "old", 1, isa + 2, at + 2, old, &err);
  if (rc) { db_bundle_abort(w); fprintf(stderr, "%s\n", err.msg); return -1; }
  return db_bundle_commit(w, &err);
}

static tunert_ctx *open_arch(const char *path, const char *arch, uint32_t flags, tunert_err *e) {
  tunert_options o;
  tunert_options_init(&o);
  o.arch = arch;
  o.flags = flags | TUNERT_OPEN_NO_DEVICE;
  tunert_ctx *ctx = NULL;
  return tunert_open(path, &o, &ctx, e) ? NULL : ctx;
}

/* The selection of family k at N on ctx: its variant, kind and binary into si; 0 or the status. */
static int pick(tunert_ctx *ctx, const char *fam, long n, tunert_selection_info *si, tunert_err *e) {
  int64_t d = n;
  const tunert_selection *s;
  si->struct_size = sizeof *si;
  int rc = tunert_select(ctx, fam, &d, 1, &s, e);
  if (!rc) tunert_selection_info_get(s, si);
  return rc;
}

static void test_bundle(const char *path) {
  tunert_err e;
  tunert_selection_info si;
  /* 9.0: every variant runs, exactly */
  tunert_ctx *ctx = open_arch(path, "sm_90a", 0, &e);
  CHECK(ctx != NULL);
  CHECK(ctx && pick(ctx, "k", 1024, &si, &e) == 0 && si.exact && !strcmp(si.variant, "{\"ISA\":2}") && !strcmp(si.binary, "cubin sm_90a"));
  tunert_close(ctx);

  /* sm_80: family only90a has nothing there, and says that the bundle skipped it */
  ctx = open_arch(path, "sm_80", 0, &e);
  CHECK(ctx == NULL && e.code == TUNERT_EARCH && strstr(e.msg, "family only90a") && strstr(e.msg, "tune bundle skipped sm_80"));
  if (ctx == NULL && !strstr(e.msg, "tune bundle skipped sm_80")) fprintf(stderr, "  %s\n", e.msg);
  ctx = open_arch(path, "sm_80", TUNERT_OPEN_ANY_ARCH, &e);
  CHECK(ctx != NULL);
  /* N=1024 is tuned (ISA 2), N=65536 too (ISA 1): neither has an sm_80 binary, so ISA 0 serves them */
  CHECK(ctx && pick(ctx, "k", 1024, &si, &e) == 0 && !si.exact && !strcmp(si.kind, "nearest") &&
        !strcmp(si.variant, "{\"ISA\":0}") && !strcmp(si.binary, "cubin sm_80"));
  CHECK(ctx && strstr(si.reason, "is tuned problem n1024, but its entry cannot serve it here"));
  CHECK(ctx && strstr(si.reason, "n1024: no binary runs on sm_80 (this variant has cubin sm_90a (arch-specific: 9.0 only), no PTX); "
                                 "tune bundle skipped sm_80 for this variant"));
  CHECK(ctx && strstr(si.reason, "n65536: no binary runs on sm_80 (this variant has cubin sm_90a (arch-specific: 9.0 only), ptx compute_90)"));
  CHECK(ctx && pick(ctx, "k", 1048576, &si, &e) == 0 && si.exact && !strcmp(si.binary, "cubin sm_80"));
  CHECK(ctx && pick(ctx, "only90a", 1024, &si, &e) == TUNERT_ENOVARIANT && strstr(e.msg, "no binary runs on sm_80"));
  /* the ranked list: the two that cannot run come last, each with its reason */
  tunert_candidate c[4];
  int n = 0;
  int64_t d = 1024;
  c[0].struct_size = sizeof c[0];
  CHECK(ctx && tunert_select_candidates(ctx, "k", &d, 1, c, 4, &n, &e) == 0 && n == 3);
  CHECK(n == 3 && c[0].ok && !strcmp(c[0].variant, "{\"ISA\":0}") && !c[1].ok && !c[2].ok);
  CHECK(n == 3 && !strcmp(c[1].tuned_problem, "n65536") && strstr(c[1].why, "no binary runs on sm_80"));
  CHECK(n == 3 && !strcmp(c[2].tuned_problem, "n1024") && strstr(c[2].why, "arch-specific: 9.0 only"));
  tunert_close(ctx);

  /* sm_86: ISA 0's sm_80 cubin; the skip is reported against the sm_80 target it could have used */
  ctx = open_arch(path, "sm_86", TUNERT_OPEN_ANY_ARCH, &e);
  CHECK(ctx && pick(ctx, "k", 65536, &si, &e) == 0 && !strcmp(si.variant, "{\"ISA\":0}") && !strcmp(si.binary, "cubin sm_80"));
  CHECK(ctx && strstr(si.reason, "tune bundle skipped sm_80 for this variant"));
  tunert_close(ctx);

  /* 10.0: compute_90 PTX JITs (ISA 1 is nearer to N=1024 than ISA 0); ISA 2 has no portable PTX;
     the old bundle's compute_90a PTX is arch-specific and does not run either */
  ctx = open_arch(path, "sm_100", TUNERT_OPEN_ANY_ARCH, &e);
  CHECK(ctx && pick(ctx, "k", 1024, &si, &e) == 0 && !strcmp(si.variant, "{\"ISA\":1}") &&
        !strcmp(si.binary, "ptx compute_90 (JIT by the driver)"));
  CHECK(ctx && strstr(si.reason, "n1024: no binary runs on sm_100 (this variant has cubin sm_90a (arch-specific: 9.0 only), no PTX)"));
  CHECK(ctx && !strstr(si.reason, "tune bundle skipped")); /* sm_100 was not a target */
  CHECK(ctx && pick(ctx, "old", 1024, &si, &e) == TUNERT_ENOVARIANT &&
        strstr(e.msg, "ptx compute_90a (arch-specific: 9.0 only)"));
  tunert_close(ctx);
  ctx = open_arch(path, "sm_100", 0, &e);
  CHECK(ctx == NULL && e.code == TUNERT_EARCH && strstr(e.msg, "--arch sm_100")); /* not a target: make it one */
}

int main(void) {
  char dir[] = "/tmp/tunert_arch_test.XXXXXX", path[256];
  if (!mkdtemp(dir)) return 1;
  snprintf(path, sizeof path, "%s/m.bundle", dir);
  test_rule();
  CHECK(make_bundle(path) == 0);
  test_bundle(path);
  unlink(path);
  rmdir(dir);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
