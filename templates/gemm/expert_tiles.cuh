// expert_tiles.cuh: where the rows of each expert of a grouped (Mixture-of-Experts) GEMM are, and how
// its output tiles are listed when the rows per expert change every call (device memory, read by the
// kernel; one launch configuration and one CUDA graph serve every routing).
//
//   ExpertRows<kMasked>  LAYOUT 0 (contiguous): rows of all experts sorted by expert, groups = offsets
//                        i32 [E + 1], expert e owns rows offsets[e] .. offsets[e + 1]; LAYOUT 1
//                        (masked): a capacity of M rows per expert, groups = counts i32 [E], rows
//                        e * M .. e * M + counts[e] (a count clamped to 0 .. M)
//   build_tile_table     every block's prefix sums of the experts' m tiles in shared memory
//   expert_of_tile       the expert of an m tile of the flattened list (binary search of the table)
//   expert_of_row        the expert of a row (the references' way: -1 for rows no expert owns)
//   zero_padding         masked: the rows past the counts of c, written with zeros by a grid's threads
// E <= kMaxExperts. Both grouped GEMMs (gemm/grouped_sm90.cuh bf16, gemm/grouped_fp8_sm90.cuh) and
// the references of both (the row's expert) use it.
#pragma once

#include <cuda_bf16.h>

namespace tune {

constexpr int kMaxExperts = 256;
constexpr int kTileTableBytes = (kMaxExperts + 1 + 8) * 4;  // tile0 [E + 1] and the scan's 8 warp sums

template <bool kMasked> struct ExpertRows {
  const int *g;  // offsets [E + 1] or counts [E]
  int E, M;      // experts; rows (contiguous) or capacity per expert (masked)
  __device__ __forceinline__ int row0(int e) const { return kMasked ? e * M : g[e]; }
  __device__ __forceinline__ int count(int e) const {
    return kMasked ? min(max(g[e], 0), M) : max(g[e + 1] - g[e], 0);
  }
  __device__ __forceinline__ int rows() const { return kMasked ? E * M : M; }  // rows of the 2-D views
};

// tile0[e]: the first m tile (of kBM rows) of expert e, tile0[E]: all m tiles. Thread e < E counts
// expert e's tiles; a block-wide inclusive scan (warp shuffles, then the warp sums) gives tile0[e + 1].
// Every thread of the block calls it (blockDim.x >= kMaxExperts); tile0 is read after the block's
// next __syncthreads.
template <int kBM, bool kMasked>
__device__ __forceinline__ void build_tile_table(const ExpertRows<kMasked> &er, int *tile0, int *warp_sum) {
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  int v = t < er.E ? (er.count(t) + kBM - 1) / kBM : 0;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int u = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += u;
  }
  if (lane == 31 && w < kMaxExperts / 32) warp_sum[w] = v;
  __syncthreads();
  if (t < kMaxExperts) {
    for (int i = 0; i < w; ++i) v += warp_sum[i];
    tile0[t + 1] = v;
  }
  if (t == 0) tile0[0] = 0;
}

// The last i of 0 .. n - 1 with prefix[i] <= x (prefix non-decreasing, prefix[0] <= x).
__device__ __forceinline__ int last_at_or_below(const int *prefix, int n, int x) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (prefix[mid] <= x) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The expert of m tile m_tile (experts without tiles share their tile0 with the next).
__device__ __forceinline__ int expert_of_tile(const int *tile0, int E, int m_tile) {
  return last_at_or_below(tile0, E, m_tile);
}

// The expert that owns row `row` of the 2-D view, or -1 (a masked row past its count, a contiguous
// row outside offsets[0] .. offsets[E]).
template <bool kMasked> __device__ __forceinline__ int expert_of_row(const ExpertRows<kMasked> &er, int row) {
  if constexpr (kMasked) {
    const int e = row / er.M;
    return e < er.E && row - e * er.M < er.count(e) ? e : -1;
  } else {
    if (row < er.g[0] || row >= er.g[er.E]) return -1;
    return last_at_or_below(er.g, er.E, row);
  }
}

// zero_padding (masked): rows count(e) .. M - 1 of every expert's c [E][M][N] bf16 written with zeros by
// thread t of nt of this block (the whole grid shares the work): the grid's threads walk c's 16-byte
// chunks (N % 8 == 0) and store those of padding rows, one or a few chunks per thread, so that no
// block outlives its tiles by a walk over every expert. A template of the layout so that a kernel of
// either layout can name it under `if constexpr`.
template <bool kMasked>
__device__ __forceinline__ void zero_padding(__nv_bfloat16 *__restrict__ c, const ExpertRows<kMasked> &er, int N, int t,
                                             int nt) {
  static_assert(kMasked, "padding rows exist in the masked layout only");
  const long long row_chunks = N / 8, per_expert = (long long)er.M * row_chunks, total = per_expert * er.E;
  const long long stride = (long long)gridDim.x * nt;
  uint4 *out = reinterpret_cast<uint4 *>(c);
  for (long long j = (long long)blockIdx.x * nt + t; j < total; j += stride) {
    const int e = (int)(j / per_expert);
    if ((j - e * per_expert) / row_chunks >= er.count(e)) out[j] = make_uint4(0u, 0u, 0u, 0u);
  }
}

}  // namespace tune
