#!/usr/bin/env bash
# The contiguous grouped GEMMs launch (T // BLOCK_M + min(E, T)) row tiles, not T // BLOCK_M + E
# (recipes/moe/shared/experts.lua): moe.grouped_fp8 recorded whole again, its decode problems
# compared with the peers (burst); a bundle of the recording, moe.swiglu_fp8's and moe.combine's
# built here; the FP8 layer (tools/bench/moe_layer.py --fp8) on it, Mixtral-8x7B (row, tensor) and
# DeepSeek-V3 (row, block): data/serve/h200-2026-11-30-moe-layer-fp8.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
R=$(pwd)
G=$R/build/gpu2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$G:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$G/libtune_cupti_py.so TUNERT_LIBRARY=$G/libtunert.so TUNE=$G/tune
W=/tmp/w2; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 290 $TUNE run recipes/moe/grouped_fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/grouped_fp8.db > $OUT/grouped_fp8.log 2>&1
echo "grouped_fp8 rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 60 $TUNE compare recipes/moe/grouped_fp8.lua --problem T=8 --problem T=64 --rounds 3 --top-k 2 --timing burst --db $W/grouped_fp8.db > $OUT/grouped_fp8_decode.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/grouped_fp8.db $OUT/moe.grouped_fp8.db
$TUNE bundle --recipe moe.grouped_fp8,moe.swiglu_fp8,moe.swiglu_fp8_static,moe.combine --db $OUT/moe.grouped_fp8.db \
  --db data/recorded/moe.swiglu_fp8.db --db data/recorded/h200/moe.combine.db --arch sm_90a --quiet -o $W/moe_fp8.bundle > $OUT/bundle.txt 2>&1
echo "bundle rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout 90 python3 tools/bench/moe_layer.py --bundle $W/moe_fp8.bundle --model mixtral-8x7b --fp8 row,tensor \
  --tokens 1,16,64,512,2048 --json-out $OUT/mixtral.json > $OUT/mixtral.txt 2>&1
echo "mixtral rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout 150 python3 tools/bench/moe_layer.py --bundle $W/moe_fp8.bundle --model deepseek-v3 --fp8 row,block \
  --tokens 1,8,64,1024 --json-out $OUT/deepseek.json > $OUT/deepseek.txt 2>&1
echo "deepseek rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/grouped_fp8.log | cut -c1-200
grep -E "^\| " $OUT/grouped_fp8_decode.compare.txt | cut -c1-160
grep -E "^\| [0-9]|^[a-z0-9-]+: E|tokens, |Error" $OUT/mixtral.txt $OUT/deepseek.txt | cut -c1-230
