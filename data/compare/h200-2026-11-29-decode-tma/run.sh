#!/usr/bin/env bash
# attention.decode_tma (the tensor-core split kernel fed by a TMA producer warp) recorded whole on
# the H200, with attention.decode and attention.decode_fp8 re-recorded whole on the same call (their
# template changed: decode.cuh's kernels take the maps under KV_TMA, decode_mma.cuh's score and
# P V stages split by step); then both bf16 families compared with cuDNN SDPA, burst and sustained
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w6; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
for r in decode_tma decode decode_fp8; do
  timeout -s INT 200 $B run recipes/attention/$r.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 \
    --db $W/attention.$r.db > $W/attention.$r.log 2>&1
  echo "run $r rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
done
for r in decode_tma decode; do
  timeout -s INT 100 $B compare recipes/attention/$r.lua --rounds 3 --top-k 2 --db $W/attention.$r.db >> $W/compare.txt 2>&1
  echo "compare $r rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
done
for r in decode_tma decode decode_fp8; do python3 tools/lean_db.py $W/attention.$r.db $OUT/attention.$r.db > /dev/null; done
cp $W/compare.txt $OUT/
(cd $W && tar czf $OUT/logs.tgz *.log)
python3 tools/bench/decode_drawn_bytes.py $W/attention.decode_tma.db | grep '^|\|copy'
python3 tools/bench/decode_drawn_bytes.py $W/attention.decode.db | grep '^|\|copy'
grep -E "results, |GPU busy" $W/*.log | cut -c1-160
grep -E "^\| |^### " $W/compare.txt | grep -v -- '---' | cut -c1-160
