#!/usr/bin/env bash
# tools/bench/burst_start_cost.cu on the device (built here: nvcc -O3 -arch=sm_90a -o build/dev/burst_start_cost
# tools/bench/burst_start_cost.cu -lcuda, carried in build/dev)
cd "$(dirname "$0")/../../.."
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u
for a in "117 50 200" "117 50 100" "16 50 200"; do build/dev/burst_start_cost $a; done 2>&1 | tee $OUT/burst_start_cost.txt
# second call (01:40 UTC): the three read orders at 132 MiB (whole rounds of rows and row groups)
for p in 0 1 2; do build/dev/burst_start_cost 132 40 200 $p; done 2>&1 | tee $OUT/burst_start_cost_patterns.txt
# third call (01:43 UTC): short blocks (the GEMV's grid) against one block per SM, both reading rows
for p in 3 1; do build/dev/burst_start_cost 132 40 32 $p; done 2>&1 | tee $OUT/burst_start_cost_short_blocks.txt
