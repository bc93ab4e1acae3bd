#!/usr/bin/env bash
# skinny race experiment 2 (temporary, untracked)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=/tmp/w; mkdir -p $W
(which cuobjdump nvdisasm; cuobjdump -sass tools/bench/.sk.cubin > $OUT/sk.sass 2>&1) | head -3
cp templates/gemm/skinny.cuh /tmp/skinny.orig; cp recipes/gemm/skinny.lua /tmp/skinny.lua.orig
FAIL="BLOCK_N=128,BLOCK_K=64,STAGES=4,WARPS_N=8,WARPS_K=1,SPLIT_K=8"
status() { python3 - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute("select p.name, r.status, substr(coalesce(r.error_text,''),1,110) from results r join problems p on p.id=r.problem_id"):
    print(*r, sep=" | ")
PY
}
trial() { # name only reps
  local v=$1 only=$2 reps=$3 t0=$(date +%s)
  for i in $(seq 1 $reps); do
    db=$W/sk-$v-$i.db
    ./build/tune run recipes/gemm/skinny.lua --db $db --device cuda:0 --strategy exhaustive --no-warm-start \
      --problem m64n8192k8192_row --problem m64n8192k8192_col --only $only > $W/sk-$v-$i.log 2>&1
    status $db | sed "s/^/$v $i: /"
  done > $W/sk-$v.txt
  echo "$v [$only]: $(grep -c ' wrong ' $W/sk-$v.txt) wrong of $(wc -l < $W/sk-$v.txt) ($(( $(date +%s) - t0 )) s)" | tee -a $OUT/summary.txt
}
reset() { cp /tmp/skinny.orig templates/gemm/skinny.cuh; cp /tmp/skinny.lua.orig recipes/gemm/skinny.lua; }
reset; trial base $FAIL 10
trial nb-wn8-sk4 BLOCK_N=128,BLOCK_K=64,STAGES=4,WARPS_N=8,WARPS_K=1,SPLIT_K=4 8
trial nb-wn4-sk8 BLOCK_N=128,BLOCK_K=64,STAGES=4,WARPS_N=4,WARPS_K=1,SPLIT_K=8 8
trial nb-st8-sk8 BLOCK_N=128,BLOCK_K=64,STAGES=8,WARPS_N=8,WARPS_K=1,SPLIT_K=8 8
trial nb-bn64-sk8 BLOCK_N=64,BLOCK_K=64,STAGES=6,WARPS_N=4,WARPS_K=1,SPLIT_K=8 8
reset; sed -i 's|^    if (lane == 0) produce(ring, bars, tmA, tmB, M, n0, k_first, nk);|&\n    __syncwarp();|' templates/gemm/skinny.cuh
grep -c "__syncwarp();" templates/gemm/skinny.cuh; trial conv $FAIL 10
reset; sed -i 's|^    shared = SMEM,|    shared = SMEM .. " + 40960",|' recipes/gemm/skinny.lua; grep -n "shared = SMEM" recipes/gemm/skinny.lua; trial onecta $FAIL 10
reset
sed -i -e 's|constexpr int kBodyBytes = kRingBytes > kRedBytes ? kRingBytes : kRedBytes;|constexpr int kBodyBytes = kRingBytes + kRedBytes;|' \
  -e 's|float \*red = reinterpret_cast<float \*>(body);|float *red = reinterpret_cast<float *>(body + kRingBytes);|' \
  -e 's|const unsigned red_addr = ring;|const unsigned red_addr = ring + kRingBytes;|' templates/gemm/skinny.cuh
grep -c "kRingBytes + kRedBytes\|body + kRingBytes\|ring + kRingBytes" templates/gemm/skinny.cuh
sed -i 's|^    shared = SMEM,|    shared = "1024 + STAGES * (" .. BM .. " + BLOCK_N) * BLOCK_K * 2 + " .. BM .. " * (BLOCK_N + 4) * 4 + 16 * STAGES",|' recipes/gemm/skinny.lua
grep -n "^    shared =" recipes/gemm/skinny.lua; trial sepred $FAIL 10
reset
tar czf $OUT/logs.tgz -C $W . 2>/dev/null
echo =====; cat $OUT/summary.txt; grep -n "BAR\|BSYNC\|BSSY\|WARPSYNC\|EXIT\|MEMBAR\|FENCE\|UCGABAR\|SYNCS" $OUT/sk.sass | head -60
