/* inputs_test: the fp8 e4m3 conversion and the "offsets" init of tuner/inputs.c. */
#include <math.h>
#include <stdint.h>
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

int main(void) {
  test_e4m3();
  test_offsets();
  printf("inputs_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
