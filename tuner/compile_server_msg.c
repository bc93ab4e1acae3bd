/* compile_server_msg.c: a compile job as a request frame, its outcome as a reply frame. */
#include <stdlib.h>
#include <string.h>

#include "compile_server.h"
#include "compile_server_int.h"

/* the job's strings as a JSON array; NULL when one is no valid UTF-8 */
static json_t *string_array(const char *const *s, int n) {
  json_t *a = json_array();
  for (int i = 0; a && i < n; ++i)
    if (json_array_append_new(a, json_string(s[i]))) { json_decref(a); return NULL; }
  return a;
}

json_t *tune_compile_request(const tune_compile_job *job, tune_compile_kind kind, const void **blob, size_t *blob_n) {
  const char *defines[TUNE_MAX_DEFINES];
  int n_defines = job->n_defines < TUNE_MAX_DEFINES ? job->n_defines : TUNE_MAX_DEFINES;
  for (int i = 0; i < n_defines; ++i) defines[i] = job->defines[i];
  json_t *defs = string_array(defines, n_defines);
  json_t *names = string_array(job->names, job->n_names);
  json_t *is_expr = json_array();
  for (int i = 0; is_expr && i < job->n_names; ++i) json_array_append_new(is_expr, json_boolean(job->is_expr[i]));
  if (!defs || !names || !is_expr) { json_decref(defs); json_decref(names); json_decref(is_expr); return NULL; }
  /* "o" steals the arrays also when the pack fails */
  json_t *m = json_pack("{s:s,s:s,s:b,s:s?,s:s?,s:s?,s:o,s:o,s:o}", "op", "compile", "kind",
                        kind == TUNE_COMPILE_PTX ? "ptx" : "cubin", "text", job->source_text != NULL, "path",
                        job->source_path, "include_root", job->include_root, "arch", job->arch, "defines", defs,
                        "names", names, "is_expr", is_expr);
  *blob = job->source_text;
  *blob_n = job->source_text ? strlen(job->source_text) : 0;
  return m;
}

void tune_compile_request_free(tune_compile_request_buf *req) {
  json_decref(req->msg);
  free(req->text);
  req->msg = NULL;
  req->text = NULL;
}

int tune_compile_request_read(json_t *msg, void *blob, size_t blob_n, tune_compile_request_buf *req, tune_err *err) {
  memset(req, 0, sizeof *req);
  req->msg = msg;
  tune_compile_job *j = &req->job;
  const char *kind = json_string_value(json_object_get(msg, "kind"));
  json_t *defs = json_object_get(msg, "defines"), *names = json_object_get(msg, "names");
  json_t *is_expr = json_object_get(msg, "is_expr");
  if (!kind || !json_is_array(defs) || !json_is_array(names) || !json_is_array(is_expr) ||
      json_array_size(defs) > TUNE_MAX_DEFINES || json_array_size(names) > TUNE_MAX_LAUNCHES ||
      !json_string_value(json_object_get(msg, "path"))) {
    free(blob);
    return tune_fail(err, TUNE_EINVAL, "compile server: malformed request");
  }
  req->kind = !strcmp(kind, "ptx") ? TUNE_COMPILE_PTX : TUNE_COMPILE_CUBIN;
  if (json_is_true(json_object_get(msg, "text"))) {
    req->text = realloc(blob, blob_n + 1);
    if (!req->text) { free(blob); return tune_fail(err, TUNE_ENOMEM, "compile server: out of memory"); }
    req->text[blob_n] = 0;
    j->source_text = req->text;
  } else {
    free(blob);
  }
  j->source_path = json_string_value(json_object_get(msg, "path"));
  j->include_root = json_string_value(json_object_get(msg, "include_root"));
  j->arch = json_string_value(json_object_get(msg, "arch"));
  j->n_defines = (int)json_array_size(defs);
  for (int i = 0; i < j->n_defines; ++i)
    snprintf(req->defines[i], sizeof req->defines[i], "%s", json_string_value(json_array_get(defs, i)) ?: "");
  j->defines = (const char(*)[160])req->defines;
  j->n_names = (int)json_array_size(names);
  for (int i = 0; i < j->n_names; ++i) {
    j->names[i] = json_string_value(json_array_get(names, i)) ?: "";
    j->is_expr[i] = json_is_true(json_array_get(is_expr, i));
  }
  /* the pool computed the key: a cubin job must not compute it again */
  snprintf(j->bin.key, sizeof j->bin.key, "server");
  return TUNE_OK;
}

/* size of an optional buffer: -1 for none */
static json_int_t part_n(const void *p, size_t n) { return p ? (json_int_t)n : -1; }

json_t *tune_compile_reply(const tune_compile_job *job, void **blob, size_t *blob_n) {
  const db_binary *b = &job->bin;
  size_t log_n = b->log ? strlen(b->log) : 0;
  size_t cubin_n = b->cubin ? b->cubin_size : 0, ptx_n = b->ptx ? b->ptx_size : 0;
  *blob_n = cubin_n + ptx_n + log_n;
  *blob = malloc(*blob_n ? *blob_n : 1);
  if (!*blob) return NULL;
  char *p = *blob;
  if (cubin_n) memcpy(p, b->cubin, cubin_n);
  if (ptx_n) memcpy(p + cubin_n, b->ptx, ptx_n);
  if (log_n) memcpy(p + cubin_n + ptx_n, b->log, log_n);
  const char *lowered[TUNE_MAX_LAUNCHES];
  for (int i = 0; i < job->n_names; ++i) lowered[i] = job->lowered[i];
  json_t *low = string_array(lowered, job->n_names);
  json_t *m = low ? json_pack("{s:s,s:i,s:I,s:I,s:I,s:[i,i,i,i,i],s:o,s:s,s:i,s:s,s:s,s:s,s:s}", "op", "compiled", "ok", b->ok,
                              "cubin_n", part_n(b->cubin, cubin_n), "ptx_n", part_n(b->ptx, ptx_n), "log_n",
                              part_n(b->log, log_n), "resources", b->registers, b->shared_bytes, b->local_bytes,
                              b->spill_stores, b->spill_loads, "lowered", low, "lowered_name", b->lowered_name, "err",
                              job->err.code, "error", job->err.msg, "options", b->options, "arch", b->arch, "nvrtc",
                              b->nvrtc_version)
                  : NULL;
  if (!m) { /* a string JSON cannot carry: the job fails rather than the server */
    m = json_pack("{s:s,s:i,s:I,s:I,s:I,s:i,s:s}", "op", "compiled", "ok", 0, "cubin_n", (json_int_t)-1, "ptx_n",
                  (json_int_t)-1, "log_n", (json_int_t)-1, "err", TUNE_EINTERNAL, "error",
                  "compile server: the outcome has a string that is no valid UTF-8");
    *blob_n = 0;
  }
  return m;
}

/* a copy of blob[off, off + n) (NUL-terminated) when n >= 0 */
static int take_part(const char *blob, size_t blob_n, size_t *off, json_int_t n, void **out, tune_err *err) {
  *out = NULL;
  if (n < 0) return TUNE_OK;
  if ((size_t)n > blob_n - *off) return tune_fail(err, TUNE_EINVAL, "compile server: reply shorter than it says");
  char *p = malloc((size_t)n + 1);
  if (!p) return tune_fail(err, TUNE_ENOMEM, "compile server: out of memory");
  if (n) memcpy(p, blob + *off, (size_t)n);
  p[n] = 0;
  *off += (size_t)n;
  *out = p;
  return TUNE_OK;
}

static void copy_string(json_t *msg, const char *field, char *out, size_t n) {
  snprintf(out, n, "%s", json_string_value(json_object_get(msg, field)) ?: "");
}

int tune_compile_reply_read(json_t *msg, const void *blob, size_t blob_n, tune_compile_kind kind, tune_compile_job *job,
                            tune_err *err) {
  db_binary *b = &job->bin;
  json_int_t cubin_n = json_integer_value(json_object_get(msg, "cubin_n"));
  json_int_t ptx_n = json_integer_value(json_object_get(msg, "ptx_n"));
  json_int_t log_n = json_integer_value(json_object_get(msg, "log_n"));
  size_t off = 0;
  void *cubin, *ptx, *log;
  if (take_part(blob, blob_n, &off, cubin_n, &cubin, err)) return err->code;
  if (take_part(blob, blob_n, &off, ptx_n, &ptx, err) || take_part(blob, blob_n, &off, log_n, &log, err)) {
    free(cubin);
    free(ptx);
    return err->code;
  }
  b->ok = (int)json_integer_value(json_object_get(msg, "ok"));
  b->cubin = cubin;
  b->cubin_size = cubin ? (size_t)cubin_n : 0;
  b->ptx = ptx;
  b->ptx_size = ptx ? (size_t)ptx_n : 0;
  b->log = log;
  json_t *r = json_object_get(msg, "resources");
  int *res[5] = {&b->registers, &b->shared_bytes, &b->local_bytes, &b->spill_stores, &b->spill_loads};
  for (int i = 0; i < 5 && r; ++i) *res[i] = (int)json_integer_value(json_array_get(r, (size_t)i));
  copy_string(msg, "lowered_name", b->lowered_name, sizeof b->lowered_name);
  json_t *low = json_object_get(msg, "lowered");
  for (int i = 0; i < job->n_names; ++i)
    snprintf(job->lowered[i], sizeof job->lowered[i], "%s", json_string_value(json_array_get(low, (size_t)i)) ?: "");
  if (kind == TUNE_COMPILE_PTX) { /* the PTX compile names its own options; a cubin's come with its key */
    copy_string(msg, "options", b->options, sizeof b->options);
    copy_string(msg, "arch", b->arch, sizeof b->arch);
    copy_string(msg, "nvrtc", b->nvrtc_version, sizeof b->nvrtc_version);
  }
  int code = (int)json_integer_value(json_object_get(msg, "err"));
  if (code) tune_fail(&job->err, code, "%s", json_string_value(json_object_get(msg, "error")) ?: "compile server: failed");
  return TUNE_OK;
}
