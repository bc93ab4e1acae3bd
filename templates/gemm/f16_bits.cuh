// f16_bits.cuh: fp16 readings of the 16-bit words that the bf16 templates convert, for the fp16
// wrappers (f16.cuh, gemv_rows_f16.cuh, reference_f16.cuh), which map the bf16 templates'
// conversions to these by the preprocessor so that those templates' text (and the source hashes of
// their recordings) stays as it is.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// __bfloat162float(x) of a bf16-typed element that holds fp16 bits
__device__ __forceinline__ float tune_f16_bits_to_float(__nv_bfloat16 x) {
  return __half2float(__ushort_as_half(__bfloat16_as_ushort(x)));
}

// The GEMVs (gemv.cuh, gemv_rows.cuh) take an element out of a 32-bit word of two as
// __uint_as_float(w << 16) (low element) or __uint_as_float(w & 0xffff0000) (high element): a bf16 is
// the top half of an fp32. Either way the element sits in the word's top 16 bits, so read as fp16
// those bits give it.
__device__ __forceinline__ float tune_f16_top_to_float(unsigned w) {
  return __half2float(__ushort_as_half((unsigned short)(w >> 16)));
}
