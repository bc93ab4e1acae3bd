/* peaks.c: measured and computed device limits. */
#include "peaks.h"

#include <string.h>

#include "compile.h"

/* tune's own copy kernel: each thread moves two 16-byte vectors, loads first
 * (the shape the copy recipe found best on an H200); n float4, a multiple of 512. */
static const char copy_src[] =
    "extern \"C\" __global__ void __launch_bounds__(256) tune_peak_copy(const float4 *__restrict__ s,\n"
    "    float4 *__restrict__ d, long long n) {\n"
    "  long long i = (long long)blockIdx.x * 512 + threadIdx.x;\n"
    "  float4 a = s[i], b = s[i + 256];\n"
    "  d[i] = a; d[i + 256] = b;\n"
    "}\n";

int tune_peaks_ensure(db_conn *db, int64_t device_id, const db_device *dev, tune_backend *be, tune_peaks *out,
                      tune_err *err) {
  memset(out, 0, sizeof *out);
  if (dev->cc_major == 9 && dev->sm_clock_khz > 0)
    out->tensor_TFLOPs = 4096.0 * dev->sm_count * dev->sm_clock_khz * 1e3 / 1e12;
  tune_err e;
  tune_err_clear(&e);
  int rc = db_peak_get(db, device_id, "copy_GBps", &out->copy_GBps, &e);
  if (rc == TUNE_OK) return TUNE_OK;
  if (rc != TUNE_ENOTFOUND) return tune_fail(err, rc, "%s", e.msg);
  if (!be || !be->measure_copy_peak) return TUNE_OK; /* replay: judged when recorded */
  tune_compile_job job;
  memset(&job, 0, sizeof job);
  job.source_path = "tune_peak_copy.cu";
  job.source_text = copy_src;
  job.include_root = ".";
  job.arch = dev->arch;
  job.n_names = 1;
  job.names[0] = "tune_peak_copy";
  if (tune_compile_batch(&job, 1, 1, err)) return err->code;
  if (!job.bin.ok) {
    rc = tune_fail(err, TUNE_EINTERNAL, "peaks: the built-in copy kernel does not compile: %s", job.bin.log ? job.bin.log : "");
    db_binary_release(&job.bin);
    return rc;
  }
  rc = be->measure_copy_peak(be, &job.bin, "tune_peak_copy", &out->copy_GBps, err);
  db_binary_release(&job.bin);
  if (rc) return rc;
  if (db_peak_put(db, device_id, "copy_GBps", out->copy_GBps, "GB/s (1 GiB device copy, read+write, best of 20)", err))
    return err->code;
  if (out->tensor_TFLOPs > 0 &&
      db_peak_put(db, device_id, "bf16_dense_TFLOPs_bound", out->tensor_TFLOPs,
                  "TFLOP/s (computed: 4096 FLOP/clk/SM x SMs x max SM clock)", err))
    return err->code;
  return TUNE_OK;
}

int tune_peaks_judge(const tune_peaks *p, double bytes, double flops, double median_ns, char *why, size_t why_n) {
  if (median_ns <= 0) return DB_OK;
  double gbps = bytes / median_ns, tflops = flops / median_ns / 1e3;
  if (p->copy_GBps > 0 && bytes > 0 && gbps > 1.05 * p->copy_GBps) {
    snprintf(why, why_n, "%.0f GB/s exceeds the device's measured copy bandwidth (%.0f GB/s)", gbps, p->copy_GBps);
    return DB_SUSPICIOUS;
  }
  if (p->tensor_TFLOPs > 0 && flops > 0 && tflops > 1.05 * p->tensor_TFLOPs) {
    snprintf(why, why_n, "%.0f TFLOP/s exceeds the device's tensor-core bound (%.0f TFLOP/s)", tflops, p->tensor_TFLOPs);
    return DB_SUSPICIOUS;
  }
  return DB_OK;
}
