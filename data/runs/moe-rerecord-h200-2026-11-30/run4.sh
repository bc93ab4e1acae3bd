#!/usr/bin/env bash
# moe.swiglu_fp8 / moe.swiglu_fp8_static with SPLIT (blocks per row along N in the group and static
# modes) recorded whole and compared, burst and sustained, with eager PyTorch and torch.compile of the
# same; tunert.torch's SwigluFp8GpuTest and MoeFp8GpuTest again.
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
export TUNE_CUPTI_PY=$R/build/gpu/libtune_cupti_py.so
B=build/gpu/tune W=/tmp/w4; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 130 $B run recipes/moe/swiglu_fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --db $W/swiglu_fp8.db > $OUT/swiglu_fp8.log 2>&1
echo "swiglu_fp8 rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/swiglu_fp8.db $OUT/moe.swiglu_fp8.db
timeout -s INT 140 $B compare recipes/moe/swiglu_fp8.lua --rounds 3 --top-k 2 --db $W/swiglu_fp8.db > $OUT/swiglu_fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/swiglu_fp8.db $OUT/moe.swiglu_fp8.db
(cd tests/python && SRC=$R TUNE=$R/build/gpu/tune TUNERT_LIBRARY=$R/build/gpu/libtunert.so PYTHONPATH=$R/python/src \
  timeout 60 python3 -m unittest -v test_ops_gpu.SwigluFp8GpuTest test_ops_gpu.MoeFp8GpuTest) > $OUT/test_ops_gpu.txt 2>&1
echo "python tests rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/*.log | cut -c1-200
grep -E "wrong|skipped" $OUT/swiglu_fp8.compare.txt | head -5 | cut -c1-200
grep -E "^\| " $OUT/swiglu_fp8.compare.txt | grep -v -- "---\|problem |" | cut -d'|' -f2-8 | cut -c1-120
tail -4 $OUT/test_ops_gpu.txt
