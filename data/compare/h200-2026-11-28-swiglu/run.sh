#!/usr/bin/env bash
# moe.grouped_swiglu compared again on its H200 recording (torch.compile peer reset per problem)
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w5; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), tree of the swiglu peer fix" | tee -a $OUT/gpu.txt
cp data/recorded/h200/moe.grouped_swiglu.db $W/
timeout -s INT 200 $B compare recipes/moe/swiglu.lua --rounds 3 --top-k 2 --timing burst --db $W/moe.grouped_swiglu.db > $OUT/moe.grouped_swiglu.compare.txt 2>&1
echo "swiglu compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/moe.grouped_swiglu.db $OUT/moe.grouped_swiglu.db
grep -c FailOnRecompileLimitHit $OUT/moe.grouped_swiglu.compare.txt
grep -aE "^\| |^### " $OUT/moe.grouped_swiglu.compare.txt | cut -c1-170
