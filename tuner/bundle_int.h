/* bundle_int.h: the stages of `tune bundle` (bundle.h) and the state they share.
 *
 *   collect  (bundle_collect.c)  the best verified result per family, tuned problem and GPU model
 *                                of the databases (every model, or those --device matches); each
 *                                entry evaluated by its recipe and grouped into variants (config +
 *                                defines), which the models' entries share;
 *   vendor   (bundle_vendor.c)   entries where a peer library measured faster become vendor
 *                                entries (unless --no-vendor);
 *   compile  (bundle_compile.c)  a cubin per arch and PTX per variant, on the compile pool; a
 *                                variant that does not compile for an arch is skipped there, and
 *                                bundle_archs.c says which and refuses a family left with none;
 *   express  (bundle_expr.c)     the family's dims and params, and each entry's launch geometry,
 *                                shapes, values, requirements and defines as expressions libtunert
 *                                evaluates (runtime/tunert_expr.h), checked against Lua's values;
 *   write    (bundle_write.c)    the bundle file through db/db_bundle.h, verified before it is renamed
 *                                into place;
 *   verify   (bundle_verify.c)   the written file opened by libtunert for each arch and model, every
 *                                tuned problem of that model selected (its own variant, or where that
 *                                has no binary, another entry: never the variant without one).
 * bundle.c runs them in that order. Memory: bstate owns everything below it; bundle_state_free
 * releases it. */
#ifndef TUNE_BUNDLE_INT_H
#define TUNE_BUNDLE_INT_H

#include <limits.h>

#include "bundle.h"
#include "compile.h"
#include "db.h"
#include "db_bundle.h"
#include "recipe.h"
#include "recipe_expr.h"
#include "tunert_expr.h"
#include "tunert_format.h"

#define BUNDLE_MAX_ENTRIES 4096
#define BUNDLE_MAX_SETS 16
#define BUNDLE_MAX_FAMILIES 64
#define BUNDLE_MAX_FALLBACKS 256
#define BUNDLE_MAX_MODELS 8

/* What an entry is (the bundle's entries.kind). */
enum { BUNDLE_TUNED = 0, BUNDLE_FALLBACK = 1, BUNDLE_VENDOR = 2 };

typedef struct bvariant {
  int family;                  /* index into families */
  int vi[64];                  /* value index per param */
  char config_hash[17];
  char params_json[2048];
  tune_variant var;            /* defines and kernel names (of its first entry) */
  char defines_text[4096];
  int64_t id;                  /* in the bundle */
  int job0;                    /* first compile job (cubins, then PTX) */
  char lowered[TUNE_MAX_LAUNCHES][512];
  char *source_text;           /* a code proposal's variant: the template with the proposed region
                                  (malloc'd); NULL: the template itself */
  /* per requested arch (bstate.archs), from bundle_compile: */
  char skip_why[TUNE_BUNDLE_MAX_ARCHS][200]; /* "": its cubin compiled; else the compiler's first error */
  char ptx_arch[TUNE_BUNDLE_MAX_ARCHS][24];  /* its PTX for that arch's virtual arch ("compute_90"), "" none */
  char ptx_why[TUNE_BUNDLE_MAX_ARCHS][200];  /* no PTX although its cubin compiled: why ("" --no-ptx) */
} bvariant;

/* A GPU model whose results the bundle takes (format 1.5: its models row). */
typedef struct bmodel {
  char name[128];              /* the results' device name: "NVIDIA H100 80GB HBM3" */
  db_device device;            /* of its first result taken */
  int64_t id;                  /* in the bundle */
} bmodel;

typedef struct bentry {
  int family, variant;
  int model;                   /* index into bstate.models; -1: a fallback entry (serves every model) */
  int kind;                    /* BUNDLE_TUNED, BUNDLE_FALLBACK (the recipe's fallback config, checked on
                                  tuned problem p), BUNDLE_VENDOR (a peer measured faster at p) */
  char vendor[32];             /* BUNDLE_VENDOR: "cublaslt", "cudnn-sdpa", "sdpa", "torch" */
  double vendor_ns;            /* BUNDLE_VENDOR: the peer's median [ns] */
  char vendor_why[200];        /* BUNDLE_VENDOR: the measurement that decided it, in words */
  int weighed;                 /* a peer's timing of its problem on its GPU model was in the databases:
                                  bundle_mark_vendors weighed the entry against it */
  char fallback_hash[17];      /* BUNDLE_FALLBACK: its config hash (best->config_hash points here) */
  const tune_problem *p;
  const db_bundle_best *best;  /* the best result (borrowed from bstate.bests) */
  db_bundle_result result;     /* what the bundle records of it (owned) */
  tune_variant var;
  tune_problem_setup setup;
  tune_variant_exprs ex;
  int portable;
  char exact_why[600];
  char dims_text[1024];        /* literals, family dim order */
  char define_values[1024];
  int mismatch_source;         /* measured with another recipe source */
  int same_binary;
  tune_tmap_texts *tm;         /* per arg (malloc'd when the recipe has tensor maps), else NULL */
  int tm_row_stride;           /* some tensor map's strides name a scalar arg (a row stride the
                                  caller passes: format 1.6, min_reader_minor 6) */
  char served[TUNE_BUNDLE_MAX_ARCHS][200]; /* bundle_verify, a tuned entry whose variant no binary serves on
                                  that arch: what libtunert selects there instead ("nearest n1m ..."),
                                  or "none: why"; "" when its own variant serves it */
} bentry;

typedef struct bfamily {
  tune_recipe *r;
  char name[128];
  char dims[1024];             /* "B:int,causal:bool" */
  int n_dims;
  char dim_names[TUNERT_MAX_DIMS][64];
  int dim_bool[TUNERT_MAX_DIMS];
  int dim_enum[TUNERT_MAX_DIMS];            /* string dims: passed as the index of the value */
  int n_enum[TUNERT_MAX_DIMS];
  char enum_vals[TUNERT_MAX_DIMS][16][64];  /* the values, sorted */
  char params[2048];
  const char *names[TUNERT_MAX_DIMS + 64 + 1]; /* expression env names: dims, params, sm_count */
  int n_names;
  char domain[2048];           /* the recipe's domain as an expression list, "" none */
  char measured_arch[16];
  char recipe_file[PATH_MAX];  /* as recorded in the results database */
  int64_t id;
} bfamily;

typedef struct bstate {
  const tune_bundle_opts *o;
  const char *verify_path;     /* the file bundle_verify opens: bundle_write's temporary, else o->out */
  int n_dbs;
  const char *db_paths[TUNE_BUNDLE_MAX_DBS];
  db_conn *dbs[TUNE_BUNDLE_MAX_DBS];
  char db_list[2048];          /* "a.db, b.db": for messages and the bundle's meta */
  db_bundle_bests bests;       /* every database's best rows */
  int n_sets;
  tune_recipes *sets[BUNDLE_MAX_SETS];
  char set_paths[BUNDLE_MAX_SETS][PATH_MAX];
  int n_families;
  bfamily fam[BUNDLE_MAX_FAMILIES];
  int n_variants;
  bvariant *var;               /* [BUNDLE_MAX_ENTRIES] */
  int n_entries;
  bentry *ent;                 /* [BUNDLE_MAX_ENTRIES]: tuned entries first, then fallback entries */
  int n_fallback_bests;
  db_bundle_best fallback_bests[BUNDLE_MAX_FALLBACKS]; /* what fallback entries' best point to */
  int n_archs;
  char archs[TUNE_BUNDLE_MAX_ARCHS][16];
  int n_models;
  bmodel models[BUNDLE_MAX_MODELS]; /* in the order first seen; models[0] is the bundle's meta device_* */
  char model_list[1024];       /* "'A', 'B'": for messages */
  char templates[BUNDLE_MAX_FAMILIES][PATH_MAX + 16]; /* include root per family (the jobs point here) */
  char ptx_archs[TUNE_BUNDLE_MAX_ARCHS][24];
  tune_compile_job *jobs;      /* [n_jobs]: per variant, a cubin per arch, then PTX per arch; a job
                                  that did not compile (bin.ok 0) is left out of the bundle */
  int n_jobs;
} bstate;

/* Compile jobs per variant: a cubin per arch, and PTX per arch unless --no-ptx. */
static inline int bundle_jobs_per_variant(const bstate *s) { return s->n_archs * (s->o->no_ptx ? 1 : 2); }

/* collect: the entries (and their families) from the databases; then per entry, the recipe's
 * evaluation and its variant. */
int bundle_collect(bstate *s, tune_err *err);
/* Whether recipe is `want` or a family under it (want "attention" takes "attention.decode"). */
int bundle_name_matches(const char *recipe, const char *want);
int bundle_evaluate(bstate *s, tune_err *err);
/* One entry: its recipe's launches, setup and expression texts for config vi. */
int bundle_entry_eval(bstate *s, bentry *be, const int *vi, tune_err *err);
/* The variant of be: one of the same family, config and defines, else a new one (vi: its config). */
int bundle_entry_variant(bstate *s, bentry *be, const int *vi, tune_err *err);

/* vendor (bundle_vendor.c): each tuned entry weighed against the databases' peer timings of its
 * problem on its GPU model in its result's timing mode; where the peer was faster (the latest
 * comparison's verdict "slower", else the peer's median below the entry's) it becomes BUNDLE_VENDOR
 * with the library libtunert names (cublaslt, sdpa, cudnn-sdpa, torch), except in the families of
 * --no-vendor-for. After bundle_evaluate. */
int bundle_mark_vendors(bstate *s, tune_err *err);
/* A family of --no-vendor-for: its entries keep their kernels whatever a peer measured. */
int bundle_vendor_kept(const tune_bundle_opts *o, const char *family);

/* fallback (bundle_fallback.c): per family with a `fallback` config, that config checked on every
 * tuned problem (it must run there; its expressions must give Lua's values) and one entry per
 * distinct set of defines appended to s->ent. After bundle_evaluate, before bundle_compile. */
int bundle_add_fallbacks(bstate *s, tune_err *err);

/* compile: s->jobs, every binary of every variant; s->var[].lowered from the first that compiled.
 * A variant that does not compile for a requested arch is skipped there (skip_why; no PTX for that
 * virtual arch either: the driver's JIT would fail the same way) unless that arch is the one it was
 * measured on (an error). PTX is portable only: compute_XY, never compute_XYa; for an
 * arch-specific target (sm_90a) a variant gets compute_90 PTX when it also compiles for sm_90,
 * else none (it uses sm_90a-only instructions: no later GPU can JIT it; ptx_why says so). */
int bundle_compile(bstate *s, tune_err *err);

/* archs (bundle_archs.c): what each requested arch gets.
 * bundle_variant_runs_on: whether a device of s->archs[a]'s compute capability runs variant v
 * through one of its compiled binaries, by libtunert's rule (runtime/tunert_arch.h); *which (may
 * be NULL) the binary's arch ("sm_80", "compute_90").
 * bundle_check_archs: after bundle_compile, a family with no variant for a requested arch is an
 * error unless --allow-missing-arch (then a warning: libtunert refuses the family there with
 * TUNERT_EARCH); one with no variant for any of them is an error. bundle_print_archs: per arch, the skipped variants with the compiler's reason,
 * the tuned problems another entry serves there (bundle_verify's served), and the PTX; printed
 * with --quiet too when something was skipped. */
int bundle_variant_runs_on(const bstate *s, int v, int a, const char **which);
/* Whether variant v compiled for any requested arch: one that did not is left out of the bundle
 * with its entries (a bundle's variant has at least one binary), its problems served by others. */
int bundle_variant_compiled(const bstate *s, int v);
int bundle_check_archs(bstate *s, tune_err *err);
void bundle_print_archs(const bstate *s);

/* express: family dims and params from the recipe's problems; an entry's expressions checked
 * with the runtime evaluator against Lua's values, portability decided (a mismatch is an error). */
int bundle_family_layout(bfamily *f, tune_recipe *r, tune_err *err);
int bundle_check_entry(bstate *s, bentry *be, tune_err *err);
/* The expression environment of problem p and config vi: dims (family order), params, then sm_count
 * (of the GPU model the entry was measured on); env holds TUNERT_MAX_DIMS + 65 values. */
int bundle_make_env(const bfamily *f, const tune_problem *p, const tune_recipe *r, const int *vi, int sm_count,
                    tunert_xval *env, char *why, size_t n);

/* write: the bundle into a temporary of its own beside s->o->out (OUT.tmp.XXXXXX), verified
 * there (bundle_verify), then renamed over s->o->out; a failure removes only that temporary, so
 * another writer's finished bundle at the same path is never lost. verify: open the file with
 * libtunert and select every entry's problem, checking variant, launches and tensor maps. */
int bundle_write(bstate *s, tune_err *err);
int bundle_verify(bstate *s, tune_err *err);

void bundle_state_free(bstate *s);

#endif
