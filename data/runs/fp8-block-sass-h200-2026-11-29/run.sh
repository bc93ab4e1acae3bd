#!/usr/bin/env bash
# ncu per-instruction (SASS) stall sampling: gemm.fp8 block vs tensor scales, one config
set -u
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/build/gpu:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/n
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
ncu --version | tail -1
C=BLOCK_M=128,BLOCK_N=128,CONSUMERS=2,STAGES=5,PART_BUFFERS=2,PERSISTENT=1,RASTER=8
for t in block tensor; do
  timeout 150 ncu --target-processes all --kernel-name regex:"^gemm_fp8\$" --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    -o /tmp/n/$t -f build/gpu/tune run recipes/gemm/fp8.lua --db /tmp/n/$t.db --problem m4096n4096k7168_$t --only $C --seed 1 --quiet > /tmp/n/run_$t.log 2>&1
  echo "$t exit $?"; tail -3 /tmp/n/run_$t.log
  ncu --import /tmp/n/$t.ncu-rep --page source --csv --print-source sass > /tmp/n/src_$t.csv 2>&1
  ncu --import /tmp/n/$t.ncu-rep --page details > /tmp/n/details_$t.txt 2>&1
  head -3 /tmp/n/src_$t.csv | cut -c1-600
  wc -l /tmp/n/src_$t.csv
done
tar czf $OUT/src.tgz -C /tmp/n src_block.csv src_tensor.csv details_block.txt details_tensor.txt run_block.log run_tensor.log
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
