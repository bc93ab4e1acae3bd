/* cupti_timer.c: CUPTI activity records through dlopen. */
#include "cupti_timer.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
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

#define BUF_SIZE (8u << 20)

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(8, BUF_SIZE);
  *size = *buffer ? BUF_SIZE : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
  CUpti_Activity *rec = NULL;
  double sum = 0;
  int n = 0;
  while (api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
      if (k->name && !strncmp(k->name, "tune_", 5)) continue; /* tune's own: L2 flush, checksums */
      sum += (double)(k->end - k->start);
      ++n;
    }
  }
  pthread_mutex_lock(&lock);
  acc_ns += sum;
  acc_n += n;
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

int tune_cupti_collect(double *sum_ns, int *n_kernels, tune_err *err) {
  *sum_ns = 0;
  *n_kernels = 0;
  if (!opened) return tune_fail(err, TUNE_ECUPTI, "CUPTI is not open");
  CUPTI_TRY(err, api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  pthread_mutex_lock(&lock);
  *sum_ns = acc_ns;
  *n_kernels = acc_n;
  acc_ns = 0;
  acc_n = 0;
  pthread_mutex_unlock(&lock);
  return TUNE_OK;
}
