/* tunert_pack.h: the kernel parameter layout libtunert packs, which must be the
 * one the tuner's worker measured with (tuner/worker.c pack_args): every arg at
 * its natural alignment, in recipe order; a tensor is a device pointer (8
 * bytes), a scalar its dtype's size, a tensor map a CUtensorMap (128 bytes,
 * 64-byte aligned: docs/tensormap-args.md). Header-only and free of CUDA and
 * SQLite so that the runtime, `tune bundle` and the tests share one rule
 * (tests/unit/tunert_pack_test.c checks it against the worker's offsets). */
#ifndef TUNERT_PACK_H
#define TUNERT_PACK_H

#include <stdint.h>

#define TUNERT_PACK_TENSOR 0
#define TUNERT_PACK_SCALAR 1
#define TUNERT_PACK_TENSORMAP 2

/* Offsets of n args (kind[i] a TUNERT_PACK_*, scalar_size[i] the bytes of a
 * scalar's dtype, ignored for the others) into offset[]; returns the total
 * size in bytes. */
static inline uint32_t tunert_pack_layout(int n, const int *kind, const int *scalar_size, uint32_t *offset) {
  uint32_t off = 0;
  for (int i = 0; i < n; ++i) {
    uint32_t sz = kind[i] == TUNERT_PACK_TENSOR ? 8u : kind[i] == TUNERT_PACK_TENSORMAP ? 128u : (uint32_t)scalar_size[i];
    uint32_t align = kind[i] == TUNERT_PACK_TENSORMAP ? 64u : sz;
    off = (off + align - 1) / align * align;
    offset[i] = off;
    off += sz;
  }
  return off;
}

#endif
