#!/usr/bin/env bash
# temporary: ncu of attention.decode's best configs, D64 GQA8 against D128 GQA4
set -u
OUT=${OUT:?}
cd build/lib && ln -sf libtunert.so.0.5.0 libtunert.so.0 2>/dev/null; cd ../..
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/n
run() {  # tag problem only
  timeout 200 ncu --target-processes all --kernel-name regex:'^attn_decode_split$' --launch-skip 3 --launch-count 1 --set full \
    -o /tmp/n/$1 -f build/tune run recipes/attention/decode.lua --db /tmp/n/$1.db --problem $2 --only $3 --seed 1 --quiet > /tmp/n/run_$1.log 2>&1
  echo "$1 exit $?"
  ncu --import /tmp/n/$1.ncu-rep --page details > /tmp/n/details_$1.txt 2>&1
  ncu --import /tmp/n/$1.ncu-rep --page source --print-source sass --csv > /tmp/n/sass_$1.csv 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Issue Slots Busy|Executed Ipc Active|No Eligible|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit" /tmp/n/details_$1.txt | head -20
}
run d64 b32hq64hkv8d64p16x128 SPLITS=1,BLOCK_N=32,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=2,KV_RING=0
run d128 b32hq32hkv8d128p16x256 SPLITS=8,BLOCK_N=32,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=2,KV_RING=0
tar czf $OUT/ncu.tgz -C /tmp/n details_d64.txt details_d128.txt sass_d64.csv sass_d128.csv run_d64.log run_d128.log
