/* peaks.c: measured and computed device limits. */
#include "peaks.h"

#include <stdlib.h>
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

static const char mma_name[] = "tune_peak_mma";

static void builtin_job(tune_compile_job *job, const char *file, const char *name, const char *src, const char *arch) {
  memset(job, 0, sizeof *job);
  job->source_path = file; /* a name: the text is source_text */
  job->source_text = src;
  job->include_root = ".";
  job->arch = arch;
  job->n_names = 1;
  job->names[0] = name;
}

/* job's binary into *bin, or an error when NVRTC refused the built-in kernel. */
static int take_builtin(tune_compile_job *job, db_binary *bin, tune_err *err) {
  if (!job->bin.ok) {
    int rc = tune_fail(err, TUNE_EINTERNAL, "peaks: the built-in kernel %s does not compile: %s", job->names[0],
                       job->bin.log ? job->bin.log : "");
    db_binary_release(&job->bin);
    return rc;
  }
  *bin = job->bin;
  memset(&job->bin, 0, sizeof job->bin);
  return TUNE_OK;
}

/* The matrix kernel's job: wgmma, so sm_90a whatever the device (only Hopper measures it). */
static void mma_job(tune_compile_job *job) {
  builtin_job(job, "tune_peak_mma.cu", mma_name, tune_peak_mma_source(), "sm_90a");
}

static int compile_job(tune_compile_job *job, db_binary *bin, tune_err *err) {
  if (tune_compile_batch(job, 1, 1, err)) return err->code;
  return take_builtin(job, bin, err);
}

struct tune_peaks_ahead {
  tune_compile_job job;
  tune_compile_job *jobs[1];
  tune_compile_async *pool;
};

int tune_peaks_compile_ahead(db_conn *db, tune_peaks_ahead **out, tune_err *err) {
  *out = NULL;
  int64_t n = 0;
  /* the copy limit is measured on every device: a database without one has never measured (a
     database that has seldom meets a new GPU), and one whose GPU cannot run the matrix kernel
     pays for the wasted compile once, not on every run */
  if (db_peak_devices(db, "copy_GBps", &n, err)) return err->code;
  if (n > 0) return TUNE_OK;
  tune_peaks_ahead *a = calloc(1, sizeof *a);
  if (!a) return tune_fail(err, TUNE_ENOMEM, "peaks: out of memory");
  mma_job(&a->job);
  a->jobs[0] = &a->job;
  if (tune_compile_start(a->jobs, 1, 1, &a->pool, err)) {
    free(a);
    return err->code;
  }
  *out = a;
  return TUNE_OK;
}

void tune_peaks_ahead_free(tune_peaks_ahead *a) {
  if (!a) return;
  tune_compile_finish(a->pool);
  db_binary_release(&a->job.bin);
  free(a);
}

/* The matrix kernel's binary: the one compiled ahead when there is one, else compiled now. */
static int mma_binary(tune_peaks_ahead *ahead, db_binary *bin, tune_err *err) {
  if (!ahead || !ahead->pool) {
    tune_compile_job job;
    mma_job(&job);
    return compile_job(&job, bin, err);
  }
  int rc = tune_compile_wait(ahead->pool, 0, NULL, err);
  tune_compile_finish(ahead->pool);
  ahead->pool = NULL;
  return rc ? rc : take_builtin(&ahead->job, bin, err);
}

int tune_peaks_ensure(db_conn *db, int64_t device_id, const db_device *dev, tune_backend *be, tune_peaks_ahead *ahead,
                      tune_peaks *out, tune_err *err) {
  memset(out, 0, sizeof *out);
  if (dev->mem_clock_khz > 0 && dev->mem_bus_bits > 0)  /* double data rate: two transfers per clock */
    out->dram_GBps = 2.0 * dev->mem_clock_khz * 1e3 * (dev->mem_bus_bits / 8) / 1e9;
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
      if (mma_binary(ahead, &bin, err)) return err->code;
      rc = be->measure_mma_peak(be, &bin, mma_name, &out->tensor_TFLOPs, err);
      db_binary_release(&bin);
      if (rc) return rc;
      out->tensor_measured = out->measured_now = 1;
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
  tune_compile_job job;
  builtin_job(&job, "tune_peak_copy.cu", "tune_peak_copy", copy_src, dev->arch);
  if (compile_job(&job, &bin, err)) return err->code;
  rc = be->measure_copy_peak(be, &bin, "tune_peak_copy", &out->copy_GBps, err);
  db_binary_release(&bin);
  if (rc) return rc;
  out->measured_now = 1;
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
  const int dram_limits = p->dram_GBps > 1.05 * p->copy_GBps;  /* the DRAM bound is the higher limit */
  if (p->copy_GBps > 0 && bytes > 0 && gbps > (dram_limits ? p->dram_GBps : 1.05 * p->copy_GBps)) {
    if (dram_limits)
      snprintf(why, why_n, "%.0f GB/s exceeds the device's DRAM bound (%.0f GB/s: 2 x memory clock x bus width; "
               "measured copy %.0f GB/s)", gbps, p->dram_GBps, p->copy_GBps);
    else
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
