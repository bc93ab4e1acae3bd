#!/usr/bin/env bash
cd "$(dirname "$0")/../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
date -u > $OUT/gpu.txt
(cd tests/python && SRC=$R TUNE=$R/build/dev/tune TUNERT_LIBRARY=$R/build/lib/libtunert.so PYTHONPATH=$R/python/src timeout 400 python3 -m unittest test_ops_gpu > $OUT/test_ops_gpu.txt 2>&1; echo "test_ops_gpu rc $?" | tee -a $OUT/gpu.txt)
date -u >> $OUT/gpu.txt
tail -15 $OUT/test_ops_gpu.txt
