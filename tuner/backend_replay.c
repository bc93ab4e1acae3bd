/* backend_replay.c: answers from a recorded database, exactly as measured. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "halving.h"
#include "source_hash.h"

typedef struct replay_impl { db_conn *db; char recipe[128]; } replay_impl;

static int replay_set_problem(tune_backend *b, const tune_recipe *r, const tune_problem *p, const tune_problem_setup *s,
                              const db_binary *ref_bin, const char *ref_lowered, uint64_t seed, tune_err *err) {
  return TUNE_OK; /* nothing to prepare: the answers are recorded */
}

static int replay_measure(tune_backend *b, const tune_measure_req *q, db_result *out, tune_err *err) {
  replay_impl *ri = b->impl;
  db_result rec;
  db_device dev;
  tune_err e;
  tune_err_clear(&e);
  int rc = db_replay_find(ri->db, q->recipe->name, q->config_hash, q->problem->hash, &rec, &dev, &e);
  if (rc == TUNE_ENOTFOUND) {
    out->status = DB_NOT_RECORDED;
    snprintf(out->error_text, sizeof out->error_text, "not in the recorded database %s", b->name + 7);
    return TUNE_OK;
  }
  if (rc) return tune_fail(err, rc, "%s", e.msg);
  out->status = rec.status;
  out->median_ns = rec.median_ns;
  out->min_ns = rec.min_ns;
  out->max_ns = rec.max_ns;
  out->stddev_ns = rec.stddev_ns;
  out->samples = rec.samples;
  out->err_rel_l2 = rec.err_rel_l2;
  out->err_max_abs = rec.err_max_abs;
  out->honest_rel_l2 = rec.honest_rel_l2;
  out->measure_ms = rec.measure_ms;
  out->seed = rec.seed;
  out->registers = rec.registers;
  out->shared_bytes = rec.shared_bytes;
  out->dyn_shared_bytes = rec.dyn_shared_bytes;
  out->local_bytes = rec.local_bytes;
  out->spill_stores = rec.spill_stores;
  out->spill_loads = rec.spill_loads;
  out->compile_ms = rec.compile_ms;
  snprintf(out->error_text, sizeof out->error_text, "%s", rec.error_text);
  if (q->samples > 0 && rec.status == DB_OK && rec.samples > q->samples) {
    /* a quick measure: replay cannot re-time, so the figures are the recorded full timing's;
       it reports the quick sample count and charges the quick share of the recorded time */
    out->samples = q->samples;
    out->measure_ms = tune_halving_quick_ms(rec.measure_ms, rec.samples, q->samples);
    snprintf(out->error_text, sizeof out->error_text, "replay: the recorded timing of %d samples (replay cannot re-time)",
             rec.samples);
  }
  return TUNE_OK;
}

static void replay_close(tune_backend *b) {
  replay_impl *ri = b->impl;
  if (ri) { db_close(ri->db); free(ri); }
  free(b);
}

int tune_backend_replay_open(const char *path, const char *recipe_name, tune_backend **out, tune_err *err) {
  *out = NULL;
  tune_backend *b = calloc(1, sizeof *b);
  replay_impl *ri = calloc(1, sizeof *ri);
  if (!b || !ri) { free(b); free(ri); return tune_fail(err, TUNE_ENOMEM, "replay: out of memory"); }
  b->impl = ri;
  snprintf(b->name, sizeof b->name, "replay:%s", path);
  snprintf(ri->recipe, sizeof ri->recipe, "%s", recipe_name);
  b->set_problem = replay_set_problem;
  b->measure = replay_measure;
  b->close = replay_close;
  if (db_open(path, 1, &ri->db, err)) { replay_close(b); return err->code; }
  if (db_device_recorded(ri->db, recipe_name, &b->device, b->recorded_hash, err)) {
    if (err->code == TUNE_ENOTFOUND) {
      err->code = TUNE_OK;
      tune_fail(err, TUNE_ENOTFOUND, "replay: %s holds no GPU results for recipe %s", path, recipe_name);
    }
    replay_close(b);
    return err->code;
  }
  if (db_recipe_code_hash(ri->db, recipe_name, b->recorded_hash, b->recorded_code_hash, err)) {
    replay_close(b);
    return err->code;
  }
  /* provenance: how many results, recorded when, by which tool version */
  json_t *rows = NULL;
  tune_err e;
  tune_err_clear(&e);
  if (!db_query_provenance(ri->db, recipe_name, &rows, &e) && json_array_size(rows) > 0) {
    json_t *row = json_array_get(rows, json_array_size(rows) - 1);
    json_t *n = json_object_get(row, "results");
    const char *first = json_string_value(json_object_get(row, "first_at"));
    const char *last = json_string_value(json_object_get(row, "last_at"));
    snprintf(b->provenance, sizeof b->provenance, "%lld results recorded %.10s %.5s to %.10s %.5s UTC",
             (long long)json_integer_value(n), first ? first : "?", first && strlen(first) > 11 ? first + 11 : "",
             last ? last : "?", last && strlen(last) > 11 ? last + 11 : "");
  }
  json_decref(rows);
  *out = b;
  return TUNE_OK;
}

tune_replay_source tune_backend_replay_current(const tune_backend *b, const tune_recipe *r) {
  if (!b->recorded_hash[0]) return TUNE_REPLAY_OTHER_SOURCE;
  if (!strcmp(b->recorded_hash, r->source_hash)) return TUNE_REPLAY_SAME_TEXT;
  char norm[17];
  tune_err e;
  tune_err_clear(&e);
  if (tune_recipe_hash_normalized(r->module_file, r->template_path, r->ref_source, r->root, norm, &e))
    return TUNE_REPLAY_OTHER_SOURCE; /* no normalised hash: only the raw one can say "current" */
  /* a recording made since the code hash is stored says it; an older one stored only the raw */
  if (b->recorded_code_hash[0] && !strcmp(b->recorded_code_hash, norm)) return TUNE_REPLAY_SAME_NORMALISED;
  return strcmp(b->recorded_hash, norm) ? TUNE_REPLAY_OTHER_SOURCE : TUNE_REPLAY_SAME_NORMALISED;
}
