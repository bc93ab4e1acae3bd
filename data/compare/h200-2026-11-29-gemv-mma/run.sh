#!/usr/bin/env bash
# gemm.gemv_mma (new: b loaded straight into mma.sync fragments) exhaustive + compare vs cuBLAS;
# moe.grouped_masked tail problem exhaustive + compare; gemm.fp8_skinny re-record (skinny.cuh changed)
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w2; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 100 $B run recipes/gemm/gemv_mma.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.gemv_mma.db > $OUT/gemv_mma.log 2>&1
echo "gemv_mma run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 100 $B compare recipes/gemm/gemv_mma.lua --rounds 3 --top-k 2 --db $W/gemm.gemv_mma.db > $OUT/gemv_mma.compare.txt 2>&1
echo "gemv_mma compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.gemv_mma.db $OUT/gemm.gemv_mma.db
P=e8n1000k1032cap300m0
timeout -s INT 40 $B run recipes/moe/grouped.lua --problem $P --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/moe.db > $OUT/masked.log 2>&1
echo "masked run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 40 $B compare recipes/moe/grouped.lua --problem $P --rounds 3 --top-k 2 --db $W/moe.db > $OUT/masked.compare.txt 2>&1
echo "masked compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 280 $B run recipes/gemm/fp8_skinny.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8_skinny.db > $OUT/fp8_skinny.log 2>&1
echo "fp8 run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8_skinny.db $OUT/gemm.fp8_skinny.db
grep -E "results, |GPU busy|kernels on the GPU|no verified" $OUT/*.log | cut -c1-200
grep -E "wrong|failed" $OUT/gemv_mma.log | head -5
grep -E "^\| " $OUT/gemv_mma.compare.txt $OUT/masked.compare.txt | cut -c1-170
