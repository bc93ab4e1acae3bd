#!/usr/bin/env bash
# Call b: (1) tools/check/decode_stream.cu, six builds (build/gpu/stream/decode_stream_{bf16,fp8}_
# {b32,b1,b1s}: -D ELEM_BYTES 2 or 1; B32 L4096, B1 L131072, B1 L32768), each under the three L2
# flushes (memset as tune's burst samples, read: clean lines, none: back to back); (2) the four
# decode families' top three configs of decode-fp8-vs-bf16-long (only.txt) re-timed on its two
# single sequences, burst then sustained, one database each.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=${TUNE:-build/tune} D=data/runs/decode-fp8-stream-h200-2026-11-29 W=/tmp/b; rm -rf $W; mkdir -p $W
P=data/runs/decode-fp8-vs-bf16-long-h200-2026-11-29/problems.jsonl
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
for t in bf16_b32 fp8_b32 bf16_b1 fp8_b1 bf16_b1s fp8_b1s; do
  for f in memset read none; do
    echo "== $t $f" >> $OUT/stream.txt
    timeout 60 build/gpu/stream/decode_stream_$t $f >> $OUT/stream.txt 2>&1 || echo "$t $f rc $?" | tee -a $OUT/gpu.txt
  done
done
echo "stream done $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
for timing in burst sustained; do
  for r in decode decode_tma decode_fp8 decode_fp8_tma; do
    only=(); while read -r fam cfg; do [ "$fam" = $r ] && only+=(--only "$cfg"); done < $D/only.txt
    timeout -s INT 200 $B run recipes/attention/$r.lua --problems-from $P "${only[@]}" --strategy exhaustive \
      --timing $timing --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/$timing.db >> $W/$timing.log 2>&1
    echo "$timing $r rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
  done
  python3 tools/lean_db.py $W/$timing.db $OUT/$timing.db > /dev/null
done
cat $W/*.log > $OUT/runs.log
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "^==|copy 1|tma BN64 CW4 S3|contig +reg BN64 W4" $OUT/stream.txt | cut -c1-110 | head -120
