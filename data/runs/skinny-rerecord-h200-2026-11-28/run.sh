#!/usr/bin/env bash
# gemm.skinny and gemm.fp8_skinny re-recorded on the H200 (skinny.cuh: per-column scales as scalar loads)
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w7; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), tree of commit 605b1d3" | tee -a $OUT/gpu.txt
for r in skinny fp8_skinny; do
  timeout -s INT 110 $B run recipes/gemm/$r.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.$r.db > $OUT/gemm.$r.log 2>&1
  echo "$r rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
  python3 tools/lean_db.py $W/gemm.$r.db $OUT/gemm.$r.db
done
grep -hE "results, |GPU busy" $OUT/*.log | cut -c1-200
