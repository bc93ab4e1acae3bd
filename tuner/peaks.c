/* peaks.c: measured and computed device limits. */
#include "peaks.h"

#include <string.h>

#include "compile.h"
#include "peak_mma.h"

/* tune's own copy kernel: each thread moves two 16-byte vectors, loads first
 * (the shape the copy recipe found best on an H200); n float4, a multiple of 512. */
static const char copy_src[] =
    "extern \"C\" __global__ void __launch_bounds__(256) tune_peak_copy(const float4 *__restrict__ s,\n"
    "    float4 *__restrict__ d, long long n) {\n"
    "  long long i = (long long)blockIdx.x * 512 + threadIdx.x;\n"
    "  float4 a = s[i], b = s[i + 256];\n"
    "  d[i] = a; d[i + 256] = b;\n"
    "}\n";

static int compile_builtin(const char *name, const char *src, const char *arch, db_binary *bin, tune_err *err) {
  tune_compile_job job;
  memset(&job, 0, sizeof job);
  char path[96];
  snprintf(path, sizeof path, "%s.cu", name);
  job.source_path = path;
  job.source_text = src;
  job.include_root = ".";
  job.arch = arch;
  job.n_names = 1;
  job.names[0] = name;
  if (tune_compile_batch(&job, 1, 1, err)) return err->code;
  if (!job.bin.ok) {
    int rc = tune_fail(err, TUNE_EINTERNAL, "peaks: the built-in kernel %s does not compile: %s", name, job.bin.log ? job.bin.log : "");
    db_binary_release(&job.bin);
    return rc;
  }
  *bin = job.bin;
  return TUNE_OK;
}

int tune_peaks_ensure(db_conn *db, int64_t device_id, const db_device *dev, tune_backend *be, tune_peaks *out,
                      tune_err *err) {
  memset(out, 0, sizeof *out);
  if (dev->cc_major == 9 && dev->sm_clock_khz > 0)
    out->tensor_bound = 4096.0 * dev->sm_count * dev->sm_clock_khz * 1e3 / 1e12;
  out->tensor_TFLOPs = out->tensor_bound;
  tune_err e;
  tune_err_clear(&e);
  db_binary bin;
  /* matrix throughput: recorded, else measured where the backend can (Hopper) */
  int rc = db_peak_get(db, device_id, "bf16_dense_TFLOPs", &out->tensor_TFLOPs, &e);
  if (rc == TUNE_OK) out->tensor_measured = 1;
  else if (rc != TUNE_ENOTFOUND) return tune_fail(err, rc, "%s", e.msg);
  else {
    out->tensor_TFLOPs = out->tensor_bound;
    if (be && be->measure_mma_peak && dev->cc_major == 9) {
      if (compile_builtin("tune_peak_mma", tune_peak_mma_source(), "sm_90a", &bin, err)) return err->code;
      rc = be->measure_mma_peak(be, &bin, "tune_peak_mma", &out->tensor_TFLOPs, err);
      db_binary_release(&bin);
      if (rc) return rc;
      out->tensor_measured = 1;
      if (db_peak_put(db, device_id, "bf16_dense_TFLOPs", out->tensor_TFLOPs,
                      "TFLOP/s (tune_peak_mma: wgmma m64n256k16 bf16->fp32 from shared memory, one block of two warpgroups per SM, best of 10)", err))
        return err->code;
    }
  }
  tune_err_clear(&e);
  rc = db_peak_get(db, device_id, "copy_GBps", &out->copy_GBps, &e);
  if (rc == TUNE_OK) return TUNE_OK;
  if (rc != TUNE_ENOTFOUND) return tune_fail(err, rc, "%s", e.msg);
  if (!be || !be->measure_copy_peak) return TUNE_OK; /* replay: judged when recorded */
  if (compile_builtin("tune_peak_copy", copy_src, dev->arch, &bin, err)) return err->code;
  rc = be->measure_copy_peak(be, &bin, "tune_peak_copy", &out->copy_GBps, err);
  db_binary_release(&bin);
  if (rc) return rc;
  if (db_peak_put(db, device_id, "copy_GBps", out->copy_GBps, "GB/s (1 GiB device copy, read+write, best of 20)", err))
    return err->code;
  if (out->tensor_bound > 0 &&
      db_peak_put(db, device_id, "bf16_dense_TFLOPs_bound", out->tensor_bound,
                  "TFLOP/s (computed: 4096 FLOP/clk/SM x SMs x max SM clock)", err))
    return err->code;
  return TUNE_OK;
}

int tune_peaks_judge(const tune_peaks *p, double bytes, double flops, double mma_rate, double median_ns, char *why,
                     size_t why_n) {
  if (median_ns <= 0) return DB_OK;
  double gbps = bytes / median_ns, tflops = flops / median_ns / 1e3, peak = p->tensor_TFLOPs * mma_rate;
  if (p->copy_GBps > 0 && bytes > 0 && gbps > 1.05 * p->copy_GBps) {
    snprintf(why, why_n, "%.0f GB/s exceeds the device's measured copy bandwidth (%.0f GB/s)", gbps, p->copy_GBps);
    return DB_SUSPICIOUS;
  }
  if (peak > 0 && flops > 0 && tflops > 1.05 * peak) {
    snprintf(why, why_n, "%.0f TFLOP/s exceeds the device's %s (%.0f TFLOP/s%s)", tflops,
             p->tensor_measured ? "measured matrix throughput" : "tensor-core bound", peak,
             mma_rate != 1 ? ", the bf16 figure scaled for the operands' precision" : "");
    return DB_SUSPICIOUS;
  }
  return DB_OK;
}
