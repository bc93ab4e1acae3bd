/* peaks_judge_test: tune_peaks_judge (tuner/peaks.c), the rule that stores a result whose bytes or
 * flops per second exceed the device's limits as suspicious: the copy's 5 % for bytes, or the DRAM
 * bound where that is higher, and the matrix peak scaled for 8-bit operands. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "db.h"
#include "peaks.h"

/* an H200's figures: copy 4118 GB/s measured, DRAM 2 x 3201 MHz x 6016 bits = 4815 GB/s */
static tune_peaks h200(void) {
  tune_peaks p;
  memset(&p, 0, sizeof p);
  p.copy_GBps = 4118;
  p.dram_GBps = 4815;
  p.tensor_TFLOPs = 962;
  return p;
}

static int judge(const tune_peaks *p, double bytes, double flops, double mma_rate, double ns, char *why) {
  return tune_peaks_judge(p, bytes, flops, mma_rate, ns, why, 256);
}

static void test_bytes(void) {
  tune_peaks p = h200();
  char why[256];
  /* a read-mostly stream past the copy's 5 % but under the DRAM bound (an MoE decode reading 7.5 GB of
     expert weights at 4.35 TB/s) is a result, not an error */
  CHECK(judge(&p, 7.52e9, 0, 1, 1.729e6, why) == DB_OK);
  /* past the DRAM bound: suspicious, and the reason names the bound and the copy */
  CHECK(judge(&p, 7.52e9, 0, 1, 1.50e6, why) == DB_SUSPICIOUS);
  CHECK(strstr(why, "DRAM bound (4815 GB/s") != NULL && strstr(why, "copy 4118 GB/s") != NULL);
  /* without the DRAM figure (an older database's device row) the copy's 5 % is the limit */
  p.dram_GBps = 0;
  CHECK(judge(&p, 7.52e9, 0, 1, 1.729e6, why) == DB_SUSPICIOUS);
  CHECK(strstr(why, "measured copy bandwidth (4118 GB/s)") != NULL);
  CHECK(judge(&p, 7.52e9, 0, 1, 1.80e6, why) == DB_OK);
  /* no copy measured (replay of a recording made without one): bytes are not judged */
  p.copy_GBps = 0;
  CHECK(judge(&p, 7.52e9, 0, 1, 1.0e3, why) == DB_OK);
}

static void test_flops(void) {
  tune_peaks p = h200();
  char why[256];
  /* 2 * 4096^3 flops in 150 us = 916 TFLOP/s: under the bf16 peak; in 120 us (1145) over it by more than 5 % */
  const double f = 2.0 * 4096 * 4096 * 4096;
  CHECK(judge(&p, 0, f, 1, 150e3, why) == DB_OK);
  CHECK(judge(&p, 0, f, 1, 120e3, why) == DB_SUSPICIOUS);
  /* 8-bit operands run at twice the rate: the same time is fine with mma_rate 2 */
  CHECK(judge(&p, 0, f, 2, 120e3, why) == DB_OK);
}

int main(void) {
  test_bytes();
  test_flops();
  printf("peaks_judge_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
