#!/usr/bin/env bash
# moe.grouped_swiglu (budget 8) and gemm.fp8 (budget 4) on the H200, each then tune compare (burst)
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w4; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), tree of commit 4c99f8a" | tee -a $OUT/gpu.txt
timeout -s INT 120 $B run recipes/moe/swiglu.lua --budget 8 --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/moe.grouped_swiglu.db > $OUT/moe.grouped_swiglu.log 2>&1
echo "swiglu rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 100 $B compare recipes/moe/swiglu.lua --rounds 3 --top-k 2 --timing burst --db $W/moe.grouped_swiglu.db > $OUT/moe.grouped_swiglu.compare.txt 2>&1
echo "swiglu compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/moe.grouped_swiglu.db $OUT/moe.grouped_swiglu.db
timeout -s INT 200 $B run recipes/gemm/fp8.lua --budget 4 --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.log 2>&1
echo "fp8 rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 120 $B compare recipes/gemm/fp8.lua --rounds 3 --top-k 2 --timing burst --db $W/gemm.fp8.db > $OUT/gemm.fp8.compare.txt 2>&1
echo "fp8 compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
grep -hE "results, |GPU busy" $OUT/moe.grouped_swiglu.log $OUT/gemm.fp8.log | cut -c1-200
grep -hE "^\| |^### " $OUT/moe.grouped_swiglu.compare.txt $OUT/gemm.fp8.compare.txt | cut -c1-160
