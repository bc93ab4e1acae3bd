#!/usr/bin/env bash
# moe.grouped_fp8 with DeepSeek-V3's decode problems (T 8 and 64 over 256 experts, min_tokens 0)
# recorded whole (the recipe's text changed); the new problems compared with the peers (burst);
# a bundle of the new recording, moe.swiglu_fp8's and moe.combine's built here, and the DeepSeek-V3
# FP8 layer timed on it (tools/bench/moe_layer.py, row and block scales).
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
R=$(pwd)
G=$R/build/gpu2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$G:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$G/libtune_cupti_py.so TUNERT_LIBRARY=$G/libtunert.so TUNE=$G/tune
W=/tmp/w1; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 290 $TUNE run recipes/moe/grouped_fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/grouped_fp8.db > $OUT/grouped_fp8.log 2>&1
echo "grouped_fp8 rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 80 $TUNE compare recipes/moe/grouped_fp8.lua --problem T=8 --problem T=64 --rounds 3 --top-k 2 --timing burst --db $W/grouped_fp8.db > $OUT/grouped_fp8_decode.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/grouped_fp8.db $OUT/moe.grouped_fp8.db
$TUNE bundle --recipe moe.grouped_fp8,moe.swiglu_fp8,moe.swiglu_fp8_static,moe.combine --db $OUT/moe.grouped_fp8.db \
  --db data/recorded/moe.swiglu_fp8.db --db data/recorded/h200/moe.combine.db --arch sm_90a --quiet -o $W/moe_fp8.bundle > $OUT/bundle.txt 2>&1
echo "bundle rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout 110 python3 tools/bench/moe_layer.py --bundle $W/moe_fp8.bundle --model deepseek-v3 --fp8 row,block \
  --tokens 1,8,64,1024 > $OUT/deepseek.txt 2>&1
echo "deepseek rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/grouped_fp8.log | cut -c1-200
grep -E "t8m0|t64m0" $OUT/grouped_fp8.log | grep best | cut -c1-220
grep -E "^\| " $OUT/grouped_fp8_decode.compare.txt | cut -c1-160
grep -E "^\| [0-9]|^[a-z0-9-]+: E|tokens, |Error" $OUT/deepseek.txt | cut -c1-230
