/* worker.c: the GPU side: buffers, reference, verification and timing. */
#include "worker.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "cuda_dl.h"
#include "compile.h"
#include "cupti_timer.h"
#include "nvml_clocks.h"
#include "peak_mma.h"
#include "inputs.h"
#include "protocol.h"
#include "recipe.h"
#include "tensormap.h"
#include "tunert_cluster.h"
#include "tunert_launch_config.h"
#include "tunert_pack.h"
#include "worker_int.h"


double tune_wk_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int tune_wk_host_reserve(wstate *w, size_t n, tune_err *err) {
  if (w->host_n >= n) return TUNE_OK;
  free(w->host);
  w->host = malloc(n);
  w->host_n = w->host ? n : 0;
  return w->host ? TUNE_OK : tune_fail(err, TUNE_ENOMEM, "worker: cannot allocate %zu host bytes", n);
}

static void free_problem(wstate *w) {
  tune_wk_alt_free(w);
  for (int i = 0; i < w->n_args; ++i) {
    if (w->ptr[i]) tune_cu.cuMemFree(w->guard_base[i] ? w->guard_base[i] : w->ptr[i]);
    w->guard_base[i] = 0;
    if (w->ref[i]) tune_cu.cuMemFree(w->ref[i]);
    free((char *)w->def[i].name);
    w->def[i].name = NULL;
    w->ptr[i] = 0;
    w->ref[i] = 0;
    w->bytes[i] = 0;
  }
  w->n_args = 0;
}

static int worker_init(wstate *w, int ordinal, json_t **info, tune_err *err) {
  char name[256];
  int v[8];
  size_t mem = 0;
  int drv = 0;
  CUuuid uuid;
  int count = 0;
  if (tune_cuda_load(err)) return err->code;
  /* CUPTI before the context exists, so every kernel of it is recorded */
  tune_err cerr;
  tune_err_clear(&cerr);
  tune_cupti_open(&cerr);
  CU_TRY(err, cuDeviceGet(&w->dev, ordinal));
  CU_TRY(err, cuDevicePrimaryCtxRetain(&w->ctx, w->dev));
  CU_TRY(err, cuCtxSetCurrent(w->ctx));
  CU_TRY(err, cuDeviceGetName(name, sizeof name, w->dev));
  static const CUdevice_attribute attrs[8] = {
      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
      CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,     CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
      CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,        CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
      CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN};
  for (int i = 0; i < 8; ++i) CU_TRY(err, cuDeviceGetAttribute(&v[i], attrs[i], w->dev));
  CU_TRY(err, cuDeviceTotalMem(&mem, w->dev));
  CU_TRY(err, cuDriverGetVersion(&drv));
  CU_TRY(err, cuDeviceGetUuid(&uuid, w->dev));
  CU_TRY(err, cuDeviceGetCount(&count));
  CU_TRY(err, cuEventCreate(&w->e0, CU_EVENT_DEFAULT));
  CU_TRY(err, cuEventCreate(&w->e1, CU_EVENT_DEFAULT));
  /* launch steps with stream = "side"; non-blocking, so the legacy stream does not wait for it:
     only a context synchronize (or CUPTI, which sees every kernel) covers its work */
  CU_TRY(err, cuStreamCreate(&w->side, CU_STREAM_NON_BLOCKING));
  w->l2_bytes = v[6];
  w->flush_bytes = (size_t)(v[6] > 0 ? v[6] : (64 << 20)) * 2;
  CU_TRY(err, cuMemAlloc(&w->flush, w->flush_bytes));
  char u[64], drvs[64];
  const unsigned char *b = (const unsigned char *)uuid.bytes;
  snprintf(u, sizeof u, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  snprintf(drvs, sizeof drvs, "%d.%d", drv / 1000, (drv % 1000) / 10);
  w->nvml = tune_nvml_open(u) == 0; /* optional: clocks are stored as -1 without it */
  /* the kernel module's version (e.g. 580.159.04) says more than the API level */
  FILE *vf = fopen("/proc/driver/nvidia/version", "r");
  if (vf) {
    char line[512];
    if (fgets(line, sizeof line, vf)) {
      /* "NVRM version: NVIDIA UNIX [Open ]Kernel Module for x86_64  580.159.04 ...": the first
         token after "Module" that starts with a digit */
      char *k = strstr(line, "Module");
      for (char *t = k ? strtok(k + 6, " \t\n") : NULL; t; t = strtok(NULL, " \t\n"))
        if (t[0] >= '0' && t[0] <= '9' && strchr(t, '.')) {
          snprintf(drvs, sizeof drvs, "%.24s (CUDA %d.%d)", t, drv / 1000, (drv % 1000) / 10);
          break;
        }
    }
    fclose(vf);
  }
  *info = json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:I,s:s,s:s}", "name", name, "cc_major", v[0],
                    "cc_minor", v[1], "sm_count", v[2], "sm_clock_khz", v[3], "mem_clock_khz", v[4],
                    "mem_bus_bits", v[5], "l2_bytes", v[6], "smem_per_block_optin", v[7],
                    "mem_bytes", (json_int_t)mem, "driver", drvs, "uuid", u);
  json_object_set_new(*info, "timer", json_string(tune_cupti_available() ? "cupti" : cerr.msg));
  json_object_set_new(*info, "device_count", json_integer(count));
  return TUNE_OK;
fail:
  return err->code;
}

/* Pack the kernel arguments with natural alignment. */
static size_t pack_args(const wstate *w, unsigned char *buf, size_t cap, void **ptrs) {
  /* one layout rule for the worker and libtunert (runtime/tunert_pack.h) */
  int kind[TUNE_MAX_ARGS], scalar_size[TUNE_MAX_ARGS];
  uint32_t offset[TUNE_MAX_ARGS];
  for (int i = 0; i < w->n_args; ++i) {
    kind[i] = w->def[i].is_tmap ? TUNERT_PACK_TENSORMAP : w->def[i].is_tensor ? TUNERT_PACK_TENSOR : TUNERT_PACK_SCALAR;
    scalar_size[i] = tune_dtype_size(w->def[i].dtype);
  }
  size_t total = tunert_pack_layout(w->n_args, kind, scalar_size, offset);
  if (total > cap) return 0;
  for (int i = 0; i < w->n_args; ++i) {
    unsigned char *dst = buf + offset[i];
    ptrs[i] = dst;
    if (w->def[i].is_tmap) memcpy(dst, &w->tmap[i], sizeof(CUtensorMap));
    else if (w->def[i].is_tensor) memcpy(dst, &w->ptr[i], sizeof(CUdeviceptr));
    else {
      switch (w->def[i].dtype) {
      case TUNE_F32: { float f = (float)w->scalar_f[i]; memcpy(dst, &f, 4); break; }
      case TUNE_F64: memcpy(dst, &w->scalar_f[i], 8); break;
      case TUNE_I32: { int32_t x = (int32_t)w->scalar_i[i]; memcpy(dst, &x, 4); break; }
      case TUNE_I64: { int64_t x = w->scalar_i[i]; memcpy(dst, &x, 8); break; }
      default: { uint16_t h = 0; memcpy(dst, &h, 2); break; } /* half scalars: unsupported, zero */
      }
    }
  }
  return total;
}

int tune_wk_poison_outputs(wstate *w, tune_err *err) {
  for (int i = 0; i < w->n_args; ++i) {
    if (!w->def[i].output) continue;
    switch (w->def[i].dtype) {
    case TUNE_F32: case TUNE_I32: CU_TRY(err, cuMemsetD32(w->ptr[i], 0x7fc00000u, (size_t)w->numel[i])); break;
    case TUNE_BF16: CU_TRY(err, cuMemsetD16(w->ptr[i], 0x7fc0, (size_t)w->numel[i])); break;
    case TUNE_F16: CU_TRY(err, cuMemsetD16(w->ptr[i], 0x7e00, (size_t)w->numel[i])); break;
    case TUNE_E4M3: CU_TRY(err, cuMemsetD8(w->ptr[i], 0x7f, w->bytes[i])); break;
    default: CU_TRY(err, cuMemsetD8(w->ptr[i], 0xff, w->bytes[i])); break;
    }
  }
  return TUNE_OK;
fail:
  return err->code;
}


/* The driver's launch description of l (with its cluster attribute at *at when it has one). */
static CUlaunchConfig launch_config(const launch *l, CUstream stream, CUlaunchAttribute *at) {
  return tunert_launch_config(l->grid, l->block, l->shared, stream, l->cluster, at);
}

/* NaN (0xff bytes: NaN in f32, bf16 and f16) in every scratch buffer that is not zeroed per launch. */
int tune_wk_poison_scratch(wstate *w, tune_err *err) {
  for (int i = 0; i < w->n_args; ++i)
    if (w->def[i].scratch && !w->def[i].zero && w->ptr[i] && w->bytes[i]) CU_TRY(err, cuMemsetD8(w->ptr[i], 0xff, w->bytes[i]));
  return TUNE_OK;
fail:
  return err->code;
}

/* Load the module and its kernels; a refusal is the variant's launch_error. */
static CUresult load_kernels(CUmodule *mod, const void *cubin, json_t *launches, launch *l, int *n, char *why, size_t why_n) {
  CUresult r = tune_cu.cuModuleLoadData(mod, cubin);
  if (r != CUDA_SUCCESS) { snprintf(why, why_n, "cuModuleLoadData: %s", tune_cuda_error_name(r)); return r; }
  *n = (int)json_array_size(launches);
  for (int i = 0; i < *n && i < TUNE_MAX_LAUNCHES; ++i) {
    tune_launch tl; /* protocol.h: the launch step as the tuner sent it */
    tune_launch_from_json(json_array_get(launches, i), &tl);
    r = tune_cu.cuModuleGetFunction(&l[i].fn, *mod, tl.kernel);
    if (r != CUDA_SUCCESS) { snprintf(why, why_n, "kernel %s not found: %s", tl.kernel[0] ? tl.kernel : "?", tune_cuda_error_name(r)); return r; }
    memcpy(l[i].grid, tl.grid, sizeof tl.grid);
    memcpy(l[i].block, tl.block, sizeof tl.block);
    memcpy(l[i].cluster, tl.cluster, sizeof tl.cluster);
    l[i].shared = tl.shared;
    l[i].side = tl.side_stream;
    /* opted in for any dynamic size: the 48 KiB default covers static + dynamic together, so 48 KiB
       of dynamic memory next to some static memory needs it too (H200: launch INVALID_VALUE) */
    if (l[i].shared > 0) {
      r = tune_cu.cuFuncSetAttribute(l[i].fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)l[i].shared);
      if (r != CUDA_SUCCESS) { snprintf(why, why_n, "%u bytes of dynamic shared memory refused: %s", l[i].shared, tune_cuda_error_name(r)); return r; }
    }
    /* a cluster that cannot be co-scheduled (its blocks' threads, registers or shared memory do
       not fit one GPC together) is refused here, with the numbers, before anything runs */
    if (tunert_cluster_used(l[i].cluster) && l[i].grid[0] && l[i].grid[1] && l[i].grid[2]) {
      CUlaunchAttribute at;
      CUlaunchConfig lc = launch_config(&l[i], NULL, &at);
      int n_clusters = 0;
      r = tune_cu.cuOccupancyMaxActiveClusters(&n_clusters, l[i].fn, &lc);
      if (r != CUDA_SUCCESS) {
        snprintf(why, why_n, "launch %d: cluster %u,%u,%u of blocks %u,%u,%u smem %u: cuOccupancyMaxActiveClusters: %s", i,
                 l[i].cluster[0], l[i].cluster[1], l[i].cluster[2], l[i].block[0], l[i].block[1], l[i].block[2], l[i].shared,
                 tune_cuda_error_name(r));
        return r;
      }
      if (n_clusters == 0) {
        snprintf(why, why_n, "launch %d: a cluster of %u,%u,%u blocks (%u,%u,%u threads, %u B dynamic smem each) cannot be "
                 "co-scheduled on this device (cuOccupancyMaxActiveClusters = 0)", i, l[i].cluster[0], l[i].cluster[1],
                 l[i].cluster[2], l[i].block[0], l[i].block[1], l[i].block[2], l[i].shared);
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
      }
    }
  }
  return CUDA_SUCCESS;
}

static CUresult zero_scratch(wstate *w, char *why, size_t why_n);

CUresult tune_wk_run_launches(wstate *w, launch *l, int n, char *why, size_t why_n) {
  /* kernelParams form: the driver copies each arg by the kernel's own parameter table, so a
     64-byte-aligned __grid_constant__ tensor map lands where the kernel expects it whatever the
     padding (a packed buffer with CU_LAUNCH_PARAM_BUFFER_SIZE was refused with "too many
     resources" for kernels taking tensor maps on the H200) */
  _Alignas(64) unsigned char args[1024];
  void *ptrs[TUNE_MAX_ARGS];
  if (w->n_args && !pack_args(w, args, sizeof args, ptrs)) {
    snprintf(why, why_n, "the kernel arguments exceed %zu bytes", sizeof args);
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult zr = zero_scratch(w, why, why_n);
  if (zr != CUDA_SUCCESS) return zr;
  for (int i = 0; i < n; ++i) {
    if (!l[i].grid[0] || !l[i].grid[1] || !l[i].grid[2]) continue; /* a step with no blocks is not launched */
    CUresult r;
    if (tunert_cluster_used(l[i].cluster)) { /* a thread-block cluster: only the Ex form takes one (same kernelParams) */
      CUlaunchAttribute at;
      CUlaunchConfig lc = launch_config(&l[i], l[i].side ? w->side : 0, &at);
      r = tune_cu.cuLaunchKernelEx(&lc, l[i].fn, ptrs, NULL);
    } else
      r = tune_cu.cuLaunchKernel(l[i].fn, l[i].grid[0], l[i].grid[1], l[i].grid[2], l[i].block[0], l[i].block[1],
                                 l[i].block[2], l[i].shared, l[i].side ? w->side : 0, ptrs, NULL);
    if (r != CUDA_SUCCESS) {
      char cl[48] = "";
      if (tunert_cluster_used(l[i].cluster)) snprintf(cl, sizeof cl, " cluster %u,%u,%u", l[i].cluster[0], l[i].cluster[1], l[i].cluster[2]);
      snprintf(why, why_n, "launch %d (grid %u,%u,%u block %u,%u,%u%s smem %u): %s", i, l[i].grid[0], l[i].grid[1], l[i].grid[2],
               l[i].block[0], l[i].block[1], l[i].block[2], cl, l[i].shared, tune_cuda_error_name(r));
      return r;
    }
  }
  return CUDA_SUCCESS;
}

json_t *tune_wk_crash_reply(CUresult r, const char *where) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s: %s", where, tune_cuda_error_name(r));
  return json_pack("{s:s,s:s,s:b}", "status", "crash", "error", buf, "fatal", 1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The relative width of the median's 95 % interval from order statistics over s[n]
 * (left unsorted); 1 when it cannot be had. */
double tune_wk_median_rel_ci(const double *samples, int n) {
  double *s = malloc((size_t)n * sizeof *s);
  if (!s) return 1;
  memcpy(s, samples, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  double h = 0.98 * sqrt((double)n);
  int lo = (int)floor(n / 2.0 - h), hi = (int)ceil(n / 2.0 + h);
  if (lo < 0) lo = 0;
  if (hi > n - 1) hi = n - 1;
  double med = s[n / 2], rel = med > 0 ? (s[hi] - s[lo]) / med : 1;
  free(s);
  return rel;
}

/* ---- tensormap args and zeroed scratch (docs/tensormap-args.md, docs/recipes.md) ---- */

/* The problem message's extras of arg i: "zero" (scratch) and "tmap" (a tensormap arg). */
static int read_arg_extras(wstate *w, int i, json_t *a, tune_err *err) {
  tune_arg_def *d = &w->def[i];
  d->zero = json_is_true(json_object_get(a, "zero"));
  json_t *adv = json_object_get(a, "adversarial");
  d->adv_init = adv ? (tune_init)json_integer_value(json_object_get(adv, "init")) : TUNE_INIT_NONE;
  d->adv_a = adv ? json_number_value(json_object_get(adv, "a")) : 0;
  d->adv_b = adv ? json_number_value(json_object_get(adv, "b")) : 0;
  memset(&w->tmap[i], 0, sizeof w->tmap[i]);
  json_t *t = json_object_get(a, "tmap");
  if (!t) return TUNE_OK;
  d->is_tmap = 1;
  d->is_tensor = 0;
  if (tune_tmap_def_from_json(t, &d->tmap) || d->tmap.tensor < 0 || d->tmap.tensor >= TUNE_MAX_ARGS)
    return tune_fail(err, TUNE_EINVAL, "worker: arg %s: malformed tensormap", d->name ? d->name : "?");
  return TUNE_OK;
}

/* Build every tensormap arg of a variant (tmaps[i]: dims, strides, box) on the current buffers;
 * the scratch buffers have their final size by now. -1 with the reason: the variant's launch_error. */
int tune_wk_build_tmaps(wstate *w, json_t *tmaps, char *why, size_t why_n) {
  for (int i = 0; i < w->n_args; ++i) {
    if (!w->def[i].is_tmap) continue;
    const tune_tmap_def *d = &w->def[i].tmap;
    tune_tmap_var v;
    char m[640];
    const char *name = w->def[i].name ? w->def[i].name : "?";
    if (d->tensor >= w->n_args || !w->def[d->tensor].is_tensor || tune_tmap_var_from_json(json_array_get(tmaps, (size_t)i), &v) || v.rank == 0) {
      snprintf(why, why_n, "tensormap %s: no dims/box for this variant, or no tensor to map", name);
      return -1;
    }
    const int t = d->tensor;
    if (tune_tmap_check(d, &v, tune_dtype_size(w->def[t].dtype), w->ptr[t], w->bytes[t], m, sizeof m)) {
      char desc[320];
      tune_tmap_describe(d, &v, desc, sizeof desc);
      snprintf(why, why_n, "tensormap %.40s of %.40s: %.300s (%s)", name, w->def[t].name ? w->def[t].name : "?", m, desc);
      return -1;
    }
    if (tune_tmap_encode(&w->tmap[i], d, &v, w->def[t].dtype, w->ptr[t], m, sizeof m) != CUDA_SUCCESS) {
      snprintf(why, why_n, "tensormap %.40s of %.40s: %s", name, w->def[t].name ? w->def[t].name : "?", m);
      return -1;
    }
  }
  return 0;
}

/* Zero every zero = true scratch buffer, on the variant's stream, by a kernel CUPTI counts. */
static CUresult zero_scratch(wstate *w, char *why, size_t why_n) {
  for (int i = 0; i < w->n_args; ++i) {
    if (!w->def[i].zero || !w->ptr[i] || !w->bytes[i]) continue;
    if (!w->zero_fn) {
      tune_err e;
      tune_err_clear(&e);
      if (tune_wk_kernels_init(w, &e)) { snprintf(why, why_n, "scratch zeroing kernel: %s", e.msg); return CUDA_ERROR_NOT_INITIALIZED; }
    }
    unsigned long long n8 = w->bytes[i] / 8, ntail = w->bytes[i] % 8;
    CUdeviceptr tail = w->ptr[i] + n8 * 8;
    unsigned blocks = (unsigned)((n8 + 255) / 256 < 1 ? 1 : (n8 + 255) / 256 > 2048 ? 2048 : (n8 + 255) / 256);
    void *args[] = {&w->ptr[i], &n8, &tail, &ntail};
    CUresult r = tune_cu.cuLaunchKernel(w->zero_fn, blocks, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    if (r != CUDA_SUCCESS) { snprintf(why, why_n, "zeroing scratch %s: %s", w->def[i].name ? w->def[i].name : "?", tune_cuda_error_name(r)); return r; }
  }
  return CUDA_SUCCESS;
}

/* The reference's outputs on the live set, kept on the device in w->ref. */
static int keep_reference(wstate *w, tune_err *err) {
  for (int i = 0; i < w->n_args; ++i) {
    if (!w->def[i].output) continue;
    if (w->ref[i]) tune_cu.cuMemFree(w->ref[i]);
    w->ref[i] = 0;
    if (tune_cu.cuMemAlloc(&w->ref[i], w->bytes[i]) != CUDA_SUCCESS) {
      w->ref[i] = 0;
      return tune_fail(err, TUNE_ENOMEM, "worker: no device memory for the reference of output %s (%zu bytes)",
                       w->def[i].name ? w->def[i].name : "", w->bytes[i]);
    }
    CU_TRY(err, cuMemcpyDtoD(w->ref[i], w->ptr[i], w->bytes[i]));
    tune_compare c;
    if (tune_wk_compare(w, i, w->ref[i], &c, err)) return err->code;
    if (c.n_nan) return tune_fail(err, TUNE_EINVAL, "reference: output %s has %lld NaN/Inf (unwritten?)", w->def[i].name ? w->def[i].name : "", (long long)c.n_nan);
  }
  return TUNE_OK;
fail:
  return err->code;
}

/* Set up a problem: buffers, inputs, reference outputs. Reply {ok, ref_ms}. */
static json_t *do_problem(wstate *w, json_t *msg, const void *cubin, size_t cubin_n, tune_err *err) {
  CUmodule mod = NULL;
  free_problem(w);
  json_t *args = json_object_get(msg, "args");
  uint64_t seed = (uint64_t)json_integer_value(json_object_get(msg, "seed"));
  w->seed = seed;
  w->tol_rel = json_real_value(json_object_get(msg, "tol_rel_l2"));
  w->tol_abs = json_real_value(json_object_get(msg, "tol_max_abs"));
  w->tol_honest = json_number_value(json_object_get(msg, "tol_honest")); /* 0 when absent */
  w->n_args = (int)json_array_size(args);
  if (w->n_args > TUNE_MAX_ARGS) { tune_fail(err, TUNE_EINVAL, "worker: too many args"); return NULL; }
  for (int i = 0; i < w->n_args; ++i) {
    json_t *a = json_array_get(args, i);
    tune_arg_def *d = &w->def[i];
    memset(d, 0, sizeof *d);
    d->name = strdup(json_string_value(json_object_get(a, "name")) ?: "?");
    d->is_tensor = json_is_true(json_object_get(a, "tensor"));
    d->dtype = (tune_dtype)json_integer_value(json_object_get(a, "dtype"));
    d->output = json_is_true(json_object_get(a, "output"));
    d->scratch = json_is_true(json_object_get(a, "scratch"));
    d->init = (tune_init)json_integer_value(json_object_get(a, "init"));
    d->init_a = json_number_value(json_object_get(a, "a"));
    d->init_b = json_number_value(json_object_get(a, "b"));
    if (read_arg_extras(w, i, a, err)) goto fail;
    w->numel[i] = json_integer_value(json_object_get(a, "numel"));
    w->scalar_f[i] = json_number_value(json_object_get(a, "f"));
    w->scalar_i[i] = json_integer_value(json_object_get(a, "i"));
    if (!d->is_tensor || d->scratch || w->numel[i] <= 0) continue;
    w->bytes[i] = (size_t)w->numel[i] * (size_t)tune_dtype_size(d->dtype);
    if (tune_wk_guard_alloc(w->bytes[i], &w->guard_base[i], &w->ptr[i], err)) goto fail;
    if (!d->output) {
      if (tune_wk_fill(w, d, w->numel[i], seed, i, w->ptr[i], err)) goto fail;
      if (tune_wk_checksum(w, i, &w->in_hash[i], err)) goto fail; /* builds the checksum kernel on first use */
    }
  }
  /* the reference: same args, writes the outputs */
  json_t *ref = json_object_get(msg, "ref");
  json_t *one = json_array();
  json_array_append(one, ref);
  launch l[TUNE_MAX_LAUNCHES];
  int n = 0;
  char why[1024];
  CUresult r = load_kernels(&mod, cubin, one, l, &n, why, sizeof why);
  json_decref(one);
  if (r != CUDA_SUCCESS) { tune_fail(err, TUNE_ECUDA, "reference: %s", why); goto fail; }
  (void)cubin_n;
  if (tune_wk_alt_alloc(w, err)) goto fail;
  float ref_ms = 0;
  for (int set = 0; set <= w->two_sets; ++set) { /* the live set, then the other; back to the first */
    if (set) tune_wk_swap_sets(w);
    if (tune_wk_poison_outputs(w, err)) goto fail;
    CU_TRY(err, cuEventRecord(w->e0, 0));
    r = tune_wk_run_launches(w, l, n, why, sizeof why);
    if (r != CUDA_SUCCESS) { tune_fail(err, TUNE_ECUDA, "reference: %s", why); goto fail; }
    CU_TRY(err, cuEventRecord(w->e1, 0));
    CU_TRY(err, cuCtxSynchronize());
    if (!set) CU_TRY(err, cuEventElapsedTime(&ref_ms, w->e0, w->e1));
    int rc = keep_reference(w, err);
    if (set) tune_wk_swap_sets(w);
    if (rc == TUNE_ENOMEM && set) { /* no room for the second set's reference: one set */
      tune_wk_alt_free(w);
      tune_err_clear(err);
    } else if (rc) goto fail;
  }
  tune_cu.cuModuleUnload(mod);
  return json_pack("{s:s,s:f}", "status", "ok", "ref_ms", (double)ref_ms);
fail:
  if (mod) tune_cu.cuModuleUnload(mod);
  return NULL;
}

/* Verify then time one variant. The reply always has a status. */
static json_t *do_measure(wstate *w, json_t *msg, const void *cubin, tune_err *err) {
  CUmodule mod = NULL;
  launch l[TUNE_MAX_LAUNCHES];
  int n = 0;
  char why[1024] = "";
  json_t *reply = NULL;
  double *samples = NULL, *event_samples = NULL;
  double t_start = tune_wk_now_ms();
  sample_checks sc;
  memset(&sc, 0, sizeof sc);
  /* scratch buffers grow to the variant's need */
  json_t *scratch = json_object_get(msg, "scratch");
  for (int i = 0; i < w->n_args; ++i) {
    if (!w->def[i].scratch) continue;
    int64_t need = json_integer_value(json_array_get(scratch, i));
    size_t bytes = (size_t)need * (size_t)tune_dtype_size(w->def[i].dtype);
    if (bytes > w->bytes[i]) {
      if (w->ptr[i]) tune_cu.cuMemFree(w->ptr[i]);
      w->ptr[i] = 0;
      w->bytes[i] = 0;
      CUresult r = tune_cu.cuMemAlloc(&w->ptr[i], bytes);
      if (r != CUDA_SUCCESS) { snprintf(why, sizeof why, "scratch %s (%zu bytes): %s", w->def[i].name ? w->def[i].name : "", bytes, tune_cuda_error_name(r)); return json_pack("{s:s,s:s}", "status", "launch_error", "error", why); }
      w->bytes[i] = bytes;
    }
    w->numel[i] = need;
  }
  if (tune_wk_build_tmaps(w, json_object_get(msg, "tmaps"), why, sizeof why)) return json_pack("{s:s,s:s}", "status", "launch_error", "error", why);
  CUresult r = load_kernels(&mod, cubin, json_object_get(msg, "launches"), l, &n, why, sizeof why);
  if (r != CUDA_SUCCESS) { reply = json_pack("{s:s,s:s}", "status", "launch_error", "error", why); goto done; }
  /* 1. verify on each input set, then load the module again, so that what the verified launches
     left in its device memory is gone before timing */
  tune_wk_worst worst = tune_wk_worst_init;
  json_t *tmaps = json_object_get(msg, "tmaps");
  for (int set = 0; set <= w->two_sets; ++set) {
    int failed = 0;
    if (set) {
      tune_wk_swap_sets(w);
      if (tune_wk_build_tmaps(w, tmaps, why, sizeof why)) { reply = json_pack("{s:s,s:s}", "status", "launch_error", "error", why); goto done_restore; }
    }
    reply = tune_wk_verify_live(w, l, n, &worst, err, &failed);
    if (failed) goto fail;
    if (reply) {
      if (json_is_true(json_object_get(reply, "sticky"))) { json_object_del(reply, "sticky"); goto done; }
      goto done_restore; /* it ran: it may have written its inputs */
    }
  }
  tune_cu.cuModuleUnload(mod);
  mod = NULL;
  r = load_kernels(&mod, cubin, json_object_get(msg, "launches"), l, &n, why, sizeof why);
  if (r != CUDA_SUCCESS) { reply = json_pack("{s:s,s:s}", "status", "launch_error", "error", why); goto done; }
  /* 2. time: warm up, then repeat until the median is known to 1% or a cap */
  int min_samples, max_samples;
  double max_ms;
  tune_measure_policy_from_json(msg, &min_samples, &max_samples, &max_ms); /* protocol.h */
  const char *timing = json_string_value(json_object_get(msg, "timing"));
  int sustained = timing && !strcmp(timing, "sustained");
  if (sustained && max_samples < TUNE_SUSTAINED_MAX_SAMPLES) max_samples = TUNE_SUSTAINED_MAX_SAMPLES;
  samples = malloc((size_t)max_samples * sizeof *samples);
  event_samples = malloc((size_t)max_samples * sizeof *event_samples);
  if (!samples || !event_samples) { tune_fail(err, TUNE_ENOMEM, "worker: out of memory"); goto fail; }
  int use_cupti = tune_cupti_available();
  int ns = 0;
  double rel_ci = 1;
  tune_clocks clk = {-1, -1, 0, 0};
  tune_clocks_fold(&clk, tune_nvml_sample());
  if (sustained) {
    int failed = 0;
    if (!use_cupti) { reply = json_pack("{s:s,s:s}", "status", "skipped", "error", "sustained timing needs CUPTI"); goto done_restore; }
    reply = tune_wk_sustained_samples(w, json_object_get(msg, "tmaps"), l, n, samples, event_samples, &ns, &rel_ci, &clk, err, &failed);
    if (failed) goto fail;
    if (reply) goto done_restore;
    goto timed;
  }
  double w0 = tune_wk_now_ms();
  for (int i = 0; i < 50 && (i < 3 || tune_wk_now_ms() - w0 < 20); ++i) {
    r = tune_wk_run_launches(w, l, n, why, sizeof why);
    if (r != CUDA_SUCCESS) { reply = tune_wk_crash_reply(r, why); goto done; }
    r = tune_cu.cuCtxSynchronize();
    if (r != CUDA_SUCCESS) { reply = tune_wk_crash_reply(r, "during warm-up"); goto done; }
  }
  if (use_cupti) { /* drop the warm-up's records */
    double d;
    int k;
    if (tune_cupti_collect(&d, &k, err)) goto fail;
  }
  if (tune_wk_sample_checks_open(w, max_samples, &sc, err)) goto fail;
  double t0 = tune_wk_now_ms();
  while (ns < max_samples) {
    if (ns % 8 == 7) tune_clocks_fold(&clk, tune_nvml_sample()); /* between samples, off the timed path */
    /* the input sets take turns, so consecutive launches read different inputs at different
       addresses; the tensor maps follow (host encoding, outside the timed span) */
    if (w->two_sets) {
      tune_wk_swap_sets(w);
      if (tune_wk_build_tmaps(w, tmaps, why, sizeof why)) { reply = json_pack("{s:s,s:s}", "status", "launch_error", "error", why); goto done_restore; }
    }
    /* poisoned again before every timed launch, outside the timed span (the flush below evicts the
       poison from L2): a variant must compute its output each time, not find it already there */
    if (tune_wk_poison_outputs(w, err)) goto fail;
    /* evict the inputs from L2 by writing 2x its size. The dirty lines this leaves are written
       back during the variant, as a pipeline's previous kernel would leave them; that is also how
       the peers are timed (triton's do_bench zeroes a buffer). A read-only flush was tried: it
       let memory-bound variants leave up to one L2 of their own output unwritten at the end and
       report 2-5% above the device's copy bandwidth (docs/measurement.md). */
    CU_TRY(err, cuMemsetD8Async(w->flush, (unsigned char)ns, w->flush_bytes, 0));
    CU_TRY(err, cuEventRecord(w->e0, 0));
    r = tune_wk_run_launches(w, l, n, why, sizeof why);
    if (r != CUDA_SUCCESS) { reply = tune_wk_crash_reply(r, why); goto done; }
    CU_TRY(err, cuEventRecord(w->e1, 0));
    r = tune_cu.cuCtxSynchronize(); /* every stream: side-stream work must end before the next flush */
    if (r != CUDA_SUCCESS) { reply = tune_wk_crash_reply(r, "during timing"); goto done; }
    float ms;
    CU_TRY(err, cuEventElapsedTime(&ms, w->e0, w->e1));
    event_samples[ns] = ms * 1e6;
    if (use_cupti) {
      /* the sum of every kernel that ran in the context, on any stream */
      double kns;
      int nk;
      if (tune_cupti_collect(&kns, &nk, err)) goto fail;
      if (nk == 0) {
        reply = json_pack("{s:s,s:s}", "status", "launch_error", "error", "no kernel ran during a measured launch");
        goto done_restore;
      }
      samples[ns++] = kns;
    } else samples[ns++] = ms * 1e6;
    if (tune_wk_sample_checks_launch(w, &sc, ns - 1, err)) goto fail;
    if (ns >= min_samples) {
      rel_ci = tune_wk_median_rel_ci(samples, ns);
      if (rel_ci < 0.01 || tune_wk_now_ms() - t0 > max_ms) break;
    }
  }
  {
    char wrong[1024] = "";
    if (tune_wk_sample_checks_judge(w, &sc, ns, wrong, sizeof wrong, err)) goto fail;
    if (wrong[0]) { reply = json_pack("{s:s,s:s}", "status", "wrong", "error", wrong); goto done_restore; }
  }
timed:
  {
    int failed = 0;
    reply = tune_wk_relaunch_check(w, l, n, err, &failed);
    if (failed) goto fail;
    if (reply) goto done_restore;
  }
  qsort(samples, (size_t)ns, sizeof *samples, cmp_double);
  double mean = 0, var = 0;
  for (int i = 0; i < ns; ++i) mean += samples[i];
  mean /= ns;
  for (int i = 0; i < ns; ++i) var += (samples[i] - mean) * (samples[i] - mean);
  double median = ns % 2 ? samples[ns / 2] : 0.5 * (samples[ns / 2 - 1] + samples[ns / 2]);
  qsort(event_samples, (size_t)ns, sizeof *event_samples, cmp_double);
  tune_clocks_fold(&clk, tune_nvml_sample());
  reply = json_pack("{s:s,s:f,s:f,s:f,s:f,s:i,s:f,s:s,s:f}", "status", "ok", "median_ns", median, "min_ns", samples[0],
                    "max_ns", samples[ns - 1], "stddev_ns", ns > 1 ? sqrt(var / (ns - 1)) : 0.0, "samples", ns,
                    "rel_ci", rel_ci, "timer", use_cupti ? "cupti" : "events", "event_median_ns", event_samples[ns / 2]);
  tune_wk_worst_to_reply(&worst, reply);
  json_object_set_new(reply, "sm_mhz", json_integer(clk.sm_mhz));
  json_object_set_new(reply, "mem_mhz", json_integer(clk.mem_mhz));
  json_object_set_new(reply, "clock_reasons", json_integer((json_int_t)clk.reasons));
  json_object_set_new(reply, "power_w", json_integer(clk.power_w));
  json_object_set_new(reply, "timing", json_string(sustained ? "sustained" : "burst"));
  json_object_set_new(reply, "input_sets", json_integer(1 + w->two_sets));
  goto done;
done_restore:
  if (tune_wk_restore_inputs(w, err)) goto fail;
done:
  if (mod) tune_cu.cuModuleUnload(mod);
  tune_wk_sample_checks_close(&sc);
  free(samples);
  free(event_samples);
  if (reply) json_object_set_new(reply, "measure_ms", json_real(tune_wk_now_ms() - t_start));
  return reply;
fail:
  if (mod) tune_cu.cuModuleUnload(mod);
  tune_wk_sample_checks_close(&sc);
  free(samples);
  free(event_samples);
  json_decref(reply);
  return NULL;
}

/* The kernel time of a measure: what the CUPTI timer's running total (cupti_timer.h) grew by
 * between ns0 and now, into the reply as "kernel_ns" (protocol.h). The context is synchronized
 * first, so that every kernel the measure launched has ended and been recorded. A figure that
 * cannot be had is left out of the reply; the variant's result stands. */
static void reply_kernels(json_t *reply, double ns0, long long n0) {
  tune_err e;
  tune_err_clear(&e);
  double ns1;
  long long n1;
  if (tune_cu.cuCtxSynchronize() != CUDA_SUCCESS || tune_cupti_total(&ns1, &n1, &e)) return;
  tune_reply_kernels_to_json(reply, ns1 - ns0, n1 - n0);
}

/* do_measure, with the kernel time CUPTI recorded during it (protocol.h "kernel_ns" says what
 * it counts). The total is read before the measure too, so that the reference do_problem ran
 * is not in it. No figure without CUPTI or after a crash (the context is lost). */
static json_t *do_measure_counted(wstate *w, json_t *msg, const void *cubin, tune_err *err) {
  tune_err e;
  tune_err_clear(&e);
  double ns0 = 0;
  long long n0 = 0;
  int counted = tune_cupti_available() && !tune_cupti_total(&ns0, &n0, &e);
  json_t *reply = do_measure(w, msg, cubin, err);
  if (reply && counted && !json_is_true(json_object_get(reply, "fatal"))) reply_kernels(reply, ns0, n0);
  return reply;
}

/* Copy bandwidth with tune's own kernel: 1 GiB, best of 20, read + write bytes. */
static json_t *do_copy_peak(wstate *w, json_t *msg, const void *cubin, tune_err *err) {
  CUmodule mod = NULL;
  CUfunction fn;
  CUdeviceptr s = 0, d = 0;
  json_t *reply = NULL;
  const size_t bytes = (size_t)1 << 30;
  long long n = (long long)(bytes / 16);
  CU_TRY(err, cuModuleLoadData(&mod, cubin));
  CU_TRY(err, cuModuleGetFunction(&fn, mod, json_string_value(json_object_get(msg, "kernel")) ?: ""));
  CU_TRY(err, cuMemAlloc(&s, bytes));
  CU_TRY(err, cuMemAlloc(&d, bytes));
  CU_TRY(err, cuMemsetD32(s, 0x3f800000u, bytes / 4));
  void *args[] = {&s, &d, &n};
  float best = 1e30f;
  for (int i = 0; i < 25; ++i) {
    CU_TRY(err, cuEventRecord(w->e0, 0));
    CU_TRY(err, cuLaunchKernel(fn, (unsigned)(n / 512), 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CU_TRY(err, cuEventRecord(w->e1, 0));
    CU_TRY(err, cuEventSynchronize(w->e1));
    float ms;
    CU_TRY(err, cuEventElapsedTime(&ms, w->e0, w->e1));
    if (i >= 5 && ms < best) best = ms;
  }
  if (tune_cupti_available()) { double x; int k; tune_cupti_collect(&x, &k, err); }
  reply = json_pack("{s:s,s:f}", "status", "ok", "GBps", 2.0 * (double)bytes / (best * 1e6));
fail:
  if (s) tune_cu.cuMemFree(s);
  if (d) tune_cu.cuMemFree(d);
  if (mod) tune_cu.cuModuleUnload(mod);
  return reply;
}

/* tune's matrix peak: one block of two warpgroups per SM, best of 10 timed launches of ~ms each. */
static json_t *do_mma_peak(wstate *w, json_t *msg, const void *cubin, tune_err *err) {
  CUmodule mod = NULL;
  CUfunction fn;
  CUdeviceptr sink = 0;
  json_t *reply = NULL;
  int sms = 0, iters = 10000;
  CU_TRY(err, cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, w->dev));
  CU_TRY(err, cuModuleLoadData(&mod, cubin));
  CU_TRY(err, cuModuleGetFunction(&fn, mod, json_string_value(json_object_get(msg, "kernel")) ?: ""));
  CU_TRY(err, cuMemAlloc(&sink, TUNE_PEAK_MMA_THREADS * sizeof(float)));
  void *args[] = {&sink, &iters};
  float best = 1e30f;
  tune_clocks clk = {-1, -1, 0, 0};
  for (int i = 0; i < 12; ++i) {
    CU_TRY(err, cuEventRecord(w->e0, 0));
    CU_TRY(err, cuLaunchKernel(fn, (unsigned)sms, 1, 1, TUNE_PEAK_MMA_THREADS, 1, 1, 0, NULL, args, NULL));
    CU_TRY(err, cuEventRecord(w->e1, 0));
    CU_TRY(err, cuEventSynchronize(w->e1));
    float ms;
    CU_TRY(err, cuEventElapsedTime(&ms, w->e0, w->e1));
    if (i >= 2 && ms < best) best = ms;
    tune_clocks_fold(&clk, tune_nvml_sample());
  }
  if (tune_cupti_available()) { double x; int k; tune_cupti_collect(&x, &k, err); }
  reply = json_pack("{s:s,s:f,s:i}", "status", "ok", "TFLOPs",
                    (double)sms * iters * TUNE_PEAK_MMA_FLOP_PER_ITER / (best * 1e-3) / 1e12, "sm_mhz", clk.sm_mhz);
fail:
  if (sink) tune_cu.cuMemFree(sink);
  if (mod) tune_cu.cuModuleUnload(mod);
  return reply;
}

int tune_worker_main(int ordinal, int in_fd, int out_fd) {
  wstate w;
  memset(&w, 0, sizeof w);
  tune_err err;
  tune_err_clear(&err);
  for (;;) {
    json_t *msg = NULL, *reply = NULL;
    void *blob = NULL;
    size_t blob_n = 0;
    tune_err_clear(&err);
    if (tune_msg_read(in_fd, &msg, &blob, &blob_n, -1, &err)) return err.code == TUNE_EIO ? 0 : 2;
    const char *op = json_string_value(json_object_get(msg, "op"));
    int fatal = 0;
    if (!op) tune_fail(&err, TUNE_EINVAL, "worker: message without op");
    else if (!strcmp(op, "hello")) {
      json_t *info = NULL;
      if (!worker_init(&w, ordinal, &info, &err)) reply = json_pack("{s:s,s:o}", "status", "ok", "device", info);
    } else if (!strcmp(op, "problem")) reply = do_problem(&w, msg, blob, blob_n, &err);
    else if (!strcmp(op, "copy_peak")) reply = do_copy_peak(&w, msg, blob, &err);
    else if (!strcmp(op, "mma_peak")) reply = do_mma_peak(&w, msg, blob, &err);
    else if (!strcmp(op, "measure")) {
      reply = do_measure_counted(&w, msg, blob, &err);
      fatal = reply && json_is_true(json_object_get(reply, "fatal"));
    } else tune_fail(&err, TUNE_EINVAL, "worker: unknown op '%s'", op);
    if (!reply) reply = json_pack("{s:s,s:s}", "status", "error", "error", err.msg[0] ? err.msg : "unknown failure");
    tune_err e2;
    tune_err_clear(&e2);
    int wr = tune_msg_write(out_fd, reply, NULL, 0, &e2);
    json_decref(reply);
    json_decref(msg);
    free(blob);
    if (wr) return 2;
    if (fatal) return 3; /* the context is broken: a fresh worker takes over */
  }
}
