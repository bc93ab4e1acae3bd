#!/usr/bin/env bash
# moe.grouped / moe.grouped_masked with HALF_TILES (grouped_sm90.cuh): every problem searched whole on
# the H200 (HALF_TILES 0 and 1 in one call), then compared with the peers (burst + sustained)
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w1; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), tree of commit $(git rev-parse --short HEAD 2>/dev/null) + the half-tile edit" | tee -a $OUT/gpu.txt
timeout -s INT 330 $B run recipes/moe/grouped.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/moe.grouped.db > $OUT/moe.grouped.log 2>&1
echo "grouped rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 230 $B compare recipes/moe/grouped.lua --rounds 3 --top-k 2 --db $W/moe.grouped.db > $OUT/moe.grouped.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/moe.grouped.db $OUT/moe.grouped.db
python3 - <<'PY' | tee $OUT/half_tiles.txt
import sqlite3, json
db = sqlite3.connect("/tmp/w1/moe.grouped.db")
best = {}
for p, ns, par in db.execute("select problem, median_ns, params from v_results where status='ok' and origin not like 'peer%'"):
    c = json.loads(par); h = c.get("HALF_TILES", 0)
    key = (p, h)
    if key not in best or ns < best[key][0]: best[key] = (ns, par)
    if h == 1:  # the same config without half tiles
        c0 = dict(c); c0.pop("HALF_TILES")
        best.setdefault(("pair", p, json.dumps(c0, sort_keys=True)), [None, None])[1] = ns
    else:
        c0 = dict(c); c0.pop("HALF_TILES", None)
        best.setdefault(("pair", p, json.dumps(c0, sort_keys=True)), [None, None])[0] = ns
probs = sorted({k[0] for k in best if k[0] != "pair"})
print("problem | best HALF_TILES 0 (us) | best HALF_TILES 1 (us) | ratio | same-config ratios (min..max)")
for p in probs:
    b0 = best.get((p, 0)); b1 = best.get((p, 1))
    rs = [v[0] / v[1] for k, v in best.items() if k[0] == "pair" and k[1] == p and v[0] and v[1]]
    print(p, "|", b0 and "%.2f" % (b0[0] / 1000), "|", b1 and "%.2f" % (b1[0] / 1000), "|",
          (b0 and b1) and "%.3f" % (b0[0] / b1[0]), "|", rs and "%.3f..%.3f (%d)" % (min(rs), max(rs), len(rs)))
PY
grep -E "results, |GPU busy" $OUT/moe.grouped.log | cut -c1-220
grep -E "^\| |^### " $OUT/moe.grouped.compare.txt | cut -c1-200
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
