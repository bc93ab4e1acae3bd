#!/usr/bin/env bash
# moe.grouped (bf16, both layouts) recorded whole (the shared launch bound changed); a bundle of it,
# run3's moe.grouped_swiglu recording and moe.combine's; the bf16 layer (tools/bench/moe_layer.py)
# on it at 1, 8 and 4096 tokens.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
R=$(pwd)
G=$R/build/gpu2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$G:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$G/libtune_cupti_py.so TUNERT_LIBRARY=$G/libtunert.so TUNE=$G/tune
W=/tmp/w4; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 235 $TUNE run recipes/moe/grouped.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/moe.grouped.db > $OUT/moe.grouped.log 2>&1
echo "moe.grouped rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/moe.grouped.db $OUT/moe.grouped.db
$TUNE bundle --recipe moe.grouped,moe.grouped_swiglu,moe.combine --db $OUT/moe.grouped.db --db data/recorded/h200/moe.grouped_swiglu.db \
  --db data/recorded/h200/moe.combine.db --arch sm_90a --quiet -o $W/moe.bundle > $OUT/bundle.txt 2>&1
echo "bundle rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout 85 python3 tools/bench/moe_layer.py --bundle $W/moe.bundle --tokens 1,8,4096 --json-out $OUT/moe_layer.json > $OUT/moe_layer.txt 2>&1
echo "moe_layer rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, " $OUT/moe.grouped.log | cut -c1-200
grep -E "^\| [0-9]|^[a-z0-9-]+: E|tokens, |Error" $OUT/moe_layer.txt | cut -c1-230
