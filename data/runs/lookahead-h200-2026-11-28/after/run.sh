#!/usr/bin/env bash
# GPU busy of the exhaustive H200 recordings not re-run since lookahead: prefill_sm90, gemm.skinny
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CUDA_CACHE_DISABLE=1
W=/tmp/ab7; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
one() { local tag=$1; shift
  echo "start $tag $(date -u +%FT%TZ), binary of 4dc2c4d" | tee -a $OUT/gpu.txt
  timeout -s INT 170 build/dev/tune run "$@" --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/$tag.db > $OUT/$tag.log 2>&1
  echo "$tag rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
}
one prefill_sm90 recipes/attention/prefill_sm90.lua --only PV_SPLIT=0
one skinny recipes/gemm/skinny.lua
cd $OUT && for t in *.log; do echo "$t: $(grep -E 'results, |^compiled ahead|^GPU busy' $t | tr '\n' ' ' | cut -c1-400)"; done
