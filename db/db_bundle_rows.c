/* db_bundle_rows.c: the results `tune bundle` takes, read from db_query_best and db_query_show
 * into typed rows, so the keys of those JSON objects stay db/'s business. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_bundle.h"

static const char *str_at(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static double num_at(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static long long int_at(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static void read_best(json_t *row, int db_index, db_bundle_best *b) {
  b->db_index = db_index;
  b->recipe = str_at(row, "recipe");
  b->problem = str_at(row, "problem");
  b->problem_hash = str_at(row, "problem_hash");
  b->device = str_at(row, "device");
  b->arch = str_at(row, "arch");
  b->source_hash = str_at(row, "source_hash");
  b->config_hash = str_at(row, "config_hash");
  b->created_at = str_at(row, "created_at");
  b->params = json_object_get(row, "params");
  b->problem_dims = json_object_get(row, "problem_dims");
  b->median_ns = num_at(row, "median_ns");
  b->min_ns = num_at(row, "min_ns");
  b->stddev_ns = num_at(row, "stddev_ns");
  b->samples = (int)int_at(row, "samples");
  b->result_id = int_at(row, "result_id");
  b->timing = *str_at(row, "timing") ? str_at(row, "timing") : "burst";
  b->timer = str_at(row, "timer");
  json_t *protocol = json_object_get(row, "protocol"); /* an integer column; text kept as given */
  if (json_is_integer(protocol)) snprintf(b->protocol, sizeof b->protocol, "%lld", (long long)json_integer_value(protocol));
  else snprintf(b->protocol, sizeof b->protocol, "%s", str_at(row, "protocol"));
}

int db_bundle_bests_add(db_bundle_bests *set, db_conn *db, int db_index, tune_err *err) {
  json_t *rows = NULL, *row;
  size_t i;
  if (!set->rows && !(set->rows = json_array())) return tune_fail(err, TUNE_ENOMEM, "db: out of memory");
  if (db_query_best(db, NULL, NULL, &rows, err)) return err->code;
  size_t need = (size_t)set->n + json_array_size(rows);
  if (need > (size_t)set->cap) {
    db_bundle_best *a = realloc(set->a, need * sizeof *a);
    if (!a) { json_decref(rows); return tune_fail(err, TUNE_ENOMEM, "db: out of memory"); }
    set->a = a;
    set->cap = (int)need;
  }
  json_array_foreach(rows, i, row) {
    if (json_array_append(set->rows, row)) { json_decref(rows); return tune_fail(err, TUNE_ENOMEM, "db: out of memory"); }
    read_best(row, db_index, &set->a[set->n++]); /* the row lives on in set->rows */
  }
  json_decref(rows);
  return TUNE_OK;
}

void db_bundle_bests_free(db_bundle_bests *set) {
  free(set->a);
  json_decref(set->rows);
  memset(set, 0, sizeof *set);
}

/* The devices row of a result, as db_device_put stored it. */
static void read_device(json_t *d, db_device *dev) {
  memset(dev, 0, sizeof *dev);
  snprintf(dev->kind, sizeof dev->kind, "%s", str_at(d, "kind"));
  snprintf(dev->name, sizeof dev->name, "%s", str_at(d, "name"));
  snprintf(dev->arch, sizeof dev->arch, "%s", str_at(d, "arch"));
  dev->cc_major = (int)int_at(d, "cc_major");
  dev->cc_minor = (int)int_at(d, "cc_minor");
  dev->sm_count = (int)int_at(d, "sm_count");
  dev->sm_clock_khz = (int)int_at(d, "sm_clock_khz");
  dev->mem_clock_khz = (int)int_at(d, "mem_clock_khz");
  dev->mem_bus_bits = (int)int_at(d, "mem_bus_bits");
  dev->mem_bytes = int_at(d, "mem_bytes");
  dev->l2_bytes = (int)int_at(d, "l2_bytes");
  dev->smem_per_block_optin = (int)int_at(d, "smem_per_block_optin");
  snprintf(dev->driver, sizeof dev->driver, "%s", str_at(d, "driver"));
  snprintf(dev->cuda, sizeof dev->cuda, "%s", str_at(d, "cuda"));
  snprintf(dev->uuid, sizeof dev->uuid, "%s", str_at(d, "uuid"));
}

int db_bundle_result_get(db_conn *db, int64_t result_id, db_bundle_result *out, tune_err *err) {
  memset(out, 0, sizeof *out);
  json_t *o = NULL;
  if (db_query_show(db, result_id, &o, err)) return err->code;
  out->obj = o;
  out->recipe_path = str_at(json_object_get(o, "recipe"), "path");
  out->binary_key = str_at(o, "binary_key");
  out->origin = str_at(json_object_get(o, "config"), "origin");
  json_t *run = json_object_get(o, "run");
  out->backend = json_is_object(run) ? str_at(run, "backend") : "";
  json_t *seed = json_object_get(o, "seed"); /* a uint64, or its text where it does not fit JSON's */
  if (json_is_integer(seed)) snprintf(out->seed, sizeof out->seed, "%llu", (unsigned long long)json_integer_value(seed));
  else snprintf(out->seed, sizeof out->seed, "%s", str_at(o, "seed"));
  out->err_rel_l2 = num_at(o, "err_rel_l2");
  read_device(json_object_get(o, "device"), &out->device);
  json_t *pr = json_object_get(o, "proposal");
  out->has_proposal = json_is_object(pr);
  out->proposal_kind = str_at(pr, "kind");
  out->proposal_region = str_at(pr, "region");
  out->proposal_code = str_at(pr, "code");
  return TUNE_OK;
}

void db_bundle_result_free(db_bundle_result *r) {
  json_decref(r->obj);
  memset(r, 0, sizeof *r);
}
