// reference_f16.cuh: gemm/reference.cuh (fp32 accumulation in k order, one thread per output, bf16
// output) reading a and b as fp16: its bf16-to-float conversion of the inputs is mapped to an fp16
// one by the preprocessor, so that reference.cuh, which the bf16 recordings hash, stays as it is.
#include "gemm/f16_bits.cuh"
#define __bfloat162float tune_f16_bits_to_float
#include "gemm/reference.cuh"
