#!/usr/bin/env bash
# ncu of gemm.fp8_skinny's best per-tensor config at m1n18432k7168 against gemm.skinny's (bf16) best
# at m1n14336k4096_col: the same block shape (BLOCK_N 128, a 128-byte slot, 6 stages, SPLIT_K 1)
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/n
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
run() {  # tag recipe problem only
  timeout 75 ncu --target-processes all --kernel-name regex:'^gemm_skinny$' --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    -o /tmp/n/$1 -f build/dev/tune run recipes/gemm/$2.lua --db /tmp/n/$1.db --problem $3 --only $4 --seed 1 --quiet > /tmp/n/run_$1.log 2>&1
  echo "$1 exit $?"
  ncu --import /tmp/n/$1.ncu-rep --page details > $OUT/details_$1.txt 2>&1
  grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Issue Slots Busy|No Eligible|Stall|Warp Cycles Per Issued" $OUT/details_$1.txt | head -16
}
run fp8 fp8_skinny m1n18432k7168_tensor BLOCK_N=128,BLOCK_K=128,STAGES=6,WARPS_N=4,WARPS_K=1,SPLIT_K=1
run bf16 skinny m1n14336k4096_col BLOCK_N=128,BLOCK_K=64,STAGES=6,WARPS_N=4,WARPS_K=1,SPLIT_K=1
