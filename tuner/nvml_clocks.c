/* nvml_clocks.c: clocks through NVML, opened with dlopen. */
#include "nvml_clocks.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int nvml_return;               /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device *nvml_device; /* nvmlDevice_t */
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

static struct {
  nvml_return (*init)(void);
  nvml_return (*by_uuid)(const char *, nvml_device *);
  nvml_return (*clock)(nvml_device, int, unsigned *);
  nvml_return (*reasons)(nvml_device, unsigned long long *);
  nvml_return (*power)(nvml_device, unsigned *); /* [mW] */
  nvml_device dev;
  int ok;
} nv;

int tune_nvml_open(const char *uuid) {
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
  *(void **)&nv.init = dlsym(h, "nvmlInit_v2");
  *(void **)&nv.by_uuid = dlsym(h, "nvmlDeviceGetHandleByUUID");
  *(void **)&nv.clock = dlsym(h, "nvmlDeviceGetClockInfo");
  /* renamed "clock event reasons" in newer drivers; the old name stays exported */
  *(void **)&nv.reasons = dlsym(h, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!nv.reasons) *(void **)&nv.reasons = dlsym(h, "nvmlDeviceGetCurrentClocksThrottleReasons");
  *(void **)&nv.power = dlsym(h, "nvmlDeviceGetPowerUsage");
  if (!nv.init || !nv.by_uuid || !nv.clock) return -1;
  if (nv.init() != 0 || nv.by_uuid(uuid, &nv.dev) != 0) return -1;
  nv.ok = 1;
  return 0;
}

tune_clocks tune_nvml_sample(void) {
  tune_clocks c = {-1, -1, 0, 0};
  unsigned v;
  unsigned long long r;
  if (!nv.ok) return c;
  if (nv.clock(nv.dev, NVML_CLOCK_SM, &v) == 0) c.sm_mhz = (int)v;
  if (nv.clock(nv.dev, NVML_CLOCK_MEM, &v) == 0) c.mem_mhz = (int)v;
  if (nv.reasons && nv.reasons(nv.dev, &r) == 0) c.reasons = r;
  if (nv.power && nv.power(nv.dev, &v) == 0) c.power_w = (int)((v + 500) / 1000);
  return c;
}

void tune_clocks_fold(tune_clocks *acc, tune_clocks s) {
  if (s.sm_mhz >= 0 && (acc->sm_mhz < 0 || s.sm_mhz < acc->sm_mhz)) acc->sm_mhz = s.sm_mhz;
  if (s.mem_mhz >= 0 && (acc->mem_mhz < 0 || s.mem_mhz < acc->mem_mhz)) acc->mem_mhz = s.mem_mhz;
  acc->reasons |= s.reasons;
  if (s.power_w > acc->power_w) acc->power_w = s.power_w;
}

/* nvmlClocksEventReasons bits (nvml.h of driver 5xx) */
static const struct { uint64_t bit; const char *name; int throttle; } reason_bits[] = {
    {0x1, "gpu_idle", 0},          {0x2, "applications_clocks", 0}, {0x4, "sw_power_cap", 1},
    {0x8, "hw_slowdown", 1},       {0x10, "sync_boost", 1},         {0x20, "sw_thermal", 1},
    {0x40, "hw_thermal", 1},       {0x80, "hw_power_brake", 1},     {0x100, "display_clocks", 0},
};

uint64_t tune_clocks_throttled(uint64_t reasons) {
  uint64_t t = 0;
  for (size_t i = 0; i < sizeof reason_bits / sizeof reason_bits[0]; ++i)
    if (reason_bits[i].throttle) t |= reason_bits[i].bit;
  return reasons & t;
}

void tune_clocks_reason_names(uint64_t reasons, char *buf, int n) {
  int len = 0;
  if (n > 0) buf[0] = 0;
  for (size_t i = 0; i < sizeof reason_bits / sizeof reason_bits[0] && len < n; ++i)
    if (reasons & reason_bits[i].bit)
      len += snprintf(buf + len, (size_t)(n - len), "%s%s", len ? "," : "", reason_bits[i].name);
}
