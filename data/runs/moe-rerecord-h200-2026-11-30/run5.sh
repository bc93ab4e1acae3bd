#!/usr/bin/env bash
# run4's comparison was cut by its time limit after the group problems (torch.compile's sustained
# rounds are launch-bound from Python): the token and static problems, burst, on run4's recording.
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$R/build/gpu/libtune_cupti_py.so
W=/tmp/w5; rm -rf $W; mkdir -p $W; cp data/recorded/moe.swiglu_fp8.db $W/swiglu_fp8.db
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,uuid --format=csv,noheader | tee $OUT/gpu.txt
timeout -s INT 75 build/gpu/tune compare recipes/moe/swiglu_fp8.lua --problem quant=static --problem quant=token --rounds 3 --top-k 2 --timing burst --db $W/swiglu_fp8.db > $OUT/swiglu_fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/swiglu_fp8.db $OUT/moe.swiglu_fp8.db
grep -E "^\| " $OUT/swiglu_fp8.compare.txt | grep -v -- "---\|problem |" | cut -d'|' -f2-8 | cut -c1-120
tail -3 $OUT/swiglu_fp8.compare.txt | cut -c1-200
