#!/usr/bin/env bash
# ncu of gemm.fp8 at 4096x4096x7168 after the scale changes of 2026-11-29 (block scales two K blocks
# ahead, row scales staged for the epilogue): block, row and tensor scales on one tile config, stall
# samples per SASS instruction and the pipe utilizations
set -u
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/build/gpu:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/n
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
C=BLOCK_M=128,BLOCK_N=128,CONSUMERS=2,STAGES=5,PART_BUFFERS=2,PERSISTENT=1,RASTER=8
for t in block row tensor; do
  timeout 100 ncu --target-processes all --kernel-name regex:"^gemm_fp8\$" --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --metrics sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed \
    -o /tmp/n/$t -f build/gpu/tune run recipes/gemm/fp8.lua --db /tmp/n/$t.db --problem m4096n4096k7168_$t --only $C --seed 1 --quiet > /tmp/n/run_$t.log 2>&1
  echo "$t exit $?"
  ncu --import /tmp/n/$t.ncu-rep --page source --csv --print-source sass > /tmp/n/src_$t.csv 2>&1
  ncu --import /tmp/n/$t.ncu-rep --page details > /tmp/n/details_$t.txt 2>&1
  ncu --import /tmp/n/$t.ncu-rep --page raw --csv > /tmp/n/raw_$t.csv 2>&1
  python3 -c "import csv,sys; r=list(csv.reader(open(sys.argv[1]))); i=r[0].index('sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed'); print(sys.argv[2], 'tensor pipe', r[2][i], '% of elapsed')" /tmp/n/raw_$t.csv $t
  grep -E "^    Duration|SM Frequency|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc A" /tmp/n/details_$t.txt | head -6
done
tar czf $OUT/src.tgz -C /tmp/n $(cd /tmp/n && ls src_*.csv raw_*.csv details_*.txt run_*.log)
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
