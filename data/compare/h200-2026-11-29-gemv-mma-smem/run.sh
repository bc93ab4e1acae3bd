#!/usr/bin/env bash
# gemm.gemv_mma revived with a staged in shared memory (b still loaded straight into mma.sync
# fragments): exhaustive recording and the comparison with cuBLAS (torch.matmul) on its 8 problems
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
B=build/gpu/tune W=/tmp/w8; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 200 $B run recipes/gemm/gemv_mma.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.gemv_mma.db > $OUT/gemv_mma.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 200 $B compare recipes/gemm/gemv_mma.lua --rounds 3 --top-k 2 --db $W/gemm.gemv_mma.db > $OUT/gemv_mma.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.gemv_mma.db $OUT/gemm.gemv_mma.db
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy|kernels on the GPU|no verified" $OUT/gemv_mma.log | cut -c1-200
grep -E "wrong|failed" $OUT/gemv_mma.log | head -5
grep -E "^\| " $OUT/gemv_mma.compare.txt | cut -c1-170
