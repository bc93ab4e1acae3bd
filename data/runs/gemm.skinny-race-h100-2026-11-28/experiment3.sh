#!/usr/bin/env bash
# faults log, skinny sync-at-start variant, Kernel Tuner wall clock (temporary, untracked)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD; W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee $OUT/gpu.txt; date -u | tee -a $OUT/gpu.txt
(cd $W && mkdir -p faults && cd faults && TUNE=$R/build/tune SRC=$R timeout 300 bash $R/tests/gpu/faults_test.sh > $OUT/faults.log 2>&1; echo "faults rc $?" | tee -a $OUT/summary.txt)
tail -25 $OUT/faults.log
cp templates/gemm/skinny.cuh /tmp/skinny.orig
sed -i 's|^  const int g = lane >> 2, q = lane \& 3;|#if SPLIT_K > 1\n  tune::cluster_sync();\n#endif\n&|' templates/gemm/skinny.cuh
grep -n -B3 "const int g = lane >> 2" templates/gemm/skinny.cuh
FAIL="BLOCK_N=128,BLOCK_K=64,STAGES=4,WARPS_N=8,WARPS_K=1,SPLIT_K=8"
n=0; w=0
for i in $(seq 1 10); do
  ./build/tune run recipes/gemm/skinny.lua --db $W/s0-$i.db --device cuda:0 --strategy exhaustive --no-warm-start \
    --problem m64n8192k8192_row --problem m64n8192k8192_col --only $FAIL > $W/s0-$i.log 2>&1
  w=$((w + $(python3 -c "import sqlite3;print(sqlite3.connect('$W/s0-$i.db').execute(\"select count(*) from results where status='wrong'\").fetchone()[0])")))
  n=$((n + 2))
done
echo "sync0: $w wrong of $n" | tee -a $OUT/summary.txt
cp /tmp/skinny.orig templates/gemm/skinny.cuh
T0=$(date +%s)
bash tools/bench/device_kt_wallclock.sh $OUT/kt > $OUT/kt.txt 2>&1; echo "kt rc $? in $(( $(date +%s) - T0 )) s" | tee -a $OUT/summary.txt
rm -rf $OUT/kt/*/*.db $OUT/kt/*/cache* 2>/dev/null
tail -12 $OUT/kt.txt
echo =====; cat $OUT/summary.txt
