/* fake_worker.c: a stand-in for `tune worker` on a machine without a GPU, speaking the worker
 * protocol (tuner/protocol.h), so that tune run over several GPUs (backend_pool.c) can be
 * tested anywhere (tests/integration/gpu_pool_test.sh; started through TUNE_WORKER_PROGRAM).
 * Its times are made up and say so (timer "fake"); what it serves is the run's logic:
 *   FAKE_GPUS=N            GPUs it claims the host has (default 2)
 *   FAKE_MEASURE_MS=T      how long a measure takes (default 100)
 *   FAKE_CRASH_GPU=K       the worker on GPU K dies on every measure
 *   FAKE_OTHER_MODEL_GPU=K GPU K claims another model
 *   FAKE_HELLO_MS=T        how long the worker takes to answer hello (default 0)
 *   FAKE_LOG=FILE          one line per measure appended: "GPU start_ms end_ms"
 *   FAKE_TIMER=NAME        the timer its answers name (default "fake"; "cupti" passes tune compare's
 *                          rule that compares CUPTI timings only)
 *   FAKE_SUSTAINED_REVERSED=1  sustained timings reverse the burst order (10999 ns less the burst
 *                          median), so the modes disagree on every pair of variants whatever the
 *                          cubins' bytes (default 0: the same answer in both modes)
 *   FAKE_KERNEL_PERMILLE=K  its measure replies report kernel time (protocol.h "kernel_ns") of K/1000
 *                          of FAKE_MEASURE_MS, as a worker with CUPTI does; unset or negative: the
 *                          field is left out, as an older worker or one without CUPTI leaves it
 * The median it answers depends only on the cubin (and the mode), so every GPU gives a variant
 * the same. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static json_t *hello(int gpu) {
  char uuid[64];
  snprintf(uuid, sizeof uuid, "GPU-fake-%04d", gpu);
  const char *name = gpu == env_int("FAKE_OTHER_MODEL_GPU", -1) ? "Fake GPU B" : "Fake GPU A";
  json_t *d = json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:I,s:s,s:s,s:s,s:i}", "name", name, "cc_major", 9,
                        "cc_minor", 0, "sm_count", 132, "sm_clock_khz", 1980000, "mem_clock_khz", 2619000,
                        "mem_bus_bits", 5120, "l2_bytes", 50 << 20, "smem_per_block_optin", 232448,
                        "mem_bytes", (json_int_t)80 << 30, "driver", "0.0 (fake)", "uuid", uuid, "timer", "fake",
                        "device_count", env_int("FAKE_GPUS", 2));
  return json_pack("{s:s,s:o}", "status", "ok", "device", d);
}

static json_t *measure(int gpu, const json_t *msg, const unsigned char *blob, size_t n) {
  if (gpu == env_int("FAKE_CRASH_GPU", -1)) _exit(1);
  double t0 = now_ms();
  usleep((useconds_t)env_int("FAKE_MEASURE_MS", 100) * 1000);
  const char *timing = json_string_value(json_object_get(msg, "timing"));
  uint32_t h = 2166136261u; /* FNV-1a of the cubin: the same variant, the same answer */
  for (size_t i = 0; i < n; ++i) h = (h ^ blob[i]) * 16777619u;
  double median = 1000 + h % 9000;
  if (env_int("FAKE_SUSTAINED_REVERSED", 0) && timing && !strcmp(timing, "sustained")) median = 10999 - median;
  const char *log = getenv("FAKE_LOG");
  if (log && *log) {
    char line[128];
    int k = snprintf(line, sizeof line, "%d %.1f %.1f\n", gpu, t0, now_ms());
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0 && write(fd, line, (size_t)k) != k) perror("fake worker: log");
    if (fd >= 0) close(fd);
  }
  json_t *reply = json_pack("{s:s,s:f,s:f,s:f,s:f,s:i,s:f,s:f,s:f,s:s}", "status", "ok", "median_ns", median,
                            "min_ns", median, "max_ns", median, "stddev_ns", 0.0, "samples", 10, "rel_l2", 0.0,
                            "max_abs", 0.0, "measure_ms", (double)env_int("FAKE_MEASURE_MS", 100), "timer",
                            getenv("FAKE_TIMER") ?: "fake");
  int permille = env_int("FAKE_KERNEL_PERMILLE", -1);
  if (reply && permille >= 0) /* [ns]: permille/1000 of the measure's milliseconds */
    tune_reply_kernels_to_json(reply, 1e3 * permille * env_int("FAKE_MEASURE_MS", 100), 13);
  return reply;
}

int main(int argc, char **argv) {
  if (argc != 4 || strcmp(argv[1], "worker") || strcmp(argv[2], "--device")) {
    fprintf(stderr, "usage: fake_worker worker --device N\n");
    return 2;
  }
  int gpu = atoi(argv[3]);
  for (;;) {
    json_t *msg = NULL, *reply = NULL;
    void *blob = NULL;
    size_t n = 0;
    tune_err err;
    tune_err_clear(&err);
    if (tune_msg_read(0, &msg, &blob, &n, -1, &err)) return 0; /* the tuner closed the pipe */
    const char *op = json_string_value(json_object_get(msg, "op")) ?: "";
    if (!strcmp(op, "hello")) {
      usleep((useconds_t)env_int("FAKE_HELLO_MS", 0) * 1000); /* a CUDA context coming up */
      reply = hello(gpu);
    }
    else if (!strcmp(op, "problem")) reply = json_pack("{s:s,s:f}", "status", "ok", "ref_ms", 1.0);
    else if (!strcmp(op, "measure")) reply = measure(gpu, msg, blob, n);
    else if (!strcmp(op, "copy_peak")) reply = json_pack("{s:s,s:f}", "status", "ok", "GBps", 3000.0);
    else if (!strcmp(op, "mma_peak")) reply = json_pack("{s:s,s:f}", "status", "ok", "TFLOPs", 800.0);
    else reply = json_pack("{s:s,s:s}", "status", "error", "error", "fake worker: unknown op");
    int rc = tune_msg_write(1, reply, NULL, 0, &err);
    json_decref(msg);
    json_decref(reply);
    free(blob);
    if (rc) return 1;
  }
}
