#!/usr/bin/env bash
# second call: gemm.fp8's RING_POS 0 kept as one running index (release_slot), an A/B of the tree
# before (build/exp/rootOld) and after on the large problems of both fp8 recipes; every peer's
# values on every problem of the recorded databases (tools/peers/check_peers.py); tests/python
# test_ops_gpu (block scales through cuBLASLt's blockwise path)
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
B=build/gpu/tune
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
P="--problem m4096n14336k4096_block --problem m4096n4096k7168_block --problem m8192n18432k7168_block --problem m4096n14336k4096_tensor --problem m4096n4096k7168_tensor --problem m4096n4096k7168_row --problem m4096n14336k4096_row --problem m8192n18432k7168_row"
TUNE=$B TIMEOUT=100 bash tools/bench/ab_roots.sh /tmp/ab --old build/exp/rootOld -- recipes/gemm/fp8.lua $P --jobs 16 > $OUT/ab.log 2>&1
echo "ab rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
cp /tmp/ab/ab.md $OUT/ab.md
(cd tests/python && SRC=$R TUNE=$R/build/gpu/tune TUNERT_LIBRARY=$R/build/gpu/libtunert.so PYTHONPATH=$R/python/src timeout 150 python3 -m unittest test_ops_gpu > $OUT/test_ops_gpu.txt 2>&1; echo "test_ops_gpu rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt)
(cd tools/peers && timeout -s INT 200 python3 check_peers.py --lib $R/build/gpu/libtune_cupti_py.so $R/data/recorded/*.db $R/data/recorded/h200/*.db $R/data/recorded/h100/*.db > $OUT/check_peers.txt 2> $OUT/check_peers.err; echo "check_peers rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt)
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
tail -4 $OUT/test_ops_gpu.txt
grep -v ": ok$" $OUT/check_peers.txt | cut -c1-300 | tail -40
cat $OUT/ab.md
