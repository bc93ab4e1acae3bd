#!/usr/bin/env bash
# temporary: compile throughput per core on the GPU host (16 cores): tune run --compile-only --jobs J
set -u
OUT=${OUT:?}
cd build/lib && ln -sf libtunert.so.0.5.0 libtunert.so.0 2>/dev/null; cd ../..
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nproc; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket" | tr -s ' '
ls -la ~/.nv 2>&1 | head -3; echo "| recipe | configs | jobs | wall s | compiles/s | per job | mean compile_ms |"
for spec in "attention/decode.lua b32hq32hkv8d128p16x256 WARPS=4"; do
  set -- $spec
  for j in 16 8 4 2 1; do
    db=/tmp/cc_$j.db; rm -f $db
    export CUDA_CACHE_PATH=$(mktemp -d) CUDA_CACHE_DISABLE=${DISABLE:-1}
    t0=$(date +%s.%N)
    build/tune run recipes/$1 --compile-only --db $db --problem $2 --only $3 --jobs $j --quiet > /tmp/cc_$j.log 2>&1
    t1=$(date +%s.%N)
    python3 - $db $1 $j $t0 $t1 <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n, ms = c.execute("select count(*), avg(compile_ms) from binaries where lowered_name not like '%reference%'").fetchone()
w = float(sys.argv[5]) - float(sys.argv[4]); j = int(sys.argv[3])
print(f"| {sys.argv[2]} | {n} | {j} | {w:.1f} | {n / w:.2f} | {n / w / j:.2f} | {ms:.0f} |")
PY
  done
done
