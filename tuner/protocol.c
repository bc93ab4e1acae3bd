/* protocol.c: length-prefixed frames over pipes. */
#include "protocol.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

int tune_msg_write(int fd, json_t *msg, const void *blob, size_t blob_n, tune_err *err) {
  char *text = json_dumps(msg, JSON_COMPACT);
  if (!text) return tune_fail(err, TUNE_ENOMEM, "protocol: cannot encode a message");
  uint32_t hdr[2] = {(uint32_t)strlen(text), (uint32_t)(blob ? blob_n : 0)};
  int bad = write_all(fd, hdr, sizeof hdr) || write_all(fd, text, hdr[0]) ||
            (hdr[1] && write_all(fd, blob, hdr[1]));
  free(text);
  if (bad) return tune_fail(err, TUNE_EIO, "protocol: write failed (peer gone?): %s", strerror(errno));
  return TUNE_OK;
}

json_t *tune_launch_to_json(const tune_launch *l, const char *kernel) {
  json_t *j = json_pack("{s:s,s:[i,i,i],s:[i,i,i],s:i,s:i}", "kernel", kernel, "grid", l->grid[0], l->grid[1], l->grid[2],
                        "block", l->block[0], l->block[1], l->block[2], "shared", l->shared, "stream", l->side_stream);
  if (j && (l->cluster[0] > 1 || l->cluster[1] > 1 || l->cluster[2] > 1))
    json_object_set_new(j, "cluster", json_pack("[i,i,i]", l->cluster[0], l->cluster[1], l->cluster[2]));
  return j;
}

void tune_launch_from_json(json_t *j, tune_launch *l) {
  memset(l, 0, sizeof *l);
  snprintf(l->kernel, sizeof l->kernel, "%s", json_string_value(json_object_get(j, "kernel")) ?: "");
  json_t *c = json_object_get(j, "cluster");
  for (int d = 0; d < 3; ++d) {
    l->grid[d] = (unsigned)json_integer_value(json_array_get(json_object_get(j, "grid"), d));
    l->block[d] = (unsigned)json_integer_value(json_array_get(json_object_get(j, "block"), d));
    json_int_t x = json_integer_value(json_array_get(c, d));
    l->cluster[d] = x >= 1 && x <= 0x7fffffff ? (unsigned)x : 1;
  }
  l->shared = (unsigned)json_integer_value(json_object_get(j, "shared"));
  l->side_stream = json_integer_value(json_object_get(j, "stream")) == 1;
}

void tune_measure_policy_to_json(json_t *msg, int samples) {
  int quick = samples >= 3;
  json_object_set_new(msg, "min_samples", json_integer(quick ? samples : TUNE_MEASURE_MIN_SAMPLES));
  json_object_set_new(msg, "max_samples", json_integer(quick ? samples : TUNE_MEASURE_MAX_SAMPLES));
  json_object_set_new(msg, "max_ms", json_real(TUNE_MEASURE_MAX_MS));
}

void tune_measure_policy_from_json(json_t *msg, int *min_samples, int *max_samples, double *max_ms) {
  json_int_t lo = json_integer_value(json_object_get(msg, "min_samples"));
  json_int_t hi = json_integer_value(json_object_get(msg, "max_samples"));
  *min_samples = lo >= 3 && lo <= 100000 ? (int)lo : TUNE_MEASURE_MIN_SAMPLES;
  *max_samples = hi >= *min_samples && hi <= 100000 ? (int)hi : TUNE_MEASURE_MAX_SAMPLES;
  if (*max_samples < *min_samples) *max_samples = *min_samples;
  *max_ms = json_number_value(json_object_get(msg, "max_ms"));
  if (!(*max_ms > 0)) *max_ms = TUNE_MEASURE_MAX_MS;
}

void tune_reply_kernels_to_json(json_t *reply, double kernel_ns, long long n_kernels) {
  json_object_set_new(reply, "kernel_ns", json_real(kernel_ns));
  json_object_set_new(reply, "kernel_count", json_integer((json_int_t)n_kernels));
}

int tune_reply_kernels_from_json(json_t *reply, double *kernel_ns) {
  json_t *k = json_object_get(reply, "kernel_ns");
  double v = json_number_value(k);
  *kernel_ns = 0;
  if (!json_is_number(k) || !isfinite(v) || v < 0) return 0;
  *kernel_ns = v;
  return 1;
}

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* 0 ok, 1 closed, 2 timeout, -1 error */
static int read_all(int fd, void *p, size_t n, long long deadline) {
  char *c = p;
  while (n) {
    if (deadline >= 0) {
      long long left = deadline - now_ms();
      if (left <= 0) return 2;
      struct pollfd pf = {.fd = fd, .events = POLLIN};
      int pr = poll(&pf, 1, left > 0x7fffffff ? 0x7fffffff : (int)left);
      if (pr < 0 && errno == EINTR) continue;
      if (pr < 0) return -1;
      if (pr == 0) return 2;
    }
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return 1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

int tune_msg_read(int fd, json_t **msg, void **blob, size_t *blob_n, int timeout_ms, tune_err *err) {
  *msg = NULL;
  if (blob) *blob = NULL;
  if (blob_n) *blob_n = 0;
  long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  uint32_t hdr[2];
  int rc = read_all(fd, hdr, sizeof hdr, deadline);
  if (rc == 1) return tune_fail(err, TUNE_EIO, "protocol: peer closed");
  if (rc == 2) return tune_fail(err, TUNE_EWORKER, "protocol: timeout");
  if (rc) return tune_fail(err, TUNE_EIO, "protocol: read failed: %s", strerror(errno));
  if (hdr[0] > TUNE_MSG_MAX_JSON || hdr[1] > TUNE_MSG_MAX_BLOB)
    return tune_fail(err, TUNE_EWORKER, "protocol: oversized frame (%u, %u bytes)", hdr[0], hdr[1]);
  char *text = malloc(hdr[0] + 1);
  void *b = hdr[1] ? malloc(hdr[1]) : NULL;
  if (!text || (hdr[1] && !b)) { free(text); free(b); return tune_fail(err, TUNE_ENOMEM, "protocol: out of memory"); }
  rc = read_all(fd, text, hdr[0], deadline);
  if (!rc && hdr[1]) rc = read_all(fd, b, hdr[1], deadline);
  if (rc) {
    free(text); free(b);
    return tune_fail(err, rc == 2 ? TUNE_EWORKER : TUNE_EIO, "protocol: %s mid-frame", rc == 2 ? "timeout" : "peer closed");
  }
  text[hdr[0]] = 0;
  json_error_t je;
  *msg = json_loads(text, 0, &je);
  free(text);
  if (!*msg) { free(b); return tune_fail(err, TUNE_EWORKER, "protocol: bad JSON: %s", je.text); }
  if (blob) *blob = b; else free(b);
  if (blob_n) *blob_n = hdr[1];
  return TUNE_OK;
}
