/* compile_server_int.h: the frames between the compile pool and its servers (compile_server_msg.c).
 *
 * A request is JSON (what the job's compile reads) with the source text as its blob; a reply is
 * JSON (ok, resources, kernel names, the job's error, a PTX job's options) with cubin, PTX and
 * log one after the other as its blob. Shared by the pool side and the server side only. */
#ifndef TUNE_COMPILE_SERVER_INT_H
#define TUNE_COMPILE_SERVER_INT_H

#include <stddef.h>

#include <jansson.h>

#include "compile.h"

/* The request for job; *blob is the source text (not copied) or NULL. NULL when a string of
 * the job is no valid UTF-8 (JSON cannot carry it). */
json_t *tune_compile_request(const tune_compile_job *job, tune_compile_kind kind, const void **blob, size_t *blob_n);
/* A request read back into req->job (pointing into req's storage and msg, which the job must
 * not outlive). Takes msg and blob (json_decref and free at tune_compile_request_free). */
typedef struct tune_compile_request_buf {
  tune_compile_job job;
  tune_compile_kind kind;
  char defines[TUNE_MAX_DEFINES][160];
  char *text;
  json_t *msg;
} tune_compile_request_buf;
int tune_compile_request_read(json_t *msg, void *blob, size_t blob_n, tune_compile_request_buf *req, tune_err *err);
void tune_compile_request_free(tune_compile_request_buf *req);
/* The reply for a compiled job; *blob (malloc'd, the caller frees it) is cubin, PTX and log
 * one after the other. NULL on out of memory. */
json_t *tune_compile_reply(const tune_compile_job *job, void **blob, size_t *blob_n);
/* The reply applied to the job that was sent (kind: what it asked for). */
int tune_compile_reply_read(json_t *msg, const void *blob, size_t blob_n, tune_compile_kind kind, tune_compile_job *job,
                            tune_err *err);

#endif
