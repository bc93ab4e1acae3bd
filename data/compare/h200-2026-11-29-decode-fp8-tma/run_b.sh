#!/usr/bin/env bash
# Call b (README.md), run from the repository root: the decode graph GPU test; attention.decode_fp8_tma,
# attention.decode and attention.decode_tma recorded whole; attention.decode_fp8_tma compared.
set -u
R=$PWD
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/lib:${LD_LIBRARY_PATH:-}
B=$R/build/dev/tune W=/tmp/w3; rm -rf $W; mkdir -p $W/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > $OUT/gpu.txt
echo "start $(date -u +%FT%TZ) $(git rev-parse --short HEAD)" >> $OUT/gpu.txt
TUNE=$B TUNERT_DECODE_GRAPH_GPU=$R/build/dev/tests/tunert_decode_graph_gpu TESTS="decode_graph_gpu" \
  bash tools/bench/device_gpu_tests.sh $W/logs >> $OUT/gpu.txt 2>&1
for r in decode_fp8_tma decode decode_tma; do
  timeout -s INT 170 $B run recipes/attention/$r.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 \
    --db $W/attention.$r.db > $W/attention.$r.log 2>&1
  echo "run $r rc $? $(date -u +%FT%TZ)" >> $OUT/gpu.txt
done
timeout -s INT 240 $B compare recipes/attention/decode_fp8_tma.lua --rounds 3 --top-k 2 --db $W/attention.decode_fp8_tma.db > $W/compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" >> $OUT/gpu.txt
for r in decode_fp8_tma decode decode_tma; do python3 tools/lean_db.py $W/attention.$r.db $OUT/attention.$r.db > /dev/null; done
cp $W/compare.txt $OUT/
(cd $W && tar czf $OUT/logs.tgz *.log logs)
cat $OUT/gpu.txt
grep -E "results, |GPU busy" $W/*.log | cut -c1-200
for r in decode_fp8_tma decode decode_tma; do python3 tools/bench/decode_drawn_bytes.py $W/attention.$r.db | grep '^| attention\|copy'; done
grep -E "^\| |^### |rror|refused" $W/compare.txt | grep -v -- '---' | cut -c1-220 | tail -40
