#!/usr/bin/env bash
# device_softmax_run.sh: one device call that re-records the softmax recipes (recipes/softmax.lua,
# every config: --strategy exhaustive) and prints softmax's rows of the memory-bound table
# (docs/benchmarks.md), against the PyTorch peers recorded in data/peers/memory-h200-2026-11-22b.json.
# usage: tools/bench/device_softmax_run.sh OUTDIR   (expects build/tune; ~1-2 minutes on an H200)
# OUTDIR gets softmax.db (lean: no compile cache) and softmax.log.
set -u
out=${1:?OUTDIR}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$out" /tmp/rec
rm -f /tmp/rec/softmax.db /tmp/rec/softmax.db-wal /tmp/rec/softmax.db-shm
timeout 300 build/tune run recipes/softmax.lua --db /tmp/rec/softmax.db --strategy exhaustive --seed 1 --quiet \
  > "$out/softmax.log" 2>&1
echo "softmax rc=$?"
python3 tools/lean_db.py /tmp/rec/softmax.db "$out/softmax.db" || exit 1
grep -E "^(best for|softmax|compile|GPU busy|device limits)" "$out/softmax.log"
# best of the configs that existed before EXP_ONCE / PERSIST next to the best overall, and the
# statuses of the new variants (a wrong or crashed one is a defect to report)
python3 - "$out/softmax.db" <<'EOF'
import json, sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = c.execute("""SELECT p.name, cf.params_json, r.status, r.median_ns FROM results r
                    JOIN configs cf ON cf.id = r.config_id JOIN problems p ON p.id = r.problem_id
                    JOIN recipes rc ON rc.id = r.recipe_id WHERE rc.name = 'softmax'""").fetchall()
best, old, status = {}, {}, {}
for prob, pj, st, ns in rows:
    d = json.loads(pj)
    new = d.get("EXP_ONCE", 0) == 1 or d.get("PERSIST", 0) > 0
    if new:
        status[st] = status.get(st, 0) + 1
    if st != "ok":
        continue
    if prob not in best or ns < best[prob][0]:
        best[prob] = (ns, pj)
    if not new and (prob not in old or ns < old[prob]):
        old[prob] = ns
print("new variants by status:", status)
print("| problem | best before EXP_ONCE/PERSIST | best now | config |")
print("|---|---|---|---|")
for prob, (ns, pj) in best.items():
    print(f"| {prob} | {old.get(prob, float('nan')) / 1e3:.2f} us | {ns / 1e3:.2f} us | {pj} |")
EOF
python3 tools/bench/memory_report.py data/peers/memory-h200-2026-11-22b.json "$out/softmax.db"
