#!/usr/bin/env bash
# ncu: attention.decode_tma's best config on b32hq32hkv8d128p16x256 against attention.decode's
# (the register path, STAGES 2) on the same problem and seed: split and combine kernels
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/n
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
run() {  # tag recipe only
  timeout 120 ncu --target-processes all --kernel-name regex:"^attn_decode_" --launch-skip 6 --launch-count 2 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats \
    -o /tmp/n/$1 -f build/dev/tune run recipes/attention/$2.lua --db /tmp/n/$1.db --problem b32hq32hkv8d128p16x256 \
    --only $3 --seed 1 --quiet > /tmp/n/run_$1.log 2>&1
  echo "$1 exit $?"
  ncu --import /tmp/n/$1.ncu-rep --page details > /tmp/n/details_$1.txt 2>&1
  echo "== $1"; grep -E "attn_decode_|^    Duration|DRAM Throughput|Memory Throughput|No Eligible|Warp Cycles Per Issued|Issue Slots Busy|Achieved Occupancy|Theoretical Occupancy|Block Limit" /tmp/n/details_$1.txt | head -40
}
run tma decode_tma SPLITS=4,BLOCK_N=64,WARPS=4,KV_RING=3
run reg decode SPLITS=4,BLOCK_N=64,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=2,KV_RING=0,MMA=1
cat /tmp/n/details_*.txt > $OUT/details.txt
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
