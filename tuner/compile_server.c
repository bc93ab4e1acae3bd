/* compile_server.c: the server side: `tune compile-server` compiles the jobs it is sent. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile_ptx.h"
#include "compile_server.h"
#include "compile_server_int.h"
#include "protocol.h"

static int has_define(const tune_compile_job *job, const char *define) {
  for (int i = 0; i < job->n_defines; ++i)
    if (!strcmp(job->defines[i], define)) return 1;
  return 0;
}

/* Compile one request and answer it; a request that makes no sense is answered as a failed
 * job. Returns nonzero when the reply cannot be written (the pool is gone). */
static int serve_one(int out_fd, json_t *msg, void *blob, size_t blob_n, const char *kill_on, tune_err *err) {
  tune_compile_request_buf req;
  if (tune_compile_request_read(msg, blob, blob_n, &req, &req.job.err)) {
    json_t *rep = tune_compile_reply(&req.job, &blob, &blob_n);
    int rc = rep ? tune_msg_write(out_fd, rep, blob, blob_n, err) : tune_fail(err, TUNE_ENOMEM, "compile server: out of memory");
    json_decref(rep);
    free(blob);
    tune_compile_request_free(&req);
    return rc;
  }
  if (kill_on && has_define(&req.job, kill_on)) raise(SIGKILL);
  if (req.kind == TUNE_COMPILE_PTX) tune_compile_ptx_one(&req.job);
  else tune_compile_one(&req.job);
  void *out = NULL;
  size_t out_n = 0;
  json_t *rep = tune_compile_reply(&req.job, &out, &out_n);
  int rc = rep ? tune_msg_write(out_fd, rep, out, out_n, err) : tune_fail(err, TUNE_ENOMEM, "compile server: out of memory");
  json_decref(rep);
  free(out);
  db_binary_release(&req.job.bin);
  tune_compile_request_free(&req);
  return rc;
}

int tune_compile_server_main(int in_fd, int out_fd) {
  tune_err err;
  tune_err_clear(&err);
  /* compiles take the CPU the measuring worker leaves: with a server busy on every core at the
     worker's priority, each variant's measurement took longer (docs/search.md) */
  errno = 0;
  if (nice(TUNE_COMPILE_SERVER_NICE) == -1 && errno)
    fprintf(stderr, "compile server: nice: %s (compiling at the caller's priority)\n", strerror(errno));
  json_t *ready = json_pack("{s:s,s:s}", "op", "ready", "nvrtc", tune_nvrtc_version());
  int rc = tune_msg_write(out_fd, ready, NULL, 0, &err);
  json_decref(ready);
  const char *kill_on = getenv("TUNE_TEST_COMPILE_SERVER_KILL_ON");
  while (!rc) {
    json_t *msg = NULL;
    void *blob = NULL;
    size_t blob_n = 0;
    if (tune_msg_read(in_fd, &msg, &blob, &blob_n, -1, &err)) return strstr(err.msg, "closed") ? 0 : 1;
    if (strcmp(json_string_value(json_object_get(msg, "op")) ?: "", "compile")) {
      json_decref(msg);
      free(blob);
      return 1;
    }
    rc = serve_one(out_fd, msg, blob, blob_n, kill_on, &err);
  }
  return 1;
}
