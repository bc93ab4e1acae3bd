#!/usr/bin/env bash
# recipes/gemm.lua's gemm.gemv_rows (templates/gemm/gemv_rows.cuh: row-major b, M <= 8, K split over a
# thread-block cluster) without a GPU: its space covers exactly the row-major problems of M <= 8 (M = 1
# at every decode shape, the GEMV_M buckets 2, 4, 8 at 8192 x 8192, the N tail at M = 5),
# the launch it computes (tiles x CLUSTER blocks, a cluster per tile), and every variant of one problem
# compiles for sm_90a without local memory.
. "$(dirname "$0")/lib.sh"
BUILD="${BUILD:?set BUILD to the build tree}"
R="$SRC/recipes/gemm.lua"

"$BUILD/tools/gemm_space" "$R" > space.txt 2>&1
check "gemm_space exits 0" test $? -eq 0
sed -n '/^gemm.gemv_rows:/,$p' space.txt > rows.txt
check "seven problems, all row-major" test "$(grep -c ' variants ' rows.txt)" -eq 7
check "no other problem" lacks rows.txt '_col '
check "no problem with M > 8" test "$(grep ' variants ' rows.txt | grep -vc '^ *m[1-8]n')" -eq 0
check "the N tail problem (N = 4104)" contains rows.txt 'm5n4104k1056_row'
# K = 1056 = 32 x 33: only configs whose CLUSTER * GR_WARPS * GR_UNROLL divides it (requires)
"$BUILD/tools/gemm_space" "$R" m5n4104k1056_row > m5.txt 2>&1
check "the tail's configs all have CLUSTER * GR_WARPS * GR_UNROLL = 32" \
  test "$(grep -c '"GR_WARPS":8,"GR_VEC":[0-9]*,"GR_SEGS":[0-9]*,"GR_UNROLL":4,"CLUSTER":1}' m5.txt)" -eq "$(grep -c '"GR_WARPS"' m5.txt)"
# N = 4104 with 16-byte lanes and one segment: 256 columns per tile, ceil(4104 / 256) = 17 tiles
check "tail launch: ceil-divided tiles" contains m5.txt '{"GR_WARPS":8,"GR_VEC":16,"GR_SEGS":1,"GR_UNROLL":4,"CLUSTER":1} grid 17,1 block 256 smem 0' 
check "no problem without variants" lacks rows.txt ' 0 variants '

# N = 8192: 16-byte lanes, one segment = 256 columns per tile, 32 tiles x CLUSTER 8 = 256 blocks of 8 warps
"$BUILD/tools/gemm_space" "$R" m1n8192k8192_row > m1.txt 2>&1
check "launch: grid of tiles x CLUSTER" \
  contains m1.txt '{"GR_WARPS":8,"GR_VEC":16,"GR_SEGS":1,"GR_UNROLL":4,"CLUSTER":8} grid 256,1 block 256 smem 0'
check "launch: 8-byte lanes, two segments, 256 columns per tile" \
  contains m1.txt '{"GR_WARPS":16,"GR_VEC":8,"GR_SEGS":2,"GR_UNROLL":4,"CLUSTER":2} grid 64,1 block 512 smem 0'
check "no step over 128 bytes of loads per lane" lacks m1.txt '"GR_VEC":16,"GR_SEGS":2,"GR_UNROLL":8'

"$TUNE" run "$R" --compile-only --db g.db --jobs 2 --quiet --problem m1n4096k14336_row \
  --only CLUSTER=1 --only CLUSTER=2 --only CLUSTER=4 --only CLUSTER=8 > compile.txt 2>&1
check "compile-only exits 0" test $? -eq 0
n=$(sql g.db "SELECT count(*) FROM binaries WHERE ok = 1 AND options LIKE '%-DGR_WARPS=%'")
check "every variant compiled ($n)" test "$n" -eq "$(grep -c '"GR_WARPS"' <("$BUILD/tools/gemm_space" "$R" m1n4096k14336_row))"
check "no compile errors" test "$(sql g.db "SELECT count(*) FROM binaries WHERE ok = 0")" -eq 0
check "no local memory or spills" \
  test "$(sql g.db "SELECT count(*) FROM binaries WHERE local_bytes > 0 OR spill_stores > 0 OR spill_loads > 0")" -eq 0
check "cluster variants present" test "$(sql g.db "SELECT count(*) FROM binaries WHERE options LIKE '%-DCLUSTER=8%'")" -ge 1

finish
