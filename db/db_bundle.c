/* db_bundle.c: the bundle writer (schema: runtime/tunert_format.h). */
#include "db_bundle.h"

#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/tunert_format.h"

struct db_bundle_writer {
  sqlite3 *h;
  char path[4096];
  char tmp[4200];
};

static int wfail(db_bundle_writer *w, tune_err *err, const char *what) {
  return tune_fail(err, TUNE_ESQL, "bundle %s: %s: %s", w->path, what, sqlite3_errmsg(w->h));
}

/* Run sql with the bound values: types 't' text, 'i' int64, 'I' int64 with 0 as NULL (an absent
 * reference), 'd' double, 'b' blob (ptr, size). */
static int run(db_bundle_writer *w, tune_err *err, int64_t *id, const char *sql, const char *types, ...) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(w->h, sql, -1, &st, NULL) != SQLITE_OK) return wfail(w, err, sql);
  va_list ap;
  va_start(ap, types);
  int rc = SQLITE_OK;
  for (int i = 0; types[i] && rc == SQLITE_OK; ++i) {
    switch (types[i]) {
    case 't': { const char *s = va_arg(ap, const char *); rc = sqlite3_bind_text(st, i + 1, s ? s : "", -1, SQLITE_TRANSIENT); break; }
    case 'i': rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t)); break;
    case 'I': { int64_t v = va_arg(ap, int64_t); rc = v ? sqlite3_bind_int64(st, i + 1, v) : sqlite3_bind_null(st, i + 1); break; }
    case 'd': rc = sqlite3_bind_double(st, i + 1, va_arg(ap, double)); break;
    case 'b': {
      const void *p = va_arg(ap, const void *);
      size_t n = va_arg(ap, size_t);
      rc = sqlite3_bind_blob64(st, i + 1, p, n, SQLITE_TRANSIENT);
      break;
    }
    }
  }
  va_end(ap);
  if (rc == SQLITE_OK) rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
  if (rc != SQLITE_OK) {
    int r = wfail(w, err, sql);
    sqlite3_finalize(st);
    return r;
  }
  sqlite3_finalize(st);
  if (id) *id = sqlite3_last_insert_rowid(w->h);
  return TUNE_OK;
}

int db_bundle_create(const char *path, db_bundle_writer **out, tune_err *err) {
  *out = NULL;
  db_bundle_writer *w = calloc(1, sizeof *w);
  if (!w) return tune_fail(err, TUNE_ENOMEM, "bundle: out of memory");
  snprintf(w->path, sizeof w->path, "%s", path);
  snprintf(w->tmp, sizeof w->tmp, "%s.tmp", path);
  unlink(w->tmp);
  if (sqlite3_open_v2(w->tmp, &w->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
    tune_fail(err, TUNE_EIO, "bundle %s: cannot create %s: %s", path, w->tmp, w->h ? sqlite3_errmsg(w->h) : "out of memory");
    db_bundle_abort(w);
    return err->code;
  }
  char pragmas[256];
  snprintf(pragmas, sizeof pragmas,
           "PRAGMA application_id = %d; PRAGMA journal_mode = DELETE; PRAGMA page_size = 4096;", TUNERT_APPLICATION_ID);
  if (sqlite3_exec(w->h, pragmas, NULL, NULL, NULL) != SQLITE_OK ||
      sqlite3_exec(w->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
      sqlite3_exec(w->h, TUNERT_BUNDLE_SCHEMA, NULL, NULL, NULL) != SQLITE_OK) {
    wfail(w, err, "schema");
    db_bundle_abort(w);
    return err->code;
  }
  char v[16];
  snprintf(v, sizeof v, "%d", TUNERT_BUNDLE_FORMAT_MAJOR);
  if (db_bundle_meta(w, "format_major", v, err)) { db_bundle_abort(w); return err->code; }
  snprintf(v, sizeof v, "%d", TUNERT_BUNDLE_FORMAT_MINOR);
  if (db_bundle_meta(w, "format_minor", v, err)) { db_bundle_abort(w); return err->code; }
  if (run(w, err, NULL, "INSERT INTO meta VALUES ('created_at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))", "")) {
    db_bundle_abort(w);
    return err->code;
  }
  *out = w;
  return TUNE_OK;
}

int db_bundle_meta(db_bundle_writer *w, const char *key, const char *value, tune_err *err) {
  return run(w, err, NULL, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", "tt", key, value);
}

int db_bundle_family_put(db_bundle_writer *w, const db_bundle_family *f, int64_t *id, tune_err *err) {
  return run(w, err, id,
             "INSERT INTO families(name, source_hash, recipe_file, recipe_source, template, dims, params, domain)"
             " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
             "tttttttt", f->name, f->source_hash, f->recipe_file, f->recipe_source, f->template_path, f->dims, f->params,
             f->domain);
}

int db_bundle_arg_put(db_bundle_writer *w, int64_t family_id, int idx, const char *name, const char *role,
                      const char *dtype, tune_err *err) {
  return run(w, err, NULL, "INSERT INTO args(family_id, idx, name, role, dtype) VALUES (?1, ?2, ?3, ?4, ?5)", "iittt",
             family_id, (int64_t)idx, name, role, dtype);
}

int db_bundle_variant_put(db_bundle_writer *w, const db_bundle_variant *v, int64_t *id, tune_err *err) {
  return run(w, err, id,
             "INSERT INTO variants(family_id, config_hash, params_json, param_values, defines, kernels)"
             " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
             "ittttt", v->family_id, v->config_hash, v->params_json, v->param_values, v->defines, v->kernels);
}

int db_bundle_binary_put(db_bundle_writer *w, const db_bundle_binary *b, tune_err *err) {
  char hash[17];
  snprintf(hash, sizeof hash, "%016llx", tunert_fnv1a64(b->data, b->size));
  return run(w, err, NULL,
             "INSERT INTO binaries(variant_id, kind, arch, compile_key, size, hash, data, registers, shared_bytes,"
             " local_bytes, spill_stores, spill_loads) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
             "itttitbiiiii", b->variant_id, b->kind, b->arch, b->compile_key, (int64_t)b->size, hash, b->data, b->size,
             (int64_t)b->registers, (int64_t)b->shared_bytes, (int64_t)b->local_bytes, (int64_t)b->spill_stores,
             (int64_t)b->spill_loads);
}

int db_bundle_entry_put(db_bundle_writer *w, const db_bundle_entry *e, int64_t *id, tune_err *err) {
  return run(w, err, id,
             "INSERT INTO entries(family_id, variant_id, problem_name, problem_hash, dims, dims_json, portable,"
             " exact_why, requires, define_exprs, define_values, median_ns, min_ns, stddev_ns, samples, err_rel_l2,"
             " result_id, measured_at, device_name, device_uuid, driver, backend, seed, measured_source_hash, same_binary,"
             " kind, vendor, vendor_ns, model_id)"
             " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21,"
             " ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)",
             "iittttittttdddidittttttti" "ttdI", e->family_id, e->variant_id, e->problem_name, e->problem_hash, e->dims,
             e->dims_json, (int64_t)e->portable, e->exact_why, e->requires, e->define_exprs, e->define_values,
             e->median_ns, e->min_ns, e->stddev_ns, (int64_t)e->samples, e->err_rel_l2, e->result_id, e->measured_at,
             e->device_name, e->device_uuid, e->driver, e->backend, e->seed, e->measured_source_hash,
             (int64_t)e->same_binary, e->kind && *e->kind ? e->kind : "tuned", e->vendor,
             e->vendor && *e->vendor ? e->vendor_ns : NAN, e->model_id);
}

int db_bundle_model_put(db_bundle_writer *w, const db_bundle_model *m, int64_t *id, tune_err *err) {
  return run(w, err, id, "INSERT INTO models(name, arch, sm_count, driver, uuid) VALUES (?1, ?2, ?3, ?4, ?5)", "ttitt",
             m->name, m->arch, (int64_t)m->sm_count, m->driver, m->uuid);
}

int db_bundle_launch_put(db_bundle_writer *w, int64_t entry_id, int idx, const char *grid, const char *block,
                         const char *shared, tune_err *err) {
  return run(w, err, NULL, "INSERT INTO launches(entry_id, idx, grid, block, shared) VALUES (?1, ?2, ?3, ?4, ?5)",
             "iittt", entry_id, (int64_t)idx, grid, block, shared);
}

int db_bundle_launch_cluster_put(db_bundle_writer *w, int64_t entry_id, int idx, const char *cluster, tune_err *err) {
  return run(w, err, NULL, "UPDATE launches SET cluster = ?3 WHERE entry_id = ?1 AND idx = ?2", "iit", entry_id,
             (int64_t)idx, cluster);
}

int db_bundle_entry_arg_put(db_bundle_writer *w, int64_t entry_id, int idx, const char *shape, const char *value,
                            tune_err *err) {
  return run(w, err, NULL, "INSERT INTO entry_args(entry_id, idx, shape, value) VALUES (?1, ?2, ?3, ?4)", "iitt",
             entry_id, (int64_t)idx, shape, value);
}

int db_bundle_tensormap_put(db_bundle_writer *w, const db_bundle_tensormap *t, tune_err *err) {
  return run(w, err, NULL,
             "INSERT INTO entry_tensormaps(entry_id, idx, tensor, dtype, dims, strides, box, swizzle, l2_promotion, oob,"
             " element_strides) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
             "iiittttiitt", t->entry_id, (int64_t)t->idx, (int64_t)t->tensor, t->dtype, t->dims, t->strides, t->box,
             (int64_t)t->swizzle, (int64_t)t->l2_promotion, t->oob_nan ? "nan" : "zero", t->element_strides);
}

int db_bundle_commit(db_bundle_writer *w, tune_err *err) {
  if (sqlite3_exec(w->h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    wfail(w, err, "COMMIT");
    db_bundle_abort(w);
    return err->code;
  }
  if (sqlite3_close(w->h) != SQLITE_OK) {
    tune_fail(err, TUNE_ESQL, "bundle %s: close: %s", w->path, sqlite3_errmsg(w->h));
    w->h = NULL;
    db_bundle_abort(w);
    return err->code;
  }
  w->h = NULL;
  if (rename(w->tmp, w->path)) {
    tune_fail(err, TUNE_EIO, "bundle: cannot rename %s to %s", w->tmp, w->path);
    db_bundle_abort(w);
    return err->code;
  }
  free(w);
  return TUNE_OK;
}

void db_bundle_abort(db_bundle_writer *w) {
  if (!w) return;
  if (w->h) {
    sqlite3_exec(w->h, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(w->h);
  }
  unlink(w->tmp);
  free(w);
}
