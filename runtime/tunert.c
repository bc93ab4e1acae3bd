/* tunert.c: opening a bundle (validation, reading, expression compilation),
 * the arena, errors and the info functions of libtunert. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tunert_arch.h"
#include "tunert_int.h"
#include "tunert_vendor_cublaslt.h"

/* ---- errors -------------------------------------------------------------------- */

int rt_fail(tunert_err *err, int code, const char *fmt, ...) {
  if (!err) return code;
  err->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return code;
}

TUNERT_API const char *tunert_status_name(int code) {
  static const char *names[] = {"ok",          "invalid argument", "out of memory", "i/o",
                                "bad bundle",  "bundle version",   "no family",     "no variant",
                                "no binary for this architecture", "no driver",    "cuda",
                                "expression",  "cuda context",     "vendor entry"};
  return code >= 0 && code <= TUNERT_EVENDOR ? names[code] : "unknown";
}

TUNERT_API const char *tunert_version(void) { return TUNERT_VERSION_STRING; }

/* ---- arena ----------------------------------------------------------------------- */

static void *sys_alloc(void *ud, size_t n) { (void)ud; return malloc(n); }
static void sys_free(void *ud, void *p, size_t n) { (void)ud; (void)n; free(p); }

void *rt_alloc(rt_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  rt_chunk *c = a->head;
  size_t hdr = (sizeof(rt_chunk) + 15) & ~(size_t)15;
  if (!c || c->used + n > c->size) {
    size_t size = hdr + (n > 60000 ? n : 60000);
    c = a->al.alloc(a->al.ud, size);
    if (!c) { a->failed = 1; return NULL; }
    c->size = size;
    c->used = hdr;
    c->next = a->head;
    a->head = c;
  }
  void *p = (char *)c + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

char *rt_strdup(rt_arena *a, const char *s) {
  if (!s) s = "";
  size_t n = strlen(s) + 1;
  char *d = rt_alloc(a, n);
  if (d) memcpy(d, s, n);
  return d;
}

void rt_arena_free(rt_arena *a) {
  for (rt_chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    a->al.free(a->al.ud, c, c->size);
  }
  a->head = NULL;
}

static void *arena_alloc_cb(void *ud, size_t n) { return rt_alloc(ud, n); }
static void arena_free_cb(void *ud, void *p, size_t n) { (void)ud; (void)p; (void)n; }
tunert_allocator rt_arena_allocator(rt_arena *a) {
  tunert_allocator al = {arena_alloc_cb, arena_free_cb, a};
  return al;
}

/* ---- small parsers ------------------------------------------------------------------ */

/* "NAME:type,NAME:type" into arrays; returns the count or -1. */
static int split_typed(rt_arena *a, const char *text, int max, const char ***names, const char ***types) {
  int n = 0;
  if (*text) {
    n = 1;
    for (const char *c = text; *c; ++c) n += *c == ',';
  }
  if (n > max) return -1;
  *names = rt_alloc(a, sizeof(char *) * (size_t)(n + 1));
  *types = rt_alloc(a, sizeof(char *) * (size_t)(n + 1));
  if (!*names || !*types) return -1;
  char *copy = rt_strdup(a, text);
  if (!copy) return -1;
  int i = 0;
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    if (!colon || colon == tok || i >= n) return -1;
    *colon = 0;
    (*names)[i] = tok;
    (*types)[i] = colon + 1;
    ++i;
  }
  return i == n ? n : -1;
}

/* Evaluate a list of literals ("4, 128, true") into xvals (count must be n). */
/* Returns 0, TUNERT_ENOMEM, or TUNERT_EFORMAT with msg. */
static int literal_list(rt_arena *a, const char *text, int n, tunert_xval *out, char *msg, size_t msg_n) {
  if (n == 0) { if (*text) snprintf(msg, msg_n, "'%s': values where none are expected", text); return *text ? TUNERT_EFORMAT : 0; }
  tunert_allocator al = rt_arena_allocator(a);
  tunert_expr *e = NULL;
  int rc = tunert_expr_parse(text, NULL, 0, &al, &e, msg, msg_n);
  if (rc) return rc == TUNERT_ENOMEM ? rc : TUNERT_EFORMAT;
  if (tunert_expr_items(e) != n) { snprintf(msg, msg_n, "'%s': %d values, want %d", text, tunert_expr_items(e), n); return TUNERT_EFORMAT; }
  for (int i = 0; i < n; ++i)
    if (tunert_expr_eval(e, i, NULL, &out[i], msg, msg_n)) return TUNERT_EFORMAT;
  return 0;
}

/* ---- open ------------------------------------------------------------------------------ */

TUNERT_API void tunert_options_init(tunert_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->max_selections = 64;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A binary row and what owns it, in id order: the hash check's index (open only). */
typedef struct bin_ref {
  int64_t id;
  rt_binary *b;
  const rt_variant *v;
  const rt_family *f;
} bin_ref;

typedef struct opener {
  tunert_ctx *ctx;
  const char *path;
  tunert_err *err;
  bin_ref *bins;                /* every binary, by id (arena) */
  int n_bins;
  char msg[768];
} opener;

#define OFAIL(code, ...) do { rc = rt_fail(o->err, (code), __VA_ARGS__); goto fail; } while (0)

static int sql_fail(opener *o, const char *what) {
  int ec = sqlite3_errcode(o->ctx->db);
  return rt_fail(o->err, TUNERT_EFORMAT, "%s: %s (%s: %s)", o->path,
                 ec == SQLITE_CORRUPT ? "damaged or truncated" : "not a valid tune bundle", what, sqlite3_errmsg(o->ctx->db));
}

static int prepare(opener *o, const char *sql, sqlite3_stmt **st) {
  if (sqlite3_prepare_v2(o->ctx->db, sql, -1, st, NULL) != SQLITE_OK) return sql_fail(o, "reading its tables");
  return 0;
}

static const char *col_text(sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return t ? (const char *)t : "";
}

static int read_meta(opener *o) {
  tunert_ctx *ctx = o->ctx;
  sqlite3_stmt *st = NULL;
  int rc = 0, step;
  const char *fmaj = NULL, *fmin = NULL, *min_reader = NULL;
  if ((rc = prepare(o, "SELECT key, value FROM meta", &st))) return rc;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    const char *k = col_text(st, 0), *v = col_text(st, 1);
    const char **dst = NULL;
    if (!strcmp(k, "format_major")) dst = &fmaj;
    else if (!strcmp(k, "format_minor")) dst = &fmin;
    else if (!strcmp(k, "min_reader_minor")) dst = &min_reader; /* 1.2: what a reader must understand */
    else if (!strcmp(k, "created_at")) dst = &ctx->created_at;
    else if (!strcmp(k, "tool_version")) dst = &ctx->tool_version;
    else if (!strcmp(k, "nvrtc_version")) dst = &ctx->nvrtc_version;
    else if (!strcmp(k, "device_name")) dst = &ctx->device_name;
    else if (!strcmp(k, "device_arch")) dst = &ctx->device_arch;
    else if (!strcmp(k, "archs")) dst = &ctx->archs;
    else if (!strcmp(k, "device_sm_count")) ctx->meta_sm_count = atoi(v); /* `sm_count` without a driver */
    if (dst && !(*dst = rt_strdup(&ctx->arena, v))) { sqlite3_finalize(st); return rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); }
  }
  if (step != SQLITE_DONE) rc = sql_fail(o, "meta");
  sqlite3_finalize(st);
  if (rc) return rc;
  if (!fmaj || !fmin) return rt_fail(o->err, TUNERT_EFORMAT, "%s: not a valid tune bundle (no format version in meta)", o->path);
  char *end;
  long maj = strtol(fmaj, &end, 10);
  if (*end || maj < 0) return rt_fail(o->err, TUNERT_EFORMAT, "%s: bad format_major '%s'", o->path, fmaj);
  long min = strtol(fmin, &end, 10);
  if (*end || min < 0) return rt_fail(o->err, TUNERT_EFORMAT, "%s: bad format_minor '%s'", o->path, fmin);
  ctx->format_major = (int)maj;
  ctx->format_minor = (int)min;
  if (maj != TUNERT_BUNDLE_FORMAT_MAJOR)
    return rt_fail(o->err, TUNERT_EVERSION,
                   "%s: bundle format %ld.%ld, but this libtunert %d.%d.%d reads format %d.x only: %s",
                   o->path, maj, min, TUNERT_VERSION_MAJOR, TUNERT_VERSION_MINOR, TUNERT_VERSION_PATCH,
                   TUNERT_BUNDLE_FORMAT_MAJOR,
                   maj > TUNERT_BUNDLE_FORMAT_MAJOR ? "upgrade libtunert, or make the bundle with a matching tune"
                                                    : "make the bundle again with this version's tune bundle");
  if (min_reader && (strtol(min_reader, &end, 10) > TUNERT_BUNDLE_FORMAT_MINOR || *end))
    return rt_fail(o->err, TUNERT_EVERSION, "%s: bundle format %ld.%ld needs a reader of format %ld.%s or newer (it uses features "
                   "this libtunert %d.%d.%d, format %d.%d, would not honour): upgrade libtunert",
                   o->path, maj, min, maj, min_reader, TUNERT_VERSION_MAJOR, TUNERT_VERSION_MINOR, TUNERT_VERSION_PATCH,
                   TUNERT_BUNDLE_FORMAT_MAJOR, TUNERT_BUNDLE_FORMAT_MINOR);
  return 0;
}

/* The GPU models (format 1.5: table models; before, or where it is empty, one model from meta
 * device_*, which every tuned entry is of). */
static int read_models(opener *o) {
  tunert_ctx *ctx = o->ctx;
  rt_arena *a = &ctx->arena;
  sqlite3_stmt *st = NULL;
  int rc = 0, step, n = 0;
  if (ctx->format_minor >= 5) {
    if ((rc = prepare(o, "SELECT count(*) FROM models", &st))) return rc;
    step = sqlite3_step(st);
    n = step == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    st = NULL;
    if (step != SQLITE_ROW) return sql_fail(o, "models");
  }
  ctx->models_table = n > 0;
  ctx->models = rt_alloc(a, sizeof(rt_model) * (size_t)(n > 0 ? n : 1));
  if (!ctx->models) return rt_fail(o->err, TUNERT_ENOMEM, "out of memory");
  if (!ctx->models_table) {
    rt_model *m = &ctx->models[ctx->n_models++];
    m->name = ctx->device_name ? ctx->device_name : "";
    m->arch = ctx->device_arch ? ctx->device_arch : "";
    m->sm_count = ctx->meta_sm_count;
  } else {
    if ((rc = prepare(o, "SELECT id, name, arch, sm_count FROM models ORDER BY id", &st))) return rc;
    while ((step = sqlite3_step(st)) == SQLITE_ROW && ctx->n_models < n) {
      rt_model *m = &ctx->models[ctx->n_models++];
      m->id = sqlite3_column_int64(st, 0);
      m->name = rt_strdup(a, col_text(st, 1));
      m->arch = rt_strdup(a, col_text(st, 2));
      m->sm_count = sqlite3_column_int(st, 3);
    }
    if (step != SQLITE_DONE && step != SQLITE_ROW) rc = sql_fail(o, "models");
    sqlite3_finalize(st);
    if (rc) return rc;
  }
  for (int i = 0; i < ctx->n_models; ++i) {
    rt_model *m = &ctx->models[i];
    int is_ptx, spec;
    if (!m->arch || tunert_arch_parse(m->arch, &is_ptx, &m->major, &m->minor, &spec)) m->major = m->minor = -1;
  }
  return a->failed ? rt_fail(o->err, TUNERT_ENOMEM, "out of memory") : 0;
}

/* The index into ctx->models of a models.id, -1 when there is none. */
static int model_by_id(const tunert_ctx *ctx, int64_t id) {
  for (int i = 0; i < ctx->n_models; ++i)
    if (ctx->models[i].id == id) return i;
  return -1;
}

static int role_parse(const char *s) {
  if (!strcmp(s, "input")) return TUNERT_ROLE_INPUT;
  if (!strcmp(s, "output")) return TUNERT_ROLE_OUTPUT;
  if (!strcmp(s, "scratch")) return TUNERT_ROLE_SCRATCH;
  if (!strcmp(s, "scalar")) return TUNERT_ROLE_SCALAR;
  if (!strcmp(s, "tensormap")) return TUNERT_ROLE_TENSORMAP;
  return -1;
}

static int dtype_size(const char *s) {
  if (!strcmp(s, "f32") || !strcmp(s, "i32")) return 4;
  if (!strcmp(s, "f16") || !strcmp(s, "bf16")) return 2;
  if (!strcmp(s, "i64") || !strcmp(s, "f64")) return 8;
  if (!strcmp(s, "e4m3")) return 1;
  return -1;
}

static int read_families(opener *o) {
  tunert_ctx *ctx = o->ctx;
  rt_arena *a = &ctx->arena;
  sqlite3_stmt *st = NULL;
  int rc = 0, step, n = 0;
  if ((rc = prepare(o, "SELECT count(*) FROM families", &st))) return rc;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  st = NULL;
  if (n <= 0 || n > 100000) return rt_fail(o->err, TUNERT_EFORMAT, "%s: the bundle has no kernel family", o->path);
  ctx->families = rt_alloc(a, sizeof(rt_family) * (size_t)n);
  if (!ctx->families) return rt_fail(o->err, TUNERT_ENOMEM, "out of memory");
  /* families.domain since 1.3 */
  if ((rc = prepare(o, ctx->format_minor >= 3 ? "SELECT id, name, source_hash, recipe_file, dims, params, domain FROM families ORDER BY id"
                                              : "SELECT id, name, source_hash, recipe_file, dims, params, '' FROM families ORDER BY id",
                    &st))) return rc;
  int i = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW && i < n) {
    rt_family *f = &ctx->families[i];
    f->index = i;
    f->id = sqlite3_column_int64(st, 0);
    f->name = rt_strdup(a, col_text(st, 1));
    f->source_hash = rt_strdup(a, col_text(st, 2));
    f->recipe_file = rt_strdup(a, col_text(st, 3));
    const char **ptypes = NULL;
    f->n_dims = split_typed(a, col_text(st, 4), TUNERT_MAX_DIMS, &f->dims, &f->dim_types);
    f->n_params = split_typed(a, col_text(st, 5), TUNERT_MAX_PARAMS, &f->params, &ptypes);
    if (a->failed) { rc = rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); break; }
    if (f->n_dims < 0 || f->n_params < 0) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s: malformed dims or params", o->path, f->name); break; }
    f->dim_bool = rt_alloc(a, sizeof(int) * (size_t)(f->n_dims + 1));
    f->dim_enum = rt_alloc(a, sizeof(int) * (size_t)(f->n_dims + 1));
    f->param_type = rt_alloc(a, sizeof(int) * (size_t)(f->n_params + 1));
    f->names = rt_alloc(a, sizeof(char *) * (size_t)(f->n_dims + f->n_params + 1 + TUNERT_MAX_ARGS));
    if (!f->dim_bool || !f->dim_enum || !f->param_type || !f->names) { rc = rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); break; }
    for (int d = 0; d < f->n_dims; ++d) {
      if (strcmp(f->dim_types[d], "int") && strcmp(f->dim_types[d], "bool") && strncmp(f->dim_types[d], "enum(", 5)) {
        rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s: dim %s has type '%s' (int, bool or enum(a|b...))", o->path, f->name, f->dims[d], f->dim_types[d]);
        goto done;
      }
      f->dim_bool[d] = !strcmp(f->dim_types[d], "bool");
      if (!strncmp(f->dim_types[d], "enum(", 5)) { /* the number of values */
        const char *t = f->dim_types[d];
        size_t tl = strlen(t);
        if (tl < 7 || t[tl - 1] != ')') { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s: dim %s: malformed '%s'", o->path, f->name, f->dims[d], t); goto done; }
        f->dim_enum[d] = 1;
        for (const char *c = t; *c; ++c) f->dim_enum[d] += *c == '|';
      }
      f->names[d] = f->dims[d];
    }
    for (int k = 0; k < f->n_params; ++k) {
      f->param_type[k] = !strcmp(ptypes[k], "int") ? TUNERT_XINT : !strcmp(ptypes[k], "bool") ? TUNERT_XBOOL : 0;
      /* string params are not visible to expressions */
      f->names[f->n_dims + k] = f->param_type[k] ? f->params[k] : NULL;
    }
    /* the device fact after the params (rt_sm_count gives its value) */
    f->names[f->n_dims + f->n_params] = "sm_count";
    f->n_names = f->n_dims + f->n_params + 1; /* scalar args join after read_args */
    const char *dom = col_text(st, 6);
    if (*dom) { /* over dims only: parsed with the dims' names */
      tunert_allocator al = rt_arena_allocator(a);
      int prc = tunert_expr_parse(dom, f->names, f->n_dims, &al, &f->domain, o->msg, sizeof o->msg);
      if (prc) { rc = prc == TUNERT_ENOMEM ? rt_fail(o->err, prc, "out of memory") : rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s: domain: %s", o->path, f->name, o->msg); break; }
    }
    for (int j = 0; j < i; ++j)
      if (!strcmp(ctx->families[j].name, f->name)) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s twice", o->path, f->name); goto done; }
    ++i;
  }
  if (!rc && step != SQLITE_ROW && step != SQLITE_DONE) rc = sql_fail(o, "families");
  if (!rc && i != n) rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: family count changed while reading", o->path);
done:
  sqlite3_finalize(st);
  ctx->n_families = i;
  return rc;
}

static rt_family *family_by_id(tunert_ctx *ctx, int64_t id) {
  for (int i = 0; i < ctx->n_families; ++i)
    if (ctx->families[i].id == id) return &ctx->families[i];
  return NULL;
}

static int read_args(opener *o) {
  tunert_ctx *ctx = o->ctx;
  rt_arena *a = &ctx->arena;
  sqlite3_stmt *st = NULL;
  int rc = 0;
  for (int i = 0; i < ctx->n_families && !rc; ++i) {
    rt_family *f = &ctx->families[i];
    f->arg_names = rt_alloc(a, sizeof(char *) * TUNERT_MAX_ARGS);
    f->arg_dtypes = rt_alloc(a, sizeof(char *) * TUNERT_MAX_ARGS);
    f->arg_roles = rt_alloc(a, sizeof(int) * TUNERT_MAX_ARGS);
    f->arg_size = rt_alloc(a, sizeof(int) * TUNERT_MAX_ARGS);
    if (a->failed) return rt_fail(o->err, TUNERT_ENOMEM, "out of memory");
  }
  if ((rc = prepare(o, "SELECT family_id, idx, name, role, dtype FROM args ORDER BY family_id, idx", &st))) return rc;
  int step;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    rt_family *f = family_by_id(ctx, sqlite3_column_int64(st, 0));
    int idx = sqlite3_column_int(st, 1);
    if (!f || idx != f->n_args || idx >= TUNERT_MAX_ARGS) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: args table out of order or too many args", o->path); break; }
    f->arg_names[idx] = rt_strdup(a, col_text(st, 2));
    f->arg_roles[idx] = role_parse(col_text(st, 3));
    f->arg_dtypes[idx] = rt_strdup(a, col_text(st, 4));
    f->arg_size[idx] = dtype_size(col_text(st, 4)); /* element (tensors) or value (scalars) */
    if (f->arg_roles[idx] < 0 || f->arg_size[idx] < 0) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s: arg %d has a bad role or dtype", o->path, f->name, idx); break; }
    if (f->arg_roles[idx] == TUNERT_ROLE_TENSORMAP) {
      if (f->n_tmaps == TUNERT_MAX_TMAPS) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s: more than %d tensor maps", o->path, f->name, TUNERT_MAX_TMAPS); break; }
      f->tmap_arg[f->n_tmaps++] = idx;
    }
    f->n_args++;
  }
  if (!rc && step != SQLITE_DONE) rc = sql_fail(o, "args");
  /* scalar args as names of tensor-map strides, where no dim, param or sm_count has the name */
  for (int i = 0; i < ctx->n_families && !rc; ++i) {
    rt_family *f = &ctx->families[i];
    for (int idx = 0; idx < f->n_args; ++idx) {
      if (f->arg_roles[idx] != TUNERT_ROLE_SCALAR) continue;
      int taken = 0;
      for (int k = 0; k < f->n_names && !taken; ++k) taken = f->names[k] && !strcmp(f->names[k], f->arg_names[idx]);
      if (taken) continue;
      f->name_arg[f->n_names - (f->n_dims + f->n_params + 1)] = idx;
      f->names[f->n_names++] = f->arg_names[idx];
    }
  }
  sqlite3_finalize(st);
  for (int i = 0; i < ctx->n_families && !rc; ++i)
    if (ctx->families[i].n_args == 0) rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s has no arguments", o->path, ctx->families[i].name);
  return rc;
}

static int read_variants(opener *o) {
  tunert_ctx *ctx = o->ctx;
  rt_arena *a = &ctx->arena;
  sqlite3_stmt *st = NULL, *cnt = NULL;
  int rc = 0, step;
  /* counts per family first: arrays are allocated once */
  if ((rc = prepare(o, "SELECT family_id, count(*) FROM variants GROUP BY family_id", &cnt))) return rc;
  while ((step = sqlite3_step(cnt)) == SQLITE_ROW) {
    rt_family *f = family_by_id(ctx, sqlite3_column_int64(cnt, 0));
    int n = sqlite3_column_int(cnt, 1);
    if (!f || n <= 0) { sqlite3_finalize(cnt); return rt_fail(o->err, TUNERT_EFORMAT, "%s: variants of an unknown family", o->path); }
    f->variants = rt_alloc(a, sizeof(rt_variant) * (size_t)n);
    if (!f->variants) { sqlite3_finalize(cnt); return rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); }
  }
  sqlite3_finalize(cnt);
  if (step != SQLITE_DONE) return sql_fail(o, "variants");
  if ((rc = prepare(o, "SELECT id, family_id, config_hash, params_json, param_values, kernels FROM variants ORDER BY id", &st))) return rc;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    rt_family *f = family_by_id(ctx, sqlite3_column_int64(st, 1));
    if (!f || !f->variants) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: a variant of an unknown family", o->path); break; }
    rt_variant *v = &f->variants[f->n_variants++];
    v->id = sqlite3_column_int64(st, 0);
    v->config_hash = rt_strdup(a, col_text(st, 2));
    v->params_json = rt_strdup(a, col_text(st, 3));
    v->params = rt_alloc(a, sizeof(tunert_xval) * (size_t)(f->n_params + 1));
    v->chosen = -1;
    if (a->failed) { rc = rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); break; }
    if ((rc = literal_list(a, col_text(st, 4), f->n_params, v->params, o->msg, sizeof o->msg))) {
      rc = rt_fail(o->err, rc, "%s: family %s: variant %lld: param values: %s", o->path, f->name, (long long)v->id, o->msg);
      break;
    }
    char *k = rt_strdup(a, col_text(st, 5));
    if (!k) { rc = rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); break; }
    for (char *save = NULL, *t = strtok_r(k, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
      if (v->n_kernels >= TUNERT_MAX_LAUNCHES) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: variant %lld: too many kernels", o->path, (long long)v->id); goto done; }
      v->kernels[v->n_kernels++] = t;
    }
    if (!v->n_kernels) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: variant %lld has no kernel", o->path, (long long)v->id); break; }
  }
  if (!rc && step != SQLITE_DONE) rc = sql_fail(o, "variants");
done:
  sqlite3_finalize(st);
  return rc;
}

static rt_variant *variant_by_id(rt_family *f, int64_t id) {
  /* ids are increasing in the order read: binary search */
  int lo = 0, hi = f->n_variants - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (f->variants[mid].id == id) return &f->variants[mid];
    if (f->variants[mid].id < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

static rt_variant *variant_any(tunert_ctx *ctx, int64_t id, rt_family **fam) {
  for (int i = 0; i < ctx->n_families; ++i) {
    rt_variant *v = variant_by_id(&ctx->families[i], id);
    if (v) { if (fam) *fam = &ctx->families[i]; return v; }
  }
  return NULL;
}

static int read_binaries(opener *o) {
  tunert_ctx *ctx = o->ctx;
  rt_arena *a = &ctx->arena;
  sqlite3_stmt *st = NULL;
  int rc = 0, step, total = 0;
  if ((rc = prepare(o, "SELECT variant_id, count(*) FROM binaries GROUP BY variant_id", &st))) return rc;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    rt_variant *v = variant_any(ctx, sqlite3_column_int64(st, 0), NULL);
    int n = sqlite3_column_int(st, 1);
    if (!v || n <= 0 || n > 64) { sqlite3_finalize(st); return rt_fail(o->err, TUNERT_EFORMAT, "%s: binaries of an unknown variant", o->path); }
    v->bins = rt_alloc(a, sizeof(rt_binary) * (size_t)n);
    if (!v->bins) { sqlite3_finalize(st); return rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); }
    total += n;
  }
  sqlite3_finalize(st);
  if (step != SQLITE_DONE) return sql_fail(o, "binaries");
  if (!(o->bins = rt_alloc(a, sizeof(bin_ref) * (size_t)(total + 1)))) return rt_fail(o->err, TUNERT_ENOMEM, "out of memory");
  if ((rc = prepare(o, "SELECT id, variant_id, kind, arch, size, hash FROM binaries ORDER BY id", &st))) return rc;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    rt_family *f = NULL;
    rt_variant *v = variant_any(ctx, sqlite3_column_int64(st, 1), &f);
    if (!v || !v->bins || o->n_bins >= total) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: a binary of an unknown variant", o->path); break; }
    rt_binary *b = &v->bins[v->n_bins++];
    o->bins[o->n_bins++] = (bin_ref){sqlite3_column_int64(st, 0), b, v, f};
    b->id = sqlite3_column_int64(st, 0);
    b->arch = rt_strdup(a, col_text(st, 3));
    b->size = sqlite3_column_int64(st, 4);
    b->hash = strtoull(col_text(st, 5), NULL, 16);
    if (!b->arch) { rc = rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); break; }
    int want_ptx = !strcmp(col_text(st, 2), "ptx");
    if (tunert_arch_parse(b->arch, &b->is_ptx, &b->major, &b->minor, &b->arch_specific) || b->is_ptx != want_ptx || b->size <= 0) {
      rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: binary %lld: bad arch '%s' for a %s", o->path, (long long)b->id, b->arch, col_text(st, 2));
      break;
    }
  }
  if (!rc && step != SQLITE_DONE) rc = sql_fail(o, "binaries");
  sqlite3_finalize(st);
  return rc;
}

/* ---- binary hashes ------------------------------------------------------------------------ */

/* Every blob is checked against its stored FNV-1a hash at open, so a damaged bundle is refused
 * before it serves (rather than at a variant's first launch, in production). FNV-1a is one serial
 * multiply per byte, so a single blob cannot go faster; HASH_LANES blobs are hashed side by side,
 * each lane its own statement over the ids congruent to it, so the multiplies overlap. */
#define HASH_LANES 4            /* the hashing loop below is written for 4 */
#define HASH_CHUNK 4096         /* bytes per lane per round at most */
#define FNV_BASIS 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

typedef struct hash_lane {
  sqlite3_stmt *st;
  const bin_ref *ref;           /* the blob being hashed; NULL: the lane is done */
  const unsigned char *p;       /* its bytes not hashed yet (valid until st steps) */
  int64_t left, n;              /* bytes not hashed yet, and all of them */
  uint64_t h;
} hash_lane;

static const bin_ref *bin_by_id(const opener *o, int64_t id) {
  int lo = 0, hi = o->n_bins - 1; /* read in id order */
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (o->bins[mid].id == id) return &o->bins[mid];
    if (o->bins[mid].id < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

static int lane_next(opener *o, hash_lane *l) {
  int step = sqlite3_step(l->st);
  l->ref = NULL;
  if (step == SQLITE_DONE) return 0;
  if (step != SQLITE_ROW) return sql_fail(o, "binaries");
  l->p = sqlite3_column_blob(l->st, 1);
  l->n = l->left = sqlite3_column_bytes(l->st, 1);
  if (!l->p && sqlite3_errcode(o->ctx->db) == SQLITE_NOMEM) return rt_fail(o->err, TUNERT_ENOMEM, "out of memory");
  l->h = FNV_BASIS;
  if (!(l->ref = bin_by_id(o, sqlite3_column_int64(l->st, 0))))
    return rt_fail(o->err, TUNERT_EFORMAT, "%s: binaries changed while reading", o->path);
  return 0;
}

static int lane_check(opener *o, const hash_lane *l) {
  const bin_ref *r = l->ref;
  if (l->n == r->b->size && l->h == r->b->hash) return 0;
  return rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s: variant %lld %s: its %s binary (id %lld) is damaged: %lld bytes hashing "
                 "to %016llx, the bundle recorded %lld bytes, FNV-1a %016llx; make the bundle again", o->path, r->f->name,
                 (long long)r->v->id, r->v->params_json, r->b->arch, (long long)r->id, (long long)l->n, (unsigned long long)l->h,
                 (long long)r->b->size, (unsigned long long)r->b->hash);
}

static int check_binary_hashes(opener *o) {
  hash_lane lane[HASH_LANES] = {{0}};
  int rc = 0;
  for (int k = 0; k < HASH_LANES && !rc; ++k) {
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT id, data FROM binaries WHERE id %% %d = %d ORDER BY id", HASH_LANES, k);
    if (!(rc = prepare(o, sql, &lane[k].st))) rc = lane_next(o, &lane[k]);
  }
  static const unsigned char idle[HASH_CHUNK]; /* what a finished lane hashes, into nothing */
  while (!rc) {
    int active = 0;
    int64_t m = HASH_CHUNK;
    const unsigned char *p[HASH_LANES];
    uint64_t h[HASH_LANES];
    for (int k = 0; k < HASH_LANES; ++k) {
      p[k] = lane[k].ref ? lane[k].p : idle;
      h[k] = lane[k].h;
      if (lane[k].ref) { ++active; if (lane[k].left < m) m = lane[k].left; }
    }
    if (!active) break;
    for (int64_t i = 0; i < m; ++i) { /* the lanes' multiplies are independent: they overlap */
      h[0] = (h[0] ^ p[0][i]) * FNV_PRIME;
      h[1] = (h[1] ^ p[1][i]) * FNV_PRIME;
      h[2] = (h[2] ^ p[2][i]) * FNV_PRIME;
      h[3] = (h[3] ^ p[3][i]) * FNV_PRIME;
    }
    for (int k = 0; k < HASH_LANES && !rc; ++k) {
      if (!lane[k].ref) continue;
      lane[k].h = h[k];
      lane[k].p += m;
      lane[k].left -= m;
      if (lane[k].left == 0 && !(rc = lane_check(o, &lane[k]))) rc = lane_next(o, &lane[k]);
    }
  }
  for (int k = 0; k < HASH_LANES; ++k) sqlite3_finalize(lane[k].st);
  return rc;
}

/* Parse an expression list with n items (n < 0: any count). */
/* Parse an expression list over names[0..n_names) of f. */
static int parse_names(opener *o, rt_family *f, int n_names, const char *text, int n, tunert_expr **out, const char *what,
                       int64_t entry) {
  tunert_allocator al = rt_arena_allocator(&o->ctx->arena);
  int rc = tunert_expr_parse(text, f->names, n_names, &al, out, o->msg, sizeof o->msg);
  if (rc == TUNERT_ENOMEM) return rt_fail(o->err, rc, "out of memory");
  if (rc) return rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s: entry %lld: %s: %s", o->path, f->name, (long long)entry, what, o->msg);
  if (n >= 0 && tunert_expr_items(*out) != n)
    return rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s: entry %lld: %s has %d items, want %d", o->path, f->name,
                   (long long)entry, what, tunert_expr_items(*out), n);
  return 0;
}

/* Parse an expression list over the dims, params and sm_count of f. */
static int parse_list(opener *o, rt_family *f, const char *text, int n, tunert_expr **out, const char *what, int64_t entry) {
  return parse_names(o, f, f->n_dims + f->n_params + 1, text, n, out, what, entry);
}

static int read_entries(opener *o) {
  tunert_ctx *ctx = o->ctx;
  rt_arena *a = &ctx->arena;
  sqlite3_stmt *st = NULL, *lst = NULL, *ast = NULL;
  int rc = 0, step;
  if ((rc = prepare(o, "SELECT family_id, count(*) FROM entries GROUP BY family_id", &st))) return rc;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    rt_family *f = family_by_id(ctx, sqlite3_column_int64(st, 0));
    int n = sqlite3_column_int(st, 1);
    if (!f || n <= 0) { sqlite3_finalize(st); return rt_fail(o->err, TUNERT_EFORMAT, "%s: entries of an unknown family", o->path); }
    f->entries = rt_alloc(a, sizeof(rt_entry) * (size_t)n);
    if (!f->entries) { sqlite3_finalize(st); return rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); }
  }
  sqlite3_finalize(st);
  st = NULL;
  if (step != SQLITE_DONE) return sql_fail(o, "entries");
  for (int i = 0; i < ctx->n_families; ++i)
    if (!ctx->families[i].entries)
      return rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s has no tuned problem", o->path, ctx->families[i].name);
  /* entries.kind, vendor, vendor_ns since 1.3; before, every entry is a tuned one */
  /* entries.model_id since 1.5; before, every tuned entry is of the one model (index 0) */
  if ((rc = prepare(o, ctx->format_minor >= 5
                           ? "SELECT id, family_id, variant_id, problem_name, dims, dims_json, portable, exact_why,"
                             " requires, define_exprs, define_values, median_ns, device_name, measured_at, kind, vendor,"
                             " vendor_ns, model_id FROM entries ORDER BY id"
                           : ctx->format_minor >= 3
                           ? "SELECT id, family_id, variant_id, problem_name, dims, dims_json, portable, exact_why,"
                             " requires, define_exprs, define_values, median_ns, device_name, measured_at, kind, vendor,"
                             " vendor_ns, NULL FROM entries ORDER BY id"
                           : "SELECT id, family_id, variant_id, problem_name, dims, dims_json, portable, exact_why,"
                             " requires, define_exprs, define_values, median_ns, device_name, measured_at, 'tuned', '',"
                             " NULL, NULL FROM entries ORDER BY id", &st))) goto fail;
  /* launches.cluster since 1.2; older bundles launch every kernel without a cluster */
  if ((rc = prepare(o, ctx->format_minor >= 2 ? "SELECT entry_id, idx, grid, block, shared, cluster FROM launches ORDER BY entry_id, idx"
                                              : "SELECT entry_id, idx, grid, block, shared, '1, 1, 1' FROM launches ORDER BY entry_id, idx",
                    &lst))) goto fail;
  if ((rc = prepare(o, "SELECT entry_id, idx, shape, value FROM entry_args ORDER BY entry_id, idx", &ast))) goto fail;
  int lstep = sqlite3_step(lst), astep = sqlite3_step(ast);
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    rt_family *f = family_by_id(ctx, sqlite3_column_int64(st, 1));
    if (!f) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: an entry of an unknown family", o->path); goto fail; }
    rt_entry *e = &f->entries[f->n_entries++];
    e->id = sqlite3_column_int64(st, 0);
    e->v = variant_by_id(f, sqlite3_column_int64(st, 2));
    if (!e->v) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: unknown variant", o->path, (long long)e->id); goto fail; }
    e->problem_name = rt_strdup(a, col_text(st, 3));
    e->dims_json = rt_strdup(a, col_text(st, 5));
    e->portable = sqlite3_column_int(st, 6) != 0;
    e->exact_why = rt_strdup(a, col_text(st, 7));
    e->median_ns = sqlite3_column_double(st, 11);
    e->device_name = rt_strdup(a, col_text(st, 12));
    e->measured_at = rt_strdup(a, col_text(st, 13));
    const char *kind = col_text(st, 14);
    e->kind = !strcmp(kind, "tuned") ? RT_TUNED : !strcmp(kind, "fallback") ? RT_FALLBACK : !strcmp(kind, "vendor") ? RT_VENDOR : -1;
    if (e->kind < 0) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: unknown kind '%s'", o->path, (long long)e->id, kind); goto fail; }
    e->vendor = e->kind == RT_VENDOR ? rt_strdup(a, col_text(st, 15)) : NULL;
    e->vendor_ns = sqlite3_column_double(st, 16);
    if (!ctx->models_table) e->model = e->kind == RT_FALLBACK ? -1 : 0;
    else if (sqlite3_column_type(st, 17) == SQLITE_NULL) e->model = -1;
    else if ((e->model = model_by_id(ctx, sqlite3_column_int64(st, 17))) < 0) {
      rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: unknown GPU model", o->path, (long long)e->id);
      goto fail;
    }
    e->dims = rt_alloc(a, sizeof(int64_t) * (size_t)(f->n_dims + 1));
    e->shape = rt_alloc(a, sizeof(tunert_expr *) * (size_t)f->n_args);
    e->value = rt_alloc(a, sizeof(tunert_expr *) * (size_t)f->n_args);
    if (f->n_tmaps) e->tm = rt_alloc(a, sizeof(rt_tmap_expr) * (size_t)f->n_tmaps);
    tunert_xval dv[TUNERT_MAX_DIMS];
    if (a->failed) { rc = rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); goto fail; }
    if ((rc = literal_list(a, col_text(st, 4), f->n_dims, dv, o->msg, sizeof o->msg))) {
      rc = rt_fail(o->err, rc, "%s: entry %lld: dims: %s", o->path, (long long)e->id, o->msg);
      goto fail;
    }
    for (int d = 0; d < f->n_dims; ++d) {
      if (tunert_xval_to_i64(&dv[d], &e->dims[d])) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: dim %s is not an integer", o->path, (long long)e->id, f->dims[d]); goto fail; }
      if (f->dim_enum[d] && (e->dims[d] < 0 || e->dims[d] >= f->dim_enum[d])) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: dim %s out of its %d values", o->path, (long long)e->id, f->dims[d], f->dim_enum[d]); goto fail; }
    }
    const char *req = col_text(st, 8);
    if (*req && (rc = parse_list(o, f, req, -1, &e->requires, "requires", e->id))) goto fail;
    const char *dex = col_text(st, 9);
    if (*dex) {
      if ((rc = parse_list(o, f, dex, -1, &e->define_exprs, "define_exprs", e->id))) goto fail;
      int nd = tunert_expr_items(e->define_exprs);
      e->define_values = rt_alloc(a, sizeof(tunert_xval) * (size_t)nd);
      if (!e->define_values) { rc = rt_fail(o->err, TUNERT_ENOMEM, "out of memory"); goto fail; }
      if ((rc = literal_list(a, col_text(st, 10), nd, e->define_values, o->msg, sizeof o->msg))) {
        rc = rt_fail(o->err, rc, "%s: entry %lld: define_values: %s", o->path, (long long)e->id, o->msg);
        goto fail;
      }
    }
    /* launches and args come sorted by entry id, like entries */
    while (lstep == SQLITE_ROW && sqlite3_column_int64(lst, 0) < e->id) lstep = sqlite3_step(lst);
    while (lstep == SQLITE_ROW && sqlite3_column_int64(lst, 0) == e->id) {
      int idx = sqlite3_column_int(lst, 1);
      if (idx != e->n_launches || idx >= TUNERT_MAX_LAUNCHES) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: launches out of order", o->path, (long long)e->id); goto fail; }
      if ((rc = parse_list(o, f, col_text(lst, 2), 3, &e->grid[idx], "grid", e->id))) goto fail;
      if ((rc = parse_list(o, f, col_text(lst, 3), 3, &e->block[idx], "block", e->id))) goto fail;
      if ((rc = parse_list(o, f, col_text(lst, 4), 1, &e->shared[idx], "shared", e->id))) goto fail;
      if ((rc = parse_list(o, f, col_text(lst, 5), 3, &e->cluster[idx], "cluster", e->id))) goto fail;
      e->n_launches++;
      lstep = sqlite3_step(lst);
    }
    if (e->n_launches == 0 || e->n_launches != e->v->n_kernels) {
      rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: %d launches for %d kernels", o->path, (long long)e->id, e->n_launches, e->v->n_kernels);
      goto fail;
    }
    while (astep == SQLITE_ROW && sqlite3_column_int64(ast, 0) < e->id) astep = sqlite3_step(ast);
    int na = 0;
    while (astep == SQLITE_ROW && sqlite3_column_int64(ast, 0) == e->id) {
      int idx = sqlite3_column_int(ast, 1);
      if (idx != na || idx >= f->n_args) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: args out of order", o->path, (long long)e->id); goto fail; }
      int scalar = f->arg_roles[idx] == TUNERT_ROLE_SCALAR;
      const char *shape = col_text(ast, 2), *value = col_text(ast, 3);
      if (f->arg_roles[idx] == TUNERT_ROLE_TENSORMAP) { /* its spec is in entry_tensormaps */
        if (*shape || *value) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: tensor map %s has a shape or value", o->path, (long long)e->id, f->arg_names[idx]); goto fail; }
        ++na;
        astep = sqlite3_step(ast);
        continue;
      }
      if (scalar ? (!*value || *shape) : (!*shape || *value)) {
        rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: arg %s needs a %s", o->path, (long long)e->id, f->arg_names[idx], scalar ? "value" : "shape");
        goto fail;
      }
      if (scalar) { if ((rc = parse_list(o, f, value, 1, &e->value[idx], f->arg_names[idx], e->id))) goto fail; }
      else {
        if ((rc = parse_list(o, f, shape, -1, &e->shape[idx], f->arg_names[idx], e->id))) goto fail;
        if (tunert_expr_items(e->shape[idx]) > TUNERT_MAX_RANK) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: arg %s: rank over %d", o->path, (long long)e->id, f->arg_names[idx], TUNERT_MAX_RANK); goto fail; }
      }
      ++na;
      astep = sqlite3_step(ast);
    }
    if (na != f->n_args) { rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: %d args, family has %d", o->path, (long long)e->id, na, f->n_args); goto fail; }
  }
  if (step != SQLITE_DONE) rc = sql_fail(o, "entries");
fail:
  sqlite3_finalize(st);
  sqlite3_finalize(lst);
  sqlite3_finalize(ast);
  return rc;
}

static rt_entry *entry_by_id(rt_family *f, int64_t id) {
  int lo = 0, hi = f->n_entries - 1; /* read in id order */
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (f->entries[mid].id == id) return &f->entries[mid];
    if (f->entries[mid].id < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

/* entry_tensormaps (format 1.1): read only when a family has tensormap args. */
static int read_tensormaps(opener *o) {
  tunert_ctx *ctx = o->ctx;
  int any = 0, rc = 0, step;
  for (int i = 0; i < ctx->n_families; ++i) any |= ctx->families[i].n_tmaps > 0;
  if (!any) return 0;
  sqlite3_stmt *st = NULL;
  if ((rc = prepare(o, "SELECT t.entry_id, e.family_id, t.idx, t.tensor, t.dtype, t.dims, t.strides, t.box, t.swizzle,"
                       " t.l2_promotion, t.oob, t.element_strides FROM entry_tensormaps t JOIN entries e ON e.id = t.entry_id"
                       " ORDER BY t.entry_id, t.idx", &st))) return rc;
#define TFAIL(...) do { rc = rt_fail(o->err, TUNERT_EFORMAT, __VA_ARGS__); goto done; } while (0)
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t eid = sqlite3_column_int64(st, 0);
    rt_family *f = family_by_id(ctx, sqlite3_column_int64(st, 1));
    rt_entry *e = f ? entry_by_id(f, eid) : NULL;
    if (!e) TFAIL("%s: entry_tensormaps: unknown entry %lld", o->path, (long long)eid);
    int idx = sqlite3_column_int(st, 2), k = 0, tensor = sqlite3_column_int(st, 3);
    while (k < f->n_tmaps && f->tmap_arg[k] != idx) ++k;
    if (k == f->n_tmaps) TFAIL("%s: entry %lld: arg %d is not a tensor map of family %s", o->path, (long long)eid, idx, f->name);
    rt_tmap_expr *m = &e->tm[k];
    const char *nm = f->arg_names[idx];
    if (m->dims) TFAIL("%s: entry %lld: tensor map %s twice", o->path, (long long)eid, nm);
    if (tensor < 0 || tensor >= f->n_args || f->arg_roles[tensor] == TUNERT_ROLE_SCALAR || f->arg_roles[tensor] == TUNERT_ROLE_TENSORMAP)
      TFAIL("%s: entry %lld: tensor map %s maps arg %d, which is not a tensor", o->path, (long long)eid, nm, tensor);
    const char *dt = col_text(st, 4);
    if (strcmp(dt, f->arg_dtypes[tensor]) || strcmp(dt, f->arg_dtypes[idx]) || rt_tmap_dtype(dt) < 0)
      TFAIL("%s: entry %lld: tensor map %s has dtype %s, its tensor %s is %s", o->path, (long long)eid, nm, dt, f->arg_names[tensor], f->arg_dtypes[tensor]);
    m->arg = idx;
    m->tensor = tensor;
    m->elsize = f->arg_size[tensor];
    m->cu_dtype = rt_tmap_dtype(dt);
    m->swizzle = sqlite3_column_int(st, 8);
    m->l2_promotion = sqlite3_column_int(st, 9);
    const char *oob = col_text(st, 10);
    m->oob_nan = !strcmp(oob, "nan");
    if ((m->swizzle != 0 && m->swizzle != 32 && m->swizzle != 64 && m->swizzle != 128) ||
        (m->l2_promotion != 0 && m->l2_promotion != 64 && m->l2_promotion != 128 && m->l2_promotion != 256) ||
        (!m->oob_nan && strcmp(oob, "zero")))
      TFAIL("%s: entry %lld: tensor map %s: swizzle %d, l2_promotion %d or oob '%s' out of their values", o->path, (long long)eid, nm,
            m->swizzle, m->l2_promotion, oob);
    if ((rc = parse_list(o, f, col_text(st, 5), -1, &m->dims, nm, eid))) goto done;
    int rank = tunert_expr_items(m->dims);
    if (rank < 1 || rank > TUNERT_TMAP_MAX_RANK) TFAIL("%s: entry %lld: tensor map %s has rank %d, want 1..%d", o->path, (long long)eid, nm, rank, TUNERT_TMAP_MAX_RANK);
    const char *strides = col_text(st, 6);
    if (rank == 1 ? *strides != 0 : (rc = parse_names(o, f, f->n_names, strides, rank - 1, &m->strides, nm, eid)) != 0) {
      if (!rc) rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: entry %lld: tensor map %s of rank 1 has strides", o->path, (long long)eid, nm);
      goto done;
    }
    /* strides may name one scalar (format 1.6): the tensor's row stride */
    m->ld_arg = m->ld_slot = -1;
    for (int j = f->n_dims + f->n_params + 1; j < f->n_names; ++j) {
      if (!tunert_expr_uses(m->strides, j)) continue;
      if (m->ld_arg >= 0)
        TFAIL("%s: entry %lld: tensor map %s: its strides name %s and %s (at most one scalar, the row stride of %s)", o->path,
              (long long)eid, nm, f->arg_names[m->ld_arg], f->names[j], f->arg_names[tensor]);
      m->ld_slot = j;
      m->ld_arg = f->name_arg[j - (f->n_dims + f->n_params + 1)];
      if (strcmp(f->arg_dtypes[m->ld_arg], "i32") && strcmp(f->arg_dtypes[m->ld_arg], "i64"))
        TFAIL("%s: entry %lld: tensor map %s: its strides name %s, a %s scalar (a row stride is i32 or i64)", o->path,
              (long long)eid, nm, f->names[j], f->arg_dtypes[m->ld_arg]);
    }
    if ((rc = parse_list(o, f, col_text(st, 7), rank, &m->box, nm, eid))) goto done;
    for (int i = 0; i < TUNERT_TMAP_MAX_RANK; ++i) m->estr[i] = 1;
    const char *es = col_text(st, 11);
    if (*es) {
      tunert_xval v[TUNERT_TMAP_MAX_RANK];
      if ((rc = literal_list(&ctx->arena, es, rank, v, o->msg, sizeof o->msg))) {
        rc = rt_fail(o->err, rc, "%s: entry %lld: tensor map %s: element_strides: %s", o->path, (long long)eid, nm, o->msg);
        goto done;
      }
      for (int i = 0; i < rank; ++i) {
        int64_t x;
        if (tunert_xval_to_i64(&v[i], &x) || x < 1 || x > 8) TFAIL("%s: entry %lld: tensor map %s: element stride %d out of 1..8", o->path, (long long)eid, nm, i + 1);
        m->estr[i] = (uint32_t)x;
      }
      m->n_estr = rank;
    }
  }
  if (step != SQLITE_DONE) { rc = sql_fail(o, "entry_tensormaps"); goto done; }
  for (int i = 0; i < ctx->n_families; ++i) {
    rt_family *f = &ctx->families[i];
    for (int j = 0; j < f->n_entries; ++j)
      for (int k = 0; k < f->n_tmaps; ++k)
        if (!f->entries[j].tm[k].dims)
          TFAIL("%s: entry %lld: no spec for tensor map %s (entry_tensormaps)", o->path, (long long)f->entries[j].id, f->arg_names[f->tmap_arg[k]]);
  }
#undef TFAIL
done:
  sqlite3_finalize(st);
  return rc;
}

/* ---- devices and binaries ---------------------------------------------------------------- */

/* The targets of the bundle's meta `archs` ("sm_90a,sm_80,compute_90") that are cubins a device
 * of ctx's capability could run, into out (comma-separated): a variant without a cubin of one of
 * them was skipped for it by `tune bundle` (it did not compile there). */
static void skipped_targets(const tunert_ctx *ctx, const rt_variant *v, char *out, size_t n) {
  out[0] = 0;
  if (!ctx->archs) return;
  size_t len = 0;
  for (const char *t = ctx->archs; *t;) {
    size_t tl = strcspn(t, ",");
    char name[24];
    snprintf(name, sizeof name, "%.*s", (int)(tl < sizeof name ? tl : sizeof name - 1), t);
    int is_ptx, maj, min, spec, have = 0;
    if (!tunert_arch_parse(name, &is_ptx, &maj, &min, &spec) && !is_ptx &&
        tunert_binary_rank(0, maj, min, spec, ctx->dev_major, ctx->dev_minor) >= 0) {
      for (int k = 0; k < v->n_bins; ++k) have |= !strcmp(v->bins[k].arch, name);
      if (!have && len < n) len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", name);
    }
    t += tl + (t[tl] == ',');
  }
}

/* Why none of v's binaries runs on the device, into v->binary_desc: what it has (arch-specific
 * binaries said so, and a variant without PTX), and a target of the bundle the device could run
 * that this variant lacks. */
static void describe_no_binary(const tunert_ctx *ctx, rt_variant *v) {
  char *d = v->binary_desc;
  size_t n = sizeof v->binary_desc;
  size_t len = (size_t)snprintf(d, n, "no binary runs on %s (this variant has", ctx->dev_arch);
  int ptx = 0;
  for (int k = 0; k < v->n_bins; ++k) ptx |= v->bins[k].is_ptx;
  for (int k = 0; k < v->n_bins && len < n; ++k) {
    const rt_binary *b = &v->bins[k];
    len += (size_t)snprintf(d + len, n - len, "%s %s %s", k ? "," : "", b->is_ptx ? "ptx" : "cubin", b->arch);
    if (b->arch_specific && len < n) len += (size_t)snprintf(d + len, n - len, " (arch-specific: %d.%d only)", b->major, b->minor);
  }
  if (!ptx && len < n) len += (size_t)snprintf(d + len, n - len, "%sno PTX", v->n_bins ? ", " : " ");
  char skipped[96];
  skipped_targets(ctx, v, skipped, sizeof skipped);
  if (len < n) len += (size_t)snprintf(d + len, n - len, ")");
  if (skipped[0] && len < n)
    snprintf(d + len, n - len, "; tune bundle skipped %s for this variant: it does not compile there", skipped);
}

void rt_choose_binaries(tunert_ctx *ctx) {
  for (int i = 0; i < ctx->n_families; ++i) {
    rt_family *f = &ctx->families[i];
    for (int j = 0; j < f->n_variants; ++j) {
      rt_variant *v = &f->variants[j];
      v->chosen = -1;
      if (!ctx->dev_known) { snprintf(v->binary_desc, sizeof v->binary_desc, "chosen at the first launch (device not known: %.60s)", ctx->cu_state < 0 ? "no driver" : "not queried"); continue; }
      int best = -1, best_rank = -1;
      for (int k = 0; k < v->n_bins; ++k) {
        const rt_binary *b = &v->bins[k];
        int rank = tunert_binary_rank(b->is_ptx, b->major, b->minor, b->arch_specific, ctx->dev_major, ctx->dev_minor);
        if (rank > best_rank) { best_rank = rank; best = k; }
      }
      if (best >= 0) {
        v->chosen = best;
        snprintf(v->binary_desc, sizeof v->binary_desc, "%s %s%s", v->bins[best].is_ptx ? "ptx" : "cubin",
                 v->bins[best].arch, v->bins[best].is_ptx ? " (JIT by the driver)" : "");
      } else describe_no_binary(ctx, v);
    }
  }
}

int rt_device_open(tunert_ctx *ctx, tunert_err *err) {
  if (ctx->cu_state == 1) return 0;
  if (ctx->cu_state == -1) return rt_fail(err, TUNERT_ENODRIVER, "%s", ctx->cu_error);
  char msg[512];
  if (tunert_cuda_open(&ctx->cu, msg, sizeof msg)) {
    ctx->cu_state = -1;
    snprintf(ctx->cu_error, sizeof ctx->cu_error, "%.400s: tunert can open bundles and select here, but not launch", msg);
    return rt_fail(err, TUNERT_ENODRIVER, "%s", ctx->cu_error);
  }
  char e[256];
  CUresult r = ctx->cu.cuDeviceGet(&ctx->cudev, ctx->device);
  int maj = 0, min = 0;
  if (r == CUDA_SUCCESS) r = ctx->cu.cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx->cudev);
  if (r == CUDA_SUCCESS) r = ctx->cu.cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx->cudev);
  int sms = 0;
  if (r == CUDA_SUCCESS) r = ctx->cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ctx->cudev);
  char name[256] = "";
  if (r == CUDA_SUCCESS) r = ctx->cu.cuDeviceGetName(name, (int)sizeof name - 1, ctx->cudev);
  if (r != CUDA_SUCCESS) {
    ctx->cu_state = -1;
    snprintf(ctx->cu_error, sizeof ctx->cu_error, "CUDA device %d: %s", ctx->device, tunert_cuda_error(&ctx->cu, r, e, sizeof e));
    tunert_cuda_close(&ctx->cu);
    return rt_fail(err, TUNERT_ENODRIVER, "%s", ctx->cu_error);
  }
  ctx->cu_state = 1;
  ctx->dev_sm_count = sms;
  snprintf(ctx->dev_name, sizeof ctx->dev_name, "%s", name);
  if (!ctx->dev_known) {
    ctx->dev_known = 1;
    ctx->dev_major = maj;
    ctx->dev_minor = min;
    snprintf(ctx->dev_arch, sizeof ctx->dev_arch, "sm_%d%d", maj, min);
  }
  return 0;
}

/* ---- tunert_open ---------------------------------------------------------------------------- */

/* Checks the options and allocates the context from the chosen allocator: the
 * first step of every open. On failure *ctx_out is NULL and nothing is allocated. */
static int ctx_new(const char *fn, const tunert_options *opt_in, tunert_options *opt, tunert_ctx **ctx_out, tunert_err *err) {
  *ctx_out = NULL;
  tunert_options_init(opt);
  if (opt_in) {
    if (opt_in->struct_size < offsetof(tunert_options, allocator) || opt_in->struct_size > 4096)
      return rt_fail(err, TUNERT_EINVAL, "%s: options.struct_size %u: call tunert_options_init first", fn, opt_in->struct_size);
    memcpy(opt, opt_in, opt_in->struct_size < sizeof *opt ? opt_in->struct_size : sizeof *opt);
    opt->struct_size = sizeof *opt;
  }
  tunert_allocator al = {sys_alloc, sys_free, NULL};
  if (opt->allocator) {
    if (!opt->allocator->alloc || !opt->allocator->free) return rt_fail(err, TUNERT_EINVAL, "%s: allocator needs alloc and free", fn);
    al = *opt->allocator;
  }
  tunert_ctx *ctx = al.alloc(al.ud, sizeof *ctx);
  if (!ctx) return rt_fail(err, TUNERT_ENOMEM, "%s: out of memory", fn);
  memset(ctx, 0, sizeof *ctx);
  ctx->arena.al = al;
  ctx->flags = opt->flags;
  ctx->device = opt->device;
  ctx->max_selections = opt->max_selections > 0 ? opt->max_selections : 64;
  pthread_mutex_init(&ctx->lock, NULL);
  *ctx_out = ctx;
  return 0;
}

/* The device: given (options.arch), queried through libcuda, or unknown; then the
 * binary of each variant for it, and TUNERT_EARCH for a family with none. */
static int choose_device(opener *o, const tunert_options *opt) {
  tunert_ctx *ctx = o->ctx;
  if (opt->arch) {
    int is_ptx, maj, min, spec;
    if (tunert_arch_parse(opt->arch, &is_ptx, &maj, &min, &spec) || is_ptx)
      return rt_fail(o->err, TUNERT_EINVAL, "tunert_open: options.arch '%s': want sm_XY (e.g. sm_90a)", opt->arch);
    ctx->dev_known = 1;
    ctx->dev_major = maj;
    ctx->dev_minor = min;
    snprintf(ctx->dev_arch, sizeof ctx->dev_arch, "sm_%d%d", maj, min);
  } else if (!(opt->flags & TUNERT_OPEN_NO_DEVICE)) {
    tunert_err derr;
    if (rt_device_open(ctx, &derr)) snprintf(ctx->dev_note, sizeof ctx->dev_note, "%.250s", derr.msg);
  } else snprintf(ctx->dev_note, sizeof ctx->dev_note, "TUNERT_OPEN_NO_DEVICE");
  if (!ctx->dev_known) snprintf(ctx->dev_arch, sizeof ctx->dev_arch, "unknown");
  int rc = rt_models_rank(ctx, opt->device_name, o->err);
  if (rc) return rc;
  rt_choose_binaries(ctx);
  if (ctx->dev_known && !(opt->flags & TUNERT_OPEN_ANY_ARCH)) {
    for (int i = 0; i < ctx->n_families; ++i) {
      rt_family *f = &ctx->families[i];
      int any = 0;
      for (int j = 0; j < f->n_variants; ++j) any |= f->variants[j].chosen >= 0;
      if (any) continue;
      /* the bundle targeted this device and every variant failed to compile there
         (tune bundle --allow-missing-arch), or it was made for other GPUs only */
      char skipped[96];
      skipped_targets(ctx, &f->variants[0], skipped, sizeof skipped);
      if (skipped[0])
        return rt_fail(o->err, TUNERT_EARCH, "%s: family %s: none of its %d variant%s runs on %s (variant 1: %s); the family needs a "
                       "variant that compiles for %s, e.g. a recipe fallback (or open with TUNERT_OPEN_ANY_ARCH)",
                       o->path, f->name, f->n_variants, f->n_variants == 1 ? "" : "s", ctx->dev_arch, f->variants[0].binary_desc, skipped);
      return rt_fail(o->err, TUNERT_EARCH, "%s: family %s: %s; make the bundle with --arch %s (or open with TUNERT_OPEN_ANY_ARCH)",
                     o->path, f->name, f->variants[0].binary_desc, ctx->dev_arch);
    }
  }
  return 0;
}

/* Everything after ctx->db is open, shared by tunert_open and tunert_open_memory:
 * identity (application_id), size against the header's page count (bytes: the
 * file's or the buffer's; truncation), format version, the tables, the binaries'
 * hashes, the selection caches, the device. */
static int open_bundle(opener *o, const tunert_options *opt, int64_t bytes) {
  tunert_ctx *ctx = o->ctx;
  const char *path = o->path;
  int rc = 0;
  sqlite3_stmt *st = NULL;
  int64_t app = 0, page_size = 0, page_count = 0;
  const char *pragmas[3] = {"PRAGMA application_id", "PRAGMA page_size", "PRAGMA page_count"};
  int64_t *dst[3] = {&app, &page_size, &page_count};
  for (int i = 0; i < 3; ++i) {
    if (sqlite3_prepare_v2(ctx->db, pragmas[i], -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
      int ec = sqlite3_errcode(ctx->db);
      rc = rt_fail(o->err, TUNERT_EFORMAT, "%s: %s (%s)", path,
                   ec == SQLITE_CORRUPT ? "damaged or truncated: not a usable bundle" : "not a tune bundle", sqlite3_errmsg(ctx->db));
      sqlite3_finalize(st);
      return rc;
    }
    *dst[i] = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
  }
  if (app == TUNERT_TUNE_DB_APPLICATION_ID)
    return rt_fail(o->err, TUNERT_EFORMAT, "%s: this is a tune results database, not a bundle: make one with "
                   "`tune bundle --db %s --recipe NAME -o FILE`", path, path);
  if (app != TUNERT_APPLICATION_ID)
    return rt_fail(o->err, TUNERT_EFORMAT, "%s: not a tune bundle (SQLite application_id 0x%llx, want 0x%x)", path,
                   (unsigned long long)app, TUNERT_APPLICATION_ID);
  if (page_size * page_count != bytes)
    return rt_fail(o->err, TUNERT_EFORMAT, "%s: truncated or damaged: it has %lld bytes, its header says %lld", path,
                   (long long)bytes, (long long)(page_size * page_count));
  if ((rc = read_meta(o)) || (rc = read_models(o)) || (rc = read_families(o)) || (rc = read_args(o)) || (rc = read_variants(o)) ||
      (rc = read_binaries(o)) || (rc = check_binary_hashes(o)) || (rc = read_entries(o)) || (rc = read_tensormaps(o)))
    return rc;
  for (int i = 0; i < ctx->n_families; ++i) {
    rt_family *f = &ctx->families[i];
    for (int j = 0; j < f->n_variants; ++j)
      if (!f->variants[j].n_bins)
        return rt_fail(o->err, TUNERT_EFORMAT, "%s: family %s: variant %lld has no binary", path, f->name, (long long)f->variants[j].id);
    size_t cap = 16;
    while (cap < (size_t)ctx->max_selections * 2) cap *= 2;
    sel_table *t = rt_alloc(&ctx->arena, sizeof(sel_table) + cap * sizeof(tunert_selection *));
    if (!t) return rt_fail(o->err, TUNERT_ENOMEM, "tunert_open %s: out of memory", path);
    t->cap = cap;
    atomic_store(&f->cache, t);
  }
  if ((rc = choose_device(o, opt))) return rc;
  if (ctx->arena.failed) return rt_fail(o->err, TUNERT_ENOMEM, "tunert_open %s: out of memory", path);
  return 0;
}

/* The shapes served without a tuned entry are logged where TUNERT_LOG_UNTUNED says (docs/runtime.md). */
static int log_path_from_env(opener *o) {
  const char *log = getenv("TUNERT_LOG_UNTUNED");
  if (log && *log && !(o->ctx->log_path = rt_strdup(&o->ctx->arena, log)))
    return rt_fail(o->err, TUNERT_ENOMEM, "tunert_open %s: out of memory", o->path);
  return 0;
}

TUNERT_API int tunert_open(const char *path, const tunert_options *opt_in, tunert_ctx **out, tunert_err *err) {
  double t0 = now_ms();
  if (!out) return rt_fail(err, TUNERT_EINVAL, "tunert_open: out is NULL");
  *out = NULL;
  if (!path) return rt_fail(err, TUNERT_EINVAL, "tunert_open: path is NULL");
  tunert_options opt;
  tunert_ctx *ctx;
  int rc = ctx_new("tunert_open", opt_in, &opt, &ctx, err);
  if (rc) return rc;
  opener op = {.ctx = ctx, .path = path, .err = err};
  opener *o = &op;
  if ((rc = log_path_from_env(o))) goto fail;
  struct stat sb;
  if (stat(path, &sb)) OFAIL(TUNERT_EIO, "%s: cannot open the bundle: %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode)) OFAIL(TUNERT_EIO, "%s: not a regular file", path);
  int src = sqlite3_open_v2(path, &ctx->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
  if (src != SQLITE_OK) OFAIL(TUNERT_EIO, "%s: cannot open the bundle: %s", path, ctx->db ? sqlite3_errmsg(ctx->db) : sqlite3_errstr(src));
  if ((rc = open_bundle(o, &opt, (int64_t)sb.st_size))) goto fail;
  ctx->open_ms = now_ms() - t0;
  *out = ctx;
  return TUNERT_OK;
fail:
  tunert_close(ctx);
  return rc;
}

TUNERT_API int tunert_open_memory(const void *data, size_t size, const tunert_options *opt_in, tunert_ctx **out,
                                  tunert_err *err) {
  double t0 = now_ms();
  if (!out) return rt_fail(err, TUNERT_EINVAL, "tunert_open_memory: out is NULL");
  *out = NULL;
  if (!data) return rt_fail(err, TUNERT_EINVAL, "tunert_open_memory: data is NULL");
  if ((uint64_t)size > (uint64_t)INT64_MAX) return rt_fail(err, TUNERT_EINVAL, "tunert_open_memory: size %zu too large", size);
  tunert_options opt;
  tunert_ctx *ctx;
  int rc = ctx_new("tunert_open_memory", opt_in, &opt, &ctx, err);
  if (rc) return rc;
  char label[64]; /* stands for the path in messages */
  snprintf(label, sizeof label, "bundle in memory (%zu bytes)", size);
  opener op = {.ctx = ctx, .path = label, .err = err};
  opener *o = &op;
  if ((rc = log_path_from_env(o))) goto fail;
  /* an in-memory database over the caller's buffer, not a copy (docs/runtime.md): read-only,
   * so SQLite never writes to or reallocates it */
  int src = sqlite3_open_v2(":memory:", &ctx->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
  if (src == SQLITE_OK)
    src = sqlite3_deserialize(ctx->db, "main", (unsigned char *)(uintptr_t)data, (sqlite3_int64)size, (sqlite3_int64)size,
                              SQLITE_DESERIALIZE_READONLY);
  if (src != SQLITE_OK)
    OFAIL(src == SQLITE_NOMEM ? TUNERT_ENOMEM : TUNERT_EIO, "%s: cannot open it: %s", label,
          ctx->db ? sqlite3_errmsg(ctx->db) : sqlite3_errstr(src));
  if ((rc = open_bundle(o, &opt, (int64_t)size))) goto fail;
  ctx->open_ms = now_ms() - t0;
  *out = ctx;
  return TUNERT_OK;
fail:
  tunert_close(ctx);
  return rc;
}

TUNERT_API void tunert_close(tunert_ctx *ctx) {
  if (!ctx) return;
  if (ctx->cu_state == 1) {
    rt_vendor_close(ctx); /* cuBLASLt's handle goes before the context it was made in */
    for (int i = 0; i < ctx->n_families; ++i)
      for (int j = 0; j < ctx->families[i].n_variants; ++j)
        if (ctx->families[i].variants[j].module) ctx->cu.cuModuleUnload(ctx->families[i].variants[j].module);
    if (ctx->cuctx) ctx->cu.cuDevicePrimaryCtxRelease(ctx->cudev);
    tunert_cuda_close(&ctx->cu);
  }
  if (ctx->db) sqlite3_close(ctx->db);
  pthread_mutex_destroy(&ctx->lock);
  tunert_allocator al = ctx->arena.al;
  rt_arena_free(&ctx->arena);
  al.free(al.ud, ctx, sizeof *ctx);
}

/* ---- info ---------------------------------------------------------------------------------------- */

int rt_tuned_count(const rt_family *f) {
  int n = 0;
  for (int j = 0; j < f->n_entries; ++j) n += f->entries[j].kind != RT_FALLBACK && !f->entries[j].repeat;
  return n;
}

rt_family *rt_family_find(const tunert_ctx *ctx, const char *name) {
  if (!ctx || !name) return NULL;
  for (int i = 0; i < ctx->n_families; ++i)
    if (!strcmp(ctx->families[i].name, name)) return &ctx->families[i];
  return NULL;
}

TUNERT_API int tunert_family_count(const tunert_ctx *ctx) { return ctx ? ctx->n_families : 0; }
TUNERT_API const char *tunert_family_name(const tunert_ctx *ctx, int i) {
  return ctx && i >= 0 && i < ctx->n_families ? ctx->families[i].name : NULL;
}

static int no_family(const tunert_ctx *ctx, const char *family, tunert_err *err) {
  char list[512] = "";
  size_t len = 0;
  for (int i = 0; ctx && i < ctx->n_families && len < sizeof list; ++i)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", ctx->families[i].name);
  return rt_fail(err, TUNERT_ENOFAMILY, "no kernel family '%s' in the bundle (it has: %s)", family ? family : "(null)", list);
}

TUNERT_API int tunert_family_info_get(const tunert_ctx *ctx, const char *family, tunert_family_info *info, tunert_err *err) {
  if (!info || info->struct_size < sizeof(uint32_t)) return rt_fail(err, TUNERT_EINVAL, "tunert_family_info_get: set info->struct_size");
  rt_family *f = rt_family_find(ctx, family);
  if (!f) return no_family(ctx, family, err);
  tunert_family_info full;
  memset(&full, 0, sizeof full);
  full.struct_size = info->struct_size;
  full.name = f->name;
  full.n_dims = f->n_dims;
  full.dims = f->dims;
  full.dim_types = f->dim_types;
  full.n_args = f->n_args;
  full.arg_names = f->arg_names;
  full.arg_roles = f->arg_roles;
  full.arg_dtypes = f->arg_dtypes;
  full.n_problems = rt_tuned_count(f);
  full.n_variants = f->n_variants;
  full.source_hash = f->source_hash;
  full.recipe_file = f->recipe_file;
  memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
  return TUNERT_OK;
}

TUNERT_API int tunert_family_problem(const tunert_ctx *ctx, const char *family, int i, const char **name,
                                     const int64_t **dims, tunert_err *err) {
  rt_family *f = rt_family_find(ctx, family);
  if (!f) return no_family(ctx, family, err);
  /* fallback entries are no tuned problems, and another model's entry for a problem listed is not
     another problem: the i-th entry of neither */
  for (int j = 0, k = 0; i >= 0 && j < f->n_entries; ++j) {
    if (f->entries[j].kind == RT_FALLBACK || f->entries[j].repeat || k++ != i) continue;
    if (name) *name = f->entries[j].problem_name;
    if (dims) *dims = f->entries[j].dims;
    return TUNERT_OK;
  }
  return rt_fail(err, TUNERT_EINVAL, "family %s has %d tuned problems, not %d", family, rt_tuned_count(f), i + 1);
}

TUNERT_API int tunert_bundle_info_get(const tunert_ctx *ctx, tunert_bundle_info *info) {
  if (!ctx || !info || info->struct_size < sizeof(uint32_t)) return TUNERT_EINVAL;
  tunert_bundle_info full;
  memset(&full, 0, sizeof full);
  full.struct_size = info->struct_size;
  full.format_major = ctx->format_major;
  full.format_minor = ctx->format_minor;
  full.created_at = ctx->created_at ? ctx->created_at : "";
  full.tool_version = ctx->tool_version ? ctx->tool_version : "";
  full.nvrtc_version = ctx->nvrtc_version ? ctx->nvrtc_version : "";
  full.device_name = ctx->device_name ? ctx->device_name : "";
  full.device_arch = ctx->device_arch ? ctx->device_arch : "";
  full.archs = ctx->archs ? ctx->archs : "";
  full.device_arch_here = ctx->dev_arch;
  full.open_ms = ctx->open_ms;
  full.n_models = ctx->n_models;
  full.device_name_here = ctx->here_name ? ctx->here_name : "";
  full.model_here = ctx->model_here;
  memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
  return TUNERT_OK;
}
