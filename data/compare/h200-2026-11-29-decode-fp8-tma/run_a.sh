#!/usr/bin/env bash
# Call a (README.md), run from the repository root: attention.decode_fp8_tma recorded whole and compared
# (the comparison failed here: libtune_cupti_py.so was not carried), and attention.decode_fp8's two
# recorded bests per per-head problem (decode_fp8_bests.txt) re-timed in the same call.
set -u
R=$PWD
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/lib:${LD_LIBRARY_PATH:-}
B=$R/build/dev/tune W=/tmp/w2; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" >> $OUT/gpu.txt
timeout -s INT 150 $B run recipes/attention/decode_fp8_tma.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 \
  --db $W/attention.decode_fp8_tma.db > $W/attention.decode_fp8_tma.log 2>&1
echo "run fp8_tma rc $? $(date -u +%FT%TZ)" >> $OUT/gpu.txt
while read -r p spec; do
  $B run recipes/attention/decode_fp8.lua --strategy exhaustive --seed 1 --quiet --problem $p --only $spec \
    --db $W/attention.decode_fp8.db >> $W/attention.decode_fp8.log 2>&1
done < $(dirname "$0")/decode_fp8_bests.txt
echo "fp8 bests rc $? $(date -u +%FT%TZ)" >> $OUT/gpu.txt
timeout -s INT 280 $B compare recipes/attention/decode_fp8_tma.lua --rounds 3 --top-k 2 --db $W/attention.decode_fp8_tma.db > $W/compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" >> $OUT/gpu.txt
for r in decode_fp8_tma decode_fp8; do python3 tools/lean_db.py $W/attention.$r.db $OUT/attention.$r.db > /dev/null; done
cp $W/compare.txt $OUT/
(cd $W && tar czf $OUT/logs.tgz *.log)
cat $OUT/gpu.txt
grep -E "results, |GPU busy" $W/*.log | cut -c1-200
for r in decode_fp8_tma decode_fp8; do python3 tools/bench/decode_drawn_bytes.py $W/attention.$r.db | grep '^|\|copy'; done
grep -E "^\| |^### |rror" $W/compare.txt | grep -v -- '---' | cut -c1-200 | tail -40
