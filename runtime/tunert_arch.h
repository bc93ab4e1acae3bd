/* tunert_arch.h: which binary of a bundle runs on which GPU, the one rule shared by libtunert
 * (choosing a variant's binary at open) and `tune bundle` (saying, per requested architecture,
 * which variants a device of it can run).
 *
 * Names: "sm_90a" is a cubin, "compute_90" PTX; the suffix 'a' marks arch-specific code
 * (wgmma, setmaxnreg, tcgen05), which runs only on that exact compute capability, as a cubin or
 * as PTX. Header-only, no state, no allocation. */
#ifndef TUNERT_ARCH_H
#define TUNERT_ARCH_H

#include <stdlib.h>
#include <string.h>

/* Parse "sm_90a" / "compute_80": 0, or -1 when not such a name. */
static inline int tunert_arch_parse(const char *s, int *is_ptx, int *major, int *minor, int *specific) {
  const char *d;
  if (!strncmp(s, "sm_", 3)) { *is_ptx = 0; d = s + 3; }
  else if (!strncmp(s, "compute_", 8)) { *is_ptx = 1; d = s + 8; }
  else return -1;
  int n = 0;
  while (d[n] >= '0' && d[n] <= '9') ++n;
  if (n < 2 || n > 3) return -1;
  int v = atoi(d);
  *major = v / 10;
  *minor = v % 10;
  *specific = d[n] == 'a';
  if (d[n] && !(d[n] == 'a' && !d[n + 1])) return -1;
  return 0;
}

/* How well a binary suits a device of compute capability dev_major.dev_minor: -1 it cannot run
 * there; else higher is better: a cubin of exactly that capability (arch-specific first), a
 * cubin of the same major and a lower minor (not arch-specific), then the newest PTX the driver
 * can JIT (compute_XY with XY <= the device; arch-specific PTX on exactly its capability only). */
static inline int tunert_binary_rank(int is_ptx, int major, int minor, int specific, int dev_major, int dev_minor) {
  if (!is_ptx) {
    if (major == dev_major && minor == dev_minor) return specific ? 1000 : 999;
    if (!specific && major == dev_major && minor < dev_minor) return 900 + minor;
    return -1;
  }
  if (specific) return major == dev_major && minor == dev_minor ? 500 : -1;
  if (major < dev_major || (major == dev_major && minor <= dev_minor)) return 100 + major * 10 + minor;
  return -1;
}

#endif
