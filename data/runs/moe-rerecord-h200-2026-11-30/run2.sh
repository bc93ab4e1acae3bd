#!/usr/bin/env bash
# gemm.fp8_fast's problems that run1's time limit cut (fp8_fast_rest.jsonl) measured into its
# recording; moe.grouped (bf16, both layouts) recorded whole on the shared expert table, whose
# masked padding walk is the fp8 kernel's (c's chunks, a few per thread); compared with the peers:
# masked problems burst and sustained, contiguous burst.
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$R/build/gpu/libtune_cupti_py.so
B=build/gpu/tune W=/tmp/w2; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
cp data/recorded/h200/gemm.fp8.db $W/gemm.fp8.db
timeout -s INT 70 $B run recipes/gemm/fp8.lua --problems-from data/runs/moe-rerecord-h200-2026-11-30/fp8_fast_rest.jsonl --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8_fast_rest.log 2>&1
echo "gemm.fp8_fast rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
timeout -s INT 240 $B run recipes/moe/grouped.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/moe.grouped.db > $OUT/moe.grouped.log 2>&1
echo "moe.grouped rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 140 $B compare recipes/moe/grouped.lua --problem cap=16 --problem cap=300 --problem cap=512 --problem cap=4096 --rounds 3 --top-k 2 --db $W/moe.grouped.db > $OUT/moe.grouped_masked.compare.txt 2>&1
echo "compare masked rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/moe.grouped.db $OUT/moe.grouped.db
timeout -s INT 100 $B compare recipes/moe/grouped.lua --problem min_tokens=0 --problem min_tokens=1 --rounds 3 --top-k 2 --timing burst --db $W/moe.grouped.db > $OUT/moe.grouped.compare.txt 2>&1
echo "compare contiguous rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/moe.grouped.db $OUT/moe.grouped.db
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/*.log | cut -c1-200
grep -E "^\| " $OUT/moe.grouped_masked.compare.txt $OUT/moe.grouped.compare.txt | grep -v -- "---\|problem |" | cut -d'|' -f2-8 | cut -c1-140
