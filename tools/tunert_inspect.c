/* tunert_inspect: what a bundle holds and what libtunert selects, from the
 * command line (no GPU needed).
 *
 *   tunert_inspect BUNDLE                         families, tuned problems, provenance
 *   tunert_inspect BUNDLE --select FAMILY K=V,... the selection for a problem, and why
 *                 [--candidates]                 and every entry of the family ranked for it
 *   tunert_inspect --version                      the libtunert it runs with
 *   options: --arch sm_90a (check against this arch instead of the device's)
 *            --device-name NAME (the GPU model to select for, instead of the device's: a bundle
 *            of several models, format 1.5)
 *            --exact (TUNERT_OPEN_EXACT_ONLY)  --try-launch (only where there is no
 *            driver: shows the error a launch gives there)
 * Exit: 0 ok, 1 a tunert error (printed), 2 usage. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunert.h"

/* tunert_select_candidates for the problem: those that may serve it in selection order, then the
 * others with the reason they are passed over. */
static int print_candidates(tunert_ctx *ctx, const char *family, const int64_t *d, int n_dims) {
  enum { MAX = 256 };
  static tunert_candidate c[MAX];
  int n = 0;
  tunert_err e;
  c[0].struct_size = sizeof c[0];
  if (tunert_select_candidates(ctx, family, d, n_dims, c, MAX, &n, &e)) {
    printf("candidates: error (%s): %s\n", tunert_status_name(e.code), e.msg);
    return 1;
  }
  printf("candidates:\n");
  int models = tunert_model_count(ctx) > 1; /* then each names the GPU model it was tuned on */
  for (int i = 0; i < n; ++i)
    printf("  %d. %s %-8s %s %s%s%s%s%s\n", i + 1, c[i].ok ? "ok    " : "passed", c[i].kind, c[i].tuned_problem, c[i].variant,
           models && c[i].measured_on[0] ? " on " : "", models ? c[i].measured_on : "", c[i].ok ? "" : ": ", c[i].ok ? "" : c[i].why);
  return 0;
}

/* The GPU models the bundle has entries of, and how selection ranks them for the device here. */
static void print_models(const tunert_ctx *ctx, const tunert_bundle_info *bi) {
  static const char *tiers[] = {"this GPU", "same arch", "other arch"};
  printf("GPU models: %d; selecting for %s%s\n", tunert_model_count(ctx), bi->device_name_here[0] ? bi->device_name_here : "an unknown model",
         bi->model_here >= 0 ? "" : " (none of them: every model of its arch ranks alike)");
  for (int m = 0; m < tunert_model_count(ctx); ++m) {
    tunert_model_info mi = {.struct_size = sizeof mi};
    if (tunert_model_info_get(ctx, m, &mi)) continue;
    printf("  %-32s %-6s %3d SMs  %4d tuned problems  ranks: %s\n", mi.name, mi.arch[0] ? mi.arch : "?", mi.sm_count, mi.n_problems,
           tiers[mi.tier]);
  }
}

static void print_selection(const tunert_selection *s) {
  tunert_selection_info si = {.struct_size = sizeof si};
  tunert_selection_info_get(s, &si);
  printf("family:   %s\nvariant:  %s\ntuned for: %s %s (%s, %.2f us on %s)\nbinary:   %s\nreason:   %s\nkind:     %s%s%s\n",
         si.family, si.variant, si.tuned_problem, si.tuned_dims, si.exact ? "exact" : "nearest", si.measured_ns / 1e3,
         si.measured_on, si.binary, si.reason, si.kind, si.vendor ? " " : "", si.vendor ? si.vendor : "");
  for (int l = 0; l < si.n_launches; ++l) {
    printf("launch %d: %s grid (%u, %u, %u) block (%u, %u, %u) shared %u", l, si.launches[l].kernel, si.launches[l].grid[0],
           si.launches[l].grid[1], si.launches[l].grid[2], si.launches[l].block[0], si.launches[l].block[1],
           si.launches[l].block[2], si.launches[l].shared);
    const unsigned *c = si.clusters ? si.clusters[l] : NULL; /* shown only for a cluster launch */
    if (c && (c[0] > 1 || c[1] > 1 || c[2] > 1)) printf(" cluster (%u, %u, %u)", c[0], c[1], c[2]);
    printf("\n");
  }
  static const char *roles[] = {"input", "output", "scratch", "scalar", "tensormap"};
  for (int a = 0; a < si.n_args; ++a) {
    const tunert_arg_info *x = &si.args[a];
    if (x->role == TUNERT_ROLE_SCALAR) printf("arg %-12s scalar %-4s = %.17g\n", x->name, x->dtype, x->value);
    else if (x->role == TUNERT_ROLE_TENSORMAP) {
      const tunert_tensormap_info *t = &si.tensormaps[a];
      printf("arg %-12s tensormap of %s (%s) dims {", x->name, si.args[t->tensor].name, x->dtype);
      for (int k = 0; k < t->rank; ++k) printf("%s%llu", k ? ", " : "", (unsigned long long)t->dims[k]);
      printf("} strides {");
      for (int k = 0; k + 1 < t->rank; ++k) printf("%s%llu", k ? ", " : "", (unsigned long long)t->strides[k]);
      printf("} box {");
      for (int k = 0; k < t->rank; ++k) printf("%s%u", k ? ", " : "", t->box[k]);
      printf("} swizzle %d l2_promotion %d oob %s\n", t->swizzle, t->l2_promotion, t->oob_nan ? "nan" : "zero");
    }
    else {
      printf("arg %-12s %-7s %-4s [", x->name, roles[x->role], x->dtype);
      for (int k = 0; k < x->rank; ++k) printf("%s%lld", k ? ", " : "", (long long)x->shape[k]);
      printf("] %lld bytes\n", (long long)x->bytes);
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help")) {
    fprintf(stderr, "usage: tunert_inspect BUNDLE [--arch sm_XY] [--device-name NAME] [--exact] [--select FAMILY K=V,... [--try-launch] [--candidates]]\n"
                    "       tunert_inspect --version\n");
    return 2;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("libtunert %s (compiled against %s; reads bundle format %d.x up to %d.%d)\n", tunert_version(),
           TUNERT_VERSION_STRING, TUNERT_FORMAT_MAJOR, TUNERT_FORMAT_MAJOR, TUNERT_FORMAT_MINOR);
    return 0;
  }
  tunert_options o;
  tunert_options_init(&o);
  const char *family = NULL, *dims = NULL;
  int try_launch = 0, candidates = 0;
  for (int i = 2; i < argc; ++i) {
    if (!strcmp(argv[i], "--arch") && i + 1 < argc) o.arch = argv[++i];
    else if (!strcmp(argv[i], "--device-name") && i + 1 < argc) o.device_name = argv[++i];
    else if (!strcmp(argv[i], "--exact")) o.flags |= TUNERT_OPEN_EXACT_ONLY;
    else if (!strcmp(argv[i], "--select") && i + 2 < argc) { family = argv[++i]; dims = argv[++i]; }
    else if (!strcmp(argv[i], "--try-launch")) try_launch = 1;
    else if (!strcmp(argv[i], "--candidates")) candidates = 1;
    else { fprintf(stderr, "tunert_inspect: unknown argument %s\n", argv[i]); return 2; }
  }
  tunert_ctx *ctx = NULL;
  tunert_err e;
  if (tunert_open(argv[1], &o, &ctx, &e)) { printf("error (%s): %s\n", tunert_status_name(e.code), e.msg); return 1; }
  tunert_bundle_info bi = {.struct_size = sizeof bi};
  tunert_bundle_info_get(ctx, &bi);
  if (!family) {
    printf("bundle %s: format %d.%d, made %s by tune %s (NVRTC %s)\nmeasured on %s (%s); binaries %s; checked against %s; opened in %.2f ms"
           " by libtunert %s\n",
           argv[1], bi.format_major, bi.format_minor, bi.created_at, bi.tool_version, bi.nvrtc_version, bi.device_name,
           bi.device_arch, bi.archs, bi.device_arch_here, bi.open_ms, tunert_version());
    print_models(ctx, &bi);
    for (int f = 0; f < tunert_family_count(ctx); ++f) {
      tunert_family_info fi = {.struct_size = sizeof fi};
      tunert_family_info_get(ctx, tunert_family_name(ctx, f), &fi, &e);
      printf("\n%s: %d tuned problems, %d variants (source %s, %s)\n  dims:", fi.name, fi.n_problems, fi.n_variants,
             fi.source_hash, fi.recipe_file);
      for (int d = 0; d < fi.n_dims; ++d) printf(" %s:%s", fi.dims[d], fi.dim_types[d]);
      printf("\n  args:");
      for (int a = 0; a < fi.n_args; ++a) printf(" %s:%s", fi.arg_names[a], fi.arg_dtypes[a]);
      printf("\n");
      for (int p = 0; p < fi.n_problems; ++p) {
        const char *name;
        const int64_t *d;
        tunert_family_problem(ctx, fi.name, p, &name, &d, &e);
        const tunert_selection *s;
        printf("  %-24s", name);
        if (tunert_select(ctx, fi.name, d, fi.n_dims, &s, &e)) { printf(" error: %s\n", e.msg); continue; }
        tunert_selection_info si = {.struct_size = sizeof si};
        tunert_selection_info_get(s, &si);
        printf(" %10.2f us  %s  [%s]\n", si.measured_ns / 1e3, si.variant, si.binary);
      }
    }
    tunert_close(ctx);
    return 0;
  }
  tunert_family_info fi = {.struct_size = sizeof fi};
  if (tunert_family_info_get(ctx, family, &fi, &e)) { printf("error (%s): %s\n", tunert_status_name(e.code), e.msg); tunert_close(ctx); return 1; }
  int64_t d[64] = {0};
  int given[64] = {0};
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", dims);
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    int found = 0;
    if (eq) {
      *eq = 0;
      for (int k = 0; k < fi.n_dims; ++k)
        if (!strcmp(fi.dims[k], kv)) {
          d[k] = !strcmp(eq + 1, "true") ? 1 : !strcmp(eq + 1, "false") ? 0 : strtoll(eq + 1, NULL, 0);
          given[k] = found = 1;
        }
    }
    if (!found) { fprintf(stderr, "tunert_inspect: %s: not a dim of %s\n", kv, family); tunert_close(ctx); return 2; }
  }
  for (int k = 0; k < fi.n_dims; ++k)
    if (!given[k]) { fprintf(stderr, "tunert_inspect: give %s=...\n", fi.dims[k]); tunert_close(ctx); return 2; }
  const tunert_selection *s;
  if (tunert_select(ctx, family, d, fi.n_dims, &s, &e)) {
    printf("error (%s): %s\n", tunert_status_name(e.code), e.msg);
    if (candidates) print_candidates(ctx, family, d, fi.n_dims);
    tunert_close(ctx);
    return 1;
  }
  print_selection(s);
  int rc = candidates ? print_candidates(ctx, family, d, fi.n_dims) : 0;
  if (try_launch) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cuda) {
      dlclose(cuda);
      printf("launch: not tried (a driver is present; launching needs real buffers: see examples/decoder_block)\n");
    } else {
      tunert_arg args[64];
      for (int a = 0; a < fi.n_args; ++a)
        args[a] = fi.arg_roles[a] == TUNERT_ROLE_SCALAR || fi.arg_roles[a] == TUNERT_ROLE_TENSORMAP ? tunert_arg_auto() : tunert_arg_devptr(0x1000);
      rc = tunert_launch(ctx, s, NULL, args, fi.n_args, &e);
      printf("launch: %s%s%s\n", rc ? tunert_status_name(e.code) : "ok", rc ? ": " : "", rc ? e.msg : "");
      rc = rc ? 1 : 0;
    }
  }
  tunert_close(ctx);
  return rc;
}
