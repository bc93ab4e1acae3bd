// gemv_rows_f16.cuh: gemv_rows.cuh (row-major b, M <= 8, K split over a cluster) with fp16 a and b,
// fp32 accumulation, bf16 output, for recipes/gemm/f16.lua's gemm.f16.gemv_rows. Kernel gemv_rows_f16.
// gemv_rows.cuh reads its inputs as 32-bit words of two elements and converts them with
// __uint_as_float (f16_bits.cuh says why that mapping is exact); its headers come first, so the
// mapping reaches only its own text.
#include "common/cluster.cuh"
#include "common/ld_stream.cuh"
#include "common/tma.cuh"
#include "gemm/f16_bits.cuh"

#define __uint_as_float tune_f16_top_to_float
#define gemv_rows gemv_rows_f16
#include "gemm/gemv_rows.cuh"
