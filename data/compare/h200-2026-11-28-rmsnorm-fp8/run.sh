#!/usr/bin/env bash
# rmsnorm.fp8 on the H200, exhaustive, then tune compare
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune-nice W=/tmp/rec5; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), binary of commit 6273a2a" | tee -a $OUT/gpu.txt
timeout -s INT 330 $B run recipes/rmsnorm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/rmsnorm.fp8.db > $OUT/rmsnorm.fp8.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 200 $B compare recipes/rmsnorm/fp8.lua --rounds 3 --top-k 2 --timing burst --db $W/rmsnorm.fp8.db > $OUT/rmsnorm.fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/rmsnorm.fp8.db $OUT/rmsnorm.fp8.db
grep -E "results, |GPU busy" $OUT/rmsnorm.fp8.log | cut -c1-220
grep -E "^\| |^### " $OUT/rmsnorm.fp8.compare.txt
