#!/usr/bin/env bash
# recipes/gemm.lua's decode problems (M 1 and 16, both layouts; gemm with its CUDA-core GEMV path,
# gemm.splitk, gemm.gemv_rows) exhaustive + compare vs cuBLAS: which family serves M = 1 and 16
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w3; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
PR="--problem M=1 --problem M=16"
timeout -s INT 150 $B run recipes/gemm.lua $PR --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.db > $OUT/gemm.log 2>&1
echo "gemm run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 330 $B compare recipes/gemm.lua $PR --rounds 3 --top-k 2 --db $W/gemm.db > $OUT/gemm.compare.txt 2>&1
echo "gemm compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.db $OUT/gemm.db
grep -E "results, |GPU busy|no verified" $OUT/gemm.log | cut -c1-200
grep -E "^\| |^== " $OUT/gemm.compare.txt | grep -v -- "--- |" | cut -c1-150
