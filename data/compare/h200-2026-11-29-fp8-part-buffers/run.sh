#!/usr/bin/env bash
# gemm.fp8 with PART_BUFFERS (the next K block's wgmma in flight during the promotion) and the block
# scales loaded a block ahead: the large problems searched whole and compared with torch._scaled_mm
# (burst + sustained), then the rest of gemm.fp8 and gemm.fp8_fast searched whole
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w2; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), tree of commit $(git rev-parse --short HEAD 2>/dev/null) + the PART_BUFFERS change" | tee -a $OUT/gpu.txt
L="--problem M=4096 --problem M=8192"
timeout -s INT 150 $B run recipes/gemm/fp8.lua --strategy exhaustive $L --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.large.log 2>&1
echo "large rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 230 $B compare recipes/gemm/fp8.lua $L --rounds 3 --top-k 2 --db $W/gemm.fp8.db > $OUT/gemm.fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 150 $B run recipes/gemm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.all.log 2>&1
echo "all rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
grep -E "results, |GPU busy" $OUT/gemm.fp8.large.log $OUT/gemm.fp8.all.log | cut -c1-200
grep -E "^\| |^### " $OUT/gemm.fp8.compare.txt | cut -c1-200
