#!/usr/bin/env bash
# The MoE layer (tunert.torch.moe_layer) against PyTorch eager and torch.compile on an H200, from a
# bundle of the H200 recordings (built here:
#   build/tune bundle --recipe moe.grouped --recipe moe.grouped_swiglu --recipe moe.combine \
#     --db data/recorded/h200/moe.grouped.db --db data/recorded/h200/moe.grouped_swiglu.db \
#     --db data/recorded/h200/moe.combine.db -o build/gpu/moe_h200.bundle   -> bundle.txt),
# then the Python package's GPU tests (tests/python/test_ops_gpu.py) with the same build.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
R=$PWD
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
export TUNERT_LIBRARY=$R/build/gpu/libtunert.so TUNE=$R/build/gpu/tune
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout 300 python3 tools/bench/moe_layer.py --bundle build/gpu/moe_h200.bundle --json-out $OUT/moe_layer.json \
  > $OUT/moe_layer.txt 2>&1
echo "moe_layer rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
(cd tests/python && SRC=$R PYTHONPATH=$R/python/src timeout 200 python3 -m unittest test_ops_gpu > $OUT/test_ops_gpu.txt 2>&1)
echo "test_ops_gpu rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "^\||^[a-z0-9-]+: E" $OUT/moe_layer.txt | head -30
tail -4 $OUT/test_ops_gpu.txt
