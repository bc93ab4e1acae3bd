#!/usr/bin/env bash
# gemm.fp8_skinny: the re-recording (two-warpgroup template) compared with torch._scaled_mm
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w6; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
cp data/recorded/gemm.fp8_skinny.db $W/gemm.fp8_skinny.db
timeout -s INT 220 $B compare recipes/gemm/fp8_skinny.lua --rounds 3 --top-k 2 --db $W/gemm.fp8_skinny.db > $OUT/gemm.fp8_skinny.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8_skinny.db $OUT/gemm.fp8_skinny.db
grep -E "^\| m" $OUT/gemm.fp8_skinny.compare.txt | cut -c1-130
