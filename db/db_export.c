/* db_export.c: one problem's recorded results in other tuners' formats.
 *
 * kernel_tuner: Kernel Tuner's cache file (kernel_tuner/util.py,
 *   process_cache/store_cache/read_cache), laid out as Kernel Tuner writes it:
 *   a header (device_name, kernel_name, problem_size, tune_params_keys,
 *   tune_params, objective) and "cache", one entry per line keyed by the
 *   parameter values joined with commas as Python's str() prints them
 *   (True/False for booleans). Times are in ms: "time" is the median kernel
 *   time; "compile_time" the compile time of the variant's binary (see
 *   db_bench_row.build_ms); "benchmark_time" the recorded verify-and-time
 *   time (tune does not split it, so "verification_time" is 0). A failed
 *   config has the name of Kernel Tuner's error class as its time:
 *   CompilationFailedConfig (compile_error), InvalidConfig (skipped,
 *   not_recorded) or RuntimeFailedConfig (every other failure). Configs the
 *   recipe's applies/requires rejected for the problem are left out: they are
 *   not in its space (db_bench_row.rejected), as a restriction's are not in
 *   Kernel Tuner's. The file can be read by kernel_tuner.tune_cache /
 *   simulation_mode=True.
 * t4: the T4 results schema 1.0.0 (kernel_tuner/schema/T4/1.0.0/
 *   results-schema.json): results[] with configuration, objectives ["time"],
 *   times (compilation_time, benchmark, validation, framework,
 *   search_algorithm, runtimes: [] since only the median is kept), invalidity
 *   (correct, compile, runtime, correctness, timeout, constraints),
 *   correctness (1 for ok, else 0) and measurements [{time, ms}].
 *
 * Parameter values are listed in tune_params sorted (numbers ascending,
 * false before true, strings bytewise), as the database does not keep the
 * recipe's order of values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"

typedef struct export_row {
  json_t *params;  /* the config's parameter object, owned */
  db_status status;
  double median_ns, build_ms, measure_ms;
} export_row;

typedef struct export_set {
  export_row *rows;
  size_t n, cap;
  tune_err *err;
} export_set;

static int collect(void *ctx, const db_bench_row *r) {
  export_set *set = ctx;
  if (r->rejected) return 0; /* not a config of this problem (Kernel Tuner: a restriction) */
  if (set->n == set->cap) {
    size_t cap = set->cap ? 2 * set->cap : 256;
    export_row *rows = realloc(set->rows, cap * sizeof *rows);
    if (!rows) return tune_fail(set->err, TUNE_ENOMEM, "db_export: no memory for %zu rows", cap);
    set->rows = rows;
    set->cap = cap;
  }
  json_error_t jerr;
  json_t *params = json_loads(r->params_json, 0, &jerr);
  if (!json_is_object(params)) {
    json_decref(params);
    return tune_fail(set->err, TUNE_EINVAL, "db_export: config %s: params are not a JSON object",
                     r->config_hash);
  }
  export_row *e = &set->rows[set->n++];
  e->params = params;
  e->status = r->status;
  e->median_ns = r->median_ns;
  e->build_ms = isfinite(r->build_ms) ? r->build_ms : 0;
  e->measure_ms = isfinite(r->measure_ms) ? r->measure_ms : 0;
  return TUNE_OK;
}

/* Order of values in tune_params: numbers, then booleans, then strings. */
static int value_cmp(const json_t *a, const json_t *b) {
  int ka = json_is_number(a) ? 0 : json_is_boolean(a) ? 1 : 2;
  int kb = json_is_number(b) ? 0 : json_is_boolean(b) ? 1 : 2;
  if (ka != kb) return ka - kb;
  if (ka == 0) {
    double x = json_number_value(a), y = json_number_value(b);
    return (x > y) - (x < y);
  }
  if (ka == 1) return json_is_true(a) - json_is_true(b);
  const char *x = json_is_string(a) ? json_string_value(a) : "";
  const char *y = json_is_string(b) ? json_string_value(b) : "";
  return strcmp(x, y);
}

static int by_value(const void *a, const void *b) {
  return value_cmp(*(json_t *const *)a, *(json_t *const *)b);
}

/* The value as Python's str() prints it (the cache key's parts). */
static void python_str(const json_t *v, char *buf, size_t n) {
  if (json_is_integer(v)) snprintf(buf, n, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v)) {
    double x = json_real_value(v);
    if (x == floor(x) && fabs(x) < 1e16) snprintf(buf, n, "%.1f", x);
    else snprintf(buf, n, "%.17g", x);
  } else if (json_is_true(v)) snprintf(buf, n, "True");
  else if (json_is_false(v)) snprintf(buf, n, "False");
  else if (json_is_string(v)) snprintf(buf, n, "%s", json_string_value(v));
  else snprintf(buf, n, "None");
}

static const char *kt_error(db_status s) {
  switch (s) {
    case DB_OK: return NULL;
    case DB_COMPILE_ERROR: return "CompilationFailedConfig";
    case DB_SKIPPED:
    case DB_NOT_RECORDED: return "InvalidConfig";
    default: return "RuntimeFailedConfig";
  }
}

static const char *t4_invalidity(db_status s) {
  switch (s) {
    case DB_OK: return "correct";
    case DB_COMPILE_ERROR: return "compile";
    case DB_WRONG: return "correctness";
    case DB_TIMEOUT: return "timeout";
    case DB_SKIPPED:
    case DB_NOT_RECORDED: return "constraints";
    default: return "runtime";
  }
}

/* Print a JSON value compactly to out; -1 on failure. */
static int dump(FILE *out, const json_t *v) {
  return json_dumpf(v, out, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(12));
}

/* Print s as a JSON string; -1 on failure. */
static int dump_string(FILE *out, const char *s) {
  json_t *j = json_string(s);
  int r = j ? dump(out, j) : -1;
  json_decref(j);
  return r;
}

static int set_new(json_t *obj, const char *key, json_t *v) {
  return v ? json_object_set_new(obj, key, v) : -1;
}

/* A parameter name that obj and the strings of keys do not share, NULL when they name the same. */
static const char *differing_key(json_t *obj, json_t *keys) {
  const char *k;
  json_t *v, *key;
  size_t i;
  json_object_foreach(obj, k, v) {
    int found = 0;
    json_array_foreach(keys, i, key) found |= !strcmp(k, json_string_value(key));
    if (!found) return k;
  }
  json_array_foreach(keys, i, key)
    if (!json_object_get(obj, json_string_value(key))) return json_string_value(key);
  return NULL;
}

static int write_kernel_tuner(export_set *set, const db_device *dev, const char *recipe,
                              const char *problem_name, const char *dims_json, FILE *out,
                              tune_err *err) {
  int rc = TUNE_OK;
  json_t *keys = json_array(), *tune_params = json_object(), *psize = json_array();
  json_t *entry = NULL, *dims = NULL;
  json_t **vals = NULL;
  if (!keys || !tune_params || !psize) goto nomem;
  /* parameter names in the order of the first config's object (recipe order) */
  const char *k;
  json_t *v;
  json_object_foreach(set->rows[0].params, k, v) {
    if (json_array_append_new(keys, json_string(k))) goto nomem;
  }
  for (size_t i = 0; i < set->n; i++) {
    const char *odd = differing_key(set->rows[i].params, keys);
    if (odd) {
      /* a recording made before the recipe gained a parameter, merged with one made after: the
         database does not say which value the older configs had (the recipe's `absent`) */
      rc = tune_fail(err, TUNE_EINVAL,
                     "db_export: the configs of %s do not all name parameter %s (recorded before and after the "
                     "recipe gained it?); export each recording on its own",
                     recipe, odd);
      goto fail;
    }
  }
  vals = malloc(set->n * sizeof *vals);
  if (!vals) goto nomem;
  size_t ik;
  json_t *key;
  json_array_foreach(keys, ik, key) {
    const char *name = json_string_value(key);
    size_t nv = 0;
    for (size_t i = 0; i < set->n; i++) {
      json_t *x = json_object_get(set->rows[i].params, name);
      int seen = 0;
      for (size_t j = 0; j < nv && !seen; j++) seen = json_equal(vals[j], x);
      if (!seen) vals[nv++] = x;
    }
    qsort(vals, nv, sizeof *vals, by_value);
    json_t *list = json_array();
    if (!list || json_object_set_new(tune_params, name, list)) goto nomem;
    for (size_t j = 0; j < nv; j++)
      if (json_array_append(list, vals[j])) goto nomem;
  }
  /* problem_size: the integer (and boolean, as 0/1) dims, in their order */
  json_error_t jerr;
  dims = json_loads(dims_json, 0, &jerr);
  if (json_is_object(dims)) {
    json_object_foreach(dims, k, v) {
      if (json_is_integer(v)) { if (json_array_append(psize, v)) goto nomem; }
      else if (json_is_boolean(v)) { if (json_array_append_new(psize, json_integer(json_is_true(v)))) goto nomem; }
    }
  }
  if (fprintf(out, "{\n\"device_name\": ") < 0 || dump_string(out, dev->name) < 0 ||
      fprintf(out, ",\n\"kernel_name\": ") < 0 || dump_string(out, recipe) < 0 ||
      fprintf(out, ",\n\"problem_name\": ") < 0 || dump_string(out, problem_name) < 0)
    goto io;
  if (fprintf(out, ",\n\"problem_size\": ") < 0 || dump(out, psize) < 0 ||
      fprintf(out, ",\n\"tune_params_keys\": ") < 0 || dump(out, keys) < 0 ||
      fprintf(out, ",\n\"tune_params\": ") < 0 || dump(out, tune_params) < 0 ||
      fprintf(out, ",\n\"objective\": \"time\",\n\"objective_higher_is_better\": false,"
                   "\n\"cache\": {") < 0)
    goto io;
  for (size_t i = 0; i < set->n; i++) {
    const export_row *r = &set->rows[i];
    char cache_key[4096];
    size_t len = 0;
    cache_key[0] = 0;
    json_array_foreach(keys, ik, key) {
      char part[512];
      python_str(json_object_get(r->params, json_string_value(key)), part, sizeof part);
      len += (size_t)snprintf(cache_key + len, len < sizeof cache_key ? sizeof cache_key - len : 0,
                              "%s%s", ik ? "," : "", part);
    }
    if (len >= sizeof cache_key) {
      rc = tune_fail(err, TUNE_EINVAL, "db_export: a config of %s has a key over %zu bytes",
                     recipe, sizeof cache_key);
      goto fail;
    }
    entry = json_deep_copy(r->params);
    if (!entry) goto nomem;
    const char *error = kt_error(r->status);
    if (error) {
      if (set_new(entry, "time", json_string(error))) goto nomem;
    } else if (set_new(entry, "time", json_real(r->median_ns / 1e6))) goto nomem;
    if (set_new(entry, "compile_time", json_real(r->build_ms)) ||
        set_new(entry, "verification_time", json_real(0)) ||
        set_new(entry, "benchmark_time", json_real(r->measure_ms)) ||
        set_new(entry, "strategy_time", json_real(0)) ||
        set_new(entry, "framework_time", json_real(0)) ||
        set_new(entry, "tune_status", json_string(db_status_name(r->status))))
      goto nomem;
    if (fprintf(out, "%s\n", i ? "," : "") < 0 || dump_string(out, cache_key) < 0 ||
        fprintf(out, ": ") < 0 || dump(out, entry) < 0)
      goto io;
    json_decref(entry);
    entry = NULL;
  }
  if (fprintf(out, "}\n}\n") < 0) goto io;
  goto fail;
nomem:
  rc = tune_fail(err, TUNE_ENOMEM, "db_export: out of memory");
  goto fail;
io:
  rc = tune_fail(err, TUNE_EIO, "db_export: write failed");
fail:
  free(vals);
  json_decref(entry);
  json_decref(dims);
  json_decref(keys);
  json_decref(tune_params);
  json_decref(psize);
  return rc;
}

static int write_t4(export_set *set, const db_device *dev, const char *recipe,
                    const char *problem_name, const char *dims_json, FILE *out, tune_err *err) {
  int rc = TUNE_OK;
  json_t *root = json_object(), *results = json_array(), *meta = json_object();
  if (!root || !results || !meta) goto nomem;
  json_error_t jerr;
  json_t *dims = json_loads(dims_json, 0, &jerr);
  if (set_new(root, "schema_version", json_string("1.0.0")) ||
      json_object_set(root, "metadata", meta) ||
      set_new(meta, "timeunit", json_string("milliseconds")) ||
      set_new(meta, "device", json_string(dev->name)) ||
      set_new(meta, "kernel", json_string(recipe)) ||
      set_new(meta, "problem", json_string(problem_name)) ||
      set_new(meta, "problem_dims", dims ? dims : json_object()) ||
      json_object_set(root, "results", results))
    goto nomem;
  for (size_t i = 0; i < set->n; i++) {
    const export_row *r = &set->rows[i];
    json_t *res = json_object(), *times = json_object(), *objectives = json_array();
    json_t *meas = json_array(), *m = json_object();
    int bad = !res || !times || !objectives || !meas || !m;
    bad = bad || json_array_append_new(results, res);
    bad = bad || json_object_set(res, "configuration", r->params);
    bad = bad || json_array_append_new(objectives, json_string("time"));
    bad = bad || json_object_set_new(res, "objectives", objectives);
    objectives = NULL;
    bad = bad || set_new(times, "compilation_time", json_real(r->build_ms));
    bad = bad || set_new(times, "benchmark", json_real(r->measure_ms));
    bad = bad || set_new(times, "validation", json_real(0));
    bad = bad || set_new(times, "framework", json_real(0));
    bad = bad || set_new(times, "search_algorithm", json_real(0));
    bad = bad || set_new(times, "runtimes", json_array());
    bad = bad || json_object_set_new(res, "times", times);
    times = NULL;
    bad = bad || set_new(res, "invalidity", json_string(t4_invalidity(r->status)));
    bad = bad || set_new(res, "correctness", json_integer(r->status == DB_OK));
    if (r->status == DB_OK) {
      bad = bad || set_new(m, "name", json_string("time"));
      bad = bad || set_new(m, "value", json_real(r->median_ns / 1e6));
      bad = bad || set_new(m, "unit", json_string("ms"));
      bad = bad || json_array_append(meas, m);
    }
    bad = bad || json_object_set_new(res, "measurements", meas);
    meas = NULL;
    json_decref(m);
    json_decref(objectives);
    json_decref(times);
    json_decref(meas);
    if (bad) goto nomem;
  }
  if (json_dumpf(root, out, JSON_INDENT(1) | JSON_REAL_PRECISION(12)) || fputc('\n', out) == EOF) {
    rc = tune_fail(err, TUNE_EIO, "db_export: write failed");
  }
  goto fail;
nomem:
  rc = tune_fail(err, TUNE_ENOMEM, "db_export: out of memory");
fail:
  json_decref(meta);
  json_decref(results);
  json_decref(root);
  return rc;
}

int db_export(db_conn *db, const char *format, const char *recipe_name, const char *problem,
              FILE *out, tune_err *err) {
  if (!db || !format || !recipe_name || !problem || !out)
    return tune_fail(err, TUNE_EINVAL, "db_export: NULL argument");
  int kt = strcmp(format, "kernel_tuner") == 0, t4 = strcmp(format, "t4") == 0;
  if (!kt && !t4)
    return tune_fail(err, TUNE_EINVAL, "db_export: unknown format '%s' (kernel_tuner, t4)", format);
  char name[256], hash[17], dims[4096];
  int rc = db_problem_lookup(db, recipe_name, problem, name, sizeof name, hash, dims, sizeof dims,
                             err);
  if (rc) return rc;
  db_device dev;
  rc = db_device_recorded(db, recipe_name, &dev, NULL, err);
  if (rc) return rc;
  export_set set = {.err = err};
  rc = db_bench_rows(db, recipe_name, hash, collect, &set, err);
  if (rc == TUNE_OK && set.n == 0)
    rc = tune_fail(err, TUNE_ENOTFOUND, "db_export: no GPU results for %s / %s", recipe_name,
                   name);
  if (rc == TUNE_OK)
    rc = kt ? write_kernel_tuner(&set, &dev, recipe_name, name, dims, out, err)
            : write_t4(&set, &dev, recipe_name, name, dims, out, err);
  for (size_t i = 0; i < set.n; i++) json_decref(set.rows[i].params);
  free(set.rows);
  return rc;
}
