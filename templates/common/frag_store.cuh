// frag_store.cuh: storing tensor-core accumulator fragments as whole 16-byte chunks. In the mma and
// wgmma fp32 fragment layouts (common/wgmma.cuh) the four lanes of a quad hold, for each 8-column
// chunk, one 2-column word each; storing those words directly writes 8 rows x 16 bytes per warp
// store and half-fills 32-byte sectors. quad_transpose regroups four chunks' words so that each lane
// holds one whole chunk (16 contiguous bytes), a warp store then covering whole sectors.
// Used by the fp8 GEMM epilogue (templates/gemm/fp8_sm90.cuh).
#pragma once

namespace tune {

// Lane q (of 4) holds w[p] = word q of 8-column chunk p (columns 2q, 2q + 1); after the call,
// w[p] = word p of chunk q, i.e. the lane holds chunk q's 8 columns. Two butterfly steps (lane bits
// 2 and 1), each swapping the 2 x 2 blocks off the diagonal: 4 shuffles. Every lane of the warp
// must call it (a lane with nothing to store still shuffles).
__device__ __forceinline__ void quad_transpose(unsigned (&w)[4], int q) {
#pragma unroll
  for (int bit = 2; bit >= 1; bit >>= 1) {
    const bool hi = q & bit;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (i & bit) continue;  // pairs (i, i + bit)
      const unsigned r = __shfl_xor_sync(0xffffffffu, hi ? w[i] : w[i + bit], bit);
      if (hi) w[i] = r;
      else w[i + bit] = r;
    }
  }
}

}  // namespace tune
