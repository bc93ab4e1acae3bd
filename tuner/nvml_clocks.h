/* nvml_clocks.h: SM and memory clocks during a measurement (worker only).
 *
 * libnvidia-ml is opened with dlopen, like libcuda: a machine without it (or
 * a container that hides it) still measures, and each result then stores -1
 * for its clocks. The few NVML entry points are declared here because the
 * toolkit ships no nvml.h; they are part of NVML's stable C ABI. */
#ifndef TUNE_NVML_CLOCKS_H
#define TUNE_NVML_CLOCKS_H

#include <stdint.h>

typedef struct tune_clocks {
  int sm_mhz;          /* -1 unknown */
  int mem_mhz;         /* -1 unknown */
  uint64_t reasons;    /* NVML clock event (throttle) reasons, OR-ed over samples */
  int power_w;         /* board power draw [W]; a summary keeps the highest; 0 unknown */
} tune_clocks;

/* Open NVML for the GPU with this UUID ("GPU-xxxxxxxx-..."). 0: available. */
int tune_nvml_open(const char *uuid);
/* One sample; fields -1 when NVML is unavailable. */
tune_clocks tune_nvml_sample(void);
/* Fold a sample into a running summary: the lowest SM and memory clocks seen
 * (a variant is only as fast as its slowest stretch), the highest power and
 * every reason. */
void tune_clocks_fold(tune_clocks *acc, tune_clocks s);
/* Reasons that mean the clock was lowered for a cause other than idling or
 * an application setting (power, thermal, sync boost, HW slowdown). */
uint64_t tune_clocks_throttled(uint64_t reasons);
/* "sw_power_cap,hw_slowdown" ... into buf. */
void tune_clocks_reason_names(uint64_t reasons, char *buf, int n);

#endif
