/* inputs.c: random inputs and comparisons. */
#include "inputs.h"

#include <math.h>
#include <string.h>

static inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static inline double uniform01(uint64_t key) { return ((splitmix64(key) >> 11) + 0.5) * 0x1.0p-53; }

static inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
  return (uint16_t)(u >> 16);
}
static inline float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* fp8 e4m3 (OCP "fn": bias 7, no infinities, 0x7f NaN), round to nearest even, saturated at 448
 * (what a quantizer that clamps to the format's range stores). */
static uint8_t f64_to_e4m3(double v) {
  uint8_t sign = signbit(v) ? 0x80 : 0;
  double a = fabs(v);
  if (isnan(v)) return 0x7f;
  if (a >= 448.0) return sign | 0x7e;
  if (a < 0x1p-6) return sign | (uint8_t)nearbyint(a * 0x1p9); /* subnormal steps of 2^-9; 8 is 2^-6 */
  int e;
  double m = frexp(a, &e) * 2.0 - 1.0; /* a = (1 + m) * 2^(e - 1) */
  double q = nearbyint(m * 8.0);
  if (q == 8.0) { q = 0; ++e; }
  uint8_t bits = (uint8_t)(((e - 1 + 7) << 3) | (int)q);
  return sign | (bits > 0x7e ? 0x7e : bits);
}
static double e4m3_to_f64(uint8_t b) {
  int ex = (b >> 3) & 15, m = b & 7;
  double a;
  if ((b & 0x7f) == 0x7f) return NAN;
  a = ex ? ldexp(1.0 + m / 8.0, ex - 7) : ldexp(m, -9);
  return (b & 0x80) ? -a : a;
}

static void store(tune_dtype t, void *dst, int64_t i, double v) {
  switch (t) {
  case TUNE_F32: ((float *)dst)[i] = (float)v; break;
  case TUNE_F64: ((double *)dst)[i] = v; break;
  case TUNE_F16: ((_Float16 *)dst)[i] = (_Float16)v; break;
  case TUNE_BF16: ((uint16_t *)dst)[i] = f32_to_bf16((float)v); break;
  case TUNE_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
  case TUNE_I64: ((int64_t *)dst)[i] = (int64_t)v; break;
  case TUNE_E4M3: ((uint8_t *)dst)[i] = f64_to_e4m3(v); break;
  }
}

double tune_inputs_get(tune_dtype t, const void *buf, int64_t i) {
  switch (t) {
  case TUNE_F32: return ((const float *)buf)[i];
  case TUNE_F64: return ((const double *)buf)[i];
  case TUNE_F16: return (double)((const _Float16 *)buf)[i];
  case TUNE_BF16: return bf16_to_f32(((const uint16_t *)buf)[i]);
  case TUNE_I32: return ((const int32_t *)buf)[i];
  case TUNE_I64: return (double)((const int64_t *)buf)[i];
  case TUNE_E4M3: return e4m3_to_f64(((const uint8_t *)buf)[i]);
  }
  return NAN;
}

double tune_inputs_round_var(tune_dtype t, const void *buf, int64_t i) {
  uint64_t bits = 0; /* the magnitude's bits */
  int shift = 0, bias = 0;
  switch (t) {
  case TUNE_F32: { uint32_t u; memcpy(&u, (const char *)buf + 4 * i, 4); bits = u & 0x7fffffffu; shift = 23; bias = 150; break; }
  case TUNE_F16: bits = ((const uint16_t *)buf)[i] & 0x7fffu; shift = 10; bias = 25; break;
  case TUNE_BF16: bits = ((const uint16_t *)buf)[i] & 0x7fffu; shift = 7; bias = 134; break;
  case TUNE_F64: memcpy(&bits, (const char *)buf + 8 * i, 8); bits &= 0x7fffffffffffffffull; shift = 52; bias = 1075; break;
  case TUNE_E4M3: bits = ((const uint8_t *)buf)[i] & 0x7fu; shift = 3; bias = 10; break;
  case TUNE_I32: case TUNE_I64: return 0;
  }
  if (!bits) return 0;
  int e = (int)(bits >> shift);
  double ulp = ldexp(1.0, (e ? e : 1) - bias); /* subnormals: the smallest exponent's */
  /* a power of two above the smallest normal gathers a quarter ulp below it (the binade below has
     half its ulp) and half an ulp above: a mean square of ulp^2 / 16, not / 12 */
  int pow2 = e > 1 && !(bits & ((1ull << shift) - 1));
  return ulp * ulp / (pow2 ? 16.0 : 12.0);
}

static void fill_range(const tune_arg_def *def, uint64_t base, int64_t lo, int64_t hi, void *dst);

/* numel - 1 parts of min_part plus a share of the rest weighted by u^3 (u uniform): most parts short,
 * a few long. Prefix sums from 0 to exactly total (the recipe checked parts * min_part <= total). */
static void fill_offsets(const tune_arg_def *def, int64_t numel, uint64_t base, void *dst) {
  int64_t parts = numel - 1, total = (int64_t)def->init_a, min_part = (int64_t)def->init_b;
  double spare = (double)(total - parts * min_part), wsum = 0, w = 0;
  for (int64_t i = 0; i < parts; ++i) { double u = uniform01(base + (uint64_t)i); wsum += u * u * u; }
  store(def->dtype, dst, 0, 0);
  for (int64_t i = 0; i < parts; ++i) {
    double u = uniform01(base + (uint64_t)i);
    w += u * u * u;
    int64_t o = (i + 1) * min_part + (i + 1 == parts ? (int64_t)spare : (int64_t)floor(spare * (w / wsum)));
    store(def->dtype, dst, i + 1, (double)o);
  }
}

uint64_t tune_inputs_base(uint64_t seed, int arg_index) {
  return splitmix64(seed ^ splitmix64((uint64_t)arg_index + 1));
}

int tune_inputs_elementwise(tune_init init) { return init != TUNE_INIT_PERMUTATION && init != TUNE_INIT_OFFSETS; }

void tune_inputs_fill(const tune_arg_def *def, int64_t numel, uint64_t seed, int arg_index, void *dst) {
  uint64_t base = tune_inputs_base(seed, arg_index);
  if (def->init == TUNE_INIT_PERMUTATION) {
    for (int64_t i = 0; i < numel; ++i) store(def->dtype, dst, i, (double)i);
    for (int64_t i = numel - 1; i > 0; --i) { /* Fisher-Yates */
      int64_t j = (int64_t)(splitmix64(base + (uint64_t)i) % (uint64_t)(i + 1));
      double a = tune_inputs_get(def->dtype, dst, i), b = tune_inputs_get(def->dtype, dst, j);
      store(def->dtype, dst, i, b);
      store(def->dtype, dst, j, a);
    }
    return;
  }
  if (def->init == TUNE_INIT_OFFSETS) {
    fill_offsets(def, numel, base, dst);
    return;
  }
  fill_range(def, base, 0, numel, dst);
}

/* Elements [lo, hi) of the tensor; element i depends only on (base, i). */
static void fill_range(const tune_arg_def *def, uint64_t base, int64_t lo, int64_t hi, void *dst) {
  for (int64_t i = lo; i < hi; ++i) {
    uint64_t k = base + 2 * (uint64_t)i;
    double v;
    switch (def->init) {
    case TUNE_INIT_NORMAL: {
      double u1 = uniform01(k), u2 = uniform01(k + 1);
      v = def->init_a + def->init_b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
      break;
    }
    case TUNE_INIT_RANDINT: {
      long long rlo = (long long)def->init_a, rhi = (long long)def->init_b;
      v = (double)(rlo + (long long)(splitmix64(k) % (uint64_t)(rhi - rlo + 1)));
      break;
    }
    case TUNE_INIT_WIDE: /* 2^u, u uniform in [lo, hi], the sign from the element's second draw */
      v = exp2(def->init_a + (def->init_b - def->init_a) * uniform01(k)) * ((splitmix64(k + 1) & 1) ? -1.0 : 1.0);
      break;
    default: v = def->init_a + (def->init_b - def->init_a) * uniform01(k); break;
    }
    store(def->dtype, dst, i, v);
  }
}
