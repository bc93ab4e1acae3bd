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
for d in '"E":8,"N":1000,"K":1032,"cap":300,"min_count":0' '"E":8,"N":1000,"K":4104,"cap":300,"min_count":0' \
         '"E":8,"N":1000,"K":1032,"cap":300,"min_count":300' '"E":8,"N":1024,"K":1024,"cap":256,"min_count":256' \
         '"E":8,"N":1024,"K":1024,"cap":128,"min_count":128'; do
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
P=e8n1000k1032cap300m0
timeout 150 ncu --target-processes all --kernel-name regex:"^grouped_gemm_bf16\$" --launch-skip 3 --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section SpeedOfLight --import-source no \
    -o /tmp/n/src -f $T run recipes/moe/grouped.lua --db /tmp/n/x.db --problem $P --only BLOCK_M=128,BLOCK_N=256,CONSUMERS=2,STAGES=4,WS=1,PERSISTENT=1,RASTER=1 --strategy exhaustive --seed 1 --quiet > /tmp/n/run_src.log 2>&1
echo "ncu exit $?"
ncu --import /tmp/n/src.ncu-rep --page details > $OUT/details.txt 2>&1
ncu --import /tmp/n/src.ncu-rep --page raw --csv 2>/dev/null | python3 -c "
import csv,sys
r=list(csv.reader(sys.stdin))
for k,v in zip(r[0],r[2] if len(r)>2 else r[1]):
    if 'stall' in k or 'pcsamp' in k: print(k,v)
" > $OUT/stalls.txt
ncu --import /tmp/n/src.ncu-rep --page source --csv --print-source sass 2>/dev/null > /tmp/n/sass.csv
python3 - <<'PY' > $OUT/sass_top.txt
import csv
rows = list(csv.reader(open("/tmp/n/sass.csv")))
h = rows[0]
print(h)
def num(x):
    try: return float(x.replace(",", ""))
    except: return 0.0
col = [i for i, k in enumerate(h) if "Warp Stall Sampling (All" in k]
if col:
    ci = col[0]
    body = sorted(rows[1:], key=lambda r: -num(r[ci]) if len(r) > ci else 0)
    for r in body[:60]: print(r)
PY
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
