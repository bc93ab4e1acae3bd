#!/usr/bin/env bash
# recipes/gemm.lua's tails without a GPU: problems whose N and K are no tile's multiple (N, K
# multiples of 8 only) have variants on every path, ceil-divided launches, tensor-map boxes clipped to
# small tensors, and their variants (the PATH 0 fallback tile among them) compile for sm_90a.
. "$(dirname "$0")/lib.sh"
BUILD="${BUILD:?set BUILD to the build tree}"
R="$SRC/recipes/gemm.lua"

"$BUILD/tools/gemm_space" "$R" > space.txt 2>&1
check "gemm_space exits 0" test $? -eq 0
for p in m1000n1000k1000_row m1000n1000k1000_col m3000n1000k1032_col m37n4104k4096_row m100n1000k1032_col m5n4104k1056_col; do
  check "gemm: $p has variants" test "$(sed -n '/^gemm:/,/^gemm.splitk:/p' space.txt | grep " $p " | awk '{print $2}')" -gt 0
done
for p in m37n4104k4096_col m100n1000k1032_row m5n4104k1056_row; do
  check "gemm.splitk: $p has variants" test "$(sed -n '/^gemm.splitk:/,/^gemm.gemv_rows:/p' space.txt | grep " $p " | awk '{print $2}')" -gt 0
done
check "decode buckets M = 2, 4, 8, 32 (gemm 24, gemv_rows 3)" test "$(grep -cE '^  m(2|4|8|32)n(8192|14336|4096)k' space.txt)" -eq 27
check "no problem without variants" lacks space.txt ' 0 variants '

FB='{"PATH":0,"BLOCK_M":64,"BLOCK_N":128,"WARPS_M":2,"WARPS_N":2,"CONSUMERS":1,"BLOCK_K":64,"STAGES":3,"SWIZZLE":1,"WS":0,"PRODUCER_WARPS":1,"SETMAXNREG":0,"USE_TMA":0,"PERSISTENT":0,"RASTER":1,"GEMV_WARPS":4,"GEMV_COLS":1,"GEMV_UNROLL":2}'
"$BUILD/tools/gemm_space" "$R" m37n4104k4096_row > m37.txt 2>&1
# 1 x ceil(4104 / 128) = 33 tiles; 3 x (64 x 64 + 64 x 128) x 2 bytes of ring
check "fallback tile: ceil-divided grid, its ring" contains m37.txt "$FB grid 33,1 block 128 smem 73728"
"$BUILD/tools/gemm_space" "$R" m5n4104k1056_col > m5.txt 2>&1
# row-major GEMV: 64 columns per block -> ceil(4104 / 64) = 65 blocks; col-major: 4 warps x 1 column
check "GEMV grid ceil-divided (b [N][K])" grep -q '"PATH":2,.*"GEMV_WARPS":4,"GEMV_COLS":1,"GEMV_UNROLL":2} grid 1026,1 ' m5.txt
check "non-TMA boxes clipped to M" grep -q 'tmA box {64, 5}' m5.txt

"$TUNE" run "$R" --compile-only --db g.db --jobs 2 --quiet --problem m5n4104k1056_col --problem m37n4104k4096_row \
  --problem m1000n1000k1000_col > compile.txt 2>&1
check "compile-only exits 0" test $? -eq 0
check "no compile errors" test "$(sql g.db "SELECT count(*) FROM binaries WHERE ok = 0")" -eq 0
check "TMA variants compiled" test "$(sql g.db "SELECT count(*) FROM binaries WHERE ok = 1 AND options LIKE '%-DUSE_TMA=1%'")" -ge 1
check "GEMV variants compiled for the M <= 8 bucket" test "$(sql g.db "SELECT count(*) FROM binaries WHERE ok = 1 AND options LIKE '%-DGEMV_M=8%' AND options LIKE '%-DPATH=2%'")" -ge 1

finish
