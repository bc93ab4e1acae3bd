/* bundle_cmd.c: `tune bundle --recipe NAME -o FILE [options]`: the command line of bundle.h. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "argv.h"
#include "bundle.h"
#include "commands.h"

static const char *usage_bundle =
    "usage: tune bundle --recipe NAME [--recipe NAME...] -o FILE [options]\n"
    "\n"
    "Writes a bundle for libtunert (docs/runtime.md): per kernel family, tuned\n"
    "problem and GPU model, the fastest verified variant in the databases, its\n"
    "cubin per architecture and its PTX (compiled now with NVRTC), its launch\n"
    "geometry as expressions, its arguments and where it all came from.\n"
    "\n"
    "Results of several GPU models (a `tune db merge` of an H100 and an H200\n"
    "database, or both given with --db) give entries for each model, never\n"
    "pooled: libtunert takes those of the GPU it runs on, else those of another\n"
    "model of the same arch (such a bundle needs a reader of bundle format 1.5).\n"
    "\n"
    "A variant that does not compile for one of the --arch list (wgmma needs\n"
    "sm_90a, say) is skipped for that arch only and the summary names it with the\n"
    "compiler's reason; libtunert then serves its problems there with the next\n"
    "entry (nearest, then fallback). The arch the results were measured on must\n"
    "compile. PTX is portable only: compute_90 for a variant that also compiles\n"
    "for sm_90, none for one using sm_90a-only instructions (no later GPU can JIT\n"
    "it). A family left with no variant for an arch fails the bundle unless\n"
    "--allow-missing-arch.\n"
    "\n"
    "  --recipe NAME          a recipe name (copy, attention.prefill) or a family\n"
    "                         prefix (attention); repeatable, or comma-separated\n"
    "  -o, --out FILE         the bundle to write (replaced atomically)\n"
    "  --db FILE              results database (default tune.db); repeatable: the\n"
    "                         results of all are taken together, per GPU model\n"
    "  --device NAME          only the GPU models whose name contains NAME\n"
    "                         (case-insensitive); default: every model there is\n"
    "  --arch LIST            architectures to compile for, e.g. sm_90a,sm_80\n"
    "                         (default: those the results were measured on)\n"
    "  --no-ptx               cubins only (no JIT fallback)\n"
    "  --allow-missing-arch   write the bundle even where a family has no variant\n"
    "                         for an --arch (libtunert refuses that family on such\n"
    "                         a GPU with TUNERT_EARCH); a warning says which\n"
    "  --no-vendor            keep tune's kernel where a vendor library (tune compare's\n"
    "                         peers) measured faster, instead of a vendor entry\n"
    "  --no-vendor-for LIST   the same for these families only (names or prefixes as\n"
    "                         --recipe; repeatable, or comma-separated), e.g.\n"
    "                         attention.decode,attention.decode_tma: their peers read\n"
    "                         a contiguous cache, not an engine's pages\n"
    "  --allow-source-change  take results measured with an older recipe or template\n"
    "                         source (the bundle records both hashes)\n"
    "  --jobs N               compile threads (default: cores)\n"
    "  --quiet                no per-problem summary (skipped variants are still\n"
    "                         listed)\n";

/* --recipe A,B (or --no-vendor-for A,B): each name into names[*n] (the texts copied into buf). */
static void add_names(tune_argv *ap, const char *flag, const char *v, const char **names, int *n, char (*buf)[128]) {
  char list[1024];
  snprintf(list, sizeof list, "%s", v);
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*n == TUNE_BUNDLE_MAX_RECIPES) { tune_argv_error(ap, "too many %s", flag); return; }
    snprintf(buf[*n], sizeof buf[0], "%s", t);
    names[*n] = buf[*n];
    ++*n;
  }
}

/* The options into o; 0, 2 (usage error, printed) or -1 (--help, printed). */
static int parse_bundle_opts(int argc, char **argv, tune_bundle_opts *o, char (*recipes_buf)[128],
                             char (*no_vendor_buf)[128]) {
  tune_argv ap;
  tune_argv_init(&ap, "tune bundle", argc, argv);
  while (tune_argv_next(&ap)) {
    const char *v;
    if (tune_argv_flag(&ap, "--help") || tune_argv_flag(&ap, "-h")) { fputs(usage_bundle, stdout); return -1; }
    if (tune_argv_str(&ap, "--recipe", &v)) add_names(&ap, "--recipe", v, o->recipes, &o->n_recipes, recipes_buf);
    else if (tune_argv_str(&ap, "--no-vendor-for", &v))
      add_names(&ap, "--no-vendor-for", v, o->no_vendor_for, &o->n_no_vendor_for, no_vendor_buf);
    else if (tune_argv_str(&ap, "-o", &o->out) || tune_argv_str(&ap, "--out", &o->out)) {}
    else if (tune_argv_str(&ap, "--db", &v)) {
      if (o->n_dbs == TUNE_BUNDLE_MAX_DBS) tune_argv_error(&ap, "at most %d --db", TUNE_BUNDLE_MAX_DBS);
      else o->db_paths[o->n_dbs++] = o->db_path = v;
    } else if (tune_argv_str(&ap, "--device", &o->device) || tune_argv_str(&ap, "--arch", &o->archs)) {}
    else if (tune_argv_int(&ap, "--jobs", &o->jobs)) { if (o->jobs < 1) tune_argv_bad(&ap, "want a positive count"); }
    else if (tune_argv_flag(&ap, "--no-ptx")) o->no_ptx = 1;
    else if (tune_argv_flag(&ap, "--no-vendor")) o->no_vendor = 1;
    else if (tune_argv_flag(&ap, "--allow-missing-arch")) o->allow_missing_arch = 1;
    else if (tune_argv_flag(&ap, "--allow-source-change")) o->allow_source_change = 1;
    else if (tune_argv_flag(&ap, "--quiet")) o->quiet = 1;
    else tune_argv_unknown(&ap);
  }
  if (ap.failed) { fprintf(stderr, "%s\n", ap.msg); return 2; }
  return 0;
}

int tune_cmd_bundle(int argc, char **argv) {
  tune_bundle_opts o;
  memset(&o, 0, sizeof o);
  o.db_path = "tune.db";
  o.jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
  static char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  o.exe = exe;
  static char recipes_buf[TUNE_BUNDLE_MAX_RECIPES][128], no_vendor_buf[TUNE_BUNDLE_MAX_RECIPES][128];
  int prc = parse_bundle_opts(argc, argv, &o, recipes_buf, no_vendor_buf);
  if (prc) return prc < 0 ? 0 : prc;
  if (argc == 0) { fputs(usage_bundle, stderr); return 2; }
  if (!o.n_recipes || !o.out) {
    fprintf(stderr, "tune bundle: %s is required (tune bundle --help)\n", !o.n_recipes ? "--recipe NAME" : "-o FILE");
    return 2;
  }
  if (o.n_dbs) o.db_path = o.db_paths[0];
  for (int d = 0; d < (o.n_dbs ? o.n_dbs : 1); ++d) {
    const char *p = o.n_dbs ? o.db_paths[d] : o.db_path;
    if (access(p, R_OK)) { fprintf(stderr, "tune bundle: %s: no such database (--db FILE)\n", p); return 1; }
  }
  tune_err err;
  tune_err_clear(&err);
  if (tune_bundle_run(&o, &err)) {
    fprintf(stderr, "tune bundle: %s: not written: %s\n", o.out, err.msg);
    return 1;
  }
  return 0;
}
