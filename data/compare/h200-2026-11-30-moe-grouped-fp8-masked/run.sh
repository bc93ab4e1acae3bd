#!/usr/bin/env bash
# After the second masked-layout fix (the padding zeroed by a walk over c's chunks, a few per thread,
# not by every idle thread looping over all experts, which kept blocks alive past their tiles): both
# recipes recorded whole again (the
# recording kept as data/recorded/h200/moe.grouped_fp8.db), the masked problems compared with the
# peers, and tunert.torch's grouped_scaled_mm(_masked) tested on a bundle of the new recording
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$R/build/gpu/libtune_cupti_py.so
B=build/gpu/tune W=/tmp/w4; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 230 $B run recipes/moe/grouped_fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/grouped_fp8.db > $OUT/grouped_fp8.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 120 $B compare recipes/moe/grouped_fp8.lua --problem cap=16 --problem cap=256 --problem cap=300 --rounds 3 --top-k 2 --db $W/grouped_fp8.db > $OUT/grouped_fp8_masked.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/grouped_fp8.db $OUT/grouped_fp8.db
mkdir -p data/recorded/h200 && cp $OUT/grouped_fp8.db data/recorded/h200/moe.grouped_fp8.db
(cd tests/python && SRC=$R TUNE=$R/build/gpu/tune TUNERT_LIBRARY=$R/build/gpu/libtunert.so PYTHONPATH=$R/python/src \
  timeout 100 python3 -m unittest -v test_ops_gpu.MoeFp8GpuTest) > $OUT/test_ops_gpu.txt 2>&1
echo "python tests rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/grouped_fp8.log | cut -c1-200
grep -E "skipped|wrong" $OUT/grouped_fp8_masked.compare.txt | head -6 | cut -c1-200
grep -E "^\| " $OUT/grouped_fp8_masked.compare.txt | cut -c1-160
tail -25 $OUT/test_ops_gpu.txt
