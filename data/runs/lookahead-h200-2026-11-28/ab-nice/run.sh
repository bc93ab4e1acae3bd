#!/usr/bin/env bash
# A/B: compile servers at nice +10 (build/dev/tune-nice) against the same code at the caller's priority (tune-plain)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CUDA_CACHE_DISABLE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
W=/tmp/ab2; rm -rf $W; mkdir -p $W
one() { # one TAG BIN RECIPE [ARGS]
  local tag=$1 bin=$2 recipe=$3; shift 3
  echo "start $tag $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
  timeout -s INT 200 $bin run $recipe --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --no-warm-start \
    --db $W/$tag.db "$@" > $OUT/$tag.log 2>&1
  echo "$tag rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
}
one fp8-nice build/dev/tune-nice recipes/attention/decode_fp8.lua --problem b32hq32hkv8d128p16x512m1
one fp8-plain build/dev/tune-plain recipes/attention/decode_fp8.lua --problem b32hq32hkv8d128p16x512m1
one varlen-plain build/dev/tune-plain recipes/attention/varlen.lua
one varlen-nice build/dev/tune-nice recipes/attention/varlen.lua
for t in fp8-nice fp8-plain varlen-plain varlen-nice; do
  python3 - $W/$t.db $t <<'PY'
import sqlite3, sys, statistics
c = sqlite3.connect(sys.argv[1])
n, ok = c.execute("select count(*), sum(status='ok') from results").fetchone()
cm = [r[0] for r in c.execute("select compile_ms from results where compile_ms > 0")]
mm = [r[0] for r in c.execute("select measure_ms from results where measure_ms > 0")]
print(f"{sys.argv[2]}: {n} results, {ok} ok; compile_ms median {statistics.median(cm):.0f}; measure_ms median {statistics.median(mm):.1f}")
PY
done | tee $OUT/stats.txt
cd $OUT && for t in *.log; do echo "$t: $(grep -E '^GPU busy' $t | cut -c1-200)"; done
