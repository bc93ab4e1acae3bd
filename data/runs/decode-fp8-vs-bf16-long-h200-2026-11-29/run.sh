#!/usr/bin/env bash
# One decode step at long context, bf16 cache against e4m3 cache, in one call: the four decode
# families (MMA 1 for the two register-fed ones, every config of the two TMA-fed ones) tuned on the
# same two single sequences (32768 keys, HQ 32; 131072 keys, HQ 64; HKV 8, D 128) from
# problems.jsonl, into one database; then each family's best per problem.
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=${TUNE:-build/tune} W=/tmp/long; rm -rf $W; mkdir -p $W
P=data/runs/decode-fp8-vs-bf16-long-h200-2026-11-29/problems.jsonl
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
for r in decode decode_tma decode_fp8 decode_fp8_tma; do
  only=(); case $r in decode|decode_fp8) only=(--only MMA=1) ;; esac
  timeout -s INT 150 $B run recipes/attention/$r.lua --problems-from $P "${only[@]}" --strategy exhaustive --seed 1 \
    --quiet --jobs 16 --timeout 20000 --db $W/long.db >> $W/long.log 2>&1
  echo "run $r rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
done
python3 tools/lean_db.py $W/long.db $OUT/long.db > /dev/null
cp $W/long.log $OUT/
grep -E "results, |GPU busy" $W/long.log | cut -c1-160
python3 tools/bench/decode_drawn_bytes.py $W/long.db | grep '^| attention\|copy'
