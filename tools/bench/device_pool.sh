#!/usr/bin/env bash
# device_pool.sh OUTDIR [RECIPE...]: tune run on every GPU of the host (--device cuda:all)
# against one GPU (cuda:0), issue 30. Each recipe's space is compiled first (--compile-only),
# then both runs start from a copy of that database: the same space (exhaustive), the same
# binaries, nothing resumed, so the wall times compare the measuring. The one-GPU run goes
# first for the first recipe and second for the next (clock drift shows as a flipped ratio).
# Then the planted-faults test over both GPUs. Prints a table last.
set -u
out=${1:?usage: device_pool.sh OUTDIR [RECIPE...]}
shift
recipes=${*:-softmax rmsnorm gemm}
mkdir -p "$out"
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tmp=$(mktemp -d)
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.max.sm,power.limit --format=csv >"$out/gpus.csv"
now() { date +%s.%N; }
timed_run() { # timed_run DEVICE RECIPE DB LOG: prints wall seconds
  local t0 t1
  t0=$(now)
  build/tune run "recipes/$2.lua" --device "$1" --strategy exhaustive --seed 1 --db "$3" >"$4" 2>&1 || echo "run failed: $4" >&2
  t1=$(now)
  python3 -c "print(f'{$t1 - $t0:.1f}')"
}
table="recipe | results | 1 GPU [s] | 2 GPUs [s] | speed-up"
k=0
for r in $recipes; do
  build/tune run "recipes/$r.lua" --compile-only --strategy exhaustive --db "$tmp/$r.cc.db" >"$out/$r.compile.txt" 2>&1
  cp "$tmp/$r.cc.db" "$tmp/$r.one.db"
  cp "$tmp/$r.cc.db" "$tmp/$r.all.db"
  if [ $((k % 2)) -eq 0 ]; then
    one=$(timed_run cuda:0 "$r" "$tmp/$r.one.db" "$out/$r.one.txt")
    all=$(timed_run cuda:all "$r" "$tmp/$r.all.db" "$out/$r.all.txt")
  else
    all=$(timed_run cuda:all "$r" "$tmp/$r.all.db" "$out/$r.all.txt")
    one=$(timed_run cuda:0 "$r" "$tmp/$r.one.db" "$out/$r.one.txt")
  fi
  k=$((k + 1))
  n=$(python3 -c "import sqlite3; c=sqlite3.connect('$tmp/$r.all.db'); print(c.execute(\"select count(*) from results where status != 'skipped' or error_text != 'compile-only'\").fetchone()[0])")
  per=$(python3 -c "import sqlite3; c=sqlite3.connect('$tmp/$r.all.db'); print(', '.join(f'{g[-8:]}: {n}' for g, n in c.execute(\"select gpu, count(*) from results where gpu != '' group by gpu\")))")
  line="$r | $n ($per) | $one | $all | $(python3 -c "print(f'{$one / $all:.2f}')")"
  echo "$line"
  table="$table
$line"
  python3 tools/lean_db.py "$tmp/$r.all.db" "$out/$r.all.db" >/dev/null 2>&1 || true
done
TESTS=faults FAULTS_DEVICE=cuda:all bash tools/bench/device_gpu_tests.sh "$out" | sed 's/^/cuda:all /'
echo "$table"
