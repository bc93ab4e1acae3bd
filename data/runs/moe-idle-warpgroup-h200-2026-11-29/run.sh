#!/usr/bin/env bash
# moe.grouped: a consumer warpgroup whose rows all lie past its expert's issues no wgmma. The Mixtral
# T=8192 contiguous problems and the capacity-4096 masked ones searched whole and compared (both modes)
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w6; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
P="--problem e8n28672k4096t8192m1 --problem e8n4096k14336t8192m1 --problem e8n28672k4096cap4096m0 --problem e8n4096k14336cap4096m0"
timeout -s INT 200 $B run recipes/moe/grouped.lua --strategy exhaustive $P --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/moe.grouped.db > $OUT/moe.grouped.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 200 $B compare recipes/moe/grouped.lua $P --rounds 3 --top-k 2 --db $W/moe.grouped.db > $OUT/moe.grouped.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/moe.grouped.db $OUT/moe.grouped.db
grep -E "results, |GPU busy" $OUT/moe.grouped.log | cut -c1-200
grep -E "^\| |^### " $OUT/moe.grouped.compare.txt | cut -c1-200
