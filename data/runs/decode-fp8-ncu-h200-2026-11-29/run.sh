#!/usr/bin/env bash
# ncu --set full: the e4m3 decode step's best config (attention.decode_fp8, the register path) on the
# two single sequences of decode-fp8-vs-bf16-long (32768 keys HQ 32; 131072 keys HQ 64), and the bf16
# decode's best on the 131072 one (95.5 % of the copy there): what keeps the e4m3 kernel below it
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=${TUNE:-build/tune} D=data/runs/decode-fp8-ncu-h200-2026-11-29 W=/tmp/n; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
prof() {  # tag recipe problem-line only
  sed -n "$3p" $D/problems.jsonl > $W/p_$1.jsonl
  timeout 200 ncu --target-processes all --kernel-name regex:"^attn_decode_split" --launch-skip 4 --launch-count 1 \
    --set full --import-source yes -o $W/$1 -f $B run recipes/attention/$2.lua --problems-from $W/p_$1.jsonl \
    --db $W/$1.db --only $4 --seed 1 --quiet > $W/run_$1.log 2>&1
  echo "$1 exit $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
  ncu --import $W/$1.ncu-rep --page details > $W/details_$1.txt 2>&1
  ncu --import $W/$1.ncu-rep --page raw --csv > $OUT/raw_$1.csv 2>&1
  ncu --import $W/$1.ncu-rep --page source --csv --print-source sass > $W/sass_$1.csv 2>&1
}
FP8=SPLITS=16,BLOCK_N=128,WARPS=8,VEC_BYTES=16,GQA_PACK=1,STAGES=1,KV_RING=2,DEQUANT=0,MMA=1
prof fp8_131072 decode_fp8 2 $FP8
prof fp8_32768 decode_fp8 1 SPLITS=16,BLOCK_N=128,WARPS=8,VEC_BYTES=16,GQA_PACK=1,STAGES=2,KV_RING=0,DEQUANT=0,MMA=1
prof bf16_131072 decode 3 SPLITS=16,BLOCK_N=64,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=1,KV_RING=2,MMA=1
cat $W/details_*.txt > $OUT/details.txt
tar czf $OUT/sass.tgz -C $W $(cd $W && ls sass_*.csv run_*.log)
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
for t in fp8_131072 fp8_32768 bf16_131072; do
  echo "== $t"; grep -E "^    (Duration|DRAM Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc Active|No Eligible|Warp Cycles Per Issued|Achieved Occupancy)" $W/details_$t.txt | head -12
done
