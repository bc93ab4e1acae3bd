#!/usr/bin/env bash
# run2.sh's recording again, kept this time (run2's database did not come back: one file past the
# eight a call returns), with the decode problems' comparison in it; moe.grouped_swiglu recorded
# whole (its launch grid is the same shared bound); tunert.torch's FP8 MoE GPU tests on a bundle
# of the new moe.grouped_fp8 recording.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
R=$(pwd)
G=$R/build/gpu2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$G:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$G/libtune_cupti_py.so TUNERT_LIBRARY=$G/libtunert.so TUNE=$G/tune
W=/tmp/w3; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 280 $TUNE run recipes/moe/grouped_fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/grouped_fp8.db > $OUT/grouped_fp8.log 2>&1
echo "grouped_fp8 rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 45 $TUNE compare recipes/moe/grouped_fp8.lua --problem T=8 --problem T=64 --rounds 3 --top-k 2 --timing burst --db $W/grouped_fp8.db > $OUT/grouped_fp8_decode.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/grouped_fp8.db $OUT/moe.grouped_fp8.db
cp $OUT/moe.grouped_fp8.db data/recorded/moe.grouped_fp8.db
(cd tests/python && SRC=$R PYTHONPATH=$R/python/src timeout 60 python3 -m unittest -v test_ops_gpu.MoeFp8GpuTest) > $OUT/test_ops_gpu.txt 2>&1
echo "python tests rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 150 $TUNE run recipes/moe/swiglu.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/moe.grouped_swiglu.db > $OUT/moe.grouped_swiglu.log 2>&1
echo "moe.grouped_swiglu rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/moe.grouped_swiglu.db $OUT/moe.grouped_swiglu.db
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/*.log | cut -c1-200
grep -E "^\| " $OUT/grouped_fp8_decode.compare.txt | cut -c1-160
tail -4 $OUT/test_ops_gpu.txt
ls $OUT
