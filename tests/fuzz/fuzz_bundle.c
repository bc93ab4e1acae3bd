/* fuzz_bundle.c: libtunert's bundle reader (runtime/tunert.c) on arbitrary files.
 *
 * A bundle is a SQLite file and libtunert opens it by path only, so the input
 * is written to a scratch file and opened without a device (selection only,
 * checked against sm_90a, any arch accepted). A bundle that opens is then used
 * as a deployed program would: its facts, every family's description, and a
 * selection for each tuned problem and for one twice its size (the nearest-
 * problem path with its expressions). Errors are expected results; only
 * crashes and sanitizer reports count. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "tunert.h"

static char bundle_path[PATH_MAX + 32];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  snprintf(bundle_path, sizeof bundle_path, "%s/input.tunebundle", fuzz_scratch_dir());
  return 0;
}

static void select_both(tunert_ctx *ctx, const char *family, const int64_t *dims, int n_dims) {
  int64_t near[64];
  tunert_err err;
  const tunert_selection *sel = NULL;
  for (int pass = 0; pass < 2; ++pass) {
    const int64_t *d = dims;
    if (pass == 1) {
      for (int k = 0; k < n_dims; ++k) near[k] = dims[k] > 1 && dims[k] < INT64_MAX / 2 ? 2 * dims[k] : dims[k];
      d = near;
    }
    if (tunert_select(ctx, family, d, n_dims, &sel, &err) != TUNERT_OK) {
      fuzz_note("%s: no selection: %s", family, err.msg);
      continue;
    }
    tunert_selection_info si = {.struct_size = sizeof si};
    tunert_selection_info_get(sel, &si);
    fuzz_note("%s: selected %s (%s)", family, si.variant, si.exact ? "exact" : "nearest");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write_file(bundle_path, data, size);
  tunert_options opt;
  tunert_options_init(&opt);
  opt.flags = TUNERT_OPEN_NO_DEVICE | TUNERT_OPEN_ANY_ARCH;
  opt.arch = "sm_90a";
  tunert_ctx *ctx = NULL;
  tunert_err err;
  if (tunert_open(bundle_path, &opt, &ctx, &err) != TUNERT_OK) {
    fuzz_note("refused: %s", err.msg);
    if (ctx) { fprintf(stderr, "fuzz_bundle: a failed open returned a context\n"); abort(); }
    return 0;
  }
  tunert_bundle_info bi = {.struct_size = sizeof bi};
  tunert_bundle_info_get(ctx, &bi);
  for (int f = 0; f < tunert_family_count(ctx); ++f) {
    const char *family = tunert_family_name(ctx, f);
    tunert_family_info fi = {.struct_size = sizeof fi};
    if (!family || tunert_family_info_get(ctx, family, &fi, &err) != TUNERT_OK) continue;
    if (fi.n_dims > 64) continue;
    for (int p = 0; p < fi.n_problems && p < 16; ++p) {
      const char *name;
      const int64_t *dims;
      if (tunert_family_problem(ctx, family, p, &name, &dims, &err) == TUNERT_OK)
        select_both(ctx, family, dims, fi.n_dims);
    }
  }
  tunert_close(ctx);
  return 0;
}
