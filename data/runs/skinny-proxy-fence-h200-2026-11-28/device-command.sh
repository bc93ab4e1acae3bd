#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
date -u +%FT%TZ; nvidia-smi --query-gpu=name --format=csv,noheader
for rep in 1 2; do
  timeout -s INT 85 build/tune run tools/bench/.skinny_exp.lua --db /tmp/exp$rep.db --seed $rep --jobs 16 --timeout 20000 --quiet \
    --only BLOCK_N=128,BLOCK_K=64,STAGES=4,WARPS_N=8,WARPS_K=1,SPLIT_K=8 --only BLOCK_N=64,BLOCK_K=64,STAGES=6,WARPS_N=4,WARPS_K=2,SPLIT_K=4 \
    --problem m64n4096k14336_col --problem m64n4096k14336_row --problem m64n8192k8192_row --strategy exhaustive > $OUT/run$rep.log 2>&1
  echo "rep $rep rc $? $(date -u +%T)"
  python3 - /tmp/exp$rep.db <<'PY'
import sqlite3, sys, json
c = sqlite3.connect(sys.argv[1])
for p, pj, st, ns, err in c.execute("""select p.name, c.params_json, r.status, r.median_ns, r.error_text from results r
    join configs c on c.id = r.config_id join problems p on p.id = r.problem_id order by p.name, c.params_json"""):
    d = json.loads(pj)
    print(p, "BN%d SK%d EXP%d" % (d["BLOCK_N"], d["SPLIT_K"], d["EXP"]), st, round((ns or 0) / 1e3, 2), (err or "")[:70])
PY
done
