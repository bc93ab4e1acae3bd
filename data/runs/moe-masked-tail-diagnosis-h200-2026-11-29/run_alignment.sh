#!/usr/bin/env bash
# masked grouped GEMM: per-config times over K and count scaling; ncu stall reasons of the best
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
T=build/dev/tune
mkdir -p /tmp/n
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
: > /tmp/n/p.jsonl
for d in '"E":8,"N":1024,"K":1024,"cap":256,"min_count":256' '"E":8,"N":1024,"K":1032,"cap":256,"min_count":256' \
         '"E":8,"N":1024,"K":1088,"cap":256,"min_count":256' '"E":8,"N":1000,"K":1024,"cap":256,"min_count":256' \
         '"E":8,"N":1024,"K":1024,"cap":300,"min_count":300' '"E":8,"N":1024,"K":1040,"cap":256,"min_count":256'; do
  echo "{\"family\":\"moe.grouped_masked\",\"dims\":{$d},\"served_by\":\"none\"}" >> /tmp/n/p.jsonl
done
$T run recipes/moe/grouped.lua --db /tmp/n/m.db --problems-from /tmp/n/p.jsonl --strategy exhaustive --seed 1 --quiet > $OUT/run.log 2>&1
echo "run exit $?"
python3 - <<'PY' > $OUT/configs.txt
import sqlite3, json
db = sqlite3.connect("/tmp/n/m.db")
rows = db.execute("select problem, median_ns, registers, params from v_results where status='ok' order by problem, median_ns").fetchall()
for p, ns, r, par in rows:
    c = json.loads(par)
    print(p, "%.2f" % (ns / 1000), r, "%dx%d c%d s%d ws%d tma%d p%d r%d" % (c["BLOCK_M"], c["BLOCK_N"], c["CONSUMERS"], c["STAGES"], c["WS"], c["USE_TMA"], c["PERSISTENT"], c["RASTER"]))
PY
for p in $(cut -d' ' -f1 $OUT/configs.txt | sort -u); do grep "^$p " $OUT/configs.txt | head -4; done
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
