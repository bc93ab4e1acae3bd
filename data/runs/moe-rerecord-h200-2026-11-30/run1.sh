#!/usr/bin/env bash
# The FP8 mainloop's idle warps (roles() hands idle work to producer warps 1-3) and the shared expert
# table (gemm/expert_tiles.cuh, now the bf16 kernel's too): gemm.fp8 and moe.grouped_fp8 recorded
# whole again (their sources changed); the 6 tensor-scaled moe.grouped_fp8 problems compared with
# the per-expert torch._scaled_mm loop (its weight scales now tensors of their own); tunert.torch's
# FP8 MoE GPU tests (moe_layer_fp8 among them) on a bundle of the new recording.
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$R/build/gpu/libtune_cupti_py.so
B=build/gpu/tune W=/tmp/w1; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 215 $B run recipes/moe/grouped_fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/grouped_fp8.db > $OUT/grouped_fp8.log 2>&1
echo "grouped_fp8 rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 95 $B compare recipes/moe/grouped_fp8.lua --problem scale=tensor --rounds 3 --top-k 2 --db $W/grouped_fp8.db > $OUT/grouped_fp8_tensor.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/grouped_fp8.db $OUT/moe.grouped_fp8.db
cp $OUT/moe.grouped_fp8.db data/recorded/moe.grouped_fp8.db
(cd tests/python && SRC=$R TUNE=$R/build/gpu/tune TUNERT_LIBRARY=$R/build/gpu/libtunert.so PYTHONPATH=$R/python/src \
  timeout 60 python3 -m unittest -v test_ops_gpu.MoeFp8GpuTest) > $OUT/test_ops_gpu.txt 2>&1
echo "python tests rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 235 $B run recipes/gemm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.log 2>&1
echo "gemm.fp8 rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
sqlite3 $W/grouped_fp8.db "select status, count(*) from results group by status"
sqlite3 $W/gemm.fp8.db "select status, count(*) from results group by status"
grep -E "results, |GPU busy" $OUT/grouped_fp8.log $OUT/gemm.fp8.log | cut -c1-200
grep -E "skipped|wrong|NOT_SUPP" $OUT/grouped_fp8_tensor.compare.txt | head -6 | cut -c1-200
grep -E "^\| " $OUT/grouped_fp8_tensor.compare.txt | cut -c1-160
tail -12 $OUT/test_ops_gpu.txt
