// tile_order.cuh: output-tile rasterization for tiled kernels (GEMM; any kernel with a 2-D grid of
// output tiles). Maps a linear tile index to (tile row, tile column) so that consecutive indices,
// which run at the same time, share operand tiles in L2.
//
//   group == 1: row-major order (tile column fastest): one row of tiles re-reads all of B.
//   group == G: Triton-style grouped order: G tile rows are walked column by column, so a wave of
//               consecutive tiles reads G row-tiles of A and few column-tiles of B.
#pragma once

namespace tune {

struct tile_rc {
  int m;  // tile row
  int n;  // tile column
};

__device__ __forceinline__ tile_rc tile_order_grouped(int tile, int tiles_m, int tiles_n, int group) {
  tile_rc t;
  if (group <= 1) {
    t.m = tile / tiles_n;
    t.n = tile % tiles_n;
    return t;
  }
  const int per_group = group * tiles_n;
  const int g = tile / per_group;
  const int first_m = g * group;
  const int rows = min(tiles_m - first_m, group);
  const int in_group = tile - g * per_group;
  t.m = first_m + in_group % rows;
  t.n = in_group / rows;
  return t;
}

}  // namespace tune
