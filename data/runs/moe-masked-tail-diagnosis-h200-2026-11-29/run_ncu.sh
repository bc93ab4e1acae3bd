#!/usr/bin/env bash
# masked tail problem: all configs, sustained of the best, ncu of tune's kernels and of cuBLAS bmm
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
T=build/dev/tune
mkdir -p /tmp/n
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
P=e8n1000k1032cap300m0
$T run recipes/moe/grouped.lua --db /tmp/n/m.db --problem $P --problem e8n1000k1032t1000m0 --strategy exhaustive --seed 1 --quiet > $OUT/run.log 2>&1
echo "run exit $?"
sqlite3 /tmp/n/m.db "select problem, round(median_ns/1000.0,2), registers, params from v_results where status='ok' order by problem, median_ns" > $OUT/configs.txt
head -5 $OUT/configs.txt
$T run recipes/moe/grouped.lua --db /tmp/n/s.db --problem $P --timing sustained --seed 1 --quiet --only BLOCK_M=128,BLOCK_N=256,CONSUMERS=2,STAGES=4,WS=1,PERSISTENT=1,RASTER=1 --only BLOCK_M=64,BLOCK_N=128,CONSUMERS=1,STAGES=4,WS=1,USE_TMA=1,PERSISTENT=0,RASTER=1 --strategy exhaustive > $OUT/sustained.log 2>&1
sqlite3 /tmp/n/s.db "select problem, timing, round(median_ns/1000.0,2), params from v_results where status='ok'" | tee -a $OUT/configs.txt
nc() {  # tag problem only
  timeout 120 ncu --target-processes all --kernel-name regex:"^grouped_gemm_bf16\$" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
    -o /tmp/n/$1 -f $T run recipes/moe/grouped.lua --db /tmp/n/$1.db --problem $2 --only $3 --strategy exhaustive --seed 1 --quiet > /tmp/n/run_$1.log 2>&1
  echo "$1 exit $?"
  ncu --import /tmp/n/$1.ncu-rep --page details > /tmp/n/details_$1.txt 2>&1
}
nc m128x256 $P BLOCK_M=128,BLOCK_N=256,CONSUMERS=2,STAGES=4,WS=1,PERSISTENT=1,RASTER=1
nc m64x128 $P BLOCK_M=64,BLOCK_N=128,CONSUMERS=1,STAGES=4,WS=1,USE_TMA=1,PERSISTENT=0,RASTER=1
cat > /tmp/n/bmm.py <<'PY'
import torch
E, cap, N, K = 8, 300, 1000, 1032
a = torch.randn(E, cap, K, device="cuda", dtype=torch.bfloat16)
w = torch.randn(E, N, K, device="cuda", dtype=torch.bfloat16)
for _ in range(5):
    c = torch.bmm(a, w.transpose(1, 2))
torch.cuda.synchronize()
PY
timeout 120 ncu --kernel-name regex:"nvjet|gemm|sm90" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
    -o /tmp/n/bmm -f python3 /tmp/n/bmm.py > /tmp/n/run_bmm.log 2>&1
echo "bmm exit $?"
ncu --import /tmp/n/bmm.ncu-rep --page details > /tmp/n/details_bmm.txt 2>&1
cat /tmp/n/details_*.txt > $OUT/details.txt
for f in /tmp/n/details_*.txt; do echo "== $f"; grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|Compute \(SM\) Throughput|Achieved Occupancy|Grid Size|Block Size|Registers Per|Dynamic Shared|Waves Per SM|SM Frequency" $f | head -16; done
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
