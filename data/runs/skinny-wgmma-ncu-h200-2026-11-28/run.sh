#!/usr/bin/env bash
# ncu of the wgmma op's (MMA 2) best configs where the H200 comparison still has them behind the peer:
# gemm.skinny M=128 (both layouts of b) and gemm.fp8_skinny per-tensor m16n14336k4096
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/n
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
run() {  # tag recipe problem only
  timeout 80 ncu --target-processes all --kernel-name regex:'^gemm_skinny$' --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    -o /tmp/n/$1 -f build/dev/tune run recipes/gemm/$2.lua --db /tmp/n/$1.db --problem $3 --only $4 --seed 1 --quiet > /tmp/n/run_$1.log 2>&1
  echo "$1 exit $?"
  ncu --import /tmp/n/$1.ncu-rep --page details > $OUT/details_$1.txt 2>&1
  grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" $OUT/details_$1.txt | head -12
}
run m128row skinny m128n8192k8192_row BLOCK_N=64,BLOCK_K=128,STAGES=4,WARPS_N=4,WARPS_K=1,SPLIT_K=1,MMA=2
run m128col skinny m128n8192k8192_col BLOCK_N=64,BLOCK_K=64,STAGES=4,WARPS_N=4,WARPS_K=1,SPLIT_K=2,MMA=2
run fp8m16 fp8_skinny m16n14336k4096_tensor BLOCK_N=64,BLOCK_K=256,STAGES=5,WARPS_N=4,WARPS_K=1,SPLIT_K=1,MMA=2
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
