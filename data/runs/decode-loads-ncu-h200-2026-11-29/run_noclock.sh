#!/usr/bin/env bash
# ncu at decode sizes without clock control (the SMs at the clock they find), clean caches: the GEMV, the TMA ring, the cp.async ring
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/n
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
run() {  # tag recipe kernel problem only
  timeout 80 ncu --clock-control none --target-processes all --kernel-name regex:"^$3\$" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats --section Occupancy \
    -o /tmp/n/$1 -f build/dev/tune run recipes/$2.lua --db /tmp/n/$1.db --problem $4 --only $5 --seed 1 --quiet > /tmp/n/run_$1.log 2>&1
  echo "$1 exit $?"
  ncu --import /tmp/n/$1.ncu-rep --page details > $OUT/details_$1_noclock.txt 2>&1
  echo "== $1"; grep -E "^    Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Registers Per" $OUT/details_$1_noclock.txt | head -12
}
P=m1n14336k4096_col
run gemv_m1 gemm gemm_bf16 $P PATH=2,GEMV_WARPS=8,GEMV_COLS=1,GEMV_UNROLL=4
run skinny_m1 gemm/skinny gemm_skinny $P BLOCK_N=128,BLOCK_K=64,STAGES=6,WARPS_N=4,WARPS_K=1,SPLIT_K=1,MMA=0
P=m16n14336k4096_col
run mma_m16 gemm gemm_bf16 $P PATH=0,BLOCK_M=16,BLOCK_N=64,WARPS_M=1,WARPS_N=4,BLOCK_K=64,STAGES=5
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
