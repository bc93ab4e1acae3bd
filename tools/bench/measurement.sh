#!/usr/bin/env bash
# measurement.sh: checks of the measurement engine on a GPU (docs/measurement.md).
#  1. CUPTI median of tune vs `ncu --clock-control none` gpu__time_duration for three kernels of
#     different lengths (the same variant, problem and inputs);
#  2. spread of one variant's median over 5 separate runs (fresh worker, fresh inputs each run);
#  3. the engine's time per variant beyond the kernel time itself.
# usage: tools/bench/measurement.sh OUTDIR      (run from the repository root, build/tune built)
set -uo pipefail
out=${1:?OUTDIR}
mkdir -p "$out"
T=build/tune
sql() { python3 -c 'import sqlite3,sys
c=sqlite3.connect("file:"+sys.argv[1]+"?mode=ro",uri=True)
for r in c.execute(sys.argv[2]): print("|".join("" if v is None else str(v) for v in r))' "$1" "$2"; }
cases=(
  "recipes/copy.lua|256MiB|VEC_BYTES=8,ILP=2,BLOCK=256,GRID_STRIDE=false,MIN_BLOCKS=1|copy_kernel"
  "recipes/copy.lua|64MiB|VEC_BYTES=16,ILP=1,BLOCK=256,GRID_STRIDE=false,MIN_BLOCKS=1|copy_kernel"
  "tests/fixtures/recipes/faults.lua|1M|FAULT=0|faults_kernel"
)
printf '%-10s %-8s %14s %14s %8s %18s %8s\n' recipe problem "tune_cupti_ns" "ncu_median_ns" "diff%" "ncu_nocache_ns" "diff%" > "$out/ncu_table.txt"
for c in "${cases[@]}"; do
  IFS='|' read -r recipe problem only kernel <<<"$c"
  db="$out/ncu_$(basename "$recipe" .lua)_$problem.db"
  $T run "$recipe" --db "$db" --problem "$problem" --only "$only" --seed 11 >"$out/tune_$problem.log" 2>&1
  cupti=$(sql "$db" "select median_ns from results where status='ok' order by id desc limit 1")
  # ncu twice: with its default cache control (it invalidates the caches before each profiled
  # launch: a clean L2) and with --cache-control none (the L2 as tune's own memset flush leaves it:
  # the state CUPTI measures in)
  med=()
  for cc in all none; do
    ncu --clock-control none --cache-control $cc --target-processes all -k "regex:^${kernel}\$" --launch-count 60 \
        --metrics gpu__time_duration.sum --csv \
        $T run "$recipe" --db "$out/ncu_scratch_${problem}_$cc.db" --problem "$problem" --only "$only" --seed 11 \
        >"$out/ncu_${problem}_$cc.csv" 2>"$out/ncu_${problem}_$cc.err"
    med+=("$(python3 - "$out/ncu_${problem}_$cc.csv" <<'PY'
import csv, sys, statistics
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr = rows[0]; mi = hdr.index("Metric Name"); ui = hdr.index("Metric Unit"); vi = hdr.index("Metric Value")
scale = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "ns": 1, "us": 1e3, "ms": 1e6}
vals = [float(r[vi].replace(",", "")) * scale.get(r[ui], 1) for r in rows[1:] if r[mi] == "gpu__time_duration.sum"]
print(statistics.median(vals) if vals else "nan")
PY
)")
  done
  printf '%-10s %-8s %14.0f %14.0f %8.2f %18.0f %8.2f\n' "$(basename "$recipe" .lua)" "$problem" "$cupti" "${med[0]}" \
    "$(python3 -c "print(100*($cupti-${med[0]})/${med[0]})")" "${med[1]}" "$(python3 -c "print(100*($cupti-${med[1]})/${med[1]})")" >> "$out/ncu_table.txt"
done
# 2. repeatability of the best copy variant: 5 runs, each a fresh database, worker and input seed
: > "$out/repeat.txt"
for i in 1 2 3 4 5; do
  $T run recipes/copy.lua --db "$out/rep_$i.db" --problem 256MiB --only "VEC_BYTES=8,ILP=2,BLOCK=256,GRID_STRIDE=false,MIN_BLOCKS=1" --seed $((100 + i)) >/dev/null 2>&1
  sql "$out/rep_$i.db" "select median_ns from results where status='ok'" >> "$out/repeat.txt"
done
python3 - "$out/repeat.txt" <<'PY' > "$out/repeat_table.txt"
import sys, statistics
v = [float(x) for x in open(sys.argv[1]) if x.strip()]
m = statistics.median(v)
print("runs %d  medians_ns %s  spread (max-min)/median %.2f%%" % (len(v), " ".join("%.0f" % x for x in v), 100 * (max(v) - min(v)) / m))
PY
cat "$out/ncu_table.txt" "$out/repeat_table.txt"
