/* recipe.h: loading a Lua recipe and evaluating it for configs and problems.
 *
 * Owns: the embedded, sandboxed Lua state (no os, io, debug, package,
 * load/dofile/loadfile; require resolves only inside recipes/), validation of
 * the recipe table with file:line errors (its fields and types first, against
 * recipe_schema.h), and every call into recipe functions, each under the
 * instruction budget and memory cap of lua_limits.h. Lua is single-threaded:
 * all evaluation happens on the main thread; the compile pool only sees the
 * plain C results.
 * Memory: tune_recipes_load returns a set owned by the caller
 * (tune_recipes_free); strings inside are owned by the set. */
#ifndef TUNE_RECIPE_H
#define TUNE_RECIPE_H

#include <stdint.h>

#include <jansson.h>

#include "tune_err.h"

#define TUNE_MAX_ARGS 32
#define TUNE_MAX_LAUNCHES 4
#define TUNE_MAX_DEFINES 64
#define TUNE_MAX_FALLBACK_PARAMS 64

/* TUNE_E4M3: fp8 e4m3 (the OCP 'fn' variant: no infinities, 0x7f NaN, largest finite 448); tensors only */
typedef enum tune_dtype { TUNE_F32, TUNE_F16, TUNE_BF16, TUNE_I32, TUNE_I64, TUNE_F64, TUNE_E4M3 } tune_dtype;
int tune_dtype_size(tune_dtype t);
const char *tune_dtype_name(tune_dtype t);
/* 1 for the floating-point dtypes narrower than f32 (f16, bf16, e4m3): an output of one is the
 * reference's value rounded, and tolerance.honest judges it against that rounding's error. */
int tune_dtype_is_narrow_float(tune_dtype t);

/* TUNE_INIT_OFFSETS {"offsets", total, min_part}: a tensor of n + 1 integers 0 = o_0 <= ... <= o_n = total,
 * the prefix sums of n parts of at least min_part each, skewed (a few long parts, many short: the
 * lengths of a serving batch, the tokens per expert of a routed batch). */
/* TUNE_INIT_WIDE {"wide", lo_exp2, hi_exp2}: |x| = 2^u with u uniform in [lo_exp2, hi_exp2] and a random
 * sign: values spread over many binades (wide dynamic range), floating-point tensors only. */
typedef enum tune_init { TUNE_INIT_NONE, TUNE_INIT_UNIFORM, TUNE_INIT_NORMAL, TUNE_INIT_RANDINT,
                         TUNE_INIT_PERMUTATION, TUNE_INIT_OFFSETS, TUNE_INIT_WIDE } tune_init;

typedef struct tune_value {
  char kind;        /* 'i' integer, 'b' boolean, 's' string */
  long long i;      /* integer or 0/1 */
  const char *s;    /* string (owned by the recipe set) */
} tune_value;

typedef struct tune_param {
  const char *name;
  int n_values;
  tune_value *values;
  /* the index of the value that configs recorded before the param existed have ({ "NAME",
     {values}, absent = v }: the template's default for the define), -1 when none: a config
     at it is hashed without the param, as before it was added */
  int absent;
} tune_param;

typedef struct tune_problem {
  const char *name;
  char hash[17];        /* xxh64 hex of the canonical dims */
  char *dims_json;      /* {"B":4,...} sorted by name */
  int ref;              /* Lua registry ref of the problem table */
} tune_problem;

#define TUNE_TMAP_MAX_RANK 5

/* The fixed fields of a tensormap arg (docs/tensormap-args.md); dims, strides and box are
 * evaluated per variant (tune_tmap_var). */
typedef struct tune_tmap_def {
  int tensor;               /* index of the tensor arg the map reads */
  int swizzle;              /* 0, 32, 64, 128 (bytes) */
  int l2_promotion;         /* 0, 64, 128, 256 (bytes) */
  int oob_nan;              /* 1: out-of-bounds elements read as NaN (else zero) */
  int n_estr;               /* element strides given (0: all 1) */
  unsigned estr[TUNE_TMAP_MAX_RANK];
} tune_tmap_def;

typedef struct tune_arg_def {
  const char *name;
  int is_tensor;
  tune_dtype dtype;
  int output, scratch;
  tune_init init;
  double init_a, init_b;
  /* adversarial = {"uniform"|"normal"|"wide", a, b}: the data of the worker's second input set
     (tuner/worker_sets.c), e.g. large logits; TUNE_INIT_NONE: drawn like init */
  tune_init adv_init;
  double adv_a, adv_b;
  int zero;                 /* scratch only: zeroed (by a kernel, timed) before every launch of the variant */
  int is_tmap;              /* a tensor map (CUtensorMap, 128 bytes by value); dtype is the tensor's */
  tune_tmap_def tmap;
} tune_arg_def;

/* A tensormap arg evaluated for one variant: innermost dimension first. */
typedef struct tune_tmap_var {
  int rank;                 /* 0: not a tensormap arg */
  uint64_t dims[TUNE_TMAP_MAX_RANK];
  uint64_t strides[TUNE_TMAP_MAX_RANK - 1];  /* bytes, of dims 2..rank */
  unsigned box[TUNE_TMAP_MAX_RANK];
} tune_tmap_var;

typedef struct tune_recipe {
  const char *name;
  const char *file;           /* recipe file as given */
  const char *module_file;    /* the file that defines it: the module that returned it to a list
                                 file (require), else file; its normalised hash covers this one */
  const char *root;           /* repository root (parent of recipes/) */
  const char *template_path;  /* absolute */
  const char *ref_source;     /* absolute path of the reference source */
  char source_hash[17];       /* recipe file + template + reference + includes */
  int n_params;
  tune_param *params;
  int n_constraints;
  int n_problems;
  tune_problem *problems;
  int n_args;
  tune_arg_def args[TUNE_MAX_ARGS];
  int ref;                    /* registry ref of the recipe table */
  struct tune_recipes *set;
  int n_domain;               /* domain = { "expr", ... }: expressions over dims (texts in the table) */
  int has_fallback;           /* fallback = { PARAM = value, ... } given: */
  int fallback_vi[TUNE_MAX_FALLBACK_PARAMS]; /* its value index per param */
  double tol_honest;          /* tolerance.honest (> 1), 0 when not given (docs/measurement.md) */
} tune_recipe;

typedef struct tune_recipes {
  void *L;                    /* lua_State */
  const char *root_how;       /* static text: which rule chose the root (project_root.h) */
  char *file_text;            /* text of the top recipe file */
  int n;
  tune_recipe *r;
} tune_recipes;

/* Facts about the target handed to recipe functions as `d`. */
typedef struct tune_device_facts {
  int sm_count;
  int smem_per_block;   /* opt-in max dynamic shared memory per block [bytes] */
  int l2_bytes;
  char arch[16];        /* "sm_90" */
} tune_device_facts;

typedef struct tune_launch {
  char kernel[256];     /* extern "C" name or C++ name expression */
  int is_expr;          /* 1: resolve with NVRTC name expressions */
  unsigned grid[3], block[3];
  unsigned shared;      /* dynamic shared memory [bytes] */
  int side_stream;      /* 1: stream = "side": launched on the worker's second stream */
  unsigned cluster[3];  /* thread-block cluster ({1,1,1}, or all 0 where never set: a plain launch);
                           checked by tunert_cluster_check (runtime/tunert_cluster.h) */
} tune_launch;

/* A config evaluated for one problem: what to compile and how to launch. */
typedef struct tune_variant {
  int skip;                       /* 1: applies() said no */
  char skip_reason[256];
  int n_defines;
  char defines[TUNE_MAX_DEFINES][160];  /* "-DNAME=VALUE" */
  int n_launches;
  tune_launch launch[TUNE_MAX_LAUNCHES];
  int64_t scratch_numel[TUNE_MAX_ARGS]; /* elements of each scratch arg, 0 others */
  tune_tmap_var tmap[TUNE_MAX_ARGS];    /* tensormap args (rank 0 others) */
} tune_variant;

/* A problem evaluated: buffers, scalars, reference, tolerance, metrics. */
typedef struct tune_problem_setup {
  int n_args;
  tune_arg_def def[TUNE_MAX_ARGS];
  int64_t numel[TUNE_MAX_ARGS];   /* tensors (scratch: 0, sized per variant) */
  double scalar_f[TUNE_MAX_ARGS]; /* scalars, float dtypes */
  long long scalar_i[TUNE_MAX_ARGS]; /* scalars, integer dtypes */
  tune_launch ref_launch;
  int n_ref_defines;
  char ref_defines[TUNE_MAX_DEFINES][160];
  double tol_rel_l2, tol_max_abs;
  double tol_honest;              /* a rounded output is wrong above tol_honest x its honest error; 0 off */
  double flops, bytes;            /* per launch of the variant */
} tune_problem_setup;

/* Load a recipe file (a table, or a list of tables). Errors carry file:line.
 * The project root (templates/, recipes/ for require, data/) is chosen by
 * tune_project_root (project_root.h): root when not NULL (tune run --root),
 * else TUNE_ROOT, else the nearest marked ancestor of the file. */
int tune_recipes_load(const char *path, tune_recipes **out, tune_err *err);
int tune_recipes_load_root(const char *path, const char *root, tune_recipes **out, tune_err *err);
/* "root DIR (RULE)" for a run header: the root of a loaded set and the rule that chose it. */
void tune_recipes_root_line(const tune_recipes *set, char *buf, size_t n);
void tune_recipes_free(tune_recipes *set);

/* Replace r's problems with n problems given as dims objects (compact JSON, e.g. from a
 * served-problem log, served_log.h), named after their values ("served_K4096_M37_..."). Each must
 * have exactly the dims of the recipe's own problems (TUNE_EINVAL naming both otherwise). */
int tune_recipe_set_problems(tune_recipe *r, const char *const *dims_json, int n, tune_err *err);
/* Append n problems (names[i] with dims dims_json[i]) to r's, as a bundle does for the problems a
 * database holds that the recipe file does not list (tune run --problems-from). Pointers into
 * r->problems taken before are invalid afterwards. */
int tune_recipe_add_problems(tune_recipe *r, const char *const *names, const char *const *dims_json, int n,
                             tune_err *err);

/* Constraint check for search/ (see search_check_fn): ctx is a tune_recipe*. */
int tune_recipe_check(void *ctx, int constraint, const int *value_idx, int n_bound, tune_err *err);

/* Text of constraint i (0-based) as written in the recipe: the expression
 * string, or "function defined at FILE:LINE" for a function; "" if unknown. */
void tune_recipe_constraint_text(tune_recipe *r, int i, char *buf, size_t n);

/* Canonical text, JSON and hash of a config (value indexes per param). The JSON names every param;
 * the hash leaves out a param at its absent value, so that the config keeps the hash (its identity
 * in a database) it had before the param existed. */
void tune_recipe_config_json(const tune_recipe *r, const int *value_idx, char *buf, size_t n);
void tune_recipe_config_hash(const tune_recipe *r, const int *value_idx, char out[17]);
/* The index of JSON value v among param's values (an integer, a boolean or a
 * string of the same kind and value), or -1 when it is none of them. */
int tune_param_value_index(const tune_param *param, const json_t *v);
/* The index of params_obj[param->name] among param's values; param->absent when the object has
 * no such key (a config recorded before the param existed); -1 when the
 * value is none of them, or the key is missing and the param has no absent value. Every
 * conversion of a stored or proposed config's JSON back to value indexes goes through this. */
int tune_param_index_in(const tune_param *param, const json_t *params_obj);
/* The index of the param called name, -1 when r has none (or name is NULL). */
int tune_recipe_param_index(const tune_recipe *r, const char *name);
/* vi[0 .. n_params) of a config given by its params object (tune_param_index_in for each); 0, or
 * -1 when a param has no index. Keys that name no param are not looked at. */
int tune_recipe_config_indexes(const tune_recipe *r, const json_t *params, int *vi);

int tune_recipe_eval_variant(tune_recipe *r, const int *value_idx, const tune_problem *p,
                             const tune_device_facts *d, tune_variant *out, tune_err *err);
/* The same, where a recipe with `requires` skips its `applies` (search pruning only): does the
 * config RUN the problem? (bundle fallbacks; out->skip then means a requires failed) */
int tune_recipe_eval_variant_runs(tune_recipe *r, const int *value_idx, const tune_problem *p,
                                  const tune_device_facts *d, tune_variant *out, tune_err *err);
int tune_recipe_eval_problem(tune_recipe *r, const tune_problem *p, const tune_device_facts *d,
                             tune_problem_setup *out, tune_err *err);
/* The same for inputs drawn from seed (the worker's, tuner/inputs.c): a metric given as a function
 * is called f(p, d, inputs), inputs.NAME the 1-based list of the values of each integer input of
 * at most TUNE_METRIC_INPUT_MAX elements as drawn (lengths, offsets, counts), so that bytes and
 * flops count the work those inputs make; tune_recipe_eval_problem calls it f(p, d, nil). */
#define TUNE_METRIC_INPUT_MAX 65536
int tune_recipe_eval_problem_drawn(tune_recipe *r, const tune_problem *p, const tune_device_facts *d, uint64_t seed,
                                   tune_problem_setup *out, tune_err *err);

/* xxh64 hex of a buffer. */
void tune_hash_hex(const void *data, size_t n, char out[17]);

#endif
