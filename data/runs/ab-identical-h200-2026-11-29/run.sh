#!/usr/bin/env bash
# tools/bench/ab_roots.sh on a GPU with two identical trees (an A/A: build/exp/rootA is `git archive`
# of the same commit): how far apart two trees' bests fall by noise alone, and what the decision
# says when nothing changed
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
TUNE=$R/build/gpu/tune TIMEOUT=60 tools/bench/ab_roots.sh /tmp/aa --old build/exp/rootA -- recipes/gemm/fp8.lua \
  --problem m4096n4096k7168_tensor --problem m4096n4096k7168_row --problem m4096n4096k7168_block \
  --problem m16n14336k4096_row --problem m1000n1040k1072_block --jobs 16 2>&1 | tee $OUT/ab_roots.txt
cp /tmp/aa/ab.md /tmp/aa/decision $OUT/ 2>/dev/null
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
