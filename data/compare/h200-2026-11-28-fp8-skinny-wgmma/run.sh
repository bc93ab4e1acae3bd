#!/usr/bin/env bash
# Two device calls: (1) gemm.fp8_skinny exhaustive with MMA {0,1,2} (and gemm.skinny, not kept: its template changed after), (2) compare vs torch._scaled_mm, burst and sustained
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w1; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), tree $(git rev-parse --short HEAD 2>/dev/null)" | tee -a $OUT/gpu.txt
timeout -s INT 330 $B run recipes/gemm/fp8_skinny.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.fp8_skinny.db > $OUT/fp8_skinny.log 2>&1
echo "fp8 run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8_skinny.db $OUT/gemm.fp8_skinny.db
python3 - $W/gemm.fp8_skinny.db > $OUT/by_mma.txt <<'PY'
import sqlite3, sys, json, collections
c = sqlite3.connect(sys.argv[1])
rows = c.execute("SELECT p.name, cf.params_json, r.status, r.median_ns FROM results r JOIN problems p ON p.id = r.problem_id JOIN configs cf ON cf.id = r.config_id WHERE r.timing = 'burst'").fetchall()
st = collections.Counter((json.loads(pj)["MMA"], s) for _, pj, s, _ in rows)
print("status by MMA:", dict(st))
best = collections.defaultdict(dict)
for p, pj, s, t in rows:
    if s != "ok" or t is None: continue
    m = json.loads(pj)["MMA"]
    if m not in best[p] or t < best[p][m]: best[p][m] = t
print("%-28s %9s %9s %9s  best" % ("problem", "MMA0 us", "MMA1 us", "MMA2 us"))
for p in sorted(best):
    b = best[p]; f = lambda m: "%9.2f" % (b[m] / 1e3) if m in b else "%9s" % "-"
    print("%-28s %s %s %s  MMA%d" % (p, f(0), f(1), f(2), min(b, key=b.get)))
PY
grep -E "results, |GPU busy|kernels on the GPU|no verified" $OUT/fp8_skinny.log | cut -c1-300
cat $OUT/by_mma.txt
# --- second call: the first call's database (then at data/recorded/gemm.fp8_skinny.db)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w2; rm -rf $W; mkdir -p $W; cp data/recorded/gemm.fp8_skinny.db $W/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 300 $B compare recipes/gemm/fp8_skinny.lua --rounds 3 --top-k 2 --timing both --db $W/gemm.fp8_skinny.db > $OUT/fp8_skinny.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.fp8_skinny.db $OUT/gemm.fp8_skinny.db
grep -E "^\| |^### " $OUT/fp8_skinny.compare.txt | cut -c1-200
