#!/usr/bin/env bash
# gemm.skinny re-recorded (skinny.cuh gained the FP8 path); moe.grouped on the H200 (budget 8) + compare
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w3; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), tree of commit 4c99f8a" | tee -a $OUT/gpu.txt
timeout -s INT 90 $B run recipes/gemm/skinny.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.skinny.db > $OUT/gemm.skinny.log 2>&1
echo "skinny rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.skinny.db $OUT/gemm.skinny.db
timeout -s INT 270 $B run recipes/moe/grouped.lua --budget 8 --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/moe.grouped.db > $OUT/moe.grouped.log 2>&1
echo "grouped rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 150 $B compare recipes/moe/grouped.lua --rounds 3 --top-k 2 --timing burst --db $W/moe.grouped.db > $OUT/moe.grouped.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/moe.grouped.db $OUT/moe.grouped.db
grep -E "results, |GPU busy" $OUT/gemm.skinny.log $OUT/moe.grouped.log | cut -c1-220
grep -E "^\| |^### " $OUT/moe.grouped.compare.txt | cut -c1-200
