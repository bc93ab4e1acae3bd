#!/usr/bin/env bash
# device_halving.sh: successive halving on the GPU (tune run --halving, docs/search.md), one device
# call of about 3-5 minutes: copy.lua and softmax.lua, each exhaustively without and with halving
# (seed 1, fresh databases), then a table: results, quick-only results (samples 3, marked), fully
# timed, the best per problem with and without (and whether the quick-only ones are all slower than
# the halving run's best), the measure time (sum of measure_ms) and the wall time of each run.
# usage: tools/bench/device_halving.sh OUTDIR      Environment: TUNE (default build/tune).
# Writes OUTDIR/{plain,halving}_<recipe>.log and the lean halving databases OUTDIR/halving_<recipe>.db.
set -u
out=${1:?usage: device_halving.sh OUTDIR}
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
TUNE=${TUNE:-build/tune}
work=/tmp/device-halving
rm -rf "$work"; mkdir -p "$work"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
for r in copy softmax; do
  for mode in plain halving; do
    flag=(); [ $mode = halving ] && flag=(--halving)
    t0=$(date +%s%N)
    timeout 150 "$TUNE" run "recipes/$r.lua" --device cuda:0 --strategy exhaustive --seed 1 --quiet --jobs 16 \
      --db "$work/${mode}_$r.db" "${flag[@]}" > "$out/${mode}_$r.log" 2>&1
    echo "$r $mode rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$out/walls.txt"
  done
done
python3 - "$work" <<'PY'
import sqlite3, sys
w = sys.argv[1]
print("\nrecipe         problem          mode     results  quick-only  full  measure_s  best_us   quick-only all slower than best")
for r in ("copy", "softmax"):
    best = {}
    for mode in ("plain", "halving"):
        c = sqlite3.connect(f"{w}/{mode}_{r}.db")
        for (rn, p) in c.execute("select distinct recipe_name, name from problems order by 1, 2").fetchall():
            q = lambda s: c.execute(s, (rn, p)).fetchone()
            base = " from results x join problems pp on pp.id = x.problem_id where pp.recipe_name = ? and pp.name = ?"
            n = q("select count(*)" + base)[0]
            nq = q("select count(*)" + base + " and x.error_text like 'halving: quick%'")[0]
            nf = q("select count(*)" + base + " and x.status = 'ok' and coalesce(x.error_text, '') not like 'halving: quick%'")[0]
            ms = q("select coalesce(sum(measure_ms), 0)" + base)[0]
            b = q("select min(median_ns)" + base + " and x.status = 'ok' and coalesce(x.error_text, '') not like 'halving: quick%'")[0]
            mq = q("select min(median_ns)" + base + " and x.error_text like 'halving: quick%'")[0]
            ok = "-" if mq is None else ("yes" if b is not None and mq > b else "NO")
            print(f"{rn:14} {p:16} {mode:8} {n:7} {nq:11} {nf:5} {ms/1e3:10.1f} {(b or 0)/1e3:8.2f}   {ok}")
PY
for f in "$work"/halving_*.db; do python3 tools/lean_db.py "$f" "$out/$(basename "$f")" > /dev/null 2>&1; done
echo; cat "$out/walls.txt"
grep -h "^halving (" "$out"/halving_*.log
