#!/usr/bin/env bash
# recipes/gemm.lua's gemm.splitk with SPLIT_CLUSTER 1 (templates/gemm/gemm_sm90.cuh: the SPLIT_K
# blocks of a tile form a thread-block cluster and add their tiles through distributed shared memory)
# without a GPU: only wgmma variants with the TMA producer and at most 8 splits get it, their launch is
# a cluster (1, SPLIT_K, 1) with no reduce kernel (its step has no blocks) and no workspace, and every
# such variant compiles for sm_90a without local memory.
. "$(dirname "$0")/lib.sh"
BUILD="${BUILD:?set BUILD to the build tree}"
R="$SRC/recipes/gemm.lua"
P=m128n8192k8192_row

"$BUILD/tools/gemm_space" "$R" $P > space.txt 2>&1
check "gemm_space exits 0" test $? -eq 0
grep '"SPLIT_CLUSTER":1}' space.txt > cl.txt
grep '"SPLIT_CLUSTER":0}' space.txt > pa.txt
check "cluster variants listed" test -s cl.txt
check "partial-sum variants listed" test -s pa.txt
check "cluster variants: wgmma with the TMA producer only" test "$(grep -vc '"PATH":1,.*"WS":1,.*"USE_TMA":1,' cl.txt)" -eq 0
check "cluster variants: at most 8 splits" lacks cl.txt '"SPLIT_K":16'
check "cluster (1, SPLIT_K, 1), reduce step without blocks" \
  test "$(grep -c 'cluster 1,[248],1 step 2 grid 0,1,1$' cl.txt)" -eq "$(wc -l < cl.txt)"
check "the cluster's split matches SPLIT_K" \
  test "$(grep -c '"SPLIT_K":2,"SPLIT_CLUSTER":1} grid [0-9]*,2 .* cluster 1,2,1 step' cl.txt)" -ge 1
check "partial sums: a reduce step with blocks, no cluster" test "$(grep -c 'step 2 grid [1-9][0-9]*,1,1$' pa.txt)" -eq "$(wc -l < pa.txt)"

"$TUNE" run "$R" --compile-only --db c.db --jobs 2 --quiet --problem $P --only SPLIT_CLUSTER=1 > compile.txt 2>&1
check "compile-only exits 0" test $? -eq 0
check "cluster variants compiled" test "$(sql c.db "SELECT count(*) FROM binaries WHERE ok = 1 AND options LIKE '%-DSPLIT_CLUSTER=1%'")" -ge 10
check "no compile errors" test "$(sql c.db "SELECT count(*) FROM binaries WHERE ok = 0")" -eq 0
check "no local memory or spills" \
  test "$(sql c.db "SELECT count(*) FROM binaries WHERE local_bytes > 0 OR spill_stores > 0 OR spill_loads > 0")" -eq 0

finish
