/* cupti_timer.c: CUPTI activity records through dlopen. */
#include "cupti_timer.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cupti_api {
  __typeof__(&cuptiActivityRegisterCallbacks) register_callbacks;
  __typeof__(&cuptiActivityEnable) enable;
  __typeof__(&cuptiActivityFlushAll) flush_all;
  __typeof__(&cuptiActivityGetNextRecord) next_record;
  __typeof__(&cuptiGetResultString) result_string;
} cupti_api;

static cupti_api api;
static int opened;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double acc_ns;   /* sum of kernel durations since the last collect */
static int acc_n;       /* kernels since the last collect */
static int dropped;     /* records CUPTI reported lost */
static int count_copies; /* tune_cupti_count_copies: device-to-device copies count as kernels */
static uint64_t acc_first, acc_last; /* earliest start, latest end since the last collect [ns], 0 none */
static char acc_names[TUNE_CUPTI_NAMES_MAX]; /* distinct kernel names since the last collect, ';'-separated */
static double tot_ns;   /* sum of the same durations since tune_cupti_open: collects leave it (tune_cupti_total) */
static long long tot_n; /* their count */

/* Appends name to acc_names unless it is there already or the list is full (caller holds lock). */
static void note_name(const char *name) {
  size_t len = strlen(name), used = strlen(acc_names);
  for (const char *p = acc_names; (p = strstr(p, name)); p += len)
    if ((p == acc_names || p[-1] == ';') && (p[len] == ';' || p[len] == 0)) return;
  if (used + len + 2 > sizeof acc_names) return;
  if (used) acc_names[used++] = ';';
  memcpy(acc_names + used, name, len + 1);
}

/* One counted record [ns timestamps] into the collect's figures and the running total (caller
 * holds lock). A record without a valid end (end <= start) adds nothing to the total. */
static void note_record(uint64_t start, uint64_t end, const char *name) {
  acc_ns += (double)(end - start);
  ++acc_n;
  if (!acc_first || start < acc_first) acc_first = start;
  if (end > acc_last) acc_last = end;
  if (name) note_name(name);
  if (end > start) tot_ns += (double)(end - start);
  ++tot_n;
}

#define BUF_SIZE (8u << 20)

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(8, BUF_SIZE);
  *size = *buffer ? BUF_SIZE : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
  CUpti_Activity *rec = NULL;
  pthread_mutex_lock(&lock);
  while (api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY && count_copies) {
      const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
      if (m->copyKind != CUPTI_ACTIVITY_MEMCPY_KIND_DTOD) continue;
      note_record(m->start, m->end, "memcpy DtoD");
      continue;
    }
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
      if (k->name && !strncmp(k->name, "tune_", 5)) continue; /* tune's own: L2 flush, checksums */
      note_record(k->start, k->end, k->name);
    }
  }
  pthread_mutex_unlock(&lock);
  free(buffer);
}

#define CUPTI_TRY(err, call)                                                                   \
  do {                                                                                         \
    CUptiResult r_ = (call);                                                                   \
    if (r_ != CUPTI_SUCCESS) {                                                                 \
      const char *s_ = "?";                                                                    \
      if (api.result_string) api.result_string(r_, &s_);                                       \
      return tune_fail((err), TUNE_ECUPTI, "%s:%d: %s: %s", __FILE__, __LINE__, #call, s_);    \
    }                                                                                          \
  } while (0)

int tune_cupti_open(tune_err *err) {
  if (opened) return TUNE_OK;
  const char *names[] = {"libcupti.so.13", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so",
                         "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"};
  void *h = NULL;
  for (unsigned i = 0; i < sizeof names / sizeof *names && !h; ++i) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) return tune_fail(err, TUNE_ECUPTI, "libcupti cannot be opened: %s", dlerror());
  api.register_callbacks = (__typeof__(api.register_callbacks))dlsym(h, "cuptiActivityRegisterCallbacks");
  api.enable = (__typeof__(api.enable))dlsym(h, "cuptiActivityEnable");
  api.flush_all = (__typeof__(api.flush_all))dlsym(h, "cuptiActivityFlushAll");
  api.next_record = (__typeof__(api.next_record))dlsym(h, "cuptiActivityGetNextRecord");
  api.result_string = (__typeof__(api.result_string))dlsym(h, "cuptiGetResultString");
  if (!api.register_callbacks || !api.enable || !api.flush_all || !api.next_record)
    return tune_fail(err, TUNE_ECUPTI, "libcupti lacks the activity API");
  CUPTI_TRY(err, api.register_callbacks(buffer_requested, buffer_completed));
  CUPTI_TRY(err, api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  opened = 1;
  (void)dropped;
  return TUNE_OK;
}

int tune_cupti_available(void) { return opened; }

int tune_cupti_count_copies(tune_err *err) {
  if (!opened) return tune_fail(err, TUNE_ECUPTI, "CUPTI is not open");
  CUPTI_TRY(err, api.enable(CUPTI_ACTIVITY_KIND_MEMCPY));
  count_copies = 1;
  return TUNE_OK;
}

int tune_cupti_collect(double *sum_ns, int *n_kernels, tune_err *err) {
  tune_cupti_span sp;
  int rc = tune_cupti_collect_span(&sp, NULL, 0, err);
  *sum_ns = sp.sum_ns;
  *n_kernels = sp.n_kernels;
  return rc;
}

int tune_cupti_collect_span(tune_cupti_span *out, char *names, size_t names_n, tune_err *err) {
  memset(out, 0, sizeof *out);
  if (names_n) names[0] = 0;
  if (!opened) return tune_fail(err, TUNE_ECUPTI, "CUPTI is not open");
  CUPTI_TRY(err, api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  pthread_mutex_lock(&lock);
  out->sum_ns = acc_ns;
  out->n_kernels = acc_n;
  out->span_ns = acc_n ? (double)(acc_last - acc_first) : 0;
  if (names_n) snprintf(names, names_n, "%s", acc_names);
  acc_ns = 0;
  acc_n = 0;
  acc_first = acc_last = 0;
  acc_names[0] = 0;
  pthread_mutex_unlock(&lock);
  return TUNE_OK;
}

int tune_cupti_total(double *sum_ns, long long *n_kernels, tune_err *err) {
  *sum_ns = 0;
  *n_kernels = 0;
  if (!opened) return tune_fail(err, TUNE_ECUPTI, "CUPTI is not open");
  CUPTI_TRY(err, api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  pthread_mutex_lock(&lock);
  *sum_ns = tot_ns;
  *n_kernels = tot_n;
  pthread_mutex_unlock(&lock);
  return TUNE_OK;
}
