/* peaks.h: the device's physical limits, against which results are judged.
 *
 * Copy bandwidth is measured once per device by tune's own kernel (two
 * 16-byte vectors per thread, 1 GiB, best of 20, bytes read + written) and
 * kept in the database's peaks table. The dense bf16 tensor-core bound is
 * computed, not measured: 4096 FLOP per clock per SM (Hopper) x SMs x the
 * maximum SM clock, an upper bound no kernel can pass. A result faster than
 * either (with 5% slack for clock and timer granularity) is `suspicious`. */
#ifndef TUNE_PEAKS_H
#define TUNE_PEAKS_H

#include "backend.h"
#include "db.h"

typedef struct tune_peaks {
  double copy_GBps;        /* measured, 0 when unknown */
  double tensor_TFLOPs;    /* computed bound, 0 when unknown for this arch */
} tune_peaks;

/* Read the device's peaks from the database, measuring the copy bandwidth
 * on the backend when it is not there yet (cuda backends only). */
int tune_peaks_ensure(db_conn *db, int64_t device_id, const db_device *dev, tune_backend *be, tune_peaks *out,
                      tune_err *err);

/* DB_SUSPICIOUS with a reason in why, or DB_OK. */
int tune_peaks_judge(const tune_peaks *p, double bytes, double flops, double median_ns, char *why, size_t why_n);

#endif
