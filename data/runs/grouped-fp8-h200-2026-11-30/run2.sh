#!/usr/bin/env bash
# moe.grouped_fp8 recorded whole again under the DRAM-bound rule for suspicious results (the first
# recording flagged DeepSeek decode configs streaming at 4.33-4.35 TB/s, between the copy's 5 % and
# the DRAM bound), then every problem of both recipes compared with the peers, burst and sustained
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$R/build/gpu/libtune_cupti_py.so
B=build/gpu/tune W=/tmp/w2; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' | tee -a $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 220 $B run recipes/moe/grouped_fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/grouped_fp8.db > $OUT/grouped_fp8.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 330 $B compare recipes/moe/grouped_fp8.lua --rounds 3 --top-k 2 --db $W/grouped_fp8.db > $OUT/grouped_fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/grouped_fp8.db $OUT/grouped_fp8.db
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy|device limits" $OUT/grouped_fp8.log | cut -c1-200
grep -E "skipped|wrong|error" $OUT/grouped_fp8.compare.txt | head -12 | cut -c1-250
grep -E "^\| " $OUT/grouped_fp8.compare.txt | cut -c1-160 | head -70
