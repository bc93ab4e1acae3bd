#!/usr/bin/env bash
# The FP8 MoE layer (tunert.torch.moe_layer_fp8) against the same layer as PyTorch runs it
# (tools/bench/moe_fp8_peer.py), eager and under torch.compile, on an H200, from a bundle of the H200
# recordings (built here:
#   build/tune bundle --recipe moe.grouped_fp8,moe.swiglu_fp8,moe.swiglu_fp8_static,moe.combine \
#     --db data/recorded/moe.grouped_fp8.db --db data/recorded/moe.swiglu_fp8.db \
#     --db data/recorded/h200/moe.combine.db --arch sm_90a -o build/gpu_layer/moe_fp8_h200.bundle).
# Mixtral-8x7B in FP8 with row and tensor scales, DeepSeek-V3's 256 experts with row and block scales:
# the token buckets of the recordings (Mixtral 16 and 2048 tokens, DeepSeek 64 and 1024) and others.
# It ran as data/serve/h200-2026-11-30-moe-layer-fp8/run.sh (the same depth), build/gpu_layer carried.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
R=$PWD
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu_layer:${LD_LIBRARY_PATH:-}
export TUNERT_LIBRARY=$R/build/gpu_layer/libtunert.so
B=build/gpu_layer/moe_fp8_h200.bundle
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout 240 python3 tools/bench/moe_layer.py --bundle $B --model mixtral-8x7b --fp8 row,tensor \
  --tokens 1,16,64,512,2048 --json-out $OUT/mixtral.json > $OUT/mixtral.txt 2>&1
echo "mixtral rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout 280 python3 tools/bench/moe_layer.py --bundle $B --model deepseek-v3 --fp8 row,block \
  --tokens 1,8,64,1024 --json-out $OUT/deepseek.json > $OUT/deepseek.txt 2>&1
echo "deepseek rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
cat $OUT/mixtral.txt $OUT/deepseek.txt > $OUT/moe_layer.txt
grep -E "^\| [0-9]|^[a-z0-9-]+: E|tokens, |Error|error" $OUT/moe_layer.txt | cut -c1-230 | head -60
