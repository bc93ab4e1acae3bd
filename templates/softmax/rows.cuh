// rows.cuh: softmax_row for ROWS > 1 (included by softmax.cuh, inside its configuration).
//
// Warp mode with EXP_ONCE 1 and ONLINE 1: warp w of block b owns rows (b * kWarps + w) * ROWS ..
// + ROWS - 1 (grid ceil(rows / (BLOCK / 32 * ROWS)), block BLOCK). Every load of all ROWS rows is
// issued before the first reduction (ROWS times the bytes in flight per thread of a one-row warp),
// and the ROWS (max, sum) butterflies run interleaved, offset by offset, so their shuffle
// latencies overlap. A row past the end is neither loaded nor stored; its lanes still take part
// in the (warp-wide) shuffles with the empty pair (-inf, 0).
#pragma once

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
softmax_row(const bf16 *__restrict__ x, bf16 *__restrict__ y, int rows) {
  constexpr int kE = 2 * sm::vec::kN;  // bf16 per vector
  const int lane = threadIdx.x % 32;
  const long long row0 = ((long long)blockIdx.x * sm::kWarps + threadIdx.x / 32) * ROWS;
  if (row0 >= rows) return;  // whole warps: nothing below synchronizes the block

  sm::vec v[ROWS][sm::kIters];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
    if (row0 + r < rows) sm::load_stage(sm::tile_at(x, y, row0 + r, lane), 0, v[r]);

  float ml[ROWS], m[ROWS], s[ROWS];
  float e[ROWS][sm::kIters][kE];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    s[r] = 0.f;
    if (row0 + r < rows) {
      ml[r] = sm::max_of(v[r], tune::neg_inf()) * sm::kLog2e;  // the thread's max (log2 units)
#pragma unroll
      for (int j = 0; j < sm::kIters; ++j)
#pragma unroll
        for (int w = 0; w < sm::vec::kN; ++w) {
          e[r][j][2 * w] = tune::fast_exp2(fmaf(tune::bf16_lo(v[r][j].w[w]), sm::kLog2e, -ml[r]));
          e[r][j][2 * w + 1] = tune::fast_exp2(fmaf(tune::bf16_hi(v[r][j].w[w]), sm::kLog2e, -ml[r]));
          s[r] += e[r][j][2 * w] + e[r][j][2 * w + 1];
        }
    } else {
      ml[r] = tune::neg_inf();
    }
    m[r] = ml[r];
  }
  // the ROWS pair butterflies, interleaved
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    float m2[ROWS], s2[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      m2[r] = __shfl_xor_sync(0xffffffffu, m[r], off);
      s2[r] = __shfl_xor_sync(0xffffffffu, s[r], off);
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) tune::online_merge(m[r], s[r], m2[r], s2[r]);
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    if (row0 + r >= rows) continue;
    const float f = tune::fast_exp2(ml[r] - m[r]) * (1.f / s[r]);  // thread max -> row max, then 1 / sum
    const sm::tile_ctx c = sm::tile_at(x, y, row0 + r, lane);
#pragma unroll
    for (int j = 0; j < sm::kIters; ++j) {
      sm::vec o;
#pragma unroll
      for (int w = 0; w < sm::vec::kN; ++w) o.w[w] = tune::pack_bf16x2(e[r][j][2 * w] * f, e[r][j][2 * w + 1] * f);
      tune::store_words<1, VEC_BYTES>(c.y + (long long)j * sm::kThreads * sm::kVecElems, o);
    }
  }
}
