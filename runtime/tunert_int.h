/* tunert_int.h: libtunert internals shared by tunert.c (open, info),
 * tunert_select.c (policy, cache) and tunert_launch.c (lazy load, launch).
 *
 * Everything a context reads from the bundle is immutable after tunert_open
 * and lives in the context's arena (chunks from the caller's allocator, freed
 * at close). Mutable state: the per-family selection caches (published with
 * atomics, grown under ctx->lock), each variant's loaded module (published
 * with an atomic flag, loaded under ctx->lock) and the driver table (opened
 * under ctx->lock). Not a public header. */
#ifndef TUNERT_INT_H
#define TUNERT_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>

#include "tunert.h"
#include "tunert_cuda.h"
#include "tunert_expr.h"
#include "tunert_format.h"
#include "tunert_tmap.h"

/* ---- arena ------------------------------------------------------------------ */

typedef struct rt_chunk {
  struct rt_chunk *next;
  size_t size, used;           /* [bytes], of this chunk including the header */
} rt_chunk;

typedef struct rt_arena {
  tunert_allocator al;         /* the caller's, or malloc/free */
  rt_chunk *head;
  int failed;                  /* an allocation failed */
} rt_arena;

void *rt_alloc(rt_arena *a, size_t n);          /* zeroed, 16-byte aligned; NULL on failure */
char *rt_strdup(rt_arena *a, const char *s);
void rt_arena_free(rt_arena *a);
/* An allocator whose alloc is rt_alloc on this arena and whose free is a no-op. */
tunert_allocator rt_arena_allocator(rt_arena *a);

/* ---- bundle contents ---------------------------------------------------------- */

typedef struct rt_binary {
  int64_t id;                  /* row id in binaries */
  int is_ptx;
  int major, minor;            /* of the arch: sm_90a -> 9, 0 */
  int arch_specific;           /* 1: 'a' suffix (runs only on that exact compute capability) */
  const char *arch;            /* "sm_90a" / "compute_90a" */
  int64_t size;
  uint64_t hash;
} rt_binary;

typedef struct rt_variant {
  int64_t id;
  const char *config_hash;
  const char *params_json;
  tunert_xval *params;         /* one per family param */
  int n_kernels;
  const char *kernels[TUNERT_MAX_LAUNCHES];
  int n_bins;
  rt_binary *bins;
  int chosen;                  /* index into bins for the device, -1 none / device unknown */
  char binary_desc[400];       /* "cubin sm_90a", or why no binary runs here */
  /* lazily loaded: fields below written under ctx->lock, then `loaded` is
     stored with release order; readers load it with acquire order */
  atomic_int loaded;           /* 0 not yet, 1 loaded, -1 failed (load_error says why) */
  CUmodule module;
  CUfunction fn[TUNERT_MAX_LAUNCHES];
  int smem_optin[TUNERT_MAX_LAUNCHES]; /* dynamic shared memory limit set on fn [bytes] */
  char load_error[512];
} rt_variant;

#define TUNERT_TMAP_SLOTS 8

/* Encoded maps of one tensormap arg of a selection, per tensor pointer and
 * strides. Slots are written once: a thread claims one (claimed++), encodes
 * into it and writes its strides, then publishes its pointer in key with
 * release order; readers compare keys with acquire order, then the strides,
 * and copy the map. Past TUNERT_TMAP_SLOTS pointers, maps are encoded at
 * every launch. 64-byte aligned (allocated so). */
typedef struct rt_tmap_cache {
  unsigned char map[TUNERT_TMAP_SLOTS][128];
  uint64_t strides[TUNERT_TMAP_SLOTS][TUNERT_TMAP_MAX_RANK - 1]; /* those it was encoded with [bytes] */
  _Atomic uint64_t key[TUNERT_TMAP_SLOTS];   /* device pointer, 0 empty or being encoded */
  atomic_uint claimed;
} rt_tmap_cache;

/* What an entry is (entries.kind, format 1.3). */
enum { RT_TUNED = 0, RT_FALLBACK = 1, RT_VENDOR = 2 };

typedef struct rt_entry {
  int64_t id;
  int kind;                    /* RT_TUNED, RT_FALLBACK, RT_VENDOR */
  const char *vendor;          /* RT_VENDOR: "cublaslt", ...; else NULL */
  double vendor_ns;            /* RT_VENDOR: the vendor's median at the tuned problem [ns] */
  rt_variant *v;
  const char *problem_name;
  const char *dims_json;
  int64_t *dims;               /* the tuned problem, n_dims values (bools as 0/1) */
  int portable;
  const char *exact_why;
  tunert_expr *requires;       /* NULL none */
  tunert_expr *define_exprs;   /* NULL none */
  tunert_xval *define_values;  /* one per define_exprs item */
  int n_launches;
  tunert_expr *grid[TUNERT_MAX_LAUNCHES], *block[TUNERT_MAX_LAUNCHES], *shared[TUNERT_MAX_LAUNCHES];
  tunert_expr *cluster[TUNERT_MAX_LAUNCHES];   /* 3 items ("1, 1, 1" for bundles before 1.2) */
  tunert_expr **shape;         /* per arg, NULL for scalars */
  tunert_expr **value;         /* per arg, NULL for tensors */
  rt_tmap_expr *tm;            /* f->n_tmaps, in arg order */
  double median_ns;            /* [ns] */
  const char *device_name;
  const char *measured_at;
  int model;                   /* index into ctx->models it was tuned on; -1: none (fallback entries) */
  int tier;                    /* TUNERT_MODEL_* of its model for the device (rt_models_rank): selection
                                  takes the lowest tier that serves a problem; fallback entries 0 */
  int repeat;                  /* 1: another model's entry for a problem an earlier entry has (not
                                  listed again by tunert_family_problem) */
} rt_entry;

/* A GPU model the bundle's entries were tuned on (format 1.5 table models; before, meta device_*). */
typedef struct rt_model {
  int64_t id;                  /* models.id (0 before 1.5) */
  const char *name, *arch;     /* "NVIDIA H200", "sm_90" ("" unknown) */
  int major, minor;            /* of arch; -1 unknown */
  int sm_count;                /* 0 unknown */
  int n_problems;              /* its tuned and vendor entries, every family */
  int tier;                    /* TUNERT_MODEL_* for the device (rt_models_rank) */
} rt_model;

typedef struct sel_table {
  size_t cap;                  /* power of two */
  _Atomic(tunert_selection *) slot[];
} sel_table;

typedef struct rt_family {
  int index;
  int64_t id;
  const char *name, *source_hash, *recipe_file;
  int n_dims;
  const char **dims;           /* names */
  const char **dim_types;      /* "int" / "bool" */
  int *dim_bool;
  int *dim_enum;               /* "enum(a|b)": its number of values (0: not an enum); the caller passes
                                  the index of a string value; distance is categorical */
  int n_params;
  const char **params;
  int *param_type;             /* TUNERT_XINT / TUNERT_XBOOL / 0 for strings */
  const char **names;          /* expression env names: dims, params, "sm_count" (the n_dims +
                                  n_params + 1 every expression sees), then the scalar args whose
                                  names are none of those (only tensor-map strides see them) */
  int n_names;                 /* all of them */
  int name_arg[TUNERT_MAX_ARGS]; /* the arg of names[n_dims + n_params + 1 + j] */
  tunert_expr *domain;         /* over dims only; NULL: every problem (before 1.3, or none given) */
  int n_args;
  const char **arg_names;
  int *arg_roles;
  const char **arg_dtypes;
  int *arg_size;               /* bytes of one element (tensors, tensor maps) or of the value (scalars) */
  int n_tmaps;                 /* tensormap args */
  int tmap_arg[TUNERT_MAX_TMAPS];
  int n_variants;
  rt_variant *variants;
  int n_entries;
  rt_entry *entries;
  _Atomic(sel_table *) cache;  /* published table; replaced (never freed before close) to grow */
  size_t cache_count;          /* entries in the cache, under ctx->lock */
} rt_family;

struct tunert_selection {
  rt_family *f;
  rt_entry *entry;
  rt_variant *v;
  int64_t *dims;
  uint64_t hash;
  int exact;
  const char *kind;            /* "tuned", "nearest", "fallback", "vendor" (static) */
  const char *vendor;          /* kind vendor: the entry's vendor; else NULL */
  double distance;
  const char *reason;
  int n_launches;
  tunert_launch_info launch[TUNERT_MAX_LAUNCHES];
  unsigned cluster[TUNERT_MAX_LAUNCHES][3];   /* {1, 1, 1}: a plain launch */
  tunert_arg_info *args;       /* f->n_args */
  /* argument packing, natural alignment (as the tuner's worker: tunert_pack.h) */
  uint32_t offset[TUNERT_MAX_ARGS];
  uint32_t param_bytes;
  int n_tmaps;
  rt_tmap_spec tm[TUNERT_MAX_TMAPS];   /* evaluated for this problem, checked */
  rt_tmap_cache *tm_cache;             /* n_tmaps */
  tunert_tensormap_info *tm_info;      /* f->n_args */
  int *tm_row_stride;                  /* f->n_args: tunert_selection_info.tensormap_row_strides */
  atomic_int ready;            /* 1: variant loaded and shared-memory limits set for this selection */
  /* kind vendor run by libtunert (tunert_vendor_cublaslt.c): its descriptors, made once under
     ctx->lock and published with release order; NULL until the first launch */
  _Atomic(struct rt_vendor_plan *) vendor_plan;
};

struct tunert_ctx {
  rt_arena arena;              /* under lock after open */
  pthread_mutex_t lock;        /* slow paths: cache growth, loading, driver, sqlite */
  sqlite3 *db;                 /* kept open for lazy binary reads, under lock */
  uint32_t flags;
  int device;
  int n_families;
  rt_family *families;
  /* device */
  int dev_known;               /* 1: the arch below is known */
  int dev_major, dev_minor;
  char dev_arch[32];           /* "sm_90" (or the option's), "unknown" */
  char dev_note[256];          /* why unknown */
  int dev_sm_count;            /* multiprocessor count of the opened device, 0 until rt_device_open */
  int meta_sm_count;           /* the bundle's device_sm_count (the device it was measured on), 0 unknown */
  int sm_count;                /* expressions' `sm_count`, fixed at open: dev_sm_count when the device
                                  was opened then, else meta_sm_count (selections never disagree) */
  int cu_state;                /* 0 not tried, 1 open, -1 failed (cu_error says why) */
  char cu_error[512];
  tunert_cu cu;
  CUdevice cudev;
  CUcontext cuctx;             /* retained primary context, NULL until first launch */
  /* GPU models (tunert_models.c) */
  int n_models;
  rt_model *models;            /* [n_models], at least one */
  int models_table;            /* 1: from the table models (1.5); 0: the one model of meta device_* */
  char dev_name[256];          /* the driver's name of the opened device, "" until rt_device_open */
  const char *here_name;       /* the GPU model selection is for: options.device_name, dev_name at
                                  open, TUNERT_DEVICE_NAME; NULL unknown */
  int model_here;              /* index into models of here_name, -1 none */
  char model_note[300];        /* why model_here is -1, for reasons ("" when it is known) */
  /* facts */
  int format_major, format_minor;
  const char *created_at, *tool_version, *nvrtc_version, *device_name, *device_arch, *archs;
  double open_ms;
  int max_selections;
  /* the untuned-shape log: env TUNERT_LOG_UNTUNED at open (NULL: off); the set of problems
     logged (hashes, open addressing), under lock */
  const char *log_path;
  uint64_t *logged;
  int n_logged;
  struct rt_vendor *vendor;    /* cuBLASLt for vendor entries (tunert_vendor_cublaslt.c), under lock;
                                  NULL until a vendor entry's first launch */
};

/* Fill err (when given) and return code. */
int rt_fail(tunert_err *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The GPU model selection is for (name: options.device_name or NULL) and each model's and entry's
 * tier (tunert_models.c); after the device's arch is known. Also fixes ctx->sm_count. */
int rt_models_rank(tunert_ctx *ctx, const char *name, tunert_err *err);
/* The model of an entry in words for a selection's reason: "" when it is the device's own (or the
 * bundle has one model and the device's is unknown); else "; tuned on M, another GPU model ...". */
void rt_model_note(const tunert_ctx *ctx, const rt_entry *e, char *buf, size_t n);

/* Tensor map k of selection s re-evaluated for the row stride ld [elements] of its tensor (the
 * value a launch passes for the scalar its strides name) and checked against that strided view's
 * extent: 0 and *out, or TUNERT_EINVAL with the reason (tunert_launch.c). No lock, no allocation. */
int rt_tmap_for_row_stride(const tunert_ctx *ctx, const tunert_selection *s, int k, int64_t ld, rt_tmap_spec *out,
                           tunert_err *err);

/* Choose each variant's binary for the device (ctx->dev_*). */
void rt_choose_binaries(tunert_ctx *ctx);
/* Open libcuda and query the device (under ctx->lock or during open). */
int rt_device_open(tunert_ctx *ctx, tunert_err *err);

rt_family *rt_family_find(const tunert_ctx *ctx, const char *name);
/* Entries that are tuned problems (tuned and vendor; not fallback). */
int rt_tuned_count(const rt_family *f);

/* The device fact `sm_count` of expressions: the launch device's multiprocessor count when the
 * driver was opened at tunert_open, else the bundle's recorded device_sm_count (the device it was
 * tuned on). */
static inline int rt_sm_count(const tunert_ctx *ctx) { return ctx->sm_count; }

#endif
