#!/usr/bin/env bash
# gemm.fp8_skinny exhaustive (SPLIT_K 3, 6; zero-in first mma) + compare (burst and sustained) vs torch._scaled_mm
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w2; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), binary of commit 0fbb8b1" | tee -a $OUT/gpu.txt
timeout -s INT 200 $B run recipes/gemm/fp8_skinny.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8_skinny.db > $OUT/fp8_skinny.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy|wrong|no verified" $OUT/fp8_skinny.log | head -20 | cut -c1-250
timeout -s INT 240 $B compare recipes/gemm/fp8_skinny.lua --rounds 3 --top-k 2 --timing both --db $W/gemm.fp8_skinny.db > $OUT/fp8_skinny.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8_skinny.db $OUT/gemm.fp8_skinny.db
grep -E "^\| |^### " $OUT/fp8_skinny.compare.txt | cut -c1-200
