#!/usr/bin/env bash
# gemm.skinny exhaustive with MMA {0,2} (both layouts) + compare vs cuBLAS; gemm.fp8_skinny re-record (template changed)
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w4; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 170 $B run recipes/gemm/skinny.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.skinny.db > $OUT/skinny.log 2>&1
echo "skinny run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 200 $B compare recipes/gemm/skinny.lua --rounds 3 --top-k 2 --db $W/gemm.skinny.db > $OUT/skinny.compare.txt 2>&1
echo "skinny compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 230 $B run recipes/gemm/fp8_skinny.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8_skinny.db > $OUT/fp8_skinny.log 2>&1
echo "fp8 run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.skinny.db $OUT/gemm.skinny.db
python3 tools/lean_db.py $W/gemm.fp8_skinny.db $OUT/gemm.fp8_skinny.db
python3 - $W/gemm.skinny.db > $OUT/skinny_by_mma.txt <<'PY'
import sqlite3, sys, json, collections
c = sqlite3.connect(sys.argv[1])
rows = c.execute("SELECT p.name, cf.params_json, r.status, r.median_ns FROM results r JOIN problems p ON p.id = r.problem_id JOIN configs cf ON cf.id = r.config_id WHERE r.timing = 'burst'").fetchall()
print("status by MMA:", dict(collections.Counter((json.loads(pj)["MMA"] if "MMA" in json.loads(pj) else -1, s) for _, pj, s, _ in rows)))
best = collections.defaultdict(dict)
for p, pj, s, t in rows:
    if s != "ok" or t is None: continue
    m = json.loads(pj)["MMA"] if "MMA" in json.loads(pj) else -1
    if m not in best[p] or t < best[p][m]: best[p][m] = t
for p in sorted(best):
    b = best[p]; f = lambda m: "%9.2f" % (b[m] / 1e3) if m in b else "%9s" % "-"
    print("%-24s MMA0 %s  MMA2 %s" % (p, f(0), f(2)))
PY
grep -E "results, |GPU busy|kernels on the GPU|no verified" $OUT/*.log | cut -c1-200
cat $OUT/skinny_by_mma.txt
grep -E "^\| " $OUT/skinny.compare.txt | cut -c1-160
