/* inputs_fill_gpu: the worker's device fill (tune_wk_fill, worker_kernels.c's tune_fill) draws the
 * values the host draws (tune_inputs_fill) for every elementwise init and every dtype, and the
 * host-drawn inits (permutation, offsets) still come out exact through the same call.
 *
 * Integer-only draws (uniform and randint into integers) must match bit for bit. Draws through
 * log, cos or exp2 may differ in the last places of a double (CUDA's functions are within an ulp or
 * two of the host library's): in f64 they show (each element within 1e-12 (1 + |x|) of the host's;
 * cos near zero is many ulps of a tiny result apart), in f32 and narrower only when a value lies on
 * a rounding boundary, at most 1 element in 10^5 and by one step.
 * Prints one line per case. Exit: 0 all good, 1 a failure, 77 no driver or GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_int.h"

static int n_fail;

/* Steps of dtype t between the values a and b hold at element i (0 equal, 1 adjacent). */
static double steps_apart(tune_dtype t, const void *a, const void *b, int64_t i) {
  int size = tune_dtype_size(t);
  if (!memcmp((const char *)a + i * size, (const char *)b + i * size, (size_t)size)) return 0;
  double x = tune_inputs_get(t, a, i), y = tune_inputs_get(t, b, i);
  double ulp = sqrt(12.0 * tune_inputs_round_var(t, a, i)); /* one step at x (0 for integers) */
  return ulp > 0 ? fabs(x - y) / ulp : INFINITY;
}

static void run_case(wstate *w, tune_dtype t, tune_init init, double a, double b, int64_t n) {
  tune_arg_def d = {.dtype = t, .init = init, .init_a = a, .init_b = b, .is_tensor = 1};
  size_t bytes = (size_t)n * (size_t)tune_dtype_size(t);
  void *host = malloc(bytes), *dev = malloc(bytes);
  CUdeviceptr p = 0;
  tune_err err;
  tune_err_clear(&err);
  if (!host || !dev || tune_cu.cuMemAlloc(&p, bytes) != CUDA_SUCCESS || tune_wk_fill(w, &d, n, 7, 3, p, &err) ||
      tune_cu.cuMemcpyDtoH(dev, p, bytes) != CUDA_SUCCESS) {
    printf("%-5s init %d: device fill failed: %s\n", tune_dtype_name(t), init, err.msg);
    ++n_fail;
  } else {
    tune_inputs_fill(&d, n, 7, 3, host);
    int64_t differ = 0, far = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      double s = steps_apart(t, host, dev, i), x = tune_inputs_get(t, host, i);
      differ += s > 0;
      far += s > 0 && fabs(x - tune_inputs_get(t, dev, i)) > 1e-12 * (1.0 + fabs(x));
      if (s > worst) worst = s;
    }
    int exact = init == TUNE_INIT_RANDINT || init == TUNE_INIT_PERMUTATION || init == TUNE_INIT_OFFSETS ||
                (init == TUNE_INIT_UNIFORM && (t == TUNE_I32 || t == TUNE_I64));
    int ok = exact ? differ == 0 : t == TUNE_F64 ? far == 0 : (differ * 100000 <= n && worst <= 1.0);
    printf("%-5s init %d: %lld of %lld elements differ (at most %g steps)%s\n", tune_dtype_name(t), init,
           (long long)differ, (long long)n, worst, ok ? "" : "  FAIL");
    n_fail += !ok;
  }
  if (p) tune_cu.cuMemFree(p);
  free(host);
  free(dev);
}

int main(void) {
  tune_err err;
  tune_err_clear(&err);
  wstate w;
  memset(&w, 0, sizeof w);
  if (tune_cuda_load(&err) || tune_cu.cuDeviceGet(&w.dev, 0) != CUDA_SUCCESS) {
    printf("no GPU: %s\n", err.msg);
    return 77;
  }
  if (tune_cu.cuDevicePrimaryCtxRetain(&w.ctx, w.dev) != CUDA_SUCCESS || tune_cu.cuCtxSetCurrent(w.ctx) != CUDA_SUCCESS) {
    printf("no context on GPU 0\n");
    return 1;
  }
  const int64_t n = 1 << 22;
  const tune_dtype floats[] = {TUNE_F32, TUNE_F16, TUNE_BF16, TUNE_F64, TUNE_E4M3};
  for (int k = 0; k < 5; ++k) {
    run_case(&w, floats[k], TUNE_INIT_NORMAL, 0.5, 2.0, n);
    run_case(&w, floats[k], TUNE_INIT_UNIFORM, -3.0, 5.0, n);
    run_case(&w, floats[k], TUNE_INIT_WIDE, -8.0, 8.0, n);
    run_case(&w, floats[k], TUNE_INIT_NONE, -1.0, 1.0, n);
  }
  run_case(&w, TUNE_E4M3, TUNE_INIT_NORMAL, 0.0, 300.0, n); /* saturation at 448 and subnormals */
  run_case(&w, TUNE_I32, TUNE_INIT_RANDINT, -50.0, 1000.0, n);
  run_case(&w, TUNE_I64, TUNE_INIT_RANDINT, 0.0, 1e12, n);
  run_case(&w, TUNE_I32, TUNE_INIT_UNIFORM, -100.0, 100.0, n);
  run_case(&w, TUNE_I32, TUNE_INIT_PERMUTATION, 0, 0, 100000);
  run_case(&w, TUNE_I32, TUNE_INIT_OFFSETS, 100000, 16, 257);
  printf("inputs_fill_gpu: %s\n", n_fail ? "FAILED" : "all cases pass");
  return n_fail ? 1 : 0;
}
