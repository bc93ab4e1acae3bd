#!/usr/bin/env bash
# rmsnorm.fp8 on the H200, exhaustive, then tune compare
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/dev/tune W=/tmp/rec6; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ), binary of commit 4dc2c4d" | tee -a $OUT/gpu.txt
timeout -s INT 330 $B run recipes/rmsnorm/fp8.lua --strategy exhaustive --seed 1 --quiet --jobs 16 --timeout 20000 --db $W/rmsnorm.fp8.db > $OUT/rmsnorm.fp8.log 2>&1
echo "run rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
timeout -s INT 200 $B compare recipes/rmsnorm/fp8.lua --rounds 3 --top-k 2 --timing burst --db $W/rmsnorm.fp8.db > $OUT/rmsnorm.fp8.compare.txt 2>&1
echo "compare rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
python3 tools/lean_db.py $W/rmsnorm.fp8.db $OUT/rmsnorm.fp8.db
grep -E "results, |GPU busy" $OUT/rmsnorm.fp8.log | cut -c1-220
grep -E "^\| |^### " $OUT/rmsnorm.fp8.compare.txt
python3 - $W/rmsnorm.fp8.db <<'PY' | tee $OUT/w_ahead.txt
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
q = """select p.name, sum(cf.params_json like '%"W_AHEAD":1%') ,
  min(case when cf.params_json like '%"W_AHEAD":0%' then r.median_ns end),
  min(case when cf.params_json like '%"W_AHEAD":1%' then r.median_ns end)
  from results r join configs cf on cf.id = r.config_id join problems p on p.id = r.problem_id
  where r.status = 'ok' and p.name like '%static' and cf.params_json not like '%peer%' group by p.name"""
print("problem | W_AHEAD=1 results | best W_AHEAD=0 (us) | best W_AHEAD=1 (us)")
for n, k, a, b in c.execute(q):
    print(f"{n} | {k} | {a/1e3 if a else float('nan'):.3f} | {b/1e3 if b else float('nan'):.3f}")
PY
