/* inputs_test: the fp8 e4m3 conversion, the "offsets" and "wide" inits and the expected rounding
 * error (tune_inputs_round_var) of tuner/inputs.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "inputs.h"

static uint8_t e4m3_of(double v) {
  tune_arg_def d = {.name = "x", .is_tensor = 1, .dtype = TUNE_E4M3, .init = TUNE_INIT_UNIFORM, .init_a = v, .init_b = v};
  uint8_t b = 0;
  tune_inputs_fill(&d, 1, 1, 0, &b);
  return b;
}

static void test_e4m3(void) {
  /* every code but the two NaNs decodes to a value that encodes back to the same code */
  int round_trips = 1;
  for (int c = 0; c < 256; ++c) {
    uint8_t b = (uint8_t)c;
    double v = tune_inputs_get(TUNE_E4M3, &b, 0);
    if ((c & 0x7f) == 0x7f) { CHECK(isnan(v)); continue; }
    if (e4m3_of(v) != b && !(v == 0 && c == 0x80)) round_trips = 0;
  }
  CHECK(round_trips);
  uint8_t b = 0x7e;
  CHECK(tune_inputs_get(TUNE_E4M3, &b, 0) == 448.0);
  b = 0x01;
  CHECK(tune_inputs_get(TUNE_E4M3, &b, 0) == ldexp(1, -9)); /* smallest subnormal */
  CHECK(e4m3_of(1000.0) == 0x7e && e4m3_of(-1000.0) == 0xfe); /* saturated, never NaN */
  CHECK(e4m3_of(1.0) == 0x38);
  CHECK(e4m3_of(1.0625) == 0x38);  /* halfway between 1 and 1.125: to the even mantissa */
  CHECK(e4m3_of(1.1875) == 0x3a);  /* halfway between 1.125 and 1.25: to 1.25 */
  CHECK(e4m3_of(0.0078125 * 0.99) == 0x08 || e4m3_of(0.0078125 * 0.99) == 0x04); /* near 2^-7 */
  CHECK(e4m3_of(ldexp(1, -6) * 0.999) == 0x08); /* rounds up into the smallest normal */
}

static void test_offsets(void) {
  enum { N = 65 };
  int32_t o[N], o2[N];
  tune_arg_def d = {.name = "cu", .is_tensor = 1, .dtype = TUNE_I32, .init = TUNE_INIT_OFFSETS, .init_a = 100000, .init_b = 16};
  tune_inputs_fill(&d, N, 5, 2, o);
  CHECK(o[0] == 0 && o[N - 1] == 100000);
  int monotone = 1, longest = 0, shortest = 1 << 30;
  for (int i = 1; i < N; ++i) {
    int part = o[i] - o[i - 1];
    if (part < 16) monotone = 0;
    if (part > longest) longest = part;
    if (part < shortest) shortest = part;
  }
  CHECK(monotone);
  CHECK(longest > 3 * (100000 / (N - 1)));   /* skewed: a few parts far above the mean */
  CHECK(shortest < (100000 / (N - 1)) / 3);  /* and many far below */
  tune_inputs_fill(&d, N, 5, 2, o2);
  CHECK(!memcmp(o, o2, sizeof o));           /* same seed, same offsets */
  tune_inputs_fill(&d, N, 6, 2, o2);
  CHECK(memcmp(o, o2, sizeof o) != 0);
  /* min_part * parts == total: every part exactly min_part */
  tune_arg_def e = d;
  e.init_a = 64 * 16;
  tune_inputs_fill(&e, N, 5, 2, o);
  int exact = 1;
  for (int i = 0; i < N; ++i) if (o[i] != 16 * i) exact = 0;
  CHECK(exact);
}

/* v stored in dtype t, as the inputs' conversion rounds it (to nearest even) */
static void store_as(tune_dtype t, double v, void *dst) {
  tune_arg_def d = {.name = "x", .is_tensor = 1, .dtype = t, .init = TUNE_INIT_UNIFORM, .init_a = v, .init_b = v};
  tune_inputs_fill(&d, 1, 1, 0, dst);
}

static double round_var_of(tune_dtype t, double v) {
  unsigned char b[8] = {0};
  store_as(t, v, b);
  return tune_inputs_round_var(t, b, 0);
}

/* The honest error's ingredient: ulp^2 / 12 at known values, and, summed over many values of
 * continuous magnitude rounded to each narrow dtype, the actual squared rounding error. */
static void test_round_var(void) {
  CHECK(round_var_of(TUNE_BF16, 1.5) == ldexp(1, -14) / 12);   /* ulp 2^-7 */
  CHECK(round_var_of(TUNE_BF16, -3.0) == ldexp(1, -12) / 12);  /* 2^-6 in [2, 4), sign ignored */
  CHECK(round_var_of(TUNE_BF16, 2.0) == ldexp(1, -12) / 16);   /* a power of two: a quarter ulp below */
  CHECK(round_var_of(TUNE_F16, 1.5) == ldexp(1, -20) / 12);    /* ulp 2^-10 */
  CHECK(round_var_of(TUNE_F16, ldexp(1, -20)) == ldexp(1, -48) / 12); /* subnormal: ulp 2^-24 */
  CHECK(round_var_of(TUNE_F16, ldexp(1, -14)) == ldexp(1, -48) / 12); /* smallest normal: as the subnormals */
  CHECK(round_var_of(TUNE_E4M3, 1.25) == ldexp(1, -6) / 12);   /* ulp 2^-3 */
  CHECK(round_var_of(TUNE_E4M3, 448.0) == ldexp(1, 10) / 12);  /* ulp 2^5 at the top */
  CHECK(round_var_of(TUNE_E4M3, ldexp(3, -9)) == ldexp(1, -18) / 12); /* subnormal: ulp 2^-9 */
  CHECK(round_var_of(TUNE_F32, 1.5) == ldexp(1, -46) / 12);
  CHECK(round_var_of(TUNE_F64, 1.5) == ldexp(1, -104) / 12);
  CHECK(round_var_of(TUNE_BF16, 0.0) == 0 && round_var_of(TUNE_E4M3, -0.0) == 0); /* a zero is exact */
  CHECK(round_var_of(TUNE_I32, 5) == 0 && round_var_of(TUNE_I64, 5) == 0);
  /* normal(0, 4) values (a smooth density, as outputs have), drawn as f64 by the inputs' generator */
  enum { N = 200000 };
  static double x[N];
  tune_arg_def d = {.name = "x", .is_tensor = 1, .dtype = TUNE_F64, .init = TUNE_INIT_NORMAL, .init_a = 0, .init_b = 4};
  tune_inputs_fill(&d, N, 11, 0, x);
  const tune_dtype narrow[] = {TUNE_BF16, TUNE_F16, TUNE_E4M3};
  for (int k = 0; k < 3; ++k) {
    double actual = 0, expected = 0;
    for (int i = 0; i < N; ++i) {
      unsigned char b[8] = {0};
      store_as(narrow[k], x[i], b);
      double r = tune_inputs_get(narrow[k], b, 0);
      actual += (r - x[i]) * (r - x[i]);
      expected += tune_inputs_round_var(narrow[k], b, 0);
    }
    double ratio = actual / expected;
    if (fabs(ratio - 1) > 0.03) fprintf(stderr, "  %s: actual / expected squared rounding error %.3f\n", tune_dtype_name(narrow[k]), ratio);
    CHECK(fabs(ratio - 1) < 0.03);
  }
}

/* "wide": |x| = 2^u, u uniform in [lo, hi]: inside the range, both signs, the exponents spread
 * evenly, the same values for a seed and others for another seed. */
static void test_wide(void) {
  enum { N = 1 << 16 };
  static float x[N], y[N];
  static uint16_t h[N];
  tune_arg_def d = {.name = "w", .is_tensor = 1, .dtype = TUNE_F32, .init = TUNE_INIT_WIDE, .init_a = -20, .init_b = 12};
  tune_inputs_fill(&d, N, 9, 1, x);
  int inside = 1, neg = 0, above_one = 0, low = 0, high = 0;
  for (int i = 0; i < N; ++i) {
    double a = fabs(x[i]), e = log2(a);
    inside &= a >= ldexp(1, -20) && a <= ldexp(1, 12);
    neg += x[i] < 0;
    above_one += a > 1;
    low += e < -16;   /* the lowest 4 of 32 binades */
    high += e >= 8;   /* the highest 4 */
  }
  CHECK(inside);
  CHECK(abs(neg - N / 2) < N / 50);
  CHECK(abs(above_one - N * 12 / 32) < N / 50);        /* 12 of the 32 binades are above 1 */
  CHECK(abs(low - N / 8) < N / 50 && abs(high - N / 8) < N / 50);
  tune_inputs_fill(&d, N, 9, 1, y);
  CHECK(memcmp(x, y, sizeof x) == 0);                   /* deterministic per seed */
  tune_inputs_fill(&d, N, 10, 1, y);
  int same = 0;
  for (int i = 0; i < N; ++i) same += x[i] == y[i];
  CHECK(same < N / 100);                                /* another seed, other values */
  /* bf16: rounded, still inside the range (its ends are powers of two, exact in bf16) */
  tune_arg_def b = {.name = "w", .is_tensor = 1, .dtype = TUNE_BF16, .init = TUNE_INIT_WIDE, .init_a = -100, .init_b = 100};
  tune_inputs_fill(&b, N, 9, 1, h);
  double lo = 1e300, hi = 0;
  for (int i = 0; i < N; ++i) {
    double a = fabs(tune_inputs_get(TUNE_BF16, h, i));
    lo = a < lo ? a : lo;
    hi = a > hi ? a : hi;
  }
  CHECK(lo >= ldexp(1, -100) && lo < ldexp(1, -98) && hi <= ldexp(1, 100) && hi > ldexp(1, 98));
}

int main(void) {
  test_e4m3();
  test_offsets();
  test_round_var();
  test_wide();
  printf("inputs_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
