// f16.cuh: gemm.cuh with fp16 a and b (fp32 accumulation, bf16 output, as the issue asks: bf16 or
// fp16 in, bf16 out), for the gemm.f16 recipes (recipes/gemm/f16.lua): all three paths of gemm.cuh
// with every knob, split-K included. Kernels gemm_f16 and gemm_splitk_reduce.
//
// fp16 and bf16 are both 16-bit: global loads, cp.async and TMA copies, shared-memory layouts,
// swizzles and ldmatrix move them alike (the tensor maps say FLOAT16: the recipe's arguments are
// f16). Only the tensor-core instructions read them as numbers, so this file includes gemm.cuh with
// the two that gemm_sm80.cuh and gemm_sm90.cuh issue (and the kernel's name) mapped by the
// preprocessor to their fp16 forms in common/mma.cuh and common/wgmma_ops.cuh; a and b keep their
// bf16-typed pointers in there, as raw 16-bit words. PATH 2 (the CUDA-core GEMV, gemv.cuh) converts its inputs itself, with
// __uint_as_float and __bfloat162float: for it those two are mapped to fp16 readings
// (gemm/f16_bits.cuh), after every header it uses is in, so that only gemv.cuh's text sees them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/mma.cuh"
#include "common/wgmma.cuh"

#include "gemm/f16_bits.cuh"

// the paths' calls (tune::mma_bf16_16816, tune::wgmma_ss_bf16) and the kernel's name, for what follows
#define mma_bf16_16816 mma_f16_16816
#define wgmma_ss_bf16 wgmma_ss_f16
#define gemm_bf16 gemm_f16
#if defined(PATH) && PATH == 2
#include "common/ld_stream.cuh"
#include "common/tma.cuh"
#define __uint_as_float tune_f16_top_to_float
#define __bfloat162float tune_f16_bits_to_float
#endif
#include "gemm/gemm.cuh"
