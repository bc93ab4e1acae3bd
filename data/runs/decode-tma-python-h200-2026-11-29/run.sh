#!/usr/bin/env bash
# tests/python test_ops_gpu on the H200 with tt.decode trying attention.decode and attention.decode_tma
# (test_decode_tma: decode_tma alone in the bundle over packed, pooled and HND caches)
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
date -u > $OUT/gpu.txt
(cd tests/python && SRC=$R TUNE=$R/build/dev/tune TUNERT_LIBRARY=$R/build/lib/libtunert.so PYTHONPATH=$R/python/src timeout 400 python3 -m unittest test_ops_gpu > $OUT/test_ops_gpu.txt 2>&1; echo "test_ops_gpu rc $?" | tee -a $OUT/gpu.txt)
date -u >> $OUT/gpu.txt
tail -15 $OUT/test_ops_gpu.txt
