/* bundle_archs.c: what each requested architecture of a bundle gets: the variants a device of it
 * can run (libtunert's rule, runtime/tunert_arch.h, over the binaries that compiled), the refusal
 * of a family left with none there (unless --allow-missing-arch), and the per-arch summary. */
#include <stdio.h>
#include <string.h>

#include "bundle_int.h"
#include "tunert_arch.h"

int bundle_variant_runs_on(const bstate *s, int v, int a, const char **which) {
  int is_ptx, dev_major, dev_minor, spec;
  if (tunert_arch_parse(s->archs[a], &is_ptx, &dev_major, &dev_minor, &spec)) return 0;
  int per = bundle_jobs_per_variant(s), best = -1;
  const char *arch = NULL;
  for (int k = 0; k < per; ++k) {
    const tune_compile_job *j = &s->jobs[s->var[v].job0 + k];
    int bp, maj, min, bs;
    if (!j->bin.ok || !j->arch || tunert_arch_parse(j->arch, &bp, &maj, &min, &bs)) continue;
    int rank = tunert_binary_rank(bp, maj, min, bs, dev_major, dev_minor);
    if (rank > best) { best = rank; arch = j->arch; }
  }
  if (which) *which = arch;
  return best >= 0;
}

int bundle_variant_compiled(const bstate *s, int v) {
  int per = bundle_jobs_per_variant(s);
  for (int k = 0; k < per; ++k)
    if (s->jobs[s->var[v].job0 + k].bin.ok) return 1;
  return 0;
}

/* Variants of family fi that a device of s->archs[a] runs. */
static int family_runs_on(const bstate *s, int fi, int a, int *n_variants) {
  int n = 0, runs = 0;
  for (int v = 0; v < s->n_variants; ++v) {
    if (s->var[v].family != fi) continue;
    ++n;
    runs += bundle_variant_runs_on(s, v, a, NULL);
  }
  if (n_variants) *n_variants = n;
  return runs;
}

/* The first skip reason of family fi's variants on arch a (every variant of it was skipped there). */
static const char *family_skip_why(const bstate *s, int fi, int a) {
  for (int v = 0; v < s->n_variants; ++v)
    if (s->var[v].family == fi && s->var[v].skip_why[a][0]) return s->var[v].skip_why[a];
  return "no binary of it runs there";
}

int bundle_check_archs(bstate *s, tune_err *err) {
  char list[2048] = "";
  size_t len = 0;
  int missing = 0;
  for (int a = 0; a < s->n_archs; ++a)
    for (int fi = 0; fi < s->n_families; ++fi) {
      int n;
      if (family_runs_on(s, fi, a, &n)) continue;
      ++missing;
      if (len < sizeof list)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s: family %s: none of its %d variant%s compiles for it (%s)",
                                missing > 1 ? "; " : "", s->archs[a], s->fam[fi].name, n, n == 1 ? "" : "s",
                                family_skip_why(s, fi, a));
    }
  if (!missing) return TUNE_OK;
  for (int fi = 0; fi < s->n_families; ++fi) {
    int any = 0;
    for (int v = 0; v < s->n_variants; ++v) any |= s->var[v].family == fi && bundle_variant_compiled(s, v);
    if (!any)
      return tune_fail(err, TUNE_EINVAL, "family %s: no variant compiles for any of %s (%s)", s->fam[fi].name,
                       s->o->archs ? s->o->archs : s->archs[0], family_skip_why(s, fi, 0));
  }
  if (!s->o->allow_missing_arch)
    return tune_fail(err, TUNE_EINVAL, "%s. A family needs a variant that runs on every --arch: leave that arch out, give the "
                     "recipe a fallback config that compiles there, or pass --allow-missing-arch (libtunert then refuses the "
                     "family on such a GPU with TUNERT_EARCH)", list);
  fprintf(stderr, "tune bundle: warning: %s (--allow-missing-arch: libtunert refuses the family on such a GPU with TUNERT_EARCH)\n", list);
  return TUNE_OK;
}

/* One arch's lines: variants skipped (with the compiler's reason and whether PTX covers them),
 * tuned problems another entry serves there. Prints nothing when nothing was skipped. */
static void print_arch(const bstate *s, int a) {
  int skipped = 0;
  for (int v = 0; v < s->n_variants; ++v) skipped += s->var[v].skip_why[a][0] != 0;
  if (!skipped) return;
  printf("%s: %d of %d variants skipped (they do not compile for it):\n", s->archs[a], skipped, s->n_variants);
  for (int v = 0; v < s->n_variants; ++v) {
    const bvariant *bv = &s->var[v];
    if (!bv->skip_why[a][0]) continue;
    const char *which = NULL;
    int jit = bundle_variant_runs_on(s, v, a, &which);
    printf("  %s %s: %s%s%s\n", s->fam[bv->family].name, bv->params_json, bv->skip_why[a], jit ? "; runs there as " : "",
           jit ? which : "");
  }
  for (int i = 0; i < s->n_entries; ++i) {
    const bentry *be = &s->ent[i];
    if (be->served[a][0] && family_runs_on(s, be->family, a, NULL))
      printf("  tuned problem %s / %s there: %s%s\n", s->fam[be->family].name, be->p->name, be->served[a],
             bundle_variant_compiled(s, be->variant) ? "" : " (its own variant compiles for no --arch: left out of the bundle)");
  }
  for (int fi = 0; fi < s->n_families; ++fi)
    if (!family_runs_on(s, fi, a, NULL))
      printf("  family %s: no variant at all (--allow-missing-arch): libtunert refuses it on %s with TUNERT_EARCH\n",
             s->fam[fi].name, s->archs[a]);
}

/* PTX: per virtual arch how many variants have it; the variants without any, and why. */
static void print_ptx(const bstate *s) {
  if (s->o->no_ptx) return;
  char seen[TUNE_BUNDLE_MAX_ARCHS][24];
  int n_seen = 0;
  printf("PTX (JIT on newer GPUs):");
  for (int a = 0; a < s->n_archs; ++a)
    for (int v = 0; v < s->n_variants; ++v) {
      const char *p = s->var[v].ptx_arch[a];
      int k = 0;
      while (k < n_seen && strcmp(seen[k], p)) ++k;
      if (!p[0] || k < n_seen) continue;
      snprintf(seen[n_seen++], sizeof seen[0], "%s", p);
      int n = 0;
      for (int w = 0; w < s->n_variants; ++w) {
        int has = 0;
        for (int b = 0; b < s->n_archs; ++b) has |= !strcmp(s->var[w].ptx_arch[b], p);
        n += has;
      }
      printf(" %s for %d of %d variants;", p, n, s->n_variants);
    }
  int none = 0;
  for (int v = 0; v < s->n_variants; ++v) {
    int any = 0;
    for (int a = 0; a < s->n_archs; ++a) any |= s->var[v].ptx_arch[a][0] != 0;
    none += !any;
  }
  printf(" none for %d\n", none);
  for (int v = 0; v < s->n_variants; ++v) {
    const bvariant *bv = &s->var[v];
    const char *why = NULL;
    int any = 0;
    for (int a = 0; a < s->n_archs; ++a) {
      any |= bv->ptx_arch[a][0] != 0;
      if (!why && bv->ptx_why[a][0]) why = bv->ptx_why[a];
    }
    if (!any)
      printf("  no PTX: %s %s: %s\n", s->fam[bv->family].name, bv->params_json, why ? why : "it compiles for none of the archs");
  }
}

void bundle_print_archs(const bstate *s) {
  int skipped = 0;
  for (int v = 0; v < s->n_variants; ++v)
    for (int a = 0; a < s->n_archs; ++a) skipped += s->var[v].skip_why[a][0] != 0;
  if (s->o->quiet && !skipped) return;
  printf("\n");
  for (int a = 0; a < s->n_archs; ++a) print_arch(s, a);
  if (!skipped) printf("every variant compiled for %s\n", s->o->archs ? s->o->archs : s->archs[0]);
  print_ptx(s);
}
