#!/usr/bin/env bash
# gemm.fp8 re-recorded on the H200 after PART_BUFFERS got `absent = 1` (its configs at 1 hash as
# before the parameter existed): both fp8 recipes searched whole, the large block-scaled problems
# compared again; then tests/python test_ops_gpu (bundles of the recordings, on this GPU)
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w5; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 280 $B run recipes/gemm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 120 $B compare recipes/gemm/fp8.lua --problem M=4096,scale=block --problem M=8192,scale=block --rounds 3 --top-k 2 --db $W/gemm.fp8.db > $OUT/gemm.fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
(cd tests/python && SRC=$R TUNE=$R/build/dev/tune TUNERT_LIBRARY=$R/build/lib/libtunert.so PYTHONPATH=$R/python/src timeout 150 python3 -m unittest test_ops_gpu > $OUT/test_ops_gpu.txt 2>&1; echo "test_ops_gpu rc $?" | tee -a $OUT/gpu.txt)
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/gemm.fp8.log | cut -c1-200
grep -E "^\| |^### " $OUT/gemm.fp8.compare.txt | cut -c1-200
tail -4 $OUT/test_ops_gpu.txt
