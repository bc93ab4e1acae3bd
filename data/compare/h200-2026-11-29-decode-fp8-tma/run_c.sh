#!/usr/bin/env bash
# Call c (README.md), run from the repository root: the re-recorded bf16 decode families compared with
# their peers (burst and sustained), into copies of the recordings.
set -u
R=$PWD
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/lib:${LD_LIBRARY_PATH:-}
B=$R/build/dev/tune W=/tmp/w4; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" >> $OUT/gpu.txt
cp data/recorded/h200/attention.decode.db $W/attention.decode.db
cp data/recorded/attention.decode_tma.db $W/attention.decode_tma.db
for r in decode decode_tma; do
  timeout -s INT 200 $B compare recipes/attention/$r.lua --rounds 3 --top-k 2 --db $W/attention.$r.db > $W/compare.$r.txt 2>&1
  echo "compare $r rc $? $(date -u +%FT%TZ)" >> $OUT/gpu.txt
  cp $W/attention.$r.db $W/compare.$r.txt $OUT/
done
cat $OUT/gpu.txt
grep -hE "^\| |^### |rror|refused" $W/compare.*.txt | grep -v -- '---' | cut -c1-200
