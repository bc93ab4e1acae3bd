/* tune_cupti_py.c: tune's kernel timer (tuner/cupti_timer.c) and clock sampler
 * (tuner/nvml_clocks.c) behind plain C functions, for tools/peers/peer_server.py
 * through ctypes. The peers are thereby timed by the very code that times tune's
 * variants, not by a copy of it.
 *
 * No struct crosses the boundary: every result goes to a caller-owned scalar or
 * char buffer (NUL-terminated, truncated to its size). Functions return 0 on
 * success, else a tune_err code with its text in msg. libcupti and
 * libnvidia-ml are opened with dlopen by the wrapped modules, so the library
 * loads on a machine without a driver; tune_cupti_py_open then fails with the
 * reason. The timer is process state: one user per process. */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "cupti_timer.h"
#include "nvml_clocks.h"

static void copy_msg(char *msg, int msg_n, const tune_err *e) {
  if (msg && msg_n > 0) snprintf(msg, (size_t)msg_n, "%s", e->msg);
}

/* Open CUPTI and enable kernel records. Call after cuInit and before any
 * context is created (i.e. before torch touches CUDA). */
int tune_cupti_py_open(char *msg, int msg_n) {
  tune_err e;
  tune_err_clear(&e);
  /* torch's copy_ of a contiguous tensor is a device-to-device copy, not a kernel: counted */
  int rc = tune_cupti_open(&e);
  if (!rc) rc = tune_cupti_count_copies(&e);
  copy_msg(msg, msg_n, &e);
  return rc;
}

/* The kernels recorded since the previous collect: the sum of their durations
 * and their span (first start to last end) [ns], their count and their distinct
 * names (';'-separated into names[names_n]; names may be NULL with names_n 0). */
int tune_cupti_py_collect(double *sum_ns, double *span_ns, int *n_kernels, char *names, int names_n, char *msg,
                          int msg_n) {
  tune_err e;
  tune_err_clear(&e);
  tune_cupti_span sp;
  int rc = tune_cupti_collect_span(&sp, names, names && names_n > 0 ? (size_t)names_n : 0, &e);
  *sum_ns = sp.sum_ns;
  *span_ns = sp.span_ns;
  *n_kernels = sp.n_kernels;
  copy_msg(msg, msg_n, &e);
  return rc;
}

/* Open NVML for the GPU with this UUID ("GPU-xxxxxxxx-..."). 0: available;
 * -1: not (samples then read -1 clocks and 0 W). */
int tune_nvml_py_open(const char *uuid) { return tune_nvml_open(uuid); }

/* One sample of the clocks [MHz], the clock event reasons and the board power [W]. */
void tune_nvml_py_sample(int *sm_mhz, int *mem_mhz, unsigned long long *reasons, int *power_w) {
  tune_clocks c = tune_nvml_sample();
  *sm_mhz = c.sm_mhz;
  *mem_mhz = c.mem_mhz;
  *reasons = (unsigned long long)c.reasons;
  *power_w = c.power_w;
}

/* "sw_power_cap,hw_slowdown" ... of a reasons mask, as the worker names them. */
void tune_nvml_py_reason_names(unsigned long long reasons, char *buf, int n) {
  tune_clocks_reason_names((uint64_t)reasons, buf, n);
}

typedef struct found_libs { char *buf; int n, used; } found_libs;

static int note_cupti(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  found_libs *f = data;
  if (!info->dlpi_name || !strstr(info->dlpi_name, "libcupti") || f->used >= f->n - 1) return 0;
  int w = snprintf(f->buf + f->used, (size_t)(f->n - f->used), "%s%s", f->used ? ";" : "", info->dlpi_name);
  f->used = w < 0 ? f->n - 1 : f->used + w > f->n - 1 ? f->n - 1 : f->used + w;
  return 0;
}

/* The files of every libcupti this process has loaded, ';'-separated ("" when none):
 * a peer's result says which CUPTI timed it, and a second copy (torch's own, for
 * its profiler) is seen. */
void tune_cupti_py_library(char *path, int n) {
  if (n <= 0) return;
  path[0] = 0;
  found_libs f = {path, n, 0};
  dl_iterate_phdr(note_cupti, &f);
}
