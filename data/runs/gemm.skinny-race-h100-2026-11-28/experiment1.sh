#!/usr/bin/env bash
# skinny race experiment + gpu tests (temporary, untracked)
set -u
R=$PWD
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv | tee $OUT/gpu.txt
date -u | tee -a $OUT/gpu.txt
cp templates/gemm/skinny.cuh /tmp/skinny.orig
ONLY="BLOCK_N=128,BLOCK_K=64,STAGES=4,WARPS_N=8,WARPS_K=1,SPLIT_K=8"
status() { python3 - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute("select p.name, r.status, r.samples, r.registers, substr(coalesce(r.error_text,''),1,90) from results r join problems p on p.id=r.problem_id"):
    print(*r, sep=" | ")
PY
}
for v in base minb1 fence; do
  cp /tmp/skinny.orig templates/gemm/skinny.cuh
  case $v in
    minb1) sed -i 's/constexpr int kMinBlocks = kSmemBytes <= 113 \* 1024 ? 2 : 1;/constexpr int kMinBlocks = 1;/' templates/gemm/skinny.cuh ;;
    fence) sed -i 's|^  tune::cluster_sync();  // every block.s tile is complete|  asm volatile("fence.acq_rel.cluster;" ::: "memory");\n  tune::cluster_sync();|' templates/gemm/skinny.cuh ;;
  esac
  grep -n "kMinBlocks =\|fence.acq_rel" templates/gemm/skinny.cuh
  t0=$(date +%s)
  for i in 1 2 3 4 5 6 7 8; do
    db=$OUT/sk-$v-$i.db
    ./build/tune run recipes/gemm/skinny.lua --db $db --device cuda:0 --strategy exhaustive --no-warm-start \
      --problem m64n8192k8192_row --problem m64n8192k8192_col --only $ONLY > $OUT/sk-$v-$i.log 2>&1
    status $db | sed "s/^/$v $i: /"
  done | tee $OUT/sk-$v.txt
  echo "$v: $(grep -c ' wrong ' $OUT/sk-$v.txt) wrong of $(wc -l < $OUT/sk-$v.txt) ($(( $(date +%s) - t0 )) s)" | tee -a $OUT/summary.txt
done
cp /tmp/skinny.orig templates/gemm/skinny.cuh
# racecheck on the base variant (worker is a child process)
timeout 150 compute-sanitizer --tool racecheck --target-processes all --print-limit 20 \
  ./build/tune run recipes/gemm/skinny.lua --db $OUT/sk-race.db --device cuda:0 --strategy exhaustive --no-warm-start \
  --problem m64n8192k8192_row --only $ONLY > $OUT/racecheck.log 2>&1; echo "racecheck rc $?" | tee -a $OUT/summary.txt
grep -i "hazard\|error summary\|RACECHECK SUMMARY" $OUT/racecheck.log | head -10 | tee -a $OUT/summary.txt
T0=$(date +%s)
bash tools/bench/device_gpu_tests.sh $OUT/gpu-tests | tee -a $OUT/summary.txt
echo "gpu tests $(( $(date +%s) - T0 )) s" | tee -a $OUT/summary.txt
echo ======; cat $OUT/summary.txt
