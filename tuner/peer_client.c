/* peer_client.c: the peer server as a child process over pipes (peer_client.h). */
#define _POSIX_C_SOURCE 200809L
#include "peer_client.h"

#include <errno.h>
#include <time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct tune_peer_client {
  pid_t pid;
  FILE *to;        /* its stdin */
  FILE *from;      /* its stdout */
  json_t *hello;
};

int tune_peer_start(const char *command, tune_peer_client **out, const json_t **hello, tune_err *err) {
  int in[2] = {-1, -1}, outp[2] = {-1, -1};
  *out = NULL;
  if (pipe(in) || pipe(outp)) {
    tune_fail(err, TUNE_EIO, "peer server: pipe: %s", strerror(errno));
    goto fail;
  }
  pid_t pid = fork();
  if (pid < 0) {
    tune_fail(err, TUNE_EIO, "peer server: fork: %s", strerror(errno));
    goto fail;
  }
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(outp[1], 1);
    close(in[0]); close(in[1]); close(outp[0]); close(outp[1]);
    execl("/bin/sh", "sh", "-c", command, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(outp[1]);
  tune_peer_client *c = calloc(1, sizeof *c);
  if (!c) { close(in[1]); close(outp[0]); return tune_fail(err, TUNE_ENOMEM, "peer server: out of memory"); }
  c->pid = pid;
  c->to = fdopen(in[1], "w");
  c->from = fdopen(outp[0], "r");
  if (!c->to || !c->from) { tune_peer_stop(c); return tune_fail(err, TUNE_EIO, "peer server: fdopen failed"); }
  json_t *req = json_pack("{s:s}", "op", "hello");
  int rc = tune_peer_call(c, req, &c->hello, err);
  json_decref(req);
  if (rc) { tune_peer_stop(c); return err->code; }
  if (!json_is_true(json_object_get(c->hello, "ok"))) {
    tune_fail(err, TUNE_EWORKER, "peer server `%s` refused: %s", command,
              json_string_value(json_object_get(c->hello, "error")) ?: "(no reason given)");
    tune_peer_stop(c);
    return err->code;
  }
  *out = c;
  *hello = c->hello;
  return TUNE_OK;
fail:
  for (int i = 0; i < 2; ++i) {
    if (in[i] >= 0) close(in[i]);
    if (outp[i] >= 0) close(outp[i]);
  }
  return err->code;
}

int tune_peer_call(tune_peer_client *c, json_t *req, json_t **rep, tune_err *err) {
  *rep = NULL;
  char *line = NULL;
  size_t cap = 0;
  if (json_dumpf(req, c->to, JSON_COMPACT) || fputc('\n', c->to) == EOF || fflush(c->to))
    return tune_fail(err, TUNE_EWORKER, "peer server: cannot write a request (did it exit?)");
  ssize_t n = getline(&line, &cap, c->from);
  if (n <= 0) {
    free(line);
    return tune_fail(err, TUNE_EWORKER, "peer server: no reply (it exited; its messages are above)");
  }
  json_error_t je;
  *rep = json_loads(line, 0, &je);
  if (!*rep) tune_fail(err, TUNE_EWORKER, "peer server: reply is not JSON (%s): %.200s", je.text, line);
  free(line);
  return *rep ? TUNE_OK : err->code;
}

void tune_peer_stop(tune_peer_client *c) {
  if (!c) return;
  if (c->to) {
    fputs("{\"op\":\"quit\"}\n", c->to);
    fclose(c->to);
  }
  if (c->from) fclose(c->from);
  if (c->pid > 0) {
    int st;
    for (int i = 0; i < 100 && waitpid(c->pid, &st, WNOHANG) == 0; ++i) nanosleep(&(struct timespec){0, 50000000}, NULL);
    if (waitpid(c->pid, &st, WNOHANG) == 0) {
      kill(c->pid, SIGKILL);
      waitpid(c->pid, &st, 0);
    }
  }
  json_decref(c->hello);
  free(c);
}
