#!/usr/bin/env bash
# tools/check/decode_stream.cu built four ways here (build/gpu/stream/decode_stream_{bf16,fp8}_{b32,b1}:
# -D ELEM_BYTES 2 or 1, -D STREAM_B 32 -D STREAM_L 4096 or STREAM_B 1 STREAM_L 131072): how fast the
# K/V bytes of a decode step stream without the attention math, bf16 rows (256 bytes) against e4m3
# rows (128 bytes), in one call.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
for t in bf16_b32 fp8_b32 bf16_b1 fp8_b1; do
  echo "== $t" | tee -a $OUT/stream.txt
  timeout 120 build/gpu/stream/decode_stream_$t >> $OUT/stream.txt 2>&1
  echo "$t rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
done
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "^==|copy|reg BN64 W8|reg BN128|heads|tma BN64 CW4 S3" $OUT/stream.txt | grep -v contig | cut -c1-100
