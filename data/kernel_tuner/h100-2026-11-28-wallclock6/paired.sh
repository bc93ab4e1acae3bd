#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee $OUT/gpu.txt; date -u | tee -a $OUT/gpu.txt
ONLY=PATH=0,CONSUMERS=1,WS=0,PRODUCER_WARPS=1,SETMAXNREG=0,USE_TMA=0,PERSISTENT=0,GEMV_WARPS=4,GEMV_COLS=1,GEMV_UNROLL=2
./build/tune run recipes/gemm.lua --device cuda:0 --db /tmp/warm.db --problem m128n8192k8192_col --only $ONLY --budget 3 > $OUT/warm.txt 2>&1; echo "warm-up rc $?" | tee -a $OUT/summary.txt
one() { # seed which
  local b=build/tune; [ $2 = old ] && b=build/tune.old
  bash tools/bench/device_kt_wallclock.sh /tmp/kt-$2-$1 --kernels gemm --seed $1 --tune $b > $OUT/kt-$2-$1.txt 2>&1
  rm -rf /tmp/kt-$2-$1/*/*.db /tmp/kt-$2-$1/*/kt_cupy*
  echo "$2 seed $1: $(grep -E '^gemm ' $OUT/kt-$2-$1.txt | tail -1) | $(grep 'tune: GPU busy' $OUT/kt-$2-$1.txt | head -1) | $(grep 'start-up' $OUT/kt-$2-$1.txt)" | tee -a $OUT/summary.txt
}
one 1 old; one 1 new; one 2 new; one 2 old; one 3 old; one 3 new
tar czf $OUT/kt.tgz -C /tmp $(cd /tmp && ls -d kt-*)
echo ====; cat $OUT/summary.txt
