/* fuzz_protocol.c: the worker protocol's frame reader (tuner/protocol.c).
 *
 * The input is the byte stream one end of the tuner-worker pipe would see: it
 * is put in a memfd, and frames are read from it with tune_msg_read until it
 * fails (end of stream, a bad length, malformed JSON), as the tuner and the
 * worker read their peer. Each message's launch steps and sample policy are
 * decoded as the worker decodes a measure message. The frame limits
 * (TUNE_MSG_MAX_JSON, TUNE_MSG_MAX_BLOB) allow a declared length far beyond
 * the input; the reader must fail cleanly on the short stream. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "protocol.h"

static void decode(json_t *msg) {
  tune_launch l;
  json_t *steps = json_object_get(msg, "launches");
  size_t i;
  json_t *step;
  json_array_foreach(steps, i, step) tune_launch_from_json(step, &l);
  tune_launch_from_json(msg, &l);
  int lo, hi;
  double max_ms;
  tune_measure_policy_from_json(msg, &lo, &hi, &max_ms);
  if (lo < 3 || hi < lo || !(max_ms > 0)) { fprintf(stderr, "fuzz_protocol: policy %d..%d %g\n", lo, hi, max_ms); abort(); }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("tune-fuzz-frame", 0);
  if (fd < 0) { perror("memfd_create"); abort(); }
  if (size && write(fd, data, size) != (ssize_t)size) { perror("write"); abort(); }
  lseek(fd, 0, SEEK_SET);
  for (int frames = 0; frames < 64; ++frames) {
    json_t *msg = NULL;
    void *blob = NULL;
    size_t blob_n = 0;
    tune_err err = {0};
    int rc = tune_msg_read(fd, &msg, &blob, &blob_n, 1000, &err);
    if (rc != TUNE_OK) {
      fuzz_note("after %d frame(s): %s", frames, err.msg);
      if (msg || blob) { fprintf(stderr, "fuzz_protocol: a failed read returned a message\n"); abort(); }
      break;
    }
    if (!msg) { fprintf(stderr, "fuzz_protocol: a read returned no message\n"); abort(); }
    decode(msg);
    json_decref(msg);
    free(blob);
  }
  close(fd);
  return 0;
}
