#!/usr/bin/env bash
# HALF_TILES, the half tile's loop inlined with fences on the accumulators it writes only (no wgmma
# serialized in the SASS of any HALF_TILES 1 build): four 128-row TMA configs with and
# without it on Mixtral T=8192 and the tails; then a budget-8 recording of moe.grouped (the template
# edit makes the earlier one another version) and a comparison of three problems
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w3; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
P="--problem e8n28672k4096t8192m1 --problem e8n4096k14336t8192m1 --problem e8n1000k1032cap300m0 --problem e8n4096k14336cap4096m0"
O=""
for c in BLOCK_N=256,CONSUMERS=2,STAGES=4,WS=1 BLOCK_N=128,CONSUMERS=1,STAGES=4,WS=1 BLOCK_N=128,CONSUMERS=2,STAGES=4,WS=2 BLOCK_N=128,CONSUMERS=2,STAGES=4,WS=1; do
  O="$O --only BLOCK_M=128,USE_TMA=1,PERSISTENT=1,RASTER=8,$c"
done
timeout -s INT 60 $B run recipes/moe/grouped.lua --strategy exhaustive $P $O --seed 1 --quiet --jobs 16 --db $W/x.db > $OUT/experiment.log 2>&1
echo "experiment rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 - <<'PY' | tee $OUT/half_tiles.txt
import sqlite3, json, collections
db = sqlite3.connect("/tmp/w3/x.db")
pairs = collections.defaultdict(dict)
for p, ns, par in db.execute("select problem, median_ns, params from v_results where status='ok'"):
    c = json.loads(par); h = c.pop("HALF_TILES", 0)
    pairs[(p, "BN%d c%d ws%d s%d" % (c["BLOCK_N"], c["CONSUMERS"], c["WS"], c["STAGES"]))][h] = ns
print("problem | config | HALF_TILES 0 us | 1 us | 0/1")
for k, v in sorted(pairs.items()):
    if 0 in v and 1 in v: print(k[0], "|", k[1], "| %.2f | %.2f | %.3f" % (v[0] / 1e3, v[1] / 1e3, v[0] / v[1]))
PY
# record only where the half tiles won: the best of the four configs on both T=8192 problems
if ! python3 - <<'PY'
import sqlite3, json, sys
db = sqlite3.connect("/tmp/w3/x.db")
best = {}
for p, ns, par in db.execute("select problem, median_ns, params from v_results where status='ok' and problem like '%t8192%'"):
    h = json.loads(par).get("HALF_TILES", 0)
    best[(p, h)] = min(ns, best.get((p, h), 1e18))
sys.exit(0 if all(best.get((p, 1), 1e18) < best.get((p, 0), 0) for p in {k[0] for k in best}) else 1)
PY
then
  echo "half tiles not faster: no recording" | tee -a $OUT/gpu.txt
  exit 0
fi
timeout -s INT 90 $B run recipes/moe/grouped.lua --budget 8 --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/moe.grouped.db > $OUT/moe.grouped.log 2>&1
echo "grouped rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 60 $B compare recipes/moe/grouped.lua --problem e8n28672k4096t8192m1 --problem e8n4096k14336t8192m1 --problem e8n1000k1032cap300m0 --rounds 3 --top-k 2 --db $W/moe.grouped.db > $OUT/moe.grouped.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/moe.grouped.db $OUT/moe.grouped.db
grep -E "^\| |^### " $OUT/moe.grouped.compare.txt | cut -c1-200
grep -E "results, |GPU busy" $OUT/*.log | cut -c1-200
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
