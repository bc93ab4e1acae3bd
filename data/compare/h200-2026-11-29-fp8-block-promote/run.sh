#!/usr/bin/env bash
# gemm.fp8 after the block-mode promotion change (sa * sb formed once per row and block; one scale
# block per tile of width <= 128): gemm.fp8 and gemm.fp8_fast searched whole (the H200 recording),
# then the large block-scaled problems compared with torch's blockwise scaled_mm (burst + sustained)
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w4; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), tree of commit $(git rev-parse --short HEAD 2>/dev/null) + the fp8 changes" | tee -a $OUT/gpu.txt
timeout -s INT 280 $B run recipes/gemm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 200 $B compare recipes/gemm/fp8.lua --problem M=4096,scale=block --problem M=8192,scale=block --rounds 3 --top-k 2 --db $W/gemm.fp8.db > $OUT/gemm.fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
grep -E "results, |GPU busy" $OUT/gemm.fp8.log | cut -c1-200
grep -E "^\| |^### " $OUT/gemm.fp8.compare.txt | cut -c1-200
