#!/usr/bin/env bash
# gemm.fp8 with RING_POS (0: the K index form, the template's code before; 1: slot and parity
# carried) as a tunable: both recipes re-recorded whole (both forms of every config in the same
# run), then the large block- and tensor-scaled problems compared with torch's scaled_mm
cd "$(dirname "$0")/../../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$R/build/gpu/libtune_cupti_py.so
B=build/gpu/tune W=/tmp/w4; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 330 $B run recipes/gemm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
timeout -s INT 200 $B compare recipes/gemm/fp8.lua --problem M=4096,scale=block --problem M=8192,scale=block --problem M=4096,scale=tensor --rounds 3 --top-k 2 --db $W/gemm.fp8.db > $OUT/gemm.fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/gemm.fp8.log | cut -c1-200
grep -E "skipped|wrong" $OUT/gemm.fp8.compare.txt | head -5
grep -E "^\| |^### " $OUT/gemm.fp8.compare.txt | cut -c1-200
