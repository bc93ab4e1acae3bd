/* bundle.c: `tune bundle`: the stages (bundle_int.h) run in order, the refusal of results measured
 * with other code, and the summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bundle_int.h"

static void fmt_ns(double ns, char *b, size_t n) {
  if (ns >= 1e6) snprintf(b, n, "%.3f ms", ns / 1e6);
  else snprintf(b, n, "%.2f us", ns / 1e3);
}

static int parse_archs(bstate *s, const char *text, tune_err *err) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  for (char *save = NULL, *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
    if (strncmp(t, "sm_", 3) || strlen(t) < 5 || strlen(t) > 8)
      return tune_fail(err, TUNE_EINVAL, "--arch %s: want sm_XY names, e.g. sm_90a,sm_80", t);
    if (s->n_archs == TUNE_BUNDLE_MAX_ARCHS) return tune_fail(err, TUNE_EINVAL, "--arch: at most %d", TUNE_BUNDLE_MAX_ARCHS);
    snprintf(s->archs[s->n_archs++], sizeof s->archs[0], "%s", t);
  }
  if (!s->n_archs) return tune_fail(err, TUNE_EINVAL, "--arch: no architecture given");
  return TUNE_OK;
}

/* Same binary as measured? then a changed recipe source does not matter; otherwise refused, or
 * taken with --allow-source-change (and said so). */
static int check_sources(bstate *s, tune_err *err) {
  const tune_bundle_opts *o = s->o;
  int refused = 0;
  for (int i = 0; i < s->n_entries; ++i) {
    bentry *be = &s->ent[i];
    const char *measured_key = be->result.binary_key;
    be->same_binary = -1;
    for (int a = 0; a < s->n_archs; ++a)
      if (!strcmp(s->archs[a], be->best->arch) && measured_key[0])
        be->same_binary = !strcmp(s->jobs[s->var[be->variant].job0 + a].bin.key, measured_key);
    if (!be->mismatch_source || be->same_binary == 1) continue;
    const char *fam = s->fam[be->family].name, *now = s->fam[be->family].r->source_hash;
    if (!o->allow_source_change) {
      if (!refused++)
        fprintf(stderr, "tune bundle: %s / %s was measured with recipe source %s; the recipe and templates now hash to %s "
                        "and compile to a different binary.\n",
                fam, be->p->name, be->best->source_hash, now);
    } else if (!o->quiet)
      printf("  warning: %s / %s: measured with source %s, bundled from source %s (--allow-source-change; recorded in the bundle)\n",
             fam, be->p->name, be->best->source_hash, now);
  }
  if (refused)
    return tune_fail(err, TUNE_EINVAL, "%d tuned problem(s) were measured with other code than the current recipe/templates: "
                     "measure again (tune run) or pass --allow-source-change to bundle the current code with those measurements", refused);
  return TUNE_OK;
}

/* The family's tuned entries that no peer timing weighed (bundle_mark_vendors), counted: for them the
 * bundle cannot say that the vendor library is not faster. */
static void print_unweighed(const bstate *s, int fi) {
  if (s->o->no_vendor || bundle_vendor_kept(s->o, s->fam[fi].name)) return;
  int tuned = 0, unweighed = 0;
  for (int i = 0; i < s->n_entries; ++i) {
    const bentry *be = &s->ent[i];
    if (be->family != fi || be->kind == BUNDLE_FALLBACK) continue;
    ++tuned;
    unweighed += !be->weighed;
  }
  if (unweighed)
    printf("  not weighed against a vendor library: %d of %d entries (no peer timing of their problem on their "
           "GPU model in these databases; tune compare measures one)\n", unweighed, tuned);
}

/* Per family and problem what was bundled, per arch what was skipped, and what was written; with
 * --quiet only the skipped variants (bundle_print_archs). */
static void print_summary(const bstate *s, double secs) {
  const tune_bundle_opts *o = s->o;
  if (o->quiet) { bundle_print_archs(s); return; }
  for (int fi = 0; fi < s->n_families; ++fi) {
    const bfamily *f = &s->fam[fi];
    printf("\n%s (%s, source %s):\n", f->name, f->recipe_file, f->r->source_hash);
    for (int i = 0; i < s->n_entries; ++i) {
      const bentry *be = &s->ent[i];
      if (be->family != fi) continue;
      char t[32], label[160];
      fmt_ns(be->best->median_ns, t, sizeof t);
      if (s->n_models > 1 && be->model >= 0) snprintf(label, sizeof label, "%s [%.40s]", be->p->name, s->models[be->model].name);
      else snprintf(label, sizeof label, "%s", be->p->name);
      if (be->kind == BUNDLE_FALLBACK) { snprintf(label, sizeof label, "fallback (%.60s)", be->p->name); snprintf(t, sizeof t, "-"); }
      printf("  %-22s %10s  %s\n  %-22s %10s  %s%s\n", label, t, s->var[be->variant].params_json, "", "",
             !bundle_variant_compiled(s, be->variant) ? "left out: its variant compiles for no --arch" :
             be->portable ? "portable: expressions, usable for nearby problems" : "exact-only: ",
             be->portable || !bundle_variant_compiled(s, be->variant) ? "" : be->exact_why);
      if (be->kind == BUNDLE_VENDOR) {
        char vt[32];
        fmt_ns(be->vendor_ns, vt, sizeof vt);
        printf("  %-22s %10s  vendor entry: %s measured faster (%s; %s)\n", "", "", be->vendor, vt, be->vendor_why);
      }
    }
    print_unweighed(s, fi);
  }
  bundle_print_archs(s);
  long size = 0;
  FILE *fp = fopen(o->out, "rb");
  if (fp) { fseek(fp, 0, SEEK_END); size = ftell(fp); fclose(fp); }
  int n_binaries = 0, n_problems = 0, n_variants = 0;
  for (int i = 0; i < s->n_jobs; ++i) n_binaries += s->jobs[i].bin.ok;
  for (int v = 0; v < s->n_variants; ++v) n_variants += bundle_variant_compiled(s, v);
  for (int i = 0; i < s->n_entries; ++i) n_problems += bundle_variant_compiled(s, s->ent[i].variant);
  printf("\nwrote %s: %d famil%s, %d problems, %d variants, %d binaries (%s), %.1f KiB in %.1f s; checked with libtunert\n",
         o->out, s->n_families, s->n_families == 1 ? "y" : "ies", n_problems, n_variants, n_binaries,
         o->archs ? o->archs : s->archs[0], size / 1024.0, secs);
  if (s->n_models > 1) printf("GPU models: %s; libtunert picks each problem's entry of the GPU it runs on\n", s->model_list);
}

void bundle_state_free(bstate *s) {
  for (int i = 0; i < s->n_jobs; ++i) db_binary_release(&s->jobs[i].bin);
  free(s->jobs);
  for (int i = 0; s->ent && i < s->n_entries; ++i) { db_bundle_result_free(&s->ent[i].result); free(s->ent[i].tm); }
  free(s->ent);
  for (int i = 0; s->var && i < s->n_variants; ++i) free(s->var[i].source_text);
  free(s->var);
  db_bundle_bests_free(&s->bests);
  for (int i = 0; i < s->n_sets; ++i) tune_recipes_free(s->sets[i]);
  for (int d = 0; d < s->n_dbs; ++d) db_close(s->dbs[d]);
  free(s);
}

/* Without --arch: the archs the entries were measured on, in the order first seen (one for a bundle
 * of GPU models of one arch). */
static void measured_archs(const bstate *s, char *out, size_t n) {
  size_t len = 0;
  out[0] = 0;
  for (int i = 0; i < s->n_entries; ++i) {
    const char *a = s->ent[i].best->arch;
    int seen = 0;
    for (int j = 0; j < i && !seen; ++j) seen = !strcmp(s->ent[j].best->arch, a);
    if (!seen && *a && len < n) len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", a);
  }
  if (!out[0]) snprintf(out, n, "%s", s->fam[0].measured_arch);
}

/* The stages, in order; on failure nothing is left at o->out. */
static int run_stages(bstate *s, tune_err *err) {
  const tune_bundle_opts *o = s->o;
  if (bundle_collect(s, err)) return err->code;
  char archs[256];
  measured_archs(s, archs, sizeof archs);
  if (parse_archs(s, o->archs ? o->archs : archs, err)) return err->code;
  if (bundle_evaluate(s, err) || (!o->no_vendor && bundle_mark_vendors(s, err)) || bundle_add_fallbacks(s, err)) return err->code;
  if (!o->quiet)
    printf("bundling %d famil%s, %d tuned problems, %d variants measured on %s; compiling for %s%s on %d threads\n",
           s->n_families, s->n_families == 1 ? "y" : "ies", s->n_entries, s->n_variants, s->model_list,
           o->archs ? o->archs : archs, o->no_ptx ? "" : " (cubin + PTX)", o->jobs);
  fflush(stdout);
  if (bundle_compile(s, err) || bundle_check_archs(s, err) || check_sources(s, err)) return err->code;
  for (int i = 0; i < s->n_entries; ++i)
    if (bundle_check_entry(s, &s->ent[i], err)) return err->code;
  if (bundle_write(s, err)) return err->code; /* and verified before it is renamed into place */
  return TUNE_OK;
}

int tune_bundle_run(const tune_bundle_opts *o, tune_err *err) {
  bstate *s = calloc(1, sizeof *s);
  if (!s) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  s->o = o;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  s->n_dbs = o->n_dbs > 0 ? o->n_dbs : 1;
  int rc = TUNE_OK;
  for (int d = 0; d < s->n_dbs && !rc; ++d) {
    s->db_paths[d] = o->n_dbs > 0 ? o->db_paths[d] : o->db_path;
    size_t len = strlen(s->db_list);
    snprintf(s->db_list + len, sizeof s->db_list - len, "%s%s", d ? ", " : "", s->db_paths[d]);
    rc = db_open(s->db_paths[d], 1, &s->dbs[d], err);
  }
  if (!rc) rc = run_stages(s, err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!rc) print_summary(s, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
  bundle_state_free(s);
  return rc;
}
