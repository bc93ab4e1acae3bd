#!/usr/bin/env bash
# compile servers vs in-process NVRTC on the GPU machine, inputs drawn on the GPU: GPU busy and compile_ms, cold databases
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nproc; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u +%FT%TZ
med() { python3 -c "
import sqlite3,statistics,sys
v=[r[0] for r in sqlite3.connect(sys.argv[1]).execute('select compile_ms from results where compile_ms>0')]
print('%d compiled, compile_ms median %.0f mean %.0f' % (len(v), statistics.median(v), statistics.mean(v)) if v else 'none')" "$1"; }
one() { # one NAME ENV... -- tune args
  local name=$1; shift; rm -f /tmp/$name.db*
  local s=$(date +%s.%N)
  env "$@" --db /tmp/$name.db --quiet > $OUT/$name.log 2>&1
  local e=$(date +%s.%N)
  echo "$name: wall $(python3 -c "print(round($e - $s, 1))") s; $(grep -h 'GPU busy' $OUT/$name.log | head -1 | cut -c1-150); $(med /tmp/$name.db)"
}
T=build/tune
for round in 1 2; do
  if [ $round = 1 ]; then A="TUNE_X=0"; B="TUNE_COMPILE_IN_PROCESS=1"; la=srv; lb=inp; else A="TUNE_COMPILE_IN_PROCESS=1"; B="TUNE_X=0"; la=inp; lb=srv; fi
  one copyE_${la}_$round $A $T run recipes/copy.lua --problem 256MiB --strategy exhaustive --jobs 16
  one copyE_${lb}_$round $B $T run recipes/copy.lua --problem 256MiB --strategy exhaustive --jobs 16
done
one copyD_srv TUNE_X=0 $T run recipes/copy.lua --problem 256MiB --jobs 16
one copyD_inp TUNE_COMPILE_IN_PROCESS=1 $T run recipes/copy.lua --problem 256MiB --jobs 16
one copyC_srv TUNE_X=0 $T run recipes/copy.lua --problem 256MiB --compile-only --strategy exhaustive --jobs 16
one copyC_inp TUNE_COMPILE_IN_PROCESS=1 $T run recipes/copy.lua --problem 256MiB --compile-only --strategy exhaustive --jobs 16
one varlenE_srv TUNE_X=0 timeout 150 $T run recipes/attention/varlen.lua --strategy exhaustive --jobs 16
one varlenE_inp TUNE_COMPILE_IN_PROCESS=1 timeout 150 $T run recipes/attention/varlen.lua --strategy exhaustive --jobs 16
one rmsD_srv TUNE_X=0 $T run recipes/rmsnorm.lua --jobs 16 --budget 40
one rmsD_inp TUNE_COMPILE_IN_PROCESS=1 $T run recipes/rmsnorm.lua --jobs 16 --budget 40
date -u +%FT%TZ
