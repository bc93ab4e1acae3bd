#!/usr/bin/env bash
# gemm.fp8's ring position as a tunable (RING_POS 0: slot from a running index, 1: carried): an A/B
# of the tree before (build/exp/rootOld, index arithmetic only) and after (both, the tuner picks) on
# the large problems of both fp8 recipes, rounds alternating; then both recipes re-recorded whole.
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
B=build/gpu/tune W=/tmp/w1; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
P="--problem m4096n14336k4096_block --problem m4096n4096k7168_block --problem m8192n18432k7168_block --problem m4096n14336k4096_tensor --problem m4096n4096k7168_tensor --problem m4096n4096k7168_row --problem m4096n14336k4096_row"
TUNE=$B TIMEOUT=90 bash tools/bench/ab_roots.sh $OUT/ab --old build/exp/rootOld -- recipes/gemm/fp8.lua $P --jobs 16 > $OUT/ab.log 2>&1
echo "ab rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
rm -f $OUT/ab/*.db
timeout -s INT 420 $B run recipes/gemm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8.db > $OUT/gemm.fp8.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8.db $OUT/gemm.fp8.db
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -E "results, |GPU busy" $OUT/gemm.fp8.log | cut -c1-200
cat $OUT/ab/ab.md
