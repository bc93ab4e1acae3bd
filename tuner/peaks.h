/* peaks.h: the device's physical limits, against which results are judged.
 *
 * Both limits are measured once per device by tune's own kernels and kept in
 * the database's peaks table: copy bandwidth (two 16-byte vectors per thread,
 * 1 GiB, best of 20, bytes read + written) and, on Hopper, dense bf16 matrix
 * throughput (wgmma from shared memory, peak_mma.h, best of 10). Where the
 * matrix kernel cannot run (another arch, replay of an old recording) the
 * computed bound stands in: 4096 FLOP per clock per SM x SMs x the maximum SM
 * clock. A result faster than a limit by more than 5% (clock and timer
 * granularity) is `suspicious`. */
#ifndef TUNE_PEAKS_H
#define TUNE_PEAKS_H

#include "backend.h"
#include "db.h"

typedef struct tune_peaks {
  double copy_GBps;        /* measured, 0 when unknown */
  double dram_GBps;        /* the DRAM's bound, 2 x memory clock x bus width; 0 when unknown */
  double tensor_TFLOPs;    /* the matrix limit results are judged by: measured, else the bound */
  int tensor_measured;     /* 1: tensor_TFLOPs was measured by tune's kernel */
  double tensor_bound;     /* computed bound, 0 when unknown for this arch */
  int measured_now;        /* 1: tune_peaks_ensure measured a limit, 0: all came from the database */
} tune_peaks;

/* The matrix kernel compiled on a thread of its own while the caller starts its worker: its NVRTC
 * compile takes a large part of a second, and a database that has never measured the matrix
 * throughput would otherwise start it only after the worker is ready. *out is NULL
 * (nothing started) when the database has measured a device before. Free with
 * tune_peaks_ahead_free (NULL is a no-op), which waits for the compile. */
typedef struct tune_peaks_ahead tune_peaks_ahead;
int tune_peaks_compile_ahead(db_conn *db, tune_peaks_ahead **out, tune_err *err);
void tune_peaks_ahead_free(tune_peaks_ahead *ahead);

/* Read the device's peaks from the database, measuring what is not there yet
 * on the backend (cuda backends only), with the matrix kernel compiled ahead when ahead is not NULL. */
int tune_peaks_ensure(db_conn *db, int64_t device_id, const db_device *dev, tune_backend *be, tune_peaks_ahead *ahead,
                      tune_peaks *out, tune_err *err);

/* DB_SUSPICIOUS with a reason in why, or DB_OK. Bytes: above the measured copy by 5 %, or above the
 * DRAM's bound where that is higher (a kernel that mostly reads streams faster than a copy, whose
 * writes turn the bus around; nothing streams past the bound). The matrix peak is the bf16 one's;
 * mma_rate scales it for the operands' precision (2 for 8-bit operands, which tensor cores run at
 * twice the rate). */
int tune_peaks_judge(const tune_peaks *p, double bytes, double flops, double mma_rate, double median_ns, char *why,
                     size_t why_n);

#endif
