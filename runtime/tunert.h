/* tunert.h: libtunert, the deployment runtime of tune.
 *
 * Owns: reading a bundle made by `tune bundle` (one SQLite file: per kernel
 * family and tuned problem the chosen variant, its cubins and PTX, its launch
 * geometry as expressions, its argument layout and provenance), choosing a
 * variant for a problem (tunert_select), and launching it (tunert_launch).
 * Must not: link Lua, NVRTC or CUPTI; allocate or lock on the hot path
 * (a select of a problem seen before, a launch of a loaded selection).
 * libcuda is opened with dlopen on first need: a program linked with
 * libtunert starts, opens bundles and selects on a machine without a driver;
 * only tunert_launch needs one, and says so (TUNERT_ENODRIVER).
 *
 * Memory: a tunert_ctx owns everything reachable from it; pointers handed out
 * (selections, names, info fields) stay valid until tunert_close. Threads:
 * every function taking a ctx may be called from any thread at once, except
 * tunert_close. No globals: two contexts share nothing.
 *
 * Stability: signatures never change. New behaviour comes as new functions
 * (`_v2`) or as new fields at the end of the structs that start with
 * `struct_size` (the library reads or fills only the bytes the caller has). */
#ifndef TUNERT_H
#define TUNERT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define TUNERT_API
#else
#define TUNERT_API __attribute__((visibility("default")))
#endif

/* libtunert's version, which is tune's: the CMake project version is the one
 * source (CMakeLists.txt); configuring fails when these lines disagree with it,
 * and tests/unit/version_test.c checks them against tunert_version(), the
 * pkg-config file and the CMake package. */
#define TUNERT_VERSION_MAJOR 0
#define TUNERT_VERSION_MINOR 5
#define TUNERT_VERSION_PATCH 0
#define TUNERT_VERSION_STRING "0.5.0"
/* The bundle format this library reads: any 1.x bundle; a bundle of another
 * major version is refused with TUNERT_EVERSION. 1.1 added tensor-map args,
 * 1.2 clusters, 1.3 domains, fallback and vendor entries, 1.4 fp8 (e4m3) args,
 * 1.5 entries of several GPU models, 1.6 tensor-map strides that name the
 * tensor's row-stride scalar. */
#define TUNERT_FORMAT_MAJOR 1
#define TUNERT_FORMAT_MINOR 6

/* Status codes. 0 is success; every failure fills a tunert_err when one is
 * given. The numbers never change. */
typedef enum tunert_status {
  TUNERT_OK = 0,
  TUNERT_EINVAL = 1,      /* bad argument (NULL, wrong count, wrong kind of argument) */
  TUNERT_ENOMEM = 2,      /* the allocator failed */
  TUNERT_EIO = 3,         /* the bundle file cannot be opened or read */
  TUNERT_EFORMAT = 4,     /* not a tune bundle, or corrupt, or truncated */
  TUNERT_EVERSION = 5,    /* bundle format major version unknown to this library */
  TUNERT_ENOFAMILY = 6,   /* no such kernel family in the bundle */
  TUNERT_ENOVARIANT = 7,  /* no variant of the family may run this problem (message says why) */
  TUNERT_EARCH = 8,       /* no binary in the bundle runs on this device's architecture */
  TUNERT_ENODRIVER = 9,   /* libcuda cannot be opened or reports no device */
  TUNERT_ECUDA = 10,      /* a CUDA driver call failed (message has the driver's error) */
  TUNERT_EEXPR = 11,      /* an expression of the bundle failed for this problem (e.g. n // 0) */
  TUNERT_ECONTEXT = 12,   /* the calling thread's current CUDA context is not the one of the
                             bundle's device (see tunert_launch) */
  TUNERT_EVENDOR = 13     /* the selection is a vendor entry libtunert does not run (an attention
                             library, eager torch): nothing was launched; call your own path */
} tunert_status;

/* A failure: code and "where: what". Caller-owned; functions only write it on
 * failure (the hot path never touches it when all goes well). */
typedef struct tunert_err {
  int code;               /* a tunert_status */
  char msg[1024];         /* NUL-terminated */
} tunert_err;

/* The short name of a status ("ok", "no variant", ...). Static storage. */
TUNERT_API const char *tunert_status_name(int code);

/* The version of the libtunert the program runs with ("0.5.0"), which may
 * differ from the TUNERT_VERSION_STRING it was compiled against when the
 * shared library was replaced. Static storage. */
TUNERT_API const char *tunert_version(void);

/* Optional host allocator for everything the context allocates. alloc returns
 * NULL on failure; free gets the size given to alloc. Note: SQLite's own
 * allocations while reading the bundle (tunert_open, first load of a binary)
 * and the driver's go through their own allocators. */
typedef struct tunert_allocator {
  void *(*alloc)(void *ud, size_t size);
  void (*free)(void *ud, void *ptr, size_t size);
  void *ud;
} tunert_allocator;

typedef struct tunert_ctx tunert_ctx;
typedef struct tunert_selection tunert_selection;

/* Open flags. */
#define TUNERT_OPEN_EXACT_ONLY 0x1u   /* tunert_select never uses a variant for a problem it was
                                         not tuned for (TUNERT_ENOVARIANT instead) */
#define TUNERT_OPEN_NO_DEVICE 0x2u    /* do not open libcuda at open time (select only; the
                                         arch check is skipped unless .arch is given) */
#define TUNERT_OPEN_ANY_ARCH 0x4u     /* open even when no binary runs on the device (selection
                                         then reports TUNERT_EARCH per family) */

typedef struct tunert_options {
  uint32_t struct_size;                /* sizeof(tunert_options): set by tunert_options_init */
  uint32_t flags;                      /* TUNERT_OPEN_* */
  int device;                          /* CUDA device ordinal for launches (default 0) */
  const char *arch;                    /* NULL: the device's ("sm_90a" for cc 9.0); else the
                                          architecture to check the bundle against, e.g. for
                                          selection on a machine without a GPU */
  const tunert_allocator *allocator;   /* NULL: malloc/free; must outlive the context */
  int max_selections;                  /* distinct problems cached per family before the cache
                                          grows (default 64; growing takes the slow path once) */
  /* since 0.5 (bundle format 1.5) */
  const char *device_name;             /* NULL: the device's, as the driver names it ("NVIDIA H100
                                          80GB HBM3"), else the environment variable
                                          TUNERT_DEVICE_NAME; else the GPU model to select for
                                          (a bundle's models: tunert_model_info_get), e.g. on a
                                          machine without a GPU. Case-insensitive: the model of
                                          that name, else the one model whose name contains it */
} tunert_options;

/* Fill *o with the defaults. */
TUNERT_API void tunert_options_init(tunert_options *o);

/* Open a bundle: checks that it is a tune bundle of a known format version
 * (TUNERT_EVERSION names both versions otherwise), that it is intact
 * (TUNERT_EFORMAT for a truncated or corrupt file, or a binary whose bytes do
 * not match its stored hash: every binary is read and hashed here, the message
 * names its variant), compiles its expressions,
 * and checks that every family has a binary for the device (TUNERT_EARCH
 * unless TUNERT_OPEN_ANY_ARCH). Without a driver (or with TUNERT_OPEN_NO_DEVICE)
 * the device is unknown: opening and selection work, launches fail with
 * TUNERT_ENODRIVER. opt may be NULL (defaults). On failure *out is NULL and
 * nothing is left allocated. Binaries are loaded into the driver lazily
 * (first launch of a variant). */
TUNERT_API int tunert_open(const char *path, const tunert_options *opt, tunert_ctx **out,
                           tunert_err *err);
/* Open a bundle held in memory (data[0..size): a bundle file's bytes, e.g.
 * embedded in the program or mapped by it), with the checks of tunert_open;
 * messages name it "bundle in memory (N bytes)". The buffer is not copied: it
 * is read in place, so it must stay valid and unchanged until tunert_close
 * (binaries are read from it at their first launch). libtunert never writes to
 * it. A buffer shorter than the bundle's header says is TUNERT_EFORMAT
 * ("truncated"), one that is not a bundle TUNERT_EFORMAT. */
TUNERT_API int tunert_open_memory(const void *data, size_t size, const tunert_options *opt, tunert_ctx **out,
                                  tunert_err *err);
/* Unload the modules, free everything. NULL is ignored. No other call on ctx
 * may be in flight. */
TUNERT_API void tunert_close(tunert_ctx *ctx);

/* ---- families ------------------------------------------------------------ */

/* Number of kernel families in the bundle, and the i-th name (NULL when out of
 * range). */
TUNERT_API int tunert_family_count(const tunert_ctx *ctx);
TUNERT_API const char *tunert_family_name(const tunert_ctx *ctx, int i);

/* Argument roles. */
#define TUNERT_ROLE_INPUT 0    /* tensor read by the kernel */
#define TUNERT_ROLE_OUTPUT 1   /* tensor written by the kernel */
#define TUNERT_ROLE_SCRATCH 2  /* workspace tensor the caller provides (size: tunert_selection_info) */
#define TUNERT_ROLE_SCALAR 3   /* scalar passed by value */
#define TUNERT_ROLE_TENSORMAP 4 /* a CUtensorMap (128 bytes by value) that tunert_launch builds
                                  from the device pointer of the tensor arg it maps; pass
                                  TUNERT_ARG_AUTO (see tunert_tensormap_info) */

typedef struct tunert_family_info {
  uint32_t struct_size;        /* set by the caller: sizeof(tunert_family_info) */
  const char *name;            /* "attention.prefill" */
  int n_dims;                  /* problem dimensions, in the order tunert_select takes them */
  const char *const *dims;     /* their names (sorted by name, as in the recipe's problem) */
  const char *const *dim_types;/* "int", "bool" (pass 0 or 1) or "enum(a|b|c)" for a string dim
                                  of the recipe (pass the index of the value: a = 0, b = 1...) */
  int n_args;                  /* kernel arguments, in the order tunert_launch takes them */
  const char *const *arg_names;
  const int *arg_roles;        /* TUNERT_ROLE_* */
  const char *const *arg_dtypes; /* "f32", "f16", "bf16", "i32", "i64", "f64", "e4m3" (fp8, tensors only) */
  int n_problems;              /* tuned problems (see tunert_family_problem) */
  int n_variants;              /* distinct compiled variants */
  const char *source_hash;     /* of the recipe and templates the variants were measured with */
  const char *recipe_file;     /* the recipe file, as recorded */
} tunert_family_info;

/* Describe a family. TUNERT_ENOFAMILY when absent (the message lists the
 * families there are). */
TUNERT_API int tunert_family_info_get(const tunert_ctx *ctx, const char *family,
                                      tunert_family_info *info, tunert_err *err);

/* The i-th tuned problem of a family: its name and its dims (n_dims values,
 * in tunert_family_info order). TUNERT_EINVAL when out of range. */
TUNERT_API int tunert_family_problem(const tunert_ctx *ctx, const char *family, int i,
                                     const char **name, const int64_t **dims, tunert_err *err);

/* ---- selection ------------------------------------------------------------- */

/* Choose the variant of `family` for the problem dims[0..n_dims) (family order,
 * see tunert_family_info). Policy:
 *  1. exact: a tuned problem with these dims: its chosen variant.
 *  2. otherwise, among the variants whose launch geometry, argument shapes and
 *     compile-time defines are expressions (not frozen Lua results) and whose
 *     recorded requirements hold for the problem: the one tuned for the
 *     problem nearest in log scale (sqrt of the sum over dims of
 *     ln(dim / tuned dim)^2; a differing bool or non-positive dim counts 1);
 *     ties: the faster measured time, then the first in the bundle.
 *  3. else TUNERT_ENOVARIANT, with every candidate's reason in the message.
 * A bundle of several GPU models runs steps 1 and 2 over the entries of the
 * model the device is first, then over those of other models of its arch, then
 * of other archs (tunert_model_info.tier); the family's fallback comes after
 * all of them. With TUNERT_OPEN_EXACT_ONLY step 2 is skipped. Variants without a binary for
 * the device are never chosen. The result is cached: the first select of a
 * problem computes it (and may allocate, under a lock); later selects of the
 * same dims are lock-free and allocate nothing. *out stays valid until
 * tunert_close. */
TUNERT_API int tunert_select(tunert_ctx *ctx, const char *family, const int64_t *dims, int n_dims,
                             const tunert_selection **out, tunert_err *err);

/* One entry of a family judged for a problem (tunert_select_candidates). */
typedef struct tunert_candidate {
  uint32_t struct_size;        /* set by the caller in out[0]: sizeof(tunert_candidate) (the stride) */
  const char *tuned_problem;   /* the entry's tuned problem (a fallback: the problem it was checked on) */
  const char *variant;         /* its parameters, canonical JSON */
  const char *kind;            /* as a selection of it would be: "tuned", "nearest", "fallback", "vendor" */
  const char *vendor;          /* kind "vendor": the library; else NULL */
  double distance;             /* log-scale distance (0 for exact and fallback) */
  double measured_ns;          /* median at the tuned problem [ns]; 0: not measured (fallback) */
  int ok;                      /* 1: it may serve the problem */
  char why[512];               /* ok 0: why not (requirement false, no binary, exact-only...) */
  /* since 0.5 (bundle format 1.5) */
  const char *measured_on;     /* the GPU model it was tuned on ("" for a fallback) */
  int tier;                    /* that model's TUNERT_MODEL_* for the device (0 for a fallback) */
} tunert_candidate;

/* The candidates for a problem, ranked: first those that may serve it, in the order tunert_select
 * takes them (exact, nearest by distance then measured time, fallback), so out[0] is what
 * tunert_select chooses when out[0].ok; then the others, in bundle order, with their reason.
 * Writes min(max, entries of the family) candidates and their count to *n_out. The domain is
 * checked first (TUNERT_ENOVARIANT outside it). Not cached: evaluates every entry at each call
 * (for tools and logs, not for the hot path); allocates a temporary from the context's allocator. */
TUNERT_API int tunert_select_candidates(tunert_ctx *ctx, const char *family, const int64_t *dims, int n_dims,
                                        tunert_candidate *out, int max, int *n_out, tunert_err *err);

typedef struct tunert_launch_info {
  const char *kernel;          /* symbol in the binary */
  unsigned grid[3], block[3];
  unsigned shared;             /* dynamic shared memory [bytes] */
} tunert_launch_info;

typedef struct tunert_arg_info {
  const char *name;
  int role;                    /* TUNERT_ROLE_* */
  const char *dtype;
  int rank;                    /* tensors: number of shape entries (<= 8) */
  int64_t shape[8];            /* tensors: the shape for this problem */
  int64_t numel;               /* tensors: elements */
  int64_t bytes;               /* tensors: numel * dtype size; scratch: what to provide */
  int has_value;               /* scalars: 1 when the bundle has a value for this problem */
  double value;                /* scalars: that value (TUNERT_ARG_AUTO passes it) */
} tunert_arg_info;

/* A tensor-map arg for one selection (docs/tensormap-args.md): what
 * tunert_launch passes to cuTensorMapEncodeTiled, the global address being the
 * device pointer given for arg `tensor`. */
typedef struct tunert_tensormap_info {
  int tensor;                  /* index of the tensor arg it maps; -1: the arg is no tensor map */
  int rank;                    /* 1..5 */
  uint64_t dims[5];            /* elements, innermost dimension first */
  uint64_t strides[4];         /* bytes, of dims 2..rank */
  uint32_t box[5];             /* elements per copy, innermost first */
  uint32_t element_strides[5];
  int swizzle;                 /* 0, 32, 64, 128 (bytes) */
  int l2_promotion;            /* 0, 64, 128, 256 (bytes) */
  int oob_nan;                 /* 1: out-of-bounds elements read as NaN, 0: as zero */
} tunert_tensormap_info;

typedef struct tunert_selection_info {
  uint32_t struct_size;        /* set by the caller: sizeof(tunert_selection_info) */
  const char *family;
  const char *variant;         /* the variant's parameters, canonical JSON {"BLOCK":256,...} */
  const char *tuned_problem;   /* name of the tuned problem the variant was chosen for */
  const char *tuned_dims;      /* its dims, JSON */
  int exact;                   /* 1: the problem is that tuned problem */
  double distance;             /* log-scale distance to it (0 when exact) */
  const char *reason;          /* why this variant, in words (and what was rejected) */
  double measured_ns;          /* median time at the tuned problem [ns] */
  const char *measured_on;     /* device name it was measured on */
  const char *binary;          /* "cubin sm_90a", "ptx compute_90 (JIT by the driver)", or why none */
  int n_launches;              /* kernels launched in order by tunert_launch */
  const tunert_launch_info *launches;
  int n_args;
  const tunert_arg_info *args;
  /* since 0.2 */
  const tunert_tensormap_info *tensormaps; /* n_args entries (tensor = -1 for other args) */
  const uint32_t *param_offsets;  /* n_args byte offsets in the packed kernel parameters */
  uint32_t param_bytes;           /* their total size */
  /* since 0.3 */
  const unsigned (*clusters)[3];  /* n_launches thread-block cluster dims (x, y, z); {1, 1, 1}: a plain
                                     launch, else tunert_launch uses cuLaunchKernelEx (sm_90+) */
  /* since 0.4 */
  const char *kind;            /* how it was chosen: "tuned" (the problem's tuned kernel), "nearest" (a
                                  portable kernel tuned for another problem), "fallback" (the family's
                                  generic variant), "vendor" (a vendor library measured faster here) */
  const char *vendor;          /* kind "vendor": "cublaslt", "cudnn-sdpa", "sdpa", "torch"...; NULL for
                                  kernels. tunert_launch runs cublaslt entries of GEMM families itself
                                  and returns TUNERT_EVENDOR for the others */
  /* since bundle format 1.6 */
  const int *tensormap_row_strides; /* n_args entries: for a tensor map whose strides follow a scalar
                                  arg (its tensor's row stride [elements], e.g. q_ld), that scalar's
                                  index: pass another value to tunert_launch and the map reads the
                                  tensor as rows that many elements apart (a strided view, checked
                                  against its extent); -1 for other args and maps of dense rows */
} tunert_selection_info;

/* Describe a selection. Pointers are valid until tunert_close. */
TUNERT_API int tunert_selection_info_get(const tunert_selection *sel, tunert_selection_info *info);

/* ---- launch ---------------------------------------------------------------- */

#define TUNERT_ARG_PTR 1       /* a device pointer (tensor arguments) */
#define TUNERT_ARG_INT 2       /* an integer scalar (converted to the argument's dtype) */
#define TUNERT_ARG_FLOAT 3     /* a floating scalar (converted to the argument's dtype) */
#define TUNERT_ARG_AUTO 4      /* a scalar whose value the bundle computes for the problem */

typedef struct tunert_arg {
  int kind;                    /* TUNERT_ARG_* */
  union {
    uint64_t ptr;              /* CUdeviceptr, or a cudaMalloc pointer cast to uint64_t */
    int64_t i;
    double f;
  } v;
} tunert_arg;

static inline tunert_arg tunert_arg_ptr(const void *p) {
  tunert_arg a; a.kind = TUNERT_ARG_PTR; a.v.ptr = (uint64_t)(uintptr_t)p; return a;
}
static inline tunert_arg tunert_arg_devptr(uint64_t p) {
  tunert_arg a; a.kind = TUNERT_ARG_PTR; a.v.ptr = p; return a;
}
static inline tunert_arg tunert_arg_int(int64_t i) {
  tunert_arg a; a.kind = TUNERT_ARG_INT; a.v.i = i; return a;
}
static inline tunert_arg tunert_arg_float(double f) {
  tunert_arg a; a.kind = TUNERT_ARG_FLOAT; a.v.f = f; return a;
}
static inline tunert_arg tunert_arg_auto(void) {
  tunert_arg a; a.kind = TUNERT_ARG_AUTO; a.v.i = 0; return a;
}

/* Launch the selection's kernels in order on `stream` (a CUstream or
 * cudaStream_t; NULL: the default stream) with args[0..n_args), one per
 * kernel argument in tunert_family_info order: device pointers for tensors
 * (scratch included, at least tunert_arg_info.bytes), values or
 * TUNERT_ARG_AUTO for scalars and tensor maps (TUNERT_ROLE_TENSORMAP: built
 * here from the pointer given for the tensor they map, which must be 16-byte
 * aligned; encoded maps are cached per selection, pointer and strides, 8 per
 * map, lock-free; further ones are encoded at each launch, a host call of the
 * driver). A map whose strides follow a scalar (tensormap_row_strides) is
 * built with the value passed for it: the tensor is then read as rows that
 * many elements apart, which must keep the map's strides multiples of 16
 * bytes (TUNERT_EINVAL otherwise). Asynchronous, like cuLaunchKernel.
 * The first launch of a variant loads its binary (cubin for the device, else
 * the PTX through the driver's JIT) under a lock; later launches take no lock
 * and allocate nothing. Launches use the calling thread's current CUDA
 * context; a thread with none gets the device's primary context made current
 * (as the CUDA runtime does); another context is TUNERT_ECONTEXT.
 * A vendor selection (tunert_selection_info.kind "vendor") launches no kernel
 * of the bundle: a "cublaslt" entry of a GEMM family (dims M, N, K, b_layout;
 * tensor args a, b, c of one dtype, bf16 or f16) runs one cuBLASLt matmul on
 * `stream` (fp32 compute, no workspace; a, b, c 16-byte aligned), libcublasLt
 * being opened with dlopen (.so.13, then .so.12) at its first launch
 * (TUNERT_ENODRIVER when it cannot be; a failing cuBLASLt call is
 * TUNERT_ECUDA with cuBLASLt's status); its descriptors are made once per
 * context and problem, so later launches take no lock and allocate nothing.
 * Any other vendor entry returns TUNERT_EVENDOR and launches nothing. */
TUNERT_API int tunert_launch(tunert_ctx *ctx, const tunert_selection *sel, void *stream,
                             const tunert_arg *args, int n_args, tunert_err *err);

/* ---- bundle facts ---------------------------------------------------------- */

typedef struct tunert_bundle_info {
  uint32_t struct_size;        /* set by the caller: sizeof(tunert_bundle_info) */
  int format_major, format_minor;
  const char *created_at;      /* UTC ISO 8601 */
  const char *tool_version;    /* tune version that wrote it */
  const char *nvrtc_version;   /* NVRTC that compiled the binaries */
  const char *device_name;     /* the GPU the variants were measured on */
  const char *device_arch;
  const char *archs;           /* binaries it holds, e.g. "sm_90a" */
  const char *device_arch_here;/* the arch checked against ("unknown" without a driver) */
  double open_ms;              /* time tunert_open took [ms] */
  /* since 0.5 (bundle format 1.5) */
  int n_models;                /* GPU models the bundle has entries of (1 for bundles before 1.5) */
  const char *device_name_here;/* the GPU model selection is for (options.device_name, the driver's
                                  name, TUNERT_DEVICE_NAME), "" unknown */
  int model_here;              /* the bundle's model it is (tunert_model_info_get), -1 none */
} tunert_bundle_info;

TUNERT_API int tunert_bundle_info_get(const tunert_ctx *ctx, tunert_bundle_info *info);

/* ---- GPU models (bundle format 1.5) ----------------------------------------- */

/* A bundle made from results of several GPU models (`tune bundle` over a merged
 * database) holds entries of each. Selection ranks the entries of the model it
 * runs on first (the tiers below), then those of another model of the same
 * arch, then those of other archs; vendor and fallback entries as before
 * (docs/runtime.md, "Bundles of several GPU models"). A bundle before 1.5 has
 * one model, described by its meta device_*. */
#define TUNERT_MODEL_THIS 0        /* the GPU selection is for */
#define TUNERT_MODEL_SAME_ARCH 1   /* another model of its arch (or the GPU is unknown) */
#define TUNERT_MODEL_OTHER_ARCH 2  /* a model of another arch */

typedef struct tunert_model_info {
  uint32_t struct_size;        /* set by the caller: sizeof(tunert_model_info) */
  const char *name;            /* "NVIDIA H100 80GB HBM3" */
  const char *arch;            /* "sm_90" ("" unknown) */
  int sm_count;                /* multiprocessors (0 unknown) */
  int n_problems;              /* tuned problems of every family tuned on it */
  int tier;                    /* TUNERT_MODEL_*: how selection ranks its entries here */
} tunert_model_info;

/* The number of GPU models of the bundle, and the i-th (TUNERT_EINVAL when out of range). */
TUNERT_API int tunert_model_count(const tunert_ctx *ctx);
TUNERT_API int tunert_model_info_get(const tunert_ctx *ctx, int i, tunert_model_info *info);

#ifdef __cplusplus
}
#endif

#endif
