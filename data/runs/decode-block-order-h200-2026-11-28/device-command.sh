#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > $OUT/gpu.txt
date -u +%FT%TZ >> $OUT/gpu.txt
# 1. decode block order experiment
mk() { echo "--only BLOCK_N=$1,WARPS=$2,STAGES=$3,MMA=1,KV_RING=0,VEC_BYTES=16,GQA_PACK=1"; }
timeout -s INT 150 build/tune run recipes/attention/zz_decode_exp.lua --strategy exhaustive --db /tmp/exp.db --seed 1 --jobs 16 --quiet --timeout 20000 \
  $(mk 64 4 2) $(mk 128 8 2) $(mk 128 8 1) > $OUT/exp.log 2>&1
echo "exp rc $? $(date -u +%T)" >> $OUT/gpu.txt
build/tune db list --db /tmp/exp.db --limit 2000 > $OUT/exp_list.txt 2>&1
# 2. skinny re-record with the fence, then compare from it
tools/bench/device_record.sh skinny /tmp/skrec > /dev/null 2>&1
