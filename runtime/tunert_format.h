/* tunert_format.h: the bundle file format, shared by its writer (db/db_bundle.c,
 * behind `tune bundle`) and its reader (libtunert).
 *
 * A bundle is one SQLite file (journal mode DELETE, never WAL, so it can be
 * read from a read-only folder) with PRAGMA application_id TUNERT_APPLICATION_ID
 * and the tables below. Versioning: meta rows format_major and format_minor.
 * A reader refuses another major version; a minor version may only add
 * tables, columns or meta keys that older readers can ignore.
 *
 * Expression columns hold texts in the language of tunert_expr.h over the
 * family's dims (in families.dims order) followed by its params (in
 * families.params order). A list column ("grid", "shape", ...) holds a
 * comma-separated list of such expressions. A value that a recipe computed
 * with a Lua function is stored as the number it had for that entry's tuned
 * problem (the entry is then exact-only: entries.portable = 0).
 *
 * 1.1 added tensor-map args (docs/tensormap-args.md): an args row with role
 * 'tensormap' (dtype: the mapped tensor's) and, per entry, its spec in
 * entry_tensormaps. A 1.0 reader refuses such a bundle ("bad role"), as it
 * must: it could not build the maps. A bundle without tensor maps has an
 * empty entry_tensormaps, which 1.0 readers ignore; 1.1 readers open 1.0
 * bundles unchanged.
 *
 * 1.2 added thread-block clusters: launches.cluster, an expression list of 3
 * items (default '1, 1, 1': a plain launch), launched with cuLaunchKernelEx
 * and CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION when not 1x1x1. 1.2 readers open
 * 1.0 and 1.1 bundles (no column: every launch plain). A bundle that launches
 * a cluster also has the meta row min_reader_minor = 2; readers refuse a
 * bundle whose min_reader_minor is above their own minor. (1.1 readers predate
 * that row and would launch such entries without their cluster: do not pair
 * them with bundles of cluster kernels.)
 *
 * 1.3 serves every problem of a family's domain: families.domain (expressions
 * over dims that every served problem must satisfy), and entries.kind:
 * 'tuned' (a tuned problem's best kernel), 'fallback' (the recipe's generic
 * config, chosen when no tuned entry's requires hold; its dims are a tuned
 * problem it was verified on, not a problem it was tuned for; median_ns 0:
 * not measured) and 'vendor' (a tuned problem where a vendor library,
 * entries.vendor, measured faster, vendor_ns; the entry still holds the best
 * kernel, so a reader that does not know vendors launches that kernel, a
 * correct answer). A minor version, not 2.0: every 1.2 table and column keeps
 * its meaning, and 1.3 readers open 1.0..1.2 bundles (no domain, every entry
 * tuned). A bundle with a domain or a fallback entry has min_reader_minor = 3:
 * a 1.2 reader would serve problems outside the domain and take fallback
 * entries for tuned ones. Vendor entries alone keep min_reader_minor as it was.
 *
 * 1.4 adds the arg dtype 'e4m3' (fp8 e4m3fn, 1 byte; tensors only). A bundle
 * with such an arg has min_reader_minor = 4: a 1.3 reader knows no size for it.
 *
 * 1.5 holds entries of several GPU models (docs/runtime.md, "Bundles of several
 * GPU models"): the table models (one row per GPU model the entries were tuned
 * on: name, arch, multiprocessor count) and entries.model_id (the model an entry
 * was tuned on; NULL for fallback entries, which serve every model). A tuned
 * problem may then have one entry per model; readers rank the entries of the
 * model they run on first, then those of another model of the same arch. A
 * bundle of one model has its one models row and min_reader_minor as before:
 * older readers open it unchanged (meta device_* still describe that model).
 * A bundle of several models has min_reader_minor = 5: an older reader would
 * take any model's entry for a problem (the fastest measured, whatever GPU).
 * 1.5 readers open older bundles as one model, described by meta device_*.
 *
 * 1.6 lets entry_tensormaps.strides name one scalar arg of the family (one
 * that no dim, param or sm_count names), the mapped tensor's row stride in
 * elements, e.g. 'D * 2, q_ld * 2, T * q_ld * 2': readers evaluate it with the
 * scalar's value (entry_args.value) at selection and with the value a launch
 * passes at launch, so a caller's strided view is read in place (libtunert:
 * tunert_selection_info.tensormap_row_strides). Such a bundle has
 * min_reader_minor = 6: an older reader cannot parse the name. Other bundles
 * keep min_reader_minor as before; 1.6 readers open older bundles unchanged.
 *
 * Binaries (any 1.x): a variant has at least one binary, not necessarily one per
 * architecture of meta `archs`: `tune bundle` writes no cubin for an arch the
 * variant does not compile for, and PTX only for a generic virtual arch
 * (compute_90, never compute_90a) it compiles for; readers pass over a variant
 * with no binary for the device (runtime/tunert_arch.h). Older bundles may hold
 * arch-specific PTX (compute_90a), which runs on that capability only. */
#ifndef TUNERT_FORMAT_H
#define TUNERT_FORMAT_H

#define TUNERT_APPLICATION_ID 0x74756e62 /* "tunb" */
#define TUNERT_TUNE_DB_APPLICATION_ID 0x74756e65 /* "tune": a results database, not a bundle */
#define TUNERT_BUNDLE_FORMAT_MAJOR 1
#define TUNERT_BUNDLE_FORMAT_MINOR 6 /* 1.1: tensor-map args (role 'tensormap', entry_tensormaps); 1.2: launches.cluster;
                                        1.3: families.domain, entries.kind / vendor / vendor_ns; 1.4: dtype e4m3;
                                        1.5: models, entries.model_id; 1.6: row-stride scalars in
                                        tensor-map strides */
#define TUNERT_MAX_LAUNCHES 4
#define TUNERT_MAX_ARGS 32
#define TUNERT_MAX_DIMS 32
#define TUNERT_MAX_PARAMS 64
#define TUNERT_MAX_RANK 8
#define TUNERT_TMAP_MAX_RANK 5   /* cuTensorMapEncodeTiled's rank limit */
#define TUNERT_MAX_TMAPS 8       /* tensor-map args per family */

#define TUNERT_BUNDLE_SCHEMA                                                                       \
  "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"                                \
  "CREATE TABLE families(\n"                                                                       \
  "  id INTEGER PRIMARY KEY,\n"                                                                    \
  "  name TEXT NOT NULL UNIQUE,\n"                                                                 \
  "  source_hash TEXT NOT NULL,     -- recipe + templates the variants were measured with\n"      \
  "  recipe_file TEXT NOT NULL,\n"                                                                 \
  "  recipe_source TEXT NOT NULL,   -- the recipe text, for provenance\n"                         \
  "  template TEXT NOT NULL,\n"                                                                    \
  "  dims TEXT NOT NULL,            -- 'B:int,D:int,causal:bool': problem dims, sorted by name\n" \
  "  params TEXT NOT NULL,          -- 'BLOCK:int,GRID_STRIDE:bool,NAME:str': recipe order\n"     \
  "  domain TEXT NOT NULL DEFAULT '' -- format 1.3: expression list over dims ('' every problem)\n" \
  ");\n"                                                                                           \
  "CREATE TABLE args(\n"                                                                           \
  "  family_id INTEGER NOT NULL REFERENCES families(id),\n"                                        \
  "  idx INTEGER NOT NULL,\n"                                                                      \
  "  name TEXT NOT NULL,\n"                                                                        \
  "  role TEXT NOT NULL CHECK (role IN ('input','output','scratch','scalar','tensormap')),\n"                  \
  "  dtype TEXT NOT NULL CHECK (dtype IN ('f32','f16','bf16','i32','i64','f64','e4m3')),\n"               \
  "  PRIMARY KEY (family_id, idx)\n"                                                               \
  ");\n"                                                                                           \
  "CREATE TABLE variants(\n"                                                                       \
  "  id INTEGER PRIMARY KEY,\n"                                                                    \
  "  family_id INTEGER NOT NULL REFERENCES families(id),\n"                                        \
  "  config_hash TEXT NOT NULL,\n"                                                                 \
  "  params_json TEXT NOT NULL,\n"                                                                 \
  "  param_values TEXT NOT NULL,    -- one literal per family param ('0' for str params)\n"       \
  "  defines TEXT NOT NULL,         -- the -D options it was compiled with\n"                     \
  "  kernels TEXT NOT NULL          -- symbol of each launch in the binary, space separated\n"    \
  ");\n"                                                                                           \
  "CREATE TABLE binaries(\n"                                                                       \
  "  id INTEGER PRIMARY KEY,\n"                                                                    \
  "  variant_id INTEGER NOT NULL REFERENCES variants(id),\n"                                       \
  "  kind TEXT NOT NULL CHECK (kind IN ('cubin','ptx')),\n"                                        \
  "  arch TEXT NOT NULL,            -- sm_90a for a cubin, compute_90a for PTX\n"                  \
  "  compile_key TEXT NOT NULL,\n"                                                                 \
  "  size INTEGER NOT NULL,\n"                                                                     \
  "  hash TEXT NOT NULL,            -- FNV-1a 64 of data, hex\n"                                  \
  "  data BLOB NOT NULL,\n"                                                                        \
  "  registers INTEGER, shared_bytes INTEGER, local_bytes INTEGER,\n"                              \
  "  spill_stores INTEGER, spill_loads INTEGER,\n"                                                 \
  "  UNIQUE (variant_id, kind, arch)\n"                                                            \
  ");\n"                                                                                           \
  "CREATE TABLE entries(\n"                                                                        \
  "  id INTEGER PRIMARY KEY,\n"                                                                    \
  "  family_id INTEGER NOT NULL REFERENCES families(id),\n"                                        \
  "  variant_id INTEGER NOT NULL REFERENCES variants(id),\n"                                       \
  "  problem_name TEXT NOT NULL,\n"                                                                \
  "  problem_hash TEXT NOT NULL,\n"                                                                \
  "  dims TEXT NOT NULL,            -- the tuned problem: literals in families.dims order\n"      \
  "  dims_json TEXT NOT NULL,\n"                                                                   \
  "  portable INTEGER NOT NULL CHECK (portable IN (0, 1)),\n"                                      \
  "  exact_why TEXT NOT NULL,       -- why exact-only ('' when portable)\n"                       \
  "  requires TEXT NOT NULL,        -- expressions that must hold ('' none)\n"                    \
  "  define_exprs TEXT NOT NULL,    -- problem-dependent compile-time defines ('' none)\n"        \
  "  define_values TEXT NOT NULL,   -- their values in the binary\n"                              \
  "  median_ns REAL NOT NULL, min_ns REAL, stddev_ns REAL, samples INTEGER,\n"                     \
  "  err_rel_l2 REAL, result_id INTEGER, measured_at TEXT, device_name TEXT,\n"                    \
  "  device_uuid TEXT, driver TEXT, backend TEXT, seed TEXT,\n"                                    \
  "  measured_source_hash TEXT,     -- recipe source the time was measured with\n"                \
  "  same_binary INTEGER,           -- 1: the cubin is the measured one (same compile key)\n"     \
  "  kind TEXT NOT NULL DEFAULT 'tuned' CHECK (kind IN ('tuned','fallback','vendor')), -- 1.3\n"   \
  "  vendor TEXT NOT NULL DEFAULT '', -- 1.3, kind vendor: the library that was faster\n"         \
  "  vendor_ns REAL,                -- 1.3, kind vendor: its median time at the tuned problem\n"   \
  "  model_id INTEGER REFERENCES models(id) -- 1.5: the GPU model it was tuned on (NULL: fallback)\n" \
  ");\n"                                                                                           \
  "CREATE TABLE models(             -- format 1.5: the GPU models the entries were tuned on\n"     \
  "  id INTEGER PRIMARY KEY,\n"                                                                    \
  "  name TEXT NOT NULL UNIQUE,     -- as the driver names it: 'NVIDIA H100 80GB HBM3'\n"         \
  "  arch TEXT NOT NULL,            -- its compute capability: 'sm_90'\n"                        \
  "  sm_count INTEGER NOT NULL,     -- multiprocessors: expressions' sm_count on it\n"           \
  "  driver TEXT NOT NULL DEFAULT '', uuid TEXT NOT NULL DEFAULT '' -- of the card measured on\n" \
  ");\n"                                                                                           \
  "CREATE TABLE launches(\n"                                                                       \
  "  entry_id INTEGER NOT NULL REFERENCES entries(id),\n"                                          \
  "  idx INTEGER NOT NULL,\n"                                                                      \
  "  grid TEXT NOT NULL, block TEXT NOT NULL, shared TEXT NOT NULL,\n"                             \
  "  cluster TEXT NOT NULL DEFAULT '1, 1, 1', -- format 1.2: thread-block cluster, 3 expressions\n" \
  "  PRIMARY KEY (entry_id, idx)\n"                                                                \
  ");\n"                                                                                           \
  "CREATE TABLE entry_args(\n"                                                                     \
  "  entry_id INTEGER NOT NULL REFERENCES entries(id),\n"                                          \
  "  idx INTEGER NOT NULL,\n"                                                                      \
  "  shape TEXT NOT NULL,           -- tensors: expression list ('' for scalars)\n"               \
  "  value TEXT NOT NULL,           -- scalars: expression ('' for tensors and tensor maps)\n"    \
  "  PRIMARY KEY (entry_id, idx)\n"                                                                \
  ");\n"                                                                                           \
  "CREATE TABLE entry_tensormaps(   -- format 1.1: one row per entry and tensormap arg\n"          \
  "  entry_id INTEGER NOT NULL REFERENCES entries(id),\n"                                          \
  "  idx INTEGER NOT NULL,          -- the tensormap arg (args.idx)\n"                            \
  "  tensor INTEGER NOT NULL,       -- args.idx of the tensor whose device pointer it maps\n"     \
  "  dtype TEXT NOT NULL,           -- that tensor's dtype: the map's element type\n"             \
  "  dims TEXT NOT NULL,            -- expression list, innermost dimension first\n"              \
  "  strides TEXT NOT NULL,         -- byte strides of dims 2..rank ('' for rank 1)\n"            \
  "  box TEXT NOT NULL,             -- expression list, one per dim\n"                            \
  "  swizzle INTEGER NOT NULL CHECK (swizzle IN (0, 32, 64, 128)),\n"                             \
  "  l2_promotion INTEGER NOT NULL CHECK (l2_promotion IN (0, 64, 128, 256)),\n"                  \
  "  oob TEXT NOT NULL CHECK (oob IN ('zero', 'nan')),\n"                                          \
  "  element_strides TEXT NOT NULL, -- literals, one per dim ('' all 1)\n"                        \
  "  PRIMARY KEY (entry_id, idx)\n"                                                                \
  ");\n"

/* FNV-1a 64 of a buffer (blob integrity check). */
static inline unsigned long long tunert_fnv1a64(const void *data, unsigned long long n) {
  const unsigned char *p = (const unsigned char *)data;
  unsigned long long h = 1469598103934665603ull;
  for (unsigned long long i = 0; i < n; ++i) { h ^= p[i]; h *= 1099511628211ull; }
  return h;
}

#endif
