#!/usr/bin/env bash
# recipes/gemm/skinny.lua (templates/gemm/skinny.cuh, the decode-shape streaming GEMM) without a GPU:
# the space per problem stays small enough for one device call (tools/bench/device_gemm_decode.sh),
# every variant of two problems (one per layout and tile height, both tensor-core ops) compiles for
# sm_90a without local memory.
. "$(dirname "$0")/lib.sh"
BUILD="${BUILD:?set BUILD to the build tree}"
R="$SRC/recipes/gemm/skinny.lua"

# 1. variants per problem (gemm_space: constraints, applies), 24 decode problems, none empty, <= 80 each
"$BUILD/tools/gemm_space" "$R" > space.txt 2>&1
check "gemm_space exits 0" test $? -eq 0
check "24 problems listed" test "$(grep -c ' variants ' space.txt)" -eq 24
check "no problem without variants" lacks space.txt ' 0 variants '
check "at most 80 variants per problem" awk '/ variants /{ if ($2 > 80) bad = 1 } END { exit bad }' space.txt
# wgmma (MMA 2) for both layouts of b (K-major and MN-major A)
for p in m64n8192k8192_col m1n14336k4096_row; do
  check "MMA 2 offered for $p" test "$("$BUILD/tools/gemm_space" "$R" $p | grep -c '"MMA":2')" -ge 1
done
# two consumer warpgroups (MMA 2, WARPS_N 8) at M >= 64, and their 256-column blocks at M = 128
check "two warpgroups offered at M = 128" test "$("$BUILD/tools/gemm_space" "$R" m128n8192k8192_col | grep -c '"BLOCK_N":256,.*"WARPS_N":8,"WARPS_K":1,.*"MMA":2')" -ge 1
check "no two warpgroups at M = 16" test "$("$BUILD/tools/gemm_space" "$R" m16n8192k8192_col | grep -c '"WARPS_N":8,"WARPS_K":1,.*"MMA":2')" -eq 0
# the config listing of one problem: the launch the recipe computes (grid N / BLOCK_N x SPLIT_K,
# 32 (WARPS_N WARPS_K + 1) threads, the 1-row box of a for M = 1)
"$BUILD/tools/gemm_space" "$R" m1n8192k8192_row > m1.txt 2>&1
check "M = 1: a box of one row" contains m1.txt 'tmA box {64, 1}'
check "M = 1: 5 warps, grid of 128 x 2 for BLOCK_N 64, SPLIT_K 2" \
  contains m1.txt '"BLOCK_N":64,"BLOCK_K":128,"STAGES":[0-9]*,"WARPS_N":4,"WARPS_K":1,"SPLIT_K":2,"MMA":0} grid 128,2 block 160'

# 2. every variant of two problems compiles (NVRTC, sm_90a), without local memory
"$TUNE" run "$R" --compile-only --db s.db --jobs 2 --quiet --problem m1n14336k4096_row --problem m64n8192k8192_col \
  > compile.txt 2>&1
check "compile-only exits 0" test $? -eq 0
n=$(sql s.db "SELECT count(*) FROM binaries WHERE ok = 1")
check "variants compiled ($n)" test "$n" -ge 20
check "no compile errors" test "$(sql s.db "SELECT count(*) FROM binaries WHERE ok = 0")" -eq 0
check "no local memory or spills" \
  test "$(sql s.db "SELECT count(*) FROM binaries WHERE local_bytes > 0 OR spill_stores > 0 OR spill_loads > 0")" -eq 0
check "cluster variants present (SPLIT_K > 1)" test "$(sql s.db "SELECT count(*) FROM binaries WHERE options LIKE '%-DSPLIT_K=2%'")" -ge 1
for lay in 0 1; do
  check "wgmma variants (MMA 2) compiled, B_COL $lay" \
    test "$(sql s.db "SELECT count(*) FROM binaries WHERE ok = 1 AND options LIKE '%-DMMA=2 %-DB_COL=$lay%'")" -ge 1
done

finish
