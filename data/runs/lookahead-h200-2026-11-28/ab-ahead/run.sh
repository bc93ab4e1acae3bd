#!/usr/bin/env bash
# A/B: GPU busy of exhaustive runs, compiles queued a batch ahead (build/tune) against HEAD~ (build/dev/tune-old)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CUDA_CACHE_DISABLE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
nproc | tee -a $OUT/gpu.txt
W=/tmp/ab; rm -rf $W; mkdir -p $W
one() { # one TAG BIN RECIPE [ARGS]
  local tag=$1 bin=$2 recipe=$3; shift 3
  echo "start $tag $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
  timeout -s INT 200 $bin run $recipe --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --no-warm-start \
    --db $W/$tag.db "$@" > $OUT/$tag.log 2>&1
  echo "$tag rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
}
one fp8-new build/dev/tune recipes/attention/decode_fp8.lua --problem b32hq32hkv8d128p16x512m1
one fp8-old build/dev/tune-old recipes/attention/decode_fp8.lua --problem b32hq32hkv8d128p16x512m1
one varlen-old build/dev/tune-old recipes/attention/varlen.lua
one varlen-new build/dev/tune recipes/attention/varlen.lua
one decode-new build/dev/tune recipes/attention/decode.lua
one decode-old build/dev/tune-old recipes/attention/decode.lua
for t in fp8-new fp8-old varlen-old varlen-new decode-new decode-old; do
  python3 - $W/$t.db $t <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n, ok = c.execute("select count(*), sum(status='ok') from results").fetchone()
best = c.execute("select group_concat(printf('%.2f', b), ' ') from (select min(median_ns)/1e3 b from results where status='ok' group by problem_id order by problem_id)").fetchone()[0]
print(f"{sys.argv[2]}: {n} results, {ok} ok, best us per problem {best}")
PY
done | tee $OUT/bests.txt
cd $OUT && for t in *.log; do echo "$t: $(grep -E '^GPU busy|^compiled ahead|^compile:' $t | tr '\n' ' ' | cut -c1-330)"; done
