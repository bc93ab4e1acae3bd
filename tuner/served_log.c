/* served_log.c: reading the runtime's log of problems served without a tuned entry. */
#include "served_log.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int seen(const tune_served_log *log, const char *family, const char *dims) {
  for (int i = 0; i < log->n; ++i)
    if (!strcmp(log->p[i].family, family) && !strcmp(log->p[i].dims_json, dims)) return 1;
  return 0;
}

static int add(tune_served_log *log, int *cap, const char *family, char *dims, tune_err *err) {
  if (seen(log, family, dims)) { free(dims); return TUNE_OK; }
  if (log->n == *cap) {
    int nc = *cap ? 2 * *cap : 16;
    tune_served_problem *np = realloc(log->p, (size_t)nc * sizeof *np);
    if (!np) { free(dims); return tune_fail(err, TUNE_ENOMEM, "served log: out of memory"); }
    log->p = np;
    *cap = nc;
  }
  char *f = strdup(family);
  if (!f) { free(dims); return tune_fail(err, TUNE_ENOMEM, "served log: out of memory"); }
  log->p[log->n].family = f;
  log->p[log->n].dims_json = dims;
  log->n++;
  return TUNE_OK;
}

/* One line: its family and canonical dims, or a message saying what is wrong. */
static int parse_line(const char *line, char *family, size_t fn, char **dims, char *why, size_t wn) {
  json_error_t je;
  json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &je);
  if (!o) { snprintf(why, wn, "not JSON (%s)", je.text); return -1; }
  json_t *f = json_object_get(o, "family"), *d = json_object_get(o, "dims");
  int rc = -1;
  if (!json_is_object(o)) snprintf(why, wn, "not a JSON object");
  else if (!json_is_string(f) || !json_string_length(f)) snprintf(why, wn, "no \"family\" string");
  else if (!json_is_object(d) || !json_object_size(d)) snprintf(why, wn, "no \"dims\" object");
  else {
    const char *k;
    json_t *v;
    rc = 0;
    json_object_foreach(d, k, v)
      if (!json_is_integer(v) && !json_is_boolean(v) && !json_is_string(v)) {
        snprintf(why, wn, "dim \"%.60s\" is not an integer, boolean or string", k);
        rc = -1;
        break;
      }
    if (!rc) {
      snprintf(family, fn, "%s", json_string_value(f));
      *dims = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
      if (!*dims) { snprintf(why, wn, "out of memory"); rc = -1; }
    }
  }
  json_decref(o);
  return rc;
}

int tune_served_log_load(const char *path, tune_served_log *out, tune_err *err) {
  memset(out, 0, sizeof *out);
  FILE *fp = fopen(path, "r");
  if (!fp) return tune_fail(err, TUNE_EIO, "%s: cannot open the served-problem log: %s", path, strerror(errno));
  char *line = NULL;
  size_t cap_line = 0;
  int cap = 0, rc = TUNE_OK;
  long lineno = 0;
  while (!rc && getline(&line, &cap_line, fp) >= 0) {
    ++lineno;
    const char *p = line + strspn(line, " \t\r\n");
    if (!*p) continue;
    char family[256], why[200];
    char *dims = NULL;
    if (parse_line(p, family, sizeof family, &dims, why, sizeof why))
      rc = tune_fail(err, TUNE_EINVAL, "%s:%ld: %s (want {\"family\":...,\"dims\":{...}} per line)", path, lineno, why);
    else rc = add(out, &cap, family, dims, err);
  }
  if (!rc && ferror(fp)) rc = tune_fail(err, TUNE_EIO, "%s: read error", path);
  free(line);
  fclose(fp);
  if (rc) tune_served_log_free(out);
  return rc;
}

void tune_served_log_free(tune_served_log *log) {
  for (int i = 0; i < log->n; ++i) { free(log->p[i].family); free(log->p[i].dims_json); }
  free(log->p);
  memset(log, 0, sizeof *log);
}

int tune_served_log_dims(const tune_served_log *log, const char *family, const char **dims, int max) {
  int n = 0;
  for (int i = 0; i < log->n && n < max; ++i)
    if (!strcmp(log->p[i].family, family)) dims[n++] = log->p[i].dims_json;
  return n;
}
