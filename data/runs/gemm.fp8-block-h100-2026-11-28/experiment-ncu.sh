#!/usr/bin/env bash
# temporary: ncu of gemm.fp8 tensor vs block (same tile config) on m4096n4096k7168, and their SASS
set -u
OUT=${OUT:?}
cd build/lib && ln -sf libtunert.so.0.5.0 libtunert.so.0 2>/dev/null; cd ../..
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cfg=BLOCK_M=128,BLOCK_N=128,CONSUMERS=2,STAGES=6,PERSISTENT=1,RASTER=8
mkdir -p /tmp/n
for sc in block; do
  echo "== $(date -u +%T) $sc"
  timeout 200 ncu --target-processes all --kernel-name regex:'^gemm_fp8$' --launch-skip 3 --launch-count 1 --set full \
    -o /tmp/n/$sc -f build/tune run recipes/gemm/fp8.lua --db /tmp/n/$sc.db --problem m4096n4096k7168_$sc --only $cfg \
    --seed 1 --quiet > /tmp/n/run_$sc.log 2>&1; echo "exit $?"
  ncu --import /tmp/n/$sc.ncu-rep --page details > /tmp/n/details_$sc.txt 2>&1
  ncu --import /tmp/n/$sc.ncu-rep --page source --print-source sass --csv > /tmp/n/sass_$sc.csv 2>&1
  python3 - /tmp/n/$sc.db /tmp/n/$sc.cubin <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
b = c.execute("select cubin from binaries where options like '%SCALE_MODE%' and lowered_name like 'gemm_fp8' and cubin is not null").fetchone()
open(sys.argv[2], "wb").write(b[0]) if b else print("no cubin")
PY
  cuobjdump -sass /tmp/n/$sc.cubin > /tmp/n/objdump_$sc.sass 2>&1
done
for sc in block; do
  echo "--- $sc"
  grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc Active|No Eligible|Registers Per|Achieved Occupancy|L2 Hit Rate|Warp Cycles Per Issued" /tmp/n/details_$sc.txt | head -20
  echo "sass lines: $(wc -l < /tmp/n/objdump_$sc.sass), HGMMA: $(grep -c HGMMA /tmp/n/objdump_$sc.sass), WARPGROUP: $(grep -c WARPGROUP /tmp/n/objdump_$sc.sass), FFMA: $(grep -c FFMA /tmp/n/objdump_$sc.sass), FADD: $(grep -c FADD /tmp/n/objdump_$sc.sass), LDG: $(grep -c LDG /tmp/n/objdump_$sc.sass)"
done
tar czf $OUT/ncu.tgz -C /tmp/n details_block.txt sass_block.csv objdump_block.sass run_block.log
