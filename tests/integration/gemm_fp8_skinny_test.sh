#!/usr/bin/env bash
# recipes/gemm/fp8_skinny.lua (templates/gemm/skinny.cuh with FP8 1: three tensor-core ops, fp32
# promotion every 128 of K, the three scalings of gemm.fp8) without a GPU: gemm.fp8's decode problems at M 1
# and 16, every variant of one problem per scaling compiles for sm_90a without local memory, and the
# bf16 kernel of the same template still does (gemm_skinny_test covers its space).
. "$(dirname "$0")/lib.sh"
BUILD="${BUILD:?set BUILD to the build tree}"
R="$SRC/recipes/gemm/fp8_skinny.lua"

# 1. the problems are gemm.fp8's decode problems at M <= 16, by the same names
"$BUILD/tools/gemm_space" "$R" > space.txt 2>&1
check "gemm_space exits 0" test $? -eq 0
check "24 problems listed" test "$(grep -c ' variants ' space.txt)" -eq 24
check "no problem without variants" lacks space.txt ' 0 variants '
"$BUILD/tools/gemm_space" "$SRC/recipes/gemm/fp8.lua" > fp8.txt 2>&1
for p in m1n4096k14336_tensor m16n14336k4096_row m1n7168k18432_block; do
  check "$p named as in gemm.fp8" contains fp8.txt "^  $p "
  check "$p in gemm.fp8_skinny" contains space.txt "^  $p "
done
check "no M = 64 problem (spills: the recipe's comment)" lacks space.txt '^  m64'
# M = 1: a one-row box of 128 e4m3 (128 bytes), 5 warps
"$BUILD/tools/gemm_space" "$R" m1n4096k14336_tensor > m1.txt 2>&1
check "M = 1: a box of one row of 128 e4m3" contains m1.txt 'tmA box {128, 1}'

# 2. every variant of three problems (one per scaling) compiles without local memory
"$TUNE" run "$R" --compile-only --db s.db --jobs 2 --quiet --problem m1n4096k14336_tensor \
  --problem m16n14336k4096_row --problem m1n7168k18432_block > compile.txt 2>&1
check "compile-only exits 0" test $? -eq 0
n=$(sql s.db "SELECT count(*) FROM binaries WHERE ok = 1")
check "variants compiled ($n)" test "$n" -ge 40
check "no compile errors" test "$(sql s.db "SELECT count(*) FROM binaries WHERE ok = 0")" -eq 0
check "no local memory or spills" \
  test "$(sql s.db "SELECT count(*) FROM binaries WHERE local_bytes > 0 OR spill_stores > 0 OR spill_loads > 0")" -eq 0
for m in 0 1 2; do
  check "SCALE_MODE $m compiled" test "$(sql s.db "SELECT count(*) FROM binaries WHERE options LIKE '%-DFP8=1%-DSCALE_MODE=$m%'")" -ge 1
done
# each tensor-core op of skinny.cuh (MMA 0 e4m3 mma.sync, 1 fp16 mma.sync on unpacked fragments,
# 2 wgmma with swapped operands) with each scaling
for op in 0 1 2; do
  for m in 0 1 2; do
    check "MMA $op with SCALE_MODE $m compiled" \
      test "$(sql s.db "SELECT count(*) FROM binaries WHERE ok = 1 AND options LIKE '%-DMMA=$op %-DSCALE_MODE=$m%'")" -ge 1
  done
done
# MMA 1 sums straight into fp32 for tensor and row scales: fewer registers than MMA 0's partial sums
r0=$(sql s.db "SELECT max(registers) FROM binaries WHERE options LIKE '%-DMMA=0 %-DSCALE_MODE=0%'")
r1=$(sql s.db "SELECT max(registers) FROM binaries WHERE options LIKE '%-DMMA=1 %-DSCALE_MODE=0%'")
check "MMA 1 without partial sums uses fewer registers ($r1 < $r0)" test "$r1" -lt "$r0"
v=$(sql s.db "SELECT count(*) FROM binaries WHERE options LIKE '%-DBLOCK_N=%'")
check "every variant ($v) the e4m3 build" test "$(sql s.db "SELECT count(*) FROM binaries WHERE options LIKE '%-DBLOCK_N=%-DFP8=1%'")" -eq "$v"

# 3. the bf16 kernel of the same template (FP8 unset): still no local memory
"$TUNE" run "$SRC/recipes/gemm/skinny.lua" --compile-only --db b.db --jobs 2 --quiet --problem m16n14336k4096_col \
  > bf16.txt 2>&1
check "bf16 compile-only exits 0" test $? -eq 0
check "bf16: no compile errors or local memory" \
  test "$(sql b.db "SELECT count(*) FROM binaries WHERE ok = 0 OR local_bytes > 0")" -eq 0
check "bf16: not the e4m3 build" test "$(sql b.db "SELECT count(*) FROM binaries WHERE options LIKE '%-DFP8%'")" -eq 0

finish
