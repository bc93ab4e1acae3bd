#!/usr/bin/env bash
# gemm.skinny exhaustive with two consumer warpgroups (MMA 2, WARPS_N 8) + compare vs cuBLAS;
# gemm.lua's M=1 GEMV path on two col problems against cuBLAS (the 2026-11-22 recording's 31.2 us)
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/w1; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 170 $B run recipes/gemm/skinny.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.skinny.db > $OUT/skinny.log 2>&1
echo "skinny run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 220 $B compare recipes/gemm/skinny.lua --rounds 3 --top-k 2 --db $W/gemm.skinny.db > $OUT/skinny.compare.txt 2>&1
echo "skinny compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 80 $B run recipes/gemm.lua --problem m1n14336k4096_col --problem m1n8192k8192_col --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/gemm.db > $OUT/gemm_m1.log 2>&1
echo "gemm m1 run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 80 $B compare recipes/gemm.lua --problem m1n14336k4096_col --problem m1n8192k8192_col --rounds 3 --top-k 2 --db $W/gemm.db > $OUT/gemm_m1.compare.txt 2>&1
echo "gemm m1 compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/gemm.skinny.db $OUT/gemm.skinny.db
python3 - $W/gemm.skinny.db > $OUT/skinny_by_op.txt <<'PY'
import sqlite3, sys, json, collections
c = sqlite3.connect(sys.argv[1])
rows = c.execute("SELECT p.name, cf.params_json, r.status, r.median_ns FROM results r JOIN problems p ON p.id = r.problem_id JOIN configs cf ON cf.id = r.config_id WHERE r.timing = 'burst'").fetchall()
key = lambda pj: (json.loads(pj).get("MMA", -1), json.loads(pj).get("WARPS_N"))
print("status by (MMA, WARPS_N):", dict(collections.Counter((key(pj), s) for _, pj, s, _ in rows)))
best = collections.defaultdict(dict)
for p, pj, s, t in rows:
    if s != "ok" or t is None: continue
    k = "mma.sync" if key(pj)[0] == 0 else "wgmma%d" % (key(pj)[1] // 4)
    if k not in best[p] or t < best[p][k]: best[p][k] = t
for p in sorted(best):
    b = best[p]; f = lambda m: "%9.2f" % (b[m] / 1e3) if m in b else "%9s" % "-"
    print("%-24s mma.sync %s  wgmma1 %s  wgmma2 %s" % (p, f("mma.sync"), f("wgmma1"), f("wgmma2")))
PY
python3 -c "import sqlite3,sys; [print(*r) for r in sqlite3.connect(sys.argv[1]).execute(\"SELECT p.name, c.recipe_name, min(r.median_ns) FROM results r JOIN problems p ON p.id=r.problem_id JOIN configs c ON c.id=r.config_id WHERE r.status='ok' AND r.timing='burst' GROUP BY 1,2\")]" $W/gemm.db > $OUT/gemm_m1_best.txt 2>&1
grep -E "results, |GPU busy|kernels on the GPU|no verified" $OUT/*.log | cut -c1-200
cat $OUT/skinny_by_op.txt $OUT/gemm_m1_best.txt
grep -E "^\| " $OUT/skinny.compare.txt $OUT/gemm_m1.compare.txt | cut -c1-170
