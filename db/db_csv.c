/* db_csv.c: query rows (JSON arrays of objects) as CSV per RFC 4180 (db.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"

/* Adds obj's scalars to flat under prefix.key; arrays are kept whole. */
static int flatten_into(json_t *flat, const char *prefix, json_t *obj) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    size_t n = strlen(prefix) + strlen(key) + 2;
    char *path = malloc(n);
    if (!path) return -1;
    snprintf(path, n, "%s%s%s", prefix, *prefix ? "." : "", key);
    int rc = json_is_object(v) ? flatten_into(flat, path, v) : json_object_set(flat, path, v);
    free(path);
    if (rc) return -1;
  }
  return 0;
}

json_t *db_json_flatten(json_t *obj) {
  json_t *flat = json_object();
  if (flat && json_is_object(obj) && flatten_into(flat, "", obj)) {
    json_decref(flat);
    return NULL;
  }
  return flat;
}

/* v as the text of a field: a new string (NULL when out of memory). */
static char *field_text(json_t *v) {
  char buf[64];
  if (!v) return strdup(""); /* a key this row lacks */
  switch (json_typeof(v)) {
    case JSON_STRING: return strdup(json_string_value(v));
    case JSON_INTEGER:
      snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
      return strdup(buf);
    case JSON_REAL: {
      /* the shortest of 15 or 17 digits that reads back as the same double */
      double d = json_real_value(v);
      snprintf(buf, sizeof buf, "%.15g", d);
      if (strtod(buf, NULL) != d) snprintf(buf, sizeof buf, "%.17g", d);
      return strdup(buf);
    }
    case JSON_TRUE: return strdup("true");
    case JSON_FALSE: return strdup("false");
    case JSON_ARRAY:
    case JSON_OBJECT: return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    default: return strdup("");
  }
}

/* One field, quoted when it holds a separator, a quote or a line end. */
static void put_field(FILE *out, const char *s, int first) {
  if (!first) fputc(',', out);
  if (!s[strcspn(s, ",\"\r\n")]) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"') fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

int db_rows_write_csv(json_t *rows, FILE *out, tune_err *err) {
  int rc = TUNE_OK;
  size_t i;
  json_t *row, *flats = json_array(), *columns = json_object();
  if (!flats || !columns || !json_is_array(rows)) goto nomem;
  /* the columns: every flattened key, in the order first seen */
  json_array_foreach(rows, i, row) {
    json_t *flat = db_json_flatten(row);
    if (!flat || json_array_append_new(flats, flat)) goto nomem;
    const char *key;
    json_t *v;
    json_object_foreach(flat, key, v)
      if (!json_object_get(columns, key) && json_object_set_new(columns, key, json_true()))
        goto nomem;
  }
  const char *key;
  json_t *v;
  int first = 1;
  json_object_foreach(columns, key, v) {
    put_field(out, key, first);
    first = 0;
  }
  fputs("\r\n", out);
  json_array_foreach(flats, i, row) {
    first = 1;
    json_object_foreach(columns, key, v) {
      char *text = field_text(json_object_get(row, key));
      if (!text) goto nomem;
      put_field(out, text, first);
      free(text);
      first = 0;
    }
    fputs("\r\n", out);
  }
  if (fflush(out) || ferror(out)) rc = tune_fail(err, TUNE_EIO, "db: writing CSV failed");
  goto done;
nomem:
  rc = tune_fail(err, TUNE_ENOMEM, "db: out of memory writing CSV");
done:
  json_decref(flats);
  json_decref(columns);
  return rc;
}
