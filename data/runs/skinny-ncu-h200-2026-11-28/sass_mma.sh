#!/usr/bin/env bash
# What mma.sync m16n8k32 e4m3 (common/mma_fp8.cuh) and m16n8k16 bf16 (common/mma.cuh) become in sm_90a SASS
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
T=/tmp/sass; mkdir -p $T
cat > $T/k.cu <<'CU'
#include "common/mma.cuh"
#include "common/mma_fp8.cuh"
extern "C" __global__ void fp8(float *c, const unsigned *a, const unsigned *b) {
  float d[4] = {0, 0, 0, 0}; unsigned x[4] = {a[0], a[1], a[2], a[3]};
  tune::mma_e4m3_16832(d, x, b[0], b[1]);
  for (int i = 0; i < 4; ++i) c[i] = d[i];
}
extern "C" __global__ void bf16(float *c, const unsigned *a, const unsigned *b) {
  float d[4] = {0, 0, 0, 0}; unsigned x[4] = {a[0], a[1], a[2], a[3]};
  tune::mma_bf16_16816(d, x, b[0], b[1]);
  for (int i = 0; i < 4; ++i) c[i] = d[i];
}
CU
/usr/local/cuda/bin/nvcc -arch=sm_90a -cubin -I templates -o $T/k.cubin $T/k.cu && /usr/local/cuda/bin/cuobjdump -sass $T/k.cubin > $OUT/sass_mma.txt
grep -E "Function|MMA|F2FP|PRMT|I2F|HADD|F2F" $OUT/sass_mma.txt | sed 's#/\*[0-9a-f]*\*/##' | head -40
